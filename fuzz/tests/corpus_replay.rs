//! Replays every committed corpus file through its target on stable, so a crash the fuzzer
//! once found stays fixed.

use std::{fs, path::Path};

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut count = 0;
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus folder {} unreadable: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let data = fs::read(&path).expect("corpus file");
        run(&data);
        count += 1;
    }
    count
}

#[test]
fn rpc_ops_corpus_replays_cleanly() {
    let replayed = replay("rpc_ops", switchboard_fuzz::rpc_ops);
    assert!(replayed >= 5, "corpus has only {replayed} files");
}

#[test]
fn discovery_json_corpus_replays_cleanly() {
    let replayed = replay("discovery_json", switchboard_fuzz::discovery_json);
    assert!(replayed >= 6, "corpus has only {replayed} files");
}

#[test]
fn frame_decode_corpus_replays_cleanly() {
    let replayed = replay("frame_decode", switchboard_fuzz::frame_decode);
    assert!(replayed >= 30, "corpus has only {replayed} files");
}

#[test]
fn handshake_corpus_replays_cleanly() {
    let replayed = replay("handshake", switchboard_fuzz::handshake);
    assert!(replayed >= 30, "corpus has only {replayed} files");
}

#[test]
fn registry_server_corpus_replays_cleanly() {
    let replayed = replay("registry_server", switchboard_fuzz::registry_server);
    assert!(replayed >= 8, "corpus has only {replayed} files");
}

#[test]
fn registry_decode_corpus_replays_cleanly() {
    let replayed = replay("registry_decode", switchboard_fuzz::registry_decode);
    assert!(replayed >= 10, "corpus has only {replayed} files");
}

/// Decodes a `frame_decode` corpus file (seed byte, then stream) frame by frame: the number
/// of frames before the end, and how it ended.
fn decode_stream(file: &[u8]) -> (usize, Result<(), switchboard_core::wire::DecodeError>) {
    use switchboard_core::wire::{Decoded, decode};
    let mut rest = &file[1..];
    let mut frames = 0;
    loop {
        match decode(rest, switchboard_fuzz::FUZZ_MAX_FRAME) {
            Ok(Decoded::Frame(_, used)) => {
                frames += 1;
                rest = &rest[used..];
            }
            Ok(Decoded::NeedMore(_)) => return (frames, Ok(())),
            Err(error) => return (frames, Err(error)),
        }
    }
}

#[test]
fn frame_decode_seeds_decode_as_named() {
    use switchboard_core::wire::{DecodeError, FrameKind};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join("frame_decode");
    let read = |name: &str| fs::read(dir.join(name)).expect("committed seed");
    for name in [
        "hello",
        "hello_challenge",
        "hello_ack_accept",
        "auth",
        "hello_ack_refuse",
        "data_small",
        "data_empty",
        "data_1k",
        "data_retransmit_stamped",
        "ack",
        "ack_reset",
        "unreachable",
        "ping",
        "pong",
        "bye",
        "register",
        "update_both",
        "update_topology",
        "snapshot",
        "snapshot_empty",
        "put",
        "delete",
        "heartbeat",
    ] {
        assert_eq!(decode_stream(&read(name)), (1, Ok(())), "{name}");
    }
    for seed in 0..5 {
        let name = format!("stream_all_chunking_{seed}");
        assert_eq!(decode_stream(&read(&name)), (23, Ok(())), "{name}");
    }
    let snapshot_len = read("snapshot").len() - 1;
    let expected: [(&str, usize, DecodeError); 11] = [
        (
            "bad_oversized_length",
            0,
            DecodeError::FrameTooLarge {
                len: 0x7FFF_FFFF,
                max: 4096,
            },
        ),
        ("bad_short_length", 0, DecodeError::BadLength { len: 7 }),
        ("bad_version", 0, DecodeError::BadVersion { version: 2 }),
        ("bad_kind", 0, DecodeError::UnknownKind { kind: 12 }),
        (
            "bad_flags",
            0,
            DecodeError::UnknownFlags {
                kind: FrameKind::Ping,
                flags: 2,
            },
        ),
        (
            "bad_trailing_byte",
            0,
            DecodeError::LengthMismatch {
                kind: FrameKind::Ping,
                len: 17,
                used: 16,
            },
        ),
        (
            "bad_lying_name_length",
            0,
            DecodeError::Truncated { field: "name" },
        ),
        (
            "bad_missing_challenge",
            0,
            DecodeError::Truncated { field: "nonce" },
        ),
        (
            "bad_lying_entry_count",
            0,
            DecodeError::CountTooLarge {
                field: "entries",
                count: u32::MAX,
                remaining: snapshot_len - 28,
            },
        ),
        (
            "bad_entry_flags",
            0,
            DecodeError::UnknownCode {
                field: "entry_flags",
                code: 3,
            },
        ),
        (
            "frames_after_an_error",
            1,
            DecodeError::UnknownKind { kind: 0 },
        ),
    ];
    for (name, frames, error) in expected {
        assert_eq!(decode_stream(&read(name)), (frames, Err(error)), "{name}");
    }
    assert!(matches!(
        decode_stream(&read("bad_json_in_entry")),
        (
            0,
            Err(DecodeError::Json {
                field: "discovery",
                ..
            })
        )
    ),);
    assert_eq!(decode_stream(&read("partial_frame_at_end")), (1, Ok(())));
}

/// The two hand-made `frame_decode` seeds whose `Data` payload is an RPC request and an RPC
/// reply carrying metadata (a W3C trace context), so the fuzzer mutates metadata blocks from
/// valid ones; the target checks every RPC payload decodes canonically.
#[test]
fn rpc_metadata_seeds_carry_a_trace_context() {
    use switchboard_core::wire::{
        Decoded, Frame, RPC_MSG_TYPE, RpcMessage, TRACEPARENT, TRACESTATE, decode, decode_rpc,
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join("frame_decode");
    let trace = &b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"[..];
    for (name, payload) in [
        ("rpc_request_metadata", &b"hi"[..]),
        ("rpc_reply_metadata", &b"answer"[..]),
    ] {
        let file = fs::read(dir.join(name)).expect("committed seed");
        assert_eq!(decode_stream(&file), (1, Ok(())), "{name}");
        let Ok(Decoded::Frame(Frame::Data(data), _)) = decode(&file[1..], 4096) else {
            panic!("{name} is one data frame");
        };
        assert_eq!(data.msg_type, RPC_MSG_TYPE, "{name}");
        let (metadata, got) = match decode_rpc(data.payload) {
            Ok(RpcMessage::Request {
                metadata, payload, ..
            })
            | Ok(RpcMessage::Reply {
                metadata, payload, ..
            }) => (metadata, payload),
            other => panic!("{name} carries {other:?}"),
        };
        assert_eq!(got, payload, "{name}");
        assert_eq!(
            metadata.iter().collect::<Vec<_>>(),
            [(TRACEPARENT, trace), (TRACESTATE, &b"k=v"[..])],
            "{name}"
        );
    }
}

/// The wire seed corpora: one valid frame of every kind, a stream of all of them, and
/// malformed inputs. Committed; regenerate by hand after a format change with
/// `cargo test -p switchboard-fuzz --test corpus_replay -- --ignored write_wire_seed_corpora`.
mod wire_seeds {
    use std::{fs, path::Path};

    use switchboard_core::{
        discovery::{DiscoveryInfo, TopologyInfo},
        ids::NodeId,
        wire::{
            self, Ack, Auth, Bye, ByeReason, Challenge, Data, Delete, Frame, FrameKind, Heartbeat,
            Hello, HelloAck, MAC_LEN, NONCE_LEN, Ping, Pong, Proof, Put, RefuseReason, Register,
            RegistryEntry, Snapshot, Unreachable, UnreachableReason, Update, VersionRange,
        },
    };

    const DISCOVERY: &[u8] = br#"{"id":4353,"name":"echo-svr-1","hostname":"game-host-07","pid":31337,"listen":["atcp://127.0.0.1:21437"],"type_id":17,"type_name":"echosvr","area":{"region":"cn-south","district":"sz-1","zone_id":518000},"runtime":{"stateful_pod_index":3},"metadata":{"api_version":"v1","kind":"echo","labels":{"tier":"backend"}}}"#;
    const TOPOLOGY: &[u8] = br#"{"id":4353,"name":"echo-svr-1","hostname":"game-host-07","pid":31337,"upstream_id":513,"data":{"label":{"zone":"1"}}}"#;

    fn entry(suspect: bool) -> RegistryEntry {
        RegistryEntry {
            incarnation: 77,
            discovery: DiscoveryInfo::from_json_at(DISCOVERY, 12).expect("seed record"),
            topology: Some(TopologyInfo::from_json_at(TOPOLOGY, 13).expect("seed record")),
            lost_for: suspect.then(|| std::time::Duration::from_millis(1_500)),
        }
    }

    /// One named valid frame of every kind (two of some).
    fn frames() -> Vec<(&'static str, Frame<'static>)> {
        let small = Data {
            src: NodeId(1),
            dst: NodeId(2),
            seq: 1,
            dst_incarnation: 0,
            retransmit: false,
            msg_type: 7,
            hop_count: 0,
            payload: b"ping",
        };
        let discovery = DiscoveryInfo::from_json(DISCOVERY).expect("seed record");
        let topology = TopologyInfo::from_json(TOPOLOGY).expect("seed record");
        vec![
            (
                "hello",
                Frame::Hello(Hello {
                    node: NodeId(4353),
                    incarnation: 77,
                    versions: VersionRange { min: 1, max: 2 },
                    name: "echo-svr-1",
                    challenge: None,
                }),
            ),
            (
                "hello_challenge",
                Frame::Hello(Hello {
                    node: NodeId(4353),
                    incarnation: 77,
                    versions: VersionRange { min: 1, max: 1 },
                    name: "echo-svr-1",
                    challenge: Some(Challenge {
                        nonce: [0x5A; NONCE_LEN],
                        key_id: 0xD2,
                    }),
                }),
            ),
            (
                "hello_ack_accept",
                Frame::HelloAck(HelloAck {
                    node: NodeId(513),
                    incarnation: 3,
                    versions: VersionRange { min: 1, max: 2 },
                    name: "proxy",
                    nonce: Some([0x3C; NONCE_LEN]),
                    proof: Some(Proof {
                        key_id: 0xD2,
                        mac: [0xA5; MAC_LEN],
                    }),
                    result: Ok(()),
                }),
            ),
            (
                "auth",
                Frame::Auth(Auth {
                    proof: Proof {
                        key_id: 0xD2,
                        mac: [0x5A; MAC_LEN],
                    },
                }),
            ),
            (
                "hello_ack_refuse",
                Frame::HelloAck(HelloAck {
                    node: NodeId(513),
                    incarnation: 3,
                    versions: VersionRange { min: 3, max: 4 },
                    name: "proxy",
                    nonce: None,
                    proof: None,
                    result: Err(RefuseReason::VersionMismatch),
                }),
            ),
            ("data_small", Frame::Data(small)),
            (
                "data_empty",
                Frame::Data(Data {
                    payload: b"",
                    hop_count: 3,
                    ..small
                }),
            ),
            (
                "data_1k",
                Frame::Data(Data {
                    payload: &[0x42; 1024],
                    seq: 2,
                    ..small
                }),
            ),
            (
                "data_retransmit_stamped",
                Frame::Data(Data {
                    dst_incarnation: 0x0102_0304,
                    retransmit: true,
                    ..small
                }),
            ),
            (
                "ack",
                Frame::Ack(Ack {
                    src: NodeId(1),
                    dst: NodeId(2),
                    seq: 2,
                    dst_incarnation: 0x0102_0304,
                    reset: None,
                }),
            ),
            (
                "ack_reset",
                Frame::Ack(Ack {
                    src: NodeId(1),
                    dst: NodeId(2),
                    seq: 2,
                    dst_incarnation: 0x0102_0304,
                    reset: Some(5_000_000_000),
                }),
            ),
            (
                "unreachable",
                Frame::Unreachable(Unreachable {
                    src: NodeId(1),
                    dst: NodeId(2),
                    seq: 2,
                    reason: UnreachableReason::NoRoute,
                    dst_incarnation: 0x0102_0304,
                }),
            ),
            ("ping", Frame::Ping(Ping { nonce: 0xDEAD_BEEF })),
            ("pong", Frame::Pong(Pong { nonce: 0xDEAD_BEEF })),
            (
                "bye",
                Frame::Bye(Bye {
                    reason: ByeReason::Replaced,
                }),
            ),
            (
                "register",
                Register {
                    incarnation: 77,
                    discovery: discovery.clone(),
                    topology: Some(topology.clone()),
                    proof: None,
                    watch: false,
                }
                .into(),
            ),
            (
                "update_both",
                Update {
                    incarnation: 77,
                    discovery: Some(discovery),
                    topology: Some(topology.clone()),
                }
                .into(),
            ),
            (
                "update_topology",
                Update {
                    incarnation: 77,
                    discovery: None,
                    topology: Some(topology),
                }
                .into(),
            ),
            (
                "snapshot",
                Snapshot {
                    epoch: 2,
                    revision: 14,
                    entries: vec![entry(false), entry(true)],
                    more: false,
                }
                .into(),
            ),
            (
                "snapshot_empty",
                Snapshot {
                    epoch: 2,
                    revision: 0,
                    entries: Vec::new(),
                    more: false,
                }
                .into(),
            ),
            (
                "put",
                Put {
                    epoch: 2,
                    revision: 15,
                    entry: entry(false),
                }
                .into(),
            ),
            (
                "delete",
                Frame::Delete(Delete {
                    epoch: 2,
                    revision: 16,
                    id: NodeId(4353),
                    name: "echo-svr-1",
                }),
            ),
            (
                "heartbeat",
                Frame::Heartbeat(Heartbeat {
                    epoch: 2,
                    sequence: 9,
                }),
            ),
        ]
    }

    fn encoded(frame: &Frame<'_>) -> Vec<u8> {
        let mut bytes = Vec::new();
        wire::encode(frame, &mut bytes).expect("seed frames encode");
        bytes
    }

    fn with_seed(seed: u8, stream: &[u8]) -> Vec<u8> {
        let mut data = vec![seed];
        data.extend_from_slice(stream);
        data
    }

    fn write(target: &str, name: &str, data: &[u8]) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(target);
        fs::create_dir_all(&dir).expect("corpus folder");
        fs::write(dir.join(name), data).expect("corpus file");
    }

    #[test]
    #[ignore = "writes the committed wire seed corpora; run by hand after a format change"]
    fn write_wire_seed_corpora() {
        let frames = frames();
        let mut stream = Vec::new();
        for (name, frame) in &frames {
            let bytes = encoded(frame);
            write("frame_decode", name, &with_seed(0, &bytes));
            stream.extend_from_slice(&bytes);
            if frame.kind().is_registry() {
                let selector = [
                    FrameKind::Register,
                    FrameKind::Update,
                    FrameKind::Snapshot,
                    FrameKind::Put,
                    FrameKind::Delete,
                    FrameKind::Heartbeat,
                ]
                .iter()
                .position(|&k| k == frame.kind())
                .expect("a registry kind");
                let selector = u8::try_from(selector).expect("six kinds");
                write(
                    "registry_decode",
                    name,
                    &with_seed(selector, &bytes[wire::HEADER_LEN..]),
                );
            }
        }
        for seed in 0..5u8 {
            write(
                "frame_decode",
                &format!("stream_all_chunking_{seed}"),
                &with_seed(seed, &stream),
            );
        }

        let named = |wanted: &str| {
            let (_, frame) = frames
                .iter()
                .find(|(name, _)| *name == wanted)
                .expect("every seed frame is named");
            encoded(frame)
        };
        let ping = named("ping");
        let hello = named("hello");
        let snapshot = named("snapshot");
        let mut malformed: Vec<(&str, Vec<u8>)> = Vec::new();
        malformed.push((
            "bad_oversized_length",
            vec![0xFF, 0xFF, 0xFF, 0x7F, 1, 3, 0, 0],
        ));
        malformed.push(("bad_short_length", vec![7, 0, 0, 0, 1, 6, 0, 0]));
        let mut bad = ping.clone();
        bad[4] = 2;
        malformed.push(("bad_version", bad));
        let mut bad = ping.clone();
        bad[5] = 12; // 10 and 11 are `Probe` and `ProbeAck`
        malformed.push(("bad_kind", bad));
        let mut bad = ping.clone();
        bad[6] = 2;
        malformed.push(("bad_flags", bad));
        let mut bad = ping.clone();
        bad[0] = 17;
        bad.push(0);
        malformed.push(("bad_trailing_byte", bad));
        let mut bad = hello.clone();
        bad[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
        malformed.push(("bad_lying_name_length", bad));
        let mut bad = hello.clone();
        bad[6] = 1;
        malformed.push(("bad_missing_challenge", bad));
        let mut bad = snapshot.clone();
        bad[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        malformed.push(("bad_lying_entry_count", bad.clone()));
        write(
            "registry_decode",
            "bad_lying_entry_count",
            &with_seed(2, &bad[wire::HEADER_LEN..]),
        );
        let mut bad = snapshot.clone();
        let at = bad
            .windows(6)
            .position(|w| w == b"\"id\":4")
            .expect("an id field")
            + 5;
        bad[at] = b'x';
        malformed.push(("bad_json_in_entry", bad.clone()));
        write(
            "registry_decode",
            "bad_json_in_entry",
            &with_seed(2, &bad[wire::HEADER_LEN..]),
        );
        let mut bad = snapshot;
        bad[8 + 8 + 8 + 4 + 24] = 3;
        malformed.push(("bad_entry_flags", bad.clone()));
        write(
            "registry_decode",
            "bad_entry_flags",
            &with_seed(2, &bad[wire::HEADER_LEN..]),
        );
        let mut partial = ping.clone();
        partial.extend_from_slice(&hello[..20]);
        malformed.push(("partial_frame_at_end", partial));
        let mut after_error = ping.clone();
        after_error.extend_from_slice(&[9, 0, 0, 0, 1, 0, 0, 0, 0]);
        after_error.extend_from_slice(&ping);
        malformed.push(("frames_after_an_error", after_error));
        for (name, bytes) in malformed {
            write("frame_decode", name, &with_seed(1, &bytes));
        }

        // The handshake target: each handshake frame, the registry frames and a data frame,
        // and the whole stream, against both machines (mode bit 0), with and without an
        // honest handshake first (bit 1), chunked finely and coarsely (bits 2-3).
        for name in [
            "hello",
            "hello_challenge",
            "hello_ack_accept",
            "auth",
            "data_small",
            "register",
            "ping",
        ] {
            let bytes = named(name);
            for mode in [0u8, 1, 2, 3] {
                write(
                    "handshake",
                    &format!("{name}_{mode}"),
                    &with_seed(mode, &bytes),
                );
            }
        }
        let mut replayed = named("hello_challenge");
        replayed.extend_from_slice(&named("auth"));
        replayed.extend_from_slice(&named("register"));
        for mode in [0u8, 1, 5, 13] {
            write(
                "handshake",
                &format!("hello_auth_register_{mode}"),
                &with_seed(mode, &replayed),
            );
            write(
                "handshake",
                &format!("stream_all_{mode}"),
                &with_seed(mode, &stream),
            );
        }
    }
}

/// Allocation bounds of the decoder, measured: this test binary counts the bytes each thread
/// allocates, so a lying length or count that made the decoder reserve memory would show.
mod allocation {
    use std::{
        alloc::{GlobalAlloc, Layout, System},
        cell::Cell,
    };

    use switchboard_core::{
        ids::NodeId,
        wire::{self, Data, DecodeError, Decoded, Frame, FrameReader},
    };

    thread_local! {
        static ALLOCATED: Cell<usize> = const { Cell::new(0) };
    }

    /// Forwards to the system allocator, adding each request's size to the calling thread's
    /// counter (tests run on separate threads, so they do not see each other's allocations).
    struct Counting;

    #[expect(
        unsafe_code,
        reason = "a global allocator is an unsafe trait; this one only forwards to System"
    )]
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATED.try_with(|n| n.set(n.get() + layout.size()));
            // SAFETY: same contract as the caller's, forwarded unchanged.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System.alloc` with this layout (see `alloc`).
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Bytes allocated by this thread while `f` runs.
    fn allocated_by(f: impl FnOnce()) -> usize {
        let before = ALLOCATED.with(Cell::get);
        f();
        ALLOCATED.with(Cell::get) - before
    }

    const MAX: usize = wire::DEFAULT_MAX_FRAME;

    #[test]
    fn lying_lengths_and_counts_allocate_nothing() {
        let huge = [0xFF, 0xFF, 0xFF, 0xFF, 1, 3, 0, 0];
        let mut snapshot = vec![0u8; 8 + 20 + 40];
        snapshot[..4].copy_from_slice(&68u32.to_le_bytes());
        snapshot[4] = 1;
        snapshot[5] = 18;
        snapshot[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut name = vec![0u8; 8 + 24 + 4];
        name[..4].copy_from_slice(&36u32.to_le_bytes());
        name[4] = 1;
        name[5] = 20;
        name[32..36].copy_from_slice(&u32::MAX.to_le_bytes());

        let mut results = Vec::with_capacity(3);
        let bytes = allocated_by(|| {
            results.push(wire::decode(&huge, MAX));
            results.push(wire::decode(&snapshot, MAX));
            results.push(wire::decode(&name, MAX));
        });
        assert_eq!(bytes, 0);
        assert_eq!(
            results,
            [
                Err(DecodeError::FrameTooLarge {
                    len: u32::MAX as usize,
                    max: MAX
                }),
                Err(DecodeError::CountTooLarge {
                    field: "entries",
                    count: u32::MAX,
                    remaining: 40
                }),
                Err(DecodeError::Truncated { field: "name" }),
            ]
        );
    }

    #[test]
    fn a_reader_waiting_for_a_large_frame_holds_only_what_arrived() {
        let mut reader = FrameReader::new(MAX);
        let mut header = u32::try_from(MAX).expect("16 MiB").to_le_bytes().to_vec();
        header.extend_from_slice(&[1, 3, 0, 0]);
        let bytes = allocated_by(|| {
            reader.push(&header);
            reader.push(&[0; 92]);
            assert!(matches!(reader.next_frame(), Ok(None)));
        });
        assert_eq!(reader.buffered(), 100);
        assert!(bytes <= 256, "{bytes} bytes allocated for 100 buffered");
    }

    #[test]
    fn a_plausible_count_of_garbage_entries_allocates_a_bounded_amount() {
        // 1000 entries promised and 1000 minimal entries' worth of zero bytes present: the
        // first entry's empty discovery record fails.
        let body_len = 20 + 1000 * 33;
        let mut snapshot = vec![0u8; 8 + body_len];
        snapshot[..4].copy_from_slice(&u32::try_from(8 + body_len).expect("small").to_le_bytes());
        snapshot[4] = 1;
        snapshot[5] = 18;
        snapshot[24..28].copy_from_slice(&1000u32.to_le_bytes());
        let mut result = None;
        let bytes = allocated_by(|| result = Some(wire::decode(&snapshot, MAX)));
        assert!(matches!(
            result,
            Some(Err(DecodeError::Json {
                field: "discovery",
                ..
            }))
        ));
        assert!(bytes < 16 * 1024, "{bytes} bytes allocated");
    }

    #[test]
    fn data_frames_encode_and_decode_without_allocating() {
        let payload = [7u8; 1024];
        let frame = Frame::Data(Data {
            src: NodeId(1),
            dst: NodeId(2),
            seq: 3,
            dst_incarnation: 9,
            retransmit: true,
            msg_type: 4,
            hop_count: 0,
            payload: &payload,
        });
        let mut buf = Vec::with_capacity(4 * 1100);
        let mut decoded = 0;
        let bytes = allocated_by(|| {
            for _ in 0..4 {
                wire::encode(&frame, &mut buf).expect("small frame");
            }
            let mut rest = &buf[..];
            while let Ok(Decoded::Frame(got, used)) = wire::decode(rest, MAX) {
                assert_eq!(got, frame);
                decoded += 1;
                rest = &rest[used..];
            }
        });
        assert_eq!(bytes, 0);
        assert_eq!(decoded, 4);
    }
}

#[test]
fn etcd_event_corpus_replays_cleanly() {
    let replayed = replay("etcd_event", switchboard_fuzz::etcd_event);
    assert!(replayed >= 8, "corpus has only {replayed} files");
}

#[test]
fn node_ops_corpus_replays_cleanly() {
    let replayed = replay("node_ops", switchboard_fuzz::node_ops);
    assert!(replayed >= 10, "corpus has only {replayed} files");
}

#[test]
fn sim_seed_corpus_replays_cleanly() {
    let replayed = replay("sim_seed", switchboard_fuzz::sim_seed);
    assert!(replayed >= 10, "corpus has only {replayed} files");
}
