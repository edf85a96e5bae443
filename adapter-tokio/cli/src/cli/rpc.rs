//! The RPC subcommands as clap sees them: `call` and `broadcast`.

use std::time::Duration;

use clap::Args;

use super::{ClusterArgs, JoinArgs, OutputArgs, PayloadArgs, parse_label};
use crate::duration::parse_duration;

/// `switchboard call`.
#[derive(Debug, Args)]
#[command(
    after_help = "Calls METHOD once, from a light client of its own (call-ID, a random 63-bit \
    id, label role=client: it is not a member, its leaving is no peer death), on one of the nodes \
    serving it, and prints one JSON line: {\"outcome\":\"reply\",\"payload\":TEXT,\
    \"latency_us\":N} (the reply's bytes as text when they are UTF-8, else their base64 and \
    \"encoding\":\"base64\"), or \
    {\"outcome\":\"failed\"|\"unknown\",\"reason\":REASON,\"latency_us\":N}. `failed` means \
    the handler provably never ran, `unknown` that it may have. Reasons: not_available (no \
    server within --grace), target_gone, target_restarted, timeout, expired, not_served, \
    self_call, queue_full, shutdown, cancelled. latency_us is from the call to its outcome. \
    Exit 0 on a reply, 1 otherwise (with one line on stderr saying why; also when the \
    registry does not answer within 5 s), 2 for a bad flag.\n\n\
    The server is picked among the method's servers by --select: round-robin (the \
    default), random, least-outstanding (of two drawn at random, the one with fewer of this \
    node's calls outstanding per weight; also p2c), hash of --key (the same key goes to the \
    same server while membership holds; --key alone means hash), maglev of --key (a Maglev \
    table: O(1) lookup) or bounded of --key (the key's ring owner unless it carries more \
    than 1.25 x the mean load, then the next server clockwise); --server ID calls that server. --upstream ID \
    joins under that proxy and calls through it (to reach servers behind it). The payload is \
    --payload TEXT, @FILE or - (stdin), --payload-hex or --payload-base64 (empty without one); \
    -o text prints one line for a person. Durations are a \
    number and a unit: 250ms, 5s, 1.5s, 2m.\n\n\
    Examples:\n  \
    switchboard call --registry 127.0.0.1:7000 --method echo --payload hello\n  \
    switchboard call --registry 127.0.0.1:7000 --method sleep --payload 2000 --timeout 1s"
)]
pub(crate) struct CallArgs {
    /// The method: 1 to 128 ASCII letters, digits and `._-:`.
    #[arg(long, value_name = "M")]
    pub(crate) method: String,
    /// Pick the server: hash, maglev, bounded (of --key), round-robin, random,
    /// least-outstanding (p2c) [default: round-robin; hash with --key].
    #[arg(long, value_name = "MODE", value_parser = crate::selection::parse_mode)]
    pub(crate) select: Option<switchboard_core::select::Mode>,
    /// The key of --select hash, maglev or bounded (alone: --select hash).
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// Call this server (a node id serving the method) instead of selecting one.
    #[arg(long, value_name = "ID", conflicts_with_all = ["select", "key"], value_parser = super::non_negative::<u64>)]
    pub(crate) server: Option<u64>,
    /// The payload (empty without one; one of --payload, --payload-hex, --payload-base64).
    #[command(flatten)]
    pub(crate) payload: PayloadArgs,
    /// Metadata for the handler, KEY=VALUE, repeatable (e.g. a W3C traceparent=...): at most
    /// 16 entries, keys 1 to 64 bytes, values at most 512 bytes, 4 KiB in all.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub(crate) meta: Vec<String>,
    /// The call's whole budget, from the call to its outcome [default: 30s, the core's].
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) timeout: Option<Duration>,
    /// How long to wait for a server of the method to appear [default: 15s, the core's;
    /// never beyond --timeout].
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) grace: Option<Duration>,
    /// Retries and hedging.
    #[command(flatten)]
    pub(crate) retry: super::retry::RetryArgs,
    /// How the client joins the tree.
    #[command(flatten)]
    pub(crate) join: JoinArgs,
    /// Output format.
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    /// The cluster: registry, TLS, keys.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}

/// `switchboard broadcast`.
#[derive(Debug, Args)]
#[command(
    after_help = "Sends one message, from a light client of its own (broadcast-ID, a random \
    63-bit id, label role=client), to every node \
    whose labels include every --label (every node without one), each on its own \
    acknowledged stream, waits until each recipient has an outcome and prints one JSON line: \
    {\"delivered\":[ID,...],\"failed\":{ID:REASON},\"unknown\":{ID:REASON}} (ids ascending; \
    failed = provably not received, unknown = maybe received). Exit 0 when every recipient \
    got it (none failed or unknown; also when nothing matched), 1 otherwise (one line on \
    stderr saying why; also when the registry does not answer within 5 s), 2 for a bad \
    flag.\n\n\
    A recipient that is gone (killed, its record still listed) waits until --timeout. \
    --upstream ID sends through that proxy; the payload is --payload TEXT, @FILE or -, \
    --payload-hex or --payload-base64; -o text prints one line for a person. \
    Durations are a number and a unit: 250ms, 5s, 1.5s, 2m.\n\n\
    Example:\n  \
    switchboard broadcast --registry 127.0.0.1:7000 --label role=leaf --payload reload \
    --timeout 2s"
)]
pub(crate) struct BroadcastArgs {
    /// Only nodes with this label `key=value` (repeatable; all must match).
    #[arg(long = "label", value_name = "K=V", value_parser = parse_label)]
    pub(crate) labels: Vec<(String, String)>,
    /// Message type each recipient receives.
    #[arg(long = "type", value_name = "N", default_value_t = 1)]
    pub(crate) msg_type: u32,
    /// The payload (one of --payload, --payload-hex, --payload-base64).
    #[command(flatten)]
    pub(crate) payload: PayloadArgs,
    /// Also send to the broadcasting node itself (it matches only without --label).
    #[arg(long)]
    pub(crate) include_self: bool,
    /// The broadcast's whole budget: a recipient without an outcome by then is given up
    /// (failed or unknown `timeout`) [default: 8s, the core's message timeout].
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) timeout: Option<Duration>,
    /// How the client joins the tree.
    #[command(flatten)]
    pub(crate) join: JoinArgs,
    /// Output format.
    #[command(flatten)]
    pub(crate) out: OutputArgs,
    /// The cluster: registry, TLS, keys.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}
