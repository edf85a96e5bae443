//! libatapp scenario group D (libatapp-spec §9), D.1–D.4, D.8, D.9: a target's route when
//! the topology moves it (and the sender) under another upstream — the new upstream not yet
//! linked, already linked, its discovery record late or never arriving, a put that changes
//! nothing, and a new upstream that is itself behind a proxy. The layout and settings are in
//! `common/group_d.rs`.
//!
//! libatapp moves nodes by stopping the old upstream and starting the new one on the same
//! address, and by calling `update_topology_peer` / `remove_topology_peer` on one node. Here
//! the registry publishes the change to every node, as a proxy scale-out would.

mod common;

use common::{
    GROUP_D, at, at_ms, cluster, got,
    group_d::{LAYOUT, TARGET, ev, target_events, view},
    outcome, publish, publish_discovery, publish_topology, send, start,
};
use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    outcome::{FailReason, Outcome},
    time::Duration,
};

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
    assert_eq!(sim.node(NodeId(0x401)).inspect().pending(TARGET), 1);
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
    assert_eq!(sim.node(NodeId(0x401)).inspect().pending(TARGET), 1);
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
    assert_eq!(sim.node(NodeId(0x401)).inspect().pending(TARGET), 0);
}

/// D.8: a topology put for the target with the same upstream (a new revision, same content)
/// changes nothing: the route view is identical, no route event, and the next message goes
/// the same way.
#[test]
fn d8_topology_same_upstream_noop() {
    let mut sim = cluster(GROUP_D, &LAYOUT);
    send(&mut sim, 0x401, 0x404, 100, "before-D8");
    sim.advance_to(at(5));
    let before = sim.node(NodeId(0x401)).inspect().route(TARGET);
    let events_before = target_events(&sim).len();
    publish_topology(&mut sim, 0x404, 0x402);
    sim.run_until_idle();

    assert_eq!(sim.node(NodeId(0x401)).inspect().route(TARGET), before);
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
