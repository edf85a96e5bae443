//! The RPC layer's hot path: one call through two cores.
//!
//! - `rpc/call_cycle`: the child of a ready pair calls `echo` on its parent — the request
//!   rides the link, the parent hands it to its handler, the handler answers with the
//!   request's bytes, the reply rides back and ends the call with `CallDone`, and both acks
//!   go back — one call per iteration, every step on the same instant.
//!
//! Run: `cargo bench -p switchboard-benches --bench rpc`. Instructions per call:
//! `valgrind --tool=callgrind target/release/examples/cycles call N` (see that example).

use std::{hint::black_box, time::Duration as StdDuration};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_benches::linked::{call_cycle, rpc_pair};
use switchboard_core::{CallOutcome, time::Instant};

const PAYLOAD: &[u8; 64] = b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn call(c: &mut Criterion) {
    let mut pair = rpc_pair();
    let payload = Bytes::from_static(PAYLOAD);
    let now = Instant::from_secs(1);
    assert_eq!(
        call_cycle(&mut pair, now, &payload),
        CallOutcome::Reply(payload.clone())
    );
    let mut group = c.benchmark_group("rpc");
    group
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3))
        .throughput(Throughput::Elements(1));
    group.bench_function("call_cycle", |b| {
        b.iter(|| black_box(call_cycle(&mut pair, now, &payload)));
    });
    group.finish();
}

criterion_group!(benches, call);
criterion_main!(benches);
