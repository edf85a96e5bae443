//! `switchboard load` options: flags merged over the config file, defaults filled in (the
//! load node's id and name from the process id), ranges checked.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf, time::Duration};

use serde::Deserialize;
use switchboard_core::{config::Config, discovery::address::Advertise, topology::TopologyPolicy};
use switchboard_tokio::{RegistrySpec, TargetSpec};

use super::{
    Identity, advertise, core_config,
    load_calls::{CallFlags, CallLoad, RetryKeys, check_size, file_duration},
    read_toml, registry_spec,
};
use crate::{
    cli::{EtcdSecurity, LoadArgs},
    error::CliError,
    selection::{message_target, parse_mode},
};

/// Default in-flight window.
pub(crate) const DEFAULT_WINDOW: usize = 1024;
/// Default wait for the registry and the target.
pub(crate) const DEFAULT_WAIT_KNOWN: Duration = Duration::from_secs(10);
/// What a load client's `command` label says (its `role` is `client`, so filters leave it
/// out).
pub(crate) const LOAD_ROLE: &str = "load";

/// The load config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoadFile {
    /// `--registry`.
    pub(crate) registry: Option<crate::address::RegistryAddr>,
    /// `--to`.
    pub(crate) to: Option<String>,
    /// `--hash-key`.
    pub(crate) hash_key: Option<String>,
    /// `--select`.
    pub(crate) select: Option<String>,
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
    /// `--method`.
    pub(crate) method: Option<String>,
    /// `--concurrency`.
    pub(crate) concurrency: Option<usize>,
    /// `--key`.
    pub(crate) key: Option<String>,
    /// `--payload`.
    pub(crate) payload: Option<String>,
    /// `--timeout` (a duration: `5s`, `250ms`).
    pub(crate) timeout: Option<String>,
    /// `--grace` (a duration).
    pub(crate) grace: Option<String>,
    /// `--idempotent`.
    pub(crate) idempotent: Option<bool>,
    /// `--max-attempts` (at least 1).
    pub(crate) max_attempts: Option<u32>,
    /// `--retry-budget` (percent, 0 to 1000).
    pub(crate) retry_budget: Option<u32>,
    /// `--hedge-after` (a duration, or `"p95"`).
    pub(crate) hedge_after: Option<String>,
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
    /// `--etcd-insecure-password`.
    pub(crate) etcd_insecure_password: Option<bool>,
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
    /// `--tls-require-node-id`.
    pub(crate) tls_require_node_id: Option<bool>,
    /// Core settings of the load node.
    pub(crate) core: Option<Config>,
}

/// Everything `switchboard load` runs with.
#[derive(Debug)]
pub(crate) struct LoadOptions {
    /// The load node's validated core config.
    pub(crate) core: Config,
    /// How the summary is printed (`-o`).
    pub(crate) format: crate::cli::Format,
    /// Where the load node listens and what it publishes: with `advertise`, on every address
    /// (port 0) publishing the advertised one; without, on 127.0.0.1 (the builder's default).
    pub(crate) listen: Option<(SocketAddr, Advertise)>,
    /// Where the registry is.
    pub(crate) registry: RegistrySpec,
    /// Messages to a target, or calls of a method.
    pub(crate) work: LoadWork,
    /// Messages (or calls) to send.
    pub(crate) count: u64,
    /// Messages (or calls) per second; 0 = unpaced.
    pub(crate) rate: u64,
    /// Bound on the wait for the registry and the target.
    pub(crate) wait_known: Duration,
    /// Where to write each message's send and outcome instants, if anywhere.
    pub(crate) outcomes_log: Option<PathBuf>,
    /// Where to serve the load node's admin endpoints while it runs, if anywhere.
    pub(crate) admin: Option<SocketAddr>,
    /// `--admin-token-file`'s token: every admin request must carry it.
    pub(crate) admin_token: Option<String>,
    /// Plain TCP or mutual TLS.
    pub(crate) transport: switchboard_tokio::Transport,
}

/// What a load sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LoadWork {
    /// Numbered messages (without `--method`).
    Messages {
        /// Whom every message goes to.
        target: TargetSpec,
        /// Payload bytes (≥ 8).
        size: usize,
        /// Messages in flight at most.
        window: usize,
    },
    /// Calls of a method (`--method`).
    Calls(CallLoad),
}

impl LoadOptions {
    /// Merges the flags over the config file; `random` draws the client's id unless `--id`
    /// gives one ([`client_identity`](crate::client::client_identity)).
    ///
    /// # Errors
    ///
    /// A bad config file, no target or two, a missing count, rate or size, a size below 8, a
    /// zero window, a negative or non-finite wait, or a bad core config.
    pub(crate) fn resolve(args: LoadArgs, random: u64) -> Result<LoadOptions, CliError> {
        let mut file: LoadFile = read_toml(args.config.as_deref())?;
        let (keys, tls) = super::merge_secrets(
            &args.keys,
            &args.tls,
            file.take_secrets(),
            args.config.as_deref(),
        )?;
        let mut filter_labels = file.filter.unwrap_or_default();
        filter_labels.extend(args.filters);
        let count = args
            .count
            .or(file.count)
            .ok_or_else(|| CliError::invalid("count", "required: give --count N"))?;
        let to = args.to.or(file.to);
        let hash_key = args.hash_key.or(file.hash_key);
        let select = match args.select {
            Some(mode) => Some(mode),
            None => file
                .select
                .map(|text| parse_mode(&text).map_err(|why| CliError::invalid("select", why)))
                .transpose()?,
        };
        let rate = args.rate.or(file.rate);
        let size = args.size.or(file.size);
        let window = args.window.or(file.window);
        let retry = RetryKeys {
            idempotent: file.idempotent,
            max_attempts: file.max_attempts,
            retry_budget: file.retry_budget,
            hedge_after: file.hedge_after,
        }
        .under(args.retry)?;
        let call_flags = CallFlags {
            method: String::new(),
            concurrency: args.concurrency.or(file.concurrency),
            select,
            key: args.key.or(file.key),
            payload: args.payload.or(file.payload),
            size,
            timeout: args
                .timeout
                .map_or_else(|| file_duration("timeout", file.timeout), |t| Ok(Some(t)))?,
            grace: args
                .grace
                .map_or_else(|| file_duration("grace", file.grace), |g| Ok(Some(g)))?,
            retry: retry.clone(),
        };
        let work = match args.method.or(file.method) {
            Some(method) => {
                if to.is_some() || hash_key.is_some() || !filter_labels.is_empty() {
                    return Err(CliError::invalid(
                        "method",
                        "give either method (calls) or to / hash_key (messages), not both",
                    ));
                }
                if window.is_some() {
                    return Err(CliError::invalid(
                        "window",
                        "only used with messages (calls in flight: concurrency)",
                    ));
                }
                LoadWork::Calls(CallLoad::resolve(CallFlags {
                    method,
                    ..call_flags
                })?)
            }
            None => {
                let call_only = [
                    ("concurrency", call_flags.concurrency.is_some()),
                    ("key", call_flags.key.is_some()),
                    ("payload", call_flags.payload.is_some()),
                    ("timeout", call_flags.timeout.is_some()),
                    ("grace", call_flags.grace.is_some()),
                    ("idempotent", call_flags.retry.idempotent),
                    ("max_attempts", call_flags.retry.max_attempts.is_some()),
                    ("retry_budget", call_flags.retry.retry_budget.is_some()),
                    ("hedge_after", call_flags.retry.hedge_after.is_some()),
                ];
                if let Some((field, _)) = call_only.iter().find(|(_, given)| *given) {
                    return Err(CliError::invalid(*field, "only used with method"));
                }
                let target = message_target(to, select, hash_key, filter_labels, "hash-key")?
                    .ok_or_else(|| {
                        CliError::invalid(
                            "to",
                            "required: give --to NAME or --hash-key K (or --method M for calls)",
                        )
                    })?;
                if rate.is_none() {
                    return Err(CliError::invalid(
                        "rate",
                        "required: give --rate R (0 = unpaced)",
                    ));
                }
                let size = check_size(
                    size.ok_or_else(|| CliError::invalid("size", "required: give --size B"))?,
                )?;
                let window = window.unwrap_or(DEFAULT_WINDOW);
                if window == 0 {
                    return Err(CliError::invalid("window", "must be greater than zero"));
                }
                LoadWork::Messages {
                    target,
                    size,
                    window,
                }
            }
        };
        let rate = rate.unwrap_or(0);
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
                insecure_password: file.etcd_insecure_password.unwrap_or(false),
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
        let upstream = args.upstream.or(file.upstream);
        let name = args.name.or(file.name);
        if let Some(name) = &name {
            super::check_name(name)?;
        }
        let identity = crate::client::client_identity(LOAD_ROLE, args.id.or(file.id), name, random);
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
                upstream,
                ..identity
            },
        )?;
        // Without an upstream the load node links to its targets directly unless the file's
        // [core] table chose a topology policy of its own; with one it sends through the tree.
        if upstream.is_none() && core.topology_policy == TopologyPolicy::default() {
            core.topology_policy.allow_direct_connection = true;
        }
        retry.configure(&mut core);
        let admin = args.admin.or(file.admin);
        if !keys.is_empty() {
            core.cluster_keys = keys;
        }
        if let LoadWork::Messages { size, .. } = &work {
            let limit = core.send_buffer_size;
            if limit != 0 && *size > limit {
                return Err(CliError::invalid(
                    "size",
                    format!(
                        "{size} bytes exceeds the pending queue of a target ({limit} bytes, \
                         core.send_buffer_size): every message would fail queue_full"
                    ),
                ));
            }
        }
        let outcomes_log = args.outcomes_log.or(file.outcomes_log);
        if let Some(path) = &outcomes_log {
            // Written at the end of the run: a path that cannot be written is refused now,
            // before any traffic, not after it.
            std::fs::File::create(path).map_err(|e| {
                CliError::invalid(
                    "outcomes_log",
                    format!("cannot write {}: {e}", path.display()),
                )
            })?;
        }
        Ok(LoadOptions {
            transport,
            format: args.out.output,
            core,
            listen,
            registry,
            work,
            count,
            rate,
            wait_known,
            outcomes_log,
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
    use switchboard_core::wire::MAX_DATA_PAYLOAD;

    use switchboard_core::discovery::{Filter, Metadata};

    use super::*;
    use crate::cli::EtcdArgs;

    fn args() -> LoadArgs {
        LoadArgs {
            out: crate::cli::OutputArgs {
                output: crate::cli::Format::Json,
            },
            registry: Some(SocketAddr::from(([127, 0, 0, 1], 7000)).into()),
            to: Some("leaf-1".to_owned()),
            hash_key: None,
            select: None,
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
            method: None,
            concurrency: None,
            key: None,
            payload: None,
            timeout: None,
            grace: None,
            retry: crate::cli::RetryArgs::default(),
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
    /// The load node was `load-<pid>` (id 1000000 + pid), labelled `role=load`: in
    /// containers every PID is 1 and two runs collided. A light client now draws its id.
    fn defaults_name_the_load_client_after_its_random_id() {
        let options = LoadOptions::resolve(args(), 4242 << 1).expect("valid");
        assert_eq!(options.core.id.0, 4242);
        assert_eq!(options.core.name, "load-4242");
        assert_eq!(
            options.core.labels,
            switchboard_core::discovery::Labels::from([
                ("command".to_owned(), "load".to_owned()),
                ("role".to_owned(), "client".to_owned())
            ])
        );
        assert_eq!(
            options.work,
            LoadWork::Messages {
                target: TargetSpec::Name("leaf-1".to_owned()),
                size: 64,
                window: DEFAULT_WINDOW
            }
        );
        assert_eq!((options.count, options.rate), (100, 50));
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
        let LoadWork::Messages { target, .. } = options.work else {
            panic!("a message load");
        };
        assert_eq!(
            target,
            TargetSpec::Hash {
                filter: Some(Filter(Metadata {
                    labels: [("role", "leaf")].into(),
                    ..Metadata::default()
                })),
                key: b"user-1".to_vec(),
            }
        );
        assert_eq!(options.wait_known, Duration::from_millis(2500));
    }

    /// `--select` (or `select` in the file) picks each message's node among the filtered
    /// nodes; for a call load it picks each call's server.
    #[test]
    fn a_select_mode_targets_the_filtered_nodes_or_picks_the_servers() {
        let mut a = args();
        a.to = None;
        a.select = Some(switchboard_core::select::Mode::Random);
        a.filters = vec![("role".to_owned(), "leaf".to_owned())];
        let LoadWork::Messages { target, .. } = LoadOptions::resolve(a, 1).expect("valid").work
        else {
            panic!("a message load");
        };
        let leaf = Filter(Metadata {
            labels: [("role", "leaf")].into(),
            ..Metadata::default()
        });
        assert_eq!(target, TargetSpec::Random { filter: Some(leaf) });
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("load.toml");
        std::fs::write(&path, "select = \"least-outstanding\"\nmethod = \"echo\"\n")
            .expect("write");
        let mut a = args();
        a.to = None;
        a.config = Some(path.clone());
        let LoadWork::Calls(calls) = LoadOptions::resolve(a, 1).expect("valid").work else {
            panic!("a call load");
        };
        assert_eq!(calls.select, switchboard_core::Select::LeastOutstanding);
        std::fs::write(&path, "select = \"fastest\"\n").expect("write");
        let mut a = args();
        a.config = Some(path);
        assert_eq!(
            LoadOptions::resolve(a, 1)
                .expect_err("bad mode")
                .to_string(),
            // Issue 26 added maglev, bounded and p2c to the modes.
            "select: expected one of hash, round-robin, random, least-outstanding, maglev, \
             bounded, p2c"
        );
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

    /// Changed expectation: the largest size accepted by default is a target's pending queue
    /// (8 MiB, `core.send_buffer_size`), below the frame's payload limit (issue 24 item 4: a
    /// larger message only ever failed `queue_full`); past the frame limit the frame's
    /// message still comes first.
    #[test]
    fn a_size_above_the_frame_payload_limit_is_refused() {
        let mut a = args();
        a.size = Some(8 << 20);
        assert!(LoadOptions::resolve(a, 1).is_ok());
        let mut a = args();
        a.size = Some(MAX_DATA_PAYLOAD);
        let e = LoadOptions::resolve(a, 1).expect_err("over the queue");
        assert!(e.to_string().starts_with("size: "), "{e}");
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
            "to: required: give --to NAME or --hash-key K (or --method M for calls)"
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
            out: crate::cli::OutputArgs {
                output: crate::cli::Format::Json,
            },
            registry: None,
            to: None,
            hash_key: None,
            select: None,
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
            method: None,
            concurrency: None,
            key: None,
            payload: None,
            timeout: None,
            grace: None,
            retry: crate::cli::RetryArgs::default(),
            admin: None,
            admin_token_file: None,
            config: Some(path),
            etcd: EtcdArgs::default(),
            tls: crate::cli::TlsArgs::default(),
            keys: crate::cli::KeyArgs::default(),
        };
        let options = LoadOptions::resolve(a, 1).expect("valid");
        assert_eq!((options.count, options.rate), (20, 0));
        let LoadWork::Messages { size, window, .. } = options.work else {
            panic!("a message load");
        };
        assert_eq!((size, window), (8, 4));
        assert_eq!((options.core.id.0, options.core.name.as_str()), (99, "gen"));
    }

    #[test]
    fn a_method_makes_a_call_load_from_flags_or_the_file() {
        let mut a = args();
        a.to = None;
        a.size = None;
        a.rate = None;
        a.method = Some("echo".to_owned());
        a.concurrency = Some(8);
        a.key = Some("user-1".to_owned());
        a.payload = Some("hi".to_owned());
        a.grace = Some(Duration::from_millis(300));
        let options = LoadOptions::resolve(a, 1).expect("valid");
        assert_eq!(options.rate, 0);
        assert_eq!(
            options.work,
            LoadWork::Calls(CallLoad {
                method: "echo".to_owned(),
                select: switchboard_core::Select::Hash(bytes::Bytes::from_static(b"user-1")),
                payload: super::super::load_calls::CallPayload::Text(bytes::Bytes::from_static(
                    b"hi"
                )),
                concurrency: 8,
                timeout: None,
                grace: Some(Duration::from_millis(300)),
                retry: crate::cli::RetryArgs::default(),
            })
        );

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("load.toml");
        std::fs::write(
            &path,
            "registry = \"127.0.0.1:7000\"\nmethod = \"sleep\"\ncount = 10\n\
             concurrency = 2\ntimeout = \"1.5s\"\npayload = \"100\"\n",
        )
        .expect("write");
        let mut from_file = args();
        (from_file.registry, from_file.to, from_file.count) = (None, None, None);
        (from_file.rate, from_file.size, from_file.config) = (None, None, Some(path));
        let options = LoadOptions::resolve(from_file, 1).expect("valid");
        let LoadWork::Calls(calls) = options.work else {
            panic!("a call load");
        };
        assert_eq!(
            (calls.method.as_str(), calls.concurrency, calls.timeout),
            ("sleep", 2, Some(Duration::from_millis(1500)))
        );
    }

    #[test]
    fn message_and_call_flags_do_not_mix() {
        let error = |a: LoadArgs| LoadOptions::resolve(a, 1).expect_err("invalid").to_string();
        let mut both = args();
        both.method = Some("echo".to_owned());
        assert_eq!(
            error(both),
            "method: give either method (calls) or to / hash_key (messages), not both"
        );
        let mut concurrency = args();
        concurrency.concurrency = Some(4);
        assert_eq!(error(concurrency), "concurrency: only used with method");
        let mut window = args();
        (window.to, window.method, window.window) = (None, Some("echo".to_owned()), Some(4));
        assert_eq!(
            error(window),
            "window: only used with messages (calls in flight: concurrency)"
        );
    }

    /// Resolves `args()` without a target, count, rate or size, over a load file of `text`
    /// (`edit` changes the flags first).
    fn over_file(text: &str, edit: impl FnOnce(&mut LoadArgs)) -> Result<LoadOptions, CliError> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("load.toml");
        std::fs::write(&path, text).expect("write");
        let mut a = args();
        (a.registry, a.to, a.count) = (None, None, None);
        (a.rate, a.size, a.config) = (None, None, Some(path));
        edit(&mut a);
        LoadOptions::resolve(a, 1)
    }

    /// The call load's retry settings of `options`, and its node's budget.
    fn retry_of(options: &LoadOptions) -> (crate::cli::RetryArgs, u32) {
        let LoadWork::Calls(calls) = &options.work else {
            panic!("a call load");
        };
        (calls.retry.clone(), options.core.rpc_retry.budget_percent)
    }

    const CALLS: &str = "registry = \"127.0.0.1:7000\"\nmethod = \"echo\"\ncount = 10\n";

    #[test]
    fn the_retry_keys_come_from_the_file_and_the_flags_override_them() {
        let file = format!(
            "{CALLS}idempotent = true\nmax_attempts = 3\nretry_budget = 50\n\
             hedge_after = \"p95\"\n"
        );
        let options = over_file(&file, |_| {}).expect("valid");
        let from_file = crate::cli::RetryArgs {
            idempotent: true,
            max_attempts: Some(3),
            retry_budget: Some(50),
            hedge_after: Some(switchboard_core::HedgeAfter::MethodP95),
        };
        assert_eq!(retry_of(&options), (from_file, 50));
        let options = over_file(&file, |a| {
            a.retry.max_attempts = Some(2);
            a.retry.retry_budget = Some(0);
            a.retry.hedge_after = Some(switchboard_core::HedgeAfter::Delay(Duration::from_millis(
                40,
            )));
        })
        .expect("valid");
        let flags = crate::cli::RetryArgs {
            idempotent: true,
            max_attempts: Some(2),
            retry_budget: Some(0),
            hedge_after: Some(switchboard_core::HedgeAfter::Delay(Duration::from_millis(
                40,
            ))),
        };
        assert_eq!(retry_of(&options), (flags, 0));
        // A duration in the file; the --idempotent flag makes its hedge valid.
        let file = format!("{CALLS}hedge_after = \"1.5s\"\n");
        let options = over_file(&file, |a| a.retry.idempotent = true).expect("valid");
        let hedged = crate::cli::RetryArgs {
            idempotent: true,
            hedge_after: Some(switchboard_core::HedgeAfter::Delay(Duration::from_millis(
                1500,
            ))),
            ..crate::cli::RetryArgs::default()
        };
        // Without a budget key the core's default stays.
        assert_eq!(retry_of(&options), (hedged, 20));
    }

    #[test]
    fn bad_retry_keys_are_refused_as_the_flags_are() {
        let error = |keys: &str| {
            over_file(&format!("{CALLS}{keys}"), |_| {})
                .expect_err("invalid")
                .to_string()
        };
        assert_eq!(
            error("max_attempts = 0\n"),
            "max_attempts: must be at least 1 (1: never retried)"
        );
        assert_eq!(
            error("retry_budget = 1001\n"),
            "retry_budget: must be between 0 and 1000 percent, got 1001"
        );
        assert_eq!(
            error("idempotent = true\nhedge_after = \"soon\"\n"),
            "hedge_after: neither a duration nor p95: an unknown unit in \"soon\" (write e.g. \
             250ms, 5s, 1.5s, 1h30m)"
        );
        assert_eq!(
            error("hedge_after = \"p95\"\n"),
            "hedge_after: needs idempotent (a hedge may run the call twice)"
        );
        assert_eq!(
            error("idempotent = false\nhedge_after = \"40ms\"\n"),
            "hedge_after: needs idempotent (a hedge may run the call twice)"
        );
        // The flag alone, too (`call` checks the same).
        let flag = over_file(CALLS, |a| {
            a.retry.hedge_after = Some(switchboard_core::HedgeAfter::MethodP95);
        })
        .expect_err("not idempotent");
        assert_eq!(
            flag.to_string(),
            "hedge_after: needs idempotent (a hedge may run the call twice)"
        );
    }

    #[test]
    fn retry_keys_are_only_used_with_method() {
        let messages = "registry = \"127.0.0.1:7000\"\nto = \"leaf-1\"\ncount = 10\nrate = 0\n\
                        size = 8\n";
        let error = |keys: &str| {
            over_file(&format!("{messages}{keys}"), |_| {})
                .expect_err("invalid")
                .to_string()
        };
        assert_eq!(
            error("idempotent = true\n"),
            "idempotent: only used with method"
        );
        assert_eq!(
            error("max_attempts = 3\n"),
            "max_attempts: only used with method"
        );
        assert_eq!(
            error("retry_budget = 50\n"),
            "retry_budget: only used with method"
        );
        assert_eq!(
            error("idempotent = true\nhedge_after = \"p95\"\n"),
            "idempotent: only used with method"
        );
        // `idempotent = false` is no retry setting: a message load takes it.
        assert!(over_file(&format!("{messages}idempotent = false\n"), |_| {}).is_ok());
    }
}
