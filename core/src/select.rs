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
