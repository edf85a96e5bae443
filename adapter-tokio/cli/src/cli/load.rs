//! `switchboard load` as clap sees it.

use std::{net::SocketAddr, path::PathBuf};

use clap::Args;

use super::{EtcdArgs, KeyArgs, OutputArgs, TlsArgs, admin_addr, non_negative, parse_label};

/// `switchboard load`.
#[derive(Debug, Args)]
#[command(
    after_help = "Prints one JSON line: {\"sent\",\"delivered\",\"failed\":{reason:count},\
    \"duplicates\",\"echoed\",\"p50_us\",\"p99_us\",\"max_us\",\"unknown\",\"lost\",\
    \"elapsed_ms\",\"rate_achieved\",\"spans_ms\":{class:ms}}; exit 0 when every message was \
    delivered, else 1 with one line on stderr saying why (also when the registry does not \
    answer within --wait-known). `unknown` sums the unknown_* failures, `lost` is no_outcome, \
    `spans_ms` the time from the first to the last outcome of each class. On a terminal, \
    progress goes to stderr each second. `sent` counts every message handed to \
    the node (all --count of them); a refused one is counted under failed as \
    `refused_<why>`, so sent = delivered + the sum of failed. Outcome reasons: timeout, \
    queue_full, no_route, target_gone, target_restarted, shutdown; `unknown_<reason>` when \
    the message was transmitted but not acknowledged; `no_outcome` when none came in time. \
    Latency is from send to the Delivered outcome. Echoes (from a node run with --echo) are \
    counted by sequence number: a repeated one is a duplicate. The load runs as a light \
    client (labels role=client and command=load, a random 63-bit id unless --id): no node \
    counts its leaving as a peer death or dials it again. It links to its targets directly, \
    or with --upstream sends through that proxy.\n\n\
    On a message load the first SIGINT or SIGTERM stops sending, waits at most 1 s for the \
    outcomes in flight, \
    writes --outcomes-log, prints the summary so far with \"interrupted\":true, leaves the \
    registry and exits 130 (SIGINT) or 143 (SIGTERM); a second signal exits at once.\n\n\
    --outcomes-log FILE writes, when the run ends and before the summary, one line per \
    message in sequence order: `SEQ SENT_US OUTCOME_US OUTCOME`, the instants in \
    microseconds since the Unix epoch (the system clock, comparable across processes on one \
    host): SENT_US just before the message was handed to the node, OUTCOME_US when its \
    outcome (or refusal) came; OUTCOME is `delivered` or the summary's failure name; a \
    message without an outcome is `no_outcome` with OUTCOME_US 0.\n\n\
    Calls: with --method M the load calls M instead of sending messages, --count calls, at \
    most --concurrency in flight (paced by --rate if given), and prints one JSON line \
    {\"calls\",\"replies\",\"failed\":{reason:count},\"unknown\":{reason:count},\
    \"p50_us\",\"p99_us\",\"max_us\",\"elapsed_ms\"}: failed = provably never executed \
    (not_available, expired, not_served, ..., or refused_<why> when the node refused the \
    call), unknown = may have executed (target_gone, timeout, ..., or no_outcome when the \
    node stopped first); latency percentiles are of the replies, call to reply. Exit 0 only \
    when every call replied. With --outcomes-log the lines are `SEQ SENT_US OUTCOME_US \
    OUTCOME`, OUTCOME being reply, failed_<reason> or unknown_<reason>.\n\n\
    Config file keys: registry, to, hash_key, select, filter (a table), count, rate, size, id, name, \
    advertise, wait_known, upstream, window, outcomes_log, method, concurrency, key, payload, \
    timeout, grace (durations as strings: \"5s\"), admin, admin_token_file, etcd, \
    etcd_prefix, etcd_ca, etcd_cert, etcd_key, etcd_user, etcd_password_file, \
    etcd_insecure_password, \
    cluster_key_file, next_cluster_key_file, tls_cert, tls_key, tls_ca, tls_require_node_id (paths relative to the \
    file), and a [core] table.\n\n\
    --count, --rate, --size and a target (--to, --select or --hash-key) are required unless the config \
    file gives them (with --method: --count only); so is one of --registry and --etcd.\n\n\
    Examples:\n  \
    switchboard load --registry 127.0.0.1:7000 --to leaf-1 --count 10000 --rate 1000 --size 64\n  \
    switchboard load --registry 127.0.0.1:7000 --hash-key user-42 --filter role=leaf \\\n      \
    --count 1000 --rate 0 --size 256 --outcomes-log outcomes.txt\n  \
    switchboard load --registry 127.0.0.1:7000 --select round-robin --filter role=leaf \\\n      \
    --count 1000 --rate 0 --size 64\n  \
    switchboard load --registry 127.0.0.1:7000 --method echo --concurrency 8 --count 200",
    override_usage = "switchboard load <--to <NAME|ID>|--select <MODE>|--hash-key <K>> --count <N> --rate <R> \
    --size <B> <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]\n       \
    switchboard load --method <M> --count <N> [--concurrency <C>] \
    <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]\n       \
    switchboard load --config <FILE> [OPTIONS]",
    allow_negative_numbers = true
)]
pub(crate) struct LoadArgs {
    /// Address of the embedded registry (exclusive with --etcd).
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with = "etcd",
        env = "SWITCHBOARD_REGISTRY"
    )]
    pub(crate) registry: Option<crate::address::RegistryAddr>,
    /// Send to the node with this name (or id: digits).
    #[arg(long, value_name = "NAME|ID", conflicts_with_all = ["hash_key", "select"])]
    pub(crate) to: Option<String>,
    /// Send by consistent hash of this key (among nodes matching --filter).
    #[arg(long, value_name = "K")]
    pub(crate) hash_key: Option<String>,
    /// Pick each message's node (among nodes matching --filter) or each call's server:
    /// hash, maglev, bounded (of --hash-key, calls: --key), round-robin, random,
    /// least-outstanding (p2c).
    #[arg(long, value_name = "MODE", value_parser = crate::selection::parse_mode)]
    pub(crate) select: Option<switchboard_core::select::Mode>,
    /// Restrict --select / --hash-key candidates to nodes with this label `key=value`
    /// (repeatable).
    #[arg(long = "filter", value_name = "K=V", value_parser = parse_label)]
    pub(crate) filters: Vec<(String, String)>,
    /// Messages to send.
    #[arg(long, value_name = "N", value_parser = non_negative::<u64>)]
    pub(crate) count: Option<u64>,
    /// Messages per second (0 = as fast as the in-flight window allows).
    #[arg(long, value_name = "R", value_parser = non_negative::<u64>)]
    pub(crate) rate: Option<u64>,
    /// Payload size in bytes (at least 8: the sequence number).
    #[arg(long, value_name = "B", value_parser = non_negative::<usize>)]
    pub(crate) size: Option<usize>,
    /// Id of the load client [default: a random 63-bit id].
    #[arg(long, value_name = "N", value_parser = non_negative::<u64>)]
    pub(crate) id: Option<u64>,
    /// Name of the load client [default: load-ID].
    #[arg(long, value_name = "NAME")]
    pub(crate) name: Option<String>,
    /// Listen on all addresses and publish this one (PORT defaults to the bound port), for
    /// targets on other hosts; without it the load node listens on 127.0.0.1.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub(crate) advertise: Option<String>,
    /// How long to wait for the registry and the target before sending [default: 10s]
    /// (a bare number of seconds is still read, deprecated).
    #[arg(long, value_name = "D", value_parser = crate::duration::parse_seconds_or_duration, allow_hyphen_values = true)]
    pub(crate) wait_known: Option<f64>,
    /// Join the tree under this proxy (send through it) instead of linking to targets directly.
    #[arg(long, value_name = "ID", value_parser = non_negative::<u64>)]
    pub(crate) upstream: Option<u64>,
    /// Messages in flight at most [default: 1024].
    #[arg(long, value_name = "N", value_parser = non_negative::<usize>)]
    pub(crate) window: Option<usize>,
    /// Write each message's send and outcome instants to FILE (format below).
    #[arg(long, value_name = "FILE")]
    pub(crate) outcomes_log: Option<PathBuf>,
    /// Make calls of this method instead of sending messages (see "Calls" below).
    #[arg(long, value_name = "M", conflicts_with_all = ["to", "hash_key"])]
    pub(crate) method: Option<String>,
    /// Calls in flight at most (with --method) [default: 1].
    #[arg(long, value_name = "C", value_parser = non_negative::<usize>)]
    pub(crate) concurrency: Option<usize>,
    /// Pick each call's server by consistent hash of this key (with --method) [default:
    /// round robin].
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// Each call's payload, as its UTF-8 bytes (with --method; exclusive with --size, which
    /// sends the call's sequence number in B bytes) [default: empty].
    #[arg(long, value_name = "TEXT")]
    pub(crate) payload: Option<String>,
    /// Each call's budget (with --method) [default: 30s].
    #[arg(long, value_name = "D", value_parser = crate::duration::parse_duration, allow_hyphen_values = true)]
    pub(crate) timeout: Option<std::time::Duration>,
    /// Each call's wait for a server of the method (with --method) [default: 15s].
    #[arg(long, value_name = "D", value_parser = crate::duration::parse_duration, allow_hyphen_values = true)]
    pub(crate) grace: Option<std::time::Duration>,
    /// Retries and hedging of each call (with --method).
    #[command(flatten)]
    pub(crate) retry: super::retry::RetryArgs,
    /// Serve the load node's /metrics, /status, /healthz and /readyz here while it runs; a bare PORT
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
    /// etcd registry.
    #[command(flatten)]
    pub(crate) etcd: EtcdArgs,
    /// Mutual TLS.
    #[command(flatten)]
    pub(crate) tls: TlsArgs,
    /// Cluster key files.
    #[command(flatten)]
    pub(crate) keys: KeyArgs,
    /// Output format of the summary.
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}
