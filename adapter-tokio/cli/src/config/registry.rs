//! `switchboard registry` options: flags merged over the config file, the concern file read,
//! the server tuning checked.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use serde::Deserialize;
use switchboard_core::registry::server::ServerConfig;

use super::{concern, read_toml, relative_to};
use crate::{cli::RegistryArgs, error::CliError};

/// The registry config file.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegistryFile {
    /// `--listen`.
    pub(crate) listen: Option<SocketAddr>,
    /// `--concern` (relative to the config file).
    pub(crate) concern: Option<PathBuf>,
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
    /// Server tuning.
    pub(crate) server: Option<ServerFile>,
}

/// The `[server]` table: the registry server's timeouts and limits.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerFile {
    /// Close connections that do not register within this (default 10000).
    pub(crate) access_timeout_ms: Option<u64>,
    /// Keep a disconnected node listed this long before pushing its removal (default 30000).
    pub(crate) disconnect_protection_ms: Option<u64>,
    /// Close a silent registered connection after this; 0 = never (default 15000).
    pub(crate) heartbeat_timeout_ms: Option<u64>,
    /// Largest frame accepted from a client, in bytes.
    pub(crate) max_frame: Option<usize>,
}

/// Everything `switchboard registry` runs with.
#[derive(Debug)]
pub(crate) struct RegistryOptions {
    /// Address to listen on.
    pub(crate) listen: SocketAddr,
    /// The server machine's config (with the concern table).
    pub(crate) server: ServerConfig,
    /// `--admin`: where to serve the admin endpoint.
    pub(crate) admin: Option<SocketAddr>,
    /// `--admin-token-file`'s token: every admin request must carry it.
    pub(crate) admin_token: Option<String>,
    /// Plain TCP or mutual TLS.
    pub(crate) transport: switchboard_tokio::Transport,
}

impl RegistryOptions {
    /// Merges the flags over the config file and reads the concern file.
    ///
    /// # Errors
    ///
    /// A bad config or concern file, a missing `listen`, or a zero timeout or frame size.
    pub(crate) fn resolve(args: RegistryArgs) -> Result<RegistryOptions, CliError> {
        let mut file: RegistryFile = read_toml(args.config.as_deref())?;
        let (keys, tls) = super::merge_secrets(
            &args.keys,
            &args.tls,
            file.take_secrets(),
            args.config.as_deref(),
        )?;
        let transport = super::transport(tls)?;
        let listen = args
            .listen
            .or(file.listen)
            .ok_or_else(|| CliError::invalid("listen", "required: give --listen ADDR"))?;
        let concern_path = args
            .concern
            .or_else(|| file.concern.map(|p| relative_to(args.config.as_deref(), p)));
        let mut server = server_config(file.server.unwrap_or_default())?;
        if let Some(path) = concern_path {
            server.concern = concern::read_concern_file(&path)?;
        }
        server.keys = switchboard_core::bus::handshake::ClusterKeys::new(&keys);
        Ok(RegistryOptions {
            listen,
            server,
            admin: args.admin,
            admin_token: super::admin_token(args.admin, args.admin_token_file.as_deref())?,
            transport,
        })
    }
}

/// The server config from the `[server]` table (defaults where a key is missing).
///
/// # Errors
///
/// A zero `access_timeout_ms` or `max_frame`.
pub(crate) fn server_config(file: ServerFile) -> Result<ServerConfig, CliError> {
    let mut config = ServerConfig::default();
    if let Some(ms) = file.access_timeout_ms {
        if ms == 0 {
            return Err(CliError::invalid(
                "server.access_timeout_ms",
                "must be greater than zero",
            ));
        }
        config.access_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = file.disconnect_protection_ms {
        config.disconnect_protection = Duration::from_millis(ms);
    }
    if let Some(ms) = file.heartbeat_timeout_ms {
        config.heartbeat_timeout = (ms > 0).then(|| Duration::from_millis(ms));
    }
    if let Some(bytes) = file.max_frame {
        if bytes == 0 {
            return Err(CliError::invalid(
                "server.max_frame",
                "must be greater than zero",
            ));
        }
        config.max_frame = bytes;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use switchboard_core::registry::server::ConcernTable;

    use super::*;
    use crate::config::parse_toml;

    fn args(listen: Option<SocketAddr>, config: Option<PathBuf>) -> RegistryArgs {
        RegistryArgs {
            listen,
            concern: None,
            admin: None,
            admin_token_file: None,
            config,
            tls: crate::cli::TlsArgs::default(),
            keys: crate::cli::KeyArgs::default(),
        }
    }

    #[test]
    fn the_file_gives_listen_concern_and_server_tuning() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("concern.toml"),
            "[concern]\ngame = [\"gate\"]\n",
        )
        .expect("write concern");
        let config_path = dir.path().join("registry.toml");
        let mut f = std::fs::File::create(&config_path).expect("create");
        write!(
            f,
            "listen = \"127.0.0.1:7000\"\nconcern = \"concern.toml\"\n\
             [server]\naccess_timeout_ms = 2000\ndisconnect_protection_ms = 500\n\
             heartbeat_timeout_ms = 0\nmax_frame = 65536\n"
        )
        .expect("write");
        let options = RegistryOptions::resolve(args(None, Some(config_path))).expect("valid");
        assert_eq!(options.listen, SocketAddr::from(([127, 0, 0, 1], 7000)));
        assert_eq!(options.server.access_timeout, Duration::from_millis(2000));
        assert_eq!(
            options.server.disconnect_protection,
            Duration::from_millis(500)
        );
        assert_eq!(options.server.heartbeat_timeout, None);
        assert_eq!(options.server.max_frame, 65536);
        let mut expected = ConcernTable::all();
        expected.set("game", ["gate"]);
        assert_eq!(options.server.concern, expected);
    }

    #[test]
    fn the_listen_flag_overrides_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("registry.toml");
        std::fs::write(&config_path, "listen = \"127.0.0.1:7000\"\n").expect("write");
        let flag = SocketAddr::from(([127, 0, 0, 1], 0));
        let options = RegistryOptions::resolve(args(Some(flag), Some(config_path))).expect("valid");
        assert_eq!(options.listen, flag);
        assert_eq!(options.server, ServerConfig::default());
    }

    #[test]
    fn listen_is_required() {
        let e = RegistryOptions::resolve(args(None, None)).expect_err("no listen");
        assert_eq!(e.to_string(), "listen: required: give --listen ADDR");
    }

    #[test]
    fn zero_access_timeout_is_refused_by_name() {
        let file: ServerFile = parse_toml("access_timeout_ms = 0\n").expect("toml");
        assert_eq!(
            server_config(file).expect_err("zero").to_string(),
            "server.access_timeout_ms: must be greater than zero"
        );
    }
}
