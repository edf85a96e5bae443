//! CPU cost of the cluster-key handshake per side (target: ≤ 10 µs).
//!
//! Each side of a link computes one proof and checks one: the acceptor proves in its
//! `HelloAck` and checks the dialler's `Auth`, the dialler checks the `HelloAck` and proves in
//! its `Auth`. Members:
//!
//! - `per_side`: one `prove` + one `check` (HMAC-SHA256 over the 121-byte transcript and the key id, twice),
//!   plus a fresh nonce — what one side spends;
//! - `check_two_keys`: a check against a node holding two keys whose ids both match (the worst
//!   case of the rotation window: two MACs);
//! - `links_accept_side`: the acceptor's whole handshake through the link machine — `Hello`
//!   decoded and answered with nonce and proof, `Auth` decoded and checked, link up.
//!
//! Run: `cargo bench -p switchboard-benches --bench handshake`.

use std::hint::black_box;

use bytes::Bytes;
use criterion::Criterion;
use switchboard_core::{
    auth::{
        ClusterKey, ClusterKeys, Context, NonceEntropy, NonceSource, ROLE_ACCEPTOR, ROLE_DIALLER,
        Side, Transcript,
    },
    bus::{
        handshake::PROTOCOL_VERSIONS,
        links::{LinkEvent, LinkSettings, LinkSink, Links},
    },
    ids::{LinkId, NodeId},
    rng::Rng,
    time::{Duration, Instant},
    wire::{self, Decoded, Frame},
};

fn transcript(role: u8, dialler: [u8; 32], acceptor: [u8; 32]) -> Transcript {
    let side = |node, nonce| Side {
        node: NodeId(node),
        incarnation: 7,
        versions: PROTOCOL_VERSIONS,
        nonce,
    };
    Transcript {
        context: Context::Bus,
        role,
        hint: 0,
        result: Ok(()),
        dialler: side(1, dialler),
        acceptor: side(2, acceptor),
    }
}

#[derive(Default)]
struct Sink {
    sent: Vec<Bytes>,
    up: bool,
}

impl LinkSink for Sink {
    fn connect(&mut self, _: LinkId, _: NodeId, _: String) {}
    fn transmit(&mut self, _: LinkId, bytes: Bytes) {
        self.sent.push(bytes);
    }
    fn close(&mut self, _: LinkId) {}
    fn received(&mut self, _: NodeId, _: NodeId, _: u32, _: Bytes) {}
    fn event(&mut self, _: LinkEvent) {}
}

fn settings(keys: &ClusterKeys) -> LinkSettings {
    LinkSettings {
        own: NodeId(2),
        name: "acceptor".into(),
        incarnation: 7,
        keys: keys.clone(),
        heartbeat_interval: Duration::from_secs(1),
        heartbeat_dead_after: 3,
        handshake_timeout: Duration::from_secs(10),
        max_pending_handshakes: 1 << 20,
        max_frame: wire::DEFAULT_MAX_FRAME,
        nonce_entropy: NonceEntropy::default(),
    }
}

fn encode(frame: &Frame<'_>) -> Bytes {
    let mut out = Vec::new();
    wire::encode(frame, &mut out).expect("encodes");
    Bytes::from(out)
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let key = ClusterKey::new([0x42; 32]);
    let keys = ClusterKeys::new(std::slice::from_ref(&key));
    let mut group = c.benchmark_group("handshake");

    let mut nonces = NonceSource::new(&NonceEntropy::default(), &mut Rng::new(1));
    let peer_nonce = [0x11; 32];
    let peer_proof = keys
        .prove(&transcript(ROLE_DIALLER, peer_nonce, [0x22; 32]))
        .expect("a key");
    group.bench_function("per_side", |b| {
        b.iter(|| {
            let own = nonces.next_nonce();
            let proof = keys.prove(&transcript(ROLE_ACCEPTOR, peer_nonce, own));
            let checked = keys.check(
                &transcript(ROLE_DIALLER, peer_nonce, [0x22; 32]),
                Some(&peer_proof),
            );
            black_box((proof, checked))
        });
    });

    // Two keys sharing an id is 1 in 256; force the worst case by holding the same key
    // twice (both ids match, the first fails on a foreign proof, the second is tried).
    let two = ClusterKeys::new(&[key.clone(), key.clone()]);
    let mut foreign = peer_proof;
    foreign.mac[0] ^= 1;
    group.bench_function("check_two_keys", |b| {
        b.iter(|| {
            black_box(two.check(
                &transcript(ROLE_DIALLER, peer_nonce, [0x22; 32]),
                Some(black_box(&foreign)),
            ))
        });
    });

    let mut links = Links::new(settings(&keys), Instant::ZERO, Rng::new(3));
    let mut counter = 0u64;
    group.bench_function("links_accept_side", |b| {
        b.iter(|| {
            counter += 1;
            let mut nonce = [0u8; 32];
            nonce[..8].copy_from_slice(&counter.to_le_bytes());
            let mut sink = Sink::default();
            let link = links.accept(Instant::ZERO, &mut sink);
            let hello = encode(&Frame::Hello(wire::Hello {
                node: NodeId(1),
                incarnation: 7,
                versions: PROTOCOL_VERSIONS,
                name: "dialler",
                challenge: Some(wire::Challenge {
                    nonce,
                    key_id: key.id(),
                }),
            }));
            links.receive(link, hello, &mut sink);
            while links
                .next_inbound(
                    Instant::ZERO,
                    link,
                    &mut sink,
                    &switchboard_core::bus::links::AnyRelay,
                )
                .is_some()
            {}
            let Ok(Decoded::Frame(Frame::HelloAck(ack), _)) =
                wire::decode(&sink.sent[0], wire::DEFAULT_MAX_FRAME)
            else {
                panic!("a HelloAck");
            };
            let t = Transcript {
                context: Context::Bus,
                role: ROLE_DIALLER,
                hint: key.id(),
                result: Ok(()),
                dialler: Side {
                    node: NodeId(1),
                    incarnation: 7,
                    versions: PROTOCOL_VERSIONS,
                    nonce,
                },
                acceptor: Side {
                    node: ack.node,
                    incarnation: ack.incarnation,
                    versions: ack.versions,
                    nonce: ack.nonce.expect("a nonce"),
                },
            };
            // The dialler's proof is computed outside the measured side in spirit, but it is
            // one HMAC: subtract `per_side / 2` to compare.
            let proof = keys.prove(&t).expect("a key");
            links.receive(link, encode(&Frame::Auth(wire::Auth { proof })), &mut sink);
            while let Some(inbound) = links.next_inbound(
                Instant::ZERO,
                link,
                &mut sink,
                &switchboard_core::bus::links::AnyRelay,
            ) {
                sink.up |= matches!(inbound, switchboard_core::bus::links::Inbound::Up { .. });
            }
            assert!(sink.up);
            links.close_all(&mut sink);
        });
    });
    group.finish();
    c.final_summary();
}
