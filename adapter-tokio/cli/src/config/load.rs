//! `switchboard load` options: flags merged over the config file, defaults filled in (the
//! load node's id and name from the process id), ranges checked.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, time::Duration};

use serde::Deserialize;
use switchboard_core::{
    config::Config,
    discovery::{Filter, Metadata, address::Advertise},
    topology::TopologyPolicy,
    wire::MAX_DATA_PAYLOAD,
};
use switchboard_tokio::{RegistrySpec, TargetSpec};

use super::{Identity, advertise, core_config, read_toml, registry_spec};
use crate::{
    cli::{EtcdSecurity, LoadArgs},
    error::CliError,
    payload::SEQ_BYTES,
};

/// Default in-flight window.
pub(crate) const DEFAULT_WINDOW: usize = 1024;
/// Default wait for the registry and the target.
pub(crate) const DEFAULT_WAIT_KNOWN: Duration = Duration::from_secs(10);
/// Label every load node carries (`role=load`), so filters can leave it out.
pub(crate) const LOAD_ROLE: &str = "load";

/// The load config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadFile {
    /// `--registry`.
    pub(crate) registry: Option<SocketAddr>,
    /// `--to`.
    pub(crate) to: Option<String>,
    /// `--hash-key`.
    pub(crate) hash_key: Option<String>,
    /// `--filter` as a table.
    pub(crate) filter: Option<BTreeMap<String, String>>,
    /// `--count`.
    pub(crate) count: Option<u64>,
    /// `--rate`.
    pub(crate) rate: Option<u64>,
    /// `--size`.
    pub(crate) size: Option<usize>,
    /// `--id`.
    pub(crate) id: Option<u64>,
    /// `--name`.
    pub(crate) name: Option<String>,
    /// `--advertise`.
    pub(crate) advertise: Option<String>,
    /// `--wait-known`.
    pub(crate) wait_known: Option<f64>,
    /// `--upstream`.
    pub(crate) upstream: Option<u64>,
    /// `--window`.
    pub(crate) window: Option<usize>,
    /// `--outcomes-log`.
    pub(crate) outcomes_log: Option<PathBuf>,
    /// `--admin`.
    pub(crate) admin: Option<SocketAddr>,
    /// `--etcd`.
    pub(crate) etcd: Option<Vec<String>>,
    /// `--etcd-prefix`.
    pub(crate) etcd_prefix: Option<String>,
    /// `--etcd-ca` (relative to the config file's directory).
    pub(crate) etcd_ca: Option<PathBuf>,
    /// `--etcd-cert` (relative to the config file's directory).
    pub(crate) etcd_cert: Option<PathBuf>,
    /// `--etcd-key` (relative to the config file's directory).
    pub(crate) etcd_key: Option<PathBuf>,
    /// `--etcd-user`.
    pub(crate) etcd_user: Option<String>,
    /// `--etcd-password-file` (relative to the config file's directory).
    pub(crate) etcd_password_file: Option<PathBuf>,
    /// `--admin-token-file` (relative to the config file's directory).
    pub(crate) admin_token_file: Option<PathBuf>,
    /// `--cluster-key-file` (relative to the config file's directory).
    pub(crate) cluster_key_file: Option<PathBuf>,
    /// `--next-cluster-key-file` (relative to the config file's directory).
    pub(crate) next_cluster_key_file: Option<PathBuf>,
    /// `--tls-cert` (relative to the config file's directory).
    pub(crate) tls_cert: Option<PathBuf>,
    /// `--tls-key` (relative to the config file's directory).
    pub(crate) tls_key: Option<PathBuf>,
    /// `--tls-ca` (relative to the config file's directory).
    pub(crate) tls_ca: Option<PathBuf>,
    /// Core settings of the load node.
    pub(crate) core: Option<Config>,
}

/// Everything `switchboard load` runs with.
#[derive(Debug)]
pub(crate) struct LoadOptions {
    /// The load node's validated core config.
    pub(crate) core: Config,
    /// Where the load node listens and what it publishes: with `advertise`, on every address
    /// (port 0) publishing the advertised one; without, on 127.0.0.1 (the builder's default).
    pub(crate) listen: Option<(SocketAddr, Advertise)>,
    /// Where the registry is.
    pub(crate) registry: RegistrySpec,
    /// Whom every message goes to.
    pub(crate) target: TargetSpec,
    /// Messages to send.
    pub(crate) count: u64,
    /// Messages per second; 0 = unpaced.
    pub(crate) rate: u64,
    /// Payload bytes (≥ 8).
    pub(crate) size: usize,
    /// Bound on the wait for the registry and the target.
    pub(crate) wait_known: Duration,
    /// Messages in flight at most.
    pub(crate) window: usize,
    /// Where to write each message's send and outcome instants, if anywhere.
    pub(crate) outcomes_log: Option<PathBuf>,
    /// Where to serve the load node's admin endpoints while it runs, if anywhere.
    pub(crate) admin: Option<SocketAddr>,
    /// `--admin-token-file`'s token: every admin request must carry it.
    pub(crate) admin_token: Option<String>,
    /// Plain TCP or mutual TLS.
    pub(crate) transport: switchboard_tokio::Transport,
}

impl LoadOptions {
    /// Merges the flags over the config file; `pid` names the default node.
    ///
    /// # Errors
    ///
    /// A bad config file, no target or two, a missing count, rate or size, a size below 8, a
    /// zero window, a negative or non-finite wait, or a bad core config.
    pub(crate) fn resolve(args: LoadArgs, pid: u32) -> Result<LoadOptions, CliError> {
        let mut file: LoadFile = read_toml(args.config.as_deref())?;
        let (keys, tls) = super::merge_secrets(
            &args.keys,
            &args.tls,
            file.take_secrets(),
            args.config.as_deref(),
        )?;
        let mut filter_labels = file.filter.unwrap_or_default();
        filter_labels.extend(args.filters);
        let target = match (args.to.or(file.to), args.hash_key.or(file.hash_key)) {
            (Some(_), Some(_)) => {
                return Err(CliError::invalid(
                    "to",
                    "give either to or hash_key, not both",
                ));
            }
            (None, None) => {
                return Err(CliError::invalid(
                    "to",
                    "required: give --to NAME or --hash-key K",
                ));
            }
            (Some(name), None) => {
                if name.is_empty() {
                    return Err(CliError::invalid("to", "the name is empty"));
                }
                if !filter_labels.is_empty() {
                    return Err(CliError::invalid("filter", "only used with hash_key"));
                }
                TargetSpec::Name(name)
            }
            (None, Some(key)) => TargetSpec::Hash {
                filter: (!filter_labels.is_empty()).then(|| {
                    Filter(Metadata {
                        labels: filter_labels,
                        ..Metadata::default()
                    })
                }),
                key: key.into_bytes(),
            },
        };
        let count = args
            .count
            .or(file.count)
            .ok_or_else(|| CliError::invalid("count", "required: give --count N"))?;
        let rate = args
            .rate
            .or(file.rate)
            .ok_or_else(|| CliError::invalid("rate", "required: give --rate R (0 = unpaced)"))?;
        let size = args
            .size
            .or(file.size)
            .ok_or_else(|| CliError::invalid("size", "required: give --size B"))?;
        if size < SEQ_BYTES {
            return Err(CliError::invalid(
                "size",
                format!("must be at least {SEQ_BYTES} bytes (the sequence number), got {size}"),
            ));
        }
        if size > MAX_DATA_PAYLOAD {
            return Err(CliError::invalid(
                "size",
                format!(
                    "must be at most {MAX_DATA_PAYLOAD} bytes (the largest payload a frame \
                     carries), got {size}"
                ),
            ));
        }
        let window = args.window.or(file.window).unwrap_or(DEFAULT_WINDOW);
        if window == 0 {
            return Err(CliError::invalid("window", "must be greater than zero"));
        }
        let wait_known = match args.wait_known.or(file.wait_known) {
            None => DEFAULT_WAIT_KNOWN,
            Some(secs) if secs.is_finite() && (0.0..=86_400.0).contains(&secs) => {
                Duration::from_secs_f64(secs)
            }
            Some(secs) => {
                return Err(CliError::invalid(
                    "wait_known",
                    format!("must be between 0 and 86400 seconds, got {secs}"),
                ));
            }
        };
        let security = super::merge_security(
            args.etcd.security(),
            EtcdSecurity {
                ca: file.etcd_ca,
                cert: file.etcd_cert,
                key: file.etcd_key,
                user: file.etcd_user,
                password_file: file.etcd_password_file,
            },
            args.config.as_deref(),
        );
        let transport = super::transport(tls)?;
        let registry = registry_spec(
            args.registry.or(file.registry),
            args.etcd.etcd.or(file.etcd),
            args.etcd.etcd_prefix.or(file.etcd_prefix),
            security,
        )?;
        let id = args.id.or(file.id).unwrap_or(1_000_000 + u64::from(pid));
        let upstream = args.upstream.or(file.upstream);
        let name = args
            .name
            .or(file.name)
            .unwrap_or_else(|| format!("load-{pid}"));
        let listen = match args.advertise.or(file.advertise) {
            None => None,
            Some(text) => {
                let ip: std::net::IpAddr =
                    if text.trim().starts_with('[') || text.matches(':').count() > 1 {
                        std::net::Ipv6Addr::UNSPECIFIED.into()
                    } else {
                        std::net::Ipv4Addr::UNSPECIFIED.into()
                    };
                let wildcard = SocketAddr::new(ip, 0);
                advertise(wildcard, Some(text))?.map(|a| (wildcard, a))
            }
        };
        let mut core = core_config(
            file.core,
            Identity {
                id,
                name,
                upstream,
                labels: BTreeMap::from([("role".to_owned(), LOAD_ROLE.to_owned())]),
            },
        )?;
        // Without an upstream the load node links to its targets directly unless the file's
        // [core] table chose a topology policy of its own; with one it sends through the tree.
        if upstream.is_none() && core.topology_policy == TopologyPolicy::default() {
            core.topology_policy.allow_direct_connection = true;
        }
        let admin = args.admin.or(file.admin);
        if !keys.is_empty() {
            core.cluster_keys = keys;
        }
        Ok(LoadOptions {
            transport,
            core,
            listen,
            registry,
            target,
            count,
            rate,
            size,
            wait_known,
            window,
            outcomes_log: args.outcomes_log.or(file.outcomes_log),
            admin_token: super::admin_token(
                admin,
                args.admin_token_file
                    .or_else(|| {
                        file.admin_token_file
                            .map(|p| super::relative_to(args.config.as_deref(), p))
                    })
                    .as_deref(),
            )?,
            admin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EtcdArgs;

    fn args() -> LoadArgs {
        LoadArgs {
            registry: Some(SocketAddr::from(([127, 0, 0, 1], 7000))),
            to: Some("leaf-1".to_owned()),
            hash_key: None,
            filters: Vec::new(),
            count: Some(100),
            rate: Some(50),
            size: Some(64),
            id: None,
            name: None,
            advertise: None,
            wait_known: None,
            upstream: None,
            window: None,
            outcomes_log: None,
            admin: None,
            admin_token_file: None,
            config: None,
            etcd: EtcdArgs::default(),
            tls: crate::cli::TlsArgs::default(),
            keys: crate::cli::KeyArgs::default(),
        }
    }

    #[test]
    fn an_advertised_load_node_listens_everywhere() {
        assert!(
            LoadOptions::resolve(args(), 1)
                .expect("valid")
                .listen
                .is_none()
        );
        let mut a = args();
        a.advertise = Some("10.0.0.5".to_owned());
        let (listen, advertised) = LoadOptions::resolve(a, 1)
            .expect("valid")
            .listen
            .expect("listens");
        assert_eq!(listen, SocketAddr::from(([0, 0, 0, 0], 0)));
        assert_eq!(advertised.published(9), "atcp://10.0.0.5:9");
        let mut bad = args();
        bad.advertise = Some("0.0.0.0".to_owned());
        let e = LoadOptions::resolve(bad, 1).expect_err("wildcard advertised");
        assert!(
            e.to_string()
                .starts_with("advertise: 0.0.0.0 is a wildcard"),
            "{e}"
        );
    }

    #[test]
    fn defaults_name_the_load_node_after_the_process() {
        let options = LoadOptions::resolve(args(), 4242).expect("valid");
        assert_eq!(options.core.id.0, 1_004_242);
        assert_eq!(options.core.name, "load-4242");
        assert_eq!(
            options.core.labels,
            BTreeMap::from([("role".to_owned(), "load".to_owned())])
        );
        assert_eq!(options.target, TargetSpec::Name("leaf-1".to_owned()));
        assert_eq!(
            (options.count, options.rate, options.size, options.window),
            (100, 50, 64, DEFAULT_WINDOW)
        );
        assert_eq!(options.wait_known, DEFAULT_WAIT_KNOWN);
        assert!(options.core.topology_policy.allow_direct_connection);
    }

    #[test]
    fn a_hash_key_with_filters_targets_the_filtered_ring() {
        let mut a = args();
        a.to = None;
        a.hash_key = Some("user-1".to_owned());
        a.filters = vec![("role".to_owned(), "leaf".to_owned())];
        a.wait_known = Some(2.5);
        let options = LoadOptions::resolve(a, 1).expect("valid");
        assert_eq!(
            options.target,
            TargetSpec::Hash {
                filter: Some(Filter(Metadata {
                    labels: BTreeMap::from([("role".to_owned(), "leaf".to_owned())]),
                    ..Metadata::default()
                })),
                key: b"user-1".to_vec(),
            }
        );
        assert_eq!(options.wait_known, Duration::from_millis(2500));
    }

    #[test]
    fn a_size_below_the_sequence_number_is_refused() {
        let mut a = args();
        a.size = Some(7);
        assert_eq!(
            LoadOptions::resolve(a, 1)
                .expect_err("too small")
                .to_string(),
            "size: must be at least 8 bytes (the sequence number), got 7"
        );
    }

    #[test]
    fn a_size_above_the_frame_payload_limit_is_refused() {
        let mut a = args();
        a.size = Some(MAX_DATA_PAYLOAD);
        assert!(LoadOptions::resolve(a, 1).is_ok());
        let mut a = args();
        a.size = Some(MAX_DATA_PAYLOAD + 1);
        let e = LoadOptions::resolve(a, 1).expect_err("too large");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            format!(
                "size: must be at most {MAX_DATA_PAYLOAD} bytes (the largest payload a frame \
                 carries), got {}",
                MAX_DATA_PAYLOAD + 1
            )
        );
    }

    #[test]
    fn an_upstream_sends_through_the_tree() {
        let mut a = args();
        a.upstream = Some(10);
        let options = LoadOptions::resolve(a, 1).expect("valid");
        assert_eq!(options.core.upstream.0, 10);
        assert!(!options.core.topology_policy.allow_direct_connection);
    }

    #[test]
    fn a_target_is_required() {
        let mut a = args();
        a.to = None;
        assert_eq!(
            LoadOptions::resolve(a, 1)
                .expect_err("no target")
                .to_string(),
            "to: required: give --to NAME or --hash-key K"
        );
    }

    #[test]
    fn a_negative_wait_is_refused() {
        let mut a = args();
        a.wait_known = Some(-1.0);
        assert_eq!(
            LoadOptions::resolve(a, 1)
                .expect_err("negative")
                .to_string(),
            "wait_known: must be between 0 and 86400 seconds, got -1"
        );
    }

    #[test]
    fn the_file_gives_what_flags_leave_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("load.toml");
        std::fs::write(
            &path,
            "registry = \"127.0.0.1:7000\"\nhash_key = \"k\"\ncount = 10\nrate = 0\nsize = 8\n\
             window = 4\nid = 99\nname = \"gen\"\n[filter]\nrole = \"leaf\"\n",
        )
        .expect("write");
        let a = LoadArgs {
            registry: None,
            to: None,
            hash_key: None,
            filters: Vec::new(),
            count: Some(20),
            rate: None,
            size: None,
            id: None,
            name: None,
            advertise: None,
            wait_known: None,
            upstream: None,
            window: None,
            outcomes_log: None,
            admin: None,
            admin_token_file: None,
            config: Some(path),
            etcd: EtcdArgs::default(),
            tls: crate::cli::TlsArgs::default(),
            keys: crate::cli::KeyArgs::default(),
        };
        let options = LoadOptions::resolve(a, 1).expect("valid");
        assert_eq!(
            (options.count, options.rate, options.size, options.window),
            (20, 0, 8, 4)
        );
        assert_eq!((options.core.id.0, options.core.name.as_str()), (99, "gen"));
    }
}
