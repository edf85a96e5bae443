//! One pick per selection mode (`core::select`) over 1,000 members, unfiltered and through a
//! filter ring matching half of them: what choosing a node costs in each mode. The modes come
//! from `Mode::ALL` with an exhaustive `match`, so a new mode gets its row as soon as it
//! compiles (CONTRIBUTING.md, "A new selection mode").

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use switchboard_core::{
    discovery::{Filter, Metadata},
    ids::NodeId,
    ring::{FilterId, RingConfig, RingMember, RingSet},
    rng::Rng,
    select::{Among, Mode, Select, Selector},
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

criterion_group!(benches, bench_select);
criterion_main!(benches);
