//! Registry-protocol frames: exact bytes (JSON records included), revisions carried beside the
//! JSON, bad records and lying counts.

use alloc::{boxed::Box, string::String, vec, vec::Vec};

use super::{link_frames::assert_golden, *};
use crate::{
    discovery::{self, DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    time::Duration,
};

const MAX: usize = DEFAULT_MAX_FRAME;

fn discovery_n7() -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(7),
        name: "n".into(),
        ..DiscoveryInfo::default()
    }
}

fn topology_n7() -> TopologyInfo {
    TopologyInfo {
        id: NodeId(7),
        name: "n".into(),
        upstream_id: NodeId(1),
        ..TopologyInfo::default()
    }
}

pub(super) const DISCOVERY_JSON: &[u8] = br#"{"id":7,"name":"n"}"#; // 19 bytes
pub(super) const TOPOLOGY_JSON: &[u8] = br#"{"id":7,"name":"n","upstream_id":1}"#; // 35 bytes

pub(super) fn golden_register() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Register(Box::new(Register {
        watch: false,
        incarnation: 9,
        discovery: discovery_n7(),
        topology: Some(topology_n7()),
        proof: None,
    }));
    let mut bytes = vec![8 + 8 + 4 + 19 + 4 + 35, 0, 0, 0, 1, 16, 0, 0];
    bytes.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
    bytes.extend_from_slice(&[19, 0, 0, 0]);
    bytes.extend_from_slice(DISCOVERY_JSON);
    bytes.extend_from_slice(&[35, 0, 0, 0]);
    bytes.extend_from_slice(TOPOLOGY_JSON);
    (frame, bytes)
}

pub(super) fn golden_update_topology_only() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Update(Box::new(Update {
        incarnation: 9,
        discovery: None,
        topology: Some(topology_n7()),
    }));
    let mut bytes = vec![8 + 8 + 4 + 4 + 35, 0, 0, 0, 1, 17, 0, 0];
    bytes.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
    bytes.extend_from_slice(&[0, 0, 0, 0]);
    bytes.extend_from_slice(&[35, 0, 0, 0]);
    bytes.extend_from_slice(TOPOLOGY_JSON);
    (frame, bytes)
}

/// A suspect entry's age of loss in the golden frames: 1,500 ms (`dc 05` little-endian).
const LOST_MS: u64 = 1_500;

fn entry_n7(suspect: bool, with_topology: bool) -> RegistryEntry {
    let mut discovery = discovery_n7();
    discovery.revision = 40;
    RegistryEntry {
        incarnation: 9,
        discovery,
        topology: with_topology.then(|| TopologyInfo {
            revision: 41,
            ..topology_n7()
        }),
        lost_for: suspect.then(|| Duration::from_millis(LOST_MS)),
    }
}

/// Entry bytes of `entry_n7`.
fn entry_bytes(suspect: bool, with_topology: bool) -> Vec<u8> {
    let mut bytes = vec![9, 0, 0, 0, 0, 0, 0, 0];
    bytes.extend_from_slice(&[40, 0, 0, 0, 0, 0, 0, 0]);
    bytes.extend_from_slice(&[if with_topology { 41 } else { 0 }, 0, 0, 0, 0, 0, 0, 0]);
    bytes.push(u8::from(suspect));
    if suspect {
        bytes.extend_from_slice(&LOST_MS.to_le_bytes());
    }
    bytes.extend_from_slice(&[19, 0, 0, 0]);
    bytes.extend_from_slice(DISCOVERY_JSON);
    if with_topology {
        bytes.extend_from_slice(&[35, 0, 0, 0]);
        bytes.extend_from_slice(TOPOLOGY_JSON);
    } else {
        bytes.extend_from_slice(&[0, 0, 0, 0]);
    }
    bytes
}

pub(super) fn golden_snapshot() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Snapshot(Box::new(Snapshot {
        epoch: 2,
        revision: 50,
        entries: vec![entry_n7(false, true), entry_n7(true, false)],
        more: false,
    }));
    let mut body = vec![2, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&[50, 0, 0, 0, 0, 0, 0, 0]);
    body.extend_from_slice(&[2, 0, 0, 0]);
    body.extend_from_slice(&entry_bytes(false, true));
    body.extend_from_slice(&entry_bytes(true, false));
    (frame, with_header(18, &body))
}

pub(super) fn golden_put() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Put(Box::new(Put {
        epoch: 2,
        revision: 51,
        entry: entry_n7(false, true),
    }));
    let mut body = vec![2, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&[51, 0, 0, 0, 0, 0, 0, 0]);
    body.extend_from_slice(&entry_bytes(false, true));
    (frame, with_header(19, &body))
}

/// A version-1 header of `kind` with no flags in front of `body`.
pub(super) fn with_header(kind: u8, body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(HEADER_LEN + body.len()).expect("small test frame");
    let mut bytes = len.to_le_bytes().to_vec();
    bytes.extend_from_slice(&[1, kind, 0, 0]);
    bytes.extend_from_slice(body);
    bytes
}

/// One golden frame of every registry kind that carries records.
pub(super) fn registry_goldens() -> Vec<(Frame<'static>, Vec<u8>)> {
    vec![
        golden_register(),
        golden_update_topology_only(),
        golden_snapshot(),
        golden_put(),
    ]
}

#[test]
fn register_has_exact_bytes_with_libatapp_json() {
    let (frame, bytes) = golden_register();
    assert_golden(&frame, &bytes);
}

#[test]
fn a_watch_is_a_register_with_flag_bit_1_and_bit_2_is_undefined() {
    let (frame, mut bytes) = golden_register();
    let Frame::Register(mut register) = frame else {
        panic!("golden register");
    };
    register.watch = true;
    bytes[6] = 2;
    assert_golden(&Frame::Register(register), &bytes);
    bytes[6] = 4;
    assert_eq!(
        decode(&bytes, MAX),
        Err(DecodeError::UnknownFlags {
            kind: FrameKind::Register,
            flags: 4
        })
    );
}

#[test]
fn topology_only_update_has_an_empty_discovery_field() {
    let (frame, bytes) = golden_update_topology_only();
    assert_golden(&frame, &bytes);
}

#[test]
fn snapshot_has_exact_bytes_and_carries_revisions_and_suspect_flags() {
    let (frame, bytes) = golden_snapshot();
    assert_golden(&frame, &bytes);
    let Ok(Decoded::Frame(Frame::Snapshot(snapshot), _)) = decode(&bytes, MAX) else {
        panic!("golden snapshot decodes");
    };
    assert_eq!(snapshot.entries[0].discovery.revision, 40);
    assert_eq!(
        snapshot.entries[0].topology.as_ref().map(|t| t.revision),
        Some(41)
    );
    assert_eq!(snapshot.entries[0].lost_for, None);
    assert_eq!(
        snapshot.entries[1].lost_for,
        Some(Duration::from_millis(1_500))
    );
    assert_eq!(snapshot.entries[1].topology, None);
}

#[test]
fn put_has_exact_bytes() {
    let (frame, bytes) = golden_put();
    assert_golden(&frame, &bytes);
}

/// The embedded registry publishes a session loss at once as a `Put` of the record as it is,
/// entry flags bit 0 (suspect) set (docs/ARCHITECTURE.md §9.3): every byte.
#[test]
fn a_session_loss_put_has_exact_bytes_with_the_suspect_flag() {
    let frame = Frame::Put(Box::new(Put {
        epoch: 2,
        revision: 51,
        entry: entry_n7(true, false),
    }));
    let mut expected = vec![84, 0, 0, 0, 1, 19, 0, 0];
    expected.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0, 51, 0, 0, 0, 0, 0, 0, 0]);
    // incarnation 9, discovery revision 40, topology revision 0, flags 0b1 (suspect), lost
    // 1,500 ms ago.
    expected.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0]);
    expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0b1]);
    expected.extend_from_slice(&[0xdc, 0x05, 0, 0, 0, 0, 0, 0]);
    expected.extend_from_slice(&[19, 0, 0, 0]);
    expected.extend_from_slice(DISCOVERY_JSON);
    expected.extend_from_slice(&[0, 0, 0, 0]);
    // Encodes to these bytes, decodes back to the frame (suspect set), whole or cut.
    assert_golden(&frame, &expected);
}

#[test]
fn empty_snapshot_is_28_bytes() {
    let frame = Frame::Snapshot(Box::new(Snapshot {
        epoch: 1,
        revision: 0,
        entries: Vec::new(),
        more: false,
    }));
    let mut body = vec![1, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&[0; 12]);
    assert_golden(&frame, &with_header(18, &body));
}

#[test]
fn a_lying_entry_count_is_refused_before_any_entry_is_read() {
    let mut body = vec![0; 16];
    body.extend_from_slice(&u32::MAX.to_le_bytes());
    body.extend_from_slice(&[0; 40]); // room for one entry at most
    assert_eq!(
        decode(&with_header(18, &body), MAX),
        Err(DecodeError::CountTooLarge {
            field: "entries",
            count: u32::MAX,
            remaining: 40
        })
    );
    // Two entries promised, room for one 33-byte minimal entry plus 32 bytes.
    let mut body = vec![0; 16];
    body.extend_from_slice(&2u32.to_le_bytes());
    body.extend_from_slice(&[0; 65]);
    assert_eq!(
        decode(&with_header(18, &body), MAX),
        Err(DecodeError::CountTooLarge {
            field: "entries",
            count: 2,
            remaining: 65
        })
    );
}

#[test]
fn a_lying_record_length_is_truncated_not_allocated() {
    let (_, mut bytes) = golden_register();
    bytes[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        decode(&bytes, MAX),
        Err(DecodeError::Truncated { field: "discovery" })
    );
}

#[test]
fn malformed_json_records_report_the_discovery_error() {
    let bad = br#"{"id":"x"}"#;
    let mut body = vec![9, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&u32::try_from(bad.len()).expect("short").to_le_bytes());
    body.extend_from_slice(bad);
    body.extend_from_slice(&[0; 4]);
    let Err(DecodeError::Json { field, error }) = decode(&with_header(16, &body), MAX) else {
        panic!("a string id is refused");
    };
    assert_eq!(field, "discovery");
    assert!(
        matches!(error, discovery::DecodeError::InvalidValue { .. }),
        "{error:?}"
    );

    // Topology with id 0 has no identity.
    let zero = br#"{"id":0,"name":"n"}"#;
    let mut body = vec![9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&u32::try_from(zero.len()).expect("short").to_le_bytes());
    body.extend_from_slice(zero);
    assert_eq!(
        decode(&with_header(17, &body), MAX),
        Err(DecodeError::Json {
            field: "topology",
            error: discovery::DecodeError::NoIdentity
        })
    );

    // A Register with an empty discovery field: the record is required.
    let body = [9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        decode(&with_header(16, &body), MAX),
        Err(DecodeError::Json {
            field: "discovery",
            error: discovery::DecodeError::Truncated { line: 1, column: 0 }
        })
    );
}

#[test]
fn unknown_entry_flags_are_refused() {
    let (_, mut bytes) = golden_put();
    // header 8 + epoch 8 + revision 8 + incarnation 8 + two revisions 16 = flags at 48.
    bytes[48] = 2;
    assert_eq!(
        decode(&bytes, MAX),
        Err(DecodeError::UnknownCode {
            field: "entry_flags",
            code: 2
        })
    );
}

#[test]
fn records_without_identity_are_not_encoded() {
    let frame = Frame::Register(Box::new(Register {
        watch: false,
        incarnation: 1,
        discovery: DiscoveryInfo::default(),
        topology: None,
        proof: None,
    }));
    let mut out = vec![1, 2, 3];
    assert_eq!(
        encode(&frame, &mut out),
        Err(EncodeError::NoIdentity { field: "discovery" })
    );
    assert_eq!(
        out,
        [1, 2, 3],
        "a refused frame leaves the buffer as it was"
    );
    assert_eq!(encoded_len(&frame), 0);

    let frame = Frame::Update(Box::new(Update {
        incarnation: 1,
        discovery: None,
        topology: Some(TopologyInfo {
            name: String::from("x"),
            ..TopologyInfo::default()
        }),
    }));
    assert_eq!(
        encode(&frame, &mut out),
        Err(EncodeError::NoIdentity { field: "topology" })
    );
}

#[test]
fn register_revisions_are_not_sent() {
    let mut discovery = discovery_n7();
    discovery.revision = 99;
    let frame = Frame::Register(Box::new(Register {
        watch: false,
        incarnation: 9,
        discovery,
        topology: Some(topology_n7()),
        proof: None,
    }));
    let mut out = Vec::new();
    encode(&frame, &mut out).expect("encodable");
    assert_eq!(out, golden_register().1);
}

/// A registry serializes a node's records once ([`EncodedRecords`]) and copies them into
/// every `Put` and snapshot: the same bytes as encoding each frame whole.
#[test]
fn records_encoded_once_write_the_golden_put_and_snapshot() {
    let with_topology = entry_n7(false, true);
    let records = EncodedRecords::of(&with_topology.discovery, with_topology.topology.as_ref())
        .expect("encodable");
    assert_eq!(records.put_frame(2, 51, 9, None), Ok(golden_put().1));
    assert_eq!(
        records.entry_len(false),
        entry_len(&with_topology),
        "the length of the entry the frame carries"
    );

    let suspect = entry_n7(true, false);
    let bare = EncodedRecords::of(&suspect.discovery, None).expect("encodable");
    assert_eq!(records.entry_len(true), entry_len(&entry_n7(true, true)));
    let lost = Some(Duration::from_millis(LOST_MS));
    let parts = encode_snapshot_parts_of(2, 50, [(9, None, &records), (9, lost, &bare)], MAX);
    assert_eq!(parts, Ok(vec![golden_snapshot().1]));

    assert_eq!(
        EncodedRecords::of(&DiscoveryInfo::default(), None),
        Err(EncodeError::NoIdentity { field: "discovery" })
    );
    let anonymous = TopologyInfo::default();
    assert_eq!(
        EncodedRecords::of(&with_topology.discovery, Some(&anonymous)),
        Err(EncodeError::NoIdentity { field: "topology" })
    );
}
