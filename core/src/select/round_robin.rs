//! The selector's state: one round-robin cursor per ring, and the Maglev tables, settings and
//! counters of the other modes.

use alloc::vec::Vec;

use super::{SelectConfig, SelectStats, maglev::CachedMaglev, maglev::SharedMaglev};
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
    /// Maglev table per ring, indexed as `cursors`; built on first use, rebuilt when the
    /// ring's update count moves.
    pub(super) maglev: Vec<Option<CachedMaglev>>,
    /// Table size and load bound.
    pub(super) config: SelectConfig,
    /// Counters since creation.
    pub(super) stats: SelectStats,
    /// A bounded-load pick's successor walk (reused).
    pub(super) successors: Vec<NodeId>,
    /// Outlier ejection's per-server state (`outlier.rs`).
    pub(crate) outliers: super::Outliers,
    /// Maglev tables lent by the host for a call ([`Selector::swap_shared_maglev`]).
    pub(super) shared_maglev: Option<SharedMaglev>,
}

impl Selector {
    /// A selector with every cursor at the start of its order and the default
    /// [`SelectConfig`].
    #[must_use]
    pub fn new() -> Selector {
        Selector::default()
    }

    /// A selector with `config`'s Maglev table size and load bound.
    #[must_use]
    pub fn with_config(config: SelectConfig) -> Selector {
        Selector {
            config,
            ..Selector::default()
        }
    }

    /// The counters since creation (bounded-load spills, Maglev builds).
    #[must_use]
    pub const fn stats(&self) -> SelectStats {
        self.stats
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
        let slot = ring_slot(set, filter);
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

/// The index of a ring's state in the selector's per-ring tables: 0 for the default ring
/// (and wildcard filters), `i + 1` for the filter with index `i`.
pub(super) fn ring_slot(set: &RingSet, filter: Option<FilterId>) -> usize {
    set.canonical(filter).map_or(0, |f| f.index() as usize + 1)
}
