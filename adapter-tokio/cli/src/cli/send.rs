//! `switchboard send` as clap sees it.

use clap::Args;
use switchboard_core::select::Mode;

use super::{ClusterArgs, parse_label};

/// `switchboard send`.
#[derive(Debug, Args)]
#[command(
    after_help = "Sends from a light client of its own (send-ID, a random 63-bit id, label \
    role=client: not a member, its leaving is no peer death). \
    Prints one JSON line: {\"outcome\":\"delivered\",\"latency_us\":N} \
    or the failure, named like load's failures (e.g. {\"outcome\":\"refused_unknown_target\"}, \
    {\"outcome\":\"unknown_timeout\",\"latency_us\":N}). Exit 0 when delivered, 1 otherwise \
    (with one line on stderr saying why), 2 for a bad flag. A --to NAME not yet known is \
    waited for within --timeout-ms.\n\n\
    Instead of --to, --select MODE picks the node among the nodes with every --filter label \
    (every node without one; the sending node itself is one): hash (of --key; --key alone \
    means hash), round-robin, random, least-outstanding.\n\n\
    Examples:\n  \
    switchboard send --registry 127.0.0.1:7000 --to leaf-1 --payload hello\n  \
    switchboard send --registry 127.0.0.1:7000 --key user-42 --filter role=leaf --payload hi",
    override_usage = "switchboard send <--to <NAME|ID>|--select <MODE>|--key <K>> \
    --payload <TEXT> <--registry <ADDR>|--etcd <URL[,URL...]>> [OPTIONS]"
)]
pub(crate) struct SendArgs {
    /// The target: a node name, or a node id (digits).
    #[arg(long, value_name = "NAME|ID", conflicts_with_all = ["select", "key", "filters"])]
    pub(crate) to: Option<String>,
    /// Pick the target among the nodes matching --filter: hash (of --key), round-robin,
    /// random, least-outstanding.
    #[arg(long, value_name = "MODE", value_parser = crate::selection::parse_mode)]
    pub(crate) select: Option<Mode>,
    /// The key of --select hash (alone: --select hash).
    #[arg(long, value_name = "K")]
    pub(crate) key: Option<String>,
    /// Restrict --select candidates to nodes with this label `key=value` (repeatable).
    #[arg(long = "filter", value_name = "K=V", value_parser = parse_label)]
    pub(crate) filters: Vec<(String, String)>,
    /// The payload, sent as its UTF-8 bytes.
    #[arg(long, value_name = "TEXT")]
    pub(crate) payload: String,
    /// Message type.
    #[arg(long = "type", value_name = "N", default_value_t = 1)]
    pub(crate) msg_type: u32,
    /// Bound on the whole run: the registry, the target, the outcome.
    #[arg(long, value_name = "T", default_value_t = 5000)]
    pub(crate) timeout_ms: u64,
    /// The cluster: registry, TLS, keys.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}
