//! A registry restart while the cluster runs: no live peer disappears from any client's view,
//! and a peer that died during the outage is deleted exactly at the end of the grace.

use alloc::{vec, vec::Vec};

use super::{ClientEvent, add, net, view};
use crate::{
    registry::{
        RegistryEvent,
        fixtures::{client_config, disc, secs},
        server::RegistryServer,
    },
    sim::RegistryNet,
    time::Instant,
};

const G1: u64 = 1 << 40;
const G2: u64 = 2 << 40;

fn at(d: crate::discovery::DiscoveryInfo, revision: u64) -> RegistryEvent {
    let mut d = d;
    d.revision = revision;
    RegistryEvent::DiscoveryPut(d.into())
}

/// Four nodes registered at 0 s against a registry of epoch seed 1.
fn cluster() -> RegistryNet {
    let mut net = net(true);
    for id in 1..=4 {
        add(&mut net, client_config(disc(id, "x"), 100 + id));
    }
    net
}

#[test]
fn first_registration_reports_every_peer_with_generation_one_revisions() {
    let mut net = cluster();
    assert_eq!(
        net.take_registry(0),
        vec![
            (secs(0), at(disc(1, "x"), G1 | 1)),
            (secs(0), at(disc(2, "x"), G1 | 2)),
            (secs(0), at(disc(3, "x"), G1 | 3)),
            (secs(0), at(disc(4, "x"), G1 | 4)),
        ]
    );
    assert_eq!(
        net.take_registry(3),
        vec![
            (secs(0), at(disc(1, "x"), G1 | 1)),
            (secs(0), at(disc(2, "x"), G1 | 2)),
            (secs(0), at(disc(3, "x"), G1 | 3)),
            (secs(0), at(disc(4, "x"), G1 | 4)),
        ]
    );
}

#[test]
fn registry_restart_keeps_every_live_peer_through_the_grace() {
    let mut net = cluster();
    let epoch1 = net.server().map(RegistryServer::epoch);
    for i in 0..4 {
        net.take_registry(i);
        net.take_client_events(i);
    }
    net.advance_to(secs(10));
    // Node 4 dies and node 3 goes down for a restart; then the registry dies.
    net.kill_client(3);
    net.settle();
    net.kill_client(2);
    net.settle();
    net.kill_server();
    net.settle();
    net.advance_to(secs(12));
    net.start_server();
    net.settle();
    let epoch2 = net
        .server()
        .map(RegistryServer::epoch)
        .expect("test: server");
    assert_ne!(Some(epoch2), epoch1);
    // Clients 0 and 1 failed a dial at 11 s and come back at 13 s.
    net.advance_to(secs(13));
    for i in 0..2 {
        assert_eq!(
            net.take_client_events(i),
            vec![
                (secs(10), ClientEvent::Disconnected { retry_at: secs(11) }),
                (secs(11), ClientEvent::Disconnected { retry_at: secs(13) }),
                (
                    secs(13),
                    ClientEvent::Registered {
                        epoch: epoch2,
                        new_epoch: true,
                        in_grace: 3 - i
                    }
                ),
            ]
        );
        assert_eq!(view(&net, i), vec![1, 2, 3, 4], "client {i} at 13 s");
    }
    // Node 3 restarts at 30 s on a new port.
    net.advance_to(secs(30));
    let mut moved = disc(3, "x");
    moved.listen = vec!["atcp://127.0.0.1:9003".into()];
    net.start_client(2, client_config(moved.clone(), 203));
    net.settle();
    for i in 0..2 {
        assert_eq!(view(&net, i), vec![1, 2, 3, 4], "client {i} at 30 s");
    }
    assert_eq!(view(&net, 2), vec![1, 2, 3], "restarted client at 30 s");
    net.advance_to(secs(43) - crate::time::Duration::from_nanos(1));
    for i in 0..2 {
        assert_eq!(
            view(&net, i),
            vec![1, 2, 3, 4],
            "client {i} just before 43 s"
        );
    }
    net.advance_to(secs(60));
    // Exactly: the lost sessions of 4 and 3 at once (10 s; the server publishes session loss
    // as it happens — added with the suspicion rules, docs/ARCHITECTURE.md §9.3), node 3's
    // new address and its session back, then node 4 (gone) at the end of the grace (13 +
    // 30 s), at the latest revision of the new epoch. No delete of 1, 2 or 3 ever.
    let session = |id, incarnation, lost_ms: Option<u64>| RegistryEvent::Session {
        id: crate::ids::NodeId(id),
        incarnation,
        lost_for: lost_ms.map(crate::time::Duration::from_millis),
    };
    let expected: Vec<(Instant, RegistryEvent)> = vec![
        (secs(10), session(4, 104, Some(0))),
        (secs(10), session(3, 103, Some(0))),
        (secs(30), at(moved.clone(), G2 | 3)),
        (secs(30), session(3, 203, None)),
        (
            secs(43),
            RegistryEvent::DiscoveryDelete {
                id: crate::ids::NodeId(4),
                name: "n4".into(),
                revision: G2 | 3,
            },
        ),
    ];
    assert_eq!(net.take_registry(0), expected);
    assert_eq!(net.take_registry(1), expected);
    // The restarted node 3 got a view of 1, 2 and 3 only (node 4 never came back), at its
    // own first generation.
    assert_eq!(
        net.take_registry(2),
        vec![
            (secs(10), session(4, 104, Some(0))),
            (secs(30), at(disc(1, "x"), G1 | 1)),
            (secs(30), at(disc(2, "x"), G1 | 2)),
            (secs(30), at(moved, G1 | 3)),
        ]
    );
    for i in 0..3 {
        assert_eq!(view(&net, i), vec![1, 2, 3], "client {i} at 60 s");
    }
}

#[test]
fn same_epoch_reconnect_diffs_directly_and_keeps_suspects() {
    let mut net = cluster();
    net.take_registry(0);
    net.take_registry(1);
    net.advance_to(secs(5));
    net.drop_link(0); // client 0 away until 6 s
    net.settle();
    net.act(3, |c, _| c.shutdown()); // node 4 leaves for good: its Delete is pushed at 5 s
    net.settle();
    net.kill_client(2); // node 3 crashes: protected, suspect
    net.settle();
    // Node 1's session lost at once (its link dropped), node 4's delete, node 3's session
    // lost (its crash): session loss is published as it happens (docs/ARCHITECTURE.md §9.3).
    let session = |id, incarnation, lost_ms: Option<u64>| RegistryEvent::Session {
        id: crate::ids::NodeId(id),
        incarnation,
        lost_for: lost_ms.map(crate::time::Duration::from_millis),
    };
    let delete_4 = RegistryEvent::DiscoveryDelete {
        id: crate::ids::NodeId(4),
        name: "n4".into(),
        revision: G1 | 5,
    };
    let seen: Vec<RegistryEvent> = net.take_registry(1).into_iter().map(|(_, e)| e).collect();
    assert_eq!(
        seen,
        vec![session(1, 101, Some(0)), delete_4, session(3, 103, Some(0))]
    );
    net.advance_to(secs(6));
    // Client 0 missed node 4's delete; the same-epoch snapshot drops it at once, node 3 is
    // listed as suspect and stays (its lost session reported from the snapshot's flag, lost
    // 1 s before the snapshot: its crash at 5 s).
    assert_eq!(
        net.take_registry(0),
        vec![
            (secs(6), session(3, 103, Some(1_000))),
            (
                secs(6),
                RegistryEvent::DiscoveryDelete {
                    id: crate::ids::NodeId(4),
                    name: "n4".into(),
                    revision: G1 | 6,
                }
            )
        ]
    );
    assert_eq!(view(&net, 0), vec![1, 2, 3]);
    // Node 3's protection ends at 35 s: then everyone deletes it.
    net.advance_to(secs(40));
    assert_eq!(
        net.take_registry(0),
        vec![(
            secs(35),
            RegistryEvent::DiscoveryDelete {
                id: crate::ids::NodeId(3),
                name: "n3".into(),
                revision: G1 | 7,
            }
        )]
    );
    assert_eq!(view(&net, 0), vec![1, 2]);
}
