//! A registry with cluster keys: a client proves a key before it registers or reads
//! anything, the registry proves it back; wrong keys, tampered and replayed proofs, and
//! registering without the handshake are refused and counted.

use alloc::{vec, vec::Vec};

use super::*;
use crate::{
    auth::{AuthFailure, ClusterKey, ClusterKeys, ROLE_ACCEPTOR, ROLE_DIALLER, Side, Transcript},
    registry::fixtures::secs,
    wire::{Auth, Challenge, Decoded, Hello},
};

const ID: u64 = 0x301;
const INCARNATION: u64 = 100 + ID;

fn keyed_server(keys: &[ClusterKey]) -> RegistryServer {
    let config = ServerConfig {
        keys: ClusterKeys::new(keys),
        ..ServerConfig::default()
    };
    RegistryServer::new(config, SEED)
}

fn key(byte: u8) -> ClusterKey {
    ClusterKey::new([byte; 32])
}

fn hello(keys: &ClusterKeys, nonce: [u8; 32]) -> Vec<u8> {
    bytes(
        Hello {
            node: NodeId(ID),
            incarnation: INCARNATION,
            versions: PROTOCOL_VERSIONS,
            name: "n",
            challenge: keys.current_id().map(|key_id| Challenge { nonce, key_id }),
        }
        .into(),
    )
}

/// The registry's `HelloAck` among `out`: (result, versions, nonce, proof, epoch).
fn hello_ack(out: &[ServerOutput]) -> HelloAck<'static> {
    for o in out {
        if let ServerOutput::Transmit { bytes, .. } = o
            && let Ok(Decoded::Frame(Frame::HelloAck(ack), _)) = wire::decode(bytes, 1 << 20)
        {
            return HelloAck { name: "", ..ack };
        }
    }
    panic!("no HelloAck: {out:?}");
}

/// The registry transcript of a client whose `Hello` named `keys`' current key.
fn transcript(keys: &ClusterKeys, role: u8, ours: [u8; 32], ack: &HelloAck<'_>) -> Transcript {
    Transcript {
        context: crate::auth::Context::Registry,
        role,
        hint: keys.current_id().expect("keys"),
        result: Ok(()),
        dialler: Side {
            node: NodeId(ID),
            incarnation: INCARNATION,
            versions: PROTOCOL_VERSIONS,
            nonce: ours,
        },
        acceptor: Side {
            node: ack.node,
            incarnation: ack.incarnation,
            versions: ack.versions,
            nonce: ack.nonce.expect("a nonce"),
        },
    }
}

/// A client with `keys` connects, says `Hello` with `nonce`, and answers the registry's
/// `HelloAck` with `Auth` (spoiled by `tamper`) and `Register`. Returns the connection, the bytes it sent and what the server
/// output after them.
fn handshake(
    s: &mut RegistryServer,
    keys: &ClusterKeys,
    nonce: [u8; 32],
    tamper: impl Fn(&mut Proof),
) -> (ConnId, Vec<u8>, Vec<ServerOutput>) {
    let conn = s.handle_accepted(secs(0));
    let hello = hello(keys, nonce);
    s.handle_received(secs(0), conn, &hello);
    let ack = hello_ack(&drain(s));
    assert_eq!(ack.result, Ok(()));
    let mut proof = keys
        .prove_with(
            &transcript(keys, ROLE_DIALLER, nonce, &ack),
            ack.proof.map(|p| p.key_id),
        )
        .expect("keys");
    tamper(&mut proof);
    let mut rest = bytes(Auth { proof }.into());
    rest.extend(register_bytes(ID, "t", INCARNATION));
    s.handle_received(secs(0), conn, &rest);
    let out = drain(s);
    let mut sent = hello;
    sent.extend(rest);
    (conn, sent, out)
}

fn refused(conn: ConnId, epoch: u64, failure: AuthFailure) -> Vec<ServerOutput> {
    let ack = HelloAck {
        node: NodeId::NONE,
        incarnation: epoch,
        versions: VersionRange { min: 0, max: 0 },
        name: "",
        nonce: None,
        proof: None,
        result: Err(RefuseReason::WrongCluster),
    };
    vec![
        tx(conn, ack.into()),
        ServerOutput::Close { conn },
        ServerOutput::Event(ServerEvent::Unauthenticated { conn, failure }),
    ]
}

#[test]
fn the_right_key_registers_and_the_registry_proves_it_too() {
    let mut s = keyed_server(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let conn = s.handle_accepted(secs(0));
    s.handle_received(secs(0), conn, &hello(&keys, [7; 32]));
    let ack = hello_ack(&drain(&mut s));
    assert_eq!(
        keys.check(
            &transcript(&keys, ROLE_ACCEPTOR, [7; 32], &ack),
            ack.proof.as_ref()
        ),
        Ok(())
    );
    let (conn, _, out) = handshake(&mut s, &keys, [8; 32], |_| {});
    assert!(out.contains(&registered(conn, ID, false)), "{out:?}");
    assert_eq!(s.stats().auth_refusals.total(), 0);
}

#[test]
fn a_wrong_key_neither_registers_nor_reads_and_is_counted() {
    let mut s = keyed_server(&[key(1)]);
    let (conn, _, out) = handshake(&mut s, &ClusterKeys::new(&[key(2)]), [7; 32], |_| {});
    assert_eq!(out, refused(conn, s.epoch(), AuthFailure::UnknownKey));
    assert_eq!(s.stats().auth_refusals.unknown_key, 1);
    assert!(s.entries().is_empty());
}

#[test]
fn a_tampered_proof_is_refused_and_counted() {
    let mut s = keyed_server(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let (conn, _, out) = handshake(&mut s, &keys, [7; 32], |p| p.mac[5] ^= 4);
    assert_eq!(out, refused(conn, s.epoch(), AuthFailure::BadProof));
    assert_eq!(s.stats().auth_refusals.bad_proof, 1);
    assert!(s.entries().is_empty());
}

#[test]
fn a_recorded_handshake_replayed_is_refused_and_counted() {
    let mut s = keyed_server(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let (first, recording, _) = handshake(&mut s, &keys, [7; 32], |_| {});
    s.handle_closed(secs(1), first);
    drain(&mut s);
    let conn = s.handle_accepted(secs(1));
    s.handle_received(secs(1), conn, &recording);
    assert_eq!(drain(&mut s), refused(conn, s.epoch(), AuthFailure::Replay));
    assert_eq!(s.stats().auth_refusals.replay, 1);
}

#[test]
fn registering_without_the_handshake_is_refused_and_counted() {
    let mut s = keyed_server(&[key(1)]);
    let conn = s.handle_accepted(secs(0));
    s.handle_received(secs(0), conn, &register_bytes(ID, "t", INCARNATION));
    assert_eq!(
        drain(&mut s),
        refused(conn, s.epoch(), AuthFailure::NoProof)
    );
    assert_eq!(s.stats().auth_refusals.no_proof, 1);
    assert!(s.entries().is_empty());
}

#[test]
fn registering_before_the_proof_is_refused_and_counted() {
    let mut s = keyed_server(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let conn = s.handle_accepted(secs(0));
    s.handle_received(secs(0), conn, &hello(&keys, [7; 32]));
    drain(&mut s);
    s.handle_received(secs(0), conn, &register_bytes(ID, "t", INCARNATION));
    assert_eq!(
        drain(&mut s),
        refused(conn, s.epoch(), AuthFailure::BeforeAuth)
    );
    assert_eq!(s.stats().auth_refusals.before_auth, 1);
}

#[test]
fn a_client_closing_after_the_registrys_proof_is_counted_aborted() {
    // A client holding only a retired key cannot check the registry's proof and hangs up.
    let mut s = keyed_server(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let conn = s.handle_accepted(secs(0));
    s.handle_received(secs(0), conn, &hello(&keys, [7; 32]));
    let ack = hello_ack(&drain(&mut s));
    assert!(ack.proof.is_some(), "the registry proved itself");
    s.handle_closed(secs(1), conn);
    assert_eq!(
        drain(&mut s),
        vec![ServerOutput::Event(ServerEvent::Unauthenticated {
            conn,
            failure: AuthFailure::Aborted,
        })]
    );
    assert_eq!(s.stats().auth_refusals.aborted, 1);
    assert_eq!(s.stats().auth_refusals.total(), 1);
    // A connection closed before it said anything, or after it proved the key, is no
    // refused handshake.
    let silent = s.handle_accepted(secs(2));
    s.handle_closed(secs(2), silent);
    let (proved, _, _) = handshake(&mut s, &keys, [8; 32], |_| {});
    s.handle_closed(secs(3), proved);
    assert_eq!(s.stats().auth_refusals.total(), 1);
}

#[test]
fn a_handshake_unfinished_at_the_access_timeout_is_counted_timed_out() {
    let mut s = keyed_server(&[key(1)]);
    let keys = ClusterKeys::new(&[key(1)]);
    let silent = s.handle_accepted(secs(0));
    let halfway = s.handle_accepted(secs(0));
    s.handle_received(secs(0), halfway, &hello(&keys, [7; 32]));
    drain(&mut s);
    let limit = ServerConfig::default().access_timeout;
    s.handle_timeout(secs(0) + limit);
    let out = drain(&mut s);
    for conn in [silent, halfway] {
        assert!(
            out.contains(&ServerOutput::Event(ServerEvent::Unauthenticated {
                conn,
                failure: AuthFailure::TimedOut,
            })),
            "{conn:?}: {out:?}"
        );
        assert!(out.contains(&ServerOutput::Close { conn }), "{out:?}");
    }
    assert_eq!(s.stats().auth_refusals.timed_out, 2);
    // Without keys nothing is a handshake: an idle connection's timeout is no refusal.
    let mut open = RegistryServer::new(ServerConfig::default(), SEED);
    let idle = open.handle_accepted(secs(0));
    open.handle_timeout(secs(0) + limit);
    assert!(drain(&mut open).contains(&ServerOutput::Close { conn: idle }));
    assert_eq!(open.stats().auth_refusals.total(), 0);
}

#[test]
fn rotation_a_registry_with_new_and_old_keys_takes_either() {
    let mut s = keyed_server(&[key(2), key(1)]);
    let (a, _, out) = handshake(&mut s, &ClusterKeys::new(&[key(1)]), [7; 32], |_| {});
    assert!(out.contains(&registered(a, ID, false)), "{out:?}");
    s.handle_closed(secs(0), a);
    drain(&mut s);
    let (b, _, out) = handshake(&mut s, &ClusterKeys::new(&[key(2)]), [8; 32], |_| {});
    assert!(out.contains(&registered(b, ID, true)), "{out:?}");
}
