//! The cluster a one-shot client (`send`, `call`, `broadcast`, `ls`, `swarm`) joins: its flags
//! over its `--config` file, which holds the cluster's keys only (a node's file is for the
//! node).

use std::path::PathBuf;

use serde::Deserialize;
use switchboard_tokio::RegistrySpec;

use super::{merge_secrets, merge_security, read_toml, registry_spec, transport};
use crate::{cli::EtcdSecurity, error::CliError};

/// A client's config file: where the cluster is and how to join it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientFile {
    /// `--registry`.
    pub(crate) registry: Option<crate::address::RegistryAddr>,
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
    /// `--upstream` (the commands that join the tree: `send`, `call`, `broadcast`).
    pub(crate) upstream: Option<u64>,
}

/// What a one-shot client joins: the registry, the transport, the cluster keys, and the
/// config file's upstream (a flag overrides it).
pub(crate) struct Joined {
    pub(crate) registry: RegistrySpec,
    pub(crate) transport: switchboard_tokio::Transport,
    pub(crate) keys: Vec<switchboard_core::ClusterKey>,
    pub(crate) upstream: Option<u64>,
}

impl crate::cli::ClusterArgs {
    /// Reads `--config`, then checks the key files, the registry and the TLS settings, in
    /// that order, each flag over its file key.
    ///
    /// # Errors
    ///
    /// A bad config file, a key file that cannot be read or is malformed, no registry or
    /// two, etcd settings without etcd, partial or unreadable TLS files.
    pub(crate) fn resolve(self) -> Result<Joined, CliError> {
        let config = self.config.as_deref();
        let mut file: ClientFile = read_toml(config)?;
        let (keys, tls) = merge_secrets(&self.keys, &self.tls, file.take_secrets(), config)?;
        let security = merge_security(
            self.etcd.security(),
            EtcdSecurity {
                ca: file.etcd_ca,
                cert: file.etcd_cert,
                key: file.etcd_key,
                user: file.etcd_user,
                password_file: file.etcd_password_file,
                insecure_password: file.etcd_insecure_password.unwrap_or(false),
            },
            config,
        );
        let registry = registry_spec(
            self.registry.or(file.registry),
            self.etcd.etcd.or(file.etcd),
            self.etcd.etcd_prefix.or(file.etcd_prefix),
            security,
        )?;
        Ok(Joined {
            registry,
            transport: transport(tls)?,
            keys,
            upstream: file.upstream,
        })
    }
}
