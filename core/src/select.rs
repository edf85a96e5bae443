//! Target selection: which node a message goes to, given the rings of a discovery set.
//!
//! A [`Selector`] turns a [`Target`] into a node id using a [`RingSet`]: by id, by name, by
//! consistent hash in a filter's ring, round robin over a filter's members, or a random member
//! drawn from the caller's seeded [`Rng`]. The only state it keeps is one round-robin cursor
//! per ring; everything else is a query on the set.
//!
//! Round robin walks libatapp's `get_sorted_nodes` order (pod index, then id). Where libatapp
//! resets its cursor to 0 whenever the ring is rebuilt, a cursor here remembers the last node
//! it returned: after a membership change it resumes at the first member ordered after that
//! node, so adding or removing other members neither repeats nor skips anyone.

use alloc::vec::Vec;

use crate::{
    ids::NodeId,
    ring::{FilterId, RingSet},
    rng::Rng,
};

/// Where to send: a node named directly, or a selection rule over a (filtered) ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target<'a> {
    /// This node, if it is a member.
    Id(NodeId),
    /// The member with this name.
    Name(&'a str),
    /// The owner of `key` in the filter's ring (`None`: the default ring). Integer keys are
    /// passed as their 8 little-endian bytes, as libatapp hashes them.
    Hash {
        /// Ring to search.
        filter: Option<FilterId>,
        /// Key bytes.
        key: &'a [u8],
    },
    /// The next member in round-robin order of the filter's ring.
    RoundRobin {
        /// Ring to cycle through.
        filter: Option<FilterId>,
    },
    /// A uniformly random member of the filter's ring.
    Random {
        /// Ring to draw from.
        filter: Option<FilterId>,
    },
}

/// A round-robin position: the last node returned and where to continue while the set is
/// unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cursor {
    last: Option<(i64, NodeId)>,
    next: usize,
    generation: u64,
}

/// Resolves [`Target`]s against a [`RingSet`]; keeps one round-robin cursor per ring.
///
/// Use one selector per set: its cursors are keyed by the set's filter ids.
///
/// ```
/// use switchboard_core::{
///     discovery::{Filter, Metadata},
///     ids::NodeId,
///     ring::{RingConfig, RingMember, RingSet},
///     rng::Rng,
///     select::{Selector, Target},
/// };
///
/// let game = Metadata { kind: "game".into(), ..Metadata::default() };
/// let mut set = RingSet::new(RingConfig::default());
/// let games = set.add_filter(Filter(game.clone()));
/// set.insert(RingMember::new(NodeId(7), "game-7").with_pod_index(1), &game)?;
/// set.insert(RingMember::new(NodeId(9), "game-9").with_pod_index(0), &game)?;
/// set.insert(RingMember::new(NodeId(3), "gate-3"), &Metadata::default())?;
///
/// let (mut sel, mut rng) = (Selector::new(), Rng::new(1));
/// let rr = Target::RoundRobin { filter: Some(games) };
/// // Pod index first: 9 (pod 0), then 7 (pod 1), then around again.
/// assert_eq!(sel.select(&set, rr, &mut rng), Some(NodeId(9)));
/// assert_eq!(sel.select(&set, rr, &mut rng), Some(NodeId(7)));
/// assert_eq!(sel.select(&set, rr, &mut rng), Some(NodeId(9)));
/// let owner = sel.select(&set, Target::Hash { filter: Some(games), key: b"room-1" }, &mut rng);
/// assert!(owner == Some(NodeId(7)) || owner == Some(NodeId(9)));
/// # Ok::<(), switchboard_core::ring::RingError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Selector {
    /// Cursor per ring: index 0 is the default ring, `i + 1` the filter with index `i`.
    cursors: Vec<Cursor>,
}

impl Selector {
    /// A selector with every cursor at the start of its order.
    #[must_use]
    pub fn new() -> Selector {
        Selector::default()
    }

    /// Resolves `target`; `None` when no member qualifies. Only `RoundRobin` changes the
    /// selector, only `Random` draws from `rng`.
    pub fn select(&mut self, set: &RingSet, target: Target<'_>, rng: &mut Rng) -> Option<NodeId> {
        match target {
            Target::Id(id) => by_id(set, id),
            Target::Name(name) => by_name(set, name),
            Target::Hash { filter, key } => by_hash(set, filter, key),
            Target::RoundRobin { filter } => self.round_robin(set, filter),
            Target::Random { filter } => random(set, filter, rng),
        }
    }

    /// The next member of the filter's ring in round-robin order (pod index, then id),
    /// wrapping at the end. After a membership change anywhere in the set, continues with the
    /// first member ordered after the last one returned (not from the start).
    pub fn round_robin(&mut self, set: &RingSet, filter: Option<FilterId>) -> Option<NodeId> {
        let order = set.round_robin_order(filter);
        if order.is_empty() {
            return None;
        }
        let slot = set.canonical(filter).map_or(0, |f| f.index() as usize + 1);
        if self.cursors.len() <= slot {
            self.cursors.resize(slot + 1, Cursor::default());
        }
        let cursor = &mut self.cursors[slot];
        let mut i = if cursor.generation == set.generation() && cursor.last.is_some() {
            cursor.next
        } else {
            cursor
                .last
                .map_or(0, |(pod, id)| order.position_after(pod, id))
        };
        if i >= order.len() {
            i = 0;
        }
        let (pod, id) = order.get(i)?;
        *cursor = Cursor {
            last: Some((pod, id)),
            next: i + 1,
            generation: set.generation(),
        };
        Some(id)
    }
}

/// `id` if it is a member of the set.
#[must_use]
pub fn by_id(set: &RingSet, id: NodeId) -> Option<NodeId> {
    set.contains(id).then_some(id)
}

/// The member named `name` (smallest id if several share it).
#[must_use]
pub fn by_name(set: &RingSet, name: &str) -> Option<NodeId> {
    set.by_name(name)
}

/// The owner of `key` in the filter's ring.
#[must_use]
pub fn by_hash(set: &RingSet, filter: Option<FilterId>, key: &[u8]) -> Option<NodeId> {
    set.ring(filter).lookup(key)
}

/// A uniformly random member of the filter's ring (one `rng.below` draw).
pub fn random(set: &RingSet, filter: Option<FilterId>, rng: &mut Rng) -> Option<NodeId> {
    let order = set.round_robin_order(filter);
    if order.is_empty() {
        return None;
    }
    let len = u64::try_from(order.len()).expect("member count fits u64");
    let i = usize::try_from(rng.below(len)).expect("below(len) < len fits usize");
    order.get(i).map(|(_, id)| id)
}

#[cfg(test)]
mod tests {
    use alloc::{format, vec, vec::Vec};

    use super::*;
    use crate::{
        discovery::{Filter, Metadata},
        ring::{RingConfig, RingMember},
    };

    fn meta(kind: &str) -> Metadata {
        Metadata {
            kind: kind.into(),
            ..Metadata::default()
        }
    }

    /// Members (id, pod): game nodes 10 (pod 2), 11 (pod 0), 12 (pod 1), 13 (pod 0); gate 20.
    fn set() -> (RingSet, FilterId) {
        let mut set = RingSet::new(RingConfig::fast());
        let game = set.add_filter(Filter(meta("game")));
        for (id, pod, kind) in [
            (10, 2, "game"),
            (11, 0, "game"),
            (12, 1, "game"),
            (13, 0, "game"),
            (20, 0, "gate"),
        ] {
            let name = format!("n{id}");
            set.insert(
                RingMember::new(NodeId(id), &name).with_pod_index(pod),
                &meta(kind),
            )
            .unwrap();
        }
        (set, game)
    }

    fn picks(sel: &mut Selector, set: &RingSet, filter: Option<FilterId>, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| sel.round_robin(set, filter).unwrap().0)
            .collect()
    }

    #[test]
    fn round_robin_follows_pod_index_then_id_and_wraps() {
        let (set, game) = set();
        let mut sel = Selector::new();
        assert_eq!(
            picks(&mut sel, &set, Some(game), 9),
            vec![11, 13, 12, 10, 11, 13, 12, 10, 11]
        );
        // The default ring has its own cursor.
        assert_eq!(picks(&mut sel, &set, None, 6), vec![11, 13, 20, 12, 10, 11]);
        assert_eq!(picks(&mut sel, &set, Some(game), 1), vec![13]);
    }

    #[test]
    fn round_robin_resumes_after_the_last_pick_when_membership_changes() {
        let (mut set, game) = set();
        let mut sel = Selector::new();
        assert_eq!(picks(&mut sel, &set, Some(game), 2), vec![11, 13]);
        // The next node (12) leaves: continue with the one after it, not from the start.
        set.remove(NodeId(12));
        assert_eq!(picks(&mut sel, &set, Some(game), 1), vec![10]);
        // A node joining right after the last pick is the next one.
        set.insert(
            RingMember::new(NodeId(14), "n14").with_pod_index(2),
            &meta("game"),
        )
        .unwrap();
        assert_eq!(picks(&mut sel, &set, Some(game), 4), vec![14, 11, 13, 10]);
        // The last-picked node itself leaving is fine too.
        set.remove(NodeId(10));
        assert_eq!(picks(&mut sel, &set, Some(game), 3), vec![14, 11, 13]);
        // An emptied ring yields nothing; refilled, it starts after the remembered node.
        for id in [11, 13, 14] {
            set.remove(NodeId(id));
        }
        assert_eq!(sel.round_robin(&set, Some(game)), None);
        set.insert(RingMember::new(NodeId(1), "n1"), &meta("game"))
            .unwrap();
        assert_eq!(picks(&mut sel, &set, Some(game), 2), vec![1, 1]);
    }

    #[test]
    fn random_covers_every_member_and_is_fixed_by_the_seed() {
        let (set, game) = set();
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..400)
                .map(|_| random(&set, Some(game), &mut rng).unwrap().0)
                .collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert_ne!(a, draw(8));
        for id in [10, 11, 12, 13] {
            let n = a.iter().filter(|&&x| x == id).count();
            assert!((60..=140).contains(&n), "node {id} drawn {n} times of 400");
        }
        assert!(!a.contains(&20));
        let empty = RingSet::new(RingConfig::fast());
        assert_eq!(random(&empty, None, &mut Rng::new(1)), None);
    }

    #[test]
    fn select_dispatches_every_target_kind() {
        let (set, game) = set();
        let mut sel = Selector::new();
        let mut rng = Rng::new(3);
        assert_eq!(
            sel.select(&set, Target::Id(NodeId(20)), &mut rng),
            Some(NodeId(20))
        );
        assert_eq!(sel.select(&set, Target::Id(NodeId(99)), &mut rng), None);
        assert_eq!(
            sel.select(&set, Target::Name("n12"), &mut rng),
            Some(NodeId(12))
        );
        assert_eq!(sel.select(&set, Target::Name("nope"), &mut rng), None);
        let key = 42u64.to_le_bytes();
        let hashed = sel.select(
            &set,
            Target::Hash {
                filter: Some(game),
                key: &key,
            },
            &mut rng,
        );
        assert_eq!(hashed, set.ring(Some(game)).lookup_u64(42));
        assert_ne!(hashed, Some(NodeId(20)));
        assert_eq!(
            sel.select(
                &set,
                Target::Hash {
                    filter: None,
                    key: &key
                },
                &mut rng
            ),
            set.ring(None).lookup_u64(42)
        );
        assert_eq!(
            sel.select(&set, Target::RoundRobin { filter: Some(game) }, &mut rng),
            Some(NodeId(11))
        );
        let r = sel
            .select(&set, Target::Random { filter: Some(game) }, &mut rng)
            .unwrap();
        assert!([10, 11, 12, 13].contains(&r.0));
    }

    #[test]
    fn wildcard_filter_shares_the_default_cursor() {
        let (mut set, _) = set();
        let wild = set.add_filter(Filter::any());
        let mut sel = Selector::new();
        assert_eq!(picks(&mut sel, &set, None, 2), vec![11, 13]);
        assert_eq!(picks(&mut sel, &set, Some(wild), 2), vec![20, 12]);
        assert_eq!(picks(&mut sel, &set, None, 1), vec![10]);
    }

    mod prop {
        use alloc::{boxed::Box, collections::BTreeMap, format, vec::Vec};

        use proptest::{prelude::*, test_runner::FileFailurePersistence};

        use super::*;

        #[derive(Clone, Debug)]
        enum Op {
            Put { id: u64, pod: i64, game: bool },
            Remove { id: u64 },
            Pick { filtered: bool },
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                2 => (1u64..=8, -1i64..=2, any::<bool>())
                    .prop_map(|(id, pod, game)| Op::Put { id, pod, game }),
                1 => (1u64..=8).prop_map(|id| Op::Remove { id }),
                4 => any::<bool>().prop_map(|filtered| Op::Pick { filtered }),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
                    "../proptest-regressions/select_round_robin.txt",
                ))),
                cases: 128,
                ..ProptestConfig::default()
            })]
            /// Every pick is the first member ordered after the previous pick of that ring
            /// (wrapping), whatever changed in between.
            #[test]
            fn round_robin_picks_the_member_after_the_last_one(
                ops in proptest::collection::vec(op(), 1..60)
            ) {
                let mut set = RingSet::new(RingConfig { points_per_node: 2, ..RingConfig::fast() });
                let game = set.add_filter(Filter(meta("game")));
                let mut sel = Selector::new();
                let mut model: BTreeMap<u64, (i64, bool)> = BTreeMap::new();
                let mut last: [Option<(i64, NodeId)>; 2] = [None, None];
                for op in ops {
                    match op {
                        Op::Put { id, pod, game: g } => {
                            let name = format!("n{id}");
                            let m = meta(if g { "game" } else { "" });
                            set.insert(RingMember::new(NodeId(id), &name).with_pod_index(pod), &m)
                                .unwrap();
                            model.insert(id, (pod, g));
                        }
                        Op::Remove { id } => {
                            set.remove(NodeId(id));
                            model.remove(&id);
                        }
                        Op::Pick { filtered } => {
                            let mut order: Vec<(i64, NodeId)> = model
                                .iter()
                                .filter(|(_, m)| !filtered || m.1)
                                .map(|(&id, m)| (m.0, NodeId(id)))
                                .collect();
                            order.sort_unstable();
                            let l = &mut last[usize::from(filtered)];
                            let expected = l
                                .and_then(|prev| order.iter().find(|&&m| m > prev))
                                .or(order.first())
                                .copied();
                            let got = sel.round_robin(&set, filtered.then_some(game));
                            prop_assert_eq!(got, expected.map(|e| e.1));
                            if expected.is_some() {
                                *l = expected;
                            }
                        }
                    }
                }
            }
        }
    }
}
