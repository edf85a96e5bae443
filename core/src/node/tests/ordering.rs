//! The seed's four discovery-vs-topology ordering cases ("时序不一致是现实问题"), each in both
//! arrival orders, at node level: discovery and topology come from independent watchers and
//! the node must end in the same state whichever arrives first.

use alloc::{vec, vec::Vec};

use super::{
    config, disc,
    net::{Net, Seen, received},
    secs, topo, *,
};
use crate::{connector::RouteFlags, outcome::FailReason, time::Duration};

/// Group B (0x201, 0x202 under 0x203). Everyone knows 0x203 and its own records; 0x201 knows
/// nothing of 0x202 yet. `direct` toggles direct links.
fn partial(direct: bool) -> Net {
    let mut net = Net::new(vec![
        config(0x201, 0x203, 3, direct),
        config(0x202, 0x203, 3, direct),
        config(0x203, 0, 3, direct),
    ]);
    let now = net.now;
    for (id, node) in &mut net.nodes {
        let mut events = vec![
            RegistryEvent::DiscoveryPut(disc(0x203, 1)),
            RegistryEvent::TopologyPut(topo(0x203, 0, 2)),
        ];
        if id.0 != 0x201 {
            for peer in [0x201u64, 0x202] {
                events.push(RegistryEvent::DiscoveryPut(disc(peer, 3 + peer)));
                events.push(RegistryEvent::TopologyPut(topo(peer, 0x203, 3 + peer)));
            }
        }
        for e in events {
            node.handle_registry(now, e);
        }
    }
    net.pump();
    net
}

fn to_0x201(net: &mut Net, event: &RegistryEvent) {
    let now = net.now;
    net.node(0x201).handle_registry(now, event.clone());
    net.pump();
}

fn topology_of_0x202() -> RegistryEvent {
    RegistryEvent::TopologyPut(topo(0x202, 0x203, 50))
}

fn discovery_of_0x202() -> RegistryEvent {
    RegistryEvent::DiscoveryPut(disc(0x202, 51))
}

/// Case 1 (the common path) and case 2 (its reverse) with direct links allowed: whichever
/// record comes first, the message queued before both goes out once, over a direct link.
#[test]
fn ordering_case1_2_topology_and_discovery_in_either_order_direct() {
    for topology_first in [true, false] {
        let mut net = partial(true);
        let msg = net.send(0x201, 0x202, b"case-1");
        let first = net.node(0x201).route(NodeId(0x202)).unwrap();
        assert_eq!(first.flags, RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY);
        let (a, b) = if topology_first {
            (topology_of_0x202(), discovery_of_0x202())
        } else {
            (discovery_of_0x202(), topology_of_0x202())
        };
        to_0x201(&mut net, &a);
        if topology_first {
            // Topology alone: still waiting for the address, message still queued.
            let v = net.node(0x201).route(NodeId(0x202)).unwrap();
            assert_eq!(v.flags, RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY);
            assert_eq!(net.node(0x201).pending(NodeId(0x202)), 1);
        } else {
            // Discovery alone: a direct link is allowed to a node topology does not know.
            assert_eq!(net.node(0x201).pending(NodeId(0x202)), 0);
        }
        to_0x201(&mut net, &b);
        assert_eq!(
            net.take_seen(0x202),
            vec![received(0x201, 0x201, b"case-1")],
            "topology first: {topology_first}"
        );
        assert_eq!(
            net.take_seen(0x201),
            vec![Seen::Outcome(msg, Outcome::Delivered)]
        );
        let v = net.node(0x201).route(NodeId(0x202)).unwrap();
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
        let mut net = partial(false);
        let (a, b) = if topology_first {
            (topology_of_0x202(), discovery_of_0x202())
        } else {
            (discovery_of_0x202(), topology_of_0x202())
        };
        to_0x201(&mut net, &a);
        let msg = net.send(0x201, 0x202, b"case-2");
        assert_eq!(
            net.take_seen(0x202),
            vec![received(0x201, 0x203, b"case-2")],
            "topology first: {topology_first}"
        );
        assert_eq!(
            net.take_seen(0x201),
            vec![Seen::Outcome(msg, Outcome::Delivered)]
        );
        to_0x201(&mut net, &b);
        let v = net.node(0x201).route(NodeId(0x202)).unwrap();
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
        let mut net = partial(true);
        let msg = net.send(0x201, 0x202, b"case-3");
        let (on_time, late) = if discovery_late {
            (topology_of_0x202(), discovery_of_0x202())
        } else {
            (discovery_of_0x202(), topology_of_0x202())
        };
        to_0x201(&mut net, &on_time);
        net.run_until(secs(5));
        let delivered_early = !discovery_late;
        assert_eq!(
            net.take_seen(0x202).len(),
            usize::from(delivered_early),
            "discovery late: {discovery_late}"
        );
        to_0x201(&mut net, &late);
        if discovery_late {
            assert_eq!(
                net.take_seen(0x202),
                vec![received(0x201, 0x201, b"case-3")]
            );
        }
        let outcomes = net.take_seen(0x201);
        assert_eq!(outcomes, vec![Seen::Outcome(msg, Outcome::Delivered)]);
        let v = net.node(0x201).route(NodeId(0x202)).unwrap();
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
        let mut net = Net::new(configs);
        net.publish(&[(0x203, 0), (0x201, 0x203), (0x202, 0x203)]);
        net.send(0x201, 0x202, b"before");
        net.take_seen(0x201);
        net.take_seen(0x202);
        net.run_until(secs(1));
        net.kill(0x202);
        let deletes = [
            RegistryEvent::DiscoveryDelete {
                id: NodeId(0x202),
                name: alloc::string::String::from("node-202"),
                revision: 300,
            },
            RegistryEvent::TopologyDelete {
                id: NodeId(0x202),
                revision: 301,
            },
        ];
        let order: Vec<&RegistryEvent> = if discovery_first {
            vec![&deletes[0], &deletes[1]]
        } else {
            vec![&deletes[1], &deletes[0]]
        };
        for e in order {
            to_0x201(&mut net, e);
        }
        let v = net.node(0x201).route(NodeId(0x202)).unwrap();
        assert_eq!(
            v.flags,
            RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY | RouteFlags::LOST_TOPOLOGY,
            "discovery first: {discovery_first}"
        );
        assert_eq!((v.lost_deadline, v.timer), (Some(secs(33)), Some(secs(3))));
        let msg = net.send(0x201, 0x202, b"after");
        net.run_until(secs(15) - Duration::from_nanos(1));
        assert!(net.take_seen(0x201).is_empty());
        net.run_until(secs(15));
        assert_eq!(
            net.take_seen(0x201),
            vec![Seen::Outcome(msg, Outcome::Failed(FailReason::NoRoute))]
        );
        assert!(net.node(0x201).route(NodeId(0x202)).is_none());
        assert!(net.take_seen(0x202).is_empty());
    }
}
