//! Unique names and same-identity takeover, one scenario each, on virtual time with exact
//! instants and exact frames.

use alloc::{string::String, vec, vec::Vec};

use super::*;
use crate::{
    registry::fixtures::{disc, secs},
    time::Duration,
};

/// The discovery record of node `id` (type `x`) named `name` with the identity secret
/// `secret` (published as its hash, as a node publishes it).
fn named(id: u64, name: &str, secret: &str) -> DiscoveryInfo {
    DiscoveryInfo {
        name: String::from(name),
        identity: crate::discovery::published_identity(secret),
        ..disc(id, "x")
    }
}

fn register(discovery: DiscoveryInfo, incarnation: u64) -> Vec<u8> {
    bytes(
        Register {
            watch: false,
            incarnation,
            discovery,
            topology: None,
            proof: None,
        }
        .into(),
    )
}

/// Accepts a connection at `now`, registers `discovery` on it (no identity proof), returns it
/// with the outputs.
fn try_join(
    s: &mut RegistryServer,
    now: Instant,
    discovery: DiscoveryInfo,
    incarnation: u64,
) -> (ConnId, Vec<ServerOutput>) {
    let conn = s.handle_accepted(now);
    s.handle_received(now, conn, &register(discovery, incarnation));
    (conn, drain(s))
}

/// [`try_join`] with the `Register` carrying the proof of `secret`, as a node does.
fn try_join_proving(
    s: &mut RegistryServer,
    now: Instant,
    secret: &str,
    discovery: DiscoveryInfo,
    incarnation: u64,
) -> (ConnId, Vec<ServerOutput>) {
    let conn = s.handle_accepted(now);
    let frame = Register {
        watch: false,
        incarnation,
        discovery,
        topology: None,
        proof: crate::discovery::IdentityProof::of(secret),
    };
    s.handle_received(now, conn, &bytes(frame.into()));
    (conn, drain(s))
}

/// The exact outputs refusing `conn` (claiming node `id`) because node `holder` (of
/// incarnation `holder_incarnation`) holds `name`.
fn name_refusal(
    conn: ConnId,
    id: u64,
    name: &str,
    holder: u64,
    holder_incarnation: u64,
) -> Vec<ServerOutput> {
    let ack = HelloAck {
        node: NodeId(holder),
        incarnation: holder_incarnation,
        versions: VersionRange { min: 0, max: 0 },
        name,
        nonce: None,
        proof: None,
        result: Err(RefuseReason::NameTaken),
    };
    vec![
        tx(conn, ack.into()),
        ServerOutput::Close { conn },
        ServerOutput::Event(ServerEvent::NameTaken {
            conn,
            key: EntryKey::Id(NodeId(id)),
            name: String::from(name),
            holder: NodeId(holder),
        }),
    ]
}

fn listed(discovery: DiscoveryInfo, incarnation: u64, revision: u64) -> RegistryEntry {
    RegistryEntry {
        incarnation,
        discovery: DiscoveryInfo {
            revision,
            ..discovery
        },
        topology: None,
        lost_for: None,
    }
}

#[test]
fn a_name_held_by_a_live_node_is_refused_with_the_holders_id() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let before = s.entries();
    let (b, out) = try_join(&mut s, secs(1), named(2, "n1", ""), 102);
    assert_eq!(out, name_refusal(b, 2, "n1", 1, 101));
    assert_eq!(s.entries(), before);
    assert_eq!(s.connection_count(), 1);
    assert_eq!(s.stats().names_taken, 1);
    assert_eq!(s.stats().duplicate_ids, 0);
    // The holder was not disturbed: nothing was sent to it.
    assert!(
        out.iter()
            .all(|o| !matches!(o, ServerOutput::Transmit { conn, .. } if *conn == a))
    );
}

#[test]
fn a_name_held_by_a_protected_node_is_free_once_the_holder_is_removed() {
    let mut s = quiet_server();
    let a = join(&mut s, secs(0), 1, "x");
    s.handle_closed(secs(5), a);
    drain(&mut s);
    // Inside the protection the holder is still listed (suspect): the name is held.
    let (b, out) = try_join(&mut s, secs(34), named(2, "n1", ""), 102);
    assert_eq!(out, name_refusal(b, 2, "n1", 1, 101));
    s.handle_timeout(secs(35));
    assert_eq!(
        drain(&mut s),
        vec![ServerOutput::Event(ServerEvent::Removed {
            key: EntryKey::Id(NodeId(1))
        })]
    );
    let (c, out) = try_join(&mut s, secs(35), named(2, "n1", ""), 102);
    assert_eq!(
        out,
        vec![
            registered(c, 2, false),
            tx(c, snapshot(&s, 3, vec![listed(named(2, "n1", ""), 102, 3)])),
        ]
    );
    assert_eq!(s.stats().names_taken, 1);
}

#[test]
fn a_name_is_free_at_once_after_its_holder_says_goodbye() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let bye = bytes(
        Bye {
            reason: ByeReason::Shutdown,
        }
        .into(),
    );
    s.handle_received(secs(1), a, &bye);
    drain(&mut s);
    let (b, out) = try_join(&mut s, secs(1), named(2, "n1", ""), 102);
    assert_eq!(
        out,
        vec![
            registered(b, 2, false),
            tx(b, snapshot(&s, 3, vec![listed(named(2, "n1", ""), 102, 3)])),
        ]
    );
}

#[test]
fn a_restarted_node_keeps_its_own_name() {
    let mut s = quiet_server();
    let a = join(&mut s, secs(0), 1, "x");
    s.handle_closed(secs(1), a);
    drain(&mut s);
    // Same id, same name, a new incarnation: its own protected entry is not a rival.
    let (b, out) = try_join(&mut s, secs(2), disc(1, "x"), 999);
    assert_eq!(
        out[0],
        ServerOutput::Event(ServerEvent::Registered {
            conn: b,
            key: EntryKey::Id(NodeId(1)),
            incarnation: 999,
            restored: true,
        })
    );
    assert_eq!(s.stats(), ServerStats::default());
}

#[test]
fn a_name_only_node_holds_its_name_against_a_node_with_an_id() {
    let mut s = server();
    let (_, out) = try_join(&mut s, secs(0), named(0, "solo", ""), 50);
    assert!(matches!(
        out[0],
        ServerOutput::Event(ServerEvent::Registered { .. })
    ));
    let (b, out) = try_join(&mut s, secs(1), named(2, "solo", ""), 102);
    assert_eq!(out, name_refusal(b, 2, "solo", 0, 50));
}

#[test]
fn an_update_renaming_to_a_held_name_is_a_protocol_error() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let b = join(&mut s, secs(0), 2, "x");
    let before = s.entries();
    let update = Update {
        incarnation: 102,
        discovery: Some(named(2, "n1", "")),
        topology: None,
    };
    s.handle_received(secs(1), b, &bytes(update.into()));
    assert_eq!(
        drain(&mut s),
        vec![
            tx(
                b,
                Bye {
                    reason: ByeReason::ProtocolError
                }
                .into()
            ),
            ServerOutput::Close { conn: b },
            ServerOutput::Event(ServerEvent::ProtocolError {
                conn: b,
                error: ProtocolError::NameTaken {
                    name: String::from("n1"),
                    holder: NodeId(1),
                },
            }),
            // Its session loss, pushed at once with its old records marked suspect.
            tx(a, put(&s, 2, entry(2, "x", 102, 2, LOST_AT_ONCE))),
            ServerOutput::Event(ServerEvent::Protected {
                key: EntryKey::Id(NodeId(2))
            }),
        ]
    );
    assert_eq!(s.entries()[0], before[0]);
    assert_eq!(s.stats().names_taken, 1);
}

#[test]
fn a_rename_frees_the_old_name() {
    let mut s = server();
    let a = join(&mut s, secs(0), 1, "x");
    let update = Update {
        incarnation: 101,
        discovery: Some(named(1, "renamed", "")),
        topology: None,
    };
    s.handle_received(secs(1), a, &bytes(update.into()));
    drain(&mut s);
    let (b, out) = try_join(&mut s, secs(2), named(2, "n1", ""), 102);
    assert_eq!(out[0], registered(b, 2, false));
    let (c, out) = try_join(&mut s, secs(3), named(3, "renamed", ""), 103);
    assert_eq!(out, name_refusal(c, 3, "renamed", 1, 101));
}

/// Was: the same identity from another incarnation took a live connection over at once.
/// Two copies of one node (same default identity) then replaced each other in turn every
/// reconnect (issue 22): a holder still heard from is now a second copy, refused; only a
/// holder silent for [`LIVE_HOLDER_SILENCE`] (its session gone) is taken over.
#[test]
fn same_identity_from_another_incarnation_takes_over_a_silent_connection_only() {
    let mut s = server();
    let (a, _) = try_join_proving(&mut s, secs(0), "deploy-1", named(1, "n1", "deploy-1"), 101);
    let (dup, out) = try_join_proving(&mut s, secs(1), "deploy-1", named(1, "n1", "deploy-1"), 303);
    assert_eq!(
        out,
        vec![
            tx(
                dup,
                HelloAck {
                    node: NodeId(1),
                    incarnation: 101,
                    versions: VersionRange { min: 0, max: 0 },
                    name: "",
                    nonce: None,
                    proof: None,
                    result: Err(RefuseReason::DuplicateId),
                }
                .into()
            ),
            ServerOutput::Close { conn: dup },
            ServerOutput::Event(ServerEvent::Refused {
                conn: dup,
                key: EntryKey::Id(NodeId(1)),
                incarnation: 303,
                holder: 101,
            }),
        ]
    );
    assert_eq!((s.stats().takeovers, s.stats().duplicate_ids), (0, 1));
    // One instant before the holder has been silent for LIVE_HOLDER_SILENCE: still live.
    let almost = secs(0) + LIVE_HOLDER_SILENCE - Duration::from_nanos(1);
    let (_, out) = try_join_proving(&mut s, almost, "deploy-1", named(1, "n1", "deploy-1"), 304);
    assert_eq!(out.len(), 3, "refused: {out:?}");
    assert_eq!((s.stats().takeovers, s.stats().duplicate_ids), (0, 2));
    let gone = secs(0) + LIVE_HOLDER_SILENCE;
    let (b, out) = try_join_proving(&mut s, gone, "deploy-1", named(1, "n1", "deploy-1"), 202);
    assert_eq!(
        out,
        vec![
            ServerOutput::Event(ServerEvent::TakenOver {
                replaced: a,
                key: EntryKey::Id(NodeId(1)),
                incarnation: 101,
            }),
            tx(
                a,
                Bye {
                    reason: ByeReason::Replaced
                }
                .into()
            ),
            ServerOutput::Close { conn: a },
            ServerOutput::Event(ServerEvent::Registered {
                conn: b,
                key: EntryKey::Id(NodeId(1)),
                incarnation: 202,
                restored: true,
            }),
            tx(
                b,
                snapshot(&s, 2, vec![listed(named(1, "n1", "deploy-1"), 202, 2)])
            ),
        ]
    );
    assert_eq!(s.stats().takeovers, 1);
    // The replaced connection's late close changes nothing: no protection, no removal.
    s.handle_closed(gone, a);
    assert_eq!(drain(&mut s), vec![]);
    assert_eq!(s.connection_count(), 1);
    assert_eq!(s.poll_timeout(), Some(gone + Duration::from_secs(15)));
}

#[test]
fn another_identity_on_a_live_connection_is_refused() {
    let mut s = server();
    try_join_proving(&mut s, secs(0), "deploy-1", named(1, "n1", "deploy-1"), 101);
    let before = s.entries();
    for (identity, incarnation) in [("deploy-2", 202), ("", 203)] {
        let (b, out) = try_join_proving(
            &mut s,
            secs(1),
            identity,
            named(1, "n1", identity),
            incarnation,
        );
        assert_eq!(
            out,
            vec![
                tx(
                    b,
                    HelloAck {
                        node: NodeId(1),
                        incarnation: 101,
                        versions: VersionRange { min: 0, max: 0 },
                        name: "",
                        nonce: None,
                        proof: None,
                        result: Err(RefuseReason::DuplicateId),
                    }
                    .into()
                ),
                ServerOutput::Close { conn: b },
                ServerOutput::Event(ServerEvent::Refused {
                    conn: b,
                    key: EntryKey::Id(NodeId(1)),
                    incarnation,
                    holder: 101,
                }),
            ],
            "identity {identity:?}"
        );
    }
    assert_eq!(s.entries(), before);
    assert_eq!(s.stats().duplicate_ids, 2);
    assert_eq!(s.stats().takeovers, 0);
}

#[test]
fn a_takeover_under_a_held_name_is_refused_and_displaces_nobody() {
    let mut s = server();
    let (a, _) = try_join(&mut s, secs(0), named(1, "n1", "deploy-1"), 101);
    join(&mut s, secs(0), 2, "x");
    let before = s.entries();
    // Node 1's own deployment restarts, but now claims node 2's name.
    let (b, out) = try_join(&mut s, secs(1), named(1, "n2", "deploy-1"), 202);
    assert_eq!(out, name_refusal(b, 1, "n2", 2, 102));
    assert_eq!(s.entries(), before);
    assert_eq!(s.connection_count(), 2);
    // Connection `a` is still node 1's: a heartbeat there is answered.
    let beat = Heartbeat {
        epoch: 0,
        sequence: 3,
    };
    s.handle_received(secs(2), a, &bytes(beat.into()));
    assert_eq!(
        drain(&mut s),
        vec![tx(
            a,
            Heartbeat {
                epoch: s.epoch(),
                sequence: 3
            }
            .into()
        )]
    );
}
