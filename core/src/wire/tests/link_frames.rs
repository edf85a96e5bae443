//! Link-level frames: exact bytes of one frame of each kind, prefixes, malformed input and
//! stream reassembly at every split point.

use alloc::{vec, vec::Vec};

use super::*;
use crate::ids::NodeId;

const MAX: usize = DEFAULT_MAX_FRAME;

/// Checks `frame` against its golden encoding: exact bytes, `encoded_len`, decoding back with
/// exactly `expected.len()` consumed (also with bytes of a next frame behind it), and every
/// proper prefix asking for exactly the missing bytes.
pub(super) fn assert_golden(frame: &Frame<'_>, expected: &[u8]) {
    let mut out = vec![0xEE]; // encode appends: what is already there stays
    assert_eq!(encode(frame, &mut out), Ok(expected.len()));
    assert_eq!(out[0], 0xEE);
    assert_eq!(
        &out[1..],
        expected,
        "{:?} encodes to other bytes",
        frame.kind()
    );
    assert_eq!(encoded_len(frame), expected.len());
    // Through a scratch buffer holding leftovers: the same bytes, at their exact size.
    let mut scratch = vec![0xEE; 9];
    let owned = encode_owned(frame, &mut scratch).expect("encodes");
    assert_eq!(owned, expected);
    assert_eq!(owned.capacity(), expected.len());
    assert!(scratch.is_empty() && scratch.capacity() >= expected.len());

    assert_eq!(
        decode(expected, MAX),
        Ok(Decoded::Frame(frame.clone(), expected.len()))
    );
    let mut followed = expected.to_vec();
    followed.extend_from_slice(&[0x10, 0, 0, 0, 1, 6]);
    assert_eq!(
        decode(&followed, MAX),
        Ok(Decoded::Frame(frame.clone(), expected.len()))
    );
    for cut in 0..expected.len() {
        let wanted = if cut < 4 {
            HEADER_LEN - cut
        } else {
            expected.len() - cut
        };
        assert_eq!(
            decode(&expected[..cut], MAX),
            Ok(Decoded::NeedMore(wanted)),
            "prefix of {cut} bytes of {:?}",
            frame.kind()
        );
    }
}

pub(super) fn golden_hello() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Hello(Hello {
        node: NodeId(0x0102),
        incarnation: 5,
        versions: VersionRange { min: 1, max: 3 },
        name: "gw",
        challenge: None,
    });
    #[rustfmt::skip]
    let bytes = vec![
        34, 0, 0, 0, 1, 1, 0, 0,     // len 34, version 1, kind Hello, no flags
        0x02, 0x01, 0, 0, 0, 0, 0, 0, // node 0x0102
        5, 0, 0, 0, 0, 0, 0, 0,       // incarnation
        1, 0, 3, 0,                   // versions 1..=3
        2, 0, 0, 0, b'g', b'w',       // name
    ];
    (frame, bytes)
}

pub(super) fn golden_hello_ack() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::HelloAck(HelloAck {
        node: NodeId(9),
        incarnation: 0x0A0B,
        versions: VersionRange { min: 2, max: 2 },
        name: "gw",
        nonce: Some([0xCD; NONCE_LEN]),
        proof: Some(Proof {
            key_id: 0x5E,
            mac: [0xAB; MAC_LEN],
        }),
        result: Err(RefuseReason::DuplicateId),
    });
    let mut bytes = vec![
        100, 0, 0, 0, 1, 2, 3, 0, // len 100, version 1, kind HelloAck, flags: nonce, proof
        9, 0, 0, 0, 0, 0, 0, 0, // node
        0x0B, 0x0A, 0, 0, 0, 0, 0, 0, // incarnation
        2, 0, 2, 0, // versions 2..=2
        3, // status: refused, DuplicateId
    ];
    bytes.extend_from_slice(&[0xCD; NONCE_LEN]); // nonce
    bytes.push(0x5E); // key id
    bytes.extend_from_slice(&[0xAB; MAC_LEN]); // MAC
    bytes.extend_from_slice(&[2, 0, 0, 0, b'g', b'w']);
    (frame, bytes)
}

pub(super) fn golden_data() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Data(Data {
        src: NodeId(1),
        dst: NodeId(2),
        seq: 7,
        dst_incarnation: 0x0302,
        retransmit: true,
        msg_type: 100,
        hop_count: 1,
        payload: b"hi",
    });
    #[rustfmt::skip]
    let bytes = vec![
        47, 0, 0, 0, 1, 3, 1, 0, // flag: retransmission
        1, 0, 0, 0, 0, 0, 0, 0,  // src
        2, 0, 0, 0, 0, 0, 0, 0,  // dst
        7, 0, 0, 0, 0, 0, 0, 0,  // seq
        2, 3, 0, 0, 0, 0, 0, 0,  // dst_incarnation
        100, 0, 0, 0,            // msg_type
        1,                       // hop_count
        b'h', b'i',              // payload
    ];
    (frame, bytes)
}

pub(super) fn golden_ack() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Ack(Ack {
        src: NodeId(1),
        dst: NodeId(2),
        seq: 0x0100,
        dst_incarnation: 5,
        reset: None,
    });
    #[rustfmt::skip]
    let bytes = vec![
        40, 0, 0, 0, 1, 4, 0, 0,
        1, 0, 0, 0, 0, 0, 0, 0,
        2, 0, 0, 0, 0, 0, 0, 0,
        0, 1, 0, 0, 0, 0, 0, 0,
        5, 0, 0, 0, 0, 0, 0, 0,
    ];
    (frame, bytes)
}

pub(super) fn golden_reset() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Ack(Ack {
        src: NodeId(1),
        dst: NodeId(2),
        seq: 0x0000_0009_0000_0001,
        dst_incarnation: 0x0102,
        reset: Some(0x0A00),
    });
    #[rustfmt::skip]
    let bytes = vec![
        48, 0, 0, 0, 1, 4, 1, 0, // flag: reset
        1, 0, 0, 0, 0, 0, 0, 0,
        2, 0, 0, 0, 0, 0, 0, 0,
        1, 0, 0, 0, 9, 0, 0, 0,  // seq: tag 9, counter 1
        2, 1, 0, 0, 0, 0, 0, 0,  // dst_incarnation
        0, 10, 0, 0, 0, 0, 0, 0, // age
    ];
    (frame, bytes)
}

pub(super) fn golden_unreachable() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Unreachable(Unreachable {
        src: NodeId(1),
        dst: NodeId(2),
        seq: 9,
        reason: UnreachableReason::HopLimit,
        dst_incarnation: 0x0a0b,
    });
    #[rustfmt::skip]
    let bytes = vec![
        41, 0, 0, 0, 1, 5, 0, 0,
        1, 0, 0, 0, 0, 0, 0, 0,
        2, 0, 0, 0, 0, 0, 0, 0,
        9, 0, 0, 0, 0, 0, 0, 0,
        2,
        0x0b, 0x0a, 0, 0, 0, 0, 0, 0,
    ];
    (frame, bytes)
}

pub(super) fn golden_ping() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Ping(Ping {
        nonce: 0x1122_3344_5566_7788,
    });
    let bytes = vec![
        16, 0, 0, 0, 1, 6, 0, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
    ];
    (frame, bytes)
}

pub(super) fn golden_pong() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Pong(Pong { nonce: 1 });
    let bytes = vec![16, 0, 0, 0, 1, 7, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    (frame, bytes)
}

pub(super) fn golden_probe() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Probe(Probe {
        target: NodeId(0x0202),
        incarnation: 0x1122_3344_5566_7788,
    });
    let bytes = vec![
        24, 0, 0, 0, 1, 10, 0, 0, // header: 24 bytes, version 1, kind 10
        0x02, 0x02, 0, 0, 0, 0, 0, 0, // target
        0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // incarnation
    ];
    (frame, bytes)
}

pub(super) fn golden_probe_ack() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::ProbeAck(ProbeAck {
        target: NodeId(0x0202),
        incarnation: 9,
        verdict: ProbeVerdict::Alive,
    });
    let bytes = vec![
        25, 0, 0, 0, 1, 11, 0, 0, // header: 25 bytes, version 1, kind 11
        0x02, 0x02, 0, 0, 0, 0, 0, 0, // target
        9, 0, 0, 0, 0, 0, 0, 0, // incarnation
        1, // verdict: alive
    ];
    (frame, bytes)
}

pub(super) fn golden_bye() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Bye(Bye {
        reason: ByeReason::Shutdown,
    });
    (frame, vec![9, 0, 0, 0, 1, 8, 0, 0, 1])
}

pub(super) fn golden_hello_with_nonce() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Hello(Hello {
        node: NodeId(0x0102),
        incarnation: 5,
        versions: VersionRange { min: 1, max: 1 },
        name: "gw",
        challenge: Some(Challenge {
            nonce: [0x3C; NONCE_LEN],
            key_id: 0x5E,
        }),
    });
    #[rustfmt::skip]
    let mut bytes = vec![
        67, 0, 0, 0, 1, 1, 1, 0,      // len 67, version 1, kind Hello, flag: challenge
        0x02, 0x01, 0, 0, 0, 0, 0, 0, // node 0x0102
        5, 0, 0, 0, 0, 0, 0, 0,       // incarnation
        1, 0, 1, 0,                   // versions 1..=1
    ];
    bytes.extend_from_slice(&[0x3C; NONCE_LEN]);
    bytes.push(0x5E); // key id
    bytes.extend_from_slice(&[2, 0, 0, 0, b'g', b'w']);
    (frame, bytes)
}

pub(super) fn golden_auth() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Auth(Auth {
        proof: Proof {
            key_id: 0x77,
            mac: [0x99; MAC_LEN],
        },
    });
    let mut bytes = vec![41, 0, 0, 0, 1, 9, 0, 0, 0x77]; // len 41, kind Auth, key id
    bytes.extend_from_slice(&[0x99; MAC_LEN]);
    (frame, bytes)
}

pub(super) fn golden_delete() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Delete(Delete {
        epoch: 3,
        revision: 42,
        id: NodeId(7),
        name: "n",
    });
    #[rustfmt::skip]
    let bytes = vec![
        37, 0, 0, 0, 1, 20, 0, 0,
        3, 0, 0, 0, 0, 0, 0, 0,
        42, 0, 0, 0, 0, 0, 0, 0,
        7, 0, 0, 0, 0, 0, 0, 0,
        1, 0, 0, 0, b'n',
    ];
    (frame, bytes)
}

pub(super) fn golden_heartbeat() -> (Frame<'static>, Vec<u8>) {
    let frame = Frame::Heartbeat(Heartbeat {
        epoch: 3,
        sequence: 4,
    });
    #[rustfmt::skip]
    let bytes = vec![
        24, 0, 0, 0, 1, 21, 0, 0,
        3, 0, 0, 0, 0, 0, 0, 0,
        4, 0, 0, 0, 0, 0, 0, 0,
    ];
    (frame, bytes)
}

/// One golden frame of every link-level kind plus `Delete` and `Heartbeat`.
pub(super) fn link_goldens() -> Vec<(Frame<'static>, Vec<u8>)> {
    vec![
        golden_hello(),
        golden_hello_ack(),
        golden_hello_with_nonce(),
        golden_auth(),
        golden_data(),
        golden_ack(),
        golden_unreachable(),
        golden_ping(),
        golden_pong(),
        golden_probe(),
        golden_probe_ack(),
        golden_bye(),
        golden_delete(),
        golden_heartbeat(),
    ]
}

#[test]
fn hello_without_proof_has_exact_bytes() {
    let (frame, bytes) = golden_hello();
    assert_golden(&frame, &bytes);
}

#[test]
fn hello_with_nonce_and_auth_have_exact_bytes() {
    for (frame, bytes) in [golden_hello_with_nonce(), golden_auth()] {
        assert_golden(&frame, &bytes);
    }
}

#[test]
fn hello_ack_refusal_with_proof_has_exact_bytes() {
    let (frame, bytes) = golden_hello_ack();
    assert_golden(&frame, &bytes);
}

#[test]
fn hello_ack_accepted_writes_status_zero() {
    let frame = Frame::HelloAck(HelloAck {
        node: NodeId(9),
        incarnation: 1,
        versions: VersionRange { min: 1, max: 1 },
        name: "",
        nonce: None,
        proof: None,
        result: Ok(()),
    });
    #[rustfmt::skip]
    let bytes = [
        33, 0, 0, 0, 1, 2, 0, 0,
        9, 0, 0, 0, 0, 0, 0, 0,
        1, 0, 0, 0, 0, 0, 0, 0,
        1, 0, 1, 0,
        0,
        0, 0, 0, 0,
    ];
    assert_golden(&frame, &bytes);
}

#[test]
fn data_has_exact_bytes() {
    let (frame, bytes) = golden_data();
    assert_golden(&frame, &bytes);
}

#[test]
fn data_with_empty_payload_is_45_bytes() {
    let frame = Frame::Data(Data {
        src: NodeId(u64::MAX),
        dst: NodeId(0),
        seq: u64::MAX,
        dst_incarnation: u64::MAX,
        retransmit: false,
        msg_type: u32::MAX,
        hop_count: 255,
        payload: b"",
    });
    let mut bytes = vec![45, 0, 0, 0, 1, 3, 0, 0];
    bytes.extend_from_slice(&[0xFF; 8]);
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&[0xFF; 8 + 8 + 4 + 1]);
    assert_golden(&frame, &bytes);
}

#[test]
fn a_frame_past_4_kib_takes_the_scratch_buffer_instead_of_a_copy() {
    let payload = vec![9u8; 4096];
    let frame = Frame::Data(Data {
        src: NodeId(3),
        dst: NodeId(4),
        seq: 5,
        dst_incarnation: 6,
        retransmit: false,
        msg_type: 7,
        hop_count: 1,
        payload: &payload,
    });
    let mut expected = Vec::new();
    encode(&frame, &mut expected).expect("encodes");
    assert_eq!(expected.len(), 45 + 4096);
    let mut scratch = Vec::with_capacity(8192);
    let owned = encode_owned(&frame, &mut scratch).expect("encodes");
    assert_eq!(owned, expected);
    assert_eq!(owned.capacity(), 8192, "the scratch buffer itself");
    assert_eq!(scratch.capacity(), 0);
    // The emptied scratch buffer grows again for the next frame.
    assert_eq!(encode_owned(&frame, &mut scratch), Ok(expected));
    assert_eq!(scratch.capacity(), 0);
}

#[test]
fn the_largest_data_payload_fills_the_default_frame_exactly() {
    let payload = vec![7u8; MAX_DATA_PAYLOAD];
    let data = |payload| {
        Frame::Data(Data {
            src: NodeId(1),
            dst: NodeId(2),
            seq: 1,
            dst_incarnation: 0,
            retransmit: false,
            msg_type: 1,
            hop_count: 0,
            payload,
        })
    };
    let mut out = Vec::new();
    assert_eq!(encode(&data(&payload), &mut out), Ok(MAX));
    assert!(matches!(decode(&out, MAX), Ok(Decoded::Frame(Frame::Data(_), n)) if n == MAX));
    let over = vec![7u8; MAX_DATA_PAYLOAD + 1];
    let mut out = Vec::new();
    assert_eq!(encode(&data(&over), &mut out), Ok(MAX + 1));
    assert!(matches!(
        decode(&out, MAX),
        Err(DecodeError::FrameTooLarge { .. })
    ));
}

#[test]
fn probe_and_probe_ack_have_exact_bytes_and_an_unknown_verdict_is_refused() {
    for verdict in ProbeVerdict::ALL {
        let ack = Frame::ProbeAck(ProbeAck {
            target: NodeId(1),
            incarnation: 2,
            verdict: *verdict,
        });
        let mut bytes = Vec::new();
        assert_eq!(encode(&ack, &mut bytes), Ok(25));
        assert_eq!(bytes[24], verdict.code());
    }
    let (probe, probe_bytes) = golden_probe();
    assert_golden(&probe, &probe_bytes);
    let (ack, mut bytes) = golden_probe_ack();
    assert_golden(&ack, &bytes);
    bytes[24] = 3;
    assert!(decode(&bytes, MAX).is_err(), "verdict 3 is no verdict");
}

#[test]
fn ack_unreachable_ping_pong_bye_have_exact_bytes() {
    for (frame, bytes) in [
        golden_ack(),
        golden_reset(),
        golden_unreachable(),
        golden_ping(),
        golden_pong(),
        golden_bye(),
    ] {
        assert_golden(&frame, &bytes);
    }
}

#[test]
fn delete_and_heartbeat_have_exact_bytes() {
    for (frame, bytes) in [golden_delete(), golden_heartbeat()] {
        assert_golden(&frame, &bytes);
    }
}

#[test]
fn every_reason_code_round_trips_and_unknown_codes_are_refused() {
    for &reason in ByeReason::ALL {
        assert_eq!(ByeReason::from_code(reason.code()), Some(reason));
    }
    for &reason in UnreachableReason::ALL {
        assert_eq!(UnreachableReason::from_code(reason.code()), Some(reason));
    }
    for &reason in RefuseReason::ALL {
        assert_eq!(RefuseReason::from_code(reason.code()), Some(reason));
    }
    for kind in FrameKind::ALL {
        assert_eq!(FrameKind::from_code(kind.code()), Some(kind));
    }
    assert_eq!(ByeReason::from_code(0), None);
    assert_eq!(RefuseReason::from_code(0), None, "0 means accepted");
    let (_, mut bye) = golden_bye();
    bye[8] = 7;
    assert_eq!(
        decode(&bye, MAX),
        Err(DecodeError::UnknownCode {
            field: "reason",
            code: 7
        })
    );
    let (_, mut ack) = golden_hello_ack();
    ack[28] = 0xF0;
    assert_eq!(
        decode(&ack, MAX),
        Err(DecodeError::UnknownCode {
            field: "status",
            code: 0xF0
        })
    );
}

#[test]
fn frame_over_the_maximum_is_refused_from_its_length_field_alone() {
    assert_eq!(
        decode(&[0xFF, 0xFF, 0xFF, 0xFF], MAX),
        Err(DecodeError::FrameTooLarge {
            len: 0xFFFF_FFFF,
            max: MAX
        })
    );
    let (_, data) = golden_data();
    assert_eq!(
        decode(&data, 46),
        Err(DecodeError::FrameTooLarge { len: 47, max: 46 })
    );
    assert!(matches!(decode(&data, 47), Ok(Decoded::Frame(_, 47))));
}

#[test]
fn header_fields_are_checked_as_soon_as_present() {
    assert_eq!(
        decode(&[7, 0, 0, 0], MAX),
        Err(DecodeError::BadLength { len: 7 })
    );
    assert_eq!(
        decode(&[0, 0, 0, 0], MAX),
        Err(DecodeError::BadLength { len: 0 })
    );
    assert_eq!(
        decode(&[100, 0, 0, 0, 2], MAX),
        Err(DecodeError::BadVersion { version: 2 })
    );
    // 12: the first unassigned code since `Probe` (10) and `ProbeAck` (11) took 10 and 11.
    assert_eq!(
        decode(&[100, 0, 0, 0, 1, 12], MAX),
        Err(DecodeError::UnknownKind { kind: 12 })
    );
    assert_eq!(
        decode(&[100, 0, 0, 0, 1, 0], MAX),
        Err(DecodeError::UnknownKind { kind: 0 })
    );
    assert_eq!(
        decode(&[100, 0, 0, 0, 1, 3, 0], MAX),
        Ok(Decoded::NeedMore(93))
    );
}

#[test]
fn undefined_flags_are_refused() {
    let (_, mut ping) = golden_ping();
    ping[6] = 1;
    assert_eq!(
        decode(&ping, MAX),
        Err(DecodeError::UnknownFlags {
            kind: FrameKind::Ping,
            flags: 1
        })
    );
    let (_, mut hello) = golden_hello();
    hello[7] = 0x80;
    assert_eq!(
        decode(&hello, MAX),
        Err(DecodeError::UnknownFlags {
            kind: FrameKind::Hello,
            flags: 0x8000
        })
    );
    // Bit 0 is defined for Data (retransmission) and Ack (reset), bit 1 for neither.
    let (_, mut data) = golden_data();
    data[6] = 3;
    assert_eq!(
        decode(&data, MAX),
        Err(DecodeError::UnknownFlags {
            kind: FrameKind::Data,
            flags: 3
        })
    );
    let (_, mut ack) = golden_ack();
    ack[6] = 2;
    assert_eq!(
        decode(&ack, MAX),
        Err(DecodeError::UnknownFlags {
            kind: FrameKind::Ack,
            flags: 2
        })
    );
}

#[test]
fn a_length_shorter_than_the_fields_names_the_cut_field() {
    // A Data frame whose length ends inside msg_type.
    let (_, data) = golden_data();
    let mut short = data[..42].to_vec();
    short[0] = 42;
    assert_eq!(
        decode(&short, MAX),
        Err(DecodeError::Truncated { field: "msg_type" })
    );
    // ... and one that ends inside dst_incarnation.
    let mut short = data[..36].to_vec();
    short[0] = 36;
    assert_eq!(
        decode(&short, MAX),
        Err(DecodeError::Truncated {
            field: "dst_incarnation"
        })
    );
    // A reset without its age.
    let (_, reset) = golden_reset();
    let mut short = reset[..40].to_vec();
    short[0] = 40;
    assert_eq!(
        decode(&short, MAX),
        Err(DecodeError::Truncated { field: "age" })
    );
    // An Ack from before dst_incarnation existed (32 bytes).
    let (_, ack) = golden_ack();
    let mut old = ack[..32].to_vec();
    old[0] = 32;
    assert_eq!(
        decode(&old, MAX),
        Err(DecodeError::Truncated {
            field: "dst_incarnation"
        })
    );
    // A Hello that claims a challenge but ends before its nonce is complete.
    let (_, hello) = golden_hello();
    let mut claims_proof = hello.clone();
    claims_proof[6] = 1;
    assert_eq!(
        decode(&claims_proof, MAX),
        Err(DecodeError::Truncated { field: "nonce" })
    );
    // An empty Ack body.
    assert_eq!(
        decode(&[8, 0, 0, 0, 1, 4, 0, 0], MAX),
        Err(DecodeError::Truncated { field: "src" })
    );
}

#[test]
fn a_lying_string_length_is_refused_without_reading_past_the_frame() {
    let (_, mut hello) = golden_hello();
    // Name length 0xFFFFFFFF inside a 34-byte frame.
    hello[28..32].copy_from_slice(&[0xFF; 4]);
    assert_eq!(
        decode(&hello, MAX),
        Err(DecodeError::Truncated { field: "name" })
    );
}

#[test]
fn bytes_after_the_last_field_are_a_length_mismatch() {
    let (_, mut ping) = golden_ping();
    ping[0] = 17;
    ping.push(0);
    assert_eq!(
        decode(&ping, MAX),
        Err(DecodeError::LengthMismatch {
            kind: FrameKind::Ping,
            len: 17,
            used: 16
        })
    );
}

#[test]
fn names_must_be_utf8() {
    let (_, mut delete) = golden_delete();
    delete[36] = 0xFF;
    assert_eq!(
        decode(&delete, MAX),
        Err(DecodeError::InvalidUtf8 { field: "name" })
    );
}

#[test]
fn encode_appends_without_allocating_when_capacity_suffices() {
    let (frame, bytes) = golden_data();
    let mut out = Vec::with_capacity(2 * bytes.len());
    let ptr = out.as_ptr();
    encode(&frame, &mut out).expect("fits");
    encode(&frame, &mut out).expect("fits");
    assert_eq!(out.as_ptr(), ptr, "no reallocation");
    assert_eq!(out.capacity(), 2 * bytes.len());
    assert_eq!(&out[..bytes.len()], &bytes[..]);
    assert_eq!(&out[bytes.len()..], &bytes[..]);
}

/// The goldens back to back, and the frames they decode to.
fn golden_stream() -> (Vec<Frame<'static>>, Vec<u8>) {
    let mut frames = Vec::new();
    let mut stream = Vec::new();
    for (frame, bytes) in all_goldens() {
        frames.push(frame);
        stream.extend_from_slice(&bytes);
    }
    (frames, stream)
}

/// One golden frame of every kind.
pub(super) fn all_goldens() -> Vec<(Frame<'static>, Vec<u8>)> {
    let mut all = link_goldens();
    all.extend(super::registry_frames::registry_goldens());
    all
}

/// Drains `reader` into `into` (frames owned via their re-encoding, which reproduces the
/// golden bytes exactly).
fn drain(reader: &mut FrameReader, into: &mut Vec<Vec<u8>>) {
    while let Some(frame) = reader.next_frame().expect("valid stream") {
        let mut bytes = Vec::new();
        encode(&frame, &mut bytes).expect("encodable");
        into.push(bytes);
    }
}

#[test]
fn frame_reader_gives_the_same_frames_at_every_split_point() {
    let (_, stream) = golden_stream();
    let expected: Vec<Vec<u8>> = all_goldens().into_iter().map(|(_, b)| b).collect();
    for cut in 0..=stream.len() {
        let mut reader = FrameReader::new(MAX);
        let mut got = Vec::new();
        reader.push(&stream[..cut]);
        drain(&mut reader, &mut got);
        reader.push(&stream[cut..]);
        drain(&mut reader, &mut got);
        assert_eq!(got, expected, "split at {cut}");
        assert_eq!(reader.buffered(), 0);
    }
}

#[test]
fn frame_reader_accepts_one_byte_at_a_time() {
    let (frames, stream) = golden_stream();
    let mut reader = FrameReader::new(MAX);
    let mut got = 0;
    for byte in &stream {
        reader.push(core::slice::from_ref(byte));
        while let Some(frame) = reader.next_frame().expect("valid stream") {
            assert_eq!(frame, frames[got]);
            got += 1;
        }
    }
    assert_eq!(got, frames.len());
}

#[test]
fn frame_reader_gives_back_a_large_spill_buffer_once_it_is_empty() {
    let payload = vec![0xAB; 200_000];
    let big = Frame::Data(Data {
        src: NodeId(1),
        dst: NodeId(2),
        seq: 1,
        dst_incarnation: 0,
        retransmit: false,
        msg_type: 9,
        hop_count: 0,
        payload: &payload,
    });
    let mut bytes = Vec::new();
    encode(&big, &mut bytes).expect("encodable");
    let (ping, ping_bytes) = golden_ping();
    let mut reader = FrameReader::new(MAX);
    reader.push(&bytes[..100_000]);
    assert_eq!(reader.next_frame(), Ok(None));
    reader.push(&bytes[100_000..]);
    assert!(reader.held_capacity() >= bytes.len());
    assert_eq!(reader.next_frame(), Ok(Some(big)));
    // The next push releases the big frame's bytes and gives the buffer back.
    reader.push(&ping_bytes);
    assert_eq!(reader.held_capacity(), ping_bytes.len());
    assert_eq!(reader.next_frame(), Ok(Some(ping.clone())));
    // Small frames keep their buffer from push to push (no allocation per chunk).
    reader.push(&ping_bytes);
    let room = reader.held_capacity();
    assert_eq!(reader.next_frame(), Ok(Some(ping.clone())));
    reader.push(&ping_bytes);
    assert_eq!(reader.held_capacity(), room);
    assert_eq!(reader.next_frame(), Ok(Some(ping)));
}

#[test]
fn frame_reader_error_is_sticky() {
    let (_, ping) = golden_ping();
    let mut reader = FrameReader::new(MAX);
    reader.push(&ping);
    reader.push(&[8, 0, 0, 0, 3]);
    assert_eq!(
        reader.next_frame().map(|f| f.map(|f| f.kind())),
        Ok(Some(FrameKind::Ping))
    );
    let error = DecodeError::BadVersion { version: 3 };
    assert_eq!(reader.next_frame(), Err(error.clone()));
    reader.push(&ping);
    assert_eq!(reader.next_frame(), Err(error));
    assert!(reader.has_failed());
}

#[test]
fn frame_reader_refuses_an_oversized_frame_before_buffering_it() {
    let mut reader = FrameReader::new(64);
    reader.push(&[65, 0, 0, 0]);
    assert_eq!(
        reader.next_frame(),
        Err(DecodeError::FrameTooLarge { len: 65, max: 64 })
    );
    reader.push(&[0; 1000]);
    assert_eq!(reader.buffered(), 4, "input after the error is dropped");
}
