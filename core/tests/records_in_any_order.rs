//! A route opens the moment the records that make it exist have arrived, whatever their
//! order: a leaf's records can reach a node before the records of the proxy it sits behind
//! (separate watchers, a registry restart replaying its entries), and the message waiting for
//! the leaf must not sit out its reconnect backoff — nor fail — once the proxy's record
//! places the leaf below a linked child.

mod common;

use common::*;
use switchboard_core::{
    ids::{MsgId, NodeId},
    outcome::Outcome,
    sim::{Sim, discovery_info, topology_info},
    time::Duration,
};

const HUB: u64 = 0x100;
const PROXY: u64 = 0x110;
const LEAF: u64 = 0x124;

/// Hub 0x100 ← proxy 0x110 ← leaf 0x124, no direct links (group A: tries 2, start 2 s); the
/// proxy's link to the hub is up from the start. The hub sends to the leaf before anything is
/// published; the leaf's records arrive at 20 ms, the proxy's at 120 ms.
fn hub_proxy_leaf() -> Sim {
    let mut sim = Sim::new();
    for (id, up) in [(HUB, 0), (PROXY, HUB), (LEAF, PROXY)] {
        sim.add_node(config(GROUP_A, id, up))
            .expect("a valid node config");
    }
    sim.run_until_idle();
    sim.registry_put_topology(topology_info(NodeId(HUB), &name(HUB), NodeId::NONE));
    sim.registry_put_discovery(discovery_info(NodeId(HUB), &name(HUB)));
    sim
}

fn publish_node(sim: &mut Sim, id: u64, upstream: u64) {
    sim.registry_put_topology(topology_info(NodeId(id), &name(id), NodeId(upstream)));
    sim.registry_put_discovery(discovery_info(NodeId(id), &name(id)));
}

/// The hub sends to the leaf at 0, `first`'s records (id, upstream) are published at 20 ms
/// and `second`'s at 120 ms; the simulator a minute later, and the message.
fn send_early_then_publish(first: (u64, u64), second: (u64, u64)) -> (Sim, MsgId) {
    let mut sim = hub_proxy_leaf();
    let msg = send(&mut sim, HUB, LEAF, 1, "early");
    sim.advance(Duration::from_millis(20));
    publish_node(&mut sim, first.0, first.1);
    sim.advance(Duration::from_millis(100));
    publish_node(&mut sim, second.0, second.1);
    sim.advance(Duration::from_secs(60));
    (sim, msg)
}

#[test]
fn a_leaf_known_before_its_proxy_is_reached_when_the_proxy_record_arrives() {
    let (sim, msg) = send_early_then_publish((LEAF, PROXY), (PROXY, HUB));
    // Before: the record stayed a direct one, retried at 2.02 s and removed at 6.02 s with
    // `Failed(NoRoute)`, although the path through the proxy existed from 120 ms.
    assert_eq!(
        outcome(&sim, HUB, msg),
        Some((at_ms(120), Outcome::Delivered))
    );
    assert_eq!(
        got(&sim, LEAF),
        [(at_ms(120), HUB, PROXY, 1, String::from("early"))]
    );
}

#[test]
fn with_the_proxy_record_first_the_route_is_ready_when_the_leaf_record_arrives() {
    let (sim, msg) = send_early_then_publish((PROXY, HUB), (LEAF, PROXY));
    assert_eq!(
        outcome(&sim, HUB, msg),
        Some((at_ms(120), Outcome::Delivered))
    );
    assert_eq!(
        got(&sim, LEAF),
        [(at_ms(120), HUB, PROXY, 1, String::from("early"))]
    );
}
