//! Maglev tables: the paper's worked example, exact small tables, the balance bound, full
//! tables, and the disruption of one removal (its own slots and a bounded cascade).

use alloc::{vec, vec::Vec};

use proptest::prelude::*;

use super::*;

fn perm(id: u64, offset: u32, skip: u32) -> Permutation {
    Permutation {
        id: NodeId(id),
        offset,
        skip,
    }
}

/// `nodes` filled by `fill` in one go, into fresh buffers.
fn filled_by(fill: MaglevFill, size: u32, nodes: &[Permutation]) -> Vec<u32> {
    let (mut table, mut cursors, mut counts, mut active) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut buf = fill::Buffers {
        table: &mut table,
        cursors: &mut cursors,
        counts: &mut counts,
        active: &mut active,
    };
    let at = fill::start(size, nodes, &mut buf).expect("some nodes");
    let left = match fill {
        MaglevFill::Balanced => fill::balanced(size, nodes, &mut buf, at, None),
        MaglevFill::Stable => fill::stable(size, nodes, &mut buf, at, None),
    };
    assert_eq!(left, None);
    table
}

fn filled(size: u32, nodes: &[Permutation]) -> Vec<u32> {
    filled_by(MaglevFill::Balanced, size, nodes)
}

/// Eisenbud et al. 2016, Table 1: M = 7, B0 (offset 3, skip 4), B1 (0, 2), B2 (3, 1). Round
/// 1: B0 takes 3, B1 takes 0, B2 finds 3 taken and takes 4; round 2: B0 tries 0 and 4, takes
/// 1, B1 takes 2, B2 takes 5; round 3: B0 tries 5 and 2, takes 6 — full.
#[test]
fn the_papers_example_table() {
    let nodes = [perm(1, 3, 4), perm(2, 0, 2), perm(3, 3, 1)];
    assert_eq!(filled(7, &nodes), vec![1, 0, 1, 0, 2, 2, 0]);
    // Without B1 (the paper's Table 1, right): B0 3, B2 4; B0 0, B2 5; B0 1, B2 6; B0 2.
    let nodes = [perm(1, 3, 4), perm(3, 3, 1)];
    assert_eq!(filled(7, &nodes), vec![0, 0, 0, 0, 1, 1, 1]);
}

/// A hashed build: each node's offset and skip are the halves of its id's key hash, and the
/// table follows from them by the same turns (M = 13, three nodes).
#[test]
fn a_hashed_table_follows_from_the_id_hashes() {
    let mut table = MaglevTable::new(13).unwrap();
    table.build([NodeId(30), NodeId(10), NodeId(20), NodeId(10), NodeId(0)]);
    let perms: Vec<(u64, u32, u32)> = table
        .nodes
        .iter()
        .map(|p| (p.id.0, p.offset, p.skip))
        .collect();
    let expected: Vec<(u64, u32, u32)> = [10, 20, 30]
        .into_iter()
        .map(|id| {
            let h = key_hash_u64(id);
            (id, (h.hi % 13) as u32, (h.lo % 12) as u32 + 1)
        })
        .collect();
    assert_eq!(perms, expected);
    // 10 tries 12, 5, 11, 4, 10, 3, 9, …; 20 tries 6, 11, 3, 8, 0, …; 30 tries 0, 7, 1, 8, 2, ….
    // Rounds: 12/6/0, 5/11/7, 4/3/1 (10 finds 11 taken), 10/8/2 (30 finds 8 taken), then 10
    // takes 9 (3 is taken) and the table is full.
    assert_eq!(perms, vec![(10, 12, 6), (20, 6, 5), (30, 0, 7)]);
    let nodes: Vec<Permutation> = expected.iter().map(|&(i, o, s)| perm(i, o, s)).collect();
    let slots: Vec<u64> = table.slots().map(|id| id.0).collect();
    let by_hand: Vec<u64> = filled(13, &nodes)
        .into_iter()
        .map(|i| expected[i as usize].0)
        .collect();
    assert_eq!(slots, by_hand);
    assert_eq!(
        slots,
        vec![30, 30, 30, 20, 10, 10, 20, 30, 20, 10, 10, 20, 10]
    );
}

#[test]
fn sizes_must_be_primes_within_the_cap() {
    for size in [2, 3, 7, 13, 65_537, 1_000_003] {
        assert!(MaglevTable::new(size).is_ok(), "{size}");
    }
    for size in [0, 1, 4, 9, 65_536, 1 << 24, (1 << 24) + 43] {
        assert_eq!(
            MaglevTable::new(size).unwrap_err(),
            MaglevError::NotPrime { size },
            "{size}"
        );
    }
}

#[test]
fn an_empty_table_finds_nothing_and_a_rebuild_reuses_permutations() {
    let mut table = MaglevTable::new(7).unwrap();
    assert_eq!(table.lookup(b"k"), None);
    table.build([NodeId(5)]);
    assert_eq!(table.lookup(b"k"), Some(NodeId(5)));
    assert_eq!(table.slots().count(), 7);
    table.build([]);
    assert_eq!((table.lookup(b"k"), table.slots().count()), (None, 0));
    table.build([NodeId(9), NodeId(5)]);
    let kept = table.nodes.clone();
    table.build([NodeId(5), NodeId(9), NodeId(7)]);
    assert_eq!(table.nodes[0], kept[0]);
    assert_eq!(table.nodes[2], kept[1]);
}

#[test]
fn lookup_reads_the_slot_of_the_keys_high_hash() {
    let mut table = MaglevTable::new(MaglevTable::DEFAULT_SIZE).unwrap();
    table.build((1..=10).map(NodeId));
    let slots: Vec<NodeId> = table.slots().collect();
    for key in [&b"a"[..], b"user:42", b"room-7"] {
        let slot = (u128::from(key_hash(key).hi) * 65_537) >> 64;
        assert_eq!(table.lookup(key), Some(slots[slot as usize]));
    }
}

fn counts(table: &MaglevTable) -> Vec<usize> {
    let mut by_id = alloc::collections::BTreeMap::new();
    for id in table.slots() {
        *by_id.entry(id).or_insert(0) += 1;
    }
    by_id.into_values().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every slot is filled and every node owns ⌊M/N⌋ or ⌈M/N⌉ slots: each claims one per
    /// round until the table is full.
    #[test]
    fn every_slot_is_filled_and_balanced(
        ids in proptest::collection::btree_set(1u64..1_000_000, 1..40),
        size in prop::sample::select(vec![13u32, 101, 1_009, 10_007]),
    ) {
        let mut table = MaglevTable::new(size).unwrap();
        table.build(ids.iter().copied().map(NodeId));
        prop_assert_eq!(table.slots().count(), size as usize);
        let n = ids.len();
        let owned = counts(&table);
        if n <= size as usize {
            prop_assert_eq!(owned.len(), n);
            let low = size as usize / n;
            prop_assert!(owned.iter().all(|&c| c == low || c == low + 1), "{:?}", owned);
        }
    }

}

/// Slots of the tables in the removal test (a prime, as Maglev's table sizes are).
const REMOVAL_SLOTS: u32 = 10_007;

proptest! {
    // The same 48 node sets in every run: the bound below is a measured tail, not a law, and
    // a suite must not fail on the draw (a random run found a set at 3.0 × against the
    // earlier bound of twice the ring's moved share).
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6d61_676c_6576),
        ..ProptestConfig::with_cases(48)
    })]

    /// Removing one of N nodes moves exactly its own slots to survivors, and with them a
    /// cascade of others' (the turns shift, §7 of the design): at most 4 × its own slots in
    /// all. Measured over 3,000 random sets of 8 to 59 nodes in 10,007 slots: median 1.40 ×,
    /// 99th percentile 1.89 ×, worst 2.87 × (and 3.0 × for the set kept in the regression
    /// file). A key moves exactly when its slot's owner changed.
    #[test]
    fn one_removal_moves_its_slots_and_a_bounded_cascade(
        ids in proptest::collection::btree_set(1u64..1_000_000, 8..60),
        pick in any::<prop::sample::Index>(),
    ) {
        let ids: Vec<u64> = ids.into_iter().collect();
        let gone = ids[pick.index(ids.len())];
        let mut before = MaglevTable::new(REMOVAL_SLOTS).unwrap();
        before.build(ids.iter().copied().map(NodeId));
        let mut after = before.clone();
        after.build(ids.iter().copied().filter(|&id| id != gone).map(NodeId));
        // Keys first: the lookups fill the rebuilt table lazily, as a selector's do.
        let moved_keys: Vec<u64> = (0..20_000u64)
            .filter(|k| before.lookup(&k.to_le_bytes()) != after.lookup(&k.to_le_bytes()))
            .collect();
        let (old, new): (Vec<NodeId>, Vec<NodeId>) = (before.slots().collect(), after.slots().collect());
        let own = old.iter().filter(|s| s.0 == gone).count();
        let moved: Vec<bool> = old.iter().zip(&new).map(|(a, b)| a != b).collect();
        prop_assert!(new.iter().all(|s| s.0 != gone));
        prop_assert!(old.iter().zip(&moved).all(|(s, &m)| s.0 != gone || m));
        let moved_slots = moved.iter().filter(|&&m| m).count();
        prop_assert!(moved_slots <= 4 * own, "moved {} slots, owned {}", moved_slots, own);
        let by_slot: Vec<u64> = (0..20_000u64)
            .filter(|k| {
                let slot = (u128::from(key_hash(&k.to_le_bytes()).hi) * u128::from(REMOVAL_SLOTS)) >> 64;
                moved[slot as usize]
            })
            .collect();
        prop_assert_eq!(moved_keys, by_slot);
    }
}

fn stable_filled(size: u32, nodes: &[Permutation]) -> Vec<u32> {
    filled_by(MaglevFill::Stable, size, nodes)
}

/// The paper's three permutations filled stably (M = 7, cap ⌈7/3⌉ + 1 = 4). B0 prefers 3, 0,
/// 4, 1, …; B1 0, 2, 4, 6, …; B2 3, 4, 5, …. Round 0: B0 takes 3, B1 takes 0, B2 offers 3
/// (taken). Round 1: B0 offers 0 (taken), B1 takes 2, B2 takes 4. Round 2: B0 and B1 offer 4
/// (taken), B2 takes 5. Round 3: B0 takes 1, B1 takes 6 — full.
#[test]
fn the_papers_permutations_filled_stably() {
    let nodes = [perm(1, 3, 4), perm(2, 0, 2), perm(3, 3, 1)];
    assert_eq!(stable_filled(7, &nodes), vec![1, 0, 1, 0, 2, 2, 1]);
}

/// A naive model of the stable fill: slot `offset + j × skip` is offered in round `j` (by
/// multiplication, not by stepping), nodes in order, each until it owns the cap.
fn stable_model(size: u32, nodes: &[Permutation]) -> Vec<u32> {
    let mut table = vec![EMPTY; size as usize];
    let cap = size.div_ceil(nodes.len() as u32) + 1;
    let mut owned = vec![0u32; nodes.len()];
    for j in 0..u64::from(size) {
        for (i, p) in nodes.iter().enumerate() {
            let slot = ((u64::from(p.offset) + j * u64::from(p.skip)) % u64::from(size)) as usize;
            if owned[i] < cap && table[slot] == EMPTY {
                table[slot] = i as u32;
                owned[i] += 1;
            }
        }
    }
    table
}

/// One removal of 1,000 nodes (M = 65,537, the default): the balanced fill moves 6.7 × the
/// removed node's share of slots, the stable fill 1.7 × — counted exactly, slot by slot,
/// over eight removals.
#[test]
fn the_stable_fill_moves_under_twice_the_removed_share() {
    let ids: Vec<NodeId> = (1..=1_000u64).map(|i| NodeId(i * 7_919 + 13)).collect();
    let moved = |fill: MaglevFill| {
        let mut before = MaglevTable::default_size().with_fill(fill);
        before.build(ids.iter().copied());
        let mut total = 0usize;
        for k in 0..8 {
            let gone = ids[k * 125];
            let mut after = before.clone();
            after.build(ids.iter().copied().filter(|&id| id != gone));
            total += before
                .slots()
                .zip(after.slots())
                .filter(|(b, a)| b != a)
                .count();
        }
        // Removed share: 8 × 65,537 / 1,000 slots.
        total as f64 / (8.0 * 65.537)
    };
    let (balanced, stable) = (moved(MaglevFill::Balanced), moved(MaglevFill::Stable));
    assert!(balanced > 5.0, "balanced {balanced}");
    assert!(stable < 2.0, "stable {stable}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The stable fill equals its naive model, fills every slot, caps every node at
    /// ⌈M/N⌉ + 1 slots, and does not depend on the order the ids come in.
    #[test]
    fn the_stable_fill_is_its_model_full_and_capped(
        ids in proptest::collection::btree_set(1u64..1_000_000, 1..40),
        size in prop::sample::select(vec![13u32, 101, 1_009]),
    ) {
        let mut table = MaglevTable::new(size).unwrap().with_fill(MaglevFill::Stable);
        let mut reversed = table.clone();
        table.build(ids.iter().copied().map(NodeId));
        reversed.build(ids.iter().rev().copied().map(NodeId));
        prop_assert_eq!(table.slots().collect::<Vec<_>>(), reversed.slots().collect::<Vec<_>>());
        prop_assert_eq!(stable_filled(size, &table.nodes), stable_model(size, &table.nodes));
        prop_assert_eq!(table.slots().count(), size as usize);
        let cap = size.div_ceil(ids.len() as u32) as usize + 1;
        prop_assert!(counts(&table).iter().all(|&c| c <= cap), "{:?}", counts(&table));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A lazy build answers every lookup as the full build does, whichever slots are looked
    /// up first, and once filled through is the full table, for both fills.
    #[test]
    fn a_lazy_build_answers_as_the_full_build(
        ids in proptest::collection::btree_set(1u64..1_000_000, 1..40),
        size in prop::sample::select(vec![13u32, 101, 1_009]),
        keys in proptest::collection::vec(any::<u64>(), 1..20),
        stable in any::<bool>(),
    ) {
        let fill = if stable { MaglevFill::Stable } else { MaglevFill::Balanced };
        let mut full = MaglevTable::new(size).unwrap().with_fill(fill);
        full.build(ids.iter().copied().map(NodeId));
        let mut lazy = MaglevTable::new(size).unwrap().with_fill(fill);
        // A previous build's leftovers must not matter.
        lazy.build([NodeId(3), NodeId(77)]);
        lazy.start_build(ids.iter().copied().map(NodeId));
        for key in &keys {
            let hash = key_hash(&key.to_le_bytes());
            prop_assert_eq!(lazy.lookup_filling(hash), full.lookup_hash(hash));
        }
        lazy.fill_until(None);
        prop_assert_eq!(lazy.slots().collect::<Vec<_>>(), full.slots().collect::<Vec<_>>());
    }
}
