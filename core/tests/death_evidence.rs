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

/// Behind a proxy: root 0x602 relays for its children 0x601 (the sender) and 0x603 (the
/// target), no direct links (group F); 0x601 has sent `warm` to 0x603 through the proxy
/// (delivered and acknowledged), the clock is at 100 ms.
const PROXY: u64 = 0x602;
const S: u64 = 0x601;
const T: u64 = 0x603;

fn behind_a_proxy() -> Sim {
    let layout = [(PROXY, 0), (S, PROXY), (T, PROXY)];
    let configs = layout
        .iter()
        .map(|&(id, up)| config(GROUP_F, id, up))
        .collect();
    let mut sim = cluster_of(configs, &layout);
    let warm = send(&mut sim, S, T, 1, "warm");
    sim.advance(Duration::from_millis(100));
    assert_eq!(outcome(&sim, S, warm), Some((Instant::ZERO, Outcome::Delivered)));
    sim
}

/// Rule: a relay's notice. The target dies behind the proxy with the sender's window in
/// flight (10 ms per hop): the proxy's probe of its child is refused at the kill, so the
/// proxy tells the sender, whose window ends `Unknown(TargetGone)` when the notice lands —
/// kill + 10 ms — not at its deadline.
#[test]
fn a_relay_notice_ends_the_window_one_hop_after_the_kill() {
    let mut sim = behind_a_proxy();
    let inc_t = sim.node(NodeId(T)).incarnation();
    let lat = Duration::from_millis(10);
    sim.set_latency(NodeId(S), NodeId(PROXY), lat);
    sim.set_latency(NodeId(PROXY), NodeId(T), lat);
    let t0 = sim.now();
    let one = send(&mut sim, S, T, 1, "one");
    sim.advance(Duration::from_millis(15));
    let two = send(&mut sim, S, T, 2, "two");
    // "one" reached the target at t0 + 20 ms, its ack is on the way back; "two" is forwarded
    // by the proxy at t0 + 25 ms and on the wire to the target when it dies.
    sim.advance(Duration::from_millis(12));
    let kill = sim.now();
    assert_eq!(kill, t0 + Duration::from_millis(27));
    sim.kill(NodeId(T));
    sim.advance(Duration::from_secs(1));

    let gone = Outcome::Unknown(FailReason::TargetGone);
    assert_eq!(outcome(&sim, S, one), Some((kill + lat, gone)), "{}", sim.trace_tail(60));
    assert_eq!(outcome(&sim, S, two), Some((kill + lat, gone)));
    assert_eq!(deaths(&sim, PROXY), [(kill, T, inc_t, Evidence::RedialFailed)]);
    assert_eq!(deaths(&sim, S), [(kill + lat, T, inc_t, Evidence::RelayNotice)]);
    assert_eq!(
        got(&sim, T),
        [
            (Instant::ZERO, S, PROXY, 1, text("warm")),
            (t0 + Duration::from_millis(20), S, PROXY, 1, text("one")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Rule: a registry delete. The path to a live target is slow (1 s each way), a message is
/// on it; the registry deletes the target's record: the message ends `Unknown(TargetGone)`
/// on the delete's tick (the target may get it — it does, a second later, once), not at the
/// deadline.
#[test]
fn a_registry_delete_ends_the_window_on_its_tick() {
    let (mut sim, _) = direct_peers(GROUP_B);
    let inc_b = sim.node(NodeId(B)).incarnation();
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_secs(1));
    let t0 = sim.now();
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_millis(100));
    let deleted = sim.now();
    sim.registry_delete_discovery(NodeId(B));
    sim.advance(Duration::from_secs(3));

    assert_eq!(
        outcome(&sim, A, one),
        Some((deleted, Outcome::Unknown(FailReason::TargetGone))),
        "{}",
        sim.trace_tail(60)
    );
    assert_eq!(deaths(&sim, A), [(deleted, B, inc_b, Evidence::RegistryDeleted)]);
    assert_eq!(
        got(&sim, B),
        [
            (Instant::ZERO, A, A, 1, text("warm")),
            (t0 + Duration::from_secs(1), A, A, 1, text("one")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Rule: stopped heartbeats. The path between two linked peers goes silent (nothing sent
/// arrives within the test) with a message on it: the link is closed at exactly last heard
/// + 1.5 s × 3 and the message ends `Unknown(TargetGone)` then.
#[test]
fn stopped_heartbeats_end_the_window_at_last_heard_plus_four_and_a_half_seconds() {
    let (mut sim, _) = direct_peers(GROUP_B);
    let inc_b = sim.node(NodeId(B)).incarnation();
    // The last frame from 0x202 (the warm-up's ack) arrived at 0.
    let last_heard = Instant::ZERO;
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_secs(3_600));
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_secs(10));

    let dead = last_heard + Duration::from_millis(4_500);
    assert_eq!(
        outcome(&sim, A, one),
        Some((dead, Outcome::Unknown(FailReason::TargetGone))),
        "{}",
        sim.trace_tail(60)
    );
    assert_eq!(deaths(&sim, A), [(dead, B, inc_b, Evidence::HeartbeatsStopped)]);
    assert_eq!(got(&sim, B), [(Instant::ZERO, A, A, 1, text("warm"))]);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
