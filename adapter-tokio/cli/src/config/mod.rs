//! Config files and the merge with flags: each subcommand's TOML file ([`registry`], [`node`],
//! [`load`]) has keys named like its flags; a flag given on the command line overrides the
//! file; the merged values are checked here, so the runners get complete, valid options.
//!
//! Every problem is a [`CliError::Invalid`] naming the key (dotted for nested tables, e.g.
//! `core.message_timeout_ms`): unknown keys, wrong types, missing required values, values out
//! of range.

pub(crate) mod client;
pub(crate) mod concern;
pub(crate) mod load;
pub(crate) mod load_calls;
pub(crate) mod node;
pub(crate) mod registry;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::de::DeserializeOwned;
use switchboard_core::{
    config::{Config, ConfigError},
    discovery::address::{Advertise, AdvertiseError, check_listen},
};
use switchboard_tokio::{RegistrySpec, registry::EtcdOptions};

use crate::{cli::EtcdSecurity, error::CliError};
pub(crate) use client::Joined;

/// Reads and deserializes a TOML file; `None` reads nothing and gives `T::default()`.
///
/// # Errors
///
/// The file cannot be read (field `config`), is not TOML (field `config`, with the line), or
/// a key is unknown or has the wrong type (field = the dotted key path).
pub(crate) fn read_toml<T: DeserializeOwned + Default>(path: Option<&Path>) -> Result<T, CliError> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::invalid("config", format!("cannot read {}: {e}", path.display())))?;
    parse_toml(&text).map_err(|e| match e {
        TomlProblem::Syntax { line, message } => CliError::invalid(
            "config",
            format!("{}: line {line}: {message}", path.display()),
        ),
        TomlProblem::Field { field, message } => CliError::invalid(field, message),
    })
}

/// Why a TOML text did not deserialize.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TomlProblem {
    /// Not TOML at all.
    Syntax {
        /// 1-based line of the problem (0 if unknown).
        line: usize,
        /// toml's message.
        message: String,
    },
    /// A key is unknown or has a bad value.
    Field {
        /// Dotted path of the key.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Deserializes TOML text, naming the offending key on error.
pub(crate) fn parse_toml<T: DeserializeOwned>(text: &str) -> Result<T, TomlProblem> {
    let one_line = |s: &str| s.trim().replace('\n', " ");
    let deserializer = toml::de::Deserializer::parse(text).map_err(|e| TomlProblem::Syntax {
        line: e.span().map_or(0, |span| line_of(text, span.start)),
        message: one_line(e.message()),
    })?;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let message = one_line(e.inner().message());
        // serde_path_to_error's path already ends with an unknown key; say "unknown key"
        // rather than serde's "unknown field" (these are TOML keys).
        if let Some(key) = unknown_key(&message) {
            let field = if path == "." { key.to_owned() } else { path };
            return TomlProblem::Field {
                field,
                message: format!("unknown key{}", after_unknown_key(&message)),
            };
        }
        TomlProblem::Field {
            field: if path == "." {
                String::from("config")
            } else {
                path
            },
            message,
        }
    })
}

/// The key in serde's "unknown field `x`, expected ..." message.
fn unknown_key(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(key, _)| key)
}

/// What serde says after the unknown key (", expected one of ...").
fn after_unknown_key(message: &str) -> &str {
    message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map_or("", |(_, after)| after)
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(0, |before| before.matches('\n').count() + 1)
}

/// A path from a config file, relative to the file's directory.
pub(crate) fn relative_to(config: Option<&Path>, path: PathBuf) -> PathBuf {
    match config.and_then(Path::parent) {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path,
    }
}

/// The transport of `--tls-cert` / `--tls-key` / `--tls-ca`: plain TCP without them, mutual
/// TLS with all three.
///
/// # Errors
///
/// Only some of the three, a file that cannot be read or parsed (the error names its flag), a
/// key file accessible by group or others, `--tls-require-node-id` without TLS, or TLS flags
/// in a build without the `tls` feature.
pub(crate) fn transport(
    tls: crate::cli::TlsArgs,
) -> Result<switchboard_tokio::Transport, CliError> {
    let crate::cli::TlsArgs {
        tls_cert,
        tls_key,
        tls_ca,
        tls_require_node_id,
    } = tls;
    let (cert, key, ca) = match (tls_cert, tls_key, tls_ca) {
        (None, None, None) if tls_require_node_id => {
            return Err(CliError::invalid(
                "tls_require_node_id",
                "only used with TLS: give --tls-cert, --tls-key and --tls-ca",
            ));
        }
        (None, None, None) => return Ok(switchboard_tokio::Transport::plain()),
        (Some(cert), Some(key), Some(ca)) => (cert, key, ca),
        (cert, key, _) => {
            let missing = if cert.is_none() {
                "tls_cert"
            } else if key.is_none() {
                "tls_key"
            } else {
                "tls_ca"
            };
            return Err(CliError::invalid(
                missing,
                "required with the other TLS flags: give --tls-cert, --tls-key and --tls-ca",
            ));
        }
    };
    #[cfg(feature = "tls")]
    {
        use switchboard_tokio::transport::tls::{TlsConfig, TlsFile};
        crate::secret_file::check_private("tls_key", &key)?;
        match TlsConfig::from_files(&cert, &key, &ca) {
            Ok(config) => Ok(switchboard_tokio::Transport::tls(
                config.require_node_id(tls_require_node_id),
            )),
            Err(e) => {
                let field = match e.file {
                    TlsFile::Cert => "tls_cert",
                    TlsFile::Key => "tls_key",
                    TlsFile::Ca => "tls_ca",
                };
                Err(CliError::invalid(field, e.reason))
            }
        }
    }
    #[cfg(not(feature = "tls"))]
    {
        let _ = (cert, key, ca, tls_require_node_id);
        Err(CliError::invalid(
            "tls_cert",
            "this build has no TLS (build switchboard with the `tls` feature)",
        ))
    }
}

/// The registry a node uses, from the merged `registry` / `etcd` / `etcd_prefix` values.
///
/// # Errors
///
/// Both or neither of `registry` and `etcd`, an empty URL list or URL, or an `etcd_prefix`
/// without `etcd` or not ending with `/`.
pub(crate) fn registry_spec(
    registry: Option<crate::address::RegistryAddr>,
    etcd: Option<Vec<String>>,
    etcd_prefix: Option<String>,
    security: EtcdSecurity,
) -> Result<RegistrySpec, CliError> {
    if etcd.is_none() && security.any() {
        let field = match &security {
            EtcdSecurity { ca: Some(_), .. } => "etcd_ca",
            EtcdSecurity { cert: Some(_), .. } => "etcd_cert",
            EtcdSecurity { key: Some(_), .. } => "etcd_key",
            EtcdSecurity { user: Some(_), .. } => "etcd_user",
            EtcdSecurity {
                password_file: Some(_),
                ..
            } => "etcd_password_file",
            _ => "etcd_insecure_password",
        };
        return Err(CliError::invalid(field, "only used with etcd"));
    }
    match (registry, etcd) {
        (Some(_), Some(_)) => Err(CliError::invalid(
            "registry",
            "give either registry or etcd, not both",
        )),
        (None, None) => Err(CliError::invalid(
            "registry",
            "required: give --registry ADDR or --etcd URL",
        )),
        (Some(addr), None) => match etcd_prefix {
            Some(_) => Err(CliError::invalid("etcd_prefix", "only used with etcd")),
            None => addr.spec(),
        },
        (None, Some(urls)) => {
            if urls.is_empty() {
                return Err(CliError::invalid("etcd", "needs at least one URL"));
            }
            if urls.iter().any(|u| u.trim().is_empty()) {
                return Err(CliError::invalid("etcd", "a URL is empty"));
            }
            // Flags were checked by clap already; a config file's list is checked here.
            for url in &urls {
                crate::cli::etcd_url(url).map_err(|e| CliError::invalid("etcd", e))?;
            }
            let mut options = EtcdOptions::new(urls);
            if let Some(prefix) = etcd_prefix {
                if !prefix.ends_with('/') {
                    return Err(CliError::invalid(
                        "etcd_prefix",
                        format!("must end with `/`, got {prefix:?}"),
                    ));
                }
                options.prefix = prefix;
            }
            etcd_security(&mut options, security)?;
            Ok(RegistrySpec::Etcd(options))
        }
    }
}

/// Checks the etcd TLS and authentication settings against the URLs and reads every file
/// once (a missing, unreadable or empty file is a bad value of its flag), then sets them on
/// `options`. The password itself is not kept: the backend reads the file when connecting.
///
/// # Errors
///
/// https:// and http:// URLs mixed (`etcd`), https:// without `etcd_ca`, TLS files with
/// http:// URLs, a certificate without its key or a user without a password file (or the
/// reverse), a bad file (the key and the password file also when group- or
/// world-accessible), a password over http:// without `etcd_insecure_password`.
fn etcd_security(options: &mut EtcdOptions, security: EtcdSecurity) -> Result<(), CliError> {
    let https = options
        .endpoints
        .iter()
        .filter(|url| {
            url.get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        })
        .count();
    if https > 0 && https < options.endpoints.len() {
        return Err(CliError::invalid(
            "etcd",
            "mixes https:// and http:// URLs (use one scheme)",
        ));
    }
    let tls_given = [
        ("etcd_ca", &security.ca),
        ("etcd_cert", &security.cert),
        ("etcd_key", &security.key),
    ];
    if https == 0 {
        if let Some((field, _)) = tls_given.iter().find(|(_, path)| path.is_some()) {
            return Err(CliError::invalid(
                *field,
                "only used with https:// etcd URLs",
            ));
        }
    } else if security.ca.is_none() {
        return Err(CliError::invalid(
            "etcd_ca",
            "required with https:// etcd URLs: the PEM of the CA that signs etcd's certificate",
        ));
    }
    let pairs = [
        (
            "etcd_cert",
            security.cert.is_some(),
            "etcd_key",
            security.key.is_some(),
        ),
        (
            "etcd_user",
            security.user.is_some(),
            "etcd_password_file",
            security.password_file.is_some(),
        ),
    ];
    for (a, a_given, b, b_given) in pairs {
        if a_given != b_given {
            let (given, missing) = if a_given { (a, b) } else { (b, a) };
            return Err(CliError::invalid(
                given,
                format!("needs --{} as well", missing.replace('_', "-")),
            ));
        }
    }
    for (field, path) in tls_given
        .into_iter()
        .chain([("etcd_password_file", &security.password_file)])
    {
        if let Some(path) = path {
            if matches!(field, "etcd_key" | "etcd_password_file") {
                crate::secret_file::check_private(field, path)?;
            }
            let bytes = std::fs::read(path).map_err(|e| {
                CliError::invalid(field, format!("cannot read {}: {e}", path.display()))
            })?;
            if bytes.is_empty() {
                return Err(CliError::invalid(
                    field,
                    format!("{} is empty", path.display()),
                ));
            }
            if field == "etcd_password_file" {
                let text = String::from_utf8(bytes).map_err(|_| {
                    CliError::invalid(field, format!("{} is not UTF-8", path.display()))
                })?;
                if text.trim_end_matches(['\n', '\r']).is_empty() {
                    return Err(CliError::invalid(
                        field,
                        format!("{} is empty", path.display()),
                    ));
                }
            }
        }
    }
    if https == 0 && security.password_file.is_some() && !security.insecure_password {
        return Err(CliError::invalid(
            "etcd_password_file",
            "the password would cross the network in clear over http:// etcd URLs: use \
             https:// (with --etcd-ca), or accept the risk with --etcd-insecure-password",
        ));
    }
    if security.insecure_password && security.password_file.is_none() {
        return Err(CliError::invalid(
            "etcd_insecure_password",
            "only used with --etcd-password-file",
        ));
    }
    if security
        .user
        .as_deref()
        .is_some_and(|u| u.trim().is_empty())
    {
        return Err(CliError::invalid("etcd_user", "is blank"));
    }
    options.ca = security.ca;
    options.cert = security.cert;
    options.key = security.key;
    options.user = security.user;
    options.password_file = security.password_file;
    Ok(())
}

/// The etcd TLS and user settings: each flag over the config file's value (the file's paths
/// relative to its directory).
pub(crate) fn merge_security(
    flags: EtcdSecurity,
    file: EtcdSecurity,
    config: Option<&Path>,
) -> EtcdSecurity {
    let path = |flag: Option<PathBuf>, file: Option<PathBuf>| {
        flag.or_else(|| file.map(|p| relative_to(config, p)))
    };
    EtcdSecurity {
        ca: path(flags.ca, file.ca),
        cert: path(flags.cert, file.cert),
        key: path(flags.key, file.key),
        user: flags.user.or(file.user),
        password_file: path(flags.password_file, file.password_file),
        insecure_password: flags.insecure_password || file.insecure_password,
    }
}

/// The cluster key and TLS files a config file names (`cluster_key_file`,
/// `next_cluster_key_file`, `tls_cert`, `tls_key`, `tls_ca`), and `tls_require_node_id`.
#[derive(Debug, Default)]
pub(crate) struct FileSecrets {
    pub(crate) cluster_key_file: Option<PathBuf>,
    pub(crate) next_cluster_key_file: Option<PathBuf>,
    pub(crate) tls_cert: Option<PathBuf>,
    pub(crate) tls_key: Option<PathBuf>,
    pub(crate) tls_ca: Option<PathBuf>,
    pub(crate) tls_require_node_id: Option<bool>,
}

/// `take_secrets` for config-file structs with the five secret-file keys: moves them into a
/// [`FileSecrets`].
macro_rules! take_secrets {
    ($($file:ty),+) => {$(
        impl $file {
            /// The cluster key and TLS files this config file names (taken out of it).
            pub(crate) fn take_secrets(&mut self) -> $crate::config::FileSecrets {
                $crate::config::FileSecrets {
                    cluster_key_file: self.cluster_key_file.take(),
                    next_cluster_key_file: self.next_cluster_key_file.take(),
                    tls_cert: self.tls_cert.take(),
                    tls_key: self.tls_key.take(),
                    tls_ca: self.tls_ca.take(),
                    tls_require_node_id: self.tls_require_node_id.take(),
                }
            }
        }
    )+};
}

take_secrets!(
    node::NodeFile,
    load::LoadFile,
    registry::RegistryFile,
    client::ClientFile
);

/// The key and TLS flags over the config file's (each flag overrides its file key; the
/// file's paths are relative to its directory).
///
/// # Errors
///
/// A key file that cannot be read or is malformed (named by its key).
pub(crate) fn merge_secrets(
    keys: &crate::cli::KeyArgs,
    tls: &crate::cli::TlsArgs,
    file: FileSecrets,
    config: Option<&Path>,
) -> Result<(Vec<switchboard_core::ClusterKey>, crate::cli::TlsArgs), CliError> {
    let path = |flag: &Option<PathBuf>, file: Option<PathBuf>| {
        flag.clone()
            .or_else(|| file.map(|p| relative_to(config, p)))
    };
    let keys = crate::keys::load(&crate::cli::KeyArgs {
        cluster_key_file: path(&keys.cluster_key_file, file.cluster_key_file),
        next_cluster_key_file: path(&keys.next_cluster_key_file, file.next_cluster_key_file),
    })?;
    let tls = crate::cli::TlsArgs {
        tls_cert: path(&tls.tls_cert, file.tls_cert),
        tls_key: path(&tls.tls_key, file.tls_key),
        tls_ca: path(&tls.tls_ca, file.tls_ca),
        tls_require_node_id: tls.tls_require_node_id || file.tls_require_node_id == Some(true),
    };
    Ok((keys, tls))
}

/// The admin bearer token from `--admin-token-file`: the file's first line, which must be
/// non-empty visible ASCII (it travels in a header). Read once at start; never logged.
///
/// # Errors
///
/// The file without an admin address, or a group- or world-accessible, unreadable, empty or
/// non-ASCII file (field `admin_token_file`).
pub(crate) fn admin_token(
    admin: Option<std::net::SocketAddr>,
    file: Option<&Path>,
) -> Result<Option<String>, CliError> {
    const FIELD: &str = "admin_token_file";
    let Some(path) = file else {
        if let Some(addr) = admin.filter(|a| !a.ip().is_loopback()) {
            tracing::warn!(
                admin = %addr,
                "the admin endpoint is reachable from other hosts and has no admin_token_file: \
                 anyone who can connect reads /status and /metrics"
            );
        }
        return Ok(None);
    };
    if admin.is_none() {
        return Err(CliError::invalid(FIELD, "only used with --admin"));
    }
    crate::secret_file::check_private(FIELD, path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::invalid(FIELD, format!("cannot read {}: {e}", path.display())))?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.is_empty() {
        return Err(CliError::invalid(
            FIELD,
            format!("{} is empty", path.display()),
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(CliError::invalid(
            FIELD,
            format!(
                "{}: the token must be visible ASCII without spaces",
                path.display()
            ),
        ));
    }
    Ok(Some(token.to_owned()))
}

/// The merged `advertise` value, parsed and checked against `listen` (required when it is a
/// wildcard address).
///
/// # Errors
///
/// A bad host or port, or no `advertise` with a wildcard `listen` (field `advertise`).
pub(crate) fn advertise(
    listen: std::net::SocketAddr,
    text: Option<String>,
) -> Result<Option<Advertise>, CliError> {
    let invalid = |e: AdvertiseError| CliError::invalid("advertise", e.to_string());
    let advertise = text
        .as_deref()
        .map(Advertise::parse)
        .transpose()
        .map_err(invalid)?;
    check_listen(listen, advertise.as_ref()).map_err(invalid)?;
    Ok(advertise)
}

/// The identity a node's core config gets from flags.
pub(crate) struct Identity {
    /// Node id.
    pub(crate) id: u64,
    /// Node name.
    pub(crate) name: String,
    /// Upstream id, if any.
    pub(crate) upstream: Option<u64>,
    /// Labels.
    pub(crate) labels: BTreeMap<String, String>,
}

/// The complete core config: the file's `[core]` table (or the defaults) with the identity
/// from flags, validated.
///
/// # Errors
///
/// `[core]` sets a key that has its own flag, or the config fails `Config::validate`.
pub(crate) fn core_config(core: Option<Config>, identity: Identity) -> Result<Config, CliError> {
    let mut config = core.unwrap_or_default();
    let defaults = Config::default();
    let own_keys = [
        ("id", config.id != defaults.id),
        ("name", config.name != defaults.name),
        ("identity", config.identity != defaults.identity),
        ("upstream", config.upstream != defaults.upstream),
        ("labels", config.labels != defaults.labels),
        ("listen", config.listen != defaults.listen),
    ];
    if let Some((key, _)) = own_keys.iter().find(|(_, set)| *set) {
        let flag = if *key == "labels" { "label" } else { key };
        return Err(CliError::invalid(
            format!("core.{key}"),
            format!("set it with `{flag}` (the flag or the top-level key), not in [core]"),
        ));
    }
    if identity.id == 0 {
        return Err(CliError::invalid("id", "node id 0 is reserved"));
    }
    config.id = identity.id.into();
    config.name = identity.name;
    if let Some(upstream) = identity.upstream {
        if upstream == identity.id {
            return Err(CliError::invalid(
                "upstream",
                "a node cannot be its own upstream",
            ));
        }
        config.upstream = upstream.into();
    }
    config.labels = identity.labels.into();
    config.validate().map_err(core_config_error)?;
    Ok(config)
}

/// A node or client name given by the user: not empty (an empty name registers a node no one
/// can address by name).
///
/// # Errors
///
/// The name is empty or only white space.
pub(crate) fn check_name(name: &str) -> Result<(), CliError> {
    if name.trim().is_empty() {
        return Err(CliError::invalid("name", "must not be empty"));
    }
    Ok(())
}

/// Labels given by the user (`--label`, `label` in a config file): none of the labels
/// switchboard sets itself — `rpc.switchboard/<method>` (set by `--serve`: a node would be
/// listed as serving a method it has no handler for), `leaving` (set by the drain before a
/// graceful exit) and `role=client` (marks a light client, whose leaving is no peer death).
///
/// # Errors
///
/// A reserved label, named.
pub(crate) fn check_user_labels(labels: &BTreeMap<String, String>) -> Result<(), CliError> {
    use switchboard_core::discovery::{CLIENT_ROLE, LEAVING_LABEL, ROLE_LABEL};
    use switchboard_core::rpc::METHOD_LABEL_PREFIX;
    for (key, value) in labels {
        let why = if key.starts_with(METHOD_LABEL_PREFIX) {
            "is reserved: methods are served with --serve (config key `serve`)"
        } else if key == LEAVING_LABEL {
            "is reserved: the drain before a graceful exit sets it"
        } else if key == ROLE_LABEL && value == CLIENT_ROLE {
            "is reserved: it marks light clients (send, call, load), not members"
        } else if key == switchboard_core::select::WEIGHT_LABEL
            && !value
                .parse::<u32>()
                .is_ok_and(|w| (1..=switchboard_core::select::MAX_WEIGHT).contains(&w))
        {
            "is not a weight: an integer from 1 to 10000 (set it with --weight)"
        } else {
            continue;
        };
        return Err(CliError::invalid("label", format!("{key}={value} {why}")));
    }
    Ok(())
}

/// A core `ConfigError` as a field and a problem.
pub(crate) fn core_config_error(e: ConfigError) -> CliError {
    match e {
        ConfigError::ReservedNodeId => CliError::invalid("id", "node id 0 is reserved"),
        ConfigError::SelfUpstream { .. } => {
            CliError::invalid("upstream", "a node cannot be its own upstream")
        }
        ConfigError::Zero { field } => {
            CliError::invalid(format!("core.{field}"), "must be greater than zero")
        }
        ConfigError::ReconnectMaxBelowStart { .. } => CliError::invalid(
            "core.reconnect_max_ms",
            "must not be below reconnect_start_ms",
        ),
        ConfigError::JitterOutOfRange { percent } => CliError::invalid(
            "core.reconnect_jitter_percent",
            format!("is {percent}; it must be between 0 and 100"),
        ),
        other => CliError::invalid("core", other.to_string()),
    }
}

#[cfg(test)]
mod tests;
