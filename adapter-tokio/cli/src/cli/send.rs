//! `switchboard send` as clap sees it.

use clap::Args;
use switchboard_core::select::Mode;

use std::time::Duration;

use super::{ClusterArgs, JoinArgs, OutputArgs, PayloadArgs, parse_label};
use crate::duration::parse_duration;

/// `switchboard send`.
#[derive(Debug, Args)]
#[command(
    after_help = "Sends from a light client of its own (send-ID, a random 63-bit id, label \
    role=client: not a member, its leaving is no peer death). \
    Prints one JSON line: {\"outcome\":\"delivered\",\"latency_us\":N} \
    or the failure's class and reason (e.g. {\"outcome\":\"refused\",\"reason\":\"unknown_target\"}, \
    {\"outcome\":\"unknown\",\"reason\":\"timeout\",\"latency_us\":N}; \
    {\"outcome\":\"no_outcome\"} when none came within --timeout); -o text prints one line \
    for a person. Exit 0 when delivered, 1 otherwise \
    (with one line on stderr saying why), 2 for a bad flag. A --to NAME not yet known is \
    waited for within --timeout. With --upstream ID the client joins under that proxy and \
    sends through it (to reach nodes behind it). The payload is --payload TEXT, @FILE or - \
    (stdin), --payload-hex or --payload-base64.\n\n\
    Instead of --to, --select MODE picks the node among the nodes with every --filter label \
    (every node without one; the sending node itself is one): hash (of --key; --key alone \
    means hash), maglev or bounded (of --key), round-robin, random, least-outstanding \
    (also p2c).\n\n\
    Examples:\n  \
    switchboard send --registry 127.0.0.1:7000 --to leaf-1 --payload hello\n  \
    switchboard send --registry 127.0.0.1:7000 --key user-42 --filter role=leaf --payload hi\n  \
    switchboard send --registry 127.0.0.1:7000 --upstream 10 --to s3 --payload @msg.bin",
    override_usage = "switchboard send <--to <NAME|ID>|--select <MODE>|--key <K>> \
    <--payload <TEXT|@FILE|->|--payload-hex <HEX>|--payload-base64 <B64>> <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]"
)]
pub(crate) struct SendArgs {
    /// The target: a node name, or a node id (digits).
    #[arg(long, value_name = "NAME|ID", conflicts_with_all = ["select", "key", "filters"])]
    pub(crate) to: Option<String>,
    /// Pick the target among the nodes matching --filter: hash, maglev, bounded (of --key),
    /// round-robin, random, least-outstanding (p2c).
    #[arg(long, value_name = "MODE", value_parser = crate::selection::parse_mode)]
    pub(crate) select: Option<Mode>,
    /// The key of --select hash, maglev or bounded (alone: --select hash).
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// Restrict --select candidates to nodes with this label `key=value` (repeatable).
    #[arg(long = "filter", value_name = "K=V", value_parser = parse_label)]
    pub(crate) filters: Vec<(String, String)>,
    /// The payload (one of --payload, --payload-hex, --payload-base64).
    #[command(flatten)]
    pub(crate) payload: PayloadArgs,
    /// Message type.
    #[arg(long = "type", value_name = "N", default_value_t = 1)]
    pub(crate) msg_type: u32,
    /// Bound on the whole run: the registry, the target, the outcome [default: 5s].
    #[arg(long, value_name = "D", value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) timeout: Option<Duration>,
    /// Deprecated: --timeout in milliseconds (use --timeout 5s).
    #[arg(long, value_name = "MS", hide = true, conflicts_with = "timeout")]
    pub(crate) timeout_ms: Option<u64>,
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
