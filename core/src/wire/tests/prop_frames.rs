//! Property tests: arbitrary frames round-trip, arbitrary bytes never panic and give a frame,
//! need-more or an error, and a stream of frames cut at random points reassembles to the same
//! frames.

use alloc::{boxed::Box, format, string::String, vec::Vec};

use proptest::{collection::vec as pvec, prelude::*, test_runner::FileFailurePersistence};

use super::*;
use crate::{
    discovery::{DiscoveryInfo, Metadata, TopologyInfo},
    ids::NodeId,
    time::Duration,
};

pub(super) fn config(suite: &str, cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(Box::leak(
            format!("../proptest-regressions/{suite}.txt").into_boxed_str(),
        )))),
        cases,
        ..ProptestConfig::default()
    }
}

/// Owned storage for the borrowed parts of a frame (names and payloads).
#[derive(Clone, Debug)]
pub(super) struct Spec {
    kind: u8,
    a: u64,
    b: u64,
    c: u64,
    small: u32,
    code: u8,
    flag: bool,
    proof: [u8; NONCE_LEN],
    text: String,
    payload: Vec<u8>,
    entries: Vec<RegistryEntry>,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z0-9._-]{1,12}", "\\PC{0,6}"]
}

fn discovery() -> impl Strategy<Value = DiscoveryInfo> {
    (
        1u64..u64::MAX,
        "[a-z]{1,8}",
        text(),
        any::<i32>(),
        pvec("[a-z:/0-9.]{1,16}", 0..3),
        any::<u64>(),
        pvec(("[a-z]{1,4}", text()), 0..3),
        any::<u64>(),
    )
        .prop_map(
            |(id, name, hostname, pid, listen, type_id, labels, revision)| DiscoveryInfo {
                id: NodeId(id),
                name,
                hostname,
                pid,
                listen,
                type_id,
                metadata: Metadata {
                    kind: "game".into(),
                    labels: labels.into_iter().collect(),
                    ..Metadata::default()
                }
                .into(),
                revision,
                ..DiscoveryInfo::default()
            },
        )
}

fn topology() -> impl Strategy<Value = TopologyInfo> {
    (1u64..u64::MAX, "[a-z]{0,8}", any::<u64>(), any::<u64>()).prop_map(
        |(id, name, upstream, revision)| TopologyInfo {
            id: NodeId(id),
            name,
            upstream_id: NodeId(upstream),
            revision,
            ..TopologyInfo::default()
        },
    )
}

fn entry() -> impl Strategy<Value = RegistryEntry> {
    (
        any::<u64>(),
        discovery(),
        proptest::option::of(topology()),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(
            |(incarnation, discovery, topology, lost_ms)| RegistryEntry {
                incarnation,
                discovery,
                topology,
                lost_for: lost_ms.map(Duration::from_millis),
            },
        )
}

pub(super) fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            0u8..17,
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
        ),
        (any::<u8>(), any::<bool>(), any::<[u8; NONCE_LEN]>(), text()),
        pvec(any::<u8>(), 0..300),
        pvec(entry(), 0..3),
    )
        .prop_map(
            |((kind, a, b, c, small), (code, flag, proof, text), payload, entries)| Spec {
                kind,
                a,
                b,
                c,
                small,
                code,
                flag,
                proof,
                text,
                payload,
                entries,
            },
        )
}

fn pick<T: Copy>(all: &[T], code: u8) -> T {
    all[usize::from(code) % all.len()]
}

/// The frame a spec describes; registry records have revision 0 where the wire does not carry
/// revisions.
pub(super) fn frame(spec: &Spec) -> Frame<'_> {
    let versions = VersionRange {
        min: (spec.small & 0xFFFF) as u16,
        max: (spec.small >> 16) as u16,
    };
    let nonce = spec.flag.then_some(spec.proof);
    let challenge = nonce.map(|nonce| Challenge {
        nonce,
        key_id: spec.code,
    });
    let proof = (spec.code % 4 >= 2).then_some(Proof {
        key_id: spec.code,
        mac: spec.proof,
    });
    let first = spec.entries.first().cloned();
    let unrevised = |mut e: RegistryEntry| {
        e.discovery.revision = 0;
        if let Some(t) = &mut e.topology {
            t.revision = 0;
        }
        e
    };
    match spec.kind {
        0 => Frame::Hello(Hello {
            node: NodeId(spec.a),
            incarnation: spec.b,
            versions,
            name: &spec.text,
            challenge,
        }),
        1 => Frame::HelloAck(HelloAck {
            node: NodeId(spec.a),
            incarnation: spec.b,
            versions,
            name: &spec.text,
            nonce,
            proof,
            result: if spec.code.is_multiple_of(2) {
                Ok(())
            } else {
                Err(pick(RefuseReason::ALL, spec.code / 2))
            },
        }),
        2 => Frame::Data(Data {
            src: NodeId(spec.a),
            dst: NodeId(spec.b),
            seq: spec.c,
            dst_incarnation: spec.a ^ spec.c,
            retransmit: spec.code % 2 == 1,
            msg_type: spec.small,
            hop_count: spec.code,
            payload: &spec.payload,
        }),
        3 => Frame::Ack(Ack {
            src: NodeId(spec.a),
            dst: NodeId(spec.b),
            seq: spec.c,
            dst_incarnation: spec.b ^ spec.c,
            reset: (spec.code % 2 == 1).then_some(spec.a),
        }),
        4 => Frame::Unreachable(Unreachable {
            src: NodeId(spec.a),
            dst: NodeId(spec.b),
            seq: spec.c,
            reason: pick(UnreachableReason::ALL, spec.code),
            dst_incarnation: spec.a ^ spec.c,
        }),
        5 => Frame::Ping(Ping { nonce: spec.a }),
        6 => Frame::Pong(Pong { nonce: spec.a }),
        7 => Frame::Bye(Bye {
            reason: pick(ByeReason::ALL, spec.code),
        }),
        8 => match first.map(unrevised) {
            Some(e) => Register {
                watch: false,
                incarnation: spec.a,
                discovery: e.discovery,
                topology: e.topology,
                proof: None,
            }
            .into(),
            None => Frame::Ping(Ping { nonce: spec.a }),
        },
        9 => {
            let e = first.map(unrevised);
            Update {
                incarnation: spec.a,
                discovery: e
                    .as_ref()
                    .filter(|_| spec.flag)
                    .map(|e| e.discovery.clone()),
                topology: e.and_then(|e| e.topology),
            }
            .into()
        }
        10 => Snapshot {
            epoch: spec.a,
            revision: spec.b,
            entries: spec.entries.clone(),
            more: false,
        }
        .into(),
        11 => match first {
            Some(entry) => Put {
                epoch: spec.a,
                revision: spec.b,
                entry,
            }
            .into(),
            None => Frame::Pong(Pong { nonce: spec.b }),
        },
        12 => Frame::Delete(Delete {
            epoch: spec.a,
            revision: spec.b,
            id: NodeId(spec.c),
            name: &spec.text,
        }),
        14 => Frame::Auth(Auth {
            proof: Proof {
                key_id: spec.code,
                mac: spec.proof,
            },
        }),
        15 => Frame::Probe(Probe {
            target: NodeId(spec.a),
            incarnation: spec.b,
        }),
        16 => Frame::ProbeAck(ProbeAck {
            target: NodeId(spec.a),
            incarnation: spec.b,
            verdict: pick(ProbeVerdict::ALL, spec.code),
        }),
        _ => Frame::Heartbeat(Heartbeat {
            epoch: spec.a,
            sequence: spec.b,
        }),
    }
}

proptest! {
    #![proptest_config(config("wire_round_trip", 256))]

    /// Every frame decodes to itself, with `encoded_len` bytes consumed.
    #[test]
    fn every_frame_round_trips(spec in spec()) {
        let frame = frame(&spec);
        let mut out = Vec::new();
        let written = encode(&frame, &mut out).expect("test frames are encodable");
        prop_assert_eq!(written, out.len());
        prop_assert_eq!(encoded_len(&frame), out.len());
        prop_assert_eq!(decode(&out, out.len()), Ok(Decoded::Frame(frame, written)));
    }
}

proptest! {
    #![proptest_config(config("wire_garbage", 512))]

    /// Arbitrary bytes give a frame, need-more or an error, never a panic; a frame's bytes
    /// re-encode to a frame that decodes equal.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in pvec(any::<u8>(), 0..200), tweak in any::<bool>()) {
        let mut bytes = bytes;
        // Half the cases get a plausible header so bodies are exercised too.
        if tweak && bytes.len() >= 8 {
            let len = u32::try_from(bytes.len()).expect("short");
            bytes[..4].copy_from_slice(&len.to_le_bytes());
            bytes[4] = WIRE_VERSION;
            bytes[5] = pick(&FrameKind::ALL, bytes[5]).code();
            bytes[6] &= 1;
            bytes[7] = 0;
        }
        match decode(&bytes, 150) {
            Ok(Decoded::Frame(frame, consumed)) => {
                prop_assert!(consumed <= bytes.len());
                let mut again = Vec::new();
                encode(&frame, &mut again).expect("a decoded frame is encodable");
                prop_assert_eq!(decode(&again, usize::MAX), Ok(Decoded::Frame(frame, again.len())));
            }
            Ok(Decoded::NeedMore(n)) => prop_assert!(n >= 1),
            Err(_) => {}
        }
    }

    /// A stream of frames cut into random chunks reassembles to the same frames.
    #[test]
    fn split_streams_reassemble(specs in pvec(spec(), 1..6), cuts in pvec(any::<u16>(), 0..12)) {
        let frames: Vec<Frame<'_>> = specs.iter().map(frame).collect();
        let mut stream = Vec::new();
        for f in &frames {
            encode(f, &mut stream).expect("test frames are encodable");
        }
        let mut points: Vec<usize> =
            cuts.iter().map(|&c| usize::from(c) % (stream.len() + 1)).collect();
        points.push(stream.len());
        points.sort_unstable();
        let mut reader = FrameReader::new(DEFAULT_MAX_FRAME);
        let mut got = 0;
        let mut from = 0;
        for to in points {
            reader.push(&stream[from..to]);
            from = to;
            while let Some(decoded) = reader.next_frame().expect("valid stream") {
                prop_assert_eq!(&decoded, &frames[got]);
                got += 1;
            }
        }
        prop_assert_eq!(got, frames.len());
        prop_assert_eq!(reader.buffered(), 0);
    }
}
