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
/// Recording (not strict), so the `violations()` assertions below can fail.
fn cluster_of(configs: Vec<Config>, layout: &[(u64, u64)]) -> Sim {
    let mut sim = Sim::recording();
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
    direct_peers_with(group, common::GROUP_SUSPICION)
}

/// [`direct_peers`] with the suspicion bound `suspicion`.
fn direct_peers_with(group: Group, suspicion: Duration) -> (Sim, MsgId) {
    let layout = [(ROOT, 0), (A, ROOT), (B, ROOT)];
    let configs = layout
        .iter()
        .map(|&(id, up)| {
            let mut c = config(group, id, up);
            c.suspicion_timeout = suspicion;
            c
        })
        .collect();
    let mut sim = cluster_of(configs, &layout);
    let warm = send(&mut sim, A, B, 1, "warm");
    sim.advance(Duration::from_millis(100));
    assert_eq!(
        outcome(&sim, A, warm),
        Some((Instant::ZERO, Outcome::Delivered))
    );
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

/// Rule: a failed redial of a suspect, corroborated. The target is SIGKILLed with a window in
/// flight (10 ms each way): its link closes, the sender probes it at once, the dial is
/// refused on that instant and the registry publishes the target's lost session on that
/// instant too (the simulator's scripted registry does, as the embedded registry's server
/// does when the connection closes; §9.3) — so both messages of the window (one delivered with its ack on the way, one
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
    assert_eq!(
        outcome(&sim, A, one),
        Some((kill, gone)),
        "{}",
        sim.trace_tail(60)
    );
    assert_eq!(outcome(&sim, A, two), Some((kill, gone)));
    // Sent after the evidence, it waits for a live incarnation until its deadline and ends
    // for why it waited: the target is gone.
    assert_eq!(
        outcome(&sim, A, three),
        Some((
            kill + Duration::from_secs(8),
            Outcome::Failed(FailReason::TargetGone)
        ))
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
    assert_eq!(
        outcome(&sim, S, warm),
        Some((Instant::ZERO, Outcome::Delivered))
    );
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
    assert_eq!(
        outcome(&sim, S, one),
        Some((kill + lat, gone)),
        "{}",
        sim.trace_tail(60)
    );
    assert_eq!(outcome(&sim, S, two), Some((kill + lat, gone)));
    assert_eq!(
        deaths(&sim, PROXY),
        [(kill, T, inc_t, Evidence::RedialFailed)]
    );
    assert_eq!(
        deaths(&sim, S),
        [(kill + lat, T, inc_t, Evidence::RelayNotice)]
    );
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
    assert_eq!(
        deaths(&sim, A),
        [(deleted, B, inc_b, Evidence::RegistryDeleted)]
    );
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
    assert_eq!(
        deaths(&sim, A),
        [(dead, B, inc_b, Evidence::HeartbeatsStopped)]
    );
    assert_eq!(got(&sim, B), [(Instant::ZERO, A, A, 1, text("warm"))]);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Not evidence: a live peer's link drops (both ends see it close) with a message on the
/// wire (lost with the link, 10 ms each way). Both ends probe at once, the link is back
/// within one round trip and the message, and one sent while the link was down, are
/// delivered exactly once — neither waits for the 2 s backoff, no one is declared dead.
#[test]
fn a_live_peer_whose_link_drops_is_back_at_once_through_the_probe() {
    let (mut sim, _) = direct_peers(GROUP_B);
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_millis(10));
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_millis(5));
    let cut = sim.now();
    sim.cut(NodeId(A), NodeId(B));
    let two = send(&mut sim, A, B, 2, "two");
    sim.advance(Duration::from_secs(5));

    // 0x202's probe lands at cut + 10 ms: 0x201 accepts it and sends at once; both
    // messages arrive at + 20 ms, their ack at + 30 ms.
    let ms = |n| cut + Duration::from_millis(n);
    assert_eq!(
        outcome(&sim, A, one),
        Some((ms(30), Outcome::Delivered)),
        "{}",
        sim.trace_tail(80)
    );
    assert_eq!(outcome(&sim, A, two), Some((ms(30), Outcome::Delivered)));
    assert_eq!(
        got(&sim, B),
        [
            (Instant::ZERO, A, A, 1, text("warm")),
            (ms(20), A, A, 1, text("one")),
            (ms(20), A, A, 2, text("two")),
        ]
    );
    assert_eq!(
        dials_to(&sim, A, B)[1..],
        [(cut, text("sim://0x202"), Some(true))]
    );
    assert_eq!(
        dials_to(&sim, B, A),
        [(cut, text("sim://0x201"), Some(true))]
    );
    assert_eq!(deaths(&sim, A), []);
    assert_eq!(deaths(&sim, B), []);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Not probed: 0x202's policy forbids a direct link to its sibling 0x201 (0x201's allows
/// it and dialled). When the link drops, 0x201 probes and the link is back at once;
/// 0x202, whose routing would refuse that link, never dials 0x201.
#[test]
fn a_peer_the_policy_forbids_is_never_probed() {
    let layout = [(ROOT, 0), (A, ROOT), (B, ROOT)];
    let mut forbidding = config(GROUP_B, B, ROOT);
    forbidding.topology_policy.allow_direct_connection = false;
    let configs = vec![
        config(GROUP_B, ROOT, 0),
        config(GROUP_B, A, ROOT),
        forbidding,
    ];
    let mut sim = cluster_of(configs, &layout);
    let warm = send(&mut sim, A, B, 1, "warm");
    sim.advance(Duration::from_millis(100));
    assert_eq!(
        outcome(&sim, A, warm),
        Some((Instant::ZERO, Outcome::Delivered))
    );
    let cut = sim.now();
    sim.cut(NodeId(A), NodeId(B));
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_secs(30));

    assert_eq!(
        outcome(&sim, A, one),
        Some((cut, Outcome::Delivered)),
        "{}",
        sim.trace_tail(80)
    );
    assert_eq!(
        dials_to(&sim, A, B),
        [
            (Instant::ZERO, text("sim://0x202"), Some(true)),
            (cut, text("sim://0x202"), Some(true)),
        ]
    );
    assert_eq!(dials_to(&sim, B, A), []);
    assert_eq!(deaths(&sim, A), []);
    assert_eq!(deaths(&sim, B), []);
    assert_eq!(
        got(&sim, B),
        [
            (Instant::ZERO, A, A, 1, text("warm")),
            (cut, A, A, 1, text("one"))
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Not evidence: a `Bye` with `Unneeded`. The target 0x404 moves from under 0x402 to under
/// 0x403 and closes its old upstream link saying so: 0x402 neither declares it dead nor
/// probes it, and 0x401's next message reaches it through both relays exactly once.
#[test]
fn a_bye_from_a_node_that_moves_is_no_evidence_and_no_probe() {
    let group = common::GROUP_D;
    let layout = [(0x402, 0), (0x401, 0x402), (0x403, 0x402), (0x404, 0x402)];
    let configs = layout
        .iter()
        .map(|&(id, up)| config(group, id, up))
        .collect();
    let mut sim = cluster_of(configs, &layout);
    let before = send(&mut sim, 0x401, 0x404, 1, "before");
    sim.advance(Duration::from_millis(100));
    assert_eq!(
        outcome(&sim, 0x401, before),
        Some((Instant::ZERO, Outcome::Delivered))
    );
    let moved = sim.now();
    sim.registry_put_topology(topology_info(NodeId(0x404), &name(0x404), NodeId(0x403)));
    sim.run_until_idle();
    assert_eq!(sim.open_links(NodeId(0x402), NodeId(0x404)), 0);
    let after = send(&mut sim, 0x401, 0x404, 2, "after");
    sim.advance(Duration::from_secs(30));

    assert_eq!(
        outcome(&sim, 0x401, after),
        Some((moved, Outcome::Delivered))
    );
    for id in [0x401, 0x402, 0x403] {
        assert_eq!(deaths(&sim, id), [], "{id:#x}");
    }
    assert_eq!(dials_to(&sim, 0x402, 0x404), []);
    assert_eq!(
        got(&sim, 0x404),
        [
            (Instant::ZERO, 0x401, 0x402, 1, text("before")),
            (moved, 0x401, 0x403, 2, text("after")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Not evidence: a handshake refusal. 0x201's link to 0x202 drops with a message on the wire
/// (10 ms each way); its probe reaches 0x202, whose answer is replaced on the wire by a
/// refusal (`WrongCluster`, answered by hand — the simulator cannot change a node's token).
/// A refusing peer is alive: no `PeerDead`, the message stays in flight and is delivered,
/// once, when the reconnect backoff (2 s) relinks them.
#[test]
fn a_handshake_refusal_is_no_evidence() {
    use switchboard_core::{
        bus::handshake::PROTOCOL_VERSIONS,
        wire::{self, Frame, RefuseReason},
    };
    let layout = [(ROOT, 0), (A, ROOT), (B, ROOT)];
    let mut forbidding = config(GROUP_B, B, ROOT);
    // 0x202 does not probe back: only 0x201's probe is in play.
    forbidding.topology_policy.allow_direct_connection = false;
    let configs = vec![
        config(GROUP_B, ROOT, 0),
        config(GROUP_B, A, ROOT),
        forbidding,
    ];
    let mut sim = cluster_of(configs, &layout);
    let warm = send(&mut sim, A, B, 1, "warm");
    sim.advance(Duration::from_millis(100));
    assert_eq!(
        outcome(&sim, A, warm),
        Some((Instant::ZERO, Outcome::Delivered))
    );
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_millis(10));
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_millis(5));
    let cut = sim.now();
    sim.cut(NodeId(A), NodeId(B));
    // The probe's hello reaches 0x202 at cut + 10 ms; its accepting answer is on the wire.
    sim.advance(Duration::from_millis(15));
    let answers = sim.take_in_flight(NodeId(B), NodeId(A));
    assert_eq!(answers.len(), 1, "{}", sim.trace_tail(40));
    let probe = sim.dials(NodeId(A)).last().expect("the probe").link;
    let b = sim.node(NodeId(B));
    let mut refusal = Vec::new();
    wire::encode(
        &Frame::HelloAck(wire::HelloAck {
            node: NodeId(B),
            incarnation: b.incarnation(),
            versions: PROTOCOL_VERSIONS,
            name: &name(B),
            nonce: None,
            proof: None,
            result: Err(RefuseReason::WrongCluster),
        }),
        &mut refusal,
    )
    .expect("a small frame");
    let refused = sim.now();
    sim.act(NodeId(A), |node, now| {
        node.handle_received(now, probe, Bytes::from(refusal));
    });
    sim.advance(Duration::from_secs(5));

    assert_eq!(deaths(&sim, A), [], "{}", sim.trace_tail(80));
    assert_eq!(deaths(&sim, B), []);
    assert!(sim.events(NodeId(A)).contains(&(
        refused,
        Event::LinkRejected {
            link: probe,
            reason: switchboard_core::node::LinkError::RefusedByPeer(RefuseReason::WrongCluster),
        }
    )));
    // The redial at cut + 2 s: 0x201's link is up when the answer lands (+ 20 ms), the
    // retransmission arrives at + 30 ms, its ack at + 40 ms.
    let relinked = cut + Duration::from_secs(2);
    assert_eq!(
        outcome(&sim, A, one),
        Some((relinked + Duration::from_millis(40), Outcome::Delivered))
    );
    assert_eq!(
        got(&sim, B),
        [
            (Instant::ZERO, A, A, 1, text("warm")),
            (relinked + Duration::from_millis(30), A, A, 1, text("one")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Rule: a new incarnation in the registry. The target restarts with a message of 0x201's
/// on the wire (lost with the old process); 0x201's probe is slow to resolve (1 s connect
/// latency), so nothing else has shown the death when the registry announces the new
/// incarnation 20 ms later. On that tick the message ends `Unknown(TargetRestarted)`, the
/// old incarnation is declared dead, and 0x201 dials the new one at once (not after its 2 s
/// backoff); the next message is delivered to the new incarnation, once.
#[test]
fn a_new_incarnation_in_the_registry_ends_the_window_and_dials_on_its_tick() {
    let (mut sim, _) = direct_peers(GROUP_B);
    let old = sim.node(NodeId(B)).incarnation();
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_millis(10));
    let one = send(&mut sim, A, B, 1, "one");
    sim.advance(Duration::from_millis(5));
    sim.set_connect_latency(NodeId(A), NodeId(B), Duration::from_secs(1));
    let restarted = sim.now();
    sim.restart(NodeId(B));
    let new = sim.node(NodeId(B)).incarnation();
    assert_ne!(new, old);
    sim.advance(Duration::from_millis(20));
    assert_eq!(outcome(&sim, A, one), None, "nothing showed the death yet");
    sim.set_connect_latency(NodeId(A), NodeId(B), Duration::ZERO);
    let news = sim.now();
    let info = record(&sim, B);
    sim.registry_put_discovery(info);
    sim.deliver_until_idle();
    let two = send(&mut sim, A, B, 2, "two");
    sim.advance(Duration::from_secs(5));

    assert_eq!(
        outcome(&sim, A, one),
        Some((news, Outcome::Unknown(FailReason::TargetRestarted))),
        "{}",
        sim.trace_tail(80)
    );
    assert_eq!(deaths(&sim, A), [(news, B, old, Evidence::NewIncarnation)]);
    let addr = text("sim://0x202");
    assert_eq!(
        dials_to(&sim, A, B)[1..],
        [
            // The probe, dialled while the old process was dead: it fails at restarted + 1 s,
            // after the news cleared the suspicion, so it shows nothing more.
            (restarted, addr.clone(), Some(false)),
            (news, addr, Some(true)),
        ]
    );
    // The news dial: connected at once, the new incarnation's answer lands at + 20 ms, the
    // message at + 30 ms, its ack at + 40 ms.
    let ms = |n| news + Duration::from_millis(n);
    assert_eq!(outcome(&sim, A, two), Some((ms(40), Outcome::Delivered)));
    assert_eq!(
        got(&sim, B),
        [
            (Instant::ZERO, A, A, 1, text("warm")),
            (ms(30), A, A, 2, text("two")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// News recovers as fast as it kills: the target was killed (its redial refused) and a
/// message waits for it through the reconnect backoff (2 s, then 4 s). The target restarts
/// at kill + 3 s and its record arrives at kill + 3.5 s: 0x201 dials it on that tick with
/// its backoff reset, and the waiting message is delivered then, not at the next retry
/// (kill + 6 s).
#[test]
fn news_of_a_new_incarnation_dials_at_once_and_delivers_what_waited() {
    let (mut sim, _) = direct_peers(GROUP_B);
    let old = sim.node(NodeId(B)).incarnation();
    let kill = sim.now();
    sim.kill(NodeId(B));
    let later = send(&mut sim, A, B, 1, "later");
    sim.advance(Duration::from_secs(3));
    sim.restart(NodeId(B));
    sim.advance(Duration::from_millis(500));
    let news = sim.now();
    let info = record(&sim, B);
    sim.registry_put_discovery(info);
    sim.advance(Duration::from_secs(10));

    assert_eq!(
        outcome(&sim, A, later),
        Some((news, Outcome::Delivered)),
        "{}",
        sim.trace_tail(80)
    );
    assert_eq!(got(&sim, B)[1..], [(news, A, A, 1, text("later"))]);
    let addr = text("sim://0x202");
    assert_eq!(
        dials_to(&sim, A, B)[1..],
        [
            (kill, addr.clone(), Some(false)),
            (kill + Duration::from_secs(2), addr.clone(), Some(false)),
            (news, addr, Some(true)),
        ]
    );
    // The record names the same dead incarnation: evidence is acted on (and reported) once.
    assert_eq!(deaths(&sim, A), [(kill, B, old, Evidence::RedialFailed)]);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Provably undelivered messages survive evidence. The target dies behind the proxy, whose
/// probe is slow to fail (100 ms connect latency); meanwhile the sender's next message
/// reaches the proxy, which has no link to the target and refuses it (`NoRoute`): every
/// copy refused. The proxy's notice then ends nothing — the message moves to a fresh
/// stream and waits. The target's new incarnation starts at kill + 200 ms and links to the
/// proxy; its record arrives on that tick, so the sender's route is ready again at once (news
/// resets the backoff, 2 s after the refusal otherwise) and the message is delivered to the
/// new incarnation, exactly once.
#[test]
fn a_refused_message_survives_the_evidence_and_reaches_the_new_incarnation_once() {
    let mut sim = behind_a_proxy();
    let old = sim.node(NodeId(T)).incarnation();
    let lat = Duration::from_millis(10);
    sim.set_latency(NodeId(S), NodeId(PROXY), lat);
    sim.set_connect_latency(NodeId(PROXY), NodeId(T), Duration::from_millis(100));
    let kill = sim.now();
    sim.kill(NodeId(T));
    sim.advance(Duration::from_millis(1));
    let two = send(&mut sim, S, T, 2, "two");
    // At the proxy at kill + 11 ms, refused back to the sender at kill + 21 ms; the proxy's
    // probe fails at kill + 100 ms, its notice lands at kill + 110 ms.
    sim.advance(Duration::from_millis(199));
    let ms = |n| kill + Duration::from_millis(n);
    assert_eq!(outcome(&sim, S, two), None, "{}", sim.trace_tail(80));
    let dropped = Event::ForwardDropped {
        src: NodeId(S),
        dst: NodeId(T),
        msg_type: 2,
    };
    assert!(sim.events(NodeId(PROXY)).contains(&(ms(11), dropped)));
    assert_eq!(
        deaths(&sim, PROXY),
        [(ms(100), T, old, Evidence::RedialFailed)]
    );
    assert_eq!(deaths(&sim, S), [(ms(110), T, old, Evidence::RelayNotice)]);
    sim.set_connect_latency(NodeId(PROXY), NodeId(T), Duration::ZERO);
    let retry = sim.now();
    assert_eq!(retry, ms(200));
    sim.restart(NodeId(T));
    let info = record(&sim, T);
    sim.registry_put_discovery(info);
    sim.advance(Duration::from_secs(10));

    assert_eq!(
        outcome(&sim, S, two),
        Some((retry + 2 * lat, Outcome::Delivered)),
        "{}",
        sim.trace_tail(80)
    );
    assert_eq!(
        got(&sim, T),
        [
            (Instant::ZERO, S, PROXY, 1, text("warm")),
            (retry + lat, S, PROXY, 2, text("two")),
        ]
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// After the evidence, the next message starts a fresh stream. Everything to the target was
/// acknowledged before it died (its stream open, stamped with the dead life, but empty), so
/// the evidence ends nothing; a message sent while it is dead waits. When the new life's
/// record arrives the sender dials, and the message goes out on a new stream — not as a
/// frame of the old one, which the new life would refuse (a reset round trip, and no proof
/// that it never reached the old life: `Unknown(TargetRestarted)` in a real cluster). With
/// 10 ms each way: the dial and handshake take one round trip (news + 20 ms), the message
/// arrives 10 ms later and its ack 10 ms after that.
#[test]
fn a_message_sent_while_the_target_is_dead_starts_a_fresh_stream_for_its_new_life() {
    let (mut sim, _) = direct_peers(GROUP_B);
    let lat = Duration::from_millis(10);
    sim.set_latency(NodeId(A), NodeId(B), lat);
    let old = sim.node(NodeId(B)).incarnation();
    let kill = sim.now();
    sim.kill(NodeId(B));
    sim.advance(Duration::from_millis(1));
    let later = send(&mut sim, A, B, 1, "later");
    sim.advance(Duration::from_millis(500));
    sim.restart(NodeId(B));
    let news = sim.now();
    let info = record(&sim, B);
    sim.registry_put_discovery(info);
    sim.advance(Duration::from_secs(10));

    assert_eq!(deaths(&sim, A), [(kill, B, old, Evidence::RedialFailed)]);
    assert_eq!(
        got(&sim, B)[1..],
        [(news + 3 * lat, A, A, 1, text("later"))],
        "{}",
        sim.trace_tail(80)
    );
    assert_eq!(
        outcome(&sim, A, later),
        Some((news + 4 * lat, Outcome::Delivered))
    );
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// `Config::suspicion_timeout`'s default.
const DEFAULT_BOUND: Duration = Duration::from_millis(1_500);

/// A path failure is not a death (§9.3): the path A–B goes down 5 ms after "cut" is sent
/// (in flight, not acknowledged) and comes back 200 ms later, both processes alive in the
/// same incarnations. A's redial is refused at once: a doubt, not a death — the registry
/// still holds B's session, and the root, asked (A's upstream, linked to B), answers
/// `Alive`, which ends the doubt. Nothing ends, no `PeerDead` on either side, and the
/// message is delivered exactly once when A's backoff (2 s) redials the path that is back.
#[test]
fn a_cut_with_refused_redials_while_both_live_changes_no_outcome() {
    let (mut sim, _) = direct_peers_with(GROUP_B, DEFAULT_BOUND);
    sim.set_latency(NodeId(A), NodeId(B), Duration::from_millis(10));
    let one = send(&mut sim, A, B, 1, "cut");
    sim.advance(Duration::from_millis(5));
    let cut = sim.now();
    sim.link_down(NodeId(A), NodeId(B));
    sim.advance(Duration::from_millis(200));
    sim.link_up(NodeId(A), NodeId(B));
    sim.advance(Duration::from_secs(10));

    let redial = cut + Duration::from_secs(2);
    assert_eq!(
        outcome(&sim, A, one),
        // The handshake's round trip (20 ms), then the retransmission's (20 ms).
        Some((redial + Duration::from_millis(40), Outcome::Delivered)),
        "{}",
        sim.trace_tail(60)
    );
    assert_eq!(deaths(&sim, A), []);
    assert_eq!(deaths(&sim, B), []);
    assert_eq!(deaths(&sim, ROOT), []);
    let addr = text("sim://0x202");
    assert_eq!(
        dials_to(&sim, A, B)[1..],
        [(cut, addr.clone(), Some(false)), (redial, addr, Some(true))]
    );
    let received: Vec<String> = got(&sim, B).iter().map(|r| r.4.clone()).collect();
    assert_eq!(received, [text("warm"), text("cut")]);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// Asymmetric path failure: A cannot reach B for 10 s, the root can. Every refused redial
/// of A's (at the cut, then after its 2 s, 4 s backoff) starts a doubt that the root's
/// `Alive` ends: B is never declared dead while another path to it is up, and what A sent
/// waits (its own 8 s deadline holds). With the root's link to B down as well (negative
/// control), the root answers `Unknown`, and at exactly the first refusal + the bound (1.5 s)
/// the last probe is refused: the death, on that instant; the message ends
/// `Unknown(TargetGone)` then.
#[test]
fn an_asymmetric_path_failure_does_not_declare_a_live_peer_dead() {
    for other_path_up in [true, false] {
        let (mut sim, _) = direct_peers_with(GROUP_B, DEFAULT_BOUND);
        let inc_b = sim.node(NodeId(B)).incarnation();
        sim.set_latency(NodeId(A), NodeId(B), Duration::from_millis(10));
        let one = send(&mut sim, A, B, 1, "asym");
        sim.advance(Duration::from_millis(5));
        let cut = sim.now();
        sim.link_down(NodeId(A), NodeId(B));
        if !other_path_up {
            sim.link_down(NodeId(ROOT), NodeId(B));
        }
        sim.advance(Duration::from_secs(10));

        if other_path_up {
            assert_eq!(deaths(&sim, A), [], "{}", sim.trace_tail(80));
            assert_eq!(
                outcome(&sim, A, one),
                // Sent at 100 ms, transmitted (it may have arrived): `Unknown` at its deadline.
                Some((
                    Instant::ZERO + Duration::from_millis(8_100),
                    Outcome::Unknown(FailReason::Timeout)
                )),
            );
        } else {
            let bound = cut + Duration::from_millis(1_500);
            assert_eq!(
                deaths(&sim, A),
                [(bound, B, inc_b, Evidence::RedialFailed)],
                "{}",
                sim.trace_tail(80)
            );
            assert_eq!(
                outcome(&sim, A, one),
                Some((bound, Outcome::Unknown(FailReason::TargetGone)))
            );
        }
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}
