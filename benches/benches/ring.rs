//! Hash ring, side by side in one run: our ring (fast and libatapp-compatible modes) against an
//! emulation of libatapp's recipe and the crates `hashring`, `conhash`, `anchorhash` and
//! `jumphash`, at N = 10, 100, 1000, 10 000 nodes × 80 points.
//!
//! Groups are named for what they compare: `build/<impl>/N`, `add_one/<impl>/N`,
//! `remove_one/<impl>/N`, `filter_update/<impl>/N`, `lookup/<impl>/N`, plus
//! `timer/{arm,cancel}_batch_1024/65536` (timer arm/cancel at 64k live timers). After the run a
//! table of medians and ratios against ours is printed (read back from criterion's estimates).
//!
//! What each operation means per implementation:
//! - build: ours = `Ring::build` into reused buffers; libatapp_emu = drop the ring, rehash
//!   and sort everything (its lazy rebuild); hashring = one `batch_add`; conhash = 80 MD5
//!   inserts per node.
//! - add_one / remove_one: N−1 → N and N → N−1 nodes; ours = `Ring::insert` / `Ring::remove`;
//!   libatapp_emu = the change plus the first lookup (which rebuilds the whole ring); hashring =
//!   one `batch_add` of 80 points / 80 `remove`s; conhash = 80 replicas; anchorhash = one
//!   resource. Only the named operation is timed; restoring the state is not.
//! - filter_update: half the nodes match filter `zone=a`; one node joins and then leaves the
//!   filter (a metadata change), time per change. ours = `RingSet::update_metadata`;
//!   libatapp_emu = the change plus the first filtered lookup (re-hash and sort of the
//!   filtered ring).
//! - lookup: a pre-generated random u64 key, key hash included.
//! - `*_same_hasher` rows: the peer with `peers::Murmur3Hasher` (our key hash) instead of its
//!   shipped SipHash, so the row compares data structures only.
//!
//! Skipped because it takes seconds per sample: conhash build at N = 10 000 (≈0.4 s per build,
//! 800 000 MD5 hashes and `BTreeMap` inserts; criterion would need ≈20 s for it).

use std::{
    hint::black_box,
    path::PathBuf,
    rc::Rc,
    time::{Duration, Instant},
};

use criterion::{BenchmarkId, Criterion, measurement::WallTime};
use switchboard_benches::{
    libatapp_emu::{EmuNode, LibatappSet},
    peers::{AnchorPeer, ConhashPeer, HashringPeer, JumpPeer},
    timers::{BATCH as TIMER_BATCH, LIVE_TIMERS, TimerLoad},
    workload::{NODE_COUNTS, Workload, emu_set, keys, members, ring, zone_filter, zone_metadata},
};
use switchboard_core::{
    hash::HashMode,
    ring::{Ring, RingConfig, RingSet},
};

type Group<'a> = criterion::BenchmarkGroup<'a, WallTime>;

const SEED: u64 = 1;
const KEY_COUNT: usize = 1 << 16;

/// Eight nodes spread over the ring's node list, cycled through by the change benches.
fn victims(n: usize) -> Vec<usize> {
    (0..8).map(|i| (i * n / 8 + 1).min(n - 1)).collect()
}

/// Times `op` alone: per iteration `before` (untimed), `op` (timed), `after` (untimed), each
/// given the victim node index. Keeps the state steady without cloning it.
fn timed_change<S>(
    group: &mut Group<'_>,
    id: BenchmarkId,
    state: &mut S,
    n: usize,
    mut before: impl FnMut(&mut S, usize),
    mut op: impl FnMut(&mut S, usize),
    mut after: impl FnMut(&mut S, usize),
) {
    let victims = victims(n);
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for it in 0..iters {
                let k = victims[it as usize % victims.len()];
                before(state, k);
                let start = Instant::now();
                op(state, k);
                total += start.elapsed();
                after(state, k);
            }
            total
        });
    });
}

fn nothing<S>(_: &mut S, _: usize) {}

fn bench_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    group.sample_size(10);
    for n in NODE_COUNTS {
        let w = Workload::new(n, SEED);
        for (name, mode) in [
            ("ours_fast", HashMode::Fast),
            ("ours_compat", HashMode::LibatappMain),
        ] {
            let mut r = ring(&w, mode);
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    r.build(members(&w)).expect("workload ids are non-zero");
                    black_box(r.point_count())
                });
            });
        }
        let mut set = emu_set(&w);
        group.bench_function(BenchmarkId::new("libatapp_emu", n), |b| {
            b.iter(|| {
                set.rebuild(None);
                black_box(set.ring(None).len())
            });
        });
        group.bench_function(BenchmarkId::new("hashring", n), |b| {
            b.iter(|| black_box(HashringPeer::build(&w.names).point_count()));
        });
        group.bench_function(BenchmarkId::new("hashring_same_hasher", n), |b| {
            b.iter(|| black_box(HashringPeer::build_same_hasher(&w.names).point_count()));
        });
        if n <= 1000 {
            group.bench_function(BenchmarkId::new("conhash", n), |b| {
                b.iter(|| black_box(ConhashPeer::build(&w.names).point_count()));
            });
        }
        group.bench_function(BenchmarkId::new("anchorhash", n), |b| {
            b.iter(|| black_box(AnchorPeer::build(n)));
        });
    }
    group.finish();
}

/// add_one (`adding = true`) or remove_one for every implementation.
fn bench_change(c: &mut Criterion, adding: bool) {
    let mut group = c.benchmark_group(if adding { "add_one" } else { "remove_one" });
    group.sample_size(10);
    // For add: remove first (untimed), then time the add. For remove: time the remove, then
    // add back (untimed).
    macro_rules! change {
        ($id:expr, $state:expr, $n:expr, $add:expr, $remove:expr) => {
            if adding {
                timed_change(&mut group, $id, $state, $n, $remove, $add, nothing);
            } else {
                timed_change(&mut group, $id, $state, $n, nothing, $remove, $add);
            }
        };
    }
    for n in NODE_COUNTS {
        let w = Workload::new(n, SEED);
        let probe = keys(1, 99)[0];
        for (name, mode) in [
            ("ours_fast", HashMode::Fast),
            ("ours_compat", HashMode::LibatappMain),
        ] {
            let mut r = ring(&w, mode);
            change!(
                BenchmarkId::new(name, n),
                &mut r,
                n,
                |r: &mut Ring, k| r.insert(w.member(k)).expect("workload ids are non-zero"),
                |r: &mut Ring, k| {
                    r.remove(w.ids[k]);
                }
            );
        }
        let nodes: Vec<Rc<EmuNode>> = (0..n)
            .map(|i| EmuNode::new(w.ids[i], w.names[i].clone(), w.metadata[i].clone()))
            .collect();
        let mut set = emu_set(&w);
        change!(
            BenchmarkId::new("libatapp_emu", n),
            &mut set,
            n,
            |s: &mut LibatappSet, k| {
                s.add_node(Rc::clone(&nodes[k]));
                black_box(s.lookup_u64(probe, None));
            },
            |s: &mut LibatappSet, k| {
                s.remove_node(w.ids[k]);
                black_box(s.lookup_u64(probe, None));
            }
        );
        let mut peer = HashringPeer::build(&w.names);
        change!(
            BenchmarkId::new("hashring", n),
            &mut peer,
            n,
            |p: &mut HashringPeer<'_>, k| p.add(&w.names[k]),
            |p: &mut HashringPeer<'_>, k| p.remove(&w.names[k])
        );
        let mut peer = ConhashPeer::build(&w.names);
        change!(
            BenchmarkId::new("conhash", n),
            &mut peer,
            n,
            |p: &mut ConhashPeer, k| p.add(&w.names[k]),
            |p: &mut ConhashPeer, k| p.remove(&w.names[k])
        );
        let mut peer = AnchorPeer::build(n);
        change!(
            BenchmarkId::new("anchorhash", n),
            &mut peer,
            n,
            |p: &mut AnchorPeer, k| {
                p.add(k as u32);
            },
            |p: &mut AnchorPeer, k| {
                p.remove(k as u32);
            }
        );
    }
    group.finish();
}

fn bench_filter_update(c: &mut Criterion) {
    let mut group = c.benchmark_group("filter_update");
    group.sample_size(10);
    let filter = zone_filter("a");
    let zone_a = zone_metadata("a");
    let zone_b = zone_metadata("b");
    for n in NODE_COUNTS {
        let w = Workload::new(n, SEED);
        // Odd nodes are in zone b; the victim joins zone a and leaves it again (two changes).
        let victims: Vec<usize> = victims(n)
            .into_iter()
            .map(|k| k | 1)
            .filter(|&k| k < n)
            .collect();

        let mut set = RingSet::new(RingConfig::default());
        set.add_filter(filter.clone());
        for i in 0..n {
            set.insert(w.member(i), &w.metadata[i])
                .expect("workload ids are non-zero");
        }
        group.bench_function(BenchmarkId::new("ours", n), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for it in 0..iters {
                    let id = w.ids[victims[it as usize % victims.len()]];
                    set.update_metadata(id, &zone_a);
                    set.update_metadata(id, &zone_b);
                }
                start.elapsed() / 2
            });
        });

        let mut emu = emu_set(&w);
        let joined: Vec<Rc<EmuNode>> = (0..n)
            .map(|i| EmuNode::new(w.ids[i], w.names[i].clone(), zone_a.clone()))
            .collect();
        let left: Vec<Rc<EmuNode>> = (0..n)
            .map(|i| EmuNode::new(w.ids[i], w.names[i].clone(), zone_b.clone()))
            .collect();
        let probe = keys(1, 99)[0];
        group.bench_function(BenchmarkId::new("libatapp_emu", n), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for it in 0..iters {
                    let k = victims[it as usize % victims.len()];
                    emu.add_node(Rc::clone(&joined[k]));
                    black_box(emu.lookup_u64(probe, Some(&filter)));
                    emu.add_node(Rc::clone(&left[k]));
                    black_box(emu.lookup_u64(probe, Some(&filter)));
                }
                start.elapsed() / 2
            });
        });
    }
    group.finish();
}

fn bench_lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("lookup");
    group.sample_size(20);
    let keys = keys(KEY_COUNT, 7);
    macro_rules! lookup {
        ($id:expr, $f:expr) => {
            lookup_one(&mut group, $id, &keys, $f)
        };
    }
    for n in NODE_COUNTS {
        let w = Workload::new(n, SEED);
        let fast = ring(&w, HashMode::Fast);
        lookup!(BenchmarkId::new("ours", n), |k| fast.lookup_u64(k));
        let compat = ring(&w, HashMode::LibatappMain);
        lookup!(BenchmarkId::new("ours_compat", n), |k| compat.lookup_u64(k));
        let mut set = emu_set(&w);
        set.rebuild(None);
        lookup!(BenchmarkId::new("libatapp_emu", n), |k| set
            .lookup_u64(k, None));
        let peer = HashringPeer::build(&w.names);
        lookup!(BenchmarkId::new("hashring", n), |k| peer.lookup(k));
        let peer = HashringPeer::build_same_hasher(&w.names);
        lookup!(BenchmarkId::new("hashring_same_hasher", n), |k| peer
            .lookup(k));
        let peer = ConhashPeer::build(&w.names);
        lookup!(BenchmarkId::new("conhash", n), |k| peer.lookup(k).is_some());
        let peer = AnchorPeer::build(n);
        lookup!(BenchmarkId::new("anchorhash", n), |k| peer.lookup(k));
        let peer = JumpPeer::new(n);
        lookup!(BenchmarkId::new("jumphash", n), |k| peer.lookup(k));
        let peer = JumpPeer::same_hasher(n);
        lookup!(BenchmarkId::new("jumphash_same_hasher", n), |k| peer
            .lookup(k));
    }
    group.finish();
}

/// Times `f` on the pre-generated keys, one key per iteration.
fn lookup_one<R>(
    group: &mut Group<'_>,
    id: BenchmarkId,
    keys: &[u64],
    mut f: impl FnMut(u64) -> R,
) {
    let mut i = 0;
    group.bench_function(id, |b| {
        b.iter(|| {
            i = (i + 1) & (KEY_COUNT - 1);
            black_box(f(black_box(keys[i])))
        });
    });
}

/// Timer arm and cancel at 64k live timers, timed in batches of 1024 (see `timers`).
fn bench_timer(c: &mut Criterion) {
    let mut group = c.benchmark_group("timer");
    group.sample_size(20);
    group.throughput(criterion::Throughput::Elements(TIMER_BATCH as u64));
    let mut load = TimerLoad::<switchboard_core::timer::TimerQueue<u64>>::new(3);
    group.bench_function(BenchmarkId::new("arm_batch_1024", LIVE_TIMERS), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| load.arm_batch()).sum());
    });
    group.bench_function(BenchmarkId::new("cancel_batch_1024", LIVE_TIMERS), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| load.cancel_batch()).sum());
    });
    group.finish();
}

/// Where criterion writes its estimates: `<target>/criterion` next to this binary's
/// `<target>/release/deps/` (or `$CRITERION_HOME`).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(|t| t.join("criterion")))
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// Median (ns) criterion recorded for `group/function/n`, if that bench ran.
fn median_ns(dir: &std::path::Path, group: &str, function: &str, n: usize) -> Option<f64> {
    let path = dir
        .join(group)
        .join(function)
        .join(n.to_string())
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["median"]["point_estimate"].as_f64()
}

fn print_ratios(dir: &std::path::Path) {
    let groups: [(&str, &[&str]); 5] = [
        (
            "build",
            &[
                "ours_fast",
                "ours_compat",
                "libatapp_emu",
                "hashring",
                "hashring_same_hasher",
                "conhash",
                "anchorhash",
            ],
        ),
        (
            "add_one",
            &[
                "ours_fast",
                "ours_compat",
                "libatapp_emu",
                "hashring",
                "conhash",
                "anchorhash",
            ],
        ),
        (
            "remove_one",
            &[
                "ours_fast",
                "ours_compat",
                "libatapp_emu",
                "hashring",
                "conhash",
                "anchorhash",
            ],
        ),
        ("filter_update", &["ours", "libatapp_emu"]),
        (
            "lookup",
            &[
                "ours",
                "ours_compat",
                "libatapp_emu",
                "hashring",
                "hashring_same_hasher",
                "conhash",
                "anchorhash",
                "jumphash",
                "jumphash_same_hasher",
            ],
        ),
    ];
    println!("\nmedians (ratio = impl / ours; > 1 means ours is faster)");
    for (group, impls) in groups {
        for n in NODE_COUNTS {
            let Some(ours) = median_ns(dir, group, impls[0], n) else {
                continue;
            };
            let mut line = format!("{group:>13}/{n:<6}");
            for name in impls {
                if let Some(t) = median_ns(dir, group, name, n) {
                    line += &format!("  {name} {} (x{:.2})", human(t), t / ours);
                }
            }
            println!("{line}");
        }
    }
    for op in ["arm_batch_1024", "cancel_batch_1024"] {
        if let Some(t) = median_ns(dir, "timer", op, LIVE_TIMERS) {
            println!(
                "{:>13}/{LIVE_TIMERS}  {:.1} ns per op",
                op,
                t / TIMER_BATCH as f64
            );
        }
    }
}

fn human(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn main() {
    let dir = criterion_dir();
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .output_directory(&dir)
        .configure_from_args();
    let started = Instant::now();
    bench_build(&mut c);
    bench_change(&mut c, true);
    bench_change(&mut c, false);
    bench_filter_update(&mut c);
    bench_lookup(&mut c);
    bench_timer(&mut c);
    c.final_summary();
    print_ratios(&dir);
    println!("total bench time {:.1} s", started.elapsed().as_secs_f64());
}
