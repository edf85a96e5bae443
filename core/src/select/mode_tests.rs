//! The modes of issue 26 through the selector: Maglev tables cached per ring, bounded loads
//! and their spills, weighted least-outstanding.

use alloc::{format, string::ToString, vec, vec::Vec};

use bytes::Bytes;

use super::*;
use crate::{
    discovery::{Filter, Metadata},
    ring::{RingConfig, RingMember, SearchMode},
};

fn meta(kind: &str, weight: Option<&str>) -> Metadata {
    let mut labels = crate::discovery::Labels::new();
    if let Some(w) = weight {
        labels.insert(WEIGHT_LABEL.to_string(), w.to_string());
    }
    Metadata {
        kind: kind.into(),
        labels,
        ..Metadata::default()
    }
}

/// Game nodes 10..=13, gate 20; the game filter's handle.
fn set() -> (RingSet, FilterId) {
    let mut set = RingSet::new(RingConfig::fast());
    let game = set.add_filter(Filter(meta("game", None)));
    for (id, kind) in [
        (10, "game"),
        (11, "game"),
        (12, "game"),
        (13, "game"),
        (20, "gate"),
    ] {
        let name = format!("n{id}");
        set.insert(RingMember::new(NodeId(id), &name), &meta(kind, None))
            .unwrap();
    }
    (set, game)
}

fn table_of(size: u32, ids: &[u64]) -> MaglevTable {
    let mut table = MaglevTable::new(size).unwrap();
    table.build(ids.iter().copied().map(NodeId));
    table
}

#[test]
fn a_maglev_table_is_built_per_ring_and_only_when_that_ring_changed() {
    let (mut set, game) = set();
    let mut sel = Selector::with_config(SelectConfig {
        maglev_table_size: 101,
        ..SelectConfig::default()
    });
    let mut rng = Rng::new(1);
    let mut pick = |sel: &mut Selector, set: &RingSet, filter, key: &'static [u8]| {
        let among = Among { rings: set, filter };
        let select = Select::Maglev(Bytes::from_static(key));
        sel.pick(&select, among, &mut rng, |_| 0, &[])
    };
    let games = table_of(101, &[10, 11, 12, 13]);
    let all = table_of(101, &[10, 11, 12, 13, 20]);
    for key in [&b"a"[..], b"b", b"c", b"d"] {
        assert_eq!(pick(&mut sel, &set, Some(game), key), games.lookup(key));
    }
    assert_eq!(sel.stats().maglev_builds, 1);
    for key in [&b"a"[..], b"b", b"c", b"d"] {
        assert_eq!(pick(&mut sel, &set, None, key), all.lookup(key));
    }
    assert_eq!(sel.stats().maglev_builds, 2);
    // A gate joins: the default ring changed, the game ring did not.
    set.insert(RingMember::new(NodeId(21), "n21"), &meta("gate", None))
        .unwrap();
    assert_eq!(pick(&mut sel, &set, Some(game), b"a"), games.lookup(b"a"));
    assert_eq!(sel.stats().maglev_builds, 2);
    let all = table_of(101, &[10, 11, 12, 13, 20, 21]);
    assert_eq!(pick(&mut sel, &set, None, b"a"), all.lookup(b"a"));
    assert_eq!(sel.stats().maglev_builds, 3);
    // A game node leaves: its ring's table is rebuilt without it, once.
    set.remove(NodeId(13));
    let games = table_of(101, &[10, 11, 12]);
    for key in [&b"a"[..], b"b", b"c", b"d"] {
        assert_eq!(pick(&mut sel, &set, Some(game), key), games.lookup(key));
    }
    assert_eq!(sel.stats().maglev_builds, 4);
}

/// Selectors lent one set of shared tables pick what selectors with their own tables pick,
/// across membership changes, rings and table sizes, and count the same builds; the shared
/// set keeps the tables of several memberships at once.
#[test]
fn shared_maglev_tables_pick_what_own_tables_pick() {
    let (mut set, game) = set();
    let configs = [101, 13, 4].map(|size| SelectConfig {
        maglev_table_size: size,
        ..SelectConfig::default()
    });
    let mut own: Vec<Selector> = configs.iter().map(|&c| Selector::with_config(c)).collect();
    let mut lent: Vec<Selector> = configs.iter().map(|&c| Selector::with_config(c)).collect();
    let mut shared = Some(SharedMaglev::new());
    let mut rng = Rng::new(1);
    for round in 0..6u64 {
        if round % 2 == 1 {
            set.remove(NodeId(10 + round));
        } else {
            let id = NodeId(30 + round);
            set.insert(
                RingMember::new(id, &format!("n{}", id.0)),
                &meta("game", None),
            )
            .unwrap();
        }
        for (a, b) in own.iter_mut().zip(&mut lent) {
            for filter in [None, Some(game)] {
                for key in 0..40u8 {
                    let among = Among {
                        rings: &set,
                        filter,
                    };
                    let select = Select::Maglev(Bytes::copy_from_slice(&[key]));
                    let expected = a.pick(&select, among, &mut rng, |_| 0, &[]);
                    b.swap_shared_maglev(&mut shared);
                    let got = b.pick(&select, among, &mut rng, |_| 0, &[]);
                    b.swap_shared_maglev(&mut shared);
                    assert_eq!(got, expected, "round {round} key {key} {filter:?}");
                }
            }
            assert_eq!(a.stats().maglev_builds, b.stats().maglev_builds);
        }
    }
    assert!(shared.is_some(), "every selector gave the tables back");
}

#[test]
fn maglev_falls_back_past_an_excluded_owner() {
    let (set, game) = set();
    let mut sel = Selector::new();
    let among = Among {
        rings: &set,
        filter: Some(game),
    };
    let select = Select::Maglev(Bytes::from_static(b"k"));
    let owner = sel
        .pick(&select, among, &mut Rng::new(1), |_| 0, &[])
        .unwrap();
    let next = sel.pick(&select, among, &mut Rng::new(1), |_| 0, &[owner]);
    let first_other = [10, 11, 12, 13]
        .map(NodeId)
        .into_iter()
        .find(|&id| id != owner);
    assert_eq!(next, first_other);
}

#[test]
fn the_load_bound_is_the_floor_of_c_times_the_mean_with_the_new_request() {
    // ⌊1.25 × 11 / 4⌋ = ⌊3.4375⌋.
    assert_eq!(load_bound(125, 10, 4), 3);
    assert_eq!(load_bound(125, 0, 4), 0);
    assert_eq!(load_bound(100, 7, 4), 2);
    assert_eq!(load_bound(100, 8, 3), 3);
    assert_eq!(load_bound(125, 0, 0), 1);
    // 1.25 × 400 / 4 exactly: a node at 124 passes (125 after), one at 125 does not.
    assert_eq!(load_bound(125, 399, 4), 125);
    assert_eq!(load_bound(u32::MAX, u64::MAX, 1), u64::MAX);
}

/// With every load 0 the key goes to its ring owner; with the owner at the bound, to the
/// next distinct node clockwise under it (each spill counted), or, when no node is under it,
/// to the first of the least loaded clockwise; an owner excluded by a retry is passed over
/// without counting a spill.
#[test]
fn bounded_takes_the_owner_until_it_is_at_the_bound_then_walks_clockwise() {
    let (set, game) = set();
    let key = b"room-9";
    let mut walk = Vec::new();
    set.ring(Some(game))
        .successors(key, 4, SearchMode::UNIQUE, &mut walk);
    let (owner, second, third) = (walk[0], walk[1], walk[2]);
    assert_eq!(set.ring(Some(game)).lookup(key), Some(owner));
    let mut sel = Selector::new();
    let among = Among {
        rings: &set,
        filter: Some(game),
    };
    let select = Select::Bounded(Bytes::from_static(key));
    let pick = |sel: &mut Selector, load: &dyn Fn(NodeId) -> u32, excluded: &[NodeId]| {
        sel.pick(&select, among, &mut Rng::new(1), load, excluded)
    };
    assert_eq!(pick(&mut sel, &|_| 0, &[]), Some(owner));
    // Owner 3 of total 3 over 4 nodes: bound ⌊1.25 × 4 / 4⌋ = 1; the others, at 0, under it.
    let hot = |id: NodeId| if id == owner { 3 } else { 0 };
    assert_eq!(pick(&mut sel, &hot, &[]), Some(second));
    // Owner 1 of total 1: bound ⌊1.25 × 2 / 4⌋ = 0, nobody under it: the least loaded.
    let warm = |id: NodeId| u32::from(id == owner);
    assert_eq!(pick(&mut sel, &warm, &[]), Some(second));
    // Owner and second 1 of total 2: bound 0, nobody under it; the first of the least
    // loaded clockwise is the third.
    let pair = |id: NodeId| u32::from(id == owner || id == second);
    assert_eq!(pick(&mut sel, &pair, &[]), Some(third));
    // Owner 4 and the second 4 of total 8: bound ⌊1.25 × 9 / 4⌋ = 2.
    let two_hot = |id: NodeId| if id == owner || id == second { 4 } else { 0 };
    assert_eq!(pick(&mut sel, &two_hot, &[]), Some(third));
    assert_eq!(sel.stats().bounded_spills, 4);
    // Owner 1 of total 6: bound ⌊1.25 × 7 / 4⌋ = 2, under it.
    let spread = |id: NodeId| {
        if id == owner {
            1
        } else {
            2 - u32::from(id == third)
        }
    };
    assert_eq!(pick(&mut sel, &spread, &[]), Some(owner));
    assert_eq!(pick(&mut sel, &|_| 0, &[owner]), Some(second));
    assert_eq!(sel.stats().bounded_spills, 4);
    // Everyone but the owner excluded, the owner at the bound: still the owner, no spill.
    assert_eq!(pick(&mut sel, &hot, &[second, third, walk[3]]), Some(owner));
    assert_eq!(pick(&mut sel, &hot, &walk), None);
    assert_eq!(sel.stats().bounded_spills, 4);
}

#[test]
fn the_load_factor_comes_from_the_config() {
    let (set, game) = set();
    let key = b"room-9";
    let owner = set.ring(Some(game)).lookup(key).unwrap();
    let among = Among {
        rings: &set,
        filter: Some(game),
    };
    let select = Select::Bounded(Bytes::from_static(key));
    // Owner 2, the others 1, total 5: at 125 % the bound is ⌊1.25 × 6 / 4⌋ = 1 (nobody
    // under it, so a least loaded other node); at 300 %, ⌊18 / 4⌋ = 4.
    let load = |id: NodeId| if id == owner { 2 } else { 1 };
    let mut tight = Selector::new();
    let mut loose = Selector::with_config(SelectConfig {
        bounded_load_percent: 300,
        ..SelectConfig::default()
    });
    assert_ne!(
        tight.pick(&select, among, &mut Rng::new(1), load, &[]),
        Some(owner)
    );
    assert_eq!(
        loose.pick(&select, among, &mut Rng::new(1), load, &[]),
        Some(owner)
    );
    assert_eq!(
        (tight.stats().bounded_spills, loose.stats().bounded_spills),
        (1, 0)
    );
}

#[test]
fn a_weight_is_an_integer_label_from_1_to_10000() {
    for (label, weight) in [
        (None, 1),
        (Some("7"), 7),
        (Some("10000"), 10_000),
        (Some("1"), 1),
        (Some("0"), 1),
        (Some("10001"), 1),
        (Some("-3"), 1),
        (Some(" 5"), 1),
        (Some("2.5"), 1),
        (Some(""), 1),
    ] {
        assert_eq!(weight_of(&meta("game", label)), weight, "{label:?}");
    }
}

/// Two members, so every pick draws both, in an order the seed fixes: node 1 (weight 3)
/// against node 2 (weight 1). Load per weight decides; on equal load per weight the first
/// drawn wins.
#[test]
fn least_outstanding_compares_load_per_weight_and_keeps_the_first_drawn_on_a_tie() {
    let mut set = RingSet::new(RingConfig::fast());
    set.insert(RingMember::new(NodeId(1), "a"), &meta("x", Some("3")))
        .unwrap();
    set.insert(RingMember::new(NodeId(2), "b"), &meta("x", None))
        .unwrap();
    let among = Among {
        rings: &set,
        filter: None,
    };
    let mut sel = Selector::new();
    let mut rng = Rng::new(5);
    let mut firsts = vec![];
    for _ in 0..40 {
        let mut probe = rng.clone();
        let first = NodeId(probe.below(2) + 1);
        firsts.push(first);
        let loads = |a: u32, b: u32| move |id: NodeId| if id == NodeId(1) { a } else { b };
        let mut pick = |load| {
            sel.pick(
                &Select::LeastOutstanding,
                among,
                &mut rng.clone(),
                load,
                &[],
            )
        };
        // 5/3 < 2/1: node 1 although it carries more.
        assert_eq!(pick(loads(5, 2)), Some(NodeId(1)));
        // 7/3 > 2/1: node 2.
        assert_eq!(pick(loads(7, 2)), Some(NodeId(2)));
        // 6/3 = 2/1 and 0 = 0: the first drawn.
        assert_eq!(pick(loads(6, 2)), Some(first));
        assert_eq!(pick(loads(0, 0)), Some(first));
        rng.next_u64();
    }
    assert!(firsts.contains(&NodeId(1)) && firsts.contains(&NodeId(2)));
}

mod bounded_prop {
    use alloc::{boxed::Box, format, vec::Vec};

    use proptest::{prelude::*, test_runner::FileFailurePersistence};

    use super::*;
    use crate::rng::Rng;

    proptest! {
        #![proptest_config(ProptestConfig {
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
                "../proptest-regressions/select_bounded.txt",
            ))),
            cases: 256,
            ..ProptestConfig::default()
        })]
        /// Against the definition, spelled out over the ring's clockwise distinct nodes: the
        /// first allowed one whose `(load + 1) × n × 100 ≤ percent × (total + 1)`, else the
        /// first allowed one of least load; a spill exactly when that is not the owner and
        /// the owner neither qualified nor was as light as the least loaded allowed node.
        #[test]
        fn bounded_picks_the_first_node_clockwise_within_envoys_bound(
            loads in proptest::collection::vec(0u32..40, 1..12),
            excluded_mask in any::<u16>(),
            percent in 100u32..300,
            key in any::<u32>(),
        ) {
            let mut set = RingSet::new(RingConfig::fast());
            for id in 1..=loads.len() as u64 {
                let name = format!("n{id}");
                set.insert(RingMember::new(NodeId(id), &name), &meta("game", None)).unwrap();
            }
            let load = |id: NodeId| loads[(id.0 - 1) as usize];
            let excluded: Vec<NodeId> = (1..=loads.len() as u64)
                .filter(|id| excluded_mask & (1 << id) != 0)
                .map(NodeId)
                .collect();
            let key = key.to_le_bytes();
            let mut clockwise = Vec::new();
            set.ring(None).successors(&key, loads.len(), SearchMode::UNIQUE, &mut clockwise);
            let n = u128::try_from(loads.len()).unwrap();
            let total: u128 = loads.iter().map(|&l| u128::from(l)).sum();
            let passes = |id: NodeId| {
                (u128::from(load(id)) + 1) * n * 100 <= u128::from(percent) * (total + 1)
            };
            let allowed: Vec<NodeId> =
                clockwise.iter().copied().filter(|id| !excluded.contains(id)).collect();
            let least = allowed.iter().map(|&id| load(id)).min();
            let owner = clockwise[0];
            let expected = allowed.iter().copied().find(|&id| passes(id)).or_else(|| {
                if allowed.contains(&owner) && Some(load(owner)) == least {
                    Some(owner)
                } else {
                    allowed.iter().copied().find(|&id| Some(load(id)) == least)
                }
            });
            let mut sel = Selector::with_config(SelectConfig {
                bounded_load_percent: percent,
                ..SelectConfig::default()
            });
            let among = Among { rings: &set, filter: None };
            let select = Select::Bounded(Bytes::copy_from_slice(&key));
            let got = sel.pick(&select, among, &mut Rng::new(1), load, &excluded);
            prop_assert_eq!(got, expected);
            // An owner no heavier than the least loaded allowed node is not passed over for
            // its load (only for an exclusion): no spill.
            let owner_fits = passes(owner)
                || (!allowed.iter().any(|&id| passes(id)) && Some(load(owner)) <= least);
            let spill = u64::from(!owner_fits && got.is_some_and(|id| id != owner));
            prop_assert_eq!(sel.stats().bounded_spills, spill);
        }
    }
}
