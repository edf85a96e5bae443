//! Settings of the etcd registry backend. The type exists in every build so flags and config
//! files can name it; running it needs the `etcd` feature.

use std::{path::PathBuf, time::Duration};

/// Where and how a node uses etcd as its registry.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EtcdOptions {
    /// Client URLs, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// Key prefix; keys are `<prefix>by_id/<name>-<id>`, `<prefix>by_name/<name>-<id>`,
    /// `<prefix>topology/<name>-<id>`. Ends with `/`.
    pub prefix: String,
    /// Lease TTL (default 31 s).
    pub lease_ttl: Duration,
    /// Keepalive period (default 10 s).
    pub keepalive_interval: Duration,
    /// A watch stream silent for this long is declared dead and re-created (default 30 s);
    /// the backend requests progress well before.
    pub watch_silence: Duration,
    /// PEM file with the CA certificate(s) that sign etcd's server certificate; needed with
    /// `https://` endpoints (the system roots are not used). TLS is used exactly when the
    /// endpoints are `https://`.
    pub ca: Option<PathBuf>,
    /// PEM file with the client certificate presented to etcd (etcd's
    /// `--client-cert-auth`); given together with [`key`](Self::key).
    pub cert: Option<PathBuf>,
    /// PEM file with the private key of [`cert`](Self::cert).
    pub key: Option<PathBuf>,
    /// etcd user to authenticate as (etcd's `auth enable`); given together with
    /// [`password_file`](Self::password_file).
    pub user: Option<String>,
    /// File holding the user's password (one line; a trailing newline is ignored). The
    /// password is read when connecting and never kept in these options nor logged.
    pub password_file: Option<PathBuf>,
}

impl EtcdOptions {
    /// Options for these endpoints with the default prefix `/switchboard/` and defaults.
    #[must_use]
    pub fn new(endpoints: Vec<String>) -> EtcdOptions {
        EtcdOptions {
            endpoints,
            prefix: String::from("/switchboard/"),
            lease_ttl: Duration::from_secs(31),
            keepalive_interval: Duration::from_secs(10),
            watch_silence: Duration::from_secs(30),
            ca: None,
            cert: None,
            key: None,
            user: None,
            password_file: None,
        }
    }
}
