//! One pick per selection mode (`core::select`) over 1,000 members, unfiltered and through a
//! filter ring matching half of them: what choosing a node costs in each mode. The modes come
//! from `Mode::ALL` with an exhaustive `match`, so a new mode gets its row as soon as it
//! compiles (CONTRIBUTING.md, "A new selection mode").
//!
//! `maglev_vs_ring`: a Maglev table (65,537 slots) and the ring built from the same 1,000
//! nodes, side by side: one full build each, one lookup each of the same keys (the key hashed
//! in both, as a pick hashes it).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_benches::select_report::modes;
use switchboard_core::{
    discovery::{Filter, Metadata},
    ids::NodeId,
    ring::{FilterId, Ring, RingConfig, RingMember, RingSet},
    rng::Rng,
    select::{Among, MaglevTable, Mode, Select, Selector},
};

const MEMBERS: u64 = 1_000;

fn metadata(kind: &str) -> Metadata {
    Metadata {
        kind: kind.into(),
        ..Metadata::default()
    }
}

/// 1,000 members named `n<id>`, every other one of kind `game`, and the filter ring of `game`.
fn members() -> (RingSet, FilterId) {
    let mut set = RingSet::new(RingConfig::fast());
    let game = set.add_filter(Filter(metadata("game")));
    for id in 1..=MEMBERS {
        let kind = if id % 2 == 0 { "game" } else { "chat" };
        set.insert(
            RingMember::new(NodeId(id), &format!("n{id}")),
            &metadata(kind),
        )
        .expect("distinct non-zero ids");
    }
    (set, game)
}

/// The selection of `mode` for the `i`-th pick: keys and named nodes vary with `i`.
fn select_of(mode: Mode, i: u64) -> Select {
    let id = 2 + 2 * (i % (MEMBERS / 2)); // a `game` member
    match mode {
        Mode::Node => Select::Node(NodeId(id)),
        Mode::Name => Select::Name(format!("n{id}")),
        Mode::Hash => Select::Hash(Bytes::copy_from_slice(&i.to_le_bytes())),
        Mode::RoundRobin => Select::RoundRobin,
        Mode::Random => Select::Random,
        Mode::LeastOutstanding => Select::LeastOutstanding,
        Mode::Maglev => Select::Maglev(Bytes::copy_from_slice(&i.to_le_bytes())),
        Mode::Bounded => Select::Bounded(Bytes::copy_from_slice(&i.to_le_bytes())),
    }
}

fn bench_select(c: &mut Criterion) {
    let (set, game) = members();
    let mut group = c.benchmark_group("select");
    for filter in [None, Some(game)] {
        let among = Among {
            rings: &set,
            filter,
        };
        // Every mode picks a member here; checked once before timing.
        let mut selector = Selector::new();
        let mut rng = Rng::new(7);
        for mode in Mode::ALL {
            let picked = selector.pick(
                &select_of(mode, 3),
                among,
                &mut rng,
                |n| (n.0 % 5) as u32,
                &[],
            );
            assert!(picked.is_some(), "{} picked nobody", mode.label());
        }
        let scope = if filter.is_some() { "filtered" } else { "all" };
        for mode in Mode::ALL {
            // The selections are built before timing: only the pick is measured.
            let selects: Vec<Select> = (0..1024).map(|i| select_of(mode, i)).collect();
            let mut i = 0usize;
            group.bench_function(format!("{}/{scope}", mode.label()), |b| {
                b.iter(|| {
                    i = (i + 1) & 1023;
                    black_box(selector.pick(
                        &selects[i],
                        among,
                        &mut rng,
                        |n| (n.0 % 5) as u32,
                        &[],
                    ))
                });
            });
        }
    }
    group.finish();
}

fn bench_maglev_vs_ring(c: &mut Criterion) {
    let names = modes::node_names(MEMBERS);
    let members = || modes::members(&names);
    let ids = || (1..=MEMBERS).map(NodeId);
    let mut group = c.benchmark_group("maglev_vs_ring");
    let mut table = MaglevTable::new(MaglevTable::DEFAULT_SIZE).expect("a prime");
    let mut ring = Ring::new(RingConfig::fast());
    group.bench_function("build/maglev", |b| {
        // A fresh table each time: the permutations are hashed too, as on a first build.
        b.iter(|| {
            let mut fresh = MaglevTable::new(MaglevTable::DEFAULT_SIZE).expect("a prime");
            fresh.build(ids());
            black_box(fresh.node_count())
        });
    });
    group.bench_function("build/ring", |b| {
        b.iter(|| {
            ring.build(members()).expect("valid members");
            black_box(ring.point_count())
        });
    });
    table.build(ids());
    ring.build(members()).expect("valid members");
    let keys: Vec<[u8; 8]> = (0..1024u64)
        .map(|i| (i * 0x9e37_79b9).to_le_bytes())
        .collect();
    let mut i = 0usize;
    group.bench_function("lookup/maglev", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(table.lookup(&keys[i]))
        });
    });
    group.bench_function("lookup/ring", |b| {
        b.iter(|| {
            i = (i + 1) & 1023;
            black_box(ring.lookup(&keys[i]))
        });
    });
    group.finish();
}

criterion_group!(benches, bench_select, bench_maglev_vs_ring);
criterion_main!(benches);
