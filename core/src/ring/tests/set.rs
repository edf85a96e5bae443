//! Unit tests of `RingSet`: which rings a change touches (exact counters), zero re-hashing in
//! filter rings (exact hash-call counts), filter rings equal to naive filtered rings.

use alloc::{format, string::String, vec, vec::Vec};

use super::{FilterId, RingConfig, RingMember, RingSet, reference::NaiveRing};
use crate::ring::set::DEFER_AFTER;
use crate::{
    discovery::{Filter, Metadata},
    hash::{HashMode, test_hooks},
    ids::NodeId,
};

fn kind(k: &str) -> Metadata {
    Metadata {
        kind: k.into(),
        ..Metadata::default()
    }
}

fn kind_filter(k: &str) -> Filter {
    Filter(kind(k))
}

/// 30 members: kind game for ids ≡ 0 mod 3, gate for ≡ 1, none otherwise.
fn populated(config: RingConfig) -> RingSet {
    let mut set = RingSet::new(config);
    for i in 1..=30u64 {
        let k = ["game", "gate", ""][(i % 3) as usize];
        let name = format!("m-{i}");
        set.insert(RingMember::new(NodeId(i), &name), &kind(k))
            .unwrap();
    }
    set
}

/// Updates of (default, game, gate, wildcard).
fn updates(set: &RingSet, ids: [FilterId; 3]) -> [u64; 4] {
    [
        set.ring_updates_of(None),
        set.ring_updates_of(Some(ids[0])),
        set.ring_updates_of(Some(ids[1])),
        set.ring_updates_of(Some(ids[2])),
    ]
}

#[test]
fn a_change_touches_only_rings_whose_filter_matches_before_or_after() {
    let mut set = populated(RingConfig::fast());
    let game = set.add_filter(kind_filter("game"));
    let gate = set.add_filter(kind_filter("gate"));
    let wild = set.add_filter(Filter::any());
    let ids = [game, gate, wild];
    // Default ring: 30 inserts; filter rings: built once each; wildcard = default ring.
    assert_eq!(updates(&set, ids), [30, 1, 1, 30]);
    assert_eq!(set.ring_updates(), 32);
    assert_eq!(
        set.add_filter(kind_filter("game")),
        game,
        "equal filters share a ring"
    );

    set.insert(RingMember::new(NodeId(100), "new"), &kind("game"))
        .unwrap();
    assert_eq!(updates(&set, ids), [31, 2, 1, 31]);
    // game → gate: leaves one filter ring, enters the other; the default ring is untouched.
    assert!(set.update_metadata(NodeId(100), &kind("gate")));
    assert_eq!(updates(&set, ids), [31, 3, 2, 31]);
    // A metadata change that no filter cares about touches no ring.
    let mut labelled = kind("gate");
    labelled.labels.insert("zone".into(), "9".into());
    assert!(set.update_metadata(NodeId(100), &labelled));
    assert_eq!(updates(&set, ids), [31, 3, 2, 31]);
    // A pod index change reorders round robin but moves no point.
    set.insert(
        RingMember::new(NodeId(100), "new").with_pod_index(5),
        &labelled,
    )
    .unwrap();
    assert_eq!(updates(&set, ids), [31, 3, 2, 31]);
    // Renaming moves the points in every ring holding the node (remove + insert each).
    set.insert(
        RingMember::new(NodeId(100), "newer").with_pod_index(5),
        &labelled,
    )
    .unwrap();
    assert_eq!(updates(&set, ids), [33, 3, 4, 33]);
    assert!(set.remove(NodeId(100)));
    assert_eq!(updates(&set, ids), [34, 3, 5, 34]);
    assert!(!set.remove(NodeId(100)));
    assert!(!set.update_metadata(NodeId(100), &kind("game")));
    assert_eq!(updates(&set, ids), [34, 3, 5, 34]);
    // Removing a member of no filter touches only the default ring.
    assert!(set.remove(NodeId(2)));
    assert_eq!(updates(&set, ids), [35, 3, 5, 35]);
}

#[test]
fn filter_rings_reuse_the_points_computed_for_the_default_ring() {
    for (mode, murmurs_per_point_set) in [(HashMode::Fast, 1), (HashMode::LibatappMain, 80)] {
        let config = RingConfig {
            points_per_node: 80,
            mode,
        };
        let mut set = populated(config);
        let game = set.add_filter(kind_filter("game"));
        let sets0 = test_hooks::point_sets();
        let murmur0 = test_hooks::murmur_calls();
        // Registering filters: one filter pass each, no hashing at all.
        let labelled = {
            let mut f = kind("game");
            f.labels.insert("zone".into(), "1".into());
            Filter(f)
        };
        let zone = set.add_filter(labelled);
        let gate = set.add_filter(kind_filter("gate"));
        assert_eq!(test_hooks::point_sets(), sets0);
        assert_eq!(test_hooks::murmur_calls(), murmur0);

        // Insert into default + game + zone rings: the node's points are computed once.
        let mut meta = kind("game");
        meta.labels.insert("zone".into(), "1".into());
        set.insert(RingMember::new(NodeId(500), "hot"), &meta)
            .unwrap();
        assert_eq!(test_hooks::point_sets(), sets0 + 1);
        // Fast: the node hash (1 murmur) then 80 mixes; compat: 80 murmurs.
        assert_eq!(test_hooks::murmur_calls(), murmur0 + murmurs_per_point_set);
        assert_eq!(set.ring_updates_of(Some(game)), 2);
        assert_eq!(set.ring_updates_of(Some(zone)), 2);
        assert_eq!(set.ring_updates_of(Some(gate)), 1);

        // Leave game and zone, enter gate: three filter rings change, one point set.
        let sets1 = test_hooks::point_sets();
        set.update_metadata(NodeId(500), &kind("gate"));
        assert_eq!(test_hooks::point_sets(), sets1 + 1);
        // No verdict changes: nothing computed.
        let mut gate_labelled = kind("gate");
        gate_labelled.labels.insert("x".into(), "y".into());
        set.update_metadata(NodeId(500), &gate_labelled);
        assert_eq!(test_hooks::point_sets(), sets1 + 1);
        // Removal from default + gate: 31 members of 80 points, at most 32 points per point
        // removed, so both rings are scanned and nothing is computed.
        set.remove(NodeId(500));
        assert_eq!(test_hooks::point_sets(), sets1 + 1);
        assert_eq!(
            test_hooks::murmur_calls(),
            murmur0 + 2 * murmurs_per_point_set
        );
        // Lookups never compute anything.
        let sets2 = test_hooks::point_sets();
        for k in 0..100u64 {
            let _ = set.ring(Some(gate)).lookup_u64(k);
        }
        assert_eq!(test_hooks::point_sets(), sets2);
    }
}

#[test]
fn filter_rings_equal_naive_rings_of_the_matching_members() {
    for config in [RingConfig::fast(), RingConfig::libatapp_main()] {
        let mut set = populated(config);
        let game = set.add_filter(kind_filter("game"));
        set.remove(NodeId(3));
        set.update_metadata(NodeId(4), &kind("game"));
        let members: Vec<(NodeId, String)> = (1..=30u64)
            .filter(|&i| (i % 3 == 0 && i != 3) || i == 4)
            .map(|i| (NodeId(i), format!("m-{i}")))
            .collect();
        let naive = NaiveRing::new(config, &members);
        let view = set.ring(Some(game));
        assert_eq!(view.points().collect::<Vec<_>>(), naive.positions());
        assert_eq!(view.node_count(), 10);
        assert!(view.contains(NodeId(4)));
        assert!(!view.contains(NodeId(3)));
        assert!(!view.contains(NodeId(5)));
        assert_eq!(set.round_robin_order(Some(game)).len(), 10);
    }
}

#[test]
fn unknown_and_wildcard_filter_ids() {
    let mut set = populated(RingConfig::fast());
    let wild = set.add_filter(Filter::any());
    assert_eq!(set.canonical(Some(wild)), None);
    assert_eq!(
        set.ring(Some(wild)).points().collect::<Vec<_>>(),
        set.ring(None).points().collect::<Vec<_>>()
    );
    // An id this set never handed out (from a set with more filters).
    let stale = {
        let mut s = RingSet::new(RingConfig::fast());
        s.add_filter(kind_filter("a"));
        s.add_filter(kind_filter("b"));
        s.add_filter(kind_filter("c"))
    };
    let view = set.ring(Some(stale));
    assert_eq!(view.point_count(), 0);
    assert_eq!(view.lookup(b"k"), None);
    assert!(!view.contains(NodeId(1)));
    assert_eq!(set.ring_updates_of(Some(stale)), 0);
    assert!(set.round_robin_order(Some(stale)).is_empty());
}

#[test]
fn names_follow_renames_and_duplicates_resolve_to_the_smallest_id() {
    let mut set = RingSet::new(RingConfig::fast());
    let m = Metadata::default();
    set.insert(RingMember::new(NodeId(7), "same"), &m).unwrap();
    set.insert(RingMember::new(NodeId(3), "same"), &m).unwrap();
    assert_eq!(set.by_name("same"), Some(NodeId(3)));
    set.insert(RingMember::new(NodeId(3), "other"), &m).unwrap();
    assert_eq!(set.by_name("same"), Some(NodeId(7)));
    assert_eq!(set.by_name("other"), Some(NodeId(3)));
    set.remove(NodeId(7));
    assert_eq!(set.by_name("same"), None);
    assert_eq!(set.name(NodeId(3)), Some("other"));
    assert_eq!(
        set.insert(RingMember::new(NodeId(0), "zero"), &m),
        Err(super::RingError::InvalidNodeId)
    );
}

#[test]
fn rebuild_equals_incremental_inserts() {
    for config in [RingConfig::fast(), RingConfig::libatapp_main()] {
        let inc = populated(config);
        let names: Vec<String> = (1..=30u64).map(|i| format!("m-{i}")).collect();
        let metas: Vec<Metadata> = (1..=30u64)
            .map(|i| kind(["game", "gate", ""][(i % 3) as usize]))
            .collect();
        let mut snap = RingSet::new(config);
        let game = snap.add_filter(kind_filter("game"));
        snap.rebuild(
            (1..=30u64)
                .zip(&names)
                .zip(&metas)
                .map(|((i, n), m)| (RingMember::new(NodeId(i), n), m)),
        )
        .unwrap();
        assert_eq!(
            snap.ring(None).points().collect::<Vec<_>>(),
            inc.ring(None).points().collect::<Vec<_>>()
        );
        assert_eq!(snap.ring(Some(game)).node_count(), 10);
        let bad = [(RingMember::new(NodeId(0), "z"), &metas[0])];
        assert_eq!(snap.rebuild(bad), Err(super::RingError::InvalidNodeId));
        assert!(snap.is_empty());
        assert_eq!(snap.ring(Some(game)).point_count(), 0);
        assert_eq!(
            vec![0; 0],
            snap.ring(None).points().map(|p| p.0).collect::<Vec<u64>>()
        );
    }
}

/// Burst deferral: joins wait unhashed for the next settle; a settle merges a few pending
/// members one by one (one point set each) and rebuilds when more are pending than a build
/// costs merges; past `DEFER_AFTER` unread changes the points go stale (no hashing at all,
/// removals and metadata changes included); every settle ends with rings equal to an eager
/// set's; a change-read-change-read stream merges each change at its read.
#[test]
fn a_deferred_burst_hashes_nothing_until_read_and_settles_to_the_eager_rings() {
    let config = RingConfig {
        points_per_node: 80,
        mode: HashMode::LibatappMain,
    };
    let mut eager = RingSet::new(config);
    let mut lazy = RingSet::new(config);
    lazy.set_burst_deferral(true);
    let game = lazy.add_filter(kind_filter("game"));
    let eager_game = eager.add_filter(kind_filter("game"));
    let member = |i: u64| {
        (
            format!("m-{i}"),
            kind(["game", "gate", ""][(i % 3) as usize]),
        )
    };
    let same = |lazy: &RingSet, eager: &RingSet| {
        for (ours, theirs) in [(None, None), (Some(game), Some(eager_game))] {
            assert!(
                lazy.ring(ours).points().eq(eager.ring(theirs).points()),
                "{ours:?}"
            );
            assert_eq!(
                lazy.ring(ours).node_count(),
                eager.ring(theirs).node_count()
            );
        }
    };
    let insert_both = |lazy: &mut RingSet, eager: &mut RingSet, i: u64| {
        let (name, meta) = member(i);
        lazy.insert(RingMember::new(NodeId(i), &name), &meta)
            .unwrap();
        eager
            .insert(RingMember::new(NodeId(i), &name), &meta)
            .unwrap();
    };
    // 1. Twenty joins: nothing hashed until the settle, which rebuilds (20 pending > 20 / 8).
    let (sets0, murmur0) = (test_hooks::point_sets(), test_hooks::murmur_calls());
    for i in 1..=20 {
        insert_both(&mut lazy, &mut eager, i);
    }
    assert_eq!(
        (
            test_hooks::point_sets() - sets0,
            test_hooks::murmur_calls() - murmur0
        ),
        (20, 20 * 80),
        "only the eager set hashed"
    );
    assert!(!lazy.is_settled(), "the joins wait for a read");
    let murmur1 = test_hooks::murmur_calls();
    lazy.settle();
    assert!(lazy.is_settled());
    let settle_murmurs = test_hooks::murmur_calls() - murmur1;
    let names: Vec<(String, Metadata)> = (1..=20).map(member).collect();
    let mut fresh = RingSet::new(config);
    let build0 = test_hooks::murmur_calls();
    fresh
        .rebuild(
            (1..=20u64)
                .zip(&names)
                .map(|(i, (name, meta))| (RingMember::new(NodeId(i), name), meta)),
        )
        .unwrap();
    assert_eq!(
        (test_hooks::point_sets() - sets0, settle_murmurs),
        (20, test_hooks::murmur_calls() - build0),
        "the settle is one build (no merges)"
    );
    same(&lazy, &eager);
    // 2. Grow to 100 members (settled), then three joins, one of them renamed and one
    //    re-tagged while pending: the settle merges the three (3 × 8 <= 103), one point set
    //    each, and the pending renamed one is merged under its new name only.
    for i in 21..=100 {
        insert_both(&mut lazy, &mut eager, i);
    }
    lazy.settle();
    same(&lazy, &eager);
    for i in 101..=103 {
        insert_both(&mut lazy, &mut eager, i);
    }
    for set in [&mut lazy, &mut eager] {
        set.insert(RingMember::new(NodeId(102), "renamed-102"), &kind("gate"))
            .unwrap();
        set.update_metadata(NodeId(103), &kind("game"));
        set.remove(NodeId(101));
        set.remove(NodeId(5));
    }
    let sets1 = test_hooks::point_sets();
    lazy.settle();
    assert_eq!(
        test_hooks::point_sets() - sets1,
        2,
        "the two pending members still present are merged, one point set each"
    );
    same(&lazy, &eager);
    // 3. A burst past DEFER_AFTER changes: stale, and from then on nothing is hashed — the
    //    pending joins, removals and metadata changes alike.
    for i in 200..200 + u64::from(DEFER_AFTER) {
        let (name, meta) = member(i);
        lazy.insert(RingMember::new(NodeId(i), &name), &meta)
            .unwrap();
    }
    let (sets2, murmur2) = (test_hooks::point_sets(), test_hooks::murmur_calls());
    for i in 200 + u64::from(DEFER_AFTER)..400 {
        let (name, meta) = member(i);
        lazy.insert(RingMember::new(NodeId(i), &name), &meta)
            .unwrap();
    }
    lazy.remove(NodeId(7));
    lazy.update_metadata(NodeId(8), &kind("game"));
    assert_eq!(
        (test_hooks::point_sets(), test_hooks::murmur_calls()),
        (sets2, murmur2),
        "a stale burst hashes nothing"
    );
    assert!(!lazy.is_settled());
    for i in 200..400 {
        let (name, meta) = member(i);
        eager
            .insert(RingMember::new(NodeId(i), &name), &meta)
            .unwrap();
    }
    eager.remove(NodeId(7));
    eager.update_metadata(NodeId(8), &kind("game"));
    // Counters, members and round-robin orders stayed exact while stale.
    assert_eq!(lazy.ring_updates(), eager.ring_updates());
    assert_eq!(
        lazy.ring_updates_of(Some(game)),
        eager.ring_updates_of(Some(eager_game))
    );
    assert_eq!(lazy.len(), eager.len());
    assert!(
        lazy.round_robin_order(None)
            .ids()
            .eq(eager.round_robin_order(None).ids())
    );
    lazy.settle();
    assert!(lazy.is_settled());
    same(&lazy, &eager);
    // 4. Steady state: a read between changes merges each change at its read.
    for i in 500..520u64 {
        insert_both(&mut lazy, &mut eager, i);
        assert!(!lazy.is_settled());
        let before = test_hooks::point_sets();
        lazy.settle();
        assert_eq!(test_hooks::point_sets() - before, 1);
        assert!(lazy.is_settled());
    }
    same(&lazy, &eager);
}

/// Reading stale or unmerged points is a bug of the caller, caught loudly.
#[test]
#[should_panic(expected = "ring points read while unsettled")]
fn reading_stale_points_panics() {
    let mut set = RingSet::new(RingConfig::default());
    set.defer_after(0);
    let name = String::from("a");
    set.insert(RingMember::new(NodeId(1), &name), &Metadata::default())
        .unwrap();
    let _ = set.ring(None);
}

#[test]
fn names_through_rebuild_duplicates_and_empty_names() {
    let mut set = RingSet::new(RingConfig::fast());
    let m = Metadata::default();
    let members = [
        RingMember::new(NodeId(5), "a"),
        RingMember::new(NodeId(2), "b"),
        RingMember::new(NodeId(9), "a"),
        // A later duplicate id replaces the earlier member: 5 is "b" now.
        RingMember::new(NodeId(5), "b"),
        RingMember::new(NodeId(4), ""),
    ];
    set.rebuild(members.iter().map(|&mm| (mm, &m))).unwrap();
    assert_eq!(set.by_name("a"), Some(NodeId(9)));
    assert_eq!(set.by_name("b"), Some(NodeId(2)));
    assert_eq!(set.by_name(""), None);
    set.remove(NodeId(2));
    assert_eq!(set.by_name("b"), Some(NodeId(5)));
    set.insert(RingMember::new(NodeId(4), "a"), &m).unwrap();
    assert_eq!(set.by_name("a"), Some(NodeId(4)));
    set.insert(RingMember::new(NodeId(9), ""), &m).unwrap();
    assert_eq!(set.by_name("a"), Some(NodeId(4)));
    assert_eq!(set.by_name(""), None);
    // A failed rebuild empties the table.
    let bad = [RingMember::new(NodeId(0), "a")];
    assert!(set.rebuild(bad.iter().map(|&mm| (mm, &m))).is_err());
    assert_eq!(set.by_name("a"), None);
}

/// Under burst deferral a join's points wait for the settle: reading before it panics too.
#[test]
#[should_panic(expected = "ring points read while unsettled")]
fn reading_unmerged_points_panics() {
    let mut set = RingSet::new(RingConfig::default());
    set.set_burst_deferral(true);
    set.insert(RingMember::new(NodeId(1), "a"), &Metadata::default())
        .unwrap();
    let _ = set.ring(None);
}

/// A filter registered while joins are pending (and again while the points are stale) hashes
/// nothing; after the settle its ring equals an eager set's, point for point and in count.
#[test]
fn a_filter_added_before_a_settle_gets_the_pending_members_at_the_settle() {
    let config = RingConfig::default();
    let mut eager = RingSet::new(config);
    let mut lazy = RingSet::new(config);
    lazy.set_burst_deferral(true);
    let name = |i: u64| format!("n-{i}");
    let meta = |i: u64| kind(["game", "gate"][(i % 2) as usize]);
    for i in 1..=100u64 {
        for set in [&mut lazy, &mut eager] {
            set.insert(RingMember::new(NodeId(i), &name(i)), &meta(i))
                .unwrap();
        }
    }
    lazy.settle();
    // Four pending joins (4 × 8 <= 104: the settle merges), two of them games.
    for i in 101..=104u64 {
        for set in [&mut lazy, &mut eager] {
            set.insert(RingMember::new(NodeId(i), &name(i)), &meta(i))
                .unwrap();
        }
    }
    let sets0 = test_hooks::point_sets();
    let game = lazy.add_filter(kind_filter("game"));
    assert_eq!(
        test_hooks::point_sets(),
        sets0,
        "registering settles nothing"
    );
    assert!(!lazy.is_settled());
    let eager_game = eager.add_filter(kind_filter("game"));
    lazy.settle();
    assert_eq!(
        test_hooks::point_sets() - sets0,
        4,
        "the four pending joins, merged"
    );
    for (ours, theirs) in [(None, None), (Some(game), Some(eager_game))] {
        assert!(lazy.ring(ours).points().eq(eager.ring(theirs).points()));
        assert_eq!(
            lazy.ring(ours).node_count(),
            eager.ring(theirs).node_count()
        );
    }
    assert_eq!(lazy.ring(Some(game)).node_count(), 52);
    // Stale: a burst past DEFER_AFTER, then a new filter, then the settle's rebuild.
    for i in 200..200 + u64::from(DEFER_AFTER) + 5 {
        for set in [&mut lazy, &mut eager] {
            set.insert(RingMember::new(NodeId(i), &name(i)), &meta(i))
                .unwrap();
        }
    }
    let gate = lazy.add_filter(kind_filter("gate"));
    let eager_gate = eager.add_filter(kind_filter("gate"));
    lazy.settle();
    for (ours, theirs) in [
        (None, None),
        (Some(game), Some(eager_game)),
        (Some(gate), Some(eager_gate)),
    ] {
        assert!(lazy.ring(ours).points().eq(eager.ring(theirs).points()));
        assert_eq!(
            lazy.ring(ours).node_count(),
            eager.ring(theirs).node_count()
        );
    }
}
