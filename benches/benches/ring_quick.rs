//! Quick tuning bench of the ring (helper "ring"); the side-by-side bench is `ring.rs`.
//!
//! Runs as an ignored test so it needs no `[[bench]]` entry:
//! `cargo test --release -p switchboard-benches --bench ring_quick -- --ignored --nocapture`

use std::{hint::black_box, time::Duration};

use criterion::Criterion;
use switchboard_core::{
    discovery::{Filter, Metadata},
    hash::HashMode,
    ids::NodeId,
    ring::{Ring, RingConfig, RingMember, RingSet, SearchMode},
    rng::Rng,
};

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("node-{i:05}")).collect()
}

fn members(names: &[String]) -> impl Iterator<Item = RingMember<'_>> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| RingMember::new(NodeId(i as u64 + 1), n))
}

fn config(mode: HashMode) -> RingConfig {
    RingConfig {
        points_per_node: 80,
        mode,
    }
}

fn meta(kind: &str) -> Metadata {
    Metadata {
        kind: kind.into(),
        ..Metadata::default()
    }
}

#[test]
#[ignore = "timing run: cargo test --release ... -- --ignored --nocapture"]
fn ring_quick() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    let filter = std::env::var("RING_QUICK").unwrap_or_default();
    let on = |name: &str| filter.is_empty() || name.contains(filter.as_str());

    for mode in [HashMode::Fast, HashMode::LibatappMain] {
        let tag = if mode == HashMode::Fast {
            "fast"
        } else {
            "compat"
        };
        for n in [100usize, 1000, 10_000] {
            let ns = names(n);
            let mut ring = Ring::new(config(mode));
            ring.build(members(&ns)).unwrap();
            let name = format!("build/{tag}/{n}");
            if on(&name) {
                c.bench_function(&name, |b| {
                    b.iter(|| ring.build(members(black_box(&ns))).unwrap())
                });
            }
            println!(
                "memory/{tag}/{n}: {} B total, {:.2} B/point (points+index+buffers)",
                ring.memory_bytes(),
                ring.memory_bytes() as f64 / ring.point_count() as f64
            );
            let mut rng = Rng::new(1);
            let keys: Vec<u64> = (0..1024).map(|_| rng.next_u64()).collect();
            let name = format!("lookup/{tag}/{n}");
            if on(&name) {
                c.bench_function(&name, |b| {
                    let mut i = 0;
                    b.iter(|| {
                        i = (i + 1) & 1023;
                        ring.lookup_u64(black_box(keys[i]))
                    })
                });
            }
        }

        let ns = names(1000);
        let mut ring = Ring::new(config(mode));
        ring.build(members(&ns)).unwrap();
        let extra = "node-extra".to_string();
        let name = format!("add_remove_one/{tag}/1000");
        if on(&name) {
            c.bench_function(&format!("add_one/{tag}/1000"), |b| {
                b.iter_custom(|iters| {
                    let mut t = Duration::ZERO;
                    for _ in 0..iters {
                        let s = std::time::Instant::now();
                        ring.insert(RingMember::new(NodeId(99_999), &extra))
                            .unwrap();
                        t += s.elapsed();
                        ring.remove(NodeId(99_999));
                    }
                    t
                })
            });
            c.bench_function(&format!("remove_one/{tag}/1000"), |b| {
                b.iter_custom(|iters| {
                    let mut t = Duration::ZERO;
                    for _ in 0..iters {
                        ring.insert(RingMember::new(NodeId(99_999), &extra))
                            .unwrap();
                        let s = std::time::Instant::now();
                        ring.remove(NodeId(99_999));
                        t += s.elapsed();
                    }
                    t
                })
            });
        }

        // RingSet at N=1000 with 4 filters; half the nodes are "game".
        let mut set = RingSet::new(config(mode));
        for (i, n) in ns.iter().enumerate() {
            let k = if i % 2 == 0 { "game" } else { "gate" };
            set.insert(RingMember::new(NodeId(i as u64 + 1), n), &meta(k))
                .unwrap();
        }
        set.add_filter(Filter(meta("game")));
        set.add_filter(Filter(meta("gate")));
        set.add_filter(Filter(meta("other")));
        set.add_filter(Filter(meta("none")));
        let name = format!("filter_update/{tag}/1000");
        if on(&name) {
            // Node 1 moves game -> gate -> game: each step changes two filter rings (one
            // removal, one merge), the default ring is untouched.
            let (game, gate) = (meta("game"), meta("gate"));
            let mut flip = false;
            c.bench_function(&name, |b| {
                b.iter(|| {
                    flip = !flip;
                    set.update_metadata(NodeId(1), if flip { &gate } else { &game })
                })
            });
            let name = format!("filter_build/{tag}/1000");
            c.bench_function(&name, |b| {
                b.iter_custom(|iters| {
                    let mut t = Duration::ZERO;
                    for i in 0..iters {
                        let mut s2 = set.clone();
                        let s = std::time::Instant::now();
                        s2.add_filter(Filter(meta(&format!("k{i}"))));
                        s2.add_filter(Filter(meta("game")));
                        t += s.elapsed();
                        black_box(&s2);
                    }
                    t
                })
            });
        }
    }
}

/// Minimum-of-runs timings (robust on a shared machine):
/// `cargo test --release -p switchboard-benches --bench ring_quick -- --ignored --nocapture ring_min`
#[test]
#[ignore = "timing run"]
fn ring_min() {
    fn min_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
        (0..runs).map(|_| f()).min().unwrap()
    }
    fn timed(f: impl FnOnce()) -> Duration {
        let s = std::time::Instant::now();
        f();
        s.elapsed()
    }
    for mode in [HashMode::Fast, HashMode::LibatappMain] {
        for n in [100usize, 1000, 10_000] {
            let ns = names(n);
            let mut ring = Ring::new(config(mode));
            let runs = if n == 10_000 { 15 } else { 60 };
            let t = min_of(runs, || {
                timed(|| ring.build(members(black_box(&ns))).unwrap())
            });
            println!("min build/{mode:?}/{n}: {t:?}");
            let mut rng = Rng::new(n as u64);
            let keys: Vec<u64> = (0..4096).map(|_| rng.next_u64()).collect();
            let t = min_of(30, || {
                timed(|| {
                    for _ in 0..64 {
                        for &k in &keys {
                            black_box(ring.lookup_u64(black_box(k)));
                        }
                    }
                })
            });
            println!(
                "min lookup/{mode:?}/{n}: {:.2} ns",
                t.as_nanos() as f64 / (64.0 * 4096.0)
            );
            let mut out = Vec::new();
            let t = min_of(30, || {
                timed(|| {
                    for &k in &keys {
                        ring.successors(&k.to_le_bytes(), 3, SearchMode::UNIQUE, &mut out);
                        black_box(&out);
                    }
                })
            });
            println!(
                "min successors(k=3, unique)/{mode:?}/{n}: {:.2} ns",
                t.as_nanos() as f64 / 4096.0
            );
            println!(
                "memory/{mode:?}/{n}: {:.2} B/point total (points 12 B + index {:.2} B + members + buffers)",
                ring.memory_bytes() as f64 / ring.point_count() as f64,
                ((1usize << 16).min(ring.point_count().next_power_of_two() / 2) * 4) as f64
                    / ring.point_count() as f64
            );
            if n <= 1000 {
                let extra = "node-extra".to_string();
                let add = min_of(200, || {
                    let t = timed(|| {
                        ring.insert(RingMember::new(NodeId(99_999), &extra))
                            .unwrap()
                    });
                    ring.remove(NodeId(99_999));
                    t
                });
                let remove = min_of(200, || {
                    ring.insert(RingMember::new(NodeId(99_999), &extra))
                        .unwrap();
                    timed(|| {
                        ring.remove(NodeId(99_999));
                    })
                });
                println!("min add_one/{mode:?}/{n}: {add:?}  remove_one: {remove:?}");
                if n < 1000 {
                    continue;
                }
                let mut set = RingSet::new(config(mode));
                for (i, n) in ns.iter().enumerate() {
                    let k = if i % 2 == 0 { "game" } else { "gate" };
                    set.insert(RingMember::new(NodeId(i as u64 + 1), n), &meta(k))
                        .unwrap();
                }
                let game = set.add_filter(Filter(meta("game")));
                set.add_filter(Filter(meta("gate")));
                let (game_m, gate_m) = (meta("game"), meta("gate"));
                // game -> gate: one filter ring loses the node, another gains it.
                let flip = min_of(200, || {
                    let t = timed(|| {
                        set.update_metadata(NodeId(1), &gate_m);
                    });
                    set.update_metadata(NodeId(1), &game_m);
                    t
                });
                println!("min filter_update(2 rings)/{mode:?}/1000: {flip:?}");
                let pass = min_of(30, || {
                    let mut s2 = set.clone();
                    timed(|| {
                        s2.add_filter(Filter(meta("gate2")));
                    })
                });
                println!(
                    "min filter_build(pass over 80k, 0 matches)/{mode:?}/1000: {pass:?}; game ring {} points",
                    set.ring(Some(game)).point_count()
                );
                let insert_set = min_of(200, || {
                    let t = timed(|| {
                        set.insert(RingMember::new(NodeId(99_999), &extra), &game_m)
                            .unwrap()
                    });
                    set.remove(NodeId(99_999));
                    t
                });
                println!("min ringset_insert(default + 1 filter)/{mode:?}/1000: {insert_set:?}");
            }
        }
    }
}
