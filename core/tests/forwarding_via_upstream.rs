//! libatapp scenario group A (libatapp-spec §9): upstream forwarding.
//!
//! Layout: 0x101 → relay 0x102 ← 0x103, spare relay 0x104 (a root). Start 2 s, max 16 s,
//! lost 32 s, 2 tries, no direct links, jitter 0; message timeout 8 s (the default). Links
//! and the registry have no latency, so every assertion is at an exact whole instant.
//!
//! libatapp's tests force states through debug hooks (`set_handle_unready_by_bus_id`,
//! `remove_topology_peer` on one node) and a global clock stepped by `tick()`. Here every
//! state change has its real cause — a link drops, a node dies, the registry changes — and
//! the clock is the simulator's.

mod common;

use common::{
    GROUP_A, at, cluster, connect_failures, events_where, got, name, outcome, publish,
    publish_discovery, publish_topology, send, start,
};
use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    node::Event,
    outcome::{FailReason, Outcome},
    select::Select,
    sim::{Fanout, Sim},
    time::{Duration, Instant},
};

const LAYOUT: [(u64, u64); 4] = [(0x102, 0), (0x104, 0), (0x101, 0x102), (0x103, 0x102)];

fn flags(sim: &Sim, node: u64, target: u64) -> Option<RouteFlags> {
    sim.node(NodeId(node))
        .inspect()
        .route(NodeId(target))
        .map(|r| r.flags)
}

fn proxy(sim: &Sim, node: u64, target: u64) -> Option<NodeId> {
    sim.node(NodeId(node))
        .inspect()
        .route(NodeId(target))
        .and_then(|r| r.proxy)
}

/// A.1: node 0x103's records arrive late; once they do, a send from 0x101 is delivered at
/// once through the relay, byte for byte.
///
/// libatapp creates the endpoint after the late discovery and checks it is ready at once;
/// same here: before the records arrive 0x101 has no route to 0x103 at all, after them the
/// first send opens a route that is ready through 0x102.
#[test]
fn a1_upstream_wait_discovery_then_send() {
    let mut sim = start(GROUP_A, &LAYOUT);
    publish(&mut sim, &[(0x102, 0), (0x104, 0), (0x101, 0x102)]);
    sim.advance(Duration::from_secs(1));
    assert_eq!(sim.node(NodeId(0x101)).inspect().route(NodeId(0x103)), None);

    publish_topology(&mut sim, 0x103, 0x102);
    publish_discovery(&mut sim, 0x103);
    sim.run_until_idle();
    let msg = send(&mut sim, 0x101, 0x103, 100, "hello-from-node1-A1");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x103),
        [(at(1), 0x101, 0x102, 100, "hello-from-node1-A1".into())]
    );
    assert_eq!(outcome(&sim, 0x101, msg), Some((at(1), Outcome::Delivered)));
    assert_eq!(
        flags(&sim, 0x101, 0x103),
        Some(RouteFlags::ACTIVE | RouteFlags::READY)
    );
    assert_eq!(proxy(&sim, 0x101, 0x103), Some(NodeId(0x102)));
}

/// A.2: everything connected: by id, by name and in reverse, each delivered at once through
/// the relay.
#[test]
fn a2_upstream_connected_forward_success() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    let by_id = send(&mut sim, 0x101, 0x103, 100, "upstream-forward-A2");
    let by_name = sim
        .send(
            NodeId(0x101),
            Select::Name(name(0x103)),
            100,
            &b"upstream-forward-A2-by-name"[..],
        )
        .expect("by-name send accepted");
    let reverse = send(&mut sim, 0x103, 0x101, 101, "reverse-A2");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x103),
        [
            (at(0), 0x101, 0x102, 100, "upstream-forward-A2".into()),
            (
                at(0),
                0x101,
                0x102,
                100,
                "upstream-forward-A2-by-name".into()
            ),
        ]
    );
    assert_eq!(
        got(&sim, 0x101),
        [(at(0), 0x103, 0x102, 101, "reverse-A2".into())]
    );
    assert_eq!(got(&sim, 0x102), []);
    for (node, msg) in [(0x101, by_id), (0x101, by_name), (0x103, reverse)] {
        assert_eq!(outcome(&sim, node, msg), Some((at(0), Outcome::Delivered)));
    }
}

/// A.3: the target (0x199) is known to 0x101's discovery only — no topology, no address,
/// no node behind it.
///
/// libatapp accepts either an immediate send error or a non-zero forward response. Here: the
/// target is relayed through the upstream (ARCHITECTURE §8, step "relay through our own
/// upstream"); the relay has no route to 0x199, reports `ForwardDropped` and sends
/// `Unreachable` back. The sender treats the refusal as transient: the route is unready for
/// its backoff, then follows its ready proxy again and the message goes out again as a probe
/// — refused at 0, 2 and 6 s: following the proxy proves nothing, so the retry count goes on
/// and the backoff grows (2 s, 4 s) — until the record's 2 tries are spent at 6 s, where the
/// record is removed and the message fails with `NoRoute` (its only copy was refused:
/// certainly not delivered).
///
/// Changed: the message used to fail `Failed(NoRoute)` at 0 s, at the first refusal; then,
/// retried every 2 s, at its deadline (8 s); now at the end of its record's tries.
#[test]
fn a3_upstream_connected_target_unreachable() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    let mut fake = switchboard_core::sim::discovery_info(NodeId(0x199), "nonexistent-node");
    fake.listen.clear();
    sim.registry_put_discovery_with(fake, Fanout::only([NodeId(0x101)]));

    let msg = send(&mut sim, 0x101, 0x199, 100, "to-nobody-A3");
    sim.advance(Duration::from_secs(10));

    assert_eq!(
        outcome(&sim, 0x101, msg),
        Some((at(6), Outcome::Failed(FailReason::NoRoute)))
    );
    let dropped = Event::ForwardDropped {
        src: NodeId(0x101),
        dst: NodeId(0x199),
        msg_type: 100,
    };
    assert_eq!(
        events_where(&sim, 0x102, |e| matches!(e, Event::ForwardDropped { .. })),
        [
            (at(0), dropped.clone()),
            (at(2), dropped.clone()),
            (at(6), dropped),
        ]
    );
    for node in [0x101, 0x102, 0x103, 0x104] {
        assert_eq!(got(&sim, node), [], "node {node:#x} received something");
    }
}

/// A.4: the link to the relay drops; a message sent meanwhile waits in the queue and goes
/// out, in order, when the upstream link is back; later sends go straight out.
///
/// libatapp flips the handle with a debug hook. Here 0x101's link to 0x102 drops at 10 s:
/// the route to 0x103 (through 0x102) is unready at once (ARCHITECTURE §8 correction), the
/// upstream is re-dialled after `start` = 2 s, and the queue flushes at exactly 12 s.
#[test]
fn a4_upstream_reconnect_then_send_success() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    let first = send(&mut sim, 0x101, 0x103, 100, "before-disconnect-A4");
    sim.advance_to(at(10));
    common::cut_past_the_probes(&mut sim, 0x101, 0x102);
    sim.run_until_idle();
    assert_eq!(flags(&sim, 0x101, 0x103), Some(RouteFlags::ACTIVE));

    let second = send(&mut sim, 0x101, 0x103, 100, "during-reconnect-A4");
    sim.run_until_idle();
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 1);
    assert_eq!(outcome(&sim, 0x101, second), None);

    sim.advance_to(at(12));
    let third = send(&mut sim, 0x101, 0x103, 100, "after-reconnect-A4");
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 0);
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x103),
        [
            (at(0), 0x101, 0x102, 100, "before-disconnect-A4".into()),
            (at(12), 0x101, 0x102, 100, "during-reconnect-A4".into()),
            (at(12), 0x101, 0x102, 100, "after-reconnect-A4".into()),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x101, first),
        Some((at(0), Outcome::Delivered))
    );
    assert_eq!(
        outcome(&sim, 0x101, second),
        Some((at(12), Outcome::Delivered))
    );
    assert_eq!(
        outcome(&sim, 0x101, third),
        Some((at(12), Outcome::Delivered))
    );
}

/// Reconnect scheduling and removal events of `node`, with their time.
fn retry_events(sim: &Sim, node: u64) -> Vec<(Instant, Event)> {
    events_where(sim, node, |e| {
        matches!(
            e,
            Event::Route(RouteEvent::ReconnectScheduled { .. } | RouteEvent::Removed { .. })
        )
    })
}

fn scheduled(target: u64, attempt: u32, at: Instant) -> Event {
    Event::Route(RouteEvent::ReconnectScheduled {
        target: NodeId(target),
        attempt,
        at,
    })
}

fn removed(target: u64, reason: FailReason, endpoint: bool) -> Event {
    Event::Route(RouteEvent::Removed {
        target: NodeId(target),
        reason,
        endpoint,
    })
}

/// A.5: 0x101 loses its relay for good at 10 s and sends at 11 s. The relay's record (the
/// hop 0x103's route goes through) counts its reconnect attempts from the first failed
/// upstream dial (12 s): attempt 1 at 14 s, attempt 2 at 18 s, then its 2 tries are spent
/// and it is removed at 18 s — taking the route to 0x103 with it and failing the queued
/// message at once with `NoRoute`, a second before its own deadline (19 s). The node's
/// upstream keeper dials on its own schedule (12 s, 16 s, …) and without a limit.
///
/// libatapp (via its debug hook) removes the record after its 2 tries too, but leaves the
/// queued message to its timeout (-211). Ours fails it at the removal, with the reason.
#[test]
fn a5_upstream_retry_exceed_limit_fail() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x101), NodeId(0x102));
    sim.advance_to(at(11));
    let msg = send(&mut sim, 0x101, 0x103, 100, "will-fail-A5");
    assert_eq!(flags(&sim, 0x101, 0x103), Some(RouteFlags::ACTIVE));
    assert_eq!(proxy(&sim, 0x101, 0x103), Some(NodeId(0x102)));
    sim.advance_to(at(18) - Duration::from_nanos(1));
    assert_eq!(outcome(&sim, 0x101, msg), None);
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 1);
    sim.advance_to(at(20));

    assert_eq!(
        outcome(&sim, 0x101, msg),
        Some((at(18), Outcome::Failed(FailReason::NoRoute)))
    );
    assert_eq!(
        retry_events(&sim, 0x101),
        [
            (at(12), scheduled(0x102, 1, at(14))),
            (at(14), scheduled(0x102, 2, at(18))),
            (at(18), removed(0x102, FailReason::NoRoute, false)),
            (at(18), removed(0x103, FailReason::NoRoute, true)),
        ]
    );
    assert_eq!(sim.node(NodeId(0x101)).inspect().route(NodeId(0x103)), None);
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 0);
    // 10 s: the probe the drop sends at once (a live upstream would be back then).
    assert_eq!(
        connect_failures(&sim, 0x101),
        ["10.000000000s", "12.000000000s", "16.000000000s"]
    );
    assert_eq!(got(&sim, 0x103), []);
}

/// A.6: the relay dies at 10 s. Messages queued at 11 s and 13 s fail together when the
/// relay's record is removed for spent retries (18 s), the route to 0x103 is cleaned up
/// with it and nothing stays queued. The upstream keeper keeps re-dialling on the capped
/// backoff (12, 16, 24, 40, 56 s); once the restarted relay answers (56 s) a new send opens
/// a new route and is delivered.
///
/// libatapp removes the handle after its 2 tries, lets the messages time out (-211) and
/// garbage-collects the endpoint 60 s later. Ours fails the queue at the removal.
#[test]
fn a6_upstream_retry_timeout_downstream_cleanup() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    sim.advance_to(at(10));
    sim.kill(NodeId(0x102));
    sim.advance_to(at(11));
    let m1 = send(&mut sim, 0x101, 0x103, 100, "pending-cleanup-A6-1");
    sim.advance_to(at(13));
    let m2 = send(&mut sim, 0x101, 0x103, 100, "pending-cleanup-A6-2");
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 2);
    sim.advance_to(at(41));

    for msg in [m1, m2] {
        assert_eq!(
            outcome(&sim, 0x101, msg),
            Some((at(18), Outcome::Failed(FailReason::NoRoute)))
        );
    }
    assert_eq!(sim.node(NodeId(0x101)).inspect().route(NodeId(0x103)), None);
    assert_eq!(sim.node(NodeId(0x101)).inspect().route(NodeId(0x102)), None);
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 0);
    assert_eq!(
        connect_failures(&sim, 0x101),
        [
            "10.000000000s", // the probe at the drop
            "12.000000000s",
            "16.000000000s",
            "24.000000000s",
            "40.000000000s"
        ]
    );

    sim.restart(NodeId(0x102));
    sim.advance_to(at(56));
    let m3 = send(&mut sim, 0x101, 0x103, 100, "after-relay-restart-A6");
    sim.run_until_idle();
    assert_eq!(
        got(&sim, 0x103),
        [(at(56), 0x101, 0x102, 100, "after-relay-restart-A6".into())]
    );
    assert_eq!(outcome(&sim, 0x101, m3), Some((at(56), Outcome::Delivered)));
}

/// A.7: 0x103 goes offline at 10 s (it dies, its records are deleted): 0x101's route to it
/// is marked `LOST_TOPOLOGY` with its deadline at 10 s + 32 s. At 38 s 0x101 also loses its
/// relay, so a message sent at 39 s waits; at exactly 42 s the lost record is removed and
/// the message fails at once with `TargetGone` (its own deadline would be 47 s).
///
/// libatapp removes the record at its lost deadline too but leaves the queued message to its
/// timeout (-211). Ours fails it at the removal (ARCHITECTURE §8, no silent loss).
#[test]
fn a7_upstream_topology_offline_pending_fail() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    let warm = send(&mut sim, 0x101, 0x103, 100, "warm-up-A7");
    sim.advance_to(at(10));
    sim.kill(NodeId(0x103));
    sim.registry_delete_topology(NodeId(0x103));
    sim.registry_delete_discovery(NodeId(0x103));
    assert_eq!(
        flags(&sim, 0x101, 0x103),
        Some(RouteFlags::ACTIVE | RouteFlags::LOST_TOPOLOGY | RouteFlags::READY)
    );
    let lost = sim
        .node(NodeId(0x101))
        .inspect()
        .route(NodeId(0x103))
        .and_then(|r| r.lost_deadline);
    assert_eq!(lost, Some(at(42)));

    sim.advance_to(at(38));
    sim.link_down(NodeId(0x101), NodeId(0x102));
    assert_eq!(
        flags(&sim, 0x101, 0x103),
        Some(RouteFlags::ACTIVE | RouteFlags::LOST_TOPOLOGY)
    );
    sim.advance_to(at(39));
    let queued = send(&mut sim, 0x101, 0x103, 100, "topology-offline-A7");
    sim.advance_to(at(42) - Duration::from_nanos(1));
    assert_eq!(sim.node(NodeId(0x101)).inspect().pending(NodeId(0x103)), 1);
    sim.advance_to(at(42));

    assert_eq!(sim.node(NodeId(0x101)).inspect().route(NodeId(0x103)), None);
    assert_eq!(
        outcome(&sim, 0x101, queued),
        Some((at(42), Outcome::Failed(FailReason::TargetGone)))
    );
    assert_eq!(
        outcome(&sim, 0x101, warm),
        Some((at(0), Outcome::Delivered))
    );
    assert_eq!(
        got(&sim, 0x103),
        [(at(0), 0x101, 0x102, 100, "warm-up-A7".into())]
    );
}

/// A.8: the relay is replaced: 0x101's and 0x103's topology records move them under the
/// spare relay 0x104; the next message goes through 0x104 (its `via`), the route's proxy
/// changed between the two sends.
///
/// libatapp stops 0x102 and starts 0x104 on the same address, so the children's automatic
/// re-dial lands on the new node. Ours is the registry-driven switch (a proxy scale-out
/// moving `upstream_id`): each child dials its new upstream at once.
#[test]
fn a8_upstream_topology_change_new_upstream() {
    let mut sim = cluster(GROUP_A, &LAYOUT);
    let before = send(&mut sim, 0x101, 0x103, 100, "via-old-upstream-A8");
    sim.run_until_idle();
    assert_eq!(proxy(&sim, 0x101, 0x103), Some(NodeId(0x102)));

    sim.advance_to(at(5));
    publish_topology(&mut sim, 0x101, 0x104);
    publish_topology(&mut sim, 0x103, 0x104);
    sim.run_until_idle();
    let after = send(&mut sim, 0x101, 0x103, 100, "via-new-upstream-A8");
    sim.run_until_idle();

    assert_eq!(proxy(&sim, 0x101, 0x103), Some(NodeId(0x104)));
    assert_eq!(
        got(&sim, 0x103),
        [
            (at(0), 0x101, 0x102, 100, "via-old-upstream-A8".into()),
            (at(5), 0x101, 0x104, 100, "via-new-upstream-A8".into()),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x101, before),
        Some((at(0), Outcome::Delivered))
    );
    assert_eq!(
        outcome(&sim, 0x101, after),
        Some((at(5), Outcome::Delivered))
    );
}
