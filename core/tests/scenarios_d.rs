//! libatapp scenario group D (libatapp-spec §9): topology changes and lost topology.
//!
//! Layout: 0x401 under the old upstream 0x402, the target 0x404 under 0x402 too, and a new
//! upstream 0x403 (a root, idle until a test moves nodes under it). Start 2 s, max 16 s,
//! lost 32 s, 2 tries, no direct links, jitter 0; message timeout 8 s. Every check is from
//! 0x401's side: its route to 0x404.
//!
//! libatapp moves nodes by stopping the old upstream and starting the new one on the same
//! address, and by calling `update_topology_peer` / `remove_topology_peer` on one node. Here
//! the registry publishes the change to every node, as a proxy scale-out would.

mod common;

use common::{
    GROUP_D, at, at_ms, cluster, events_where, got, outcome, publish, publish_discovery,
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

/// Target (0x404) before the sender (0x401), so registry fan-outs reach the target first.
const LAYOUT: [(u64, u64); 4] = [(0x402, 0), (0x403, 0), (0x404, 0x402), (0x401, 0x402)];

const TARGET: NodeId = NodeId(0x404);

fn view(sim: &Sim) -> Option<(RouteFlags, Option<NodeId>)> {
    sim.node(NodeId(0x401))
        .route(TARGET)
        .map(|r| (r.flags, r.proxy))
}

/// 0x401's route events about the target, with their time.
fn target_events(sim: &Sim) -> Vec<(Instant, Event)> {
    events_where(sim, 0x401, |e| match e {
        Event::Route(
            RouteEvent::Ready { target, .. }
            | RouteEvent::Unready { target }
            | RouteEvent::Removed { target, .. }
            | RouteEvent::ReconnectScheduled { target, .. }
            | RouteEvent::WaitingDiscovery { target }
            | RouteEvent::TopologyLost { target, .. },
        ) => *target == TARGET,
        _ => false,
    })
}

fn ev(kind: RouteEvent) -> Event {
    Event::Route(kind)
}

/// D.1: both nodes move under 0x403, which 0x401 has no link to yet (its dial takes 10 ms;
/// the target's 5 ms). A message sent at the switch waits and goes out through the new
/// upstream the instant 0x401's link to it is up.
#[test]
fn d1_topology_change_new_upstream_not_connected() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    let old = send(&mut sim, 0x401, 0x404, 100, "via-old-upstream-D1");
    sim.run_until_idle();
    sim.set_connect_latency(NodeId(0x401), NodeId(0x403), Duration::from_millis(10));
    sim.set_connect_latency(NodeId(0x404), NodeId(0x403), Duration::from_millis(5));

    sim.advance_to(at(5));
    publish_topology(&mut sim, 0x404, 0x403);
    publish_topology(&mut sim, 0x401, 0x403);
    let new = send(&mut sim, 0x401, 0x404, 100, "via-new-upstream-D1");
    sim.run_until_idle();
    assert_eq!(sim.node(NodeId(0x401)).pending(TARGET), 1);
    assert_eq!(view(&sim).map(|(f, _)| f), Some(RouteFlags::ACTIVE));

    sim.advance_to(at_ms(5_010));
    assert_eq!(
        got(&sim, 0x404),
        [
            (at(0), 0x401, 0x402, 100, "via-old-upstream-D1".into()),
            (
                at_ms(5_010),
                0x401,
                0x403,
                100,
                "via-new-upstream-D1".into()
            ),
        ]
    );
    assert_eq!(outcome(&sim, 0x401, old), Some((at(0), Outcome::Delivered)));
    assert_eq!(
        outcome(&sim, 0x401, new),
        Some((at_ms(5_010), Outcome::Delivered))
    );
    assert_eq!(
        view(&sim),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x403))))
    );
}

/// D.2: 0x401 moves under 0x403 first (5 s) and is linked to it; when the target follows
/// (6 s) the route's proxy, 0x403, is already connected and on the target's new chain: the
/// switch is seamless — no route event for the target, `READY` throughout — and the next
/// message goes through 0x403.
#[test]
fn d2_topology_change_new_upstream_already_connected() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    send(&mut sim, 0x401, 0x404, 100, "via-old-upstream-D2");
    sim.advance_to(at(5));
    publish_topology(&mut sim, 0x401, 0x403);
    sim.run_until_idle();
    assert_eq!(sim.open_links(NodeId(0x401), NodeId(0x403)), 1);
    assert_eq!(
        view(&sim),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x403))))
    );

    sim.advance_to(at(6));
    publish_topology(&mut sim, 0x404, 0x403);
    sim.run_until_idle();
    let msg = send(&mut sim, 0x401, 0x404, 100, "seamless-D2");
    sim.run_until_idle();

    let at_six: Vec<_> = target_events(&sim)
        .into_iter()
        .filter(|(t, _)| *t == at(6))
        .collect();
    assert_eq!(at_six, []);
    assert_eq!(
        view(&sim),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x403))))
    );
    assert_eq!(
        got(&sim, 0x404).last(),
        Some(&(at(6), 0x401, 0x403, 100, "seamless-D2".into()))
    );
    assert_eq!(outcome(&sim, 0x401, msg), Some((at(6), Outcome::Delivered)));
}

/// D.3: both nodes move under 0x403 while its discovery record is missing: nobody can dial
/// it, a message sent at the switch waits; the record arrives at 6 s (before the route's
/// second attempt at 7 s would give it up) and the queue flushes through 0x403 at once.
#[test]
fn d3_topology_change_discovery_missing_then_arrive() {
    let mut sim = start(GROUP_D, &LAYOUT);
    publish(&mut sim, &[(0x402, 0), (0x404, 0x402), (0x401, 0x402)]);
    publish_topology(&mut sim, 0x403, 0);
    sim.run_until_idle();
    send(&mut sim, 0x401, 0x404, 100, "via-old-upstream-D3");

    sim.advance_to(at(5));
    publish_topology(&mut sim, 0x404, 0x403);
    publish_topology(&mut sim, 0x401, 0x403);
    let msg = send(&mut sim, 0x401, 0x404, 100, "after-discovery-D3");
    sim.advance_to(at(6));
    assert_eq!(sim.node(NodeId(0x401)).pending(TARGET), 1);
    assert_eq!(sim.open_links(NodeId(0x401), NodeId(0x403)), 0);

    publish_discovery(&mut sim, 0x403);
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x404).last(),
        Some(&(at(6), 0x401, 0x403, 100, "after-discovery-D3".into()))
    );
    assert_eq!(outcome(&sim, 0x401, msg), Some((at(6), Outcome::Delivered)));
    assert_eq!(
        view(&sim),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x403))))
    );
}

/// D.4: the new upstream's discovery record never arrives. The route to the target is
/// unready from the switch (5 s), schedules its attempts (7 s, 11 s) and is removed when its
/// 2 tries are spent, at 11 s, failing both queued messages at once with `NoRoute`.
///
/// libatapp removes the record too but leaves its messages to their timeout (-211).
#[test]
fn d4_topology_change_discovery_timeout_cleanup() {
    let mut sim = start(GROUP_D, &LAYOUT);
    publish(&mut sim, &[(0x402, 0), (0x404, 0x402), (0x401, 0x402)]);
    publish_topology(&mut sim, 0x403, 0);
    sim.run_until_idle();
    send(&mut sim, 0x401, 0x404, 100, "via-old-upstream-D4");

    sim.advance_to(at(5));
    publish_topology(&mut sim, 0x404, 0x403);
    publish_topology(&mut sim, 0x401, 0x403);
    let m1 = send(&mut sim, 0x401, 0x404, 100, "never-D4-1");
    sim.advance_to(at(7));
    let m2 = send(&mut sim, 0x401, 0x404, 100, "never-D4-2");
    sim.advance_to(at(20));

    for msg in [m1, m2] {
        assert_eq!(
            outcome(&sim, 0x401, msg),
            Some((at(11), Outcome::Failed(FailReason::NoRoute)))
        );
    }
    assert_eq!(
        target_events(&sim)
            .into_iter()
            .filter(|(t, _)| *t >= at(5))
            .collect::<Vec<_>>(),
        [
            (at(5), ev(RouteEvent::Unready { target: TARGET })),
            (
                at(5),
                ev(RouteEvent::ReconnectScheduled {
                    target: TARGET,
                    attempt: 1,
                    at: at(7),
                })
            ),
            (
                at(7),
                ev(RouteEvent::ReconnectScheduled {
                    target: TARGET,
                    attempt: 2,
                    at: at(11),
                })
            ),
            (
                at(11),
                ev(RouteEvent::Removed {
                    target: TARGET,
                    reason: FailReason::NoRoute,
                    endpoint: true,
                })
            ),
        ]
    );
    assert_eq!(view(&sim), None);
    assert_eq!(sim.node(NodeId(0x401)).pending(TARGET), 0);
}

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
    let route = sim.node(NodeId(0x401)).route(TARGET);
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
    let upstream = sim.node(NodeId(0x401)).route(NodeId(0x402));
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
    assert_eq!(sim.node(NodeId(0x401)).route(NodeId(0x402)), None);
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

/// D.8: a topology put for the target with the same upstream (a new revision, same content)
/// changes nothing: the route view is identical, no route event, and the next message goes
/// the same way.
#[test]
fn d8_topology_same_upstream_noop() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    send(&mut sim, 0x401, 0x404, 100, "before-D8");
    sim.advance_to(at(5));
    let before = sim.node(NodeId(0x401)).route(TARGET);
    let events_before = target_events(&sim).len();
    publish_topology(&mut sim, 0x404, 0x402);
    sim.run_until_idle();

    assert_eq!(sim.node(NodeId(0x401)).route(TARGET), before);
    assert_eq!(target_events(&sim).len(), events_before);
    let msg = send(&mut sim, 0x401, 0x404, 100, "after-D8");
    sim.run_until_idle();
    assert_eq!(
        got(&sim, 0x404).last(),
        Some(&(at(5), 0x401, 0x402, 100, "after-D8".into()))
    );
    assert_eq!(outcome(&sim, 0x401, msg), Some((at(5), Outcome::Delivered)));
}

/// D.9: 0x403 sits under 0x402 (a second-level proxy) and the target moves under it: the
/// target's new chain 0x404 → 0x403 → 0x402 still contains 0x401's proxy, 0x402, so the
/// route keeps it — no route event, still `READY` — and the next message travels
/// 0x401 → 0x402 → 0x403 → 0x404 (`via` is the last relay).
///
/// The path assertion also checks that the target dropped its link to its old upstream when
/// it moved: libatapp removes the old upstream's record on a self switch and disconnects a
/// passive proxy nothing routes through any more (libatapp-spec §5, removal cascade), so
/// 0x402 can only reach 0x404 through 0x403. A node that kept the old link would let 0x402
/// keep delivering over it (`via` 0x402): traffic would not follow the topology change.
#[test]
fn d9_topology_proxy_in_new_upstream_path() {
    let layout = [(0x402, 0), (0x403, 0x402), (0x404, 0x402), (0x401, 0x402)];
    let mut sim = cluster(GROUP_D, &layout);
    send(&mut sim, 0x401, 0x404, 100, "before-D9");
    sim.advance_to(at(5));
    let events_before = target_events(&sim).len();
    publish_topology(&mut sim, 0x404, 0x403);
    sim.run_until_idle();
    assert_eq!(target_events(&sim).len(), events_before);
    assert_eq!(
        view(&sim),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x402))))
    );

    let msg = send(&mut sim, 0x401, 0x404, 100, "through-two-relays-D9");
    sim.run_until_idle();
    assert_eq!(
        got(&sim, 0x404),
        [
            (at(0), 0x401, 0x402, 100, "before-D9".into()),
            (at(5), 0x401, 0x403, 100, "through-two-relays-D9".into()),
        ]
    );
    assert_eq!(outcome(&sim, 0x401, msg), Some((at(5), Outcome::Delivered)));
}
