//! Property tests: after any sequence of inserts, renames, metadata and pod changes, removals
//! and filter registrations, every incremental ring of a `RingSet` equals the naive ring of its
//! current membership, searches agree with the naive libatapp loop, and round-robin orders are
//! the sorted members.

use alloc::{boxed::Box, collections::BTreeMap, format, string::String, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::{
    RingConfig, RingMember, RingSet, SearchMode, reference::NaiveRing, ring::assert_matches_naive,
};
use crate::{
    discovery::{Filter, Metadata},
    hash::{HashMode, key_hash_u64, test_hooks},
    ids::NodeId,
    rng::Rng,
};

pub(super) fn config(suite: &str, cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(Box::leak(
            format!("../proptest-regressions/{suite}.txt").into_boxed_str(),
        )))),
        cases,
        ..ProptestConfig::default()
    }
}

/// Small metadata alphabet: kind ∈ {"", game, gate} × zone label ∈ {none, 1, 2}.
fn metadata(code: u8) -> Metadata {
    let mut m = Metadata {
        kind: ["", "game", "gate"][usize::from(code % 3)].into(),
        ..Metadata::default()
    };
    match code / 3 % 3 {
        1 => {
            m.labels.insert("zone".into(), "1".into());
        }
        2 => {
            m.labels.insert("zone".into(), "2".into());
        }
        _ => {}
    }
    m
}

/// Filters: wildcard, kind=game, zone=1, kind=game+zone=2, kind=gate.
fn filter(code: u8) -> Filter {
    let mut f = Metadata::default();
    match code % 5 {
        1 => f.kind = "game".into(),
        2 => {
            f.labels.insert("zone".into(), "1".into());
        }
        3 => {
            f.kind = "game".into();
            f.labels.insert("zone".into(), "2".into());
        }
        4 => f.kind = "gate".into(),
        _ => {}
    }
    Filter(f)
}

fn name(id: u64, version: u8) -> String {
    // Version 0 is an id-only node (points hash the id bytes).
    if version == 0 {
        String::new()
    } else {
        format!("n{id}-v{version}")
    }
}

#[derive(Clone, Debug)]
enum Op {
    Insert {
        id: u64,
        version: u8,
        pod: i64,
        meta: u8,
    },
    UpdateMetadata {
        id: u64,
        meta: u8,
    },
    Remove {
        id: u64,
    },
    AddFilter {
        code: u8,
    },
    Rebuild,
    Settle,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1u64..=10, 0u8..3, -1i64..=1, 0u8..9)
            .prop_map(|(id, version, pod, meta)| Op::Insert { id, version, pod, meta }),
        2 => (1u64..=10, 0u8..9).prop_map(|(id, meta)| Op::UpdateMetadata { id, meta }),
        2 => (1u64..=10).prop_map(|id| Op::Remove { id }),
        1 => (0u8..5).prop_map(|code| Op::AddFilter { code }),
        1 => Just(Op::Rebuild),
        2 => Just(Op::Settle),
    ]
}

/// Model membership: id → (name, pod, metadata code).
type Model = BTreeMap<u64, (String, i64, u8)>;

fn check(set: &RingSet, model: &Model, filters: &[(super::FilterId, Filter)], config: RingConfig) {
    let rings = core::iter::once((None, Filter::any()))
        .chain(filters.iter().map(|(id, f)| (Some(*id), f.clone())));
    let mut out = Vec::new();
    for (id, f) in rings {
        let members: Vec<(NodeId, String)> = model
            .iter()
            .filter(|(_, m)| f.matches(&metadata(m.2)))
            .map(|(&i, m)| (NodeId(i), m.0.clone()))
            .collect();
        let naive = NaiveRing::new(config, &members);
        let view = set.ring(id);
        assert_eq!(
            view.points().collect::<Vec<_>>(),
            naive.positions(),
            "ring {id:?}"
        );
        assert_eq!(view.node_count(), members.len());
        let compact: Vec<_> = naive.compact().iter().map(|&(k, _, n)| (k, n)).collect();
        assert_eq!(view.compact_points().collect::<Vec<_>>(), compact);
        let mut rng = Rng::new(members.len() as u64);
        for _ in 0..6 {
            let h = key_hash_u64(rng.next_u64());
            assert_eq!(view.lookup_hash(h), naive.lookup(h));
            for mode in [
                SearchMode::ALL,
                SearchMode::COMPACT,
                SearchMode::UNIQUE.skipping(NodeId(3)),
                SearchMode::COMPACT_UNIQUE,
                SearchMode::COMPACT.skipping(NodeId(2)),
            ] {
                for k in [1, 3, members.len() + 1] {
                    view.successors_hash(h, k, mode, &mut out);
                    assert_eq!(out, naive.successors(h, k, mode), "{mode:?} k={k}");
                }
            }
        }
        let mut rr: Vec<(i64, NodeId)> = model
            .iter()
            .filter(|(_, m)| f.matches(&metadata(m.2)))
            .map(|(&i, m)| (m.1, NodeId(i)))
            .collect();
        rr.sort_unstable();
        let order = set.round_robin_order(id);
        assert_eq!(
            (0..order.len())
                .map(|i| order.get(i).unwrap())
                .collect::<Vec<_>>(),
            rr
        );
    }
    assert_eq!(set.len(), model.len());
    for (&i, m) in model {
        assert_eq!(set.name(NodeId(i)), Some(m.0.as_str()));
        assert_eq!(set.pod_index(NodeId(i)), Some(m.1));
        if !m.0.is_empty() {
            assert_eq!(set.by_name(&m.0), Some(NodeId(i)));
        }
    }
}

/// Applies `ops` to a ring set (with burst deferral past `defer` unread changes, if given)
/// and checks it against the model after every op that leaves it settled, and after every
/// `Settle`.
fn run(ops: &[Op], mode: HashMode, points_per_node: u32, mask: u64, defer: Option<u32>) {
    test_hooks::with_position_mask(mask, || {
        let config = RingConfig {
            points_per_node,
            mode,
        };
        let mut set = RingSet::new(config);
        if let Some(after) = defer {
            set.defer_after(after);
        }
        let mut model = Model::new();
        let mut filters: Vec<(super::FilterId, Filter)> = Vec::new();
        for op in ops {
            match *op {
                Op::Insert {
                    id,
                    version,
                    pod,
                    meta,
                } => {
                    let n = name(id, version);
                    let member = RingMember::new(NodeId(id), &n).with_pod_index(pod);
                    set.insert(member, &metadata(meta)).unwrap();
                    model.insert(id, (n, pod, meta));
                }
                Op::UpdateMetadata { id, meta } => {
                    let known = set.update_metadata(NodeId(id), &metadata(meta));
                    assert_eq!(known, model.contains_key(&id));
                    if let Some(m) = model.get_mut(&id) {
                        m.2 = meta;
                    }
                }
                Op::Remove { id } => {
                    assert_eq!(set.remove(NodeId(id)), model.remove(&id).is_some());
                }
                Op::AddFilter { code } => {
                    let f = filter(code);
                    let fid = set.add_filter(f.clone());
                    if !filters.iter().any(|(i, _)| *i == fid) {
                        filters.push((fid, f));
                    }
                }
                Op::Rebuild => {
                    let metas: Vec<Metadata> = model.values().map(|m| metadata(m.2)).collect();
                    set.rebuild(model.iter().zip(&metas).map(|((&id, m), meta)| {
                        (RingMember::new(NodeId(id), &m.0).with_pod_index(m.1), meta)
                    }))
                    .unwrap();
                }
                Op::Settle => set.settle(),
            }
            if set.is_settled() {
                check(&set, &model, &filters, config);
            }
        }
        set.settle();
        check(&set, &model, &filters, config);
        // The default ring also matches the naive model on the full search battery.
        let members: Vec<(NodeId, String)> = model
            .iter()
            .map(|(&i, m)| (NodeId(i), m.0.clone()))
            .collect();
        let mut ring = super::Ring::new(config);
        ring.build(members.iter().map(|(id, n)| RingMember::new(*id, n)))
            .unwrap();
        assert_eq!(
            ring.points().collect::<Vec<_>>(),
            set.ring(None).points().collect::<Vec<_>>()
        );
        if points_per_node <= 3 {
            assert_matches_naive(&ring, &NaiveRing::new(config, &members), 9);
        }
    });
}

/// Past 32 members a removal looks the node's points up in each ring instead of scanning it
/// (the sets above stay at 10 members): the same checks after every step of a 40-member set
/// with filter rings, removals from each of them and a rename, in every mode, with and
/// without colliding positions.
#[test]
fn removals_past_the_scan_size_stay_equal_to_a_fresh_build() {
    let mut ops: Vec<Op> = (0..5).map(|code| Op::AddFilter { code }).collect();
    ops.extend((1..=40u64).map(|id| Op::Insert {
        id,
        version: (id % 3) as u8,
        pod: (id % 3) as i64 - 1,
        meta: (id % 9) as u8,
    }));
    ops.extend([3, 17, 40, 1, 22, 9].map(|id| Op::Remove { id }));
    ops.push(Op::Insert {
        id: 5,
        version: 2,
        pod: 0,
        meta: 4,
    });
    ops.push(Op::UpdateMetadata { id: 6, meta: 1 });
    for mode in [
        HashMode::Fast,
        HashMode::LibatappMain,
        HashMode::LibatappV012,
    ] {
        for mask in [u64::MAX, 0xf800_0000_0000_0000] {
            run(&ops, mode, 2, mask, None);
        }
    }
}

fn masks() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(u64::MAX),
        1 => Just(0xf800_0000_0000_0000u64), // 32 distinct positions: ties everywhere
        1 => Just(0xf800_0000_ffff_ffffu64), // 32 stored halves, distinct low halves
    ]
}

proptest! {
    #![proptest_config(config("ring_incremental_fast", 128))]
    #[test]
    fn fast_rings_stay_equal_to_a_fresh_build(
        ops in proptest::collection::vec(op(), 1..28),
        ppn in prop_oneof![Just(1u32), Just(3), Just(80)],
        mask in masks(),
    ) {
        run(&ops, HashMode::Fast, ppn, mask, None);
    }
}

proptest! {
    #![proptest_config(config("ring_incremental_compat", 96))]
    #[test]
    fn compat_rings_stay_equal_to_a_fresh_build(
        ops in proptest::collection::vec(op(), 1..28),
        ppn in prop_oneof![Just(1u32), Just(3), Just(80)],
        mask in masks(),
    ) {
        run(&ops, HashMode::LibatappMain, ppn, mask, None);
    }
}

proptest! {
    #![proptest_config(config("ring_incremental_v012", 96))]
    #[test]
    fn v012_rings_stay_equal_to_a_fresh_build(
        ops in proptest::collection::vec(op(), 1..28),
        ppn in prop_oneof![Just(2u32), Just(3), Just(80)],
        mask in masks(),
    ) {
        run(&ops, HashMode::LibatappV012, ppn, mask, None);
    }
}

proptest! {
    #![proptest_config(config("ring_deferred_bursts", 128))]
    /// Burst deferral (points left stale past a few unread changes, rebuilt at a settle):
    /// every settled state equals a fresh build, in every mode.
    #[test]
    fn deferred_rings_equal_a_fresh_build_once_settled(
        ops in proptest::collection::vec(op(), 1..40),
        ppn in prop_oneof![Just(1u32), Just(3), Just(80)],
        mask in masks(),
        mode in prop_oneof![
            Just(HashMode::Fast),
            Just(HashMode::LibatappMain),
            Just(HashMode::LibatappV012),
        ],
        after in 0u32..4,
    ) {
        let ppn = if mode == HashMode::LibatappV012 { ppn.max(2) } else { ppn };
        run(&ops, mode, ppn, mask, Some(after));
    }
}
