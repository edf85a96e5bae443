//! Watchers (`Register` with the watch flag, `switchboard ls`): the snapshot of every node,
//! every change after it, and no trace of their own — no entry, no `Put`, no `Delete`.

use alloc::vec;

use super::*;
use crate::registry::fixtures::{disc, secs};

fn watch_bytes(id: u64) -> Vec<u8> {
    bytes(
        Register {
            watch: true,
            incarnation: 7,
            discovery: disc(id, "ls"),
            topology: None,
            proof: None,
        }
        .into(),
    )
}

fn bye(reason: ByeReason) -> Vec<u8> {
    bytes(Bye { reason }.into())
}

#[test]
fn a_watcher_gets_every_node_and_every_change_and_is_listed_nowhere() {
    let mut config = ServerConfig::default();
    // Gates see only lobbies: a watcher sees everything all the same.
    config.concern.set("gate", ["lobby"]);
    let mut s = RegistryServer::new(config, SEED);
    let lobby = join(&mut s, secs(0), 1, "lobby");
    let gate = join(&mut s, secs(0), 2, "gate");
    let w = s.handle_accepted(secs(1));
    s.handle_received(secs(1), w, &watch_bytes(1_000_042));
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Event(ServerEvent::Watching { conn: w }),
            tx(
                w,
                snapshot(
                    &s,
                    2,
                    vec![
                        entry(1, "lobby", 101, 1, None),
                        entry(2, "gate", 102, 2, None)
                    ]
                )
            ),
        ]
    );
    // Nothing was listed for it: the revision did not move, nobody was told.
    assert_eq!(s.revision(), 2);
    assert_eq!(s.entries().len(), 2);
    // A new node is pushed to the watcher like to a node concerned with it.
    let battle = s.handle_accepted(secs(2));
    s.handle_received(secs(2), battle, &register_bytes(3, "battle", 103));
    let out = drain(&mut s);
    assert_eq!(
        out.last(),
        Some(&tx(w, put(&s, 3, entry(3, "battle", 103, 3, None))))
    );
    s.handle_received(secs(3), gate, &bye(ByeReason::Shutdown));
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Close { conn: gate },
            tx(
                lobby,
                Delete {
                    epoch: s.epoch(),
                    revision: 4,
                    id: NodeId(2),
                    name: "n2",
                }
                .into()
            ),
            tx(
                w,
                Delete {
                    epoch: s.epoch(),
                    revision: 4,
                    id: NodeId(2),
                    name: "n2",
                }
                .into()
            ),
            tx(
                battle,
                Delete {
                    epoch: s.epoch(),
                    revision: 4,
                    id: NodeId(2),
                    name: "n2",
                }
                .into()
            ),
            ServerOutput::Event(ServerEvent::Removed {
                key: EntryKey::Id(NodeId(2))
            }),
        ]
    );
    // The watcher leaves: no Delete, no protection, nothing for anyone but its close.
    s.handle_received(secs(4), w, &bye(ByeReason::Shutdown));
    assert_eq!(drain(&mut s), vec![ServerOutput::Close { conn: w }]);
    assert_eq!(s.revision(), 4);
    // A watcher whose connection drops leaves no protected entry either.
    let w2 = s.handle_accepted(secs(5));
    s.handle_received(secs(5), w2, &watch_bytes(1_000_043));
    drain(&mut s);
    s.handle_closed(secs(6), w2);
    assert_eq!(drain(&mut s), vec![]);
    assert_eq!(s.entries().len(), 2);
    assert_eq!(s.connection_count(), 2);
}

#[test]
fn a_watcher_is_pushed_new_nodes_and_may_not_update_or_register() {
    let mut s = server();
    let w = s.handle_accepted(secs(0));
    s.handle_received(secs(0), w, &watch_bytes(1_000_042));
    assert_eq!(
        drain(&mut s),
        vec![
            ServerOutput::Event(ServerEvent::Watching { conn: w }),
            tx(w, snapshot(&s, 0, vec![])),
        ]
    );
    // Its access deadline is gone: only the heartbeat deadline (15 s) is left.
    assert_eq!(s.poll_timeout(), Some(secs(15)));
    let a = s.handle_accepted(secs(1));
    s.handle_received(secs(1), a, &register_bytes(1, "x", 101));
    assert_eq!(
        drain(&mut s),
        vec![
            registered(a, 1, false),
            tx(a, snapshot(&s, 1, vec![entry(1, "x", 101, 1, None)])),
            tx(w, put(&s, 1, entry(1, "x", 101, 1, None))),
        ]
    );
    // A second Register on a watching connection is a protocol error, and closes it alone.
    s.handle_received(secs(2), w, &register_bytes(9, "x", 109));
    assert_eq!(
        drain(&mut s),
        vec![
            tx(
                w,
                Bye {
                    reason: ByeReason::ProtocolError
                }
                .into()
            ),
            ServerOutput::Close { conn: w },
            ServerOutput::Event(ServerEvent::ProtocolError {
                conn: w,
                error: ProtocolError::AlreadyRegistered
            }),
        ]
    );
    assert_eq!(s.entries().len(), 1);
    // An Update from a watcher is refused: it registered nothing.
    let w = s.handle_accepted(secs(3));
    s.handle_received(secs(3), w, &watch_bytes(1_000_042));
    drain(&mut s);
    let update = bytes(
        Update {
            incarnation: 7,
            discovery: Some(disc(1_000_042, "ls")),
            topology: None,
        }
        .into(),
    );
    s.handle_received(secs(4), w, &update);
    let out = drain(&mut s);
    assert_eq!(
        out.last(),
        Some(&ServerOutput::Event(ServerEvent::ProtocolError {
            conn: w,
            error: ProtocolError::NotRegistered
        }))
    );
    assert_eq!(s.entries().len(), 1);
    assert_eq!(s.revision(), 1);
}
