//! libatapp scenario group B (libatapp-spec §9): direct connections between peers.
//!
//! Layout: 0x201 and 0x202 under 0x203. Start 2 s, max 16 s, lost 32 s, 3 tries, direct
//! links allowed (`allow_direct_connection`), jitter 0; message timeout 8 s. No latency
//! unless a test sets one, so every assertion is at an exact instant.
//!
//! A direct link is opened by the first send to the peer (libatapp opens it when the
//! endpoint is created, `mutable_endpoint`); `via` is libatapp's `direct_source_id`.

mod common;

use common::{
    GROUP_B, at, at_ms, cluster, events_where, got, outcome, publish, publish_discovery,
    publish_topology, send, start,
};
use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    node::Event,
    outcome::{FailReason, Outcome},
    sim::Sim,
    time::{Duration, Instant},
};

const LAYOUT: [(u64, u64); 3] = [(0x203, 0), (0x201, 0x203), (0x202, 0x203)];

fn route(sim: &Sim, node: u64, target: u64) -> Option<(RouteFlags, Option<NodeId>)> {
    sim.node(NodeId(node))
        .inspect()
        .route(NodeId(target))
        .map(|r| (r.flags, r.proxy))
}

/// Reconnect scheduling and removal events of `node`'s record for `target`, with their time.
fn retry_events(sim: &Sim, node: u64, target: u64) -> Vec<(Instant, Event)> {
    let target = NodeId(target);
    events_where(sim, node, |e| {
        matches!(e, Event::Route(RouteEvent::ReconnectScheduled { target: t, .. }) if *t == target)
            || matches!(e, Event::Route(RouteEvent::Removed { target: t, .. }) if *t == target)
    })
}

fn scheduled(target: u64, attempt: u32, at: Instant) -> Event {
    Event::Route(RouteEvent::ReconnectScheduled {
        target: NodeId(target),
        attempt,
        at,
    })
}

/// B.1: the peer's discovery is known; the first send dials it directly and the message
/// arrives over the direct link (`via` = the sender, not the upstream).
#[test]
fn b1_direct_discovery_ready_connect_send() {
    let mut sim = cluster(GROUP_B, &LAYOUT);
    let msg = send(&mut sim, 0x201, 0x202, 100, "direct-connect-B1");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x202),
        [(at(0), 0x201, 0x201, 100, "direct-connect-B1".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(0), Outcome::Delivered)));
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x202)), 1);
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    assert_eq!(got(&sim, 0x203), []);
}

/// B.2: the peer's records arrive at 1 s; a send right then waits in the queue while the
/// direct dial is in flight (5 ms connect latency) and is flushed the instant it is up.
///
/// libatapp can only check "still pending" while its real sockets have not connected yet
/// (and skips the check on a loaded machine); the simulator makes the window exact.
#[test]
fn b2_direct_discovery_missing_wait_then_send() {
    let mut sim = start(GROUP_B, &LAYOUT);
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    sim.set_connect_latency(NodeId(0x201), NodeId(0x202), Duration::from_millis(5));
    sim.advance_to(at(1));
    assert_eq!(sim.node(NodeId(0x201)).inspect().route(NodeId(0x202)), None);

    publish_topology(&mut sim, 0x202, 0x203);
    publish_discovery(&mut sim, 0x202);
    let msg = send(&mut sim, 0x201, 0x202, 100, "pending-before-connect-B2");
    sim.run_until_idle();
    assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 1);
    assert_eq!(got(&sim, 0x202), []);
    assert_eq!(route(&sim, 0x201, 0x202), Some((RouteFlags::ACTIVE, None)));

    sim.advance_to(at_ms(1_005));
    assert_eq!(
        got(&sim, 0x202),
        [(
            at_ms(1_005),
            0x201,
            0x201,
            100,
            "pending-before-connect-B2".into()
        )]
    );
    assert_eq!(
        outcome(&sim, 0x201, msg),
        Some((at_ms(1_005), Outcome::Delivered))
    );
    assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 0);
}

/// B.3: over an established direct link, messages go out at once and in order; the reverse
/// direction reuses the same link (0x202 routes over the link 0x201 dialled — no second
/// link).
#[test]
fn b3_direct_connected_send_success() {
    let mut sim = cluster(GROUP_B, &LAYOUT);
    send(&mut sim, 0x201, 0x202, 200, "warm-up-B3");
    sim.run_until_idle();
    sim.advance_to(at(1));

    let m1 = send(&mut sim, 0x201, 0x202, 200, "direct-msg1-B3");
    let m2 = send(&mut sim, 0x201, 0x202, 200, "direct-msg2-B3");
    let m3 = send(&mut sim, 0x202, 0x201, 201, "reverse-B3");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x202),
        [
            (at(0), 0x201, 0x201, 200, "warm-up-B3".into()),
            (at(1), 0x201, 0x201, 200, "direct-msg1-B3".into()),
            (at(1), 0x201, 0x201, 200, "direct-msg2-B3".into()),
        ]
    );
    assert_eq!(
        got(&sim, 0x201),
        [(at(1), 0x202, 0x202, 201, "reverse-B3".into())]
    );
    for (node, msg) in [(0x201, m1), (0x201, m2), (0x202, m3)] {
        assert_eq!(outcome(&sim, node, msg), Some((at(1), Outcome::Delivered)));
    }
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x202)), 1);
    assert_eq!(got(&sim, 0x203), []);
}

/// B.4: the direct link drops at 10 s; the route is unready at once, a message sent then
/// waits, the reconnect timer re-dials after `start` = 2 s and the queue flushes at exactly
/// 12 s over the new direct link; later sends go straight out.
///
/// libatapp flips the handle with debug hooks; its dropped link would also have stayed
/// `READY` (spec §10 item 3) — ours clears it at once and arms the reconnect.
#[test]
fn b4_direct_reconnect_success_after_failure() {
    let mut sim = cluster(GROUP_B, &LAYOUT);
    let m1 = send(&mut sim, 0x201, 0x202, 100, "before-disconnect-B4");
    sim.advance_to(at(10));
    common::cut_past_the_probes(&mut sim, 0x201, 0x202);
    sim.run_until_idle();
    assert_eq!(route(&sim, 0x201, 0x202), Some((RouteFlags::ACTIVE, None)));

    let m2 = send(&mut sim, 0x201, 0x202, 100, "during-reconnect-B4");
    sim.run_until_idle();
    assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 1);

    sim.advance_to(at(12));
    let m3 = send(&mut sim, 0x201, 0x202, 100, "after-reconnect-B4");
    assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 0);
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x202),
        [
            (at(0), 0x201, 0x201, 100, "before-disconnect-B4".into()),
            (at(12), 0x201, 0x201, 100, "during-reconnect-B4".into()),
            (at(12), 0x201, 0x201, 100, "after-reconnect-B4".into()),
        ]
    );
    assert_eq!(outcome(&sim, 0x201, m1), Some((at(0), Outcome::Delivered)));
    assert_eq!(outcome(&sim, 0x201, m2), Some((at(12), Outcome::Delivered)));
    assert_eq!(outcome(&sim, 0x201, m3), Some((at(12), Outcome::Delivered)));
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    let retry = sim
        .node(NodeId(0x201))
        .inspect()
        .route(NodeId(0x202))
        .map(|r| r.retry_count);
    assert_eq!(retry, Some(0), "a ready route resets its retry count");
}

/// B.5: the peer stays unreachable from 10 s: attempts are scheduled 2 s, 4 s, 8 s apart
/// (each interval double the previous) and the record is removed when the third attempt
/// fails to make it ready, at 24 s.
///
/// libatapp measures the intervals with 50 ms steps and only checks "second > first"; its
/// timer path never re-dials (spec §10 item 3) and it removes the handle on the timer
/// firing after the third increment. Ours re-dials at each attempt and reports the exact
/// schedule as events.
#[test]
fn b5_direct_reconnect_retry_backoff() {
    let mut sim = cluster(GROUP_B, &LAYOUT);
    send(&mut sim, 0x201, 0x202, 100, "warm-up-B5");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x201), NodeId(0x202));
    sim.advance_to(at(30));

    // The first dial (at 0 s) was attempt 1 of its own schedule, reset when the link came up.
    assert_eq!(
        retry_events(&sim, 0x201, 0x202)[0],
        (at(0), scheduled(0x202, 1, at(2)))
    );
    assert_eq!(
        retry_events(&sim, 0x201, 0x202)[1..],
        [
            (at(10), scheduled(0x202, 1, at(12))),
            (at(12), scheduled(0x202, 2, at(16))),
            (at(16), scheduled(0x202, 3, at(24))),
            (
                at(24),
                Event::Route(RouteEvent::Removed {
                    target: NodeId(0x202),
                    reason: FailReason::NoRoute,
                    endpoint: true,
                })
            ),
        ]
    );
    assert_eq!(sim.node(NodeId(0x201)).inspect().route(NodeId(0x202)), None);
}

/// B.6: the peer is unreachable and its topology record deleted; a message queued at 20 s
/// fails the moment the record is removed for exhausted retries (24 s) — before the lost
/// deadline (42 s) and before its own deadline (28 s).
///
/// libatapp removes the handle but leaves the message to time out (-211 at its deadline)
/// and collects the endpoint 60 s later. Ours fails the queue at the removal with the
/// reason, `NoRoute` (ARCHITECTURE §8, no silent loss).
#[test]
fn b6_direct_retry_exceed_limit_fail() {
    let mut sim = cluster(GROUP_B, &LAYOUT);
    send(&mut sim, 0x201, 0x202, 100, "warm-up-B6");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x201), NodeId(0x202));
    sim.registry_delete_topology(NodeId(0x202));
    sim.run_until_idle();
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::LOST_TOPOLOGY, None))
    );

    sim.advance_to(at(20));
    let msg = send(&mut sim, 0x201, 0x202, 100, "will-fail-B6");
    sim.advance_to(at(24) - Duration::from_nanos(1));
    assert_eq!(outcome(&sim, 0x201, msg), None);
    sim.advance_to(at(24));

    assert_eq!(
        outcome(&sim, 0x201, msg),
        Some((at(24), Outcome::Failed(FailReason::NoRoute)))
    );
    assert_eq!(sim.node(NodeId(0x201)).inspect().route(NodeId(0x202)), None);
    assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 0);
    assert_eq!(
        got(&sim, 0x202),
        [(at(0), 0x201, 0x201, 100, "warm-up-B6".into())]
    );
}

/// B.7: with both paths possible (shared upstream 0x203 connected, direct allowed) the
/// message goes over the direct link: `via` is 0x201, the route has no proxy, and the
/// upstream sees nothing.
#[test]
fn b7_direct_prefer_direct_over_upstream() {
    let mut sim = cluster(GROUP_B, &LAYOUT);
    assert_eq!(sim.open_links(NodeId(0x201), NodeId(0x203)), 1);
    assert_eq!(sim.open_links(NodeId(0x202), NodeId(0x203)), 1);
    let msg = send(&mut sim, 0x201, 0x202, 100, "prefer-direct-B7");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x202),
        [(at(0), 0x201, 0x201, 100, "prefer-direct-B7".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(0), Outcome::Delivered)));
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    assert_eq!(got(&sim, 0x203), []);
    assert_eq!(
        events_where(&sim, 0x203, |e| matches!(e, Event::ForwardDropped { .. })),
        []
    );
}

/// B.8: the peer's topology is known but not its address: the send waits with
/// `WAIT_DISCOVERY` (no relaying through the upstream meanwhile); the discovery record at
/// 2 s resumes the route, the direct dial succeeds and the queue flushes over it.
///
/// libatapp's test only sends after the discovery arrived; the waiting itself is its
/// `kWaitForDiscoveryToConnect` path (seed 000, case 1), exercised here end to end.
#[test]
fn b8_direct_prefer_direct_wait_discovery() {
    let mut sim = start(GROUP_B, &LAYOUT);
    publish(&mut sim, &[(0x203, 0), (0x201, 0x203)]);
    publish_topology(&mut sim, 0x202, 0x203);
    sim.run_until_idle();
    sim.advance_to(at(1));

    let msg = send(&mut sim, 0x201, 0x202, 100, "wait-discovery-B8");
    sim.run_until_idle();
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY, None))
    );
    assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 1);

    sim.advance_to(at(2));
    publish_discovery(&mut sim, 0x202);
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x202),
        [(at(2), 0x201, 0x201, 100, "wait-discovery-B8".into())]
    );
    assert_eq!(outcome(&sim, 0x201, msg), Some((at(2), Outcome::Delivered)));
    assert_eq!(
        route(&sim, 0x201, 0x202),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    assert_eq!(got(&sim, 0x203), []);
}
