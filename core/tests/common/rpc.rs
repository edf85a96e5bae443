//! Arrangement and readers for the RPC rule tests (`rpc_*.rs`): a root with a caller and
//! servers under it (direct links allowed), servers that serve before they publish, and the
//! RPC log of a node as exact, comparable values.

use bytes::Bytes;
use switchboard_core::{
    Config,
    ids::NodeId,
    rpc::{CallId, CallOutcome, CallSpec, IncomingRequest, RequestId, RpcOutput},
    sim::Sim,
    time::Instant,
};

use super::{GROUP_B, Group, config, name};

/// The root everyone hangs under.
pub const ROOT: u64 = 0x703;
/// The caller.
pub const CALLER: u64 = 0x701;
/// The first server.
pub const SERVER: u64 = 0x702;
/// A second server.
pub const SERVER_2: u64 = 0x704;

/// Starts `ids` under [`ROOT`] (the root first), makes each serve its methods, publishes
/// every topology record then every node's own discovery record (with its methods and its
/// incarnation), and settles. The clock is then at 0.
pub fn rpc_cluster(nodes: &[(u64, &[&str])]) -> Sim {
    rpc_cluster_in(GROUP_B, nodes)
}

/// [`rpc_cluster`] with `group`'s settings (e.g. [`super::GROUP_F`]: no direct links, the
/// root relays).
pub fn rpc_cluster_in(group: Group, nodes: &[(u64, &[&str])]) -> Sim {
    rpc_cluster_with(group, nodes, |_| {})
}

/// [`rpc_cluster_in`] with every node's config changed by `tweak` (the root's too).
pub fn rpc_cluster_with(
    group: Group,
    nodes: &[(u64, &[&str])],
    tweak: impl Fn(&mut Config),
) -> Sim {
    let mut sim = Sim::new();
    let make = |id, upstream| {
        let mut c = config(group, id, upstream);
        tweak(&mut c);
        c
    };
    sim.add_node(make(ROOT, 0)).expect("root config");
    for &(id, _) in nodes {
        sim.add_node(make(id, ROOT)).expect("node config");
    }
    sim.run_until_idle();
    for &(id, methods) in nodes {
        for method in methods {
            sim.act(NodeId(id), |node, now| node.serve(now, method))
                .expect("a valid method");
        }
    }
    sim.registry_put_topology(switchboard_core::sim::topology_info(
        NodeId(ROOT),
        &name(ROOT),
        NodeId(0),
    ));
    for &(id, _) in nodes {
        sim.registry_put_topology(switchboard_core::sim::topology_info(
            NodeId(id),
            &name(id),
            NodeId(ROOT),
        ));
    }
    publish_own(&mut sim, ROOT);
    for &(id, _) in nodes {
        publish_own(&mut sim, id);
    }
    sim.run_until_idle();
    sim
}

/// Publishes `id`'s own discovery record (what its registry client registers: address,
/// incarnation, served methods) to every node.
pub fn publish_own(sim: &mut Sim, id: u64) -> u64 {
    let info = sim.node(NodeId(id)).discovery_info();
    sim.registry_put_discovery(info)
}

/// Starts a call from `from`.
pub fn call(sim: &mut Sim, from: u64, spec: CallSpec) -> CallId {
    sim.act(NodeId(from), |node, now| node.call(now, spec))
        .expect("the call is accepted")
}

/// Every RPC output of `id`, with its time.
pub fn rpc_log(sim: &Sim, id: u64) -> Vec<(Instant, RpcOutput)> {
    sim.log(NodeId(id))
        .rpc
        .iter()
        .map(|record| (record.at, record.output.clone()))
        .collect()
}

/// The outcomes `caller` reported for `call`, with their time (exactly one when done).
pub fn done(sim: &Sim, caller: u64, call: CallId) -> Vec<(Instant, CallOutcome)> {
    rpc_log(sim, caller)
        .into_iter()
        .filter_map(|(at, output)| match output {
            RpcOutput::CallDone {
                call: c, outcome, ..
            } if c == call => Some((at, outcome)),
            _ => None,
        })
        .collect()
}

/// The requests `server` handed to its handlers, with their time.
pub fn requests(sim: &Sim, server: u64) -> Vec<(Instant, IncomingRequest)> {
    rpc_log(sim, server)
        .into_iter()
        .filter_map(|(at, output)| match output {
            RpcOutput::Request(request) => Some((at, request)),
            _ => None,
        })
        .collect()
}

/// The requests `server` was told are no longer wanted, with their time.
pub fn cancelled(sim: &Sim, server: u64) -> Vec<(Instant, RequestId)> {
    rpc_log(sim, server)
        .into_iter()
        .filter_map(|(at, output)| match output {
            RpcOutput::RequestCancelled { request } => Some((at, request)),
            _ => None,
        })
        .collect()
}

/// `server`'s handler answers `request` with `payload`; whether the node took the reply.
pub fn answer(sim: &mut Sim, server: u64, request: RequestId, payload: &'static str) -> bool {
    sim.act(NodeId(server), |node, now| {
        node.reply(now, request, Bytes::from_static(payload.as_bytes()))
    })
    .is_ok()
}

/// A reply outcome carrying `text`.
pub fn reply(text: &'static str) -> CallOutcome {
    CallOutcome::Reply(Bytes::from_static(text.as_bytes()))
}

/// A call of `echo` with `payload`, 30 s timeout, 15 s grace.
pub fn echo(payload: &'static str) -> CallSpec {
    CallSpec::new("echo", Bytes::from_static(payload.as_bytes()))
        .timeout(switchboard_core::time::Duration::from_secs(30))
        .grace(switchboard_core::time::Duration::from_secs(15))
}

/// Calls `echo` from [`CALLER`] and runs until the request is at `server`'s handler (and
/// acknowledged): the call and the request.
pub fn call_held_by(sim: &mut Sim, server: u64, payload: &'static str) -> (CallId, RequestId) {
    let before = requests(sim, server).len();
    let id = call(sim, CALLER, echo(payload));
    sim.deliver_until_idle();
    let got = requests(sim, server);
    assert_eq!(got.len(), before + 1, "the request reached {server:#x}");
    (id, got[before].1.request)
}
