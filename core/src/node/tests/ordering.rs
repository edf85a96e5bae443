//! The seed's four discovery-vs-topology ordering cases ("时序不一致是现实问题"), each in both
//! arrival orders, at node level: discovery and topology come from independent watchers and
//! the node must end in the same state whichever arrives first.

use alloc::vec;

use super::*;
use crate::{connector::RouteFlags, outcome::FailReason, sim::Fanout, time::Duration};

/// Group B (0x201, 0x202 under 0x203). Everyone knows 0x203's records; 0x202 and 0x203 know
/// 0x201's and 0x202's; 0x201 knows nothing of 0x202 yet. `direct` toggles direct links.
fn partial(direct: bool) -> Sim {
    let mut sim = sim(vec![
        config(0x201, 0x203, 3, direct),
        config(0x202, 0x203, 3, direct),
        config(0x203, 0, 3, direct),
    ]);
    sim.registry_put_discovery(disc(0x203, 0));
    sim.registry_put_topology(topo(0x203, 0, 0));
    let others = Fanout::only([NodeId(0x202), NodeId(0x203)]);
    for peer in [0x201, 0x202] {
        sim.registry_put_discovery_with(disc(peer, 0), others.clone());
        sim.registry_put_topology_with(topo(peer, 0x203, 0), others.clone());
    }
    sim.deliver_until_idle();
    sim
}

/// One of 0x202's records, as the registry publishes it to 0x201 alone.
#[derive(Clone, Copy, Debug)]
enum Record {
    Topology,
    Discovery,
}

/// 0x201's watcher hears `record` of 0x202 now (the registry republishes it; only 0x201 is
/// told); then what follows is delivered, firing no timer.
fn to_0x201(sim: &mut Sim, record: Record) {
    let only = Fanout::only([NodeId(0x201)]);
    match record {
        Record::Topology => sim.registry_put_topology_with(topo(0x202, 0x203, 0), only),
        Record::Discovery => sim.registry_put_discovery_with(disc(0x202, 0), only),
    };
    sim.deliver_until_idle();
}

/// Case 1 (the common path) and case 2 (its reverse) with direct links allowed: whichever
/// record comes first, the message queued before both goes out once, over a direct link.
#[test]
fn ordering_case1_2_topology_and_discovery_in_either_order_direct() {
    for topology_first in [true, false] {
        let mut sim = partial(true);
        let msg = send(&mut sim, 0x201, 0x202, b"case-1");
        let first = sim
            .node(NodeId(0x201))
            .inspect()
            .route(NodeId(0x202))
            .unwrap();
        assert_eq!(first.flags, RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY);
        let (a, b) = if topology_first {
            (Record::Topology, Record::Discovery)
        } else {
            (Record::Discovery, Record::Topology)
        };
        to_0x201(&mut sim, a);
        if topology_first {
            // Topology alone: still waiting for the address, message still queued.
            let v = sim
                .node(NodeId(0x201))
                .inspect()
                .route(NodeId(0x202))
                .unwrap();
            assert_eq!(v.flags, RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY);
            assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 1);
        } else {
            // Discovery alone: a direct link is allowed to a node topology does not know.
            assert_eq!(sim.node(NodeId(0x201)).inspect().pending(NodeId(0x202)), 0);
        }
        to_0x201(&mut sim, b);
        assert_eq!(
            seen(&sim, 0x202),
            vec![received(secs(0), 0x201, 0x201, b"case-1")],
            "topology first: {topology_first}"
        );
        assert_eq!(
            seen(&sim, 0x201),
            vec![outcome(secs(0), msg, Outcome::Delivered)]
        );
        let v = sim
            .node(NodeId(0x201))
            .inspect()
            .route(NodeId(0x202))
            .unwrap();
        assert_eq!(
            (v.flags, v.proxy),
            (RouteFlags::ACTIVE | RouteFlags::READY, None)
        );
    }
}

/// Case 2 without direct links: incomplete topology falls back to relaying through the
/// upstream ("走代理转发兜底"); the late record keeps the relay.
#[test]
fn ordering_case2_incomplete_topology_falls_back_to_the_relay_in_either_order() {
    for topology_first in [true, false] {
        let mut sim = partial(false);
        let (a, b) = if topology_first {
            (Record::Topology, Record::Discovery)
        } else {
            (Record::Discovery, Record::Topology)
        };
        to_0x201(&mut sim, a);
        let msg = send(&mut sim, 0x201, 0x202, b"case-2");
        assert_eq!(
            seen(&sim, 0x202),
            vec![received(secs(0), 0x201, 0x203, b"case-2")],
            "topology first: {topology_first}"
        );
        assert_eq!(
            seen(&sim, 0x201),
            vec![outcome(secs(0), msg, Outcome::Delivered)]
        );
        to_0x201(&mut sim, b);
        let v = sim
            .node(NodeId(0x201))
            .inspect()
            .route(NodeId(0x202))
            .unwrap();
        assert_eq!(
            (v.flags, v.proxy),
            (RouteFlags::ACTIVE | RouteFlags::READY, Some(NodeId(0x203)))
        );
    }
}

/// Case 3: one watcher is late by 5 s (re-listing after a leader change). The message waits
/// and goes out when the late record arrives, before its 8 s deadline.
#[test]
fn ordering_case3_a_late_watcher_delays_but_does_not_lose_the_message() {
    for discovery_late in [true, false] {
        let mut sim = partial(true);
        let msg = send(&mut sim, 0x201, 0x202, b"case-3");
        let (on_time, late) = if discovery_late {
            (Record::Topology, Record::Discovery)
        } else {
            (Record::Discovery, Record::Topology)
        };
        to_0x201(&mut sim, on_time);
        sim.advance_to(secs(5));
        let delivered_early = !discovery_late;
        assert_eq!(
            seen(&sim, 0x202).len(),
            usize::from(delivered_early),
            "discovery late: {discovery_late}"
        );
        to_0x201(&mut sim, late);
        let delivered_at = if discovery_late { secs(5) } else { secs(0) };
        assert_eq!(
            seen(&sim, 0x202),
            vec![received(delivered_at, 0x201, 0x201, b"case-3")]
        );
        assert_eq!(
            seen(&sim, 0x201),
            vec![outcome(delivered_at, msg, Outcome::Delivered)]
        );
        let v = sim
            .node(NodeId(0x201))
            .inspect()
            .route(NodeId(0x202))
            .unwrap();
        assert_eq!(v.flags, RouteFlags::ACTIVE | RouteFlags::READY);
    }
}

/// Case 4: the target goes offline; its discovery and topology deletes arrive in either
/// order. Both flags end up set and the record is given up the same way: at its third
/// reconnect try (before the 32 s lost deadline), failing the queued message with `NoRoute`
/// at once (libatapp lets it time out).
#[test]
fn ordering_case4_offline_deletes_in_either_order_end_the_same() {
    for discovery_first in [true, false] {
        let mut configs = vec![
            config(0x201, 0x203, 3, true),
            config(0x202, 0x203, 3, true),
            config(0x203, 0, 3, true),
        ];
        configs[0].message_timeout = Duration::from_secs(60);
        let mut sim = sim(configs);
        publish(&mut sim, &[(0x203, 0), (0x201, 0x203), (0x202, 0x203)]);
        let before = send(&mut sim, 0x201, 0x202, b"before");
        sim.advance_to(secs(1));
        sim.kill(NodeId(0x202));
        // The registry deletes both records in the order 0x201's watchers report them; only
        // 0x201 is told.
        let only = || Fanout::only([NodeId(0x201)]);
        for discovery in [discovery_first, !discovery_first] {
            if discovery {
                sim.registry_delete_discovery_with(NodeId(0x202), only());
            } else {
                sim.registry_delete_topology_with(NodeId(0x202), only());
            }
            sim.deliver_until_idle();
        }
        let v = sim
            .node(NodeId(0x201))
            .inspect()
            .route(NodeId(0x202))
            .unwrap();
        assert_eq!(
            v.flags,
            RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY | RouteFlags::LOST_TOPOLOGY,
            "discovery first: {discovery_first}"
        );
        assert_eq!((v.lost_deadline, v.timer), (Some(secs(33)), Some(secs(3))));
        let msg = send(&mut sim, 0x201, 0x202, b"after");
        sim.advance_to(secs(15) - Duration::from_nanos(1));
        let delivered = outcome(secs(0), before, Outcome::Delivered);
        assert_eq!(seen(&sim, 0x201), vec![delivered.clone()]);
        sim.advance_to(secs(15));
        assert_eq!(
            seen(&sim, 0x201),
            vec![
                delivered,
                outcome(secs(15), msg, Outcome::Failed(FailReason::NoRoute))
            ]
        );
        assert!(
            sim.node(NodeId(0x201))
                .inspect()
                .route(NodeId(0x202))
                .is_none()
        );
        assert_eq!(
            seen(&sim, 0x202),
            vec![received(secs(0), 0x201, 0x201, b"before")]
        );
    }
}
