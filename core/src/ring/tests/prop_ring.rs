//! Property tests of one ring against the reference (a sorted `Vec` of full positions and a
//! binary search): for random memberships built at once or changed node by node, and random
//! keys and keys on points, every lookup and search equals the reference's, also when the
//! stored halves (the top 32 bits a point keeps) or whole positions collide.

use alloc::{string::String, vec::Vec};

use proptest::prelude::*;

use super::{
    Ring, RingConfig, RingMember, prop_set::config, reference::NaiveRing,
    ring::assert_matches_naive,
};
use crate::{
    hash::{HashMode, test_hooks},
    ids::NodeId,
};

/// Position masks: none; 32 stored halves but distinct low halves (runs of equal stored halves
/// everywhere, ordered by the recomputed low halves); 32 whole positions (ties on the full
/// position, ordered by `h2` and node id).
fn masks() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(u64::MAX),
        2 => Just(0xf800_0000_ffff_ffffu64),
        1 => Just(0xf800_0000_0000_0000u64),
    ]
}

fn modes() -> impl Strategy<Value = HashMode> {
    prop_oneof![
        Just(HashMode::Fast),
        Just(HashMode::LibatappMain),
        Just(HashMode::LibatappV012),
    ]
}

/// Builds `members` at once and node by node (in the order `order` gives), checks both
/// against the reference, then removes every third node from the incremental ring and checks
/// again.
fn check(config: RingConfig, members: &[(NodeId, String)], order: &[usize], seed: u64) {
    let mut built = Ring::new(config);
    built
        .build(members.iter().map(|(id, n)| RingMember::new(*id, n)))
        .unwrap();
    assert_matches_naive(&built, &NaiveRing::new(config, members), seed);
    let mut inc = Ring::new(config);
    for &i in order {
        let (id, name) = &members[i];
        inc.insert(RingMember::new(*id, name)).unwrap();
    }
    assert_matches_naive(&inc, &NaiveRing::new(config, members), seed + 1);
    let mut rest = Vec::new();
    for (i, (id, name)) in members.iter().enumerate() {
        if i % 3 == 0 {
            assert!(inc.remove(*id));
        } else {
            rest.push((*id, name.clone()));
        }
    }
    assert_matches_naive(&inc, &NaiveRing::new(config, &rest), seed + 2);
}

proptest! {
    #![proptest_config(config("ring_lookup_reference", 24))]
    #[test]
    fn ring_lookups_equal_a_sorted_vec_binary_search(
        // Past 32 nodes, a removal looks the node's points up instead of scanning the ring
        // (kept to few points per node there, so a case stays short).
        (nodes, ppn) in prop_oneof![
            (1usize..12, prop_oneof![Just(1u32), Just(4), Just(80)]),
            (33usize..48, prop_oneof![Just(1u32), Just(4)]),
        ],
        mode in modes(),
        mask in masks(),
        shuffle in any::<u64>(),
        seed in any::<u64>(),
    ) {
        let members: Vec<(NodeId, String)> = (1..=nodes as u64)
            .map(|i| (NodeId(i * 7 + (seed % 5)), alloc::format!("n-{seed:x}-{i}")))
            .collect();
        let mut order: Vec<usize> = (0..nodes).collect();
        let mut s = shuffle;
        for i in (1..nodes).rev() {
            s = crate::rng::mix64(s);
            order.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let config = RingConfig { points_per_node: ppn, mode };
        test_hooks::with_position_mask(mask, || check(config, &members, &order, seed));
    }
}
