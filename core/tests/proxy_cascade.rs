//! libatapp scenario group F (libatapp-spec §9): the proxy cascade.
//!
//! Layout: 0x601 → proxy 0x602 ← 0x603 (both leaves under the proxy). Start 2 s, max 16 s,
//! lost 32 s, 3 tries, no direct links, jitter 0; message timeout 8 s. Every check is from
//! 0x601's side: its route to 0x603 (dependent) through its record for 0x602 (the proxy).

mod common;

use common::{GROUP_F, at, cluster, cluster_recording, events_where, got, outcome, send};
use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    node::Event,
    outcome::{FailReason, Outcome},
    sim::Sim,
    time::{Duration, Instant},
};

const LAYOUT: [(u64, u64); 3] = [(0x602, 0), (0x601, 0x602), (0x603, 0x602)];

const PROXY: NodeId = NodeId(0x602);
const DEPENDENT: NodeId = NodeId(0x603);

/// 0x601's ready / unready / removed events at exactly `t`.
fn cascade_at(sim: &Sim, t: Instant) -> Vec<Event> {
    events_where(sim, 0x601, |e| {
        matches!(
            e,
            Event::Route(
                RouteEvent::Ready { .. } | RouteEvent::Unready { .. } | RouteEvent::Removed { .. }
            )
        )
    })
    .into_iter()
    .filter(|(at, _)| *at == t)
    .map(|(_, e)| e)
    .collect()
}

fn flags(sim: &Sim, target: NodeId) -> Option<RouteFlags> {
    sim.node(NodeId(0x601))
        .inspect()
        .route(target)
        .map(|r| r.flags)
}

/// F.1: the link to the proxy drops at 10 s and stays down until 13 s; a message sent at
/// 10 s waits; the upstream re-dial at 12 s fails, the one at 16 s succeeds, the proxy and
/// its dependent become ready and the queue flushes — before the message's deadline (18 s).
#[test]
fn f1_send_fail_reconnect_then_success() {
    let mut sim = cluster(GROUP_F, &LAYOUT);
    send(&mut sim, 0x601, 0x603, 100, "warm-up-F1");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x601), PROXY);
    let msg = send(&mut sim, 0x601, 0x603, 100, "retried-F1");
    sim.advance_to(at(13));
    sim.link_up(NodeId(0x601), PROXY);
    sim.advance_to(at(16) - Duration::from_nanos(1));
    assert_eq!(sim.node(NodeId(0x601)).inspect().pending(DEPENDENT), 1);
    sim.advance_to(at(16));

    assert_eq!(
        got(&sim, 0x603),
        [
            (at(0), 0x601, 0x602, 100, "warm-up-F1".into()),
            (at(16), 0x601, 0x602, 100, "retried-F1".into()),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x601, msg),
        Some((at(16), Outcome::Delivered))
    );
    assert_eq!(
        flags(&sim, DEPENDENT),
        Some(RouteFlags::ACTIVE | RouteFlags::READY)
    );
}

/// F.2: when the proxy's record becomes ready (the upstream link is back at 12 s) the
/// readiness cascades to the record routed through it, in that order, and the dependent's
/// queue flushes at the same instant.
#[test]
fn f2_proxy_ready_cascade_downstream() {
    let mut sim = cluster(GROUP_F, &LAYOUT);
    send(&mut sim, 0x601, 0x603, 100, "warm-up-F2");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x601), PROXY);
    sim.link_up(NodeId(0x601), PROXY);
    let msg = send(&mut sim, 0x601, 0x603, 100, "flushed-by-cascade-F2");
    sim.advance_to(at(12));

    assert_eq!(
        cascade_at(&sim, at(12)),
        [
            Event::Route(RouteEvent::Ready {
                target: PROXY,
                via: None
            }),
            Event::Route(RouteEvent::Ready {
                target: DEPENDENT,
                via: Some(PROXY)
            }),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x601, msg),
        Some((at(12), Outcome::Delivered))
    );
    assert_eq!(
        got(&sim, 0x603).last(),
        Some(&(at(12), 0x601, 0x602, 100, "flushed-by-cascade-F2".into()))
    );
}

/// F.3: when the link to the proxy drops (10 s) the proxy's record loses `READY` and so, in
/// the same instant, does every record routed through it; new messages queue.
#[test]
fn f3_proxy_unready_cascade_downstream() {
    let mut sim = cluster(GROUP_F, &LAYOUT);
    send(&mut sim, 0x601, 0x603, 100, "warm-up-F3");
    assert_eq!(flags(&sim, PROXY), Some(RouteFlags::READY));
    sim.advance_to(at(10));
    sim.cut(NodeId(0x601), PROXY);

    assert_eq!(
        cascade_at(&sim, at(10)),
        [
            Event::Route(RouteEvent::Unready { target: PROXY }),
            Event::Route(RouteEvent::Unready { target: DEPENDENT }),
        ]
    );
    assert_eq!(flags(&sim, PROXY), Some(RouteFlags::EMPTY));
    assert_eq!(flags(&sim, DEPENDENT), Some(RouteFlags::ACTIVE));
    send(&mut sim, 0x601, 0x603, 100, "queued-F3");
    assert_eq!(sim.node(NodeId(0x601)).inspect().pending(DEPENDENT), 1);
}

/// F.4: the proxy stays unreachable from 10 s; its record spends its 3 tries (12 s, 16 s,
/// 24 s) and is removed at 24 s, and the removal takes the dependent's record with it in
/// the same instant, failing its queue at once with `NoRoute`.
///
/// libatapp closes the dependents' handles with the proxy (`on_close_connection`) and their
/// messages wait for their timeout; ours fails them at the removal.
#[test]
fn f4_proxy_removed_downstream_closed() {
    let mut sim = cluster(GROUP_F, &LAYOUT);
    send(&mut sim, 0x601, 0x603, 100, "warm-up-F4");
    sim.advance_to(at(10));
    sim.link_down(NodeId(0x601), PROXY);
    sim.advance_to(at(20));
    let msg = send(&mut sim, 0x601, 0x603, 100, "dropped-with-proxy-F4");
    sim.advance_to(at(30));

    assert_eq!(
        cascade_at(&sim, at(24)),
        [
            Event::Route(RouteEvent::Removed {
                target: PROXY,
                reason: FailReason::NoRoute,
                endpoint: false
            }),
            Event::Route(RouteEvent::Removed {
                target: DEPENDENT,
                reason: FailReason::NoRoute,
                endpoint: true
            }),
        ]
    );
    assert_eq!(
        outcome(&sim, 0x601, msg),
        Some((at(24), Outcome::Failed(FailReason::NoRoute)))
    );
    assert_eq!(sim.node(NodeId(0x601)).inspect().route(PROXY), None);
    assert_eq!(sim.node(NodeId(0x601)).inspect().route(DEPENDENT), None);
}

/// F.5: the dependent goes first — its topology record was deleted at 10 s and, with the
/// proxy link down since 36 s, it is removed at its lost deadline (42 s), failing its queue
/// with `TargetGone` — and the proxy's record, left with nothing routed through it, follows
/// in the same instant. No double removal, exactly one outcome, nothing left behind.
///
/// libatapp guards this with weak references and copied id sets; ours resolves ids through
/// the record map on every use.
#[test]
fn f5_proxy_removed_downstream_safe_cleanup() {
    let mut sim = cluster_recording(GROUP_F, &LAYOUT);
    send(&mut sim, 0x601, 0x603, 100, "warm-up-F5");
    sim.advance_to(at(10));
    sim.registry_delete_topology(DEPENDENT);
    sim.advance_to(at(36));
    sim.link_down(NodeId(0x601), PROXY);
    let msg = send(&mut sim, 0x601, 0x603, 100, "queued-F5");
    sim.advance_to(at(60));

    assert_eq!(
        cascade_at(&sim, at(42)),
        [
            Event::Route(RouteEvent::Removed {
                target: DEPENDENT,
                reason: FailReason::TargetGone,
                endpoint: true
            }),
            Event::Route(RouteEvent::Removed {
                target: PROXY,
                reason: FailReason::NoRoute,
                endpoint: false
            }),
        ]
    );
    assert_eq!(
        sim.outcomes(NodeId(0x601))
            .iter()
            .filter(|o| o.msg == msg)
            .map(|o| (o.at, o.outcome))
            .collect::<Vec<_>>(),
        [(at(42), Outcome::Failed(FailReason::TargetGone))]
    );
    assert_eq!(sim.node(NodeId(0x601)).inspect().route(PROXY), None);
    assert_eq!(sim.node(NodeId(0x601)).inspect().route(DEPENDENT), None);
    // Recorded, not panicked: no node-contract or ledger breach (no double removal, no
    // second outcome), and the ledger saw both tagged messages end exactly as above.
    assert_eq!(sim.check_invariants(), 0);
    assert_eq!(sim.violations(), [] as [String; 0]);
    let totals = sim.ledger_totals();
    assert_eq!(
        (totals.sent, totals.delivered, totals.acknowledged),
        (2, 1, 1)
    );
    assert_eq!(
        totals.failed.into_iter().collect::<Vec<_>>(),
        [("target_gone".to_owned(), 1)]
    );
}
