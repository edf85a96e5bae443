//! libatapp scenario group D (libatapp-spec §9), D.5–D.7: lost topology — a target's
//! topology record deleted: the route keeps working until the lost-topology deadline, recovers
//! when the record returns before it, and is removed at the deadline — messages waiting on it
//! fail then — even when ready through a proxy, while a working direct link is kept until it
//! goes down. The layout and settings are in `common/group_d.rs`.
//!
//! libatapp removes records with `remove_topology_peer` on one node. Here the registry
//! publishes the deletion to every node.

mod common;

use common::{
    GROUP_D, at, cluster, events_where, got,
    group_d::{LAYOUT, TARGET, ev, target_events, view},
    outcome, publish_topology, send,
};
use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    node::Event,
    outcome::{FailReason, Outcome},
    time::Duration,
};

/// D.5: the target's topology record is deleted at 10 s (deadline 42 s) and put back at
/// 20 s: the route stays `READY` throughout, the lost flag and deadline are cleared, the
/// record outlives the old deadline, and messages before, during and after go through.
#[test]
fn d5_topology_lost_recover_before_timeout() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    send(&mut sim, 0x401, 0x404, 100, "before-D5");
    sim.advance_to(at(10));
    sim.registry_delete_topology(TARGET);
    assert_eq!(
        view(&sim).map(|(f, _)| f),
        Some(RouteFlags::ACTIVE | RouteFlags::READY | RouteFlags::LOST_TOPOLOGY)
    );
    sim.advance_to(at(15));
    send(&mut sim, 0x401, 0x404, 100, "while-lost-D5");
    sim.advance_to(at(20));
    publish_topology(&mut sim, 0x404, 0x402);
    let route = sim.node(NodeId(0x401)).inspect().route(TARGET);
    assert_eq!(
        route.as_ref().map(|r| (r.flags, r.lost_deadline)),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    sim.advance_to(at(60));
    send(&mut sim, 0x401, 0x404, 100, "after-old-deadline-D5");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x404),
        [
            (at(0), 0x401, 0x402, 100, "before-D5".into()),
            (at(15), 0x401, 0x402, 100, "while-lost-D5".into()),
            (at(60), 0x401, 0x402, 100, "after-old-deadline-D5".into()),
        ]
    );
    assert_eq!(
        target_events(&sim)
            .into_iter()
            .filter(|(_, e)| matches!(e, Event::Route(RouteEvent::Removed { .. })))
            .count(),
        0
    );
}

/// D.6: the target's topology record is deleted at 10 s and never returns. At 38 s 0x401
/// also loses its upstream link, so a message sent at 39 s waits; at exactly 42 s the lost
/// record is removed and the message fails at once with `TargetGone`.
///
/// libatapp removes the record at the deadline and the message ends with its timeout
/// (-211). Ours fails it at the removal.
#[test]
fn d6_topology_lost_timeout_cleanup() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    send(&mut sim, 0x401, 0x404, 100, "before-D6");
    sim.advance_to(at(10));
    sim.registry_delete_topology(TARGET);
    sim.advance_to(at(38));
    sim.link_down(NodeId(0x401), NodeId(0x402));
    sim.advance_to(at(39));
    let msg = send(&mut sim, 0x401, 0x404, 100, "lost-D6");
    sim.advance_to(at(42) - Duration::from_nanos(1));
    assert_eq!(
        view(&sim).map(|(f, _)| f),
        Some(RouteFlags::ACTIVE | RouteFlags::LOST_TOPOLOGY)
    );
    sim.advance_to(at(42));

    assert_eq!(view(&sim), None);
    assert_eq!(
        outcome(&sim, 0x401, msg),
        Some((at(42), Outcome::Failed(FailReason::TargetGone)))
    );
    assert_eq!(
        target_events(&sim).last(),
        Some(&(
            at(42),
            ev(RouteEvent::Removed {
                target: TARGET,
                reason: FailReason::TargetGone,
                endpoint: true,
            })
        ))
    );
}

/// D.7: a `READY` route whose topology record is lost. For a route through a proxy (to
/// 0x404) the deadline removes it even though it is ready, as in libatapp. For the working
/// **direct** link to the upstream 0x402 (its topology record deleted too) ours keeps the
/// route past the deadline and removes it only when the link goes down (50 s).
///
/// libatapp removes any ready handle at its lost deadline (spec §10 item 7, its D.7); the
/// correction (ARCHITECTURE §8) spares a working direct link.
#[test]
fn d7_topology_lost_ready_handle_force_remove() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    send(&mut sim, 0x401, 0x404, 100, "to-target-D7");
    send(&mut sim, 0x401, 0x402, 100, "to-upstream-D7");
    sim.advance_to(at(10));
    sim.registry_delete_topology(TARGET);
    sim.registry_delete_topology(NodeId(0x402));
    sim.advance_to(at(42));

    assert_eq!(view(&sim), None, "the proxied ready route is removed");
    let upstream = sim.node(NodeId(0x401)).inspect().route(NodeId(0x402));
    assert_eq!(
        upstream.as_ref().map(|r| (r.flags, r.proxy)),
        Some((
            RouteFlags::ACTIVE | RouteFlags::READY | RouteFlags::LOST_TOPOLOGY,
            None
        ))
    );
    sim.advance_to(at(43));
    let msg = send(&mut sim, 0x401, 0x402, 100, "past-deadline-D7");
    sim.run_until_idle();
    assert_eq!(
        outcome(&sim, 0x401, msg),
        Some((at(43), Outcome::Delivered))
    );
    assert_eq!(
        got(&sim, 0x402),
        [
            (at(0), 0x401, 0x401, 100, "to-upstream-D7".into()),
            (at(43), 0x401, 0x401, 100, "past-deadline-D7".into()),
        ]
    );

    sim.advance_to(at(50));
    sim.cut(NodeId(0x401), NodeId(0x402));
    assert_eq!(sim.node(NodeId(0x401)).inspect().route(NodeId(0x402)), None);
    assert_eq!(
        events_where(&sim, 0x401, |e| matches!(
            e,
            Event::Route(RouteEvent::Removed { target, .. }) if *target == NodeId(0x402)
        )),
        [(
            at(50),
            ev(RouteEvent::Removed {
                target: NodeId(0x402),
                reason: FailReason::TargetGone,
                endpoint: true,
            })
        )]
    );
}
