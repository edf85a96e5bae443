//! `ring-report`: the headline ring numbers in one short run, as one JSON object.
//!
//! Run `cargo run --release -p switchboard-benches --bin ring-report`. Progress goes to stderr;
//! the last stdout line is a JSON object. For N = 100, 1000, 10 000 (`"nN"`), median
//! nanoseconds of, on the same node set and keys (80 points per node):
//!
//! - `fast_build_ns`, `compat_build_ns`, `compat_v012_build_ns`: our full build in fast mode,
//!   in [`HashMode::LibatappMain`] and in [`HashMode::LibatappV012`];
//! - `cpp_recipe_build_ns` / `cpp_recipe_v012_build_ns`: the C++ reproduction of upstream's
//!   `clear_cache` + `rebuild_cache` (`benches/cpp/libatapp_ring.cpp`, compiled `-O3` by
//!   `build.rs`, run as a child process in this run) for libatapp main (non-atomic
//!   `strong_rc_ptr`, 80 name points) and v0.12.5 (`std::shared_ptr`, 40 + 40 points);
//!   `cpp_recipe_compact_build_ns`: its lazy `rebuild_compact_cache` (main);
//! - `libatapp_emu_build_ns`: the Rust emulation of the main recipe (`libatapp_emu`);
//! - `add_one_ns`, `remove_one_ns`, `filter_update_ns` (fast mode), and the emulation's
//!   `libatapp_emu_add_one_ns` / `libatapp_emu_filter_update_ns` (change + first lookup);
//! - lookups including the key hash: `fast_lookup_ns`, `compat_lookup_ns`,
//!   `compat_v012_lookup_ns`, `cpp_recipe_lookup_ns`, `cpp_recipe_v012_lookup_ns`,
//!   `libatapp_emu_lookup_ns`;
//! - ratios, each C++ time over ours from this run: `fast_build_speedup_vs_cpp` (fast mode
//!   against the main recipe — a different placement, it cannot interoperate),
//!   `compat_build_speedup_vs_cpp` (`LibatappMain` against the main recipe: same placement),
//!   `compat_v012_build_speedup_vs_cpp_v012` (`LibatappV012` against the v0.12.5 recipe), the
//!   same three for lookups, and `libatapp_emu_build_over_cpp` (how the emulation tracks C++).
//!
//! Then the ring balance at N = 100 (exact arc length, peak/mean, mean of 10 node sets), the
//! fraction of keys moved by removing one of 1000 nodes, bytes per ring point at N = 10 000 by
//! component, and timer arm/cancel costs with 64k live timers for our queue and, in the same
//! run, the `BTreeMap` baseline (`timer_btree_*`).
//!
//! Timing is self-made rather than criterion so the whole report takes about a minute:
//! repeated samples within a time budget per metric, `black_box` around inputs and results, and
//! the median over samples (the C++ reference samples the same way). A sample is one operation
//! for builds and changes (each timed alone; restoring the state is not timed) and a batch of
//! 1000 lookups for lookups.
//!
//! Lookups are measured so that no mode is favoured by when it runs (measured one after the
//! other, the first mode used to come out up to 3x slower than the next ones on the same kind
//! of search): every timing — ours and the C++ reference's — first looks every key up once
//! untimed (page faults, caches and TLB warm), then samples batches of the same key stream
//! (the same 64k keys, batch `i` = keys `1000 i ..`); and the five rings (fast, compat main,
//! compat v0.12, the C++ main and v0.12 recipes) are timed in `LOOKUP_ROUNDS` interleaved
//! rounds, the starting ring rotating each round, the C++ ones in a fresh child process per
//! round (its `lookup` command). Each figure is the median of its rounds' medians, so a burst
//! of load from other processes moves one round of every ring, not all of one ring.

use std::{
    collections::HashMap,
    hint::black_box,
    rc::Rc,
    time::{Duration, Instant},
};

use switchboard_benches::{
    cpp_reference::{self, CppTimes, Layout},
    libatapp_emu::EmuNode,
    timers::{BATCH as TIMER_BATCH, BTreeQueue, Queue, TimerLoad},
    workload::{Workload, emu_set, keys, members, ring, zone_filter, zone_metadata},
};
use switchboard_core::{
    hash::HashMode,
    ids::NodeId,
    ring::{Ring, RingConfig, RingSet},
    timer::TimerQueue,
};

/// Time budget per metric; the sample count adapts to the operation's cost.
const BUDGET: Duration = Duration::from_millis(400);
const MIN_SAMPLES: usize = 7;
const MAX_SAMPLES: usize = 2001;
const LOOKUP_BATCH: usize = 1000;
/// Interleaved lookup rounds per N (see the module docs) and the sampling budget of one ring
/// in one round.
const LOOKUP_ROUNDS: usize = 5;
const LOOKUP_BUDGET: Duration = Duration::from_millis(80);

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len() % 2 == 1 {
        samples[mid]
    } else {
        (samples[mid - 1] + samples[mid]) / 2.0
    }
}

/// Median ns of `op`, sampled until `BUDGET` is spent (at least `MIN_SAMPLES` times).
/// `before` and `after` run untimed around each sample; all three get the sample index.
fn sample<S>(
    state: &mut S,
    before: impl FnMut(&mut S, usize),
    op: impl FnMut(&mut S, usize),
    after: impl FnMut(&mut S, usize),
) -> f64 {
    sample_for(BUDGET, state, before, op, after)
}

/// [`sample`] within `budget`.
fn sample_for<S>(
    budget: Duration,
    state: &mut S,
    mut before: impl FnMut(&mut S, usize),
    mut op: impl FnMut(&mut S, usize),
    mut after: impl FnMut(&mut S, usize),
) -> f64 {
    let started = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < MAX_SAMPLES && (samples.len() < MIN_SAMPLES || started.elapsed() < budget)
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

/// Median ns per lookup over batches of `LOOKUP_BATCH` keys sampled for `budget`, after one
/// untimed pass over every key (the C++ reference's `lookup_ns` does the same).
fn per_lookup_ns(budget: Duration, keys: &[u64], mut lookup: impl FnMut(u64) -> bool) -> f64 {
    for &k in keys {
        black_box(lookup(black_box(k)));
    }
    let batches = keys.len() / LOOKUP_BATCH;
    let ns = sample_for(
        budget,
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
    fast_build_ns: f64,
    compat_build_ns: f64,
    compat_v012_build_ns: f64,
    emu_build_ns: f64,
    cpp: CppTimes,
    cpp_v012: CppTimes,
    add_one_ns: f64,
    remove_one_ns: f64,
    filter_update_ns: f64,
    fast_lookup_ns: f64,
    compat_lookup_ns: f64,
    compat_v012_lookup_ns: f64,
    emu_lookup_ns: f64,
    emu_add_one_ns: f64,
    emu_filter_update_ns: f64,
}

fn build_ns(ring: &mut Ring, w: &Workload) -> f64 {
    sample(
        ring,
        nothing,
        |r, _| r.build(members(w)).expect("workload ids are non-zero"),
        nothing,
    )
}

fn measure_size(n: usize, keys: &[u64]) -> SizeReport {
    let w = Workload::new(n, 1);
    let mut fast = ring(&w, HashMode::Fast);
    let mut compat = ring(&w, HashMode::LibatappMain);
    let mut compat_v012 = ring(&w, HashMode::LibatappV012);
    let mut emu = emu_set(&w);

    let budget_ms = u32::try_from(BUDGET.as_millis()).expect("budget fits u32");
    let cpp = cpp_reference::bench(Layout::Main, &w, keys, budget_ms)
        .unwrap_or_else(|e| panic!("the C++ reference (main recipe): {e}"));
    let cpp_v012 = cpp_reference::bench(Layout::V012, &w, keys, budget_ms)
        .unwrap_or_else(|e| panic!("the C++ reference (v0.12 recipe): {e}"));
    assert_eq!(cpp.points as usize, compat.point_count(), "same ring size");
    assert_eq!(cpp_v012.points as usize, compat_v012.point_count());
    let fast_build_ns = build_ns(&mut fast, &w);
    let compat_build_ns = build_ns(&mut compat, &w);
    let compat_v012_build_ns = build_ns(&mut compat_v012, &w);
    let emu_build_ns = sample(&mut emu, nothing, |s, _| s.rebuild(None), nothing);
    eprintln!(
        "  N={n}: build fast {fast_build_ns:.0} ns, compat main {compat_build_ns:.0} ns, compat v0.12 {compat_v012_build_ns:.0} ns; C++ recipe main {:.0} ns, v0.12 {:.0} ns (compact ring {:.0} ns); Rust emulation {emu_build_ns:.0} ns",
        cpp.build_ns, cpp_v012.build_ns, cpp.compact_build_ns
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
    let emu_add_one_ns = sample(
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
        "  N={n}: add one {add_one_ns:.0} ns, remove one {remove_one_ns:.0} ns, emulation add+lookup {emu_add_one_ns:.0} ns"
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
    let emu_filter_update_ns = sample(
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
        "  N={n}: filter update ours {filter_update_ns:.0} ns, emulation {emu_filter_update_ns:.0} ns"
    );

    let lookups = lookup_rounds(&w, keys, [&fast, &compat, &compat_v012]);
    // The C++ lookup figures are the interleaved rounds', not the `bench` run's.
    let (mut cpp, mut cpp_v012) = (cpp, cpp_v012);
    cpp.lookup_ns = lookups[3];
    cpp_v012.lookup_ns = lookups[4];
    let [fast_lookup_ns, compat_lookup_ns, compat_v012_lookup_ns, ..] = lookups;
    emu.rebuild(None);
    let emu_lookup_ns = per_lookup_ns(BUDGET, keys, |k| emu.lookup_u64(k, None).is_some());
    eprintln!(
        "  N={n}: lookup fast {fast_lookup_ns:.1} ns, compat main {compat_lookup_ns:.1} ns, compat v0.12 {compat_v012_lookup_ns:.1} ns; C++ recipe main {:.1} ns, v0.12 {:.1} ns (medians of {LOOKUP_ROUNDS} interleaved rounds); Rust emulation {emu_lookup_ns:.1} ns",
        cpp.lookup_ns, cpp_v012.lookup_ns
    );

    SizeReport {
        fast_build_ns,
        compat_build_ns,
        compat_v012_build_ns,
        emu_build_ns,
        cpp,
        cpp_v012,
        add_one_ns,
        remove_one_ns,
        filter_update_ns,
        fast_lookup_ns,
        compat_lookup_ns,
        compat_v012_lookup_ns,
        emu_lookup_ns,
        emu_add_one_ns,
        emu_filter_update_ns,
    }
}

impl SizeReport {
    fn json(&self) -> JsonObject {
        let mut o = JsonObject::default();
        o.num("fast_build_ns", round(self.fast_build_ns, 1));
        o.num("compat_build_ns", round(self.compat_build_ns, 1));
        o.num("compat_v012_build_ns", round(self.compat_v012_build_ns, 1));
        o.num("cpp_recipe_build_ns", round(self.cpp.build_ns, 1));
        o.num("cpp_recipe_v012_build_ns", round(self.cpp_v012.build_ns, 1));
        o.num(
            "cpp_recipe_compact_build_ns",
            round(self.cpp.compact_build_ns, 1),
        );
        o.num("libatapp_emu_build_ns", round(self.emu_build_ns, 1));
        o.num("add_one_ns", round(self.add_one_ns, 1));
        o.num("remove_one_ns", round(self.remove_one_ns, 1));
        o.num("filter_update_ns", round(self.filter_update_ns, 1));
        o.num("libatapp_emu_add_one_ns", round(self.emu_add_one_ns, 1));
        o.num(
            "libatapp_emu_filter_update_ns",
            round(self.emu_filter_update_ns, 1),
        );
        o.num("fast_lookup_ns", round(self.fast_lookup_ns, 2));
        o.num("compat_lookup_ns", round(self.compat_lookup_ns, 2));
        o.num(
            "compat_v012_lookup_ns",
            round(self.compat_v012_lookup_ns, 2),
        );
        o.num("cpp_recipe_lookup_ns", round(self.cpp.lookup_ns, 2));
        o.num(
            "cpp_recipe_v012_lookup_ns",
            round(self.cpp_v012.lookup_ns, 2),
        );
        o.num("libatapp_emu_lookup_ns", round(self.emu_lookup_ns, 2));
        let ratio = |cpp: f64, ours: f64| round(cpp / ours, 2);
        o.num(
            "fast_build_speedup_vs_cpp",
            ratio(self.cpp.build_ns, self.fast_build_ns),
        );
        o.num(
            "compat_build_speedup_vs_cpp",
            ratio(self.cpp.build_ns, self.compat_build_ns),
        );
        o.num(
            "compat_v012_build_speedup_vs_cpp_v012",
            ratio(self.cpp_v012.build_ns, self.compat_v012_build_ns),
        );
        o.num(
            "fast_lookup_speedup_vs_cpp",
            ratio(self.cpp.lookup_ns, self.fast_lookup_ns),
        );
        o.num(
            "compat_lookup_speedup_vs_cpp",
            ratio(self.cpp.lookup_ns, self.compat_lookup_ns),
        );
        o.num(
            "compat_v012_lookup_speedup_vs_cpp_v012",
            ratio(self.cpp_v012.lookup_ns, self.compat_v012_lookup_ns),
        );
        o.num(
            "libatapp_emu_build_over_cpp",
            ratio(self.emu_build_ns, self.cpp.build_ns),
        );
        o
    }
}

/// Median ns per lookup of our `rings` (fast, compat main, compat v0.12) and of the C++ main
/// and v0.12 recipes, in that order: `LOOKUP_ROUNDS` rounds, each timing all five on the same
/// keys, starting one further along each round; the median of each one's round medians.
fn lookup_rounds(w: &Workload, keys: &[u64], rings: [&Ring; 3]) -> [f64; 5] {
    let budget_ms = u32::try_from(LOOKUP_BUDGET.as_millis()).expect("budget fits u32");
    let mut rounds: [Vec<f64>; 5] = Default::default();
    for round in 0..LOOKUP_ROUNDS {
        for step in 0..5 {
            let which = (round + step) % 5;
            let ns = match which {
                0..=2 => {
                    let ring = rings[which];
                    per_lookup_ns(LOOKUP_BUDGET, keys, |k| ring.lookup_u64(k).is_some())
                }
                _ => {
                    let (layout, ring) = if which == 3 {
                        (Layout::Main, rings[1])
                    } else {
                        (Layout::V012, rings[2])
                    };
                    let (points, ns) = cpp_reference::lookup_ns(layout, w, keys, budget_ms)
                        .unwrap_or_else(|e| panic!("the C++ reference ({layout:?} lookups): {e}"));
                    assert_eq!(points as usize, ring.point_count(), "same ring size");
                    ns
                }
            };
            rounds[which].push(ns);
        }
    }
    eprintln!(
        "  N={}: lookup rounds (ns) fast {:.1?}, compat main {:.1?}, compat v0.12 {:.1?}, C++ main {:.1?}, C++ v0.12 {:.1?}",
        w.len(),
        rounds[0],
        rounds[1],
        rounds[2],
        rounds[3],
        rounds[4]
    );
    rounds.map(median)
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
    for n in [100, 1000, 10_000] {
        eprintln!("measuring N={n} x 80 points");
        json.obj(&format!("n{n}"), measure_size(n, &keys).json());
    }
    json.num("balance_peak_mean_n100", round(balance_n100(), 4));
    json.num("moved_fraction_n1000", round(moved_fraction_n1000(), 7));
    for (tag, mode) in [("", HashMode::Fast), ("compat_", HashMode::LibatappMain)] {
        let big = ring(&Workload::new(10_000, 1), mode);
        let m = big.memory();
        let per_point = |bytes: usize| round(bytes as f64 / big.point_count() as f64, 3);
        eprintln!(
            "memory N=10000 {mode:?}: {:.2} B/point = points {:.2} + index {:.2} + members {:.2} + buffers {:.2}",
            per_point(big.memory_bytes()),
            per_point(m.points),
            per_point(m.index),
            per_point(m.members),
            per_point(m.buffers)
        );
        json.num(
            &format!("{tag}bytes_per_point"),
            per_point(big.memory_bytes()),
        );
        if tag.is_empty() {
            json.num("bytes_per_point_points", per_point(m.points));
            json.num("bytes_per_point_index", per_point(m.index));
            json.num("bytes_per_point_members", per_point(m.members));
            json.num("bytes_per_point_buffers", per_point(m.buffers));
        }
    }
    let (arm, cancel) = timer_ns::<TimerQueue<u64>>("ours");
    let (btree_arm, btree_cancel) = timer_ns::<BTreeQueue>("BTreeMap baseline");
    json.num("timer_arm_ns", round(arm, 2));
    json.num("timer_cancel_ns", round(cancel, 2));
    json.num("timer_btree_arm_ns", round(btree_arm, 2));
    json.num("timer_btree_cancel_ns", round(btree_cancel, 2));
    json.num("timer_arm_speedup_vs_btree", round(btree_arm / arm, 2));
    json.num(
        "timer_cancel_speedup_vs_btree",
        round(btree_cancel / cancel, 2),
    );
    eprintln!(
        "ring-report finished in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("{}", json.render());
}

/// Median ns per timer arm and per cancel with 64k live timers (batches of 1024) in queue `Q`.
fn timer_ns<Q: Queue>(label: &str) -> (f64, f64) {
    let mut load = TimerLoad::<Q>::new(3);
    let per_op = |d: Duration| d.as_nanos() as f64 / TIMER_BATCH as f64;
    let mut arms = Vec::new();
    let mut cancels = Vec::new();
    let started = Instant::now();
    while arms.len() < MIN_SAMPLES || (started.elapsed() < 2 * BUDGET && arms.len() < MAX_SAMPLES) {
        arms.push(per_op(load.arm_batch()));
        cancels.push(per_op(load.cancel_batch()));
    }
    let (arm, cancel) = (median(arms), median(cancels));
    eprintln!("timers (64k live), {label}: arm {arm:.1} ns, cancel {cancel:.1} ns");
    (arm, cancel)
}
