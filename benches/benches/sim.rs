//! Simulator throughput (target: ≥ 1.5 M events/s with all faults, so 200 seeds run in CI in
//! well under a minute).
//!
//! `sim/seed_<kind>`: one whole seeded chaos scenario of `core::sim::scenario` (cluster
//! setup, 20 s of traffic and faults, heal, quiescence, probes, invariant checks after every
//! operation), with the trace off as the seeds runner runs it, on the real registry machines;
//! `sim/seed_mild_scripted` is the mild run on the scripted registry, the comparison for what
//! the registry machines cost. Throughput is in simulator
//! events (deliveries and timer firings) — the scenario is deterministic, so every iteration
//! processes the same count, measured once in setup.
//!
//! Run: `cargo bench -p switchboard-benches --bench sim`.

use std::{hint::black_box, time::Duration as StdDuration};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use switchboard_core::sim::scenario::{Faults, RegistryMode, run_seed, run_seed_with};

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
    let seed = 7;
    let scripted = |seed| run_seed_with(seed, Faults::mild(), RegistryMode::Scripted, false);
    let events = scripted(seed).report(seed).events;
    group.throughput(Throughput::Elements(events));
    group.bench_function("seed_mild_scripted", |b| {
        b.iter(|| black_box(scripted(black_box(seed)).report(seed)));
    });
    group.finish();
}

criterion_group!(benches, seeds);
criterion_main!(benches);
