//! `switchboard swarm` as clap sees it.

use std::time::Duration;

use clap::Args;

use super::ClusterArgs;
use crate::duration::parse_duration;

/// `switchboard swarm`.
#[derive(Debug, Args)]
#[command(
    after_help = "Runs N cluster members in this one process — each with its own listening \
    socket, registry session and core — to load-test a registry (like `nats bench` or \
    `etcd benchmark`). Phases: N nodes start (ids --first-id.., names swarm-ID); every node \
    must know all N; then --joiners more start at once and every node must know them; then \
    each node sends --messages messages to the next node by id, and every outcome is \
    awaited; then every node leaves gracefully.\n\n\
    Prints one JSON line: {\"nodes\":N,\"joiners\":J,\"all_registered_s\":S (first start → \
    the last of the N registered),\"all_know_s\":S (first start → every node knows all N),\"joiners_known_s\":S (the last joiner's start → every node knows \
    them),\"registry_rss_mb\":MB (when the registry or etcd is a local process this user can \
    see, else null),\"swarm_rss_per_node_kb\":KB (this process's growth ÷ nodes),\
    \"sent\":M,\"delivered\":M,\"received\":M,\"pass\":true}. Exit 0 when every phase \
    converged and every message was delivered and received once, 1 otherwise (the line \
    still printed, with what was reached, and one line on stderr saying why).\n\n\
    Examples:\n  \
    switchboard swarm --nodes 1000 --registry 127.0.0.1:7000\n  \
    switchboard swarm --nodes 200 --etcd http://127.0.0.1:2379 --messages 10",
    override_usage = "switchboard swarm --nodes <N> <--registry <ADDR>|--etcd <URL[,URL...]>> \
    [OPTIONS]"
)]
pub(crate) struct SwarmArgs {
    /// How many nodes start first (at least 2).
    #[arg(long, value_name = "N")]
    pub(crate) nodes: u32,
    /// How many join once the first N converged (default: 10 % of --nodes, at least 1).
    #[arg(long, value_name = "J")]
    pub(crate) joiners: Option<u32>,
    /// The first node's id; the swarm takes the ids from it on, one per node.
    #[arg(long, value_name = "ID", default_value_t = 1_000_000)]
    pub(crate) first_id: u64,
    /// Messages each node sends to the next node by id once everyone is known (0: none).
    #[arg(long, value_name = "M", default_value_t = 1)]
    pub(crate) messages: u32,
    /// How many nodes start at a time (registration handshakes in flight).
    #[arg(long, value_name = "K", default_value_t = 64)]
    pub(crate) start_concurrency: u32,
    /// Bound on each phase (start and converge, join, messages).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) timeout: Duration,
    /// How the members join the tree: roots linking each other directly, or under a proxy.
    #[command(flatten)]
    pub(crate) join: super::JoinArgs,
    /// Output format of the report.
    #[command(flatten)]
    pub(crate) out: super::OutputArgs,
    /// The cluster: registry, TLS, keys.
    #[command(flatten)]
    pub(crate) cluster: ClusterArgs,
}
