//! The selector's state: one round-robin cursor per ring.

use alloc::vec::Vec;

use crate::{
    ids::NodeId,
    ring::{FilterId, RingSet},
};

/// A round-robin position: the last node returned and where to continue while the set is
/// unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Cursor {
    last: Option<(i64, NodeId)>,
    next: usize,
    generation: u64,
}

/// The per-ring selection state [`pick`](Selector::pick) keeps; one selector per ring set
/// (its cursors are keyed by the set's filter ids).
///
/// ```
/// use switchboard_core::{
///     discovery::{Filter, Metadata},
///     ids::NodeId,
///     ring::{RingConfig, RingMember, RingSet},
///     rng::Rng,
///     select::{Among, Select, Selector},
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
/// let among = Among { rings: &set, filter: Some(games) };
/// let mut pick = |select: Select| sel.pick(&select, among, &mut rng, |_| 0, &[]);
/// // Pod index first: 9 (pod 0), then 7 (pod 1), then around again.
/// assert_eq!(pick(Select::RoundRobin), Some(NodeId(9)));
/// assert_eq!(pick(Select::RoundRobin), Some(NodeId(7)));
/// assert_eq!(pick(Select::RoundRobin), Some(NodeId(9)));
/// let owner = pick(Select::Hash("room-1".into()));
/// assert!(owner == Some(NodeId(7)) || owner == Some(NodeId(9)));
/// assert_eq!(pick(Select::Name("gate-3".into())), None); // not a game node
/// # Ok::<(), switchboard_core::ring::RingError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Selector {
    /// Cursor per ring: index 0 is the default ring, `i + 1` the filter with index `i`.
    cursors: Vec<Cursor>,
    /// Outlier ejection's per-server state (`outlier.rs`).
    pub(crate) outliers: super::Outliers,
}

impl Selector {
    /// A selector with every cursor at the start of its order.
    #[must_use]
    pub fn new() -> Selector {
        Selector::default()
    }

    /// The next member of the filter's ring in round-robin order (pod index, then id),
    /// wrapping at the end. After a membership change anywhere in the set, continues with the
    /// first member ordered after the last one returned (not from the start).
    pub(super) fn round_robin(
        &mut self,
        set: &RingSet,
        filter: Option<FilterId>,
    ) -> Option<NodeId> {
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
