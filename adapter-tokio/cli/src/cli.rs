//! The command line as clap sees it: one struct per subcommand, every flag optional where a
//! config file may give it instead (required values are checked after the file is merged, in
//! [`crate::config`]).

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

mod cert;
mod client;
mod load;
mod retry;
mod rpc;
mod send;
mod swarm;

pub(crate) use cert::CertCommand;
#[cfg(feature = "tls")]
pub(crate) use cert::{CertCaArgs, CertNodeArgs};
pub(crate) use client::{Format, JoinArgs, OutputArgs, PayloadArgs};
pub(crate) use load::LoadArgs;
pub(crate) use retry::{RetryArgs, parse_hedge_after};
pub(crate) use rpc::{BroadcastArgs, CallArgs};
pub(crate) use send::SendArgs;
pub(crate) use swarm::SwarmArgs;

/// `switchboard`: run a registry, a node, a load generator or the in-process demo.
#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version = VERSION,
    about = "Run switchboard registries, nodes, load and the demo cluster",
    long_about = "Run switchboard registries, nodes, load and the demo cluster.\n\n\
        Logs go to stderr, filtered by RUST_LOG (default `warn`; an invalid filter is reported \
        and the default used). A bad flag or config value prints one line \
        `error: <field>: <problem>` (and clap's `tip:` line when it has one) and exits with \
        code 2.",
    after_help = "Examples:\n  \
        switchboard registry --listen 127.0.0.1:7000\n  \
        switchboard node --id 1 --name hub --listen 127.0.0.1:7101 --registry 127.0.0.1:7000\n  \
        switchboard demo --seconds 10\n  \
        switchboard swarm --nodes 1000 --registry 127.0.0.1:7000\n  \
        switchboard cert ca --out pki && switchboard cert node --id 1 --ca-dir pki --out pki\n  \
        switchboard completions bash > /etc/bash_completion.d/switchboard\n  \
        switchboard man > switchboard.1",
    propagate_version = true
)]
pub(crate) struct Cli {
    /// Log line format on stderr.
    #[arg(
        long,
        value_enum,
        global = true,
        default_value_t = LogFormat::Text,
        help_heading = "Logging"
    )]
    pub(crate) log_format: LogFormat,
    /// What to run.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `--version`: the package version, the git commit it was built from (`unknown` outside a
/// git checkout) and the enabled cargo features.
pub(crate) const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("SWITCHBOARD_GIT_COMMIT"),
    ", features: ",
    env!("SWITCHBOARD_FEATURES"),
    ")"
);

/// The form of log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands.
// Parsed once per process: `load`'s flags (with the retry flags of issue 26) make it the
// largest variant, which costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the embedded registry until SIGINT/SIGTERM.
    Registry(RegistryArgs),
    /// Run a node until SIGINT/SIGTERM (graceful shutdown).
    Node(NodeArgs),
    /// Send a measured burst of messages from a node of its own and print a JSON summary.
    Load(LoadArgs),
    /// Run an in-process cluster through a scripted series of failures and print a summary.
    Demo(DemoArgs),
    /// Send one message and print its outcome as one JSON line.
    Send(SendArgs),
    /// List every node the registry knows.
    Ls(LsArgs),
    /// Call a method on one of the nodes serving it and print the outcome as one JSON line.
    Call(CallArgs),
    /// Send one message to every node matching labels and print who got it as one JSON line.
    Broadcast(BroadcastArgs),
    /// Run N nodes in this process to load-test a registry; print one JSON line of figures.
    Swarm(SwarmArgs),
    /// Print a shell completion script on stdout.
    #[command(after_help = "Examples:\n  \
        switchboard completions bash > ~/.local/share/bash-completion/completions/switchboard\n  \
        switchboard completions zsh > ~/.zfunc/_switchboard")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write a fresh cluster key to a new file (mode 0600; never overwrites).
    #[command(after_help = "Example:\n  switchboard keygen cluster.key\n  \
        switchboard registry --listen 127.0.0.1:7000 --cluster-key-file cluster.key")]
    Keygen {
        /// The file to create.
        path: PathBuf,
    },
    /// Issue a cluster CA, or a certificate for one node signed by it, for mutual TLS
    /// (needs a build with the `tls` feature).
    #[command(subcommand)]
    Cert(CertCommand),
    /// Print the man page (roff) on stdout: switchboard(1), or one subcommand's
    /// (switchboard-send(1), ...); --out-dir writes every page.
    #[command(after_help = "Examples:\n  switchboard man | man -l -\n  \
        switchboard man send | man -l -\n  \
        switchboard man --out-dir /usr/local/share/man/man1")]
    Man {
        /// The subcommand whose page to print [default: the main page].
        subcommand: Option<String>,
        /// Write every page (switchboard.1, switchboard-send.1, ...) into this directory.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}

/// The cluster key files (every subcommand that joins a cluster).
#[derive(Debug, Default, Args)]
pub(crate) struct KeyArgs {
    /// File holding the cluster key (64 hex characters, from `switchboard keygen`): links and
    /// the registry then prove it (HMAC-SHA256 challenge-response) and refuse strangers.
    /// Without it nothing is authenticated.
    #[arg(long, value_name = "PATH", help_heading = "Cluster key")]
    pub(crate) cluster_key_file: Option<PathBuf>,
    /// File holding a second accepted key, for a rolling rotation: restart every process
    /// with `--cluster-key-file OLD --next-cluster-key-file NEW`, then with
    /// `--cluster-key-file NEW` alone.
    #[arg(long, value_name = "PATH", help_heading = "Cluster key")]
    pub(crate) next_cluster_key_file: Option<PathBuf>,
}

/// Where a node finds its registry when etcd is used (shared by `node`, `load`, `demo`).
#[derive(Debug, Default, Args)]
pub(crate) struct EtcdArgs {
    /// Use etcd as the registry: client URLs, comma separated (needs a build with the `etcd`
    /// feature).
    #[arg(
        long,
        value_name = "URL[,URL...]",
        value_delimiter = ',',
        env = "SWITCHBOARD_ETCD",
        value_parser = etcd_url
    )]
    pub(crate) etcd: Option<Vec<String>>,
    /// Key prefix in etcd [default: /switchboard/].
    #[arg(long, value_name = "P")]
    pub(crate) etcd_prefix: Option<String>,
    /// PEM file with the CA that signs etcd's certificate; required with https:// URLs
    /// (TLS is used exactly when the URLs are https://).
    #[arg(long, value_name = "PEM", env = "SWITCHBOARD_ETCD_CA")]
    pub(crate) etcd_ca: Option<PathBuf>,
    /// PEM file with the client certificate presented to etcd (with --etcd-key).
    #[arg(long, value_name = "PEM", requires = "etcd_key")]
    pub(crate) etcd_cert: Option<PathBuf>,
    /// PEM file with the client certificate's private key (with --etcd-cert).
    #[arg(long, value_name = "PEM", requires = "etcd_cert")]
    pub(crate) etcd_key: Option<PathBuf>,
    /// etcd user to authenticate as (with --etcd-password-file).
    #[arg(long, value_name = "NAME", requires = "etcd_password_file")]
    pub(crate) etcd_user: Option<String>,
    /// File holding the etcd user's password (one line); the password is never taken on the
    /// command line nor logged.
    #[arg(long, value_name = "PATH", requires = "etcd_user")]
    pub(crate) etcd_password_file: Option<PathBuf>,
    /// Send the --etcd-password-file password over http:// etcd URLs, in clear (refused
    /// without this flag; use https:// instead).
    #[arg(long, requires = "etcd_password_file")]
    pub(crate) etcd_insecure_password: bool,
}

impl EtcdArgs {
    /// The TLS and authentication settings.
    pub(crate) fn security(&self) -> EtcdSecurity {
        EtcdSecurity {
            ca: self.etcd_ca.clone(),
            cert: self.etcd_cert.clone(),
            key: self.etcd_key.clone(),
            user: self.etcd_user.clone(),
            password_file: self.etcd_password_file.clone(),
            insecure_password: self.etcd_insecure_password,
        }
    }
}

/// `--etcd-ca`, `--etcd-cert`, `--etcd-key`, `--etcd-user`, `--etcd-password-file`,
/// `--etcd-insecure-password`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct EtcdSecurity {
    pub(crate) ca: Option<PathBuf>,
    pub(crate) cert: Option<PathBuf>,
    pub(crate) key: Option<PathBuf>,
    pub(crate) user: Option<String>,
    pub(crate) password_file: Option<PathBuf>,
    pub(crate) insecure_password: bool,
}

impl EtcdSecurity {
    /// Whether any of the settings is given.
    pub(crate) fn any(&self) -> bool {
        *self != EtcdSecurity::default()
    }
}

/// Mutual TLS on bus links and registry connections (shared by every command that talks to a
/// cluster). All three or none; needs a build with the `tls` feature.
#[derive(Debug, Default, Clone, Args)]
pub(crate) struct TlsArgs {
    /// This side's certificate chain (PEM, leaf first), signed by the cluster CA; turns on
    /// mutual TLS for every bus link and registry connection (with --tls-key and --tls-ca).
    #[arg(long, value_name = "PEM", help_heading = "TLS")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// This side's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", help_heading = "TLS")]
    pub(crate) tls_key: Option<PathBuf>,
    /// The cluster CA (PEM) every peer's certificate must chain to (names are not checked).
    #[arg(long, value_name = "PEM", help_heading = "TLS")]
    pub(crate) tls_ca: Option<PathBuf>,
    /// Refuse bus links whose peer's certificate names no node id
    /// (`urn:switchboard:node:<id>`, see `switchboard cert node`). A certificate that names
    /// ids always binds the link to them; without this flag one naming none admits any id.
    #[arg(long, help_heading = "TLS")]
    pub(crate) tls_require_node_id: bool,
}

/// How a one-shot client (`send`, `ls`) joins a cluster: the embedded registry or etcd, with
/// the cluster's TLS and keys. Resolved by `ClusterArgs::resolve` (in `config`).
#[derive(Debug, Args)]
pub(crate) struct ClusterArgs {
    /// A TOML file with the cluster's settings (flags override it): registry, etcd,
    /// etcd_prefix, etcd_ca, etcd_cert, etcd_key, etcd_user, etcd_password_file,
    /// cluster_key_file, next_cluster_key_file, tls_cert, tls_key, tls_ca (paths relative to
    /// the file), tls_require_node_id, upstream.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Address of the embedded registry (exclusive with --etcd).
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with = "etcd",
        env = "SWITCHBOARD_REGISTRY"
    )]
    pub(crate) registry: Option<crate::address::RegistryAddr>,
    /// etcd registry.
    #[command(flatten)]
    pub(crate) etcd: EtcdArgs,
    /// Mutual TLS.
    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    /// Cluster key files.
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
}

/// `switchboard registry`.
#[derive(Debug, Args)]
#[command(
    after_help = "When ready it prints one line on stdout: \
    {\"ready\":\"registry\",\"listen\":\"HOST:PORT\"} (the real bound port).\n\n\
    Concern file (TOML): [concern] game = [\"gate\", \"chat\"] makes nodes of type `game` \
    follow only `gate` and `chat`; unlisted types follow everything.\n\
    Config file keys: listen, concern, cluster_key_file, next_cluster_key_file, tls_cert, \
    tls_key, tls_ca (paths relative to the file), tls_require_node_id, and a [server] table with \
    access_timeout_ms, disconnect_protection_ms, heartbeat_timeout_ms (0 = never), \
    max_frame (at most 16777216), max_record (65536), max_labels (8192), \
    max_custom_data (32768), max_snapshot_part (1048576), max_connections (65536), \
    max_unregistered (1024).\n\n\
    Examples:\n  \
    switchboard registry --listen 127.0.0.1:7000\n  \
    switchboard registry --listen 0.0.0.0:7000 --concern concern.toml",
    override_usage = "switchboard registry --listen <ADDR> [OPTIONS]\n       \
    switchboard registry --config <FILE> [OPTIONS]"
)]
pub(crate) struct RegistryArgs {
    /// Address to listen on (port 0 = any free port); required unless the config file gives
    /// it.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<SocketAddr>,
    /// TOML file with the concern table.
    #[arg(long, value_name = "FILE")]
    pub(crate) concern: Option<PathBuf>,
    /// Most client connections open at once, registered or not (default 65536; over it a
    /// connection is closed at once and counted).
    #[arg(long, value_name = "N")]
    pub(crate) max_connections: Option<usize>,
    /// Most client connections open at once that have not registered yet, TLS handshakes
    /// included (default 1024).
    #[arg(long, value_name = "N")]
    pub(crate) max_unregistered: Option<usize>,
    /// Serve /metrics and /healthz over HTTP here (the ready line then names it); a bare PORT
    /// binds 127.0.0.1.
    #[arg(long, value_name = "[HOST:]PORT", value_parser = admin_addr)]
    pub(crate) admin: Option<SocketAddr>,
    /// Require `Authorization: Bearer <token>` on every admin request (else 401); the token
    /// is the file's first line, never logged.
    #[arg(long, value_name = "PATH", requires = "admin")]
    pub(crate) admin_token_file: Option<PathBuf>,
    /// TOML config file; flags override its values.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Mutual TLS.
    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    /// Cluster key files.
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
}

/// `switchboard node`.
#[derive(Debug, Args)]
#[command(
    after_help = "When ready (registered, refused, or after 5 s without a registry) it prints \
    one line on stdout: {\"ready\":\"node\",\"id\":N,\"listen\":\"HOST:PORT\",\
    \"admin\":\"HOST:PORT\"|null,\"registered\":BOOL,\"conflict\":\"WHY\"|null,\"serves\":[METHOD,...]}; \
    `conflict` says why the registry refused the node (its id or name is held), which it \
    keeps retrying; `serves` lists the built-in methods of --serve.\n\n\
    Config file keys: id, name, identity, listen, advertise, upstream, registry, label (a table), admin, echo, \
    serve (a list of echo, sleep, silent), \
    etcd (a list), etcd_prefix, etcd_ca, etcd_cert, etcd_key, etcd_user, etcd_password_file, \
    etcd_insecure_password, \
    admin_token_file, cluster_key_file, next_cluster_key_file, tls_cert, tls_key, tls_ca, \
    tls_require_node_id \
    (paths relative to the file), and a [core] table with the core settings \
    (message_timeout_ms, heartbeat_interval_ms, handshake_timeout_ms, max_pending_handshakes, \
    ...).\n\n\
    --id, --name and --listen are required unless the config file gives them; so is one of \
    --registry and --etcd.\n\n\
    Examples:\n  \
    switchboard node --id 1 --name hub --listen 127.0.0.1:7101 --registry 127.0.0.1:7000\n  \
    switchboard node --id 201 --name leaf-1 --listen 127.0.0.1:0 --upstream 1 \\\n      \
    --registry 127.0.0.1:7000 --label role=leaf --echo --admin 127.0.0.1:9201\n  \
    SWITCHBOARD_ETCD=http://127.0.0.1:2379 switchboard node --config node.toml",
    override_usage = "switchboard node --id <ID> --name <NAME> --listen <ADDR> \
    <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]\n       \
    switchboard node --config <FILE> [OPTIONS]",
    allow_negative_numbers = true
)]
pub(crate) struct NodeArgs {
    /// Node id (non-zero).
    #[arg(long, value_name = "ID", value_parser = non_negative::<u64>)]
    pub(crate) id: Option<u64>,
    /// Node name, as published in discovery.
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// Address to listen on (port 0 = any free port).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<SocketAddr>,
    /// Address other hosts reach this node at, published instead of the bound one (PORT
    /// defaults to the bound port); required with a wildcard --listen (0.0.0.0, or :: for IPv6).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub(crate) advertise: Option<String>,
    /// Id of this node's upstream (its proxy) [default: none, a root node].
    #[arg(long, value_name = "ID", value_parser = non_negative::<u64>)]
    pub(crate) upstream: Option<u64>,
    /// This deployment's identity, published in discovery and topology. A restart with the
    /// same identity takes its id's registration over at once; another identity is refused
    /// while the holder lives. Default: a hash of the host name, id, name and config path.
    #[arg(long, value_name = "TEXT")]
    pub(crate) identity: Option<String>,
    /// Address of the embedded registry (exclusive with --etcd).
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with = "etcd",
        env = "SWITCHBOARD_REGISTRY"
    )]
    pub(crate) registry: Option<crate::address::RegistryAddr>,
    /// A label `key=value` (repeatable).
    #[arg(long = "label", value_name = "K=V", value_parser = parse_label)]
    pub(crate) labels: Vec<(String, String)>,
    /// This node's weight for callers' least-outstanding (p2c) picks, 1 to 10000: they
    /// compare outstanding calls per weight. Published as the label
    /// `select.switchboard/weight` [default: 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(crate) weight: Option<u32>,
    /// Serve /metrics (Prometheus text) and /status (JSON) on this address; a bare PORT binds
    /// 127.0.0.1.
    #[arg(long, value_name = "[HOST:]PORT", value_parser = admin_addr)]
    pub(crate) admin: Option<SocketAddr>,
    /// Require `Authorization: Bearer <token>` on every admin request (else 401); the token
    /// is the file's first line, never logged.
    #[arg(long, value_name = "PATH", requires = "admin")]
    pub(crate) admin_token_file: Option<PathBuf>,
    /// Send every received message back to its sender (same type, same payload).
    #[arg(long)]
    pub(crate) echo: bool,
    /// Serve built-in RPC methods (repeatable or a comma list): `echo` answers the payload,
    /// `sleep` waits the payload's ASCII decimal milliseconds then answers it, `silent`
    /// never answers.
    #[arg(
        long,
        value_name = "echo|sleep|silent[,...]",
        value_delimiter = ',',
        value_parser = clap::builder::ValueParser::new(parse_builtin_handler)
    )]
    pub(crate) serve: Vec<crate::builtin_handlers::BuiltinHandler>,
    /// Consistent-hash ring placement: fast (default; not libatapp's), libatapp-v0.12 (as
    /// libatapp releases v0.11.0 to v0.12.5: 40 id + 40 name points) or libatapp-main (as
    /// libatapp main since commit 45f5fda, unreleased: 80 name points). Config file:
    /// `ring_hash_mode` in the [core] table.
    #[arg(long, value_name = "MODE", value_parser = parse_hash_mode)]
    pub(crate) ring_hash: Option<switchboard_core::HashMode>,
    /// TOML config file; flags override its values.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// etcd registry.
    #[command(flatten)]
    pub(crate) etcd: EtcdArgs,
    /// Mutual TLS.
    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    /// Cluster key files.
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
}

/// `switchboard demo`.
#[derive(Debug, Args)]
#[command(after_help = crate::demo::HELP, allow_negative_numbers = true)]
pub(crate) struct DemoArgs {
    /// Length of the traffic phase in seconds (at least 1).
    #[arg(long, value_name = "S", default_value_t = 20, value_parser = non_negative::<u64>)]
    pub(crate) seconds: u64,
    /// Total messages per second over all senders (at least 4).
    #[arg(long, value_name = "R", default_value_t = 1000, value_parser = non_negative::<u64>)]
    pub(crate) rate: u64,
    /// stdout is only the JSON summary line; the table and progress go to stderr.
    #[arg(long)]
    pub(crate) json: bool,
    /// etcd registry instead of the embedded one (the registry restart is then skipped).
    #[command(flatten)]
    pub(crate) etcd: EtcdArgs,
    /// Mutual TLS.
    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    /// Cluster key files (every demo node and the registry use them).
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
}

/// `switchboard ls`.
#[derive(Debug, Args)]
#[command(
    after_help = "Lists every node in the registry's discovery records: id, name, state \
    (live; protected since T, embedded registry only: its registry session was lost at T and the registry keeps its \
    record through disconnect protection, 30 s on the embedded registry; in JSON `protected_since`, RFC 3339 or null; leaving: it is draining before a \
    graceful exit), addresses, upstream (0 = root, - = no topology record), the RPC methods it serves \
    (its rpc.switchboard/<method> labels, left out of the labels), its other labels, its \
    host and pid (and in JSON its incarnation, as a string). With --watch every change \
    follows, one per line: {\"event\":\"put\",\"node\":ROW} or \
    {\"event\":\"delete\",\"id\":ID,\"name\":NAME} (table: `put ID NAME STATE ADDRESSES \
    upstream=U`, `delete ID NAME`). Read-only: on the embedded registry ls watches (it \
    registers nothing, so no node sees it come or go); on etcd it reads and watches the \
    prefix and writes no key. Exit 1 when the registry does not answer within --timeout (the \
    message says why, e.g. connection refused)."
)]
pub(crate) struct LsArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = LsFormat::Table)]
    pub(crate) output: LsFormat,
    /// Bound on the wait for the registry [default: 5s].
    #[arg(long, value_name = "D", value_parser = crate::duration::parse_duration, allow_hyphen_values = true)]
    pub(crate) timeout: Option<std::time::Duration>,
    /// Deprecated: --timeout in milliseconds (use --timeout 5s).
    #[arg(long, value_name = "MS", hide = true, conflicts_with = "timeout")]
    pub(crate) timeout_ms: Option<u64>,
    /// After the listing, print every change as it happens (one line, or one JSON object
    /// with -o json), until SIGINT/SIGTERM.
    #[arg(long)]
    pub(crate) watch: bool,
    /// The cluster: registry, TLS, keys.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `ls -o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LsFormat {
    /// Aligned columns with a header.
    Table,
    /// One JSON array.
    Json,
}

/// Parses a whole number that cannot be negative; a negative one (clap lets it through as a
/// value, see `allow_negative_numbers`) is a range error rather than "unexpected argument".
pub(crate) fn non_negative<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    if text.trim_start().starts_with('-') {
        return Err(format!("must be 0 or more, got {text}"));
    }
    text.parse().map_err(|e: T::Err| e.to_string())
}

/// Checks one etcd client URL: `http://` or `https://`, a host (a name, an IPv4 address or
/// a bracketed IPv6 address) and a port, nothing after but an optional `/`.
pub(crate) fn etcd_url(text: &str) -> Result<String, String> {
    let bad = |why: &str| {
        Err(format!(
            "{why} in etcd URL {text:?} (expected http://HOST:PORT)"
        ))
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        return bad("no scheme");
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return bad("the scheme is not http or https");
    }
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    if !path.is_empty() {
        return bad("a path");
    }
    if authority.contains('@') {
        return bad("user info");
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let Some((v6, after)) = bracketed.split_once(']') else {
            return bad("an unclosed `[`");
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return bad("a bad IPv6 address");
        }
        let Some(port) = after.strip_prefix(':') else {
            return bad("no port");
        };
        (v6, port)
    } else {
        let Some((host, port)) = authority.rsplit_once(':') else {
            return bad("no port");
        };
        if host.contains(':') {
            return bad("an IPv6 address without brackets");
        }
        (host, port)
    };
    let host_ok = !host.is_empty()
        && (host.contains(':')
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'));
    if !host_ok {
        return bad("a bad host");
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(text.to_owned()),
        _ => bad("a bad port"),
    }
}

/// Parses an admin address: `HOST:PORT`, or a bare `PORT` on loopback (127.0.0.1), so
/// the admin endpoint is never exposed unless an address says so.
pub(crate) fn admin_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse()
        .map_err(|_| format!("expected HOST:PORT or a port (bound on 127.0.0.1), got {text:?}"))
}

/// Parses a ring hash mode spelling (`fast`, `libatapp-v0.12`, `libatapp-main`).
pub(crate) fn parse_hash_mode(text: &str) -> Result<switchboard_core::HashMode, String> {
    switchboard_core::HashMode::parse(text)
        .ok_or_else(|| format!("expected fast, libatapp-v0.12 or libatapp-main, got {text:?}"))
}

/// Parses a built-in handler name (`echo`, `sleep`, `silent`).
pub(crate) fn parse_builtin_handler(
    text: &str,
) -> Result<crate::builtin_handlers::BuiltinHandler, String> {
    text.parse()
}

/// Parses `key=value` (the key non-empty).
pub(crate) fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, error::ErrorKind};

    use super::*;

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn etcd_urls_need_a_scheme_a_host_and_a_port() {
        for good in [
            "http://127.0.0.1:2379",
            "https://etcd-0.example.org:2379/",
            "http://[::1]:2379",
            "HTTP://localhost:1",
        ] {
            assert_eq!(etcd_url(good).as_deref(), Ok(good), "{good}");
        }
        for (bad, why) in [
            ("ht!tp://::nope", "the scheme is not http or https"),
            ("127.0.0.1:2379", "no scheme"),
            ("grpc://h:1", "the scheme is not http or https"),
            ("http://::1:2379", "an IPv6 address without brackets"),
            ("http://[::1]", "no port"),
            ("http://[nope]:1", "a bad IPv6 address"),
            ("http://h", "no port"),
            ("http://:2379", "a bad host"),
            ("http://h!:2379", "a bad host"),
            ("http://h:0", "a bad port"),
            ("http://h:99999", "a bad port"),
            ("http://h:1/v3", "a path"),
            ("http://u@h:1", "user info"),
        ] {
            let e = etcd_url(bad).expect_err(bad);
            assert!(e.starts_with(why), "{bad}: {e}");
        }
    }

    #[test]
    fn labels_need_a_key_and_an_equals_sign() {
        assert_eq!(
            parse_label("role=leaf"),
            Ok(("role".to_owned(), "leaf".to_owned()))
        );
        assert_eq!(parse_label("a=b=c"), Ok(("a".to_owned(), "b=c".to_owned())));
        assert_eq!(
            parse_label("empty="),
            Ok(("empty".to_owned(), String::new()))
        );
        assert_eq!(
            parse_label("role"),
            Err("expected KEY=VALUE, got \"role\"".to_owned())
        );
        assert_eq!(
            parse_label("=leaf"),
            Err("expected KEY=VALUE, got \"=leaf\"".to_owned())
        );
    }

    #[test]
    fn node_flags_parse_into_their_fields() {
        let cli = Cli::try_parse_from([
            "switchboard",
            "node",
            "--id",
            "7",
            "--name",
            "leaf-7",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "3",
            "--registry",
            "127.0.0.1:7000",
            "--label",
            "role=leaf",
            "--label",
            "zone=a",
            "--echo",
        ])
        .expect("valid flags");
        let Command::Node(args) = cli.command else {
            panic!("not the node subcommand");
        };
        assert_eq!(args.id, Some(7));
        assert_eq!(args.name.as_deref(), Some("leaf-7"));
        assert_eq!(args.listen, Some(SocketAddr::from(([127, 0, 0, 1], 0))));
        assert_eq!(args.upstream, Some(3));
        assert_eq!(
            args.registry,
            Some(SocketAddr::from(([127, 0, 0, 1], 7000)).into())
        );
        assert_eq!(
            args.labels,
            vec![
                ("role".to_owned(), "leaf".to_owned()),
                ("zone".to_owned(), "a".to_owned())
            ]
        );
        assert!(args.echo);
        assert_eq!(args.advertise, None);
        assert_eq!(args.admin, None);
        assert_eq!(args.etcd.etcd, None);
    }

    #[test]
    fn advertise_is_a_node_and_load_flag() {
        let cli = Cli::try_parse_from(["switchboard", "node", "--advertise", "10.0.0.5:7"])
            .expect("valid flags");
        let Command::Node(args) = cli.command else {
            panic!("not the node subcommand");
        };
        assert_eq!(args.advertise.as_deref(), Some("10.0.0.5:7"));
        let cli = Cli::try_parse_from(["switchboard", "load", "--advertise", "h", "--to", "a"])
            .expect("valid flags");
        let Command::Load(args) = cli.command else {
            panic!("not the load subcommand");
        };
        assert_eq!(args.advertise.as_deref(), Some("h"));
    }

    #[test]
    fn etcd_urls_split_on_commas() {
        let cli = Cli::try_parse_from([
            "switchboard",
            "load",
            "--etcd",
            "http://127.0.0.1:2379,http://127.0.0.1:2380",
            "--to",
            "leaf",
        ])
        .expect("valid flags");
        let Command::Load(args) = cli.command else {
            panic!("not the load subcommand");
        };
        assert_eq!(
            args.etcd.etcd,
            Some(vec![
                "http://127.0.0.1:2379".to_owned(),
                "http://127.0.0.1:2380".to_owned()
            ])
        );
    }

    #[test]
    fn registry_and_etcd_are_mutually_exclusive() {
        let err = Cli::try_parse_from([
            "switchboard",
            "node",
            "--registry",
            "127.0.0.1:1",
            "--etcd",
            "http://127.0.0.1:2379",
        ])
        .expect_err("conflicting flags");
        assert_eq!(err.kind(), ErrorKind::ArgumentConflict);
    }

    #[test]
    fn to_and_hash_key_are_mutually_exclusive() {
        let err = Cli::try_parse_from(["switchboard", "load", "--to", "a", "--hash-key", "k"])
            .expect_err("conflicting flags");
        assert_eq!(err.kind(), ErrorKind::ArgumentConflict);
    }

    #[test]
    fn demo_defaults_are_twenty_seconds_at_a_thousand_messages_per_second() {
        let cli = Cli::try_parse_from(["switchboard", "demo"]).expect("valid flags");
        let Command::Demo(args) = cli.command else {
            panic!("not the demo subcommand");
        };
        assert_eq!((args.seconds, args.rate, args.json), (20, 1000, false));
    }

    #[test]
    fn etcd_tls_and_user_flags_are_on_every_etcd_subcommand() {
        let flags = [
            "--etcd",
            "https://127.0.0.1:2379",
            "--etcd-ca",
            "ca.pem",
            "--etcd-cert",
            "c.pem",
            "--etcd-key",
            "k.pem",
            "--etcd-user",
            "root",
            "--etcd-password-file",
            "pw",
        ];
        for sub in [
            &["node"][..],
            &["load", "--to", "a"],
            &["demo"],
            &["send", "--to", "a", "--payload", "x"],
            &["ls"],
        ] {
            let argv = ["switchboard"].iter().chain(sub).chain(&flags);
            let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{sub:?}: {e}"));
            let etcd = match cli.command {
                Command::Node(a) => a.etcd,
                Command::Load(a) => a.etcd,
                Command::Demo(a) => a.etcd,
                Command::Send(a) => a.cluster.etcd,
                Command::Ls(a) => a.cluster.etcd,
                _ => panic!("another subcommand"),
            };
            let security = etcd.security();
            assert_eq!(security.ca, Some(PathBuf::from("ca.pem")), "{sub:?}");
            assert_eq!(security.user.as_deref(), Some("root"), "{sub:?}");
            assert_eq!(security.password_file, Some(PathBuf::from("pw")), "{sub:?}");
        }
        // A certificate needs its key, a user needs a password file.
        let err =
            Cli::try_parse_from(["switchboard", "ls", "--etcd-cert", "c.pem"]).expect_err("no key");
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
        let err = Cli::try_parse_from(["switchboard", "ls", "--etcd-user", "root"])
            .expect_err("no password file");
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn a_bare_admin_port_binds_loopback() {
        assert_eq!(
            admin_addr("9100"),
            Ok(SocketAddr::from(([127, 0, 0, 1], 9100)))
        );
        assert_eq!(
            admin_addr("0.0.0.0:9100"),
            Ok(SocketAddr::from(([0, 0, 0, 0], 9100)))
        );
        assert!(admin_addr("[::1]:9100").is_ok());
        assert!(admin_addr("localhost").is_err());
        let cli = Cli::try_parse_from([
            "switchboard",
            "registry",
            "--admin",
            "9100",
            "--admin-token-file",
            "t",
        ])
        .expect("valid flags");
        let Command::Registry(args) = cli.command else {
            panic!("not the registry subcommand");
        };
        assert_eq!(args.admin, Some(SocketAddr::from(([127, 0, 0, 1], 9100))));
        assert_eq!(args.admin_token_file, Some(PathBuf::from("t")));
    }
}
