//! A proxy's hot path: `Data` frames for another node arrive on one link and go out on
//! another.
//!
//! - `relay/relay_to_transmit`: a proxy (0x102) linked to two children (0x101 and 0x103,
//!   each driven through the handshake in setup) receives, in one read, N = 256 `Data`
//!   frames from 0x101 for 0x103 (64-byte payloads), relays each on its link to 0x103, and
//!   the harness appends every `Transmit` to a socket buffer as a driver does. Per message;
//!   the relayed bytes are checked once in setup (same frames, hop count + 1).
//!
//! Run: `cargo bench -p switchboard-benches --bench relay`.

use std::{hint::black_box, time::Duration as StdDuration};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_benches::linked::{drain, linked_child};
use switchboard_core::{
    config::Config,
    ids::{LinkId, NodeId},
    node::{Node, Output},
    time::Instant,
    wire::{self, Frame},
};

const PAYLOAD: &[u8; 64] = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const N: usize = 256;
const PROXY: NodeId = NodeId(0x102);
const SOURCE: NodeId = NodeId(0x101);
const TARGET: NodeId = NodeId(0x103);

/// The bytes of every `Transmit` on `link` in `outputs`, concatenated.
fn transmitted_on(outputs: &[Output], link: LinkId) -> Vec<u8> {
    let mut bytes = Vec::new();
    for output in outputs {
        if let Output::Transmit {
            link: on,
            bytes: frame,
        } = output
            && *on == link
        {
            bytes.extend_from_slice(frame);
        }
    }
    bytes
}

/// N `Data` frames from the source to the target, with `hop_count` hops so far.
fn frames(hop_count: u8) -> Vec<u8> {
    let mut bytes = Vec::new();
    for seq in 1..=N as u64 {
        let data = wire::Data {
            src: SOURCE,
            dst: TARGET,
            seq,
            dst_incarnation: 0,
            retransmit: false,
            msg_type: 7,
            hop_count,
            payload: PAYLOAD,
        };
        wire::encode(&Frame::Data(data), &mut bytes).expect("small frame");
    }
    bytes
}

fn relay_to_transmit(c: &mut Criterion) {
    let now = Instant::from_secs(1);
    let mut proxy = Node::new(Config::new(PROXY, "parent"), Instant::ZERO).expect("valid config");
    let (_source, _, from_source) = linked_child(&mut proxy, SOURCE, "source");
    let (_target, _, to_target) = linked_child(&mut proxy, TARGET, "target");
    drain(&mut proxy);
    let inbound = Bytes::from(frames(0));
    // Checked once: the target's link carries exactly the same frames, one hop further.
    proxy.handle_received(now, from_source, inbound.clone());
    assert_eq!(
        transmitted_on(&drain(&mut proxy), to_target),
        frames(1),
        "every frame relayed once, in order"
    );

    let mut group = c.benchmark_group("relay");
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3))
        .throughput(Throughput::Elements(N as u64));
    // What a driver does with the output: append the frames to the link's socket buffer.
    let mut socket = Vec::with_capacity(N * 128);
    group.bench_function("relay_to_transmit", |b| {
        b.iter(|| {
            socket.clear();
            proxy.handle_received(now, from_source, inbound.clone());
            while let Some(out) = proxy.poll_output() {
                if let Output::Transmit { bytes, .. } = out {
                    socket.extend_from_slice(&bytes);
                }
            }
            black_box(socket.len())
        });
    });
    group.finish();
}

criterion_group!(benches, relay_to_transmit);
criterion_main!(benches);
