//! The node's hot paths: sending on a ready route, the full send → deliver → ack cycle, and
//! the endpoint queue.
//!
//! - `node/send_to_transmit_ready_route`: the sender's share — `Node::send` to a target whose
//!   direct route is ready (two nodes driven through the handshake in setup, bytes shuttled
//!   by hand), draining the `Data` frames, and handling the batch's ack (target ≤ 62 ns per
//!   message).
//! - `node/send_deliver_ack_ready_route`: the whole cycle on one core — send, the receiver
//!   decoding and delivering each message, its one coalesced ack per batch, the sender's
//!   `Delivered` outcomes; the harness appends frames to a buffer as a driver does (target
//!   ≥ 4 M messages/s).
//! - `endpoint/push_flush`: push N = 256 messages into an `Endpoint`'s pending queue, then
//!   one flush handing all of them to a route (per-message cost; target ≤ 50 ns); the same
//!   through the `EndpointTable` the node uses (deadline index kept exact); and a bare
//!   `VecDeque` push + pop of the same messages as the floor.
//!
//! Also printed once: `size_of` a route record and of an `Endpoint` (goal ≤ 256 bytes each).
//!
//! Run: `cargo bench -p switchboard-benches --bench node`.

use std::{collections::VecDeque, hint::black_box, time::Duration as StdDuration};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_benches::linked::{drain, message_round_trip, ready_pair, send_batch, transmitted};
use switchboard_core::{
    connector::ROUTE_RECORD_SIZE,
    endpoint::{
        Endpoint, EndpointSettings, EndpointTable, PendingMessage, QueueLimits, TransmitResult,
    },
    ids::{MsgId, NodeId},
    outcome::{Outcome, OutcomeSink},
    time::{Duration, Instant},
};

const PAYLOAD: &[u8; 64] = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const N: usize = 256;

fn send_to_transmit(c: &mut Criterion) {
    let mut pair = ready_pair();
    let payload = Bytes::from_static(PAYLOAD);
    let now = Instant::from_secs(1);
    // One batch first: the endpoint, its record and the stream exist from then on, as in
    // steady state, and every message of it is acknowledged.
    assert_eq!(message_round_trip(&mut pair, now, &payload, N), N);

    let mut group = c.benchmark_group("node");
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3))
        .throughput(Throughput::Elements(N as u64));
    // Per message: send → Data frame on the link → receiver decodes and delivers → one
    // coalesced Ack per batch → sender reports Delivered.
    group.bench_function("send_deliver_ack_ready_route", |b| {
        b.iter(|| black_box(message_round_trip(&mut pair, now, &payload, N)));
    });
    // The sender's share only (the "send → Transmit"): sends, draining the Data
    // frames, and handling the batch's ack; the receiver's work runs untimed.
    group.bench_function("send_to_transmit_ready_route", |b| {
        b.iter_custom(|iters| {
            let (a, link_a, rx, link_b) = &mut pair;
            let mut timed = StdDuration::ZERO;
            // What a driver does with the output: append the frames to its socket buffer.
            let mut data = Vec::with_capacity(N * 128);
            for _ in 0..iters {
                data.clear();
                let start = std::time::Instant::now();
                send_batch(a, now, &payload, N, &mut data);
                timed += start.elapsed();
                rx.handle_received(now, *link_b, Bytes::copy_from_slice(&data));
                let ack = transmitted(&drain(rx));
                let start = std::time::Instant::now();
                a.handle_received(now, *link_a, Bytes::copy_from_slice(&ack));
                black_box(drain(a));
                timed += start.elapsed();
            }
            timed
        });
    });
    group.finish();
}

/// Counts outcomes; what a driver does with them is not the queue's cost.
#[derive(Default)]
struct Count(usize);

impl OutcomeSink for Count {
    fn emit(&mut self, msg: MsgId, outcome: Outcome) {
        black_box((msg, outcome));
        self.0 += 1;
    }
}

fn push_flush(c: &mut Criterion) {
    let payload = Bytes::from_static(PAYLOAD);
    let now = Instant::from_secs(1);
    let timeout = Duration::from_secs(8);
    let limits = QueueLimits {
        max_messages: 4096,
        max_bytes: 8 << 20,
    };
    let mut group = c.benchmark_group("endpoint");
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3))
        .throughput(Throughput::Elements(N as u64));

    let mut endpoint = Endpoint::new(NodeId(0x102), "parent".into(), limits, now, timeout);
    endpoint.attach_handle();
    let mut next = 0u64;
    group.bench_function("push_flush", |b| {
        b.iter(|| {
            for _ in 0..N {
                next += 1;
                endpoint
                    .push(MsgId(next), 7, payload.clone(), now, timeout)
                    .expect("room");
            }
            let mut sink = Count::default();
            let progress = endpoint.flush(
                now,
                usize::MAX,
                |m| {
                    black_box(m);
                    TransmitResult::Sent
                },
                &mut sink,
            );
            assert_eq!(sink.0, N);
            progress
        });
    });

    let mut table = EndpointTable::new(EndpointSettings {
        limits,
        message_timeout: timeout,
        gc_timeout: Duration::from_secs(60),
    });
    let key = table
        .get_or_create(NodeId(0x102), "parent", now)
        .expect("valid target");
    table.attach_handle(key);
    group.bench_function("push_flush_table", |b| {
        b.iter(|| {
            for _ in 0..N {
                next += 1;
                table
                    .push(key, MsgId(next), 7, payload.clone(), now)
                    .expect("room");
            }
            let mut sink = Count::default();
            let progress = table.flush(
                key,
                now,
                usize::MAX,
                |m| {
                    black_box(m);
                    TransmitResult::Sent
                },
                &mut sink,
            );
            assert_eq!(sink.0, N);
            progress
        });
    });

    let mut baseline: VecDeque<PendingMessage> = VecDeque::new();
    group.bench_function("vecdeque_push_pop_baseline", |b| {
        b.iter(|| {
            for _ in 0..N {
                next += 1;
                baseline.push_back(PendingMessage {
                    id: MsgId(next),
                    msg_type: 7,
                    payload: payload.clone(),
                    deadline: now + timeout,
                });
            }
            let mut sink = Count::default();
            while let Some(m) = baseline.pop_front() {
                black_box(&m);
                sink.emit(m.id, Outcome::Delivered);
            }
            sink.0
        });
    });
    group.finish();
}

fn sizes(_: &mut Criterion) {
    eprintln!(
        "size_of route record = {ROUTE_RECORD_SIZE} B, size_of::<Endpoint>() = {} B, \
         size_of::<PendingMessage>() = {} B (goal <= 256 per record and per endpoint)",
        std::mem::size_of::<Endpoint>(),
        std::mem::size_of::<PendingMessage>(),
    );
}

criterion_group!(benches, sizes, send_to_transmit, push_flush);
criterion_main!(benches);
