//! libatapp scenario group E (libatapp-spec §9): discovery lifecycle, reconnect counting and
//! the one-timer-per-record rule.
//!
//! Layout: 0x501 and 0x502 under 0x503, direct links allowed. Start 2 s, max 16 s, lost
//! 32 s, 3 tries, jitter 0; message timeout 8 s. Variants as in libatapp's YAMLs: E.3 uses
//! "1b" (max 8 s, 8 tries), E.4 uses "4" (start 30 s, max 60 s, lost 8 s). Every check is
//! from 0x501's side: its direct route to 0x502.

mod common;

use common::{
    GROUP_E, Group, at, cluster, events_where, got, outcome, publish, publish_discovery,
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

const LAYOUT: [(u64, u64); 3] = [(0x503, 0), (0x501, 0x503), (0x502, 0x503)];

const PEER: NodeId = NodeId(0x502);

/// 0x501's route events about the peer from `since` on, with their time.
fn peer_events(sim: &Sim, since: Instant) -> Vec<(Instant, Event)> {
    events_where(sim, 0x501, |e| match e {
        Event::Route(route) => route.target() == PEER,
        _ => false,
    })
    .into_iter()
    .filter(|(t, _)| *t >= since)
    .collect()
}

fn scheduled(attempt: u32, at: Instant) -> Event {
    Event::Route(RouteEvent::ReconnectScheduled {
        target: PEER,
        attempt,
        at,
    })
}

fn removed(reason: FailReason) -> Event {
    Event::Route(RouteEvent::Removed {
        target: PEER,
        reason,
        endpoint: true,
    })
}

fn flags(sim: &Sim) -> Option<RouteFlags> {
    sim.node(NodeId(0x501))
        .inspect()
        .route(PEER)
        .map(|r| r.flags)
}

/// E.1: the peer restarts: at 10 s it dies and its discovery record is deleted — the route
/// loses `READY` and waits for discovery (a message sent at 11 s queues); at 13 s the new
/// incarnation publishes its record, which resumes the route at once: a direct dial, ready,
/// the queue flushed, the retry count back to 0.
#[test]
fn e1_discovery_delete_then_put_reconnect() {
    let mut sim = cluster(GROUP_E, &LAYOUT);
    send(&mut sim, 0x501, 0x502, 100, "before-E1");
    sim.advance_to(at(10));
    sim.kill(PEER);
    sim.registry_delete_discovery(PEER);
    assert_eq!(
        flags(&sim),
        Some(RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY)
    );
    sim.advance_to(at(11));
    let msg = send(&mut sim, 0x501, 0x502, 100, "after-restart-E1");

    sim.advance_to(at(13));
    sim.restart(PEER);
    publish_discovery(&mut sim, 0x502);
    sim.run_until_idle();

    // The log spans both incarnations of 0x502.
    assert_eq!(
        got(&sim, 0x502),
        [
            (at(0), 0x501, 0x501, 100, "before-E1".into()),
            (at(13), 0x501, 0x501, 100, "after-restart-E1".into()),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x501, msg),
        Some((at(13), Outcome::Delivered))
    );
    let route = sim.node(NodeId(0x501)).inspect().route(PEER);
    assert_eq!(
        route.as_ref().map(|r| (r.flags, r.proxy, r.retry_count)),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None, 0))
    );
}

/// E.2: the peer's discovery record is missing: the route waits for it, and every timer
/// firing counts one more attempt (scheduled at 1 s, 3 s, 7 s for 3 s, 7 s, 15 s); with its
/// 3 tries spent the record is removed at 15 s. The message sent at 1 s ended earlier at its
/// own deadline (9 s); the one sent at 8 s fails at the removal with `NoRoute`.
#[test]
fn e2_discovery_missing_reconnect_count_accumulate() {
    let mut sim = start(GROUP_E, &LAYOUT);
    publish(&mut sim, &[(0x503, 0), (0x501, 0x503)]);
    publish_topology(&mut sim, 0x502, 0x503);
    sim.advance_to(at(1));
    let m1 = send(&mut sim, 0x501, 0x502, 100, "never-E2-1");
    assert_eq!(
        flags(&sim),
        Some(RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY)
    );
    let mut counts = Vec::new();
    for s in [2, 4, 8] {
        sim.advance_to(at(s));
        counts.push(
            sim.node(NodeId(0x501))
                .inspect()
                .route(PEER)
                .map(|r| r.retry_count),
        );
    }
    assert_eq!(counts, [Some(1), Some(2), Some(3)]);
    let m2 = send(&mut sim, 0x501, 0x502, 100, "never-E2-2");
    sim.advance_to(at(20));

    assert_eq!(
        peer_events(&sim, at(0)),
        [
            (at(1), scheduled(1, at(3))),
            (
                at(1),
                Event::Route(RouteEvent::WaitingDiscovery { target: PEER })
            ),
            (at(3), scheduled(2, at(7))),
            (at(7), scheduled(3, at(15))),
            (at(15), removed(FailReason::NoRoute)),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x501, m1),
        Some((at(9), Outcome::Failed(FailReason::Timeout)))
    );
    assert_eq!(
        outcome(&sim, 0x501, m2),
        Some((at(15), Outcome::Failed(FailReason::NoRoute)))
    );
    assert_eq!(sim.node(NodeId(0x501)).inspect().route(PEER), None);
}

/// E.3 (config 1b: max 8 s, 8 tries): the peer is unreachable from 10 s; attempts are
/// scheduled 2 s, 4 s, 8 s, then 8 s apart (capped) until the 8 tries are spent and the
/// record is removed at 64 s.
#[test]
fn e3_reconnect_exponential_backoff() {
    let group = Group {
        max: Duration::from_secs(8),
        tries: 8,
        ..GROUP_E
    };
    let mut sim = cluster(group, &LAYOUT);
    send(&mut sim, 0x501, 0x502, 100, "warm-up-E3");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x501), PEER);
    sim.advance_to(at(80));

    let schedule: Vec<(u64, u32, u64)> = peer_events(&sim, at(10))
        .into_iter()
        .filter_map(|(t, e)| match e {
            Event::Route(RouteEvent::ReconnectScheduled { attempt, at, .. }) => Some((
                t.as_nanos() / 1_000_000_000,
                attempt,
                at.as_nanos() / 1_000_000_000,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        schedule,
        [
            (10, 1, 12),
            (12, 2, 16),
            (16, 3, 24),
            (24, 4, 32),
            (32, 5, 40),
            (40, 6, 48),
            (48, 7, 56),
            (56, 8, 64),
        ]
    );
    assert_eq!(
        peer_events(&sim, at(10)).last(),
        Some(&(at(64), removed(FailReason::NoRoute)))
    );
}

/// E.4 (config 4: start 30 s, max 60 s, lost 8 s): the link drops at 10 s and the record's
/// one timer is armed for the reconnect at 40 s; the topology delete at 10 s brings the lost
/// deadline (18 s), which is earlier, so it replaces the timer; at 18 s the record (unready,
/// lost) is removed and the message queued at 11 s fails with `TargetGone`.
#[test]
fn e4_reconnect_timer_replaced_by_earlier() {
    let group = Group {
        start: Duration::from_secs(30),
        max: Duration::from_secs(60),
        lost: Duration::from_secs(8),
        ..GROUP_E
    };
    let mut sim = cluster(group, &LAYOUT);
    send(&mut sim, 0x501, 0x502, 100, "warm-up-E4");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x501), PEER);
    let timer = |sim: &Sim| {
        sim.node(NodeId(0x501))
            .inspect()
            .route(PEER)
            .and_then(|r| r.timer)
    };
    assert_eq!(timer(&sim), Some(at(40)));
    sim.registry_delete_topology(PEER);
    assert_eq!(timer(&sim), Some(at(18)));
    sim.advance_to(at(11));
    let msg = send(&mut sim, 0x501, 0x502, 100, "queued-E4");
    sim.advance_to(at(30));

    assert_eq!(
        outcome(&sim, 0x501, msg),
        Some((at(18), Outcome::Failed(FailReason::TargetGone)))
    );
    assert_eq!(
        peer_events(&sim, at(10)).last(),
        Some(&(at(18), removed(FailReason::TargetGone)))
    );
    assert_eq!(sim.node(NodeId(0x501)).inspect().route(PEER), None);
}

/// E.5: the link drops at 10 s (reconnect timer at 12 s); the topology delete brings a lost
/// deadline of 42 s, which is later, so the timer stays at 12 s; when it fires the next
/// attempt re-arms it at 16 s — still before the lost deadline.
#[test]
fn e5_reconnect_timer_skip_if_later() {
    let mut sim = cluster(GROUP_E, &LAYOUT);
    send(&mut sim, 0x501, 0x502, 100, "warm-up-E5");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x501), PEER);
    sim.registry_delete_topology(PEER);
    let view = |sim: &Sim| {
        sim.node(NodeId(0x501))
            .inspect()
            .route(PEER)
            .map(|r| (r.timer, r.lost_deadline, r.next_reconnect))
    };
    assert_eq!(view(&sim), Some((Some(at(12)), Some(at(42)), Some(at(12)))));
    sim.advance_to(at(12));
    assert_eq!(view(&sim), Some((Some(at(16)), Some(at(42)), Some(at(16)))));
}
