//! The simulator driving real [`Node`](switchboard_core::node::Node)s is deterministic: one
//! script, run twice, gives the same trace line for line and the same per-node logs — the
//! property every replayed failure depends on.

mod common;

use common::{GROUP_B, at, cluster_recording, got, send};
use switchboard_core::{ids::NodeId, sim::Sim, time::Duration};

const LAYOUT: [(u64, u64); 3] = [(0x203, 0), (0x201, 0x203), (0x202, 0x203)];

/// Direct links, relaying, a drop with reconnect backoff, a lost topology record, a
/// restart: a bit of everything, with latencies so that events interleave.
fn script() -> Sim {
    // Recording, not strict: a violation would show in `violations()` (and differ or not
    // between the runs) instead of panicking inside the script.
    let mut sim = cluster_recording(GROUP_B, &LAYOUT);
    sim.set_latency(NodeId(0x201), NodeId(0x202), Duration::from_millis(3));
    sim.set_connect_latency(NodeId(0x201), NodeId(0x202), Duration::from_millis(7));
    for i in 0..5u32 {
        send(&mut sim, 0x201, 0x202, 100 + i, "ping");
        send(&mut sim, 0x202, 0x201, 200 + i, "pong");
        sim.advance(Duration::from_millis(5));
    }
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x201), NodeId(0x202));
    send(&mut sim, 0x201, 0x202, 300, "queued");
    sim.advance_to(at(13));
    sim.link_up(NodeId(0x201), NodeId(0x202));
    sim.registry_delete_topology(NodeId(0x202));
    sim.advance_to(at(20));
    sim.restart(NodeId(0x203));
    send(&mut sim, 0x202, 0x201, 400, "after-restart");
    sim.advance_to(at(60));
    sim
}

#[test]
fn the_same_script_gives_the_same_trace_and_logs() {
    let first = script();
    let second = script();
    assert_eq!(first.trace(), second.trace());
    assert!(first.trace().len() > 50, "{}", first.trace_tail(200));
    for id in [0x201, 0x202, 0x203] {
        assert_eq!(got(&first, id), got(&second, id), "received by {id:#x}");
        assert_eq!(
            first.outcomes(NodeId(id)),
            second.outcomes(NodeId(id)),
            "outcomes of {id:#x}"
        );
        assert_eq!(first.events(NodeId(id)), second.events(NodeId(id)));
    }
    assert_eq!(first.violations(), second.violations());
    assert_eq!(first.violations(), [] as [String; 0]);
    // The ledger followed every tagged message of the script: all 12 accepted, and the
    // same tallies in both runs.
    assert_eq!(first.ledger_totals(), second.ledger_totals());
    assert_eq!(first.ledger_totals().sent, 12);
    // Every accepted message ended in exactly one outcome.
    for id in [0x201, 0x202] {
        assert_eq!(
            first.log(NodeId(id)).unresolved(),
            [],
            "unresolved on {id:#x}"
        );
    }
}
