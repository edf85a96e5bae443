//! The node's unit tests: composition on one node fed frames built by [`frames`], and on a few
//! nodes driven by the simulator ([`crate::sim`]) with zero latency — plus the record builders,
//! libatapp's matrix configuration and the simulator helpers they share.

use alloc::{format, string::String, vec::Vec};

use bytes::Bytes;

use super::*;
use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::{LinkId, MsgId},
    outcome::Outcome,
    select::Select,
    sim::{OutcomeRecord, Received, Sim, discovery_info, topology_info},
    time::Duration,
};

mod auth;
mod bad_input;
mod bus;
mod cert_identity;
mod frames;
mod ordering;
mod perimeter;
mod prop_node;
mod refusal_reasons;
mod registry_client;
mod relay_batch;
mod relay_refusal;
mod routes;
mod rpc_input;
mod status;

fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// The name node `id` publishes: `node-101` for 0x101.
fn name(id: u64) -> String {
    format!("node-{id:x}")
}

/// `id`'s discovery record at `revision`: named [`name`], listening at its simulator address.
fn disc(id: u64, revision: u64) -> DiscoveryInfo {
    DiscoveryInfo {
        revision,
        ..discovery_info(NodeId(id), &name(id))
    }
}

/// `id`'s topology record at `revision`: under `upstream` (0 for a root).
fn topo(id: u64, upstream: u64, revision: u64) -> TopologyInfo {
    TopologyInfo {
        revision,
        ..topology_info(NodeId(id), &name(id), NodeId(upstream))
    }
}

/// libatapp's matrix settings: start 2 s, max 16 s, lost 32 s, no jitter.
fn config(id: u64, upstream: u64, tries: u32, direct: bool) -> Config {
    let mut c = Config::new(NodeId(id), name(id));
    c.upstream = NodeId(upstream);
    c.reconnect_start = Duration::from_secs(2);
    c.reconnect_max = Duration::from_secs(16);
    c.reconnect_max_tries = tries;
    c.reconnect_jitter_percent = 0;
    c.lost_topology_timeout = Duration::from_secs(32);
    c.topology_policy.allow_direct_connection = direct;
    c
}

/// A simulator (default settings: no latency on links or dials, scripted registry) running one
/// node per config, added in this order at time zero.
fn sim(configs: Vec<Config>) -> Sim {
    let mut sim = Sim::new();
    for c in configs {
        sim.add_node(c).unwrap();
    }
    sim
}

/// Publishes every node's discovery record, then `topology` as (id, upstream) in this order, to
/// every live node; then delivers what follows, firing no timer.
fn publish(sim: &mut Sim, topology: &[(u64, u64)]) {
    for id in sim.node_ids() {
        sim.registry_put_discovery(disc(id.0, 0));
    }
    put_topologies(sim, topology);
}

/// Publishes these topology records (id, upstream) in order to every live node; then delivers
/// what follows, firing no timer.
fn put_topologies(sim: &mut Sim, topology: &[(u64, u64)]) {
    for &(id, upstream) in topology {
        sim.registry_put_topology(topo(id, upstream, 0));
    }
    sim.deliver_until_idle();
}

/// Publishes these nodes' discovery records in order to every live node; then delivers what
/// follows, firing no timer.
fn put_discoveries(sim: &mut Sim, ids: &[u64]) {
    for &id in ids {
        sim.registry_put_discovery(disc(id, 0));
    }
    sim.deliver_until_idle();
}

/// `from` sends `payload` to `to` as type 100; then what follows is delivered, firing no timer.
fn send(sim: &mut Sim, from: u64, to: u64, payload: &'static [u8]) -> MsgId {
    let msg = sim
        .send_to(NodeId(from), NodeId(to), 100, Bytes::from_static(payload))
        .unwrap();
    sim.deliver_until_idle();
    msg
}

/// The dials `from` asked for, in order: (the node it reached, or `NodeId::NONE` if the dial
/// failed, when).
fn dials(sim: &Sim, from: u64) -> Vec<(NodeId, Instant)> {
    sim.dials(NodeId(from))
        .iter()
        .map(|d| {
            let owner = sim
                .node_ids()
                .into_iter()
                .find(|&id| sim.addr(id) == d.addr);
            let reached = match (d.connected, owner) {
                (Some(true), Some(owner)) => owner,
                (Some(_), _) => NodeId::NONE,
                (None, _) => panic!("{from:#x}'s dial on {} has not resolved", d.link),
            };
            (reached, d.at)
        })
        .collect()
}

/// What a node handed its application: messages, then outcomes (each test compares lists of
/// one kind).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Received(Received),
    Outcome(OutcomeRecord),
}

/// Everything node `id` handed its application so far: messages received, then outcomes.
fn seen(sim: &Sim, id: u64) -> Vec<Seen> {
    let id = NodeId(id);
    let received = sim.received(id).iter().cloned().map(Seen::Received);
    let outcomes = sim.outcomes(id).iter().copied().map(Seen::Outcome);
    received.chain(outcomes).collect()
}

/// A type-100 message from `from` that arrived over the link to `via`, at `at`.
fn received(at: Instant, from: u64, via: u64, payload: &'static [u8]) -> Seen {
    Seen::Received(Received {
        at,
        from: NodeId(from),
        via: NodeId(via),
        msg_type: 100,
        payload: Bytes::from_static(payload),
    })
}

/// The outcome of `msg`, reported at `at`.
fn outcome(at: Instant, msg: MsgId, outcome: Outcome) -> Seen {
    Seen::Outcome(OutcomeRecord { at, msg, outcome })
}

/// `node` learns `target` at 0 s (topology with no upstream, discovery) and sends it `q` (type
/// 100); the link it dials for it is reported connected. Outputs drained; the message and the
/// link.
fn send_on_a_dialled_link(node: &mut Node, target: u64) -> (MsgId, LinkId) {
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(target, 0, 1).into()),
    );
    node.handle_registry(secs(0), RegistryEvent::DiscoveryPut(disc(target, 2).into()));
    while node.poll_output().is_some() {}
    let msg = node
        .send(
            secs(0),
            Select::Node(NodeId(target)),
            100,
            Bytes::from_static(b"q"),
        )
        .expect("test: a valid send");
    let link = core::iter::from_fn(|| node.poll_output())
        .find_map(|o| match o {
            Output::Connect { link, .. } => Some(link),
            _ => None,
        })
        .expect("test: the node dials its target");
    while node.poll_output().is_some() {}
    node.handle_connected(secs(0), link);
    (msg, link)
}
