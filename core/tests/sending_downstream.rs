//! libatapp scenario group C (libatapp-spec §9): sending to a downstream node.
//!
//! Layout: 0x301 ← child 0x302 (0x302's upstream is 0x301; the child dials the parent).
//! Start 2 s, max 16 s, lost 32 s, 2 tries, no direct links, jitter 0; message timeout 8 s.

mod common;

use common::{
    GROUP_C, at, cluster, config, events_where, got, outcome, publish_discovery, publish_topology,
    send, start,
};
use switchboard_core::{
    connector::{RouteEvent, RouteFlags},
    ids::NodeId,
    node::Event,
    outcome::{FailReason, Outcome},
    sim::Sim,
    time::{Duration, Instant},
};

const LAYOUT: [(u64, u64); 2] = [(0x301, 0), (0x302, 0x301)];

fn route_events(sim: &Sim, node: u64) -> Vec<(Instant, Event)> {
    events_where(sim, node, |e| matches!(e, Event::Route(_)))
}

/// Every dial `node` made: (time, peer, resolved as connected?).
fn dials(sim: &Sim, node: u64) -> Vec<(Instant, NodeId, Option<bool>)> {
    sim.log(NodeId(node))
        .dials
        .iter()
        .map(|d| (d.at, d.peer, d.connected))
        .collect()
}

fn route(kind: RouteEvent) -> Event {
    Event::Route(kind)
}

/// C.1: the parent sends to its child before the child is up: the message waits — time
/// passing alone delivers nothing, and the parent never dials a child — until the child
/// starts (5 s) and dials its upstream; the queue flushes the instant the link is up.
///
/// libatapp shows the same with `tick()` (no delivery) versus the IO pump (delivery).
#[test]
fn c1_downstream_not_connected_pending() {
    let mut sim = start(GROUP_C, &LAYOUT[..1]);
    publish_topology(&mut sim, 0x301, 0);
    publish_topology(&mut sim, 0x302, 0x301);
    publish_discovery(&mut sim, 0x301);
    publish_discovery(&mut sim, 0x302);
    sim.advance_to(at(1));
    let msg = send(&mut sim, 0x301, 0x302, 100, "to-child-C1");
    sim.advance_to(at(5));
    assert_eq!(outcome(&sim, 0x301, msg), None);
    assert_eq!(sim.node(NodeId(0x301)).inspect().pending(NodeId(0x302)), 1);
    // The parent never dials its child: its dial log (every `Connect` output) is empty.
    assert_eq!(dials(&sim, 0x301), []);

    sim.add_node(config(GROUP_C, 0x302, 0x301))
        .expect("child config is valid");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x302),
        [(at(5), 0x301, 0x301, 100, "to-child-C1".into())]
    );
    assert_eq!(outcome(&sim, 0x301, msg), Some((at(5), Outcome::Delivered)));
    assert_eq!(
        sim.node(NodeId(0x301))
            .inspect()
            .route(NodeId(0x302))
            .map(|r| (r.flags, r.proxy)),
        Some((RouteFlags::ACTIVE | RouteFlags::READY, None))
    );
    // The link is the child's dial, the only one; the parent still dialed nothing.
    assert_eq!(dials(&sim, 0x302), [(at(5), NodeId(0x301), Some(true))]);
    assert_eq!(dials(&sim, 0x301), []);
}

/// C.2: parent and child linked: both directions deliver at once, over the one link.
#[test]
fn c2_downstream_connected_send_success() {
    let mut sim = cluster(GROUP_C, &LAYOUT);
    let down = send(&mut sim, 0x301, 0x302, 100, "downstream-C2");
    let up = send(&mut sim, 0x302, 0x301, 101, "upstream-C2");
    sim.run_until_idle();

    assert_eq!(
        got(&sim, 0x302),
        [(at(0), 0x301, 0x301, 100, "downstream-C2".into())]
    );
    assert_eq!(
        got(&sim, 0x301),
        [(at(0), 0x302, 0x302, 101, "upstream-C2".into())]
    );
    assert_eq!(
        outcome(&sim, 0x301, down),
        Some((at(0), Outcome::Delivered))
    );
    assert_eq!(outcome(&sim, 0x302, up), Some((at(0), Outcome::Delivered)));
    assert_eq!(sim.open_links(NodeId(0x301), NodeId(0x302)), 1);
}

/// C.3: the link drops at 10 s; the parent queues a message; the child re-dials its
/// upstream after `start` = 2 s, before the message's deadline (18 s), and the queue flushes
/// at exactly 12 s.
#[test]
fn c3_downstream_reconnect_before_timeout() {
    let mut sim = cluster(GROUP_C, &LAYOUT);
    sim.advance_to(at(10));
    common::cut_past_the_probes(&mut sim, 0x301, 0x302);
    let msg = send(&mut sim, 0x301, 0x302, 100, "reconnect-before-timeout-C3");
    sim.advance_to(at(12) - Duration::from_nanos(1));
    assert_eq!(sim.node(NodeId(0x301)).inspect().pending(NodeId(0x302)), 1);
    sim.advance_to(at(12));

    assert_eq!(
        got(&sim, 0x302),
        [(
            at(12),
            0x301,
            0x301,
            100,
            "reconnect-before-timeout-C3".into()
        )]
    );
    assert_eq!(
        outcome(&sim, 0x301, msg),
        Some((at(12), Outcome::Delivered))
    );
    // The parent dials its child once, at the drop (the probe that tells a dead child from a
    // live one, which fails here) — never to reconnect: the child keeps its upstream link.
    let parent_dials: Vec<(NodeId, Instant, Option<bool>)> = sim
        .dials(NodeId(0x301))
        .iter()
        .map(|d| (d.peer, d.at, d.connected))
        .collect();
    assert_eq!(parent_dials, [(NodeId(0x302), at(10), Some(false))]);
}

/// C.4: the child goes offline at 10 s (it dies; its topology and discovery records are
/// deleted). The parent's record loses `READY`, schedules its reconnects (12 s, 16 s),
/// is marked lost (deadline 42 s) and waiting for discovery; its 2 tries run out first and
/// it is removed at 16 s, failing the queued message at once. Afterwards nothing is left:
/// no record, no queue; a new send opens a fresh route that waits for the node to reappear
/// and gives up after its own 2 tries.
///
/// libatapp removes the record at the lost deadline (its debug hooks keep the link "up" and
/// the retries out of the way) and the message ends with its timeout (-211); the endpoint
/// is collected 60 s later. Ours fails the queue at the removal, with `NoRoute`.
#[test]
fn c4_downstream_topology_offline_timeout_fail() {
    let mut sim = cluster(GROUP_C, &LAYOUT);
    let warm = send(&mut sim, 0x301, 0x302, 100, "warm-up-C4");
    sim.advance_to(at(10));
    sim.kill(NodeId(0x302));
    sim.registry_delete_topology(NodeId(0x302));
    sim.registry_delete_discovery(NodeId(0x302));
    let msg = send(&mut sim, 0x301, 0x302, 100, "to-offline-child-C4");
    assert_eq!(
        sim.node(NodeId(0x301))
            .inspect()
            .route(NodeId(0x302))
            .map(|r| (r.flags, r.lost_deadline)),
        Some((
            RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY | RouteFlags::LOST_TOPOLOGY,
            Some(at(42))
        ))
    );
    sim.advance_to(at(40));

    assert_eq!(
        outcome(&sim, 0x301, msg),
        Some((at(16), Outcome::Failed(FailReason::NoRoute)))
    );
    let child = NodeId(0x302);
    assert_eq!(
        route_events(&sim, 0x301)[..],
        [
            (at(10), route(RouteEvent::Unready { target: child })),
            (
                at(10),
                route(RouteEvent::ReconnectScheduled {
                    target: child,
                    attempt: 1,
                    at: at(12),
                })
            ),
            (
                at(10),
                route(RouteEvent::TopologyLost {
                    target: child,
                    deadline: at(42),
                })
            ),
            (
                at(10),
                route(RouteEvent::WaitingDiscovery { target: child })
            ),
            (
                at(12),
                route(RouteEvent::ReconnectScheduled {
                    target: child,
                    attempt: 2,
                    at: at(16),
                })
            ),
            (
                at(16),
                route(RouteEvent::Removed {
                    target: child,
                    reason: FailReason::NoRoute,
                    endpoint: true,
                })
            ),
        ]
    );
    assert_eq!(sim.node(NodeId(0x301)).inspect().route(child), None);
    assert_eq!(sim.node(NodeId(0x301)).inspect().pending(child), 0);
    // A new send to the vanished node opens a fresh route that waits for it to reappear,
    // bounded by its 2 tries (42 s, 46 s).
    let again = send(&mut sim, 0x301, 0x302, 100, "after-cleanup-C4");
    assert_eq!(
        sim.node(NodeId(0x301))
            .inspect()
            .route(child)
            .map(|r| r.flags),
        Some(RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY)
    );
    sim.advance_to(at(60));
    assert_eq!(
        outcome(&sim, 0x301, again),
        Some((at(46), Outcome::Failed(FailReason::NoRoute)))
    );
    assert_eq!(
        outcome(&sim, 0x301, warm),
        Some((at(0), Outcome::Delivered))
    );
}
