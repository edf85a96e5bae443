//! The node's deadline mechanism at scale: `poll_timeout` and a `handle_timeout` with nothing
//! due, on a node holding 10,000 up links (one per peer) and 10,000 endpoints (one message in
//! flight to each peer), and on an idle node as the floor.
//!
//! Every deadline of the node (route records, outboxes, links' heartbeats) sits in a keyed
//! timer queue, so both calls should cost the same at 10,000 as at 1 — the ratio to the idle
//! node is the figure to read. Target: `poll_timeout` ≤ 20 ns at 10,000 endpoints.
//!
//! Run: `cargo bench -p switchboard-benches --bench deadlines`.

use std::{hint::black_box, time::Duration as StdDuration};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_core::{
    bus::handshake::PROTOCOL_VERSIONS,
    config::Config,
    ids::NodeId,
    node::{Node, Output},
    select::Select,
    time::Instant,
    wire::{self, Frame, Hello},
};

const PEERS: u64 = 10_000;

/// A node with `peers` accepted, handshaken links (peer ids 0x1000..) and one message in
/// flight to each peer.
fn busy_node(peers: u64) -> Node {
    let t0 = Instant::ZERO;
    let mut node = Node::new(Config::new(NodeId(0x1), "hub"), t0).expect("valid config");
    let mut hello = Vec::new();
    for i in 0..peers {
        let peer = NodeId(0x1000 + i);
        let link = node.handle_accepted(t0);
        hello.clear();
        wire::encode(
            &Frame::Hello(Hello {
                node: peer,
                incarnation: 1 + i,
                versions: PROTOCOL_VERSIONS,
                name: "peer",
                challenge: None,
            }),
            &mut hello,
        )
        .expect("a hello fits");
        node.handle_received(t0, link, Bytes::copy_from_slice(&hello));
        assert_eq!(node.inspect().link_peer(link), Some(peer));
        node.send(t0, Select::Node(peer), 1, Bytes::from_static(b"ping"))
            .expect("a linked peer is routable");
    }
    let transmits = std::iter::from_fn(|| node.poll_output())
        .filter(|o| matches!(o, Output::Transmit { .. }))
        .count();
    // A HelloAck and the message per peer.
    assert_eq!(transmits as u64, 2 * peers);
    for i in 0..peers {
        assert_eq!(node.inspect().unacked(NodeId(0x1000 + i)), 1);
    }
    node
}

fn deadlines(c: &mut Criterion) {
    let mut group = c.benchmark_group("deadlines");
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3));

    let idle = busy_node(0);
    let busy = busy_node(PEERS);
    let next = busy
        .poll_timeout()
        .expect("heartbeats and message deadlines are armed");
    // Heartbeats and retransmissions (`heartbeat_interval`, 1.5 s) come before message
    // deadlines (8 s).
    assert_eq!(next, Instant::from_millis(1_500));

    group.bench_function("poll_timeout_idle_node_baseline", |b| {
        b.iter(|| black_box(&idle).poll_timeout());
    });
    group.bench_function("poll_timeout_10k_links_10k_endpoints", |b| {
        b.iter(|| black_box(&busy).poll_timeout());
    });

    let mut idle = idle;
    let mut busy = busy;
    let now = Instant::from_secs(1);
    group.bench_function("handle_timeout_nothing_due_idle_node_baseline", |b| {
        b.iter(|| idle.handle_timeout(black_box(now)));
    });
    group.bench_function("handle_timeout_nothing_due_10k_links_10k_endpoints", |b| {
        b.iter(|| {
            busy.handle_timeout(black_box(now));
            assert!(busy.poll_output().is_none());
        });
    });
    group.finish();
}

criterion_group!(benches, deadlines);
criterion_main!(benches);
