//! Simulator throughput (issue 4 target: ≥ 1 M events/s, so 200 seeds run in CI in well
//! under a minute).
//!
//! `sim/seed_<kind>`: one whole seeded chaos scenario of `core::sim::scenario` (cluster
//! setup, 20 s of traffic and faults, heal, quiescence, probes, invariant checks after every
//! operation), with the trace off as the seeds runner runs it. Throughput is in simulator
//! events (deliveries and timer firings) — the scenario is deterministic, so every iteration
//! processes the same count, measured once in setup.
//!
//! Run: `cargo bench -p switchboard-benches --bench sim`.

use std::{hint::black_box, time::Duration as StdDuration};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_core::sim::scenario::{Faults, run_seed};

fn seeds(c: &mut Criterion) {
    let mut group = c.benchmark_group("sim");
    group
        .sample_size(20)
        .measurement_time(StdDuration::from_secs(5));
    for (kind, faults) in [("mild", Faults::mild()), ("all_faults", Faults::all())] {
        let seed = 7;
        let events = run_seed(seed, faults).events;
        group.throughput(Throughput::Elements(events));
        group.bench_function(format!("seed_{kind}"), |b| {
            b.iter(|| black_box(run_seed(black_box(seed), faults)));
        });
    }
    group.finish();
}

criterion_group!(benches, seeds);
criterion_main!(benches);
