//! One test per correction over libatapp (ARCHITECTURE §8, libatapp-spec §10), on the
//! simulator unless the correction is about a single component.
//!
//! Each test asserts our behaviour with exact payloads, outcomes and virtual times; its doc
//! comment says what libatapp does and why we differ. Configurations follow the scenario
//! groups (start 2 s, max 16 s, jitter 0 unless a test is about jitter); links and the
//! registry have no latency unless a test sets one.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::{
    GROUP_A, GROUP_B, GROUP_E, Group, at, at_ms, cluster, config, events_where, got, name, outcome,
    publish, send, start,
};
use switchboard_core::{
    config::Config,
    connector::{RouteEvent, RouteFlags},
    discovery::TopologyInfo,
    endpoint::{EndpointSettings, EndpointTable, QueueLimits},
    ids::{LinkId, MsgId, NodeId},
    node::{Event, Node, Output, RegistryEvent, RegistryIgnored, Target},
    outcome::{FailReason, MessageOutcome, Outcome},
    sim::{Sim, discovery_info, sim_addr, topology_info},
    time::{Duration, Instant},
};

/// `(flags, proxy)` of `node`'s route record for `target`.
fn route(sim: &Sim, node: u64, target: u64) -> Option<(RouteFlags, Option<NodeId>)> {
    sim.node(NodeId(node))
        .route(NodeId(target))
        .map(|r| (r.flags, r.proxy))
}

/// `node`'s route events about `target`, with their time.
fn route_events(sim: &Sim, node: u64, target: u64) -> Vec<(Instant, RouteEvent)> {
    let target = NodeId(target);
    sim.events(NodeId(node))
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Route(r) if route_target(r) == target => Some((*t, *r)),
            _ => None,
        })
        .collect()
}

fn route_target(e: &RouteEvent) -> NodeId {
    match *e {
        RouteEvent::Ready { target, .. }
        | RouteEvent::Unready { target }
        | RouteEvent::Removed { target, .. }
        | RouteEvent::ReconnectScheduled { target, .. }
        | RouteEvent::WaitingDiscovery { target }
        | RouteEvent::TopologyLost { target, .. } => target,
        _ => NodeId::NONE,
    }
}

fn scheduled(target: u64, attempt: u32, at: Instant) -> RouteEvent {
    RouteEvent::ReconnectScheduled {
        target: NodeId(target),
        attempt,
        at,
    }
}

fn removed(target: u64, reason: FailReason) -> RouteEvent {
    RouteEvent::Removed {
        target: NodeId(target),
        reason,
        endpoint: true,
    }
}

/// [`common::start`] with every node's config adjusted by `tweak`.
fn start_with(group: Group, layout: &[(u64, u64)], tweak: impl Fn(&mut Config)) -> Sim {
    let mut sim = Sim::new();
    for &(id, up) in layout {
        let mut c = config(group, id, up);
        tweak(&mut c);
        sim.add_node(c)
            .unwrap_or_else(|e| panic!("node {id:#x}: {e}"));
    }
    sim.run_until_idle();
    sim
}

/// The B layout: 0x201 and 0x202 under 0x203 (direct links allowed in group B).
const LAYOUT_B: [(u64, u64); 3] = [(0x203, 0), (0x201, 0x203), (0x202, 0x203)];

/// A dropped direct link clears `READY` at the instant it drops and arms the reconnect at
/// `now + start`; a message sent meanwhile is queued and flushed by the reconnect, at exactly
/// 12 s, over the new direct link.
///
/// libatapp's `on_remove_endpoint` keeps the handle `READY` (spec §10 item 3): its immediate
/// reconnect is a no-op because the handle "is ready", sends keep going to a dead handle, and
/// its timer still increments the retry count, so a flapping link can spend `max_try` and be
/// removed while "ready". Clearing `READY` at once makes new sends queue, and the armed timer
/// really re-dials.
#[test]
fn dropped_link_clears_ready_at_once_and_arms_reconnect() {
    let mut sim = cluster(GROUP_B, &LAYOUT_B);
    let warm = send(&mut sim, 0x201, 0x202, 100, "warm-up");
    sim.advance_to(at(10));
    sim.cut(NodeId(0x201), NodeId(0x202));

    // Right after the drop, within the same instant.
    let view = sim.node(NodeId(0x201)).route(NodeId(0x202)).expect("kept");
    assert_eq!((view.flags, view.proxy), (RouteFlags::ACTIVE, None));
    assert_eq!(view.retry_count, 1);
    assert_eq!(view.next_reconnect, Some(at(12)));
    assert_eq!(view.timer, Some(at(12)));
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x202)), 0);
    let at_drop: Vec<_> = route_events(&sim, 0x201, 0x202)
        .into_iter()
        .filter(|(t, _)| *t == at(10))
        .collect();
    assert_eq!(
        at_drop,
        [
            (
                at(10),
                RouteEvent::Unready {
                    target: NodeId(0x202)
                }
            ),
            (at(10), scheduled(0x202, 1, at(12))),
        ]
    );

    sim.advance_to(at(11));
    let queued = send(&mut sim, 0x201, 0x202, 100, "sent-while-down");
    assert_eq!(sim.node(NodeId(0x201)).pending(NodeId(0x202)), 1);
    sim.advance_to(at(12) - Duration::from_nanos(1));
    assert_eq!(outcome(&sim, 0x201, queued), None);
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x202)), 0);

    sim.advance_to(at(12));
    assert_eq!(
        got(&sim, 0x202),
        [
            (at(0), 0x201, 0x201, 100, "warm-up".into()),
            (at(12), 0x201, 0x201, 100, "sent-while-down".into()),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x201, warm),
        Some((at(0), Outcome::Delivered))
    );
    assert_eq!(
        outcome(&sim, 0x201, queued),
        Some((at(12), Outcome::Delivered))
    );
    let view = sim.node(NodeId(0x201)).route(NodeId(0x202)).expect("kept");
    assert_eq!(
        (view.flags, view.retry_count, view.timer),
        (RouteFlags::ACTIVE | RouteFlags::READY, 0, None)
    );
}

/// Removing a record fails its queue at the removal instant with the removal's reason:
/// `NoRoute` for a peer whose retries ran out (24 s, the message's own deadline would be
/// 28 s), `TargetGone` for a peer whose topology record vanished (its lost deadline, 15 s;
/// the message's deadline would be 22 s).
///
/// libatapp removes the handle but leaves its queued messages to their `message_timeout`
/// (spec §10 item 5): the caller learns late and with a timeout that says nothing about why.
#[test]
fn removed_record_fails_its_queue_at_once_with_the_reason() {
    let group = Group {
        lost: Duration::from_secs(5),
        ..GROUP_B
    };
    let layout = [(0x203, 0), (0x201, 0x203), (0x202, 0x203), (0x204, 0x203)];
    let mut sim = cluster(group, &layout);
    send(&mut sim, 0x201, 0x202, 100, "warm-up-202");
    send(&mut sim, 0x201, 0x204, 100, "warm-up-204");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x201), NodeId(0x202));
    sim.kill(NodeId(0x204));
    sim.registry_delete_topology(NodeId(0x204));

    sim.advance_to(at(14));
    let to_204 = send(&mut sim, 0x201, 0x204, 100, "to-lost-target");
    sim.advance_to(at(15) - Duration::from_nanos(1));
    assert_eq!(outcome(&sim, 0x201, to_204), None);
    sim.advance_to(at(15));
    assert_eq!(
        outcome(&sim, 0x201, to_204),
        Some((at(15), Outcome::Failed(FailReason::TargetGone)))
    );
    assert_eq!(
        route_events(&sim, 0x201, 0x204).last(),
        Some(&(at(15), removed(0x204, FailReason::TargetGone)))
    );

    sim.advance_to(at(20));
    let to_202 = send(&mut sim, 0x201, 0x202, 100, "to-unreachable-peer");
    sim.advance_to(at(24) - Duration::from_nanos(1));
    assert_eq!(outcome(&sim, 0x201, to_202), None);
    assert_eq!(sim.node(NodeId(0x201)).pending(NodeId(0x202)), 1);
    sim.advance_to(at(24));
    assert_eq!(
        outcome(&sim, 0x201, to_202),
        Some((at(24), Outcome::Failed(FailReason::NoRoute)))
    );
    assert_eq!(
        route_events(&sim, 0x201, 0x202).last(),
        Some(&(at(24), removed(0x202, FailReason::NoRoute)))
    );
    for target in [0x202, 0x204] {
        assert_eq!(sim.node(NodeId(0x201)).route(NodeId(target)), None);
        assert_eq!(sim.node(NodeId(0x201)).pending(NodeId(target)), 0);
    }
}

/// Collecting an endpoint fails what is still queued with `TargetGone`, at the GC instant.
///
/// With `message_timeout` (30 s) longer than `endpoint_gc_timeout` (5 s), libatapp's GC comes
/// first and, since no ready handle exists, drops the queue without a callback (spec §10
/// item 5): the messages vanish. Here the endpoint table collects the endpoint at exactly
/// 5 s after its last handle left and reports each message. (In a `Node` an endpoint never
/// reaches GC with messages: removing its route already failed them — the second half checks
/// that the endpoint is then collected, empty, at its exact GC instant.)
#[test]
fn gc_fails_queued_messages_instead_of_dropping_them() {
    let settings = EndpointSettings {
        limits: QueueLimits {
            max_messages: 16,
            max_bytes: 1 << 20,
        },
        message_timeout: Duration::from_secs(30),
        gc_timeout: Duration::from_secs(5),
    };
    let mut table = EndpointTable::new(settings);
    let key = table
        .get_or_create(NodeId(0x202), "node-202", at(0))
        .expect("valid target");
    table.attach_handle(key);
    for (i, text) in ["gc-1", "gc-2", "gc-3"].into_iter().enumerate() {
        let msg = MsgId(i as u64 + 1);
        table
            .push(key, msg, 100, Bytes::from_static(text.as_bytes()), at(1))
            .expect("room in the queue");
    }
    table.detach_handle(key, at(2));
    assert_eq!(table.next_deadline(), Some(at(7)));

    let mut outcomes: Vec<MessageOutcome> = Vec::new();
    table.handle_timeout(at(7) - Duration::from_nanos(1), &mut outcomes);
    assert_eq!(outcomes, []);
    table.handle_timeout(at(7), &mut outcomes);
    let failed: Vec<(MsgId, Outcome)> = outcomes.iter().map(|o| (o.msg, o.outcome)).collect();
    assert_eq!(
        failed,
        [1, 2, 3].map(|m| (MsgId(m), Outcome::Failed(FailReason::TargetGone)))
    );
    assert_eq!(table.find_by_id(NodeId(0x202)), None);
    assert_eq!(table.next_deadline(), None);

    // The node: a removed route fails its queue at once; the emptied endpoint goes at GC.
    // 0x202 is unreachable from the start: attempts at 0, 2 and 6 s, removal at 14 s.
    let mut sim = start_with(GROUP_B, &LAYOUT_B, |c| {
        c.message_timeout = Duration::from_secs(30);
        c.endpoint_gc_timeout = Duration::from_secs(5);
    });
    publish(&mut sim, &LAYOUT_B);
    sim.link_down(NodeId(0x201), NodeId(0x202));
    let msg = send(&mut sim, 0x201, 0x202, 100, "never-delivered");
    sim.advance_to(at(14));
    assert_eq!(
        outcome(&sim, 0x201, msg),
        Some((at(14), Outcome::Failed(FailReason::NoRoute)))
    );
    let endpoints = sim.node(NodeId(0x201)).endpoints();
    let key = endpoints.find_by_id(NodeId(0x202)).expect("kept until GC");
    assert_eq!(
        endpoints
            .get(key)
            .map(|e| (e.queue().len(), e.gc_deadline())),
        Some((0, Some(at(19))))
    );
    sim.advance_to(at(19));
    assert_eq!(
        sim.node(NodeId(0x201))
            .endpoints()
            .find_by_id(NodeId(0x202)),
        None
    );
}

/// The E layout: 0x501 and 0x502 under 0x503.
const LAYOUT_E: [(u64, u64); 3] = [(0x503, 0), (0x501, 0x503), (0x502, 0x503)];

/// The link (from the simulator trace) `node` transmitted the message `payload` on.
fn transmitted_on(sim: &Sim, node: u64, payload: &str) -> Vec<String> {
    let who = format!(" {} -> transmit ", NodeId(node));
    sim.trace()
        .iter()
        .filter(|l| l.contains(&who) && l.contains(payload))
        .map(|l| {
            let after = l.split(" on ").nth(1).unwrap_or_default();
            after.split(' ').next().unwrap_or_default().to_owned()
        })
        .collect()
}

/// Handle choice is deterministic: a direct link beats a proxy (the record switches to the
/// direct link the moment one comes up), and among several links to one peer the lowest
/// link id carries the traffic.
///
/// 0x501 may not dial peers (no direct links in its policy) and relays to 0x502 through
/// 0x503; when 0x502 (which may) dials in at 1 s, 0x501's record becomes direct and the next
/// message goes over that link. Then 0x502 and the new node 0x504 dial each other at the
/// same instant (5 ms connect latency), so each holds two links to the other: every later
/// message goes over the lower link id.
///
/// libatapp picks the first ready entry of an unordered set with no priority (spec §10
/// item 6): which link — and whether direct or proxied — depends on hashing.
#[test]
fn handle_choice_is_deterministic_direct_before_proxied_then_lowest_link() {
    let layout = [(0x503, 0), (0x501, 0x503), (0x502, 0x503), (0x504, 0x503)];
    let mut sim = start_with(GROUP_E, &layout, |c| {
        c.topology_policy.allow_direct_connection = c.id != NodeId(0x501);
    });
    publish(&mut sim, &layout);

    let proxied = send(&mut sim, 0x501, 0x502, 100, "relayed-first");
    assert_eq!(
        route(&sim, 0x501, 0x502),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x503))))
    );
    sim.advance_to(at(1));
    send(&mut sim, 0x502, 0x501, 101, "dial-in");
    sim.run_until_idle();
    assert_eq!(
        route(&sim, 0x501, 0x502),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    // Seamless: ready throughout, so the only route event is the first `Ready`.
    assert_eq!(
        route_events(&sim, 0x501, 0x502),
        [(
            at(0),
            RouteEvent::Ready {
                target: NodeId(0x502),
                via: Some(NodeId(0x503))
            }
        )]
    );
    sim.advance_to(at(2));
    let direct = send(&mut sim, 0x501, 0x502, 100, "direct-after");
    sim.run_until_idle();
    assert_eq!(
        got(&sim, 0x502),
        [
            (at(0), 0x501, 0x503, 100, "relayed-first".into()),
            (at(2), 0x501, 0x501, 100, "direct-after".into()),
        ]
    );
    assert_eq!(
        got(&sim, 0x501),
        [(at(1), 0x502, 0x502, 101, "dial-in".into())]
    );
    for msg in [proxied, direct] {
        assert!(outcome(&sim, 0x501, msg).is_some_and(|(_, o)| o == Outcome::Delivered));
    }

    // Two links between 0x502 and 0x504, both up at 3.005 s.
    sim.set_connect_latency(NodeId(0x502), NodeId(0x504), Duration::from_millis(5));
    sim.advance_to(at(3));
    send(&mut sim, 0x502, 0x504, 100, "cross-1");
    send(&mut sim, 0x504, 0x502, 100, "cross-2");
    sim.advance_to(at_ms(3_005));
    assert_eq!(sim.open_links(NodeId(0x502), NodeId(0x504)), 2);
    for (node, peer) in [(0x502, 0x504), (0x504, 0x502)] {
        let mut up: Vec<LinkId> = events_where(
            &sim,
            node,
            |e| matches!(e, Event::LinkUp { peer: p, .. } if *p == NodeId(peer)),
        )
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::LinkUp { link, .. } => Some(link),
            _ => None,
        })
        .collect();
        up.sort();
        assert_eq!(up.len(), 2, "{node:#x} holds two links to {peer:#x}");
        assert_eq!(sim.node(NodeId(node)).link_to(NodeId(peer)), Some(up[0]));
        sim.advance(Duration::from_millis(1));
        let text = if node == 0x502 { "after-2" } else { "after-4" };
        send(&mut sim, node, peer, 100, text);
        assert_eq!(transmitted_on(&sim, node, text), [up[0].to_string()]);
    }
}

/// A `READY` direct link outlives its target's topology record: the lost deadline (42 s)
/// passes with the link up, the record stays `READY | LOST_TOPOLOGY` and traffic keeps
/// flowing; once the link drops (50 s) the record is removed at that instant, `TargetGone`.
///
/// libatapp removes a ready handle at its lost deadline (spec §10 item 7, its D.7), killing a
/// working link because a registry record expired — e.g. during a registry outage.
#[test]
fn ready_direct_link_survives_topology_expiry_until_it_drops() {
    let mut sim = cluster(GROUP_B, &LAYOUT_B);
    send(&mut sim, 0x201, 0x202, 100, "warm-up");
    sim.advance_to(at(10));
    sim.registry_delete_topology(NodeId(0x202));
    let view = sim.node(NodeId(0x201)).route(NodeId(0x202)).expect("kept");
    assert_eq!(
        (view.flags, view.lost_deadline, view.timer),
        (
            RouteFlags::ACTIVE | RouteFlags::READY | RouteFlags::LOST_TOPOLOGY,
            Some(at(42)),
            Some(at(42))
        )
    );

    sim.advance_to(at(42));
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((
            RouteFlags::ACTIVE | RouteFlags::READY | RouteFlags::LOST_TOPOLOGY,
            None
        ))
    );
    sim.advance_to(at(43));
    let later = send(&mut sim, 0x201, 0x202, 100, "past-the-deadline");
    assert_eq!(
        outcome(&sim, 0x201, later),
        Some((at(43), Outcome::Delivered))
    );

    sim.advance_to(at(50));
    sim.cut(NodeId(0x201), NodeId(0x202));
    assert_eq!(sim.node(NodeId(0x201)).route(NodeId(0x202)), None);
    assert_eq!(
        route_events(&sim, 0x201, 0x202)
            .into_iter()
            .filter(|(t, _)| *t >= at(10))
            .collect::<Vec<_>>(),
        [
            (
                at(10),
                RouteEvent::TopologyLost {
                    target: NodeId(0x202),
                    deadline: at(42)
                }
            ),
            (
                at(50),
                RouteEvent::Unready {
                    target: NodeId(0x202)
                }
            ),
            (at(50), removed(0x202, FailReason::TargetGone)),
        ]
    );
    assert_eq!(
        got(&sim, 0x202),
        [
            (at(0), 0x201, 0x201, 100, "warm-up".into()),
            (at(43), 0x201, 0x201, 100, "past-the-deadline".into()),
        ]
    );
}

/// Everything `node` output, drained.
fn drain(node: &mut Node) -> Vec<Output> {
    std::iter::from_fn(|| node.poll_output()).collect()
}

/// One `handle_timeout` handles every due deadline, whatever their instants: two reconnect
/// timers (due 2 s and 3 s), a lost-topology deadline (6 s), two message deadlines (8 s,
/// 9 s), all handled by a single call at 10 s, each with its effect — re-dials with the next
/// attempt scheduled from 10 s, the lost record removed (`TargetGone`, failing its message),
/// the two messages timed out — and the next deadline is the next future one (14 s).
///
/// libatapp keeps time as a global offset and fires one timer per tick (spec §10 item 13):
/// a driver that wakes late needs one tick per overdue timer, and its tests step in 50 ms
/// loops.
#[test]
fn every_due_timer_fires_in_one_handle_timeout() {
    let mut c = Config::new(NodeId(0x201), "node-201");
    c.reconnect_start = Duration::from_secs(2);
    c.reconnect_max = Duration::from_secs(16);
    c.reconnect_max_tries = 3;
    c.reconnect_jitter_percent = 0;
    c.lost_topology_timeout = Duration::from_secs(5);
    c.topology_policy.allow_direct_connection = true;
    let mut node = Node::new(c, at(0)).expect("valid config");
    for (rev, id) in [(1, 0x202), (2, 0x203), (3, 0x204)] {
        let mut info = discovery_info(NodeId(id), &name(id));
        info.revision = rev;
        node.handle_registry(at(0), RegistryEvent::DiscoveryPut(info));
    }
    let mut topo = topology_info(NodeId(0x204), &name(0x204), NodeId::NONE);
    topo.revision = 4;
    node.handle_registry(at(0), RegistryEvent::TopologyPut(topo));
    drain(&mut node);

    // Each send dials; each dial fails at once. 0x204's topology record goes at 1 s.
    let mut msgs = Vec::new();
    for (t, id) in [(0, 0x202), (1, 0x203), (1, 0x204)] {
        let msg = node
            .send(at(t), Target::Id(NodeId(id)), 100, Bytes::from_static(b"m"))
            .expect("accepted");
        msgs.push(msg);
        for out in drain(&mut node) {
            if let Output::Connect { link, .. } = out {
                node.handle_connect_failed(at(t), link);
            }
        }
    }
    node.handle_registry(
        at(1),
        RegistryEvent::TopologyDelete {
            id: NodeId(0x204),
            revision: 5,
        },
    );
    drain(&mut node);
    assert_eq!(node.poll_timeout(), Some(at(2)));

    node.handle_timeout(at(10));
    let outputs = drain(&mut node);
    let connects: Vec<(NodeId, String)> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Connect { peer, addr, .. } => Some((*peer, addr.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        connects,
        [
            (NodeId(0x202), sim_addr(NodeId(0x202))),
            (NodeId(0x203), sim_addr(NodeId(0x203)))
        ]
    );
    let route_events: Vec<RouteEvent> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Event(Event::Route(r)) => Some(*r),
            _ => None,
        })
        .collect();
    assert_eq!(
        route_events,
        [
            scheduled(0x202, 2, at(14)),
            scheduled(0x203, 2, at(14)),
            removed(0x204, FailReason::TargetGone),
        ]
    );
    let outcomes: Vec<(MsgId, Outcome)> = outputs
        .iter()
        .filter_map(|o| match o {
            Output::Outcome { msg, outcome } => Some((*msg, *outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            (msgs[2], Outcome::Failed(FailReason::TargetGone)),
            (msgs[0], Outcome::Failed(FailReason::Timeout)),
            (msgs[1], Outcome::Failed(FailReason::Timeout)),
        ]
    );
    assert_eq!(node.poll_timeout(), Some(at(14)));
    node.handle_timeout(at(10));
    assert_eq!(drain(&mut node), []);
}

/// The instants at which each of `senders` scheduled its first reconnect to `peer` after
/// `peer` died at 10 s.
fn first_reconnects(group: Group, jitter: u32, senders: &[u64], peer: u64) -> Vec<Instant> {
    let mut layout = vec![(0x203, 0), (peer, 0x203)];
    layout.extend(senders.iter().map(|&s| (s, 0x203)));
    let mut sim = start_with(group, &layout, |c| c.reconnect_jitter_percent = jitter);
    publish(&mut sim, &layout);
    for &s in senders {
        send(&mut sim, s, peer, 100, "warm-up");
    }
    sim.run_until_idle();
    sim.advance_to(at(10));
    sim.kill(NodeId(peer));
    senders
        .iter()
        .map(|&s| {
            let at_ten: Vec<RouteEvent> = route_events(&sim, s, peer)
                .into_iter()
                .filter(|(t, e)| *t == at(10) && matches!(e, RouteEvent::ReconnectScheduled { .. }))
                .map(|(_, e)| e)
                .collect();
            match at_ten.as_slice() {
                [RouteEvent::ReconnectScheduled { attempt: 1, at, .. }] => *at,
                other => panic!("{s:#x}: {other:?}"),
            }
        })
        .collect()
}

/// Reconnects are jittered (default ±20 %), so nodes that lose the same peer at the same
/// instant do not retry in lockstep: four nodes losing 0x206 at 10 s schedule their first
/// reconnect at four distinct instants, each within [0.8, 1.2] · 2 s of the loss. The
/// instants are exact for the fixed seeds (each node's generator is seeded from its config
/// seed and id). With jitter 0 — libatapp's schedule — all four land on 12 s.
///
/// libatapp's `setup_reconnect_timer` has no jitter (spec §10 item 2): every peer of a node
/// that restarts re-dials it at the same instants, a thundering herd on each attempt.
#[test]
fn reconnect_backoff_is_jittered_and_desynchronised() {
    let senders = [0x201, 0x202, 0x204, 0x205];
    let jittered = first_reconnects(GROUP_B, 20, &senders, 0x206);
    assert_eq!(
        jittered,
        [
            Instant::from_nanos(11_701_931_270),
            Instant::from_nanos(11_933_791_613),
            Instant::from_nanos(11_784_653_217),
            Instant::from_nanos(12_341_664_931),
        ]
    );
    let mut distinct = jittered.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), senders.len());
    for t in &jittered {
        assert!((at_ms(11_600)..=at_ms(12_400)).contains(t), "{t:?}");
    }
    assert_eq!(first_reconnects(GROUP_B, 0, &senders, 0x206), [at(12); 4]);
}

/// A node's discovery record, published at revision `rev` with `listen` as its address.
fn discovery_at(id: u64, rev: u64, listen: &str) -> RegistryEvent {
    let mut info = discovery_info(NodeId(id), &name(id));
    info.listen = vec![listen.to_owned()];
    info.revision = rev;
    RegistryEvent::DiscoveryPut(info)
}

/// An older registry event never overwrites a newer one, whatever the arrival order: a
/// discovery put at revision 90 after one at 100 is ignored (the node keeps the newer address
/// and dials it), so is a discovery delete at 95, and a topology put at 90 after one at 100
/// (the stale one would have moved 0x202 under 0x201).
///
/// libatapp applies discovery PUTs with no revision gate (spec §10 item 8): a late event
/// from a slow watcher or a re-list replaces the newer record, here with a dead address.
#[test]
fn older_discovery_revision_never_overwrites_newer() {
    let mut sim = start(GROUP_B, &[(0x203, 0), (0x201, 0x203)]);
    sim.add_node_at(config(GROUP_B, 0x202, 0x203), "sim://node-202-new")
        .expect("valid config");
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    let n201 = NodeId(0x201);
    let mut topo = topology_info(NodeId(0x202), &name(0x202), NodeId(0x203));
    topo.revision = 100;
    sim.inject_registry(n201, RegistryEvent::TopologyPut(topo.clone()));
    topo.revision = 90;
    topo.upstream_id = NodeId(0x201);
    sim.inject_registry(n201, RegistryEvent::TopologyPut(topo));
    sim.inject_registry(n201, discovery_at(0x202, 100, "sim://node-202-new"));
    sim.inject_registry(n201, discovery_at(0x202, 90, "sim://node-202-old"));
    sim.inject_registry(
        n201,
        RegistryEvent::DiscoveryDelete {
            id: NodeId(0x202),
            name: name(0x202),
            revision: 95,
        },
    );

    assert_eq!(
        events_where(&sim, 0x201, |e| matches!(e, Event::RegistryIgnored(_))),
        [
            (
                at(0),
                Event::RegistryIgnored(RegistryIgnored::StaleTopology {
                    id: NodeId(0x202),
                    revision: 90,
                    held: 100
                })
            ),
            (
                at(0),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
            (
                at(0),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
        ]
    );
    let node = sim.node(n201);
    assert_eq!(
        node.topology().upstream_of(NodeId(0x202)),
        Some(NodeId(0x203))
    );
    let held = node.discovery().get_by_id(NodeId(0x202)).expect("kept");
    assert_eq!(
        (held.revision, held.listen.as_slice()),
        (100, ["sim://node-202-new".to_owned()].as_slice())
    );

    sim.advance_to(at(1));
    let msg = send(&mut sim, 0x201, 0x202, 100, "to-the-newer-address");
    sim.run_until_idle();
    assert!(
        sim.trace()
            .iter()
            .any(|l| l.contains("0x201 -> connect") && l.contains("sim://node-202-new"))
    );
    assert_eq!(
        got(&sim, 0x202),
        [(at(1), 0x201, 0x201, 100, "to-the-newer-address".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(1), Outcome::Delivered)));
}

/// The `by_id` and `by_name` watchers deliver every change twice; each change applies once.
/// A queued message waits for 0x202's discovery record (`WAIT_DISCOVERY`); the record
/// arrives at 1 s in two copies: the first resumes the route (one dial, the message
/// delivered once), the second is ignored as a duplicate — no second dial, no second link.
/// The two copies of the delete at 5 s: the first removes the record, the second is ignored.
///
/// libatapp deduplicates the two copies only by protobuf equality of the record (spec §10
/// item 8); ours by revision and content, so a duplicate never re-runs a reaction.
#[test]
fn by_id_and_by_name_duplicates_apply_once() {
    let mut sim = start(GROUP_B, &LAYOUT_B);
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    common::publish_topology(&mut sim, 0x202, 0x203);
    sim.run_until_idle();
    let msg = send(&mut sim, 0x201, 0x202, 100, "waits-for-discovery");
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY, None))
    );

    sim.advance_to(at(1));
    common::publish_discovery(&mut sim, 0x202);
    let copy = sim
        .registry()
        .discovery(NodeId(0x202))
        .cloned()
        .expect("published");
    sim.inject_registry(NodeId(0x201), RegistryEvent::DiscoveryPut(copy));
    sim.run_until_idle();

    let dials = sim
        .trace()
        .iter()
        .filter(|l| l.contains("0x201 -> connect") && l.contains("to 0x202"))
        .count();
    assert_eq!(dials, 1);
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x202)), 1);
    assert_eq!(
        got(&sim, 0x202),
        [(at(1), 0x201, 0x201, 100, "waits-for-discovery".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(1), Outcome::Delivered)));

    sim.advance_to(at(5));
    let revision = sim.registry_delete_discovery(NodeId(0x202));
    sim.inject_registry(
        NodeId(0x201),
        RegistryEvent::DiscoveryDelete {
            id: NodeId(0x202),
            name: name(0x202),
            revision,
        },
    );
    assert_eq!(
        sim.node(NodeId(0x201)).discovery().get_by_id(NodeId(0x202)),
        None
    );
    assert_eq!(
        events_where(&sim, 0x201, |e| matches!(e, Event::RegistryIgnored(_))),
        [
            (
                at(1),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
            (
                at(5),
                Event::RegistryIgnored(RegistryIgnored::Discovery { id: NodeId(0x202) })
            ),
        ]
    );
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
}

/// `id`'s topology record under `upstream`, on `hostname` with `pid`.
fn placed(id: u64, upstream: u64, hostname: &str, pid: i32) -> TopologyInfo {
    let mut info = topology_info(NodeId(id), &name(id), NodeId(upstream));
    info.hostname = hostname.to_owned();
    info.pid = pid;
    info
}

/// A host (or process) change in a peer's topology record counts for the direct-link
/// policy. Under `require_same_host` 0x501 links directly to 0x502 while both are on
/// `host-a`; at 10 s 0x502 moves to `host-b` (its topology record says so, its old link
/// dies). The direct path is no longer allowed: instead of re-dialling 0x502 (which would
/// succeed — its address still answers) the record switches to the proxy 0x503 at once,
/// ready, and the message sent at 11 s is relayed. The same holds for a pid change under
/// `require_same_process`, and when the link is lost first (the re-dial, still judged by the
/// old host, fails) and the moved record arrives after.
///
/// libatapp's topology equality ignores hostname and pid (spec §10 item 9, I.30): the move
/// is not applied, the policy keeps judging the old host, and the node re-dials directly.
#[test]
fn host_or_pid_change_counts_for_policy() {
    // (require_same_process, link lost before the moved record arrives)
    for (same_process, link_first) in [(false, false), (true, false), (false, true)] {
        let layout = LAYOUT_E;
        let mut sim = start_with(GROUP_E, &layout, |c| {
            c.hostname = "host-a".to_owned();
            c.pid = 7;
            c.topology_policy.require_same_host = !same_process;
            c.topology_policy.require_same_process = same_process;
        });
        for &(id, up) in &layout {
            sim.registry_put_topology(placed(id, up, "host-a", 7));
        }
        for &(id, _) in &layout {
            common::publish_discovery(&mut sim, id);
        }
        sim.run_until_idle();
        let first = send(&mut sim, 0x501, 0x502, 100, "same-host-direct");
        sim.run_until_idle();
        assert_eq!(
            route(&sim, 0x501, 0x502),
            Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
        );

        sim.advance_to(at(10));
        let moved = if same_process {
            placed(0x502, 0x503, "host-a", 8)
        } else {
            placed(0x502, 0x503, "host-b", 7)
        };
        if link_first {
            sim.link_down(NodeId(0x501), NodeId(0x502));
            sim.run_until_idle();
            assert_eq!(route(&sim, 0x501, 0x502), Some((RouteFlags::ACTIVE, None)));
            sim.registry_put_topology(moved);
        } else {
            sim.registry_put_topology(moved);
            sim.cut(NodeId(0x501), NodeId(0x502));
        }
        sim.run_until_idle();
        assert_eq!(
            route(&sim, 0x501, 0x502),
            Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x503)))),
            "same_process = {same_process}, link_first = {link_first}"
        );
        assert_eq!(sim.open_links(NodeId(0x501), NodeId(0x502)), 0);

        sim.advance_to(at(11));
        let second = send(&mut sim, 0x501, 0x502, 100, "after-the-move");
        sim.run_until_idle();
        assert_eq!(
            got(&sim, 0x502),
            [
                (at(0), 0x501, 0x501, 100, "same-host-direct".into()),
                (at(11), 0x501, 0x503, 100, "after-the-move".into()),
            ]
        );
        assert_eq!(
            outcome(&sim, 0x501, first),
            Some((at(0), Outcome::Delivered))
        );
        assert_eq!(
            outcome(&sim, 0x501, second),
            Some((at(11), Outcome::Delivered))
        );
        assert_eq!(
            route_events(&sim, 0x501, 0x502)
                .into_iter()
                .filter(|(t, e)| *t >= at(10) && matches!(e, RouteEvent::Removed { .. }))
                .count(),
            0,
            "the record is re-routed, not removed"
        );
        assert_eq!(sim.open_links(NodeId(0x501), NodeId(0x502)), 0);
    }
}
