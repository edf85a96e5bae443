//! `ring-report`: the headline ring numbers in one short run, as one JSON object.
//!
//! Run `cargo run --release -p switchboard-benches --bin ring-report`. Progress goes to stderr;
//! the last stdout line is a JSON object with, for N = 100, 1000, 10 000 (`"nN"`), the median
//! nanoseconds of: our full build (fast and libatapp-compatible modes), the libatapp emulation's
//! build, adding and removing one node, one per-filter ring update (a node joining or leaving
//! the filter), and a lookup including the key hash (ours and the emulation's); then the ring
//! balance at N = 100 (exact arc length, peak/mean, mean of 10 node sets), the fraction of keys
//! moved by removing one of 1000 nodes, the bytes per ring point at N = 10 000, and timer
//! arm/cancel costs with 64k live timers.
//!
//! Timing is self-made rather than criterion so the whole report takes well under a minute:
//! repeated samples within a time budget per metric, `black_box` around inputs and results, and
//! the median over samples. A sample is one operation for builds and changes (each timed alone;
//! restoring the state is not timed) and a batch of 1000 lookups for lookups.

use std::{
    collections::HashMap,
    hint::black_box,
    rc::Rc,
    time::{Duration, Instant},
};

use switchboard_benches::{
    libatapp_emu::EmuNode,
    timers::{BATCH as TIMER_BATCH, TimerLoad},
    workload::{Workload, emu_set, keys, members, ring, zone_filter, zone_metadata},
};
use switchboard_core::{
    hash::HashMode,
    ids::NodeId,
    ring::{Ring, RingConfig, RingSet},
};

/// Time budget per metric; the sample count adapts to the operation's cost.
const BUDGET: Duration = Duration::from_millis(400);
const MIN_SAMPLES: usize = 7;
const MAX_SAMPLES: usize = 2001;
const LOOKUP_BATCH: usize = 1000;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

/// Median ns of `op`, sampled until the budget is spent (at least `MIN_SAMPLES` times).
/// `before` and `after` run untimed around each sample; all three get the sample index.
fn sample<S>(
    state: &mut S,
    mut before: impl FnMut(&mut S, usize),
    mut op: impl FnMut(&mut S, usize),
    mut after: impl FnMut(&mut S, usize),
) -> f64 {
    let started = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < MAX_SAMPLES && (samples.len() < MIN_SAMPLES || started.elapsed() < BUDGET)
    {
        let i = samples.len();
        before(state, i);
        let t = Instant::now();
        op(state, i);
        samples.push(t.elapsed().as_nanos() as f64);
        after(state, i);
    }
    median(samples)
}

fn nothing<S>(_: &mut S, _: usize) {}

/// Median ns per lookup over batches of `LOOKUP_BATCH` keys.
fn per_lookup_ns(keys: &[u64], mut lookup: impl FnMut(u64) -> bool) -> f64 {
    let batches = keys.len() / LOOKUP_BATCH;
    let ns = sample(
        &mut (),
        nothing,
        |(), i| {
            let start = (i % batches) * LOOKUP_BATCH;
            for &k in &keys[start..start + LOOKUP_BATCH] {
                black_box(lookup(black_box(k)));
            }
        },
        nothing,
    );
    ns / LOOKUP_BATCH as f64
}

/// Eight nodes spread over the node list; changes cycle through them.
fn victim(n: usize, i: usize) -> usize {
    ((i % 8) * n / 8 + 1).min(n - 1)
}

/// The per-N medians of the report.
struct SizeReport {
    build_ns: f64,
    compat_build_ns: f64,
    libatapp_build_ns: f64,
    add_one_ns: f64,
    remove_one_ns: f64,
    filter_update_ns: f64,
    lookup_ns: f64,
    libatapp_lookup_ns: f64,
    // Extras, reported at the top level.
    compat_lookup_ns: f64,
    libatapp_add_one_ns: f64,
    libatapp_filter_update_ns: f64,
}

fn measure_size(n: usize, keys: &[u64]) -> SizeReport {
    let w = Workload::new(n, 1);
    let mut fast = ring(&w, HashMode::Fast);
    let mut compat = ring(&w, HashMode::LibatappMain);
    let mut emu = emu_set(&w);

    let build_ns = sample(
        &mut fast,
        nothing,
        |r, _| r.build(members(&w)).expect("workload ids are non-zero"),
        nothing,
    );
    let compat_build_ns = sample(
        &mut compat,
        nothing,
        |r, _| r.build(members(&w)).expect("workload ids are non-zero"),
        nothing,
    );
    let libatapp_build_ns = sample(&mut emu, nothing, |s, _| s.rebuild(None), nothing);
    eprintln!(
        "  N={n}: build ours {build_ns:.0} ns, compat {compat_build_ns:.0} ns, libatapp {libatapp_build_ns:.0} ns"
    );

    let add_one_ns = sample(
        &mut fast,
        |r, i| {
            r.remove(w.ids[victim(n, i)]);
        },
        |r, i| {
            r.insert(w.member(victim(n, i)))
                .expect("workload ids are non-zero")
        },
        nothing,
    );
    let remove_one_ns = sample(
        &mut fast,
        nothing,
        |r, i| {
            black_box(r.remove(w.ids[victim(n, i)]));
        },
        |r, i| {
            r.insert(w.member(victim(n, i)))
                .expect("workload ids are non-zero")
        },
    );
    let probe = 0x5eed_u64;
    let emu_nodes: Vec<Rc<EmuNode>> = (0..n)
        .map(|i| EmuNode::new(w.ids[i], w.names[i].clone(), w.metadata[i].clone()))
        .collect();
    let libatapp_add_one_ns = sample(
        &mut emu,
        |s, i| {
            s.remove_node(w.ids[victim(n, i)]);
        },
        |s, i| {
            s.add_node(Rc::clone(&emu_nodes[victim(n, i)]));
            black_box(s.lookup_u64(probe, None));
        },
        nothing,
    );
    eprintln!(
        "  N={n}: add one {add_one_ns:.0} ns, remove one {remove_one_ns:.0} ns, libatapp add+lookup {libatapp_add_one_ns:.0} ns"
    );

    // Per-filter update: an odd (zone b) node joins zone a, then leaves; each change is a sample.
    let filter = zone_filter("a");
    let zone_a = zone_metadata("a");
    let zone_b = zone_metadata("b");
    let mut set = RingSet::new(RingConfig::default());
    set.add_filter(filter.clone());
    for i in 0..n {
        set.insert(w.member(i), &w.metadata[i])
            .expect("workload ids are non-zero");
    }
    let odd = |i: usize| (victim(n, i / 2) | 1).min(n - 1);
    let filter_update_ns = sample(
        &mut set,
        nothing,
        |s, i| {
            let id = w.ids[odd(i)];
            if i % 2 == 0 {
                s.update_metadata(id, &zone_a);
            } else {
                s.update_metadata(id, &zone_b);
            }
        },
        nothing,
    );
    let joined: Vec<Rc<EmuNode>> = (0..n)
        .map(|i| EmuNode::new(w.ids[i], w.names[i].clone(), zone_a.clone()))
        .collect();
    let left: Vec<Rc<EmuNode>> = (0..n)
        .map(|i| EmuNode::new(w.ids[i], w.names[i].clone(), zone_b.clone()))
        .collect();
    let libatapp_filter_update_ns = sample(
        &mut emu,
        nothing,
        |s, i| {
            let k = odd(i);
            s.add_node(Rc::clone(if i % 2 == 0 { &joined[k] } else { &left[k] }));
            black_box(s.lookup_u64(probe, Some(&filter)));
        },
        nothing,
    );
    eprintln!(
        "  N={n}: filter update ours {filter_update_ns:.0} ns, libatapp {libatapp_filter_update_ns:.0} ns"
    );

    emu.rebuild(None);
    let lookup_ns = per_lookup_ns(keys, |k| fast.lookup_u64(k).is_some());
    let compat_lookup_ns = per_lookup_ns(keys, |k| compat.lookup_u64(k).is_some());
    let libatapp_lookup_ns = per_lookup_ns(keys, |k| emu.lookup_u64(k, None).is_some());
    eprintln!(
        "  N={n}: lookup ours {lookup_ns:.1} ns, compat {compat_lookup_ns:.1} ns, libatapp {libatapp_lookup_ns:.1} ns"
    );

    SizeReport {
        build_ns,
        compat_build_ns,
        libatapp_build_ns,
        add_one_ns,
        remove_one_ns,
        filter_update_ns,
        lookup_ns,
        libatapp_lookup_ns,
        compat_lookup_ns,
        libatapp_add_one_ns,
        libatapp_filter_update_ns,
    }
}

/// Exact share of the 2^64 key space per node: a point owns the arc from the previous point
/// (exclusive) to itself (inclusive), the first point also the wrap-around arc.
fn arc_shares(ring: &Ring) -> HashMap<NodeId, u128> {
    let mut points: Vec<(u64, NodeId)> = ring.points().collect();
    points.sort_unstable();
    let mut share: HashMap<NodeId, u128> = HashMap::new();
    let Some(&(mut prev, _)) = points.last() else {
        return share;
    };
    for &(pos, node) in &points {
        *share.entry(node).or_default() += u128::from(pos.wrapping_sub(prev));
        prev = pos;
    }
    share
}

/// Peak share / mean share of the key space (exact arc lengths).
fn peak_over_mean(ring: &Ring) -> f64 {
    let share = arc_shares(ring);
    let peak = share.values().copied().max().unwrap_or(0) as f64;
    let mean = (1u128 << 64) as f64 / ring.node_count() as f64;
    peak / mean
}

fn balance_n100() -> f64 {
    let ratios: Vec<f64> = (0..10)
        .map(|seed| peak_over_mean(&ring(&Workload::new(100, 100 + seed), HashMode::Fast)))
        .collect();
    let worst = ratios.iter().copied().fold(0.0, f64::max);
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    eprintln!("balance N=100: peak/mean per seed {ratios:.3?}; mean {mean:.4}, worst {worst:.4}");
    mean
}

/// Fraction of 1M keys whose owner changes when one of 1000 nodes is removed, averaged over
/// 10 removals; checks that only the removed node's keys move and that re-adding restores all.
fn moved_fraction_n1000() -> f64 {
    let n = 1000;
    let w = Workload::new(n, 1);
    let mut ring = ring(&w, HashMode::Fast);
    let keys = keys(1 << 20, 11);
    let owners: Vec<Option<NodeId>> = keys.iter().map(|&k| ring.lookup_u64(k)).collect();
    let shares = arc_shares(&ring);
    let mut expected = 0.0;
    let mut fractions = Vec::new();
    let mut only_victims_moved = true;
    let mut restored = true;
    for r in 0..10 {
        let victim = (r * 97 + 5) % n;
        let id = w.ids[victim];
        expected += shares.get(&id).copied().unwrap_or(0) as f64 / (1u128 << 64) as f64 / 10.0;
        ring.remove(id);
        let mut moved = 0usize;
        for (k, owner) in keys.iter().zip(&owners) {
            let now = ring.lookup_u64(*k);
            if now != *owner {
                moved += 1;
                only_victims_moved &= *owner == Some(id);
            } else {
                only_victims_moved &= *owner != Some(id);
            }
        }
        ring.insert(w.member(victim))
            .expect("workload ids are non-zero");
        restored &= keys
            .iter()
            .zip(&owners)
            .all(|(k, o)| ring.lookup_u64(*k) == *o);
        fractions.push(moved as f64 / keys.len() as f64);
    }
    let mean = fractions.iter().sum::<f64>() / fractions.len() as f64;
    eprintln!(
        "moved keys N=1000 (1M keys, 10 removals): mean {:.4} % (ideal 0.1000 %), per removal {:.4?} %",
        mean * 100.0,
        fractions.iter().map(|f| f * 100.0).collect::<Vec<_>>()
    );
    eprintln!(
        "  the removed nodes' exact arc shares average {:.4} % (the sampled keys' target)",
        expected * 100.0
    );
    eprintln!(
        "  only keys of the removed node moved: {only_victims_moved}; re-adding restored every owner: {restored}"
    );
    mean
}

/// A JSON object in insertion order; values are pre-formatted JSON.
#[derive(Default)]
struct JsonObject(Vec<(String, String)>);

impl JsonObject {
    fn num(&mut self, key: &str, value: f64) {
        let text = if value.is_finite() {
            format!("{value}")
        } else {
            "null".to_owned()
        };
        self.0.push((key.to_owned(), text));
    }
    fn obj(&mut self, key: &str, value: JsonObject) {
        self.0.push((key.to_owned(), value.render()));
    }
    fn render(&self) -> String {
        let body: Vec<String> = self.0.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", body.join(","))
    }
}

fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

fn main() {
    let started = Instant::now();
    let keys = keys(1 << 16, 7);
    let mut json = JsonObject::default();
    let mut sizes = Vec::new();
    for n in [100, 1000, 10_000] {
        eprintln!("measuring N={n} x 80 points");
        let r = measure_size(n, &keys);
        let mut o = JsonObject::default();
        o.num("build_ns", round(r.build_ns, 1));
        o.num("compat_build_ns", round(r.compat_build_ns, 1));
        o.num("libatapp_build_ns", round(r.libatapp_build_ns, 1));
        o.num("add_one_ns", round(r.add_one_ns, 1));
        o.num("remove_one_ns", round(r.remove_one_ns, 1));
        o.num("filter_update_ns", round(r.filter_update_ns, 1));
        o.num("lookup_ns", round(r.lookup_ns, 2));
        o.num("libatapp_lookup_ns", round(r.libatapp_lookup_ns, 2));
        json.obj(&format!("n{n}"), o);
        sizes.push((n, r));
    }
    json.num("balance_peak_mean_n100", round(balance_n100(), 4));
    json.num("moved_fraction_n1000", round(moved_fraction_n1000(), 7));
    let big = ring(&Workload::new(10_000, 1), HashMode::Fast);
    let bytes_per_point = big.memory_bytes() as f64 / big.point_count() as f64;
    let big_compat = ring(&Workload::new(10_000, 1), HashMode::LibatappMain);
    let compat_bytes_per_point = big_compat.memory_bytes() as f64 / big_compat.point_count() as f64;
    eprintln!(
        "memory N=10000: {bytes_per_point:.2} B/point fast, {compat_bytes_per_point:.2} B/point compat"
    );
    json.num("bytes_per_point", round(bytes_per_point, 3));
    let (arm, cancel) = timer_ns();
    json.num("timer_arm_ns", round(arm, 2));
    json.num("timer_cancel_ns", round(cancel, 2));
    // Extras: ratios against the libatapp emulation and the emulation's change costs.
    for (n, r) in &sizes {
        json.num(
            &format!("build_speedup_vs_libatapp_n{n}"),
            round(r.libatapp_build_ns / r.build_ns, 2),
        );
        json.num(
            &format!("lookup_speedup_vs_libatapp_n{n}"),
            round(r.libatapp_lookup_ns / r.lookup_ns, 2),
        );
        json.num(
            &format!("compat_lookup_ns_n{n}"),
            round(r.compat_lookup_ns, 2),
        );
        json.num(
            &format!("libatapp_add_one_ns_n{n}"),
            round(r.libatapp_add_one_ns, 1),
        );
        json.num(
            &format!("libatapp_filter_update_ns_n{n}"),
            round(r.libatapp_filter_update_ns, 1),
        );
    }
    json.num("compat_bytes_per_point", round(compat_bytes_per_point, 3));
    eprintln!(
        "ring-report finished in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("{}", json.render());
}

/// Median ns per timer arm and per cancel with 64k live timers (batches of 1024).
fn timer_ns() -> (f64, f64) {
    let mut load = TimerLoad::new(3);
    let per_op = |d: Duration| d.as_nanos() as f64 / TIMER_BATCH as f64;
    let mut arms = Vec::new();
    let mut cancels = Vec::new();
    let started = Instant::now();
    while arms.len() < MIN_SAMPLES || (started.elapsed() < 2 * BUDGET && arms.len() < MAX_SAMPLES) {
        arms.push(per_op(load.arm_batch()));
        cancels.push(per_op(load.cancel_batch()));
    }
    let (arm, cancel) = (median(arms), median(cancels));
    eprintln!("timers (64k live): arm {arm:.1} ns, cancel {cancel:.1} ns");
    (arm, cancel)
}
