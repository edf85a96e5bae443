//! A relay answering `Unreachable` (no link toward the target *right now*): the sender keeps
//! its in-flight messages and retries them each time the route is ready again, until their
//! deadline; a hop-limit refusal (a routing loop) still ends them at once.

use alloc::{format, vec, vec::Vec};

use bytes::Bytes;

use super::{
    Event, Node, Output, Select, config, frames::bytes, outcome, publish, received, secs, seen, sim,
};
use crate::{
    config::Config,
    connector::RouteEvent,
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    sim::{Sim, discovery_info, sim_addr, topology_info},
    time::{Duration, Instant},
    wire::{self, Decoded, Frame, UnreachableReason},
};

const PROXY: NodeId = NodeId(0x711);
const SENDER: NodeId = NodeId(0x725);
const TARGET: NodeId = NodeId(0x700);

fn sim_config(id: u64, upstream: u64) -> Config {
    let mut c = Config::new(NodeId(id), format!("node-{id:x}"));
    c.reconnect_jitter_percent = 0;
    c.upstream = NodeId(upstream);
    if upstream != 0 {
        c.upstream_address = sim_addr(NodeId(upstream));
    }
    c.listen = vec![sim_addr(NodeId(id))];
    c
}

/// The sender and the target are both children of the proxy; the sender reaches the target
/// only through it. Everything is linked at 100 ms.
fn cluster() -> Sim {
    let layout = [(0x711, 0), (0x725, 0x711), (0x700, 0x711)];
    let mut sim = Sim::new();
    for (id, up) in layout {
        sim.add_node(sim_config(id, up)).unwrap();
    }
    sim.run_until_idle();
    for (id, up) in layout {
        let name = format!("node-{id:x}");
        sim.registry_put_topology(topology_info(NodeId(id), &name, NodeId(up)));
        sim.registry_put_discovery(discovery_info(NodeId(id), &name));
    }
    sim.run_until_idle();
    sim.advance(Duration::from_millis(100));
    sim
}

/// The instants at which the proxy dropped a frame from the sender to the target.
fn refusals(sim: &Sim) -> Vec<Instant> {
    sim.events(PROXY)
        .iter()
        .filter(|(_, e)| {
            matches!(e, Event::ForwardDropped { src, dst, .. } if *src == SENDER && *dst == TARGET)
        })
        .map(|&(t, _)| t)
        .collect()
}

/// The sender's reconnect schedule for its route to the target: (when, attempt, at).
fn retries(sim: &Sim) -> Vec<(Instant, u32, Instant)> {
    sim.events(SENDER)
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Route(RouteEvent::ReconnectScheduled {
                target,
                attempt,
                at,
            }) if *target == TARGET => Some((*t, *attempt, *at)),
            _ => None,
        })
        .collect()
}

/// Every outcome record of `msg` at the sender: (when, outcome).
fn outcomes_of(sim: &Sim, msg: MsgId) -> Vec<(Instant, Outcome)> {
    sim.outcomes(SENDER)
        .iter()
        .filter(|o| o.msg == msg)
        .map(|o| (o.at, o.outcome))
        .collect()
}

#[test]
fn a_window_refused_until_the_target_relinks_is_delivered_once_each() {
    let mut sim = cluster();
    let first = sim
        .send(
            SENDER,
            Select::Node(TARGET),
            1,
            Bytes::from_static(b"w-first"),
        )
        .unwrap();
    sim.advance(Duration::from_millis(10));
    // The window is on its way from the proxy to the target (10 ms) when the proxy restarts
    // with the same id: every copy is lost.
    sim.set_latency(PROXY, TARGET, Duration::from_millis(10));
    let payloads: Vec<Bytes> = (0..16).map(|i| Bytes::from(format!("w{i:02}"))).collect();
    let window: Vec<MsgId> = payloads
        .iter()
        .map(|p| {
            sim.send(SENDER, Select::Node(TARGET), 2, p.clone())
                .unwrap()
        })
        .collect();
    sim.advance(Duration::from_millis(5));
    let restart = sim.now();
    sim.restart(PROXY);
    sim.set_latency(PROXY, TARGET, Duration::ZERO);
    // Both children redial their upstream after 1 s; the target's dial takes 900 ms more.
    sim.set_connect_latency(TARGET, PROXY, Duration::from_millis(900));
    sim.advance(Duration::from_secs(5));

    // The sender is back first (restart + 1 s) and retransmits its window: the new proxy has
    // no link to the target yet and refuses each frame once. The sender marks the route
    // unready at the first refusal (attempt 1, 1 s backoff) and ignores the other 15.
    let one_s = restart + Duration::from_secs(1);
    let two_s = restart + Duration::from_secs(2);
    assert_eq!(refusals(&sim), vec![one_s; 16], "{}", sim.trace_tail(40));
    assert_eq!(retries(&sim), [(one_s, 1, two_s)]);
    // The target linked at restart + 1.9 s and the proxy said so at once: the route follows
    // its proxy again then (not at the end of its backoff, restart + 2 s), the probe gets
    // through and the rest of the window follows: each message delivered once, in order.
    let mut want = vec![(SENDER, PROXY, Bytes::from_static(b"w-first"))];
    want.extend(payloads.iter().map(|p| (SENDER, PROXY, p.clone())));
    let got: Vec<(NodeId, NodeId, Bytes)> = sim
        .received(TARGET)
        .iter()
        .map(|r| (r.from, r.via, r.payload.clone()))
        .collect();
    assert_eq!(got, want);
    let relinked = restart + Duration::from_millis(1_900);
    let at: Vec<Instant> = sim.received(TARGET)[1..].iter().map(|r| r.at).collect();
    assert_eq!(at, vec![relinked; 16]);
    assert_eq!(
        outcomes_of(&sim, first),
        [(restart - Duration::from_millis(15), Outcome::Delivered)]
    );
    for msg in window {
        assert_eq!(outcomes_of(&sim, msg), [(relinked, Outcome::Delivered)]);
    }
    assert_eq!(sim.node(SENDER).inspect().unacked(TARGET), 0);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn messages_to_a_target_that_never_comes_back_end_at_their_own_deadlines() {
    let mut sim = cluster();
    sim.kill(TARGET);
    let t0 = sim.now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let m1 = sim
        .send(SENDER, Select::Node(TARGET), 1, Bytes::from_static(b"one"))
        .unwrap();
    sim.advance_to(ms(500));
    let m2 = sim
        .send(SENDER, Select::Node(TARGET), 1, Bytes::from_static(b"two"))
        .unwrap();
    sim.advance_to(ms(3_000));
    let m3 = sim
        .send(
            SENDER,
            Select::Node(TARGET),
            1,
            Bytes::from_static(b"three"),
        )
        .unwrap();
    sim.advance_to(ms(20_000));

    // Each message ends at its own deadline (8 s after its send), `Failed(NoRoute)`: the last
    // thing that happened to it was a relay refusal of its only copy.
    let no_route = Outcome::Failed(FailReason::NoRoute);
    assert_eq!(outcomes_of(&sim, m1), [(ms(8_000), no_route)]);
    assert_eq!(outcomes_of(&sim, m2), [(ms(8_500), no_route)]);
    assert_eq!(outcomes_of(&sim, m3), [(ms(11_000), no_route)]);
    assert_eq!(sim.outcomes(SENDER).len(), 3);
    // No retry storm: after the first refusal the stream probes — one frame (its oldest
    // message) per retry, the others wait behind it — and, following the proxy proving
    // nothing, the retries back off (1 s, 2 s, 4 s): 4 frames bounced for 3 undelivered
    // messages, nothing after the last deadline.
    let want = vec![ms(0), ms(1_000), ms(3_000), ms(7_000)];
    assert_eq!(refusals(&sim), want, "{}", sim.trace_tail(60));
    let expected_retries = [
        (ms(0), 1, ms(1_000)),
        (ms(1_000), 2, ms(3_000)),
        (ms(3_000), 3, ms(7_000)),
        (ms(7_000), 4, ms(15_000)),
    ];
    assert_eq!(retries(&sim), expected_retries);
    assert_eq!(sim.node(SENDER).inspect().unacked(TARGET), 0);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

/// 0x101 sends one message to 0x103 through its relay 0x102, and the frame is taken off the
/// link before the relay sees it; returns the simulator, the message and its seq.
fn one_in_flight() -> (Sim, MsgId, u64) {
    let mut sim = sim(vec![
        config(0x101, 0x102, 2, false),
        config(0x102, 0, 2, false),
        config(0x103, 0x102, 2, false),
    ]);
    publish(&mut sim, &[(0x102, 0), (0x101, 0x102), (0x103, 0x102)]);
    let msg = sim
        .send_to(NodeId(0x101), NodeId(0x103), 100, Bytes::from_static(b"x"))
        .unwrap();
    let seq = sim
        .take_in_flight(NodeId(0x101), NodeId(0x102))
        .iter()
        .find_map(|bytes| match wire::decode(bytes, wire::DEFAULT_MAX_FRAME) {
            Ok(Decoded::Frame(Frame::Data(d), _)) => Some(d.seq),
            _ => None,
        })
        .unwrap();
    (sim, msg, seq)
}

fn unreachable(seq: u64, reason: UnreachableReason) -> Bytes {
    bytes(&Frame::Unreachable(wire::Unreachable {
        src: NodeId(0x101),
        dst: NodeId(0x103),
        seq,
        reason,
        dst_incarnation: 0,
    }))
}

#[test]
fn a_hop_limit_refusal_still_fails_the_stream_at_once() {
    let (mut sim, msg, seq) = one_in_flight();
    sim.advance_to(secs(1));
    let link = sim
        .node(NodeId(0x101))
        .inspect()
        .link_to(NodeId(0x102))
        .unwrap();
    sim.act(NodeId(0x101), |node, now| {
        node.handle_received(
            now,
            link,
            Bytes::copy_from_slice(&unreachable(seq, UnreachableReason::HopLimit)),
        );
    });
    let failed = vec![outcome(secs(1), msg, Outcome::Failed(FailReason::NoRoute))];
    assert_eq!(seen(&sim, 0x101), failed);
    assert_eq!(sim.node(NodeId(0x101)).inspect().unacked(NodeId(0x103)), 0);
    sim.advance_to(secs(20));
    assert_eq!(seen(&sim, 0x101), failed);
    assert_eq!(seen(&sim, 0x103), vec![]);
}

#[test]
fn a_no_route_refusal_keeps_the_message_and_retries_it_when_the_route_is_ready_again() {
    let (mut sim, msg, seq) = one_in_flight();
    sim.advance_to(secs(1));
    let sender = NodeId(0x101);
    let link = sim.node(sender).inspect().link_to(NodeId(0x102)).unwrap();
    let refusal = || Bytes::copy_from_slice(&unreachable(seq, UnreachableReason::NoRoute));
    sim.act(sender, |node, now| {
        node.handle_received(now, link, refusal())
    });
    // Kept (no outcome); the route is unready for its backoff (start 2 s); a second
    // refusal of the same window changes nothing.
    assert_eq!(seen(&sim, 0x101), vec![]);
    let node = sim.node(sender);
    assert_eq!(node.inspect().unacked(NodeId(0x103)), 1);
    assert_eq!(node.inspect().connector().ready_hop(NodeId(0x103)), None);
    // Next: the stream's retransmission timer (sent at 0, `heartbeat_interval` 1.5 s), which
    // finds the route unready and sends nothing.
    assert_eq!(node.poll_timeout(), Some(Instant::from_millis(1_500)));
    let out = sim.act(sender, |node, now| {
        node.handle_received(now, link, refusal());
        drain(node)
    });
    assert_eq!(out, vec![]);
    sim.advance_to(secs(3) - Duration::from_nanos(1));
    assert_eq!(seen(&sim, 0x103), vec![]);
    assert_eq!(seen(&sim, 0x101), vec![]);
    // At 3 s the route follows its ready proxy again and the message goes out — its only
    // copy was refused, so as a first transmission — and is delivered.
    sim.advance_to(secs(3));
    assert_eq!(seen(&sim, 0x103), [received(secs(3), 0x101, 0x102, b"x")]);
    assert_eq!(
        seen(&sim, 0x101),
        [outcome(secs(3), msg, Outcome::Delivered)]
    );
}

/// The target dies behind the proxy while the sender has a message in flight, and restarts
/// later: the copy lost with the old incarnation (it may have delivered it) ends
/// `Unknown(TargetGone)` the instant the target dies — the proxy's probe of it is refused and
/// the proxy tells the sender —, then messages every copy of which the proxy refused while
/// the target was down, then messages first sent after the restart; these reach the new
/// incarnation once each, in order, on the fresh stream the evidence started.
#[test]
fn after_a_restart_behind_a_proxy_only_messages_the_old_target_may_have_had_end_unknown() {
    let mut sim = cluster();
    sim.set_latency(PROXY, TARGET, Duration::from_millis(10));
    let t0 = sim.now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let send = |sim: &mut Sim, text: &'static str| {
        sim.send(
            SENDER,
            Select::Node(TARGET),
            1,
            Bytes::from_static(text.as_bytes()),
        )
        .unwrap()
    };
    // Delivered and acknowledged: the sender knows the target's incarnation.
    let first = send(&mut sim, "first");
    sim.advance_to(ms(100));
    // On its way from the proxy to the target when the target dies: lost, unseen.
    let lost = send(&mut sim, "lost");
    sim.advance_to(ms(105));
    sim.kill(TARGET);
    // Sent while the target is down: the first goes out as the stream's probe and the proxy
    // refuses each copy of it; the others wait behind it.
    sim.advance_to(ms(200));
    let down: Vec<MsgId> = ["down-1", "down-2", "down-3"]
        .into_iter()
        .map(|p| send(&mut sim, p))
        .collect();
    sim.advance_to(ms(2_500));
    sim.restart(TARGET);
    // Sent after the restart, once the route is back: straight out.
    sim.advance_to(ms(2_700));
    let up: Vec<MsgId> = ["up-1", "up-2"]
        .into_iter()
        .map(|p| send(&mut sim, p))
        .collect();
    sim.advance_to(ms(20_000));

    // After the kill the stream probes (the target's incarnation is gone): one frame per
    // retry, its oldest message, refused at 200 ms and at the first retry (1.2 s); the next
    // retry would wait the grown backoff (2 s), but the proxy's word comes first.
    let want = vec![ms(200), ms(1_200)];
    assert_eq!(refusals(&sim), want, "{}", sim.trace_tail(60));
    // "lost" may have been delivered by the old incarnation: unknown, at the kill. Every copy
    // of "down-1" was refused, and the others waited behind it, never sent. The new
    // incarnation links to the proxy at 2.5 s and the proxy tells the sender it is reachable
    // again (at 2.51 s): the probe ("down-1") goes at once (delivered at 2.52 s, acked at
    // 2.53 s), the other two follow (delivered at 2.54 s, acked at 2.55 s); the "up" ones,
    // sent at 2.7 s, go straight out (delivered at 2.71 s, acked at 2.72 s).
    assert_eq!(outcomes_of(&sim, first), [(ms(20), Outcome::Delivered)]);
    assert_eq!(
        outcomes_of(&sim, lost),
        [(ms(105), Outcome::Unknown(FailReason::TargetGone))]
    );
    assert_eq!(
        outcomes_of(&sim, down[0]),
        [(ms(2_530), Outcome::Delivered)]
    );
    for &msg in &down[1..] {
        assert_eq!(outcomes_of(&sim, msg), [(ms(2_550), Outcome::Delivered)]);
    }
    for &msg in &up {
        assert_eq!(outcomes_of(&sim, msg), [(ms(2_720), Outcome::Delivered)]);
    }
    assert_eq!(sim.outcomes(SENDER).len(), 7);
    let got: Vec<(Instant, Bytes)> = sim
        .received(TARGET)
        .iter()
        .map(|r| (r.at, r.payload.clone()))
        .collect();
    let want = vec![
        (ms(10), Bytes::from_static(b"first")),
        (ms(2_520), Bytes::from_static(b"down-1")),
        (ms(2_540), Bytes::from_static(b"down-2")),
        (ms(2_540), Bytes::from_static(b"down-3")),
        (ms(2_710), Bytes::from_static(b"up-1")),
        (ms(2_710), Bytes::from_static(b"up-2")),
    ];
    assert_eq!(got, want);
    assert_eq!(sim.node(SENDER).inspect().unacked(TARGET), 0);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
