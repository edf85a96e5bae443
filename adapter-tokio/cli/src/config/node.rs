//! `switchboard node` options: flags merged over the config file into a validated core
//! config, a registry choice and the runner's switches.

use std::{collections::BTreeMap, net::SocketAddr, path::PathBuf};

use serde::Deserialize;
use switchboard_core::{
    config::{Config, deployment_identity, host_name},
    discovery::address::Advertise,
    select::{MAX_WEIGHT, WEIGHT_LABEL},
};
use switchboard_tokio::RegistrySpec;

use super::{Identity, admin_token, advertise, core_config, read_toml, registry_spec};
use crate::{
    builtin_handlers::BuiltinHandler,
    cli::{EtcdSecurity, NodeArgs},
    error::CliError,
};

/// The node config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeFile {
    /// `--id`.
    pub(crate) id: Option<u64>,
    /// `--name`.
    pub(crate) name: Option<String>,
    /// `--identity`.
    pub(crate) identity: Option<String>,
    /// `--listen`.
    pub(crate) listen: Option<SocketAddr>,
    /// `--advertise`.
    pub(crate) advertise: Option<String>,
    /// `--upstream`.
    pub(crate) upstream: Option<u64>,
    /// `--registry`.
    pub(crate) registry: Option<crate::address::RegistryAddr>,
    /// `--label` as a table; flags add to it and override equal keys.
    pub(crate) label: Option<BTreeMap<String, String>>,
    /// `--weight`.
    pub(crate) weight: Option<u32>,
    /// `--admin`.
    pub(crate) admin: Option<SocketAddr>,
    /// `--echo`.
    pub(crate) echo: Option<bool>,
    /// `--serve`: built-in method handlers by name.
    pub(crate) serve: Option<Vec<String>>,
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
    /// Core settings (`message_timeout_ms`, ...).
    pub(crate) core: Option<Config>,
}

/// This host's name as the node's driver reads it (`/proc/sys/kernel/hostname`, then
/// `$HOSTNAME`).
fn local_host_name() -> String {
    let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let env = std::env::var("HOSTNAME").ok();
    host_name([proc.as_deref(), env.as_deref()])
}

/// Everything `switchboard node` runs with.
#[derive(Debug)]
pub(crate) struct NodeOptions {
    /// The validated core config (identity, upstream, labels included).
    pub(crate) core: Config,
    /// Address to listen on.
    pub(crate) listen: SocketAddr,
    /// Address published instead of the bound one.
    pub(crate) advertise: Option<Advertise>,
    /// Where the registry is.
    pub(crate) registry: RegistrySpec,
    /// Admin endpoint address.
    pub(crate) admin: Option<SocketAddr>,
    /// `--admin-token-file`'s token: every admin request must carry it.
    pub(crate) admin_token: Option<String>,
    /// Echo received messages.
    pub(crate) echo: bool,
    /// Built-in method handlers to serve, each once, in name order.
    pub(crate) serves: Vec<BuiltinHandler>,
    /// Plain TCP or mutual TLS.
    pub(crate) transport: switchboard_tokio::Transport,
}

impl NodeOptions {
    /// Merges the flags over the config file.
    ///
    /// # Errors
    ///
    /// A bad config file, a missing `id`, `name`, `listen` or registry, a bad or missing
    /// `advertise` (required with a wildcard `listen`), a bad label, or a core config that
    /// fails validation.
    pub(crate) fn resolve(args: NodeArgs) -> Result<NodeOptions, CliError> {
        let mut file: NodeFile = read_toml(args.config.as_deref())?;
        let (keys, tls) = super::merge_secrets(
            &args.keys,
            &args.tls,
            file.take_secrets(),
            args.config.as_deref(),
        )?;
        let id = args
            .id
            .or(file.id)
            .ok_or_else(|| CliError::invalid("id", "required: give --id N"))?;
        let name = args
            .name
            .or(file.name)
            .ok_or_else(|| CliError::invalid("name", "required: give --name NAME"))?;
        super::check_name(&name)?;
        let listen = args
            .listen
            .or(file.listen)
            .ok_or_else(|| CliError::invalid("listen", "required: give --listen ADDR"))?;
        let advertise = advertise(listen, args.advertise.or(file.advertise))?;
        let mut labels = file.label.unwrap_or_default();
        if labels.keys().any(String::is_empty) {
            return Err(CliError::invalid("label", "a label key is empty"));
        }
        labels.extend(args.labels);
        if let Some(weight) = args.weight.or(file.weight) {
            if !(1..=MAX_WEIGHT).contains(&weight) {
                return Err(CliError::invalid(
                    "weight",
                    format!("is {weight}; it must be from 1 to {MAX_WEIGHT}"),
                ));
            }
            labels.insert(WEIGHT_LABEL.to_owned(), weight.to_string());
        }
        super::check_user_labels(&labels)?;
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
        let identity = args.identity.or(file.identity);
        if identity.as_deref().is_some_and(|i| i.trim().is_empty()) {
            return Err(CliError::invalid("identity", "is blank"));
        }
        let mut core = core_config(
            file.core,
            Identity {
                id,
                name,
                upstream: args.upstream.or(file.upstream),
                labels,
            },
        )?;
        core.identity = identity.unwrap_or_else(|| {
            let host = if core.hostname.is_empty() {
                local_host_name()
            } else {
                core.hostname.clone()
            };
            let config = args
                .config
                .as_deref()
                .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned()));
            deployment_identity(
                &host,
                core.id,
                &core.name,
                config.as_deref().and_then(std::path::Path::to_str),
            )
        });
        let admin = args.admin.or(file.admin);
        let admin_token = admin_token(
            admin,
            args.admin_token_file
                .or_else(|| {
                    file.admin_token_file
                        .map(|p| super::relative_to(args.config.as_deref(), p))
                })
                .as_deref(),
        )?;
        if !keys.is_empty() {
            core.cluster_keys = keys;
        }
        if let Some(mode) = args.ring_hash {
            core.ring_hash_mode = mode;
        }
        let mut serves = args.serve;
        for name in file.serve.unwrap_or_default() {
            serves.push(
                name.parse()
                    .map_err(|why: String| CliError::invalid("serve", why))?,
            );
        }
        serves.sort_unstable();
        serves.dedup();
        Ok(NodeOptions {
            serves,
            transport,
            core,
            listen,
            advertise,
            registry,
            admin,
            admin_token,
            echo: args.echo || file.echo.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::{path::PathBuf, time::Duration};

    use super::*;
    use crate::cli::EtcdArgs;

    fn bare_args(config: Option<PathBuf>) -> NodeArgs {
        NodeArgs {
            id: None,
            name: None,
            listen: None,
            advertise: None,
            upstream: None,
            identity: None,
            registry: None,
            labels: Vec::new(),
            weight: None,
            admin: None,
            admin_token_file: None,
            echo: false,
            serve: Vec::new(),
            ring_hash: None,
            config,
            etcd: EtcdArgs::default(),
            tls: crate::cli::TlsArgs::default(),
            keys: crate::cli::KeyArgs::default(),
        }
    }

    fn write_config(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("node.toml");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn the_ring_hash_mode_is_the_flag_over_the_core_table() {
        use switchboard_core::HashMode;
        let text = "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
                    registry = \"127.0.0.1:7000\"\n[core]\nring_hash_mode = \"libatapp-v0.12\"\n";
        let (_dir, path) = write_config(text);
        let from_file = NodeOptions::resolve(bare_args(Some(path.clone()))).expect("valid");
        assert_eq!(from_file.core.ring_hash_mode, HashMode::LibatappV012);
        let flag = NodeArgs {
            ring_hash: Some(HashMode::LibatappMain),
            ..bare_args(Some(path))
        };
        let overridden = NodeOptions::resolve(flag).expect("valid");
        assert_eq!(overridden.core.ring_hash_mode, HashMode::LibatappMain);
        assert_eq!(
            crate::cli::parse_hash_mode("libatapp-v0.11"),
            Ok(HashMode::LibatappV012)
        );
        assert!(crate::cli::parse_hash_mode("compat").is_err());
    }

    #[test]
    fn the_identity_is_the_flag_the_file_or_a_hash_of_the_deployment() {
        let text = "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
                    registry = \"127.0.0.1:7000\"\n";
        let (_dir, path) = write_config(text);
        let derived = NodeOptions::resolve(bare_args(Some(path.clone()))).expect("valid");
        let canonical = std::fs::canonicalize(&path).expect("canonical");
        assert_eq!(
            derived.core.identity,
            deployment_identity(
                &local_host_name(),
                derived.core.id,
                "leaf-7",
                canonical.to_str()
            )
        );
        // Published only as its hash (the identity is the takeover secret).
        assert_eq!(
            derived.core.discovery_info().identity,
            switchboard_core::discovery::published_identity(&derived.core.identity)
        );
        // Another config file (same contents) is another deployment.
        let (_other_dir, other) = write_config(text);
        let elsewhere = NodeOptions::resolve(bare_args(Some(other))).expect("valid");
        assert_ne!(elsewhere.core.identity, derived.core.identity);

        let (_dir2, with_key) = write_config(&format!("{text}identity = \"from-file\"\n"));
        let from_file = NodeOptions::resolve(bare_args(Some(with_key.clone()))).expect("valid");
        assert_eq!(from_file.core.identity, "from-file");
        let mut args = bare_args(Some(with_key));
        args.identity = Some("from-flag".to_owned());
        let from_flag = NodeOptions::resolve(args).expect("valid");
        assert_eq!(from_flag.core.identity, "from-flag");

        let mut blank = bare_args(Some(path.clone()));
        blank.identity = Some("  ".to_owned());
        let e = NodeOptions::resolve(blank).expect_err("blank identity");
        assert!(e.to_string().contains("identity"), "{e}");
        let (_dir3, in_core) = write_config(&format!("{text}[core]\nidentity = \"x\"\n"));
        let e = NodeOptions::resolve(bare_args(Some(in_core))).expect_err("identity in [core]");
        assert!(e.to_string().contains("core.identity"), "{e}");
    }

    #[test]
    fn a_config_file_can_replace_every_flag() {
        let (_dir, path) = write_config(
            "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\nupstream = 3\n\
             registry = \"127.0.0.1:7000\"\nadmin = \"127.0.0.1:9100\"\necho = true\n\
             [label]\nrole = \"leaf\"\n[core]\nmessage_timeout_ms = 2500\n",
        );
        let options = NodeOptions::resolve(bare_args(Some(path))).expect("valid");
        assert_eq!(options.core.id.0, 7);
        assert_eq!(options.core.name, "leaf-7");
        assert_eq!(options.core.upstream.0, 3);
        assert_eq!(
            options.core.labels,
            switchboard_core::discovery::Labels::from([("role".to_owned(), "leaf".to_owned())])
        );
        assert_eq!(options.core.message_timeout, Duration::from_millis(2500));
        assert_eq!(options.listen, SocketAddr::from(([127, 0, 0, 1], 0)));
        assert_eq!(
            options.registry,
            RegistrySpec::Embedded(SocketAddr::from(([127, 0, 0, 1], 7000)))
        );
        assert_eq!(
            options.admin,
            Some(SocketAddr::from(([127, 0, 0, 1], 9100)))
        );
        assert!(options.echo);
    }

    #[test]
    fn served_handlers_are_the_flags_and_the_file_each_once_in_name_order() {
        let text = "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
                    registry = \"127.0.0.1:7000\"\nserve = [\"silent\", \"echo\"]\n";
        let (_dir, path) = write_config(text);
        let mut args = bare_args(Some(path));
        args.serve = vec![BuiltinHandler::Sleep, BuiltinHandler::Echo];
        let options = NodeOptions::resolve(args).expect("valid");
        assert_eq!(
            options.serves,
            [
                BuiltinHandler::Echo,
                BuiltinHandler::Sleep,
                BuiltinHandler::Silent
            ]
        );
        let (_dir2, bad) = write_config(&text.replace("silent", "shout"));
        let e = NodeOptions::resolve(bare_args(Some(bad))).expect_err("unknown handler");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "serve: expected echo, sleep or silent, got \"shout\""
        );
    }

    #[test]
    fn etcd_security_and_token_files_in_a_config_file_are_relative_to_it() {
        let (dir, path) = write_config(
            "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
             etcd = [\"https://127.0.0.1:2379\"]\netcd_ca = \"ca.pem\"\n\
             etcd_cert = \"c.pem\"\netcd_key = \"k.pem\"\netcd_user = \"root\"\n\
             etcd_password_file = \"pw\"\nadmin = \"127.0.0.1:0\"\n\
             admin_token_file = \"token\"\n",
        );
        for (name, text) in [
            ("ca.pem", "pem"),
            ("c.pem", "pem"),
            ("k.pem", "pem"),
            ("pw", "secret\n"),
            ("token", "t0ken\n"),
        ] {
            crate::secret_file::create_private("test", &dir.path().join(name), text.as_bytes())
                .expect("write");
        }
        let options = NodeOptions::resolve(bare_args(Some(path.clone()))).expect("valid");
        let RegistrySpec::Etcd(etcd) = options.registry else {
            panic!("not etcd");
        };
        assert_eq!(etcd.ca, Some(dir.path().join("ca.pem")));
        assert_eq!(etcd.key, Some(dir.path().join("k.pem")));
        assert_eq!(etcd.user.as_deref(), Some("root"));
        assert_eq!(etcd.password_file, Some(dir.path().join("pw")));
        assert_eq!(options.admin_token.as_deref(), Some("t0ken"));
        // A flag overrides the file; a missing file names its key.
        let mut args = bare_args(Some(path));
        args.etcd.etcd_ca = Some(dir.path().join("missing.pem"));
        let e = NodeOptions::resolve(args).expect_err("missing CA");
        assert!(e.to_string().starts_with("etcd_ca: cannot read "), "{e}");
    }

    #[test]
    fn cluster_key_and_tls_files_in_a_config_file_are_relative_to_it() {
        let key_a = "a1".repeat(32);
        let key_b = "b2".repeat(32);
        let (dir, path) = write_config(
            "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
             registry = \"127.0.0.1:7000\"\ncluster_key_file = \"a.key\"\n\
             next_cluster_key_file = \"b.key\"\n",
        );
        for (name, key) in [("a.key", &key_a), ("b.key", &key_b)] {
            let text = format!("{key}\n");
            crate::secret_file::create_private("test", &dir.path().join(name), text.as_bytes())
                .expect("write");
        }
        let options = NodeOptions::resolve(bare_args(Some(path.clone()))).expect("valid");
        let expected = |hex: &str| switchboard_core::ClusterKey::from_hex(hex).expect("a key");
        assert_eq!(
            options.core.cluster_keys,
            vec![expected(&key_a), expected(&key_b)]
        );
        // A flag overrides its file key; a missing file names the key.
        let mut args = bare_args(Some(path.clone()));
        args.keys.cluster_key_file = Some(dir.path().join("b.key"));
        let options = NodeOptions::resolve(args).expect("valid");
        assert_eq!(options.core.cluster_keys[0], expected(&key_b));
        std::fs::remove_file(dir.path().join("b.key")).expect("remove");
        let e = NodeOptions::resolve(bare_args(Some(path))).expect_err("missing next key");
        assert!(
            e.to_string()
                .starts_with("next_cluster_key_file: cannot read "),
            "{e}"
        );
        // TLS files from the file go through the same all-or-none check as the flags.
        let (_dir, path) = write_config(
            "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
             registry = \"127.0.0.1:7000\"\ntls_cert = \"c.pem\"\n",
        );
        let e = NodeOptions::resolve(bare_args(Some(path))).expect_err("partial TLS");
        assert!(e.to_string().starts_with("tls_"), "{e}");
        // `tls_require_node_id` is read from the file too (and needs TLS).
        let (_dir, path) = write_config(
            "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
             registry = \"127.0.0.1:7000\"\ntls_require_node_id = true\n",
        );
        let e = NodeOptions::resolve(bare_args(Some(path))).expect_err("no TLS");
        assert_eq!(
            e.to_string(),
            "tls_require_node_id: only used with TLS: give --tls-cert, --tls-key and --tls-ca"
        );
    }

    /// `--weight` (or `weight` in the file; the flag wins) is published as the weight label;
    /// a weight out of 1..=10000, from the file or as a raw label, is refused.
    #[test]
    fn the_weight_is_published_as_a_label() {
        let base = "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
                    registry = \"127.0.0.1:7000\"\n";
        let (_dir, path) = write_config(&format!("{base}weight = 3\n"));
        let weight =
            |args| NodeOptions::resolve(args).map(|o| o.core.labels.get(WEIGHT_LABEL).cloned());
        assert_eq!(
            weight(bare_args(Some(path.clone()))).unwrap(),
            Some("3".into())
        );
        let mut args = bare_args(Some(path));
        args.weight = Some(40);
        assert_eq!(weight(args).unwrap(), Some("40".into()));
        let (_dir, path) = write_config(base);
        assert_eq!(weight(bare_args(Some(path))).unwrap(), None);
        let (_dir, path) = write_config(&format!("{base}weight = 0\n"));
        assert_eq!(
            weight(bare_args(Some(path))).unwrap_err().to_string(),
            "weight: is 0; it must be from 1 to 10000"
        );
        let (_dir, path) = write_config(&format!("{base}[label]\n\"{WEIGHT_LABEL}\" = \"x\"\n"));
        assert_eq!(
            weight(bare_args(Some(path))).unwrap_err().to_string(),
            "label: select.switchboard/weight=x is not a weight: an integer from 1 to 10000 \
             (set it with --weight)"
        );
    }

    #[test]
    fn flags_override_the_file_and_labels_merge() {
        let (_dir, path) = write_config(
            "id = 7\nname = \"leaf-7\"\nlisten = \"127.0.0.1:0\"\n\
             registry = \"127.0.0.1:7000\"\n[label]\nrole = \"leaf\"\nzone = \"a\"\n",
        );
        let mut args = bare_args(Some(path));
        args.id = Some(8);
        args.labels = vec![("zone".to_owned(), "b".to_owned())];
        let options = NodeOptions::resolve(args).expect("valid");
        assert_eq!(options.core.id.0, 8);
        assert_eq!(
            options.core.labels,
            switchboard_core::discovery::Labels::from([
                ("role".to_owned(), "leaf".to_owned()),
                ("zone".to_owned(), "b".to_owned())
            ])
        );
        assert!(!options.echo);
    }

    #[test]
    fn missing_required_values_are_named() {
        let e = NodeOptions::resolve(bare_args(None)).expect_err("no id");
        assert_eq!(e.to_string(), "id: required: give --id N");
        let mut args = bare_args(None);
        args.id = Some(1);
        args.name = Some("n".to_owned());
        args.listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
        let e = NodeOptions::resolve(args).expect_err("no registry");
        assert_eq!(
            e.to_string(),
            "registry: required: give --registry ADDR or --etcd URL"
        );
    }

    #[test]
    fn a_wildcard_listen_needs_an_advertised_address() {
        let text = "id = 7\nname = \"n\"\nlisten = \"0.0.0.0:0\"\nregistry = \"127.0.0.1:1\"\n";
        let (_dir, path) = write_config(text);
        let e = NodeOptions::resolve(bare_args(Some(path.clone()))).expect_err("no advertise");
        assert!(
            e.to_string()
                .starts_with("advertise: required when listening on 0.0.0.0:0"),
            "{e}"
        );
        let mut args = bare_args(Some(path.clone()));
        args.advertise = Some("10.0.0.5".to_owned());
        let options = NodeOptions::resolve(args).expect("advertised");
        assert_eq!(
            options.advertise.map(|a| a.published(4100)).as_deref(),
            Some("atcp://10.0.0.5:4100")
        );
        let (_dir2, in_file) = write_config(&format!("{text}advertise = \"node-a:7000\"\n"));
        let options =
            NodeOptions::resolve(bare_args(Some(in_file))).expect("advertised in the file");
        assert_eq!(
            options.advertise.map(|a| a.to_string()).as_deref(),
            Some("node-a:7000")
        );
        let mut bad = bare_args(Some(path));
        bad.advertise = Some("10.0.0.5:0".to_owned());
        let e = NodeOptions::resolve(bad).expect_err("port 0");
        assert_eq!(
            e.to_string(),
            "advertise: port \"0\" is not a number in 1..=65535"
        );
    }

    #[test]
    fn an_unknown_key_in_the_file_is_named() {
        let (_dir, path) = write_config("id = 7\nlabels = { role = \"leaf\" }\n");
        let e = NodeOptions::resolve(bare_args(Some(path))).expect_err("unknown key");
        match e {
            CliError::Invalid { field, problem } => {
                assert_eq!(field, "labels");
                assert!(
                    problem.starts_with("unknown key, expected one of"),
                    "{problem}"
                );
            }
            CliError::Failed(m) => panic!("expected an invalid value, got {m}"),
            other @ CliError::Interrupted { .. } => {
                panic!("expected an invalid value, got {other}")
            }
        }
    }

    #[test]
    fn a_bad_core_value_is_named() {
        let (_dir, path) = write_config(
            "id = 7\nname = \"n\"\nlisten = \"127.0.0.1:0\"\nregistry = \"127.0.0.1:1\"\n\
             [core]\nheartbeat_interval_ms = \"fast\"\n",
        );
        let e = NodeOptions::resolve(bare_args(Some(path))).expect_err("bad core value");
        assert_eq!(
            e.to_string(),
            "core.heartbeat_interval_ms: invalid type: string \"fast\", expected u64"
        );
    }
}
