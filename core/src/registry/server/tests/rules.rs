//! Server rules, one scenario each, on virtual time with exact instants and exact frames.

use alloc::{boxed::Box, vec};

use super::*;
use crate::{
    registry::fixtures::{disc, secs, topo},
    time::Duration,
    wire::{Decoded, Heartbeat},
};

#[test]
fn register_answers_a_snapshot_and_pushes_a_put_to_the_others() {
    let mut s = server();
    let a = s.handle_accepted(secs(0));
    assert_eq!(a, ConnId(1));
    s.handle_received(secs(1), a, &register_bytes(1, "lobby", 101));
    assert_eq!(
        drain(&mut s),
        vec![
            registered(a, 1, false),
            tx(a, snapshot(&s, 1, vec![entry(1, "lobby", 101, 1, None)])),
        ]
    );
    let b = s.handle_accepted(secs(2));
    // Split at an arbitrary byte: reassembly.
    let reg = register_bytes(2, "gate", 102);
    s.handle_received(secs(2), b, &reg[..5]);
    assert_eq!(drain(&mut s), vec![]);
    s.handle_received(secs(3), b, &reg[5..]);
    assert_eq!(
        drain(&mut s),
        vec![
            registered(b, 2, false),
            tx(
                b,
                snapshot(
                    &s,
                    2,
                    vec![
                        entry(1, "lobby", 101, 1, None),
                        entry(2, "gate", 102, 2, None)
                    ]
                )
            ),
            tx(a, put(&s, 2, entry(2, "gate", 102, 2, None))),
        ]
    );
    assert_eq!(s.revision(), 2);
}

#[test]
fn unregistered_connection_is_closed_at_the_access_timeout() {
    let mut s = server();
    let a = s.handle_accepted(secs(3));
    assert_eq!(s.poll_timeout(), Some(secs(13)));
    s.handle_timeout(secs(13) - Duration::from_nanos(1));
    assert_eq!(drain(&mut s), vec![]);
    s.handle_timeout(secs(13));
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Close { conn: a },
            ServerOutput::Event(ServerEvent::AccessTimeout { conn: a }),
        ]
    );
    assert_eq!(s.connection_count(), 0);
    assert_eq!(s.poll_timeout(), None);
}

#[test]
fn registering_cancels_the_access_timeout() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    // Only the heartbeat deadline is left: 15 s after the register.
    assert_eq!(s.poll_timeout(), Some(secs(15)));
    s.handle_timeout(secs(10));
    assert_eq!(drain(&mut s), vec![]);
    assert_eq!(s.connection_count(), 1);
    let _ = a;
}

#[test]
fn concern_table_limits_snapshots_and_pushes() {
    let mut config = ServerConfig::default();
    config.concern.set("gate", ["lobby"]);
    config.concern.set("battle", ["lobby"]);
    let mut s = RegistryServer::new(config, SEED);
    let lobby = join(&mut s, secs(0), 1, "lobby"); // unlisted: follows all
    let gate = s.handle_accepted(secs(1));
    s.handle_received(secs(1), gate, &register_bytes(2, "gate", 102));
    assert_eq!(
        drain(&mut s),
        vec![
            registered(gate, 2, false),
            tx(
                gate,
                snapshot(
                    &s,
                    2,
                    vec![
                        entry(1, "lobby", 101, 1, None),
                        entry(2, "gate", 102, 2, None)
                    ]
                )
            ),
            tx(lobby, put(&s, 2, entry(2, "gate", 102, 2, None))),
        ]
    );
    // A battle node: gate does not follow battle, lobby does; battle sees lobby and itself.
    let battle = s.handle_accepted(secs(2));
    s.handle_received(secs(2), battle, &register_bytes(3, "battle", 103));
    assert_eq!(
        drain(&mut s),
        vec![
            registered(battle, 3, false),
            tx(
                battle,
                snapshot(
                    &s,
                    3,
                    vec![
                        entry(1, "lobby", 101, 1, None),
                        entry(3, "battle", 103, 3, None)
                    ]
                )
            ),
            tx(lobby, put(&s, 3, entry(3, "battle", 103, 3, None))),
        ]
    );
    // Removal of battle (graceful bye) is pushed to lobby and not to gate.
    s.handle_received(
        secs(4),
        battle,
        &bytes(
            Bye {
                reason: ByeReason::Shutdown,
            }
            .into(),
        ),
    );
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Close { conn: battle },
            tx(
                lobby,
                Delete {
                    epoch: s.epoch(),
                    revision: 4,
                    id: NodeId(3),
                    name: "n3",
                }
                .into()
            ),
            ServerOutput::Event(ServerEvent::Removed {
                key: EntryKey::Id(NodeId(3))
            }),
        ]
    );
}

#[test]
fn removal_is_pushed_only_after_disconnect_protection() {
    let mut s = quiet_server();
    let a = join(&mut s, secs(0), 1, "x");
    let b = join(&mut s, secs(0), 2, "x");
    s.handle_closed(secs(5), a);
    // Its session loss is pushed at once (the record, marked suspect, still listed): the
    // evidence that corroborates a peer's failed redial (docs/ARCHITECTURE.md §9.3).
    assert_eq!(
        drain(&mut s),
        vec![
            tx(b, put(&s, 2, entry(1, "x", 101, 1, LOST_AT_ONCE))),
            ServerOutput::Event(ServerEvent::Protected {
                key: EntryKey::Id(NodeId(1))
            })
        ]
    );
    // A newcomer inside the window sees node 1 as suspect.
    let c = s.handle_accepted(secs(10));
    s.handle_received(secs(10), c, &register_bytes(3, "x", 103));
    assert_eq!(
        drain(&mut s),
        vec![
            registered(c, 3, false),
            tx(
                c,
                snapshot(
                    &s,
                    3,
                    vec![
                        // Lost at 5 s, listed to the newcomer at 10 s: 5 s ago.
                        entry(1, "x", 101, 1, Some(Duration::from_secs(5))),
                        entry(2, "x", 102, 2, None),
                        entry(3, "x", 103, 3, None)
                    ]
                )
            ),
            tx(b, put(&s, 3, entry(3, "x", 103, 3, None))),
        ]
    );
    assert_eq!(s.poll_timeout(), Some(secs(35)));
    s.handle_timeout(secs(35) - Duration::from_nanos(1));
    assert_eq!(drain(&mut s), vec![]);
    s.handle_timeout(secs(35));
    let delete: Frame<'_> = Delete {
        epoch: s.epoch(),
        revision: 4,
        id: NodeId(1),
        name: "n1",
    }
    .into();
    assert_eq!(
        drain(&mut s),
        vec![
            tx(b, delete.clone()),
            tx(c, delete),
            ServerOutput::Event(ServerEvent::Removed {
                key: EntryKey::Id(NodeId(1))
            }),
        ]
    );
    assert_eq!(
        s.entries(),
        vec![entry(2, "x", 102, 2, None), entry(3, "x", 103, 3, None)]
    );
}

#[test]
fn re_registering_inside_protection_replaces_the_info_and_pushes_it() {
    let mut s = quiet_server();
    let a = join(&mut s, secs(0), 1, "x");
    let b = join(&mut s, secs(0), 2, "x");
    s.handle_closed(secs(5), a);
    drain(&mut s);
    // Back at 20 s, restarted on a new port with a new incarnation.
    let mut moved = disc(1, "x");
    moved.listen = vec!["atcp://127.0.0.1:9999".into()];
    let a2 = s.handle_accepted(secs(20));
    let reg = bytes(
        Register {
            watch: false,
            incarnation: 555,
            discovery: moved.clone(),
            topology: Some(topo(1, 2)),
            proof: None,
        }
        .into(),
    );
    s.handle_received(secs(20), a2, &reg);
    moved.revision = 3;
    let mut t = topo(1, 2);
    t.revision = 3;
    let listed = RegistryEntry {
        incarnation: 555,
        discovery: moved,
        topology: Some(t),
        lost_for: None,
    };
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Event(ServerEvent::Registered {
                conn: a2,
                key: EntryKey::Id(NodeId(1)),
                incarnation: 555,
                restored: true
            }),
            tx(
                a2,
                snapshot(&s, 3, vec![listed.clone(), entry(2, "x", 102, 2, None)])
            ),
            tx(b, put(&s, 3, listed)),
        ]
    );
    // The protection timer is gone: nothing is due any more.
    assert_eq!(s.poll_timeout(), None);
    s.handle_timeout(secs(35));
    assert_eq!(drain(&mut s), vec![]);
}

#[test]
fn epoch_comes_from_the_seed_and_is_in_every_frame() {
    let a = RegistryServer::new(ServerConfig::default(), 1);
    let b = RegistryServer::new(ServerConfig::default(), 2);
    assert_ne!(a.epoch(), b.epoch());
    assert_eq!(
        a.epoch(),
        RegistryServer::new(ServerConfig::default(), 1).epoch()
    );
    let mut s = a;
    let conn = join(&mut s, secs(0), 1, "x");
    s.handle_received(
        secs(1),
        conn,
        &bytes(
            Heartbeat {
                epoch: 0,
                sequence: 9,
            }
            .into(),
        ),
    );
    assert_eq!(
        drain(&mut s),
        vec![tx(
            conn,
            Heartbeat {
                epoch: s.epoch(),
                sequence: 9
            }
            .into()
        )]
    );
}

#[test]
fn duplicate_id_from_another_incarnation_is_refused() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let before = s.entries();
    let b = s.handle_accepted(secs(1));
    s.handle_received(secs(1), b, &register_bytes(1, "x", 999));
    let ack = HelloAck {
        node: NodeId(1),
        incarnation: 101,
        versions: VersionRange { min: 0, max: 0 },
        name: "",
        nonce: None,
        proof: None,
        result: Err(RefuseReason::DuplicateId),
    };
    assert_eq!(
        drain(&mut s),
        vec![
            tx(b, ack.into()),
            ServerOutput::Close { conn: b },
            ServerOutput::Event(ServerEvent::Refused {
                conn: b,
                key: EntryKey::Id(NodeId(1)),
                incarnation: 999,
                holder: 101
            }),
        ]
    );
    assert_eq!(s.entries(), before);
    assert_eq!(s.connection_count(), 1);
    let _ = a;
}

#[test]
fn same_incarnation_on_a_new_connection_takes_over() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let b = s.handle_accepted(secs(1));
    s.handle_received(secs(1), b, &register_bytes(1, "x", 101));
    assert_eq!(
        drain(&mut s),
        vec![
            tx(
                a,
                Bye {
                    reason: ByeReason::Replaced
                }
                .into()
            ),
            ServerOutput::Close { conn: a },
            registered(b, 1, true),
            tx(b, snapshot(&s, 2, vec![entry(1, "x", 101, 2, None)])),
        ]
    );
    // The old connection's close changes nothing now.
    s.handle_closed(secs(2), a);
    assert_eq!(drain(&mut s), vec![]);
    assert_eq!(s.entries(), vec![entry(1, "x", 101, 2, None)]);
}

#[test]
fn update_is_pushed_to_the_concerned_and_the_node_itself() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let b = join(&mut s, secs(0), 2, "x");
    let update = bytes(
        Update {
            incarnation: 101,
            discovery: None,
            topology: Some(topo(1, 2)),
        }
        .into(),
    );
    s.handle_received(secs(3), a, &update);
    let mut t = topo(1, 2);
    t.revision = 3;
    let listed = RegistryEntry {
        topology: Some(t),
        ..entry(1, "x", 101, 1, None)
    };
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Event(ServerEvent::Updated {
                conn: a,
                key: EntryKey::Id(NodeId(1))
            }),
            tx(a, put(&s, 3, listed.clone())),
            tx(b, put(&s, 3, listed)),
        ]
    );
}

#[test]
fn silent_registered_connection_is_closed_and_protected() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    s.handle_received(
        secs(10),
        a,
        &bytes(
            Heartbeat {
                epoch: 0,
                sequence: 1,
            }
            .into(),
        ),
    );
    drain(&mut s);
    assert_eq!(s.poll_timeout(), Some(secs(25)));
    s.handle_timeout(secs(25));
    assert_eq!(
        drain(&mut s),
        vec![
            tx(
                a,
                Bye {
                    reason: ByeReason::HeartbeatTimeout
                }
                .into()
            ),
            ServerOutput::Close { conn: a },
            ServerOutput::Event(ServerEvent::HeartbeatTimeout { conn: a }),
            ServerOutput::Event(ServerEvent::Protected {
                key: EntryKey::Id(NodeId(1))
            }),
        ]
    );
    assert_eq!(s.entries(), vec![entry(1, "x", 101, 1, LOST_AT_ONCE)]);
    assert_eq!(s.poll_timeout(), Some(secs(55)));
}

#[test]
fn snapshot_frame_round_trips_through_the_codec() {
    // The transmitted snapshot decodes to exactly the listed entries.
    let mut s = server();
    let conn = s.handle_accepted(secs(0));
    s.handle_received(secs(0), conn, &register_bytes(4, "x", 104));
    let out = drain(&mut s);
    let ServerOutput::Transmit { bytes, .. } = &out[1] else {
        panic!("test: expected a transmit, got {out:?}");
    };
    let max = wire::DEFAULT_MAX_FRAME;
    assert_eq!(
        wire::decode(bytes, max),
        Ok(Decoded::Frame(
            Frame::Snapshot(Box::new(Snapshot {
                epoch: s.epoch(),
                revision: 1,
                entries: vec![entry(4, "x", 104, 1, None)],
                more: false,
            })),
            bytes.len()
        ))
    );
}
