//! Bad input from a client: the connection is closed with `Bye{ProtocolError}` and an event,
//! the listed nodes do not change, nothing panics.

use alloc::{vec, vec::Vec};

use super::*;
use crate::{
    registry::fixtures::{disc, secs, topo},
    wire::DecodeError,
};

fn bytes(frame: Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    wire::encode(&frame, &mut out).expect("test: encodable");
    out
}

/// A server with node 1 registered on connection 1 (outputs drained).
fn with_one() -> (RegistryServer, ConnId) {
    let mut s = RegistryServer::new(ServerConfig::default(), 3);
    let a = s.handle_accepted(secs(0));
    let reg = Register {
        watch: false,
        incarnation: 101,
        discovery: disc(1, "x"),
        topology: None,
        proof: None,
    };
    s.handle_received(secs(0), a, &bytes(reg.into()));
    while s.poll_output().is_some() {}
    (s, a)
}

/// Feeds `input` on a fresh connection and checks the exact closing outputs and that the
/// listed nodes did not change.
fn refused_on_fresh_conn(input: &[u8], error: ProtocolError) {
    let (mut s, _) = with_one();
    let before = s.entries();
    let b = s.handle_accepted(secs(1));
    s.handle_received(secs(1), b, input);
    let out: Vec<ServerOutput> = core::iter::from_fn(|| s.poll_output()).collect();
    assert_eq!(
        out,
        vec![
            ServerOutput::Transmit {
                conn: b,
                bytes: vec![9, 0, 0, 0, 1, 8, 0, 0, 2] // Bye{ProtocolError}
            },
            ServerOutput::Close { conn: b },
            ServerOutput::Event(ServerEvent::ProtocolError { conn: b, error }),
        ]
    );
    assert_eq!(s.entries(), before);
    assert_eq!(s.connection_count(), 1);
    // Anything more on the closed connection is ignored.
    s.handle_received(secs(2), b, input);
    s.handle_closed(secs(2), b);
    assert_eq!(s.poll_output(), None);
}

#[test]
fn garbage_bytes() {
    // A plausible length (32) and a bad version byte: a decode error. (Garbage whose length
    // field is over the access phase's limit is a `RecordTooLarge` refusal from the length
    // alone: `perimeter.rs`.)
    refused_on_fresh_conn(
        &[0x20, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef],
        ProtocolError::Decode(DecodeError::BadVersion { version: 0xde }),
    );
}

#[test]
fn a_length_shorter_than_the_header() {
    refused_on_fresh_conn(
        &[3, 0, 0, 0, 1, 16, 0, 0],
        ProtocolError::Decode(DecodeError::BadLength { len: 3 }),
    );
}

#[test]
fn a_snapshot_from_a_client() {
    let snapshot = Snapshot {
        epoch: 1,
        revision: 1,
        entries: vec![],
        more: false,
    };
    // A kind no client sends is refused by the per-phase reader from its header.
    refused_on_fresh_conn(
        &bytes(snapshot.into()),
        ProtocolError::Decode(DecodeError::KindNotAllowed {
            kind: FrameKind::Snapshot,
        }),
    );
}

#[test]
fn a_bus_frame_from_a_client() {
    // Refused by the per-phase reader from its header (bus kinds are never accepted here).
    refused_on_fresh_conn(
        &bytes(wire::Ping { nonce: 1 }.into()),
        ProtocolError::Decode(DecodeError::KindNotAllowed {
            kind: FrameKind::Ping,
        }),
    );
}

#[test]
fn register_with_no_discovery_identity() {
    // Hand-built: the encoder refuses such a record. {"id":0,"name":""} is 18 bytes.
    let json = br#"{"id":0,"name":""}"#;
    let len = 8 + 8 + 4 + json.len() + 4;
    let mut frame = vec![len as u8, 0, 0, 0, 1, 16, 0, 0];
    frame.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
    frame.extend_from_slice(&(json.len() as u32).to_le_bytes());
    frame.extend_from_slice(json);
    frame.extend_from_slice(&[0, 0, 0, 0]);
    refused_on_fresh_conn(
        &frame,
        ProtocolError::Decode(DecodeError::Json {
            field: "discovery",
            error: crate::discovery::DecodeError::NoIdentity,
        }),
    );
}

#[test]
fn a_lying_record_length() {
    // A register claiming a 1000-byte discovery record inside a 28-byte frame.
    let mut frame = vec![28, 0, 0, 0, 1, 16, 0, 0];
    frame.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
    frame.extend_from_slice(&1000u32.to_le_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    refused_on_fresh_conn(
        &frame,
        ProtocolError::Decode(DecodeError::Truncated { field: "discovery" }),
    );
}

#[test]
fn update_before_register() {
    let update = Update {
        incarnation: 1,
        discovery: None,
        topology: Some(topo(5, 1)),
    };
    // Not accepted at all before a registration: refused from its header.
    refused_on_fresh_conn(
        &bytes(update.into()),
        ProtocolError::Decode(DecodeError::KindNotAllowed {
            kind: FrameKind::Update,
        }),
    );
}

#[test]
fn register_with_someone_elses_topology() {
    let reg = Register {
        watch: false,
        incarnation: 5,
        discovery: disc(5, "x"),
        topology: Some(topo(6, 1)),
        proof: None,
    };
    refused_on_fresh_conn(
        &bytes(reg.into()),
        ProtocolError::TopologyMismatch {
            discovery: NodeId(5),
            topology: NodeId(6),
        },
    );
}

#[test]
fn bad_input_from_a_registered_node_protects_it() {
    let (mut s, a) = with_one();
    let update = Update {
        incarnation: 7, // registered as 101
        discovery: None,
        topology: None,
    };
    s.handle_received(secs(1), a, &bytes(update.into()));
    let out: Vec<ServerOutput> = core::iter::from_fn(|| s.poll_output()).collect();
    assert_eq!(
        out,
        vec![
            ServerOutput::Transmit {
                conn: a,
                bytes: vec![9, 0, 0, 0, 1, 8, 0, 0, 2]
            },
            ServerOutput::Close { conn: a },
            ServerOutput::Event(ServerEvent::ProtocolError {
                conn: a,
                error: ProtocolError::WrongIncarnation {
                    registered: 101,
                    got: 7
                }
            }),
            ServerOutput::Event(ServerEvent::Protected {
                key: EntryKey::Id(NodeId(1))
            }),
        ]
    );
    assert_eq!(s.revision(), 1);
    assert_eq!(s.entries().len(), 1);
    assert_eq!(s.entries()[0].lost_for, Some(Duration::ZERO));
}

#[test]
fn second_register_on_one_connection() {
    let (mut s, a) = with_one();
    let reg = Register {
        watch: false,
        incarnation: 101,
        discovery: disc(1, "x"),
        topology: None,
        proof: None,
    };
    s.handle_received(secs(1), a, &bytes(reg.into()));
    let out: Vec<ServerOutput> = core::iter::from_fn(|| s.poll_output()).collect();
    assert_eq!(
        out[2],
        ServerOutput::Event(ServerEvent::ProtocolError {
            conn: a,
            error: ProtocolError::AlreadyRegistered
        })
    );
    assert_eq!(s.revision(), 1);
}

#[test]
fn random_bytes_never_panic() {
    // Deterministic junk of many lengths and cut points; only "no panic" and "closed".
    let mut rng = crate::rng::Rng::new(99);
    for round in 0..200u64 {
        let (mut s, _) = with_one();
        let b = s.handle_accepted(secs(1));
        let len = (rng.below(64) + 1) as usize;
        let mut junk: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if round % 2 == 0 && junk.len() >= 8 {
            // A plausible header so the body parsers run.
            junk[0..4].copy_from_slice(&(len as u32).to_le_bytes());
            junk[4] = 1;
            junk[5] = 16 + (round % 6) as u8;
            junk[6] = 0;
            junk[7] = 0;
        }
        s.handle_received(secs(1), b, &junk);
        while s.poll_output().is_some() {}
        assert_eq!(s.entries().len(), 1, "round {round}");
    }
}
