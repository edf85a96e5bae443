//! cargo-fuzz targets for switchboard.
//!
//! This crate is an ordinary workspace member so it builds and its corpus-replay test runs on
//! stable (`cargo test -p switchboard-fuzz`); the fuzz binaries in `fuzz_targets/` are built by
//! `cargo +nightly fuzz run <target>`, which sets `--cfg fuzzing` and links libFuzzer.
//!
//! Each target is a few lines calling one function of this library, so the same checks run
//! under libFuzzer and in the stable replay of the committed corpus in `fuzz/corpus/<target>/`.
//! `node_ops` and `sim_seed` drive the deterministic simulator (`core::sim`, feature `sim`).

mod registry_server;

pub use registry_server::registry_server;

use switchboard_core::{
    discovery::{Applied, DiscoveryInfo, DiscoverySet, TopologyInfo},
    rng::Rng,
    wire::{self, DecodeError, Decoded, Frame, FrameKind, FrameReader},
};

/// Target `discovery_json`: registry values as they come from etcd or a peer.
///
/// Checks that decoding never panics, that a decoded record survives an encode/decode round
/// trip unchanged, and that a document the set refuses leaves the set exactly as it was.
///
/// # Panics
/// Panics (which the fuzzer reports) when one of those properties is violated.
pub fn discovery_json(data: &[u8]) {
    if let Ok(info) = DiscoveryInfo::from_json(data) {
        let again =
            DiscoveryInfo::from_json(&info.to_json()).expect("a record we encoded must decode");
        assert!(
            again.same_content(&info),
            "discovery round trip changed the record"
        );
    }
    if let Ok(topo) = TopologyInfo::from_json(data) {
        let again =
            TopologyInfo::from_json(&topo.to_json()).expect("a record we encoded must decode");
        assert_eq!(again, topo, "topology round trip changed the record");
    }

    let mut set = DiscoverySet::new();
    let seeded = DiscoveryInfo::from_json_at(br#"{"id":1,"name":"seed"}"#, 5)
        .expect("the seed record is valid");
    assert!(matches!(set.put(seeded), Applied::Added { .. }));
    let before: Vec<DiscoveryInfo> = set.iter().cloned().collect();
    match set.put_json(data, 7) {
        Err(_) | Ok(Applied::Rejected | Applied::Stale { .. }) => {
            let after: Vec<DiscoveryInfo> = set.iter().cloned().collect();
            assert_eq!(before, after, "a refused document changed the set");
        }
        Ok(_) => {}
    }
}

/// Frame limit of the wire targets: small enough that the fuzzer reaches `FrameTooLarge`.
pub const FUZZ_MAX_FRAME: usize = 4096;

/// Target `frame_decode`: a byte stream as a link delivers it.
///
/// The first byte seeds how the rest is cut into chunks; the chunks go through a
/// [`FrameReader`], and the frames (and final error, if any) must be exactly those a one-shot
/// [`wire::decode`] loop over the whole stream finds. Every decoded frame must re-encode to a
/// frame that decodes equal, with `encoded_len` matching; link-level frames must re-encode to
/// the very bytes they came from (their encoding is canonical).
///
/// # Panics
/// Panics (which the fuzzer reports) when one of those properties is violated.
pub fn frame_decode(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };

    let mut expected = Vec::new();
    let mut rest = stream;
    let expected_end = loop {
        match wire::decode(rest, FUZZ_MAX_FRAME) {
            Ok(Decoded::Frame(frame, used)) => {
                assert!(
                    used >= wire::HEADER_LEN && used <= rest.len(),
                    "bad consumed count"
                );
                expected.push(check_round_trip(&frame, Some(&rest[..used])));
                rest = &rest[used..];
            }
            Ok(Decoded::NeedMore(more)) => {
                assert!(more >= 1, "need-more must ask for at least one byte");
                break Ok(());
            }
            Err(error) => break Err(error),
        }
    };

    let mut reader = FrameReader::new(FUZZ_MAX_FRAME);
    let mut chunks = Rng::new(u64::from(seed));
    let max_chunk = [1, 3, 16, 64, 4096][usize::from(seed % 5)];
    let mut got = Vec::new();
    let mut got_end = Ok(());
    let mut at = 0;
    'feed: while at < stream.len() {
        let step = usize::try_from(chunks.in_range(1, max_chunk)).expect("small chunk");
        let to = (at + step).min(stream.len());
        reader.push(&stream[at..to]);
        at = to;
        loop {
            match reader.next_frame() {
                Ok(Some(frame)) => got.push(check_round_trip(&frame, None)),
                Ok(None) => break,
                Err(error) => {
                    got_end = Err(error);
                    break 'feed;
                }
            }
        }
    }
    assert_eq!(got, expected, "chunked reassembly found other frames");
    assert_eq!(
        got_end, expected_end,
        "chunked reassembly ended differently"
    );
}

/// Registry kinds the `registry_decode` target wraps its input in.
const REGISTRY_KINDS: [FrameKind; 6] = [
    FrameKind::Register,
    FrameKind::Update,
    FrameKind::Snapshot,
    FrameKind::Put,
    FrameKind::Delete,
    FrameKind::Heartbeat,
];

/// Target `registry_decode`: one registry-protocol frame body, with its embedded JSON records.
///
/// The first byte picks the kind, the rest is the body; the target puts a valid header in
/// front so every run exercises the body decoder (entry counts, record lengths, libatapp
/// JSON). A decoded frame must re-encode to a frame that decodes equal, and encoding must be
/// stable from then on.
///
/// # Panics
/// Panics (which the fuzzer reports) when one of those properties is violated.
pub fn registry_decode(data: &[u8]) {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let frame_bytes = registry_frame(selector, body);
    match wire::decode(&frame_bytes, usize::MAX) {
        Ok(Decoded::Frame(frame, used)) => {
            assert_eq!(used, frame_bytes.len(), "a whole frame must be consumed");
            check_round_trip(&frame, None);
        }
        Ok(Decoded::NeedMore(_)) => panic!("a complete frame asked for more bytes"),
        Err(DecodeError::FrameTooLarge { .. }) => panic!("no limit was set"),
        Err(_) => {}
    }
}

/// A registry frame of the kind `selector` picks, with `body` behind a valid header.
#[must_use]
pub fn registry_frame(selector: u8, body: &[u8]) -> Vec<u8> {
    let kind = REGISTRY_KINDS[usize::from(selector) % REGISTRY_KINDS.len()];
    let len = u32::try_from(wire::HEADER_LEN + body.len()).unwrap_or(u32::MAX);
    let mut bytes = Vec::with_capacity(wire::HEADER_LEN + body.len());
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&[wire::WIRE_VERSION, kind.code(), 0, 0]);
    bytes.extend_from_slice(body);
    bytes
}

/// Re-encodes `frame`, checks the encoding decodes to an equal frame of `encoded_len` bytes
/// and is stable, and — for link-level frames decoded from `raw` — equals `raw`. Returns the
/// encoding.
fn check_round_trip(frame: &Frame<'_>, raw: Option<&[u8]>) -> Vec<u8> {
    let mut bytes = Vec::new();
    let written = wire::encode(frame, &mut bytes).expect("a decoded frame must encode");
    assert_eq!(written, bytes.len());
    assert_eq!(wire::encoded_len(frame), written, "encoded_len disagrees");
    let again = match wire::decode(&bytes, usize::MAX) {
        Ok(Decoded::Frame(again, used)) => {
            assert_eq!(used, bytes.len(), "re-encoded frame not consumed whole");
            again
        }
        other => panic!("re-encoded {:?} does not decode: {other:?}", frame.kind()),
    };
    assert_eq!(&again, frame, "round trip changed the frame");
    let mut stable = Vec::new();
    wire::encode(&again, &mut stable).expect("a decoded frame must encode");
    assert_eq!(stable, bytes, "encoding is not stable");
    if let Some(raw) = raw.filter(|_| !frame.kind().is_registry()) {
        assert_eq!(bytes, raw, "link-level encoding is not canonical");
    }
    if let Frame::Data(data) = frame {
        check_rpc_round_trip(data.payload);
    }
    bytes
}

/// A `Data` payload through the RPC message decoder: total, and what decodes re-encodes to
/// the same bytes.
fn check_rpc_round_trip(payload: &[u8]) {
    if let Ok(message) = wire::decode_rpc(payload) {
        let mut bytes = Vec::new();
        wire::encode_rpc(&message, &mut bytes);
        assert_eq!(bytes, payload, "RPC message encoding is not canonical");
    }
}

/// Target `etcd_event`: a script of etcd key-values fed to the etcd watcher's pure parts.
///
/// The input is split into records at `\n`. Each record is `op family key-suffix[=value]`:
/// `op % 6` picks list entry (0), list done (1), put event (2), delete event (3), compaction
/// cancel (4) or stream error (5); `family % 4` picks `by_id`, `by_name`, `topology` or a
/// family that does not exist. Every record gets the next revision. Checks that mapping and
/// the watcher never panic, that a mapped put carries the key's mod revision, that a parsed
/// key rebuilds to a key that parses equal, and that after a list the watcher's delivered
/// keys are exactly listed keys at their listed revisions.
///
/// # Panics
/// Panics (which the fuzzer reports) when one of those properties is violated.
pub fn etcd_event(data: &[u8]) {
    use switchboard_core::{
        registry::RegistryEvent,
        registry::etcd::{
            EventKind, KeyKind, KeyLayout, KeyValue, WatchAction, WatchConfig, WatchEvent,
            WatchResponse, WatchState, map_put,
        },
        time::{Duration, Instant},
    };

    const FAMILIES: [&[u8]; 4] = [b"by_id/", b"by_name/", b"topology/", b"by_ip/"];
    let layout = KeyLayout::new("/atapp/services");
    let mut watcher = WatchState::new(
        KeyKind::ById,
        layout.clone(),
        WatchConfig::default(),
        switchboard_core::rng::Rng::new(0x5eed),
    );
    let mut now = Instant::from_secs(1);
    let mut revision: i64 = 0;
    let mut list: Vec<KeyValue> = Vec::new();
    let drive = |watcher: &mut WatchState, now: Instant| -> bool {
        let mut list_pending = false;
        for _ in 0..8 {
            match watcher.poll(now) {
                WatchAction::Wait { .. } => break,
                WatchAction::List { .. } => list_pending = true,
                _ => {}
            }
        }
        list_pending
    };
    let mut list_pending = drive(&mut watcher, now);
    for record in data.split(|&b| b == b'\n') {
        let [op, family, rest @ ..] = record else {
            continue;
        };
        revision += 1;
        let (suffix, value) = match rest.iter().position(|&b| b == b'=') {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, &[][..]),
        };
        let mut key = layout.prefix().as_bytes().to_vec();
        key.extend_from_slice(FAMILIES[usize::from(*family) % FAMILIES.len()]);
        key.extend_from_slice(suffix);
        let kv = KeyValue {
            key,
            value: value.to_vec(),
            create_revision: revision,
            mod_revision: revision,
            version: 1,
            lease: 0,
        };

        match map_put(&layout, &kv) {
            Ok(RegistryEvent::DiscoveryPut(info)) => assert_eq!(info.revision, kv.revision()),
            Ok(RegistryEvent::TopologyPut(info)) => assert_eq!(info.revision, kv.revision()),
            Ok(other) => panic!("a put mapped to {other:?}"),
            Err(_) => {}
        }
        if let Ok(parsed) = layout.parse(&kv.key) {
            let rebuilt = layout.key(parsed.kind, &parsed.name, parsed.id);
            assert_eq!(layout.parse(&rebuilt).as_ref(), Ok(&parsed));
        }

        let response = |kind: EventKind| WatchResponse {
            header_revision: revision,
            watch_id: 1,
            events: vec![WatchEvent {
                kind,
                kv: kv.clone(),
                prev_kv: None,
            }],
            ..WatchResponse::default()
        };
        match op % 6 {
            0 => list.push(kv),
            1 if list_pending => {
                list.sort_by(|a, b| a.key.cmp(&b.key));
                list.dedup_by(|a, b| a.key == b.key);
                watcher.on_list(now, revision, &list);
                assert_eq!(watcher.last_seen(), kv.revision());
                for (key, delivered_at) in watcher.delivered().iter() {
                    let listed = list
                        .iter()
                        .find(|l| l.key == key)
                        .expect("a delivered key missing from the list was not deleted");
                    // A listed value that does not map leaves the older delivery in place.
                    assert!(
                        listed.revision() == delivered_at || map_put(&layout, listed).is_err(),
                        "delivered revision differs from a mappable listed one"
                    );
                }
                list.clear();
                list_pending = false;
            }
            2 => {
                watcher.on_response(now, &response(EventKind::Put));
            }
            3 => {
                watcher.on_response(now, &response(EventKind::Delete));
            }
            4 => {
                let cancel = WatchResponse {
                    canceled: true,
                    compact_revision: revision,
                    ..WatchResponse::default()
                };
                watcher.on_response(now, &cancel);
            }
            5 => {
                watcher.on_stream_error(now);
                now += Duration::from_secs(20);
            }
            _ => {}
        }
        now += Duration::from_millis(100);
        list_pending |= drive(&mut watcher, now);
        if !list_pending {
            list.clear();
        }
    }
}

/// Target `node_ops`: an arbitrary sequence of operations — tagged sends in every selection
/// mode (by id, name, hash key, round robin, random, least outstanding), waits, link breaks, partitions, kills and restarts, latency changes,
/// proxy scale-out and scale-in, leaf moves — decoded from the bytes
/// ([`Op::decode_all`](switchboard_core::sim::scenario::Op::decode_all)) and applied to a
/// small simulated cluster of real nodes, with every invariant of `core::sim` checked after
/// each operation and after healing and quiescence.
///
/// # Panics
/// Panics (which the fuzzer reports) on any invariant violation, listing them.
pub fn node_ops(data: &[u8]) {
    use switchboard_core::sim::scenario::{Op, run_ops};
    let report = run_ops(&Op::decode_all(data));
    assert!(
        report.violations.is_empty(),
        "node_ops: {} violation(s): {:#?}",
        report.violations.len(),
        report.violations
    );
}

/// Target `rpc_ops`: like [`node_ops`], with the RPC workload's operations as well — calls
/// with every selection mode, serve and unserve, broadcasts, cancels — decoded by
/// `Op::decode_with_rpc`; the call ledger's invariants are checked after each operation and
/// at the end.
///
/// # Panics
/// Panics (which the fuzzer reports) on any invariant violation, listing them.
pub fn rpc_ops(data: &[u8]) {
    use switchboard_core::sim::scenario::{Op, run_ops};
    let report = run_ops(&Op::decode_with_rpc(data));
    assert!(
        report.violations.is_empty(),
        "rpc_ops: {} violation(s): {:#?}",
        report.violations.len(),
        report.violations
    );
}

/// Target `sim_seed`: the first 8 bytes (little endian, zero-padded) are a seed; the seeded
/// chaos scenario runs with every fault kind and must end without a violation.
///
/// # Panics
/// Panics (which the fuzzer reports) on any violation, with the replay command.
pub fn sim_seed(data: &[u8]) {
    use switchboard_core::sim::scenario::{Faults, run_seed};
    let mut bytes = [0u8; 8];
    let n = data.len().min(8);
    bytes[..n].copy_from_slice(&data[..n]);
    let seed = u64::from_le_bytes(bytes);
    let report = run_seed(seed, Faults::all());
    assert!(
        report.violations.is_empty(),
        "sim_seed {seed}: {:#?}\nreplay: cargo run --profile sim -p switchboard-core --features sim \
         --example sim -- --seeds 1 --from {seed} --faults all",
        report.violations
    );
}

/// Target `handshake`: a stranger's byte stream against a node and a registry that hold a
/// cluster key, through the handshake decoder and checker.
///
/// The first byte picks the machine (bit 0: a node's accepted link, else the registry
/// server), whether an honest peer first completes the handshake (bit 1; the rest then
/// arrives on an authenticated link), and how the rest is chunked (the other bits). Without
/// the honest prefix, nothing in the rest can bring the link up or register a node (that
/// would take forging HMAC-SHA256); with it, anything that follows must be handled without a
/// panic. Every `Hello`/`HelloAck`/`Auth` that decodes from the rest is also checked directly
/// against the key, and must fail.
///
/// # Panics
/// Panics (which the fuzzer reports) when a stranger gets through or anything panics.
pub fn handshake(data: &[u8]) {
    use switchboard_core::{
        auth::{
            ClusterKey, ClusterKeys, Context, NonceEntropy, ROLE_ACCEPTOR, ROLE_DIALLER, Side,
            Transcript,
        },
        bus::handshake::PROTOCOL_VERSIONS,
        config::Config,
        ids::NodeId,
        node::{Event, Node, Output},
        registry::server::{RegistryServer, ServerConfig, ServerEvent, ServerOutput},
        time::Instant,
    };

    let Some((&mode, stream)) = data.split_first() else {
        return;
    };
    let key = ClusterKey::new([0x5B; 32]);
    let keys = ClusterKeys::new(core::slice::from_ref(&key));
    let honest = mode & 2 != 0;
    let max_chunk = [1, 7, 64, 4096][usize::from((mode >> 2) & 3)];
    let now = Instant::from_millis(1);
    let peer = NodeId(0x101);
    let nonce = [0x77; 32];

    // Direct checks of whatever handshake frames the stream holds.
    let side = |node, incarnation, versions, nonce| Side {
        node,
        incarnation,
        versions,
        nonce,
    };
    let mut rest = stream;
    while let Ok(Decoded::Frame(frame, used)) = wire::decode(rest, FUZZ_MAX_FRAME) {
        rest = &rest[used..];
        let (transcript, proof) = match frame {
            Frame::HelloAck(ack) => (
                Transcript {
                    context: Context::Bus,
                    role: ROLE_ACCEPTOR,
                    hint: key.id(),
                    result: ack.result,
                    dialler: side(peer, 1, PROTOCOL_VERSIONS, nonce),
                    acceptor: side(
                        ack.node,
                        ack.incarnation,
                        ack.versions,
                        ack.nonce.unwrap_or_default(),
                    ),
                },
                ack.proof,
            ),
            Frame::Auth(auth) => (
                Transcript {
                    context: Context::Bus,
                    role: ROLE_DIALLER,
                    hint: key.id(),
                    result: Ok(()),
                    dialler: side(peer, 1, PROTOCOL_VERSIONS, nonce),
                    acceptor: side(NodeId(0x102), 2, PROTOCOL_VERSIONS, [0; 32]),
                },
                Some(auth.proof),
            ),
            Frame::Hello(hello) => (
                Transcript {
                    context: Context::Bus,
                    role: ROLE_DIALLER,
                    hint: hello.challenge.map_or(0, |c| c.key_id),
                    result: Ok(()),
                    dialler: side(
                        hello.node,
                        hello.incarnation,
                        hello.versions,
                        hello.challenge.map_or([0; 32], |c| c.nonce),
                    ),
                    acceptor: side(NodeId(0x102), 2, PROTOCOL_VERSIONS, nonce),
                },
                None,
            ),
            _ => continue,
        };
        for context in [Context::Bus, Context::Registry] {
            let transcript = Transcript {
                context,
                ..transcript
            };
            assert!(
                keys.check(&transcript, proof.as_ref()).is_err(),
                "a forged proof checked"
            );
        }
    }

    let chunks: Vec<&[u8]> = {
        let mut rng = Rng::new(u64::from(mode));
        let mut bytes = stream;
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let n = (1 + rng.below(max_chunk as u64) as usize).min(bytes.len());
            out.push(&bytes[..n]);
            bytes = &bytes[n..];
        }
        out
    };
    let encode = |frame: &Frame<'_>| {
        let mut out = Vec::new();
        wire::encode(frame, &mut out).expect("handshake frames encode");
        out
    };
    let hello = |node| {
        encode(&Frame::Hello(wire::Hello {
            node,
            incarnation: 1,
            versions: PROTOCOL_VERSIONS,
            name: "peer",
            challenge: Some(wire::Challenge {
                nonce,
                key_id: key.id(),
            }),
        }))
    };
    let ack_in = |bytes: &[u8]| match wire::decode(bytes, FUZZ_MAX_FRAME) {
        Ok(Decoded::Frame(Frame::HelloAck(ack), _)) => {
            Some(side(ack.node, ack.incarnation, ack.versions, ack.nonce?))
        }
        _ => None,
    };
    let auth_for = |context, acceptor| {
        let transcript = Transcript {
            context,
            role: ROLE_DIALLER,
            hint: key.id(),
            result: Ok(()),
            dialler: side(peer, 1, PROTOCOL_VERSIONS, nonce),
            acceptor,
        };
        let proof = keys.prove(&transcript).expect("a key");
        encode(&Frame::Auth(wire::Auth { proof }))
    };

    if mode & 1 != 0 {
        let mut config = Config::new(NodeId(0x102), "node");
        config.cluster_keys = vec![key.clone()];
        config.nonce_entropy = NonceEntropy::deterministic_for_tests();
        let mut node = Node::new(config, now).expect("a valid config");
        let link = node.handle_accepted(now);
        let mut up = false;
        let drain = |node: &mut Node, up: &mut bool| {
            let mut acceptor = None;
            while let Some(out) = node.poll_output() {
                match out {
                    Output::Event(Event::LinkUp { .. }) => *up = true,
                    Output::Transmit { bytes, .. } => acceptor = acceptor.or(ack_in(&bytes)),
                    _ => {}
                }
            }
            acceptor
        };
        if honest {
            node.handle_received(now, link, hello(peer).into());
            let acceptor = drain(&mut node, &mut up).expect("the node answers an honest hello");
            node.handle_received(now, link, auth_for(Context::Bus, acceptor).into());
            drain(&mut node, &mut up);
            assert!(up, "an honest peer links");
        }
        for chunk in &chunks {
            node.handle_received(now, link, chunk.to_vec().into());
        }
        drain(&mut node, &mut up);
        assert!(honest || !up, "a stranger's bytes brought a link up");
    } else {
        let config = ServerConfig {
            keys: keys.clone(),
            ..ServerConfig::default()
        };
        let mut server = RegistryServer::new(config, 3);
        let conn = server.handle_accepted(now);
        let mut registered = false;
        let drain = |server: &mut RegistryServer, registered: &mut bool| {
            let mut acceptor = None;
            while let Some(out) = server.poll_output() {
                match out {
                    ServerOutput::Event(ServerEvent::Registered { .. }) => *registered = true,
                    ServerOutput::Transmit { bytes, .. } => acceptor = acceptor.or(ack_in(&bytes)),
                    _ => {}
                }
            }
            acceptor
        };
        if honest {
            server.handle_received(now, conn, &hello(peer));
            let acceptor = drain(&mut server, &mut registered).expect("the registry answers");
            server.handle_received(now, conn, &auth_for(Context::Registry, acceptor));
            drain(&mut server, &mut registered);
        }
        for chunk in &chunks {
            server.handle_received(now, conn, chunk);
        }
        drain(&mut server, &mut registered);
        assert!(honest || !registered, "a stranger registered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncated_documents_are_refused_without_change() {
        discovery_json(b"");
        discovery_json(b"{\"id\":");
        discovery_json(b"\xff\xfe{}");
        discovery_json(b"[1,2,3]");
        discovery_json(br#"{"id":{"nested":true}}"#);
        discovery_json(br#"{"id":18446744073709551616}"#);
    }

    #[test]
    fn wire_targets_accept_empty_and_garbage_input() {
        for data in [
            &b""[..],
            b"\x00",
            b"\x07\xff\xff\xff\xff",
            b"\x02\x10\x00\x00\x00\x01\x06\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00",
            b"\x00\x09\x00\x00\x00\x02\x08",
        ] {
            frame_decode(data);
            registry_decode(data);
        }
    }
}
