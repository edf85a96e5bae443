//! `switchboard registry` options: flags merged over the config file, the concern file read,
//! the server tuning checked.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use serde::Deserialize;
use switchboard_core::registry::server::{ServerConfig, ServerConfigError};
use switchboard_tokio::registry::ConnectionCaps;

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
    /// Largest frame the registry sends, in bytes (at most 16 MiB, what clients accept).
    pub(crate) max_frame: Option<usize>,
    /// Largest registration: discovery and topology JSON together, in bytes (default 65536).
    pub(crate) max_record: Option<usize>,
    /// Largest label set of one record, keys and values summed, in bytes (default 8192).
    pub(crate) max_labels: Option<usize>,
    /// Largest `custom_data` of a discovery record, in bytes (default 32768).
    pub(crate) max_custom_data: Option<usize>,
    /// Largest snapshot part, in bytes (default 1048576).
    pub(crate) max_snapshot_part: Option<usize>,
    /// `--max-connections`.
    pub(crate) max_connections: Option<usize>,
    /// `--max-unregistered`.
    pub(crate) max_unregistered: Option<usize>,
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
    /// How many connections the registry holds at once.
    pub(crate) caps: ConnectionCaps,
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
        let server_file = file.server.unwrap_or_default();
        let caps = connection_caps(
            args.max_connections.or(server_file.max_connections),
            args.max_unregistered.or(server_file.max_unregistered),
        )?;
        let mut server = server_config(server_file)?;
        if let Some(path) = concern_path {
            server.concern = concern::read_concern_file(&path)?;
        }
        server.keys = switchboard_core::ClusterKeys::new(&keys);
        Ok(RegistryOptions {
            listen,
            server,
            admin: args.admin,
            admin_token: super::admin_token(args.admin, args.admin_token_file.as_deref())?,
            transport,
            caps,
        })
    }
}

/// The connection caps from the flags or the `[server]` table (defaults where missing).
///
/// # Errors
///
/// A zero cap.
pub(crate) fn connection_caps(
    max_connections: Option<usize>,
    max_unregistered: Option<usize>,
) -> Result<ConnectionCaps, CliError> {
    let mut caps = ConnectionCaps::default();
    for (field, value, slot) in [
        (
            "server.max_connections",
            max_connections,
            &mut caps.max_connections,
        ),
        (
            "server.max_unregistered",
            max_unregistered,
            &mut caps.max_unregistered,
        ),
    ] {
        if let Some(n) = value {
            if n == 0 {
                return Err(CliError::invalid(field, "must be greater than zero"));
            }
            *slot = n;
        }
    }
    Ok(caps)
}

/// The server config from the `[server]` table (defaults where a key is missing).
///
/// # Errors
///
/// A zero `access_timeout_ms` or `max_frame`, or sizes [`ServerConfig::validate`] refuses
/// (a `max_frame` above what clients accept, a `max_record` that does not fit in it, ...).
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
    for (value, slot) in [
        (file.max_record, &mut config.max_record),
        (file.max_labels, &mut config.max_labels),
        (file.max_custom_data, &mut config.max_custom_data),
        (file.max_snapshot_part, &mut config.max_snapshot_part),
    ] {
        if let Some(bytes) = value {
            *slot = bytes;
        }
    }
    config.validate().map_err(|e| {
        let field = match e {
            ServerConfigError::MaxFrame { .. } => "server.max_frame",
            ServerConfigError::SnapshotPart { .. } => "server.max_snapshot_part",
            _ => "server.max_record",
        };
        CliError::invalid(field, e.to_string())
    })?;
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
            max_connections: None,
            max_unregistered: None,
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
             heartbeat_timeout_ms = 0\nmax_frame = 1048576\nmax_record = 4096\n\
             max_labels = 1024\nmax_custom_data = 2048\nmax_snapshot_part = 65536\n\
             max_connections = 100\nmax_unregistered = 10\n"
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
        assert_eq!(
            (
                options.server.max_frame,
                options.server.max_record,
                options.server.max_labels,
                options.server.max_custom_data,
                options.server.max_snapshot_part
            ),
            (1 << 20, 4096, 1024, 2048, 65536)
        );
        assert_eq!(options.caps, ConnectionCaps::new(100, 10));
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
    fn sizes_beyond_what_clients_accept_are_refused_by_name() {
        let file: ServerFile = parse_toml("max_frame = 16777217\n").expect("toml");
        assert_eq!(
            server_config(file)
                .expect_err("over the clients' limit")
                .to_string(),
            "server.max_frame: max_frame 16777217 must be 1 ..= 16777216 (the largest frame clients accept)"
        );
        let file: ServerFile =
            parse_toml("max_frame = 65536\nmax_snapshot_part = 65536\n").expect("toml");
        assert_eq!(
            server_config(file)
                .expect_err("the record does not fit")
                .to_string(),
            "server.max_record: max_record 65536 needs frames of 65605 bytes with its overhead, over max_frame 65536"
        );
        assert_eq!(
            connection_caps(Some(0), None)
                .expect_err("zero")
                .to_string(),
            "server.max_connections: must be greater than zero"
        );
    }

    #[test]
    fn the_flags_override_the_caps_of_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("registry.toml");
        std::fs::write(
            &config_path,
            "listen = \"127.0.0.1:7000\"\n[server]\nmax_connections = 100\nmax_unregistered = 10\n",
        )
        .expect("write");
        let mut args = args(None, Some(config_path));
        args.max_unregistered = Some(3);
        let options = RegistryOptions::resolve(args).expect("valid");
        assert_eq!(options.caps, ConnectionCaps::new(100, 3));
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
