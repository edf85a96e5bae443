//! Evidence of a peer's death, one mechanism (ARCHITECTURE §9), rule by rule on virtual
//! time: a failed redial of a suspect, a relay's `TargetGone` notice, a registry delete, a
//! new incarnation in the registry, stopped heartbeats — and what is *not* evidence: a live
//! peer's dropped link (the probe brings it back at once), a peer the policy forbids (never
//! probed), a `Bye` of a live peer, a handshake refusal. Each test asserts exact outcomes
//! (variant and reason), their instants, the `PeerDead` events and the payloads received.

mod common;

use bytes::Bytes;
use common::{GROUP_B, GROUP_F, Group, config, got, name, outcome, send};
use switchboard_core::{
    config::Config,
    discovery::DiscoveryInfo,
    ids::{MsgId, NodeId},
    node::{Event, Evidence},
    outcome::{FailReason, Outcome},
    sim::{Sim, discovery_info, topology_info},
    time::{Duration, Instant},
};

/// Direct peers: root 0x203 with children 0x201 (the sender) and 0x202 (the target).
const ROOT: u64 = 0x203;
const A: u64 = 0x201;
const B: u64 = 0x202;

/// `id`'s discovery record as its process publishes it: its address and its incarnation.
fn record(sim: &Sim, id: u64) -> DiscoveryInfo {
    DiscoveryInfo {
        incarnation: sim.node(NodeId(id)).incarnation(),
        ..discovery_info(NodeId(id), &name(id))
    }
}

/// Starts `configs` (parents first), publishes every topology record (`layout` as (id,
/// upstream)) then every discovery record with its incarnation, and settles.
fn cluster_of(configs: Vec<Config>, layout: &[(u64, u64)]) -> Sim {
    let mut sim = Sim::new();
    for c in configs {
        sim.add_node(c).expect("a valid node config");
    }
    sim.run_until_idle();
    for &(id, up) in layout {
        sim.registry_put_topology(topology_info(NodeId(id), &name(id), NodeId(up)));
    }
    for &(id, _) in layout {
        let info = record(&sim, id);
        sim.registry_put_discovery(info);
    }
    sim.run_until_idle();
    sim
}

/// Root 0x203 ← 0x201, 0x202 with `group`'s settings; 0x201 has sent `warm` to 0x202 over
/// a direct link (delivered and acknowledged), the clock is at 100 ms.
fn direct_peers(group: Group) -> (Sim, MsgId) {
    let layout = [(ROOT, 0), (A, ROOT), (B, ROOT)];
    let configs = layout
        .iter()
        .map(|&(id, up)| config(group, id, up))
        .collect();
    let mut sim = cluster_of(configs, &layout);
    let warm = send(&mut sim, A, B, 1, "warm");
    sim.advance(Duration::from_millis(100));
    assert_eq!(outcome(&sim, A, warm), Some((Instant::ZERO, Outcome::Delivered)));
    assert_eq!(sim.open_links(NodeId(A), NodeId(B)), 1);
    (sim, warm)
}

/// The `PeerDead` events of `node`: (instant, peer, incarnation, evidence).
fn deaths(sim: &Sim, node: u64) -> Vec<(Instant, u64, u64, Evidence)> {
    sim.events(NodeId(node))
        .iter()
        .filter_map(|(at, e)| match *e {
            Event::PeerDead {
                peer,
                incarnation,
                evidence,
            } => Some((*at, peer.0, incarnation, evidence)),
            _ => None,
        })
        .collect()
}

/// The dials `node` made to `peer`: (instant, address, connected).
fn dials_to(sim: &Sim, node: u64, peer: u64) -> Vec<(Instant, String, Option<bool>)> {
    sim.dials(NodeId(node))
        .iter()
        .filter(|d| d.peer == NodeId(peer))
        .map(|d| (d.at, d.addr.clone(), d.connected))
        .collect()
}

fn text(s: &str) -> String {
    String::from(s)
}

/// Rule: a failed redial of a suspect. The target is SIGKILLed with a window in flight
/// (10 ms each way): its link closes, the sender probes it at once, the dial is refused on
/// that instant — so both messages of the window (one delivered with its ack on the way, one
/// lost on the wire) end `Unknown(TargetGone)` at the kill, not at their deadline. A message
/// sent afterwards was never transmitted: it waits for a live incarnation and ends at its
/// own deadline, `Failed`.
#[test]
fn a_refused_redial_ends_the_window_at_the_kill() {
    let (mut sim, _) = direct_peers(GROUP_B);
    let inc_b = sim.node(NodeId(B)).incarnation();
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_millis(10));
    let t0 = sim.now();
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_millis(5));
    let two = send(&mut sim, A, B, 2, "two");
    sim.advance(Duration::from_millis(7));
    // "one" arrived at t0 + 10 ms, its ack lands at t0 + 20 ms; "two" lands at t0 + 15 ms.
    let kill = sim.now();
    assert_eq!(kill, t0 + Duration::from_millis(12));
    sim.kill(NodeId(B));
    let three = send(&mut sim, A, B, 3, "three");
    sim.advance(Duration::from_secs(20));

    let gone = Outcome::Unknown(FailReason::TargetGone);
    assert_eq!(outcome(&sim, A, one), Some((kill, gone)), "{}", sim.trace_tail(60));
    assert_eq!(outcome(&sim, A, two), Some((kill, gone)));
    assert_eq!(
        outcome(&sim, A, three),
        Some((kill + Duration::from_secs(8), Outcome::Failed(FailReason::Timeout)))
    );
    assert_eq!(deaths(&sim, A), [(kill, B, inc_b, Evidence::RedialFailed)]);
    assert_eq!(
        dials_to(&sim, A, B)[1],
        (kill, text("sim://0x202"), Some(false)),
        "the probe at the kill"
    );
    assert_eq!(
        got(&sim, B),
        [
            (Instant::ZERO, A, A, 1, text("warm")),
            (t0 + Duration::from_millis(10), A, A, 1, text("one")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
