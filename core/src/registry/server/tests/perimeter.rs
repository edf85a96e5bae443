//! The registry's perimeter: bounded records and frames before and after registration, a
//! snapshot in bounded parts, and a takeover that needs the identity secret, not what the
//! records publish. Each test fails on `e6251a5` (which accepted all of it).

use alloc::{string::String, vec, vec::Vec};

use super::*;
use crate::{
    discovery::{IdentityProof, published_identity},
    registry::{
        client::{ClientEvent, ClientOutput, RegistryClient},
        fixtures::{client_config, disc, secs},
        limits::{
            DEFAULT_MAX_CUSTOM_DATA, DEFAULT_MAX_LABELS, DEFAULT_MAX_RECORD, RecordField,
            RecordTooLarge,
        },
    },
    wire::{DecodeError, Decoded, REGISTER_OVERHEAD},
};

/// The exact outputs refusing `conn` for `error`.
fn too_large(conn: ConnId, error: RecordTooLarge) -> Vec<ServerOutput> {
    vec![
        tx(
            conn,
            HelloAck {
                node: NodeId(error.len as u64),
                incarnation: error.max as u64,
                versions: VersionRange { min: 0, max: 0 },
                name: error.field.as_str(),
                nonce: None,
                proof: None,
                result: Err(RefuseReason::RecordTooLarge),
            }
            .into(),
        ),
        ServerOutput::Close { conn },
        ServerOutput::Event(ServerEvent::TooLarge { conn, error }),
    ]
}

fn register_of(discovery: DiscoveryInfo, incarnation: u64) -> Vec<u8> {
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

/// Node `id`'s record padded with `custom_data` so its `Register` is exactly `len` bytes.
fn register_of_len(id: u64, len: usize) -> Vec<u8> {
    let with = |n: usize| DiscoveryInfo {
        custom_data: "a".repeat(n).into(),
        ..disc(id, "x")
    };
    let one = register_of(with(1), 1).len();
    let pad = with(len - one + 1);
    let frame = register_of(pad, 1);
    assert_eq!(frame.len(), len);
    frame
}

#[test]
fn the_16_mib_register_of_the_probe_is_refused_and_reaches_no_one() {
    let mut s = quiet_server();
    let watcher = join(&mut s, secs(0), 1, "x");
    let attacker = s.handle_accepted(secs(1));
    let frame = register_of_len(9, 16_777_208);
    // Refused from its 4 length bytes: the rest is never buffered.
    s.handle_received(secs(1), attacker, &frame[..4]);
    let error = RecordTooLarge {
        field: RecordField::Frame,
        len: 16_777_208,
        max: DEFAULT_MAX_RECORD + REGISTER_OVERHEAD,
    };
    assert_eq!(drain(&mut s), too_large(attacker, error));
    s.handle_received(secs(1), attacker, &frame[4..]);
    assert_eq!(
        drain(&mut s),
        vec![],
        "nothing to the watcher, nothing more"
    );
    assert_eq!(s.stats().records_too_large, 1);
    assert_eq!(s.entries(), vec![entry(1, "x", 101, 1, None)]);
    // A newcomer's snapshot is small and decodes within the clients' default limit.
    let newcomer = s.handle_accepted(secs(2));
    s.handle_received(secs(2), newcomer, &register_bytes(2, "x", 102));
    let out = drain(&mut s);
    assert_eq!(
        out[1],
        tx(
            newcomer,
            snapshot(
                &s,
                2,
                vec![entry(1, "x", 101, 1, None), entry(2, "x", 102, 2, None)]
            )
        )
    );
    let ServerOutput::Transmit { bytes: snap, .. } = &out[1] else {
        panic!("test: a snapshot")
    };
    let mut reader = FrameReader::new(wire::DEFAULT_MAX_FRAME);
    reader.push(snap);
    assert!(matches!(reader.next_frame(), Ok(Some(Frame::Snapshot(_)))));
    assert_eq!(out[2], tx(watcher, put(&s, 2, entry(2, "x", 102, 2, None))));
}

#[test]
fn a_register_over_a_field_or_the_record_limit_is_refused_with_the_figures() {
    let mut s = quiet_server();
    join(&mut s, secs(0), 1, "x");
    let custom = DiscoveryInfo {
        custom_data: "c".repeat(DEFAULT_MAX_CUSTOM_DATA + 1).into(),
        ..disc(7, "x")
    };
    let mut labelled = disc(7, "x");
    labelled
        .metadata
        .labels
        .insert("k".repeat(8), "v".repeat(DEFAULT_MAX_LABELS - 7));
    // Every field within its limit, the whole JSON one byte over: long listen addresses.
    let mut whole = disc(7, "x");
    whole.listen.clear();
    let target = DEFAULT_MAX_RECORD + 1;
    let mut i = 0;
    while whole.to_json().len() < target {
        whole
            .listen
            .push(alloc::format!("atcp://h{i}.example:{}", "1".repeat(1000)));
        let over = whole.to_json().len().saturating_sub(target);
        if let Some(last) = whole.listen.last_mut() {
            last.truncate(last.len() - over);
        }
        i += 1;
    }
    assert_eq!(whole.to_json().len(), DEFAULT_MAX_RECORD + 1);
    for (record, field, size, max) in [
        (
            custom,
            RecordField::CustomData,
            DEFAULT_MAX_CUSTOM_DATA + 1,
            DEFAULT_MAX_CUSTOM_DATA,
        ),
        (
            labelled,
            RecordField::Labels,
            DEFAULT_MAX_LABELS + 1,
            DEFAULT_MAX_LABELS,
        ),
        (
            whole,
            RecordField::Record,
            DEFAULT_MAX_RECORD + 1,
            DEFAULT_MAX_RECORD,
        ),
    ] {
        let conn = s.handle_accepted(secs(1));
        s.handle_received(secs(1), conn, &register_of(record, 107));
        let error = RecordTooLarge {
            field,
            len: size,
            max,
        };
        assert_eq!(drain(&mut s), too_large(conn, error));
    }
    assert_eq!(s.stats().records_too_large, 3);
    assert_eq!(s.entries(), vec![entry(1, "x", 101, 1, None)]);
}

#[test]
fn an_update_over_the_limit_keeps_the_old_records_and_pushes_nothing() {
    let mut s = quiet_server();
    let watcher = join(&mut s, secs(0), 1, "x");
    let b = join(&mut s, secs(0), 2, "x");
    let update = Update {
        incarnation: 102,
        discovery: Some(DiscoveryInfo {
            custom_data: "u".repeat(40_000).into(),
            ..disc(2, "x")
        }),
        topology: None,
    };
    s.handle_received(secs(1), b, &bytes(update.into()));
    let error = RecordTooLarge {
        field: RecordField::CustomData,
        len: 40_000,
        max: DEFAULT_MAX_CUSTOM_DATA,
    };
    let mut expected = too_large(b, error);
    // The closed connection's session loss is pushed at once: the *old* records, marked
    // suspect, at the old revision (docs/ARCHITECTURE.md §9.3).
    let old_records = entry(2, "x", 102, 2, LOST_AT_ONCE);
    expected.push(tx(watcher, put(&s, 2, old_records.clone())));
    expected.push(ServerOutput::Event(ServerEvent::Protected {
        key: EntryKey::Id(NodeId(2)),
    }));
    assert_eq!(drain(&mut s), expected);
    assert_eq!(s.revision(), 2);
    assert_eq!(s.entries()[1], old_records);
    // Nothing else was pushed to the watcher (no new records, no `Delete`): the outputs
    // above are all.
}

#[test]
fn before_registration_only_the_handshake_kinds_each_within_its_size() {
    let mut s = quiet_server();
    // A 16 MiB `Hello` announced: refused from its 8 header bytes (nothing else buffered).
    let a = s.handle_accepted(secs(0));
    let mut header = (16u32 << 20).to_le_bytes().to_vec();
    header.extend_from_slice(&[1, FrameKind::Hello.code(), 0, 0]);
    s.handle_received(secs(0), a, &header);
    let error = RecordTooLarge {
        field: RecordField::Frame,
        len: 16 << 20,
        max: DEFAULT_MAX_RECORD + REGISTER_OVERHEAD,
    };
    assert_eq!(drain(&mut s), too_large(a, error));
    // A 1 KiB `Hello`: within the phase's largest frame, over a `Hello`'s.
    let b = s.handle_accepted(secs(0));
    s.handle_received(secs(0), b, &[0, 4, 0, 0, 1, FrameKind::Hello.code()]);
    let error = RecordTooLarge {
        field: RecordField::Frame,
        len: 1024,
        max: wire::MAX_HELLO_LEN,
    };
    assert_eq!(drain(&mut s), too_large(b, error));
    // A `Put` (never from a client): refused by its kind.
    let c = s.handle_accepted(secs(0));
    s.handle_received(secs(0), c, &[40, 0, 0, 0, 1, FrameKind::Put.code()]);
    assert_eq!(
        drain(&mut s)[2],
        ServerOutput::Event(ServerEvent::ProtocolError {
            conn: c,
            error: ProtocolError::Decode(DecodeError::KindNotAllowed {
                kind: FrameKind::Put
            }),
        })
    );
    assert_eq!(s.stats().records_too_large, 2);
    assert_eq!(s.connection_count(), 0);
}

#[test]
fn a_keyed_registry_refuses_an_announced_16_mib_frame_before_authentication() {
    use crate::auth::ClusterKeys;
    let config = ServerConfig {
        keys: ClusterKeys::new(&[crate::auth::ClusterKey::new([7; 32])]),
        ..ServerConfig::default()
    };
    let mut s = RegistryServer::new(config, SEED);
    let a = s.handle_accepted(secs(0));
    s.handle_received(secs(0), a, &(16u32 << 20).to_le_bytes());
    let error = RecordTooLarge {
        field: RecordField::Frame,
        len: 16 << 20,
        max: DEFAULT_MAX_RECORD + REGISTER_OVERHEAD,
    };
    assert_eq!(drain(&mut s), too_large(a, error));
}

#[test]
fn what_the_records_publish_does_not_take_a_live_id_over_the_secret_does() {
    let mut s = quiet_server();
    let victim_record = DiscoveryInfo {
        identity: published_identity("ident-victim"),
        ..disc(1, "x")
    };
    let victim = s.handle_accepted(secs(0));
    let frame = Register {
        watch: false,
        incarnation: 101,
        discovery: victim_record.clone(),
        topology: None,
        proof: IdentityProof::of("ident-victim"),
    };
    s.handle_received(secs(0), victim, &bytes(frame.into()));
    let out = drain(&mut s);
    // What the victim's snapshot shows the world: the hash, never the secret.
    let ServerOutput::Transmit { bytes: snap, .. } = &out[1] else {
        panic!("test: a snapshot")
    };
    assert!(!snap.windows(12).any(|w| w == b"ident-victim"));
    let Ok(Decoded::Frame(Frame::Snapshot(snapshot), _)) = wire::decode(snap, 1 << 20) else {
        panic!("test: a snapshot")
    };
    let published = snapshot.entries[0].discovery.identity.clone();
    assert_eq!(published, published_identity("ident-victim"));
    // The attacker replays the published identity: as a record, as a secret, as raw proof
    // bytes (the hex of the hash).
    let mut raw = [0u8; 32];
    let hex = published.trim_start_matches("sha256:").as_bytes();
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = core::str::from_utf8(pair).unwrap_or("00");
        raw[i] = u8::from_str_radix(text, 16).unwrap_or(0);
    }
    for proof in [
        None,
        IdentityProof::of(&published),
        Some(IdentityProof(raw)),
    ] {
        let attacker = s.handle_accepted(secs(1));
        let frame = Register {
            watch: false,
            incarnation: 999,
            discovery: victim_record.clone(),
            topology: None,
            proof,
        };
        s.handle_received(secs(1), attacker, &bytes(frame.into()));
        assert_eq!(
            drain(&mut s)[0],
            tx(
                attacker,
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
            )
        );
    }
    // The victim's own incarnation is public too: it does not replace the live connection
    // without the proof either.
    let same = s.handle_accepted(secs(1));
    let frame = Register {
        watch: false,
        incarnation: 101,
        discovery: DiscoveryInfo {
            listen: vec![String::from("atcp://attacker:1")],
            ..victim_record.clone()
        },
        topology: None,
        proof: None,
    };
    s.handle_received(secs(1), same, &bytes(frame.into()));
    assert_eq!(
        drain(&mut s)[0],
        tx(
            same,
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
        )
    );
    assert_eq!((s.stats().duplicate_ids, s.stats().takeovers), (4, 0));
    assert_eq!(s.entries()[0].incarnation, 101);
    assert_eq!(s.entries()[0].discovery.listen, disc(1, "x").listen);
    // The restarted deployment, which knows the secret, takes over once the old session is
    // gone (was: at once, at 2 s — a live holder is now a second copy, refused; issue 22).
    let gone = secs(0) + LIVE_HOLDER_SILENCE;
    let restart = s.handle_accepted(gone);
    let frame = Register {
        watch: false,
        incarnation: 202,
        discovery: victim_record,
        topology: None,
        proof: IdentityProof::of("ident-victim"),
    };
    s.handle_received(gone, restart, &bytes(frame.into()));
    assert_eq!(
        drain(&mut s)[0],
        ServerOutput::Event(ServerEvent::TakenOver {
            replaced: victim,
            key: EntryKey::Id(NodeId(1)),
            incarnation: 101,
        })
    );
    assert_eq!((s.stats().duplicate_ids, s.stats().takeovers), (4, 1));
    assert_eq!(s.entries()[0].incarnation, 202);
}

#[test]
fn a_big_legal_cluster_snapshot_arrives_in_bounded_parts_and_is_applied_once() {
    // 100 nodes of type `big` (following nothing, so they are pushed nothing) with 30 KiB of
    // custom data each: some 3 MiB of entries, within every record limit.
    let mut concern = ConcernTable::all();
    concern.set("big", [""; 0]);
    let config = ServerConfig {
        heartbeat_timeout: None,
        concern,
        ..ServerConfig::default()
    };
    let mut s = RegistryServer::new(config, SEED);
    for id in 1..=100 {
        let conn = s.handle_accepted(secs(0));
        let record = DiscoveryInfo {
            custom_data: "d".repeat(30 << 10).into(),
            ..disc(id, "big")
        };
        s.handle_received(secs(0), conn, &register_of(record, 100 + id));
        drain(&mut s);
    }
    let mut client = RegistryClient::new(client_config(disc(101, "x"), 201), secs(1));
    assert_eq!(client.poll_output(), Some(ClientOutput::Connect));
    client.handle_connected(secs(1));
    let Some(ClientOutput::Transmit { bytes: register }) = client.poll_output() else {
        panic!("test: the client registers")
    };
    let conn = s.handle_accepted(secs(1));
    s.handle_received(secs(1), conn, &register);
    let parts: Vec<Vec<u8>> = drain(&mut s)
        .into_iter()
        .filter_map(|o| match o {
            ServerOutput::Transmit { conn: c, bytes } if c == conn => Some(bytes),
            _ => None,
        })
        .collect();
    // Every entry is the same size: a part holds as many as fit in 1 MiB.
    let one = wire::entry_len(&s.entries()[0]);
    let per_part = (DEFAULT_MAX_SNAPSHOT_PART - wire::SNAPSHOT_OVERHEAD) / one;
    assert_eq!(per_part, 33);
    assert_eq!(parts.len(), 101_usize.div_ceil(per_part));
    assert_eq!(parts.len(), 4);
    for (i, part) in parts.iter().enumerate() {
        assert!(part.len() <= DEFAULT_MAX_SNAPSHOT_PART);
        let Ok(Decoded::Frame(Frame::Snapshot(p), _)) = wire::decode(part, wire::DEFAULT_MAX_FRAME)
        else {
            panic!("test: part {i} decodes")
        };
        assert_eq!(p.more, i < 3);
        assert_eq!(p.entries.len(), if i < 3 { 33 } else { 2 });
        assert_eq!((p.epoch, p.revision), (s.epoch(), 101));
    }
    // The client applies it once, at the last part.
    let mut registered = 0;
    for part in &parts {
        client.handle_received(secs(1), part);
        while let Some(out) = client.poll_output() {
            if matches!(out, ClientOutput::Event(ClientEvent::Registered { .. })) {
                registered += 1;
            }
        }
        if registered == 0 {
            assert_eq!(
                client.peers().count(),
                0,
                "nothing applied before the last part"
            );
        }
    }
    assert_eq!(registered, 1);
    assert_eq!(client.peers().count(), 101);
    assert!(client.is_registered());
}

#[test]
fn server_configs_beyond_what_clients_accept_are_refused() {
    use super::super::ServerConfigError;
    assert_eq!(ServerConfig::default().validate(), Ok(()));
    let over = ServerConfig {
        max_frame: wire::DEFAULT_MAX_FRAME + 1,
        ..ServerConfig::default()
    };
    assert_eq!(
        over.validate(),
        Err(ServerConfigError::MaxFrame {
            max_frame: (16 << 20) + 1,
            clients: 16 << 20
        })
    );
    let record = ServerConfig {
        max_frame: 64 << 10,
        max_snapshot_part: 64 << 10,
        ..ServerConfig::default()
    };
    assert_eq!(
        record.validate(),
        Err(ServerConfigError::RecordOverFrame {
            max_record: 64 << 10,
            // A record in a snapshot part: 28 bytes of part header and 41 of entry (33, plus
            // the 8-byte age of a protected entry's session loss, added for `ls`' "protected
            // since").
            needed: (64 << 10) + 69,
            max_frame: 64 << 10
        })
    );
    let part = ServerConfig {
        max_snapshot_part: (16 << 20) + 1,
        ..ServerConfig::default()
    };
    assert_eq!(
        part.validate(),
        Err(ServerConfigError::SnapshotPart {
            max_snapshot_part: (16 << 20) + 1,
            max_frame: 16 << 20
        })
    );
    let zero = ServerConfig {
        max_record: 0,
        ..ServerConfig::default()
    };
    assert_eq!(zero.validate(), Err(ServerConfigError::ZeroRecord));
}
