//! A rolling key rotation: every node of a running cluster is restarted in turn from key A to
//! keys [B, A] (prove with B where the peer has it, accept either), then in turn to [B]
//! alone. Between restarts each node sends to every other; not one link is refused for its
//! key and every message is delivered.

mod common;

use bytes::Bytes;
use common::node_config;
use switchboard_core::{
    auth::ClusterKey,
    ids::NodeId,
    node::Event,
    outcome::Outcome,
    select::Select,
    sim::{Sim, discovery_info, topology_info},
    time::Duration,
};

/// A proxy and three children under it.
const LAYOUT: [(u64, u64); 4] = [(0x711, 0), (0x725, 0x711), (0x700, 0x711), (0x726, 0x711)];

fn key(byte: u8) -> ClusterKey {
    ClusterKey::new([byte; 32])
}

fn config(id: u64, up: u64, keys: &[ClusterKey]) -> switchboard_core::config::Config {
    let mut c = node_config(id, up);
    c.cluster_keys = keys.to_vec();
    c
}

/// Every node sends one message to every other and the cluster runs 2 s; each message must
/// be delivered.
fn all_to_all(sim: &mut Sim, round: &str) {
    let mut sent = Vec::new();
    for &(from, _) in &LAYOUT {
        for &(to, _) in &LAYOUT {
            if from != to {
                let payload = Bytes::from(format!("{round} {from:x}->{to:x}"));
                let msg = sim
                    .send(NodeId(from), Select::Node(NodeId(to)), 1, payload)
                    .expect("accepted");
                sent.push((from, to, msg));
            }
        }
    }
    sim.advance(Duration::from_secs(2));
    for (from, to, msg) in sent {
        let outcome = sim.outcome_of(NodeId(from), msg).map(|o| o.outcome);
        assert_eq!(
            outcome,
            Some(Outcome::Delivered),
            "{round}: {from:x} -> {to:x}\n{}",
            sim.trace_tail(30)
        );
    }
}

/// Auth refusals of every live node, and rejected links in every node's log.
fn refusals(sim: &Sim) -> (u64, usize) {
    let mut counted = 0;
    let mut rejected = 0;
    for &(id, _) in &LAYOUT {
        counted += sim.node(NodeId(id)).inspect().auth_refusals().total();
        rejected += sim
            .events(NodeId(id))
            .iter()
            .filter(|(_, e)| matches!(e, Event::LinkRejected { .. }))
            .count();
    }
    (counted, rejected)
}

#[test]
fn a_rolling_restart_from_key_a_to_b_refuses_no_link_and_loses_no_message() {
    let (a, b) = (key(0xA), key(0xB));
    let mut sim = Sim::new();
    for (id, up) in LAYOUT {
        sim.add_node(config(id, up, std::slice::from_ref(&a)))
            .expect("a valid node config");
    }
    sim.run_until_idle();
    for (id, up) in LAYOUT {
        let name = format!("node-{id:x}");
        sim.registry_put_topology(topology_info(NodeId(id), &name, NodeId(up)));
        sim.registry_put_discovery(discovery_info(NodeId(id), &name));
    }
    sim.run_until_idle();
    sim.advance(Duration::from_millis(100));
    all_to_all(&mut sim, "start");
    let mut counted = 0;
    for (phase, keys) in [
        ("[B, A]", vec![b.clone(), a.clone()]),
        ("[B]", vec![b.clone()]),
    ] {
        for (id, up) in LAYOUT {
            counted += sim.node(NodeId(id)).inspect().auth_refusals().total();
            sim.restart_with(NodeId(id), config(id, up, &keys));
            // Let the restarted node relink before the traffic.
            sim.advance(Duration::from_secs(3));
            all_to_all(&mut sim, &format!("{phase} after {id:x}"));
        }
    }
    let (live, rejected) = refusals(&sim);
    assert_eq!(counted + live, 0, "refused handshakes");
    assert_eq!(rejected, 0, "rejected links\n{}", sim.trace_tail(40));
}

/// The same rotation done wrong — a node jumps from [A] straight to [B] while the others
/// still have only A — is refused, so the test above is not vacuous.
#[test]
fn skipping_the_two_key_step_is_refused() {
    let (a, b) = (key(0xA), key(0xB));
    let mut sim = Sim::new();
    for (id, up) in LAYOUT {
        sim.add_node(config(id, up, std::slice::from_ref(&a)))
            .expect("a valid node config");
    }
    sim.run_until_idle();
    for (id, up) in LAYOUT {
        let name = format!("node-{id:x}");
        sim.registry_put_topology(topology_info(NodeId(id), &name, NodeId(up)));
        sim.registry_put_discovery(discovery_info(NodeId(id), &name));
    }
    sim.run_until_idle();
    sim.advance(Duration::from_millis(100));
    sim.restart_with(NodeId(0x725), config(0x725, 0x711, &[b]));
    sim.advance(Duration::from_secs(3));
    let (counted, rejected) = refusals(&sim);
    assert!(counted > 0 && rejected > 0, "{counted} {rejected}");
}
