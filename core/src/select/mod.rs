//! Selection: which node a message or a call goes to — one vocabulary ([`Select`]) and one
//! dispatcher ([`Selector::pick`]) for both (docs/ARCHITECTURE.md §7).
//!
//! A pick is made over *candidates* ([`Among`]): the discovery set's rings and, optionally, a
//! filter ring — the nodes a filtered send names, or the servers of a call's method. With no
//! filter the candidates are every node with an id. The modes:
//!
//! - [`Select::Node`] — this node. Unfiltered, it is taken as given (a message may go to a
//!   node no registry names yet); filtered, it must be a member matching the filter.
//! - [`Select::Name`] — the member holding this name in discovery (and matching the filter).
//! - [`Select::Hash`] — the owner of the key on the candidates' consistent-hash ring: the same
//!   key goes to the same node while membership holds.
//! - [`Select::RoundRobin`] — the next member in the ring's order (pod index, then id), one
//!   cursor per ring.
//! - [`Select::Random`] — a member drawn uniformly from the caller's seeded [`Rng`].
//! - [`Select::LeastOutstanding`] — two members drawn at random, the one with less *load per
//!   weight* (power of two choices, "p2c"; the first drawn on a tie). A member's weight is its
//!   metadata label [`WEIGHT_LABEL`], an integer 1..=10,000; absent or invalid, 1. Member
//!   `b` beats `a` exactly when `load(b) × weight(a) < load(a) × weight(b)`.
//! - [`Select::Maglev`] — the key's slot in the ring's [`MaglevTable`] (Maglev hashing: O(1)
//!   lookup, balanced to one slot, few keys moved by a change).
//! - [`Select::Bounded`] — the key's ring owner unless one more request would put it above
//!   `c ×` the mean load (Envoy's test, [`load_bound`]), then the next distinct node
//!   clockwise that passes; when none can, the first of the least loaded clockwise
//!   (consistent hashing with bounded loads).
//!
//! # State
//!
//! A [`Selector`] owns the per-ring selection state: the round-robin cursors and the Maglev
//! tables (each rebuilt only when its ring's update count moves), plus the settings of the
//! modes ([`SelectConfig`]) and their counters ([`SelectStats`]). Where
//! libatapp resets its cursor to 0 whenever the ring is rebuilt, a cursor here remembers the
//! last node it returned: after a membership change it resumes at the first member ordered
//! after that node, so adding or removing other members neither repeats nor skips anyone. The
//! state a later mode needs per ring or per server (Maglev tables, load reports, ejection)
//! goes here too, next to the cursors, keyed the same way.
//!
//! The *load* least-outstanding compares is passed in by the caller as a function of the node
//! id, not kept here: it is the caller's own bookkeeping (a call counts this node's calls
//! outstanding at each server, a send the messages queued or unacknowledged to each target),
//! and a copy kept here would have to follow every send, reply and outcome to stay true.
//!
//! # Outlier ejection
//!
//! The selector also keeps [`Outliers`]: servers ejected for failing their calls. A caller
//! passes them over through [`Selector::pick_usable`]'s `usable` predicate, so an ejected
//! server is still picked when every candidate is ejected or otherwise unusable (the first
//! pick, as for failing routes): ejection steers traffic, it never fails a call by itself.
//!
//! # Exclusions
//!
//! A call that already tried servers passes them as `excluded`: a pick never returns one of
//! them. A mode whose choice is excluded falls back to the first other candidate in
//! round-robin order (least outstanding draws its two among the others); `Node` and `Name`,
//! which name one node, have no fallback.

mod bounded;
mod maglev;
mod outlier;
mod round_robin;

#[cfg(test)]
mod mode_tests;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod outlier_tests;

use alloc::{string::String, vec::Vec};

use bytes::Bytes;

pub use bounded::load_bound;
pub use maglev::{MaglevError, MaglevFill, MaglevTable, SharedMaglev};
pub use outlier::{OutlierStats, Outliers};
pub use round_robin::Selector;

use crate::{
    ids::NodeId,
    ring::{FilterId, RingSet},
    rng::Rng,
};

/// How one node is chosen among the candidates: see the [module docs](self).
///
/// Exhaustive on purpose, like [`Mode`]: a new mode is a change every workload must cover —
/// the simulator, the CLI's `--select`, the adapters — and does not compile until it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// This node: as given when unfiltered, else if it matches the filter (for a call: if it
    /// serves the method; else the call waits for it within the grace).
    Node(NodeId),
    /// The node holding this name in discovery.
    Name(String),
    /// The owner of this key on the candidates' consistent-hash ring. Integer keys are passed
    /// as their 8 little-endian bytes, as libatapp hashes them.
    Hash(Bytes),
    /// The next candidate in turn (one cursor per ring).
    RoundRobin,
    /// A candidate drawn uniformly from the seeded generator.
    Random,
    /// Two candidates drawn at random, the one with less load per weight ([`WEIGHT_LABEL`];
    /// the first drawn on a tie). `p2c` on a command line.
    LeastOutstanding,
    /// The owner of this key in the candidates' Maglev table.
    Maglev(Bytes),
    /// The owner of this key on the candidates' ring unless it is at the load bound, then the
    /// next node clockwise under it.
    Bounded(Bytes),
}

/// The kind of a [`Select`], without its argument: what a workload or a command line names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// [`Select::Node`].
    Node,
    /// [`Select::Name`].
    Name,
    /// [`Select::Hash`].
    Hash,
    /// [`Select::RoundRobin`].
    RoundRobin,
    /// [`Select::Random`].
    Random,
    /// [`Select::LeastOutstanding`].
    LeastOutstanding,
    /// [`Select::Maglev`].
    Maglev,
    /// [`Select::Bounded`].
    Bounded,
}

impl Mode {
    /// Every mode, in declaration order (a workload iterates it and builds each mode with an
    /// exhaustive `match`, so a new mode is simulated as soon as it compiles).
    pub const ALL: [Mode; 8] = [
        Mode::Node,
        Mode::Name,
        Mode::Hash,
        Mode::RoundRobin,
        Mode::Random,
        Mode::LeastOutstanding,
        Mode::Maglev,
        Mode::Bounded,
    ];

    /// The mode's name on a command line: `node`, `name`, `hash`, `round-robin`, `random`,
    /// `least-outstanding`, `maglev`, `bounded`.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            Mode::Node => "node",
            Mode::Name => "name",
            Mode::Hash => "hash",
            Mode::RoundRobin => "round-robin",
            Mode::Random => "random",
            Mode::LeastOutstanding => "least-outstanding",
            Mode::Maglev => "maglev",
            Mode::Bounded => "bounded",
        }
    }

    /// The mode whose [`label`](Self::label) is `label`; `p2c` (power of two choices) is an
    /// alias of `least-outstanding`.
    #[must_use]
    pub fn from_label(label: &str) -> Option<Mode> {
        if label == "p2c" {
            return Some(Mode::LeastOutstanding);
        }
        Mode::ALL.into_iter().find(|mode| mode.label() == label)
    }

    /// Whether the mode takes a key (`hash`, `maglev`, `bounded`).
    #[must_use]
    pub const fn is_keyed(self) -> bool {
        matches!(self, Mode::Hash | Mode::Maglev | Mode::Bounded)
    }
}

impl Select {
    /// This selection's mode.
    #[must_use]
    pub const fn mode(&self) -> Mode {
        match self {
            Select::Node(_) => Mode::Node,
            Select::Name(_) => Mode::Name,
            Select::Hash(_) => Mode::Hash,
            Select::RoundRobin => Mode::RoundRobin,
            Select::Random => Mode::Random,
            Select::LeastOutstanding => Mode::LeastOutstanding,
            Select::Maglev(_) => Mode::Maglev,
            Select::Bounded(_) => Mode::Bounded,
        }
    }

    /// Whether a pick reads the ring's points (`Hash`, `Bounded`); the other modes read only
    /// the member table and round-robin orders, which are exact even while the points are
    /// unsettled: stale, or with joins burst deferral left pending
    /// ([`RingSet::settle`](crate::ring::RingSet::settle)).
    #[must_use]
    pub const fn reads_ring_points(&self) -> bool {
        matches!(self, Select::Hash(_) | Select::Bounded(_))
    }

    /// Whether the selection can name a node at all: not id 0, not an empty name.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        match self {
            Select::Node(id) => id.is_valid(),
            Select::Name(name) => !name.is_empty(),
            _ => true,
        }
    }
}

/// The metadata label holding a member's weight for [`Select::LeastOutstanding`]: an integer
/// 1..=[`MAX_WEIGHT`] in decimal; absent or anything else counts as 1.
pub const WEIGHT_LABEL: &str = "select.switchboard/weight";

/// The largest weight [`WEIGHT_LABEL`] may carry.
pub const MAX_WEIGHT: u32 = 10_000;

/// The weight `metadata` gives its node (see [`WEIGHT_LABEL`]).
#[must_use]
pub fn weight_of(metadata: &crate::discovery::Metadata) -> u32 {
    metadata
        .labels
        .get(WEIGHT_LABEL)
        .and_then(|w| w.parse::<u32>().ok())
        .filter(|w| (1..=MAX_WEIGHT).contains(w))
        .unwrap_or(1)
}

/// The settings of the modes that have some. `Default`: a 65,537-slot Maglev table, a load
/// bound of 125 % of the mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectConfig {
    /// Slots of each Maglev table: a prime no larger than [`MaglevTable::MAX_SIZE`]
    /// (`Config::maglev_table_size`; a size that is not one builds the default size).
    pub maglev_table_size: u32,
    /// How Maglev tables are filled (`Config::maglev_fill`; default [`MaglevFill::Balanced`]).
    pub maglev_fill: MaglevFill,
    /// The bounded-load factor `c` in percent, at least 100 (`Config::bounded_load_percent`;
    /// below 100 counts as 100).
    pub bounded_load_percent: u32,
}

impl SelectConfig {
    /// The default load factor, 125 % (Envoy's `hash_balance_factor` examples, Mirrokni's c =
    /// 1.25).
    pub const DEFAULT_BOUNDED_LOAD_PERCENT: u32 = 125;
}

impl Default for SelectConfig {
    fn default() -> SelectConfig {
        SelectConfig {
            maglev_table_size: MaglevTable::DEFAULT_SIZE,
            maglev_fill: MaglevFill::Balanced,
            bounded_load_percent: SelectConfig::DEFAULT_BOUNDED_LOAD_PERCENT,
        }
    }
}

/// A [`Selector`]'s counters since creation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SelectStats {
    /// Bounded-load picks that went past the key's owner because it was at the bound.
    pub bounded_spills: u64,
    /// Maglev tables built (a ring's first Maglev pick, and its first after each change).
    pub maglev_builds: u64,
}

/// Where a pick looks: the discovery set's rings and a filter ring (`None`: every node).
#[derive(Clone, Copy, Debug)]
pub struct Among<'a> {
    /// The discovery set's rings.
    pub rings: &'a RingSet,
    /// The filter ring the candidates are the members of; `None` = every node.
    pub filter: Option<FilterId>,
}

impl<'a> Among<'a> {
    /// The members of `filter`'s ring of `rings` (every node when `None`).
    pub(crate) const fn of(rings: &'a RingSet, filter: Option<FilterId>) -> Among<'a> {
        Among { rings, filter }
    }

    /// Every candidate, in round-robin order.
    pub(crate) fn members(self) -> Vec<NodeId> {
        self.rings.round_robin_order(self.filter).ids().collect()
    }
}

impl Selector {
    /// Picks a node for `select` among `among`, never one of `excluded`; `None` when no
    /// candidate qualifies. `load` is what least-outstanding and bounded loads compare (see
    /// the [module docs](self)). `RoundRobin` moves its cursor, `Maglev` (re)builds its
    /// ring's table when the ring changed, `Bounded` counts its spills; `Random` and
    /// `LeastOutstanding` draw from `rng`.
    pub fn pick(
        &mut self,
        select: &Select,
        among: Among<'_>,
        rng: &mut Rng,
        load: impl Fn(NodeId) -> u32,
        excluded: &[NodeId],
    ) -> Option<NodeId> {
        let Among { rings, filter } = among;
        let first = match select {
            Select::Node(id) => {
                let qualifies = match filter {
                    None => id.is_valid(),
                    Some(filter) => matches_filter(rings, filter, *id),
                };
                return qualifies.then_some(*id).filter(|id| !excluded.contains(id));
            }
            Select::Name(name) => {
                let id = rings.by_name(name)?;
                let qualifies = filter.is_none_or(|filter| matches_filter(rings, filter, id));
                return qualifies.then_some(id).filter(|id| !excluded.contains(id));
            }
            Select::Hash(key) => rings.ring(filter).lookup(key),
            Select::Maglev(key) => self.maglev_lookup(rings, filter, key),
            Select::Bounded(key) => return self.bounded(rings, filter, key, &load, excluded),
            Select::RoundRobin => self.round_robin(rings, filter),
            Select::Random => random(rings, filter, rng),
            Select::LeastOutstanding => {
                let order = rings.round_robin_order(filter);
                let weight = |id| rings.metadata(id).map_or(1, weight_of);
                if excluded.is_empty() {
                    let at = |i| order.get(i).map(|(_, id)| id);
                    two_choices(order.len(), at, rng, &load, weight)
                } else {
                    // A retry (rare): the two choices are drawn among the nodes not tried.
                    let left: Vec<NodeId> =
                        order.ids().filter(|id| !excluded.contains(id)).collect();
                    two_choices(left.len(), |i| left.get(i).copied(), rng, &load, weight)
                }
            }
        };
        match first {
            Some(id) if !excluded.contains(&id) => Some(id),
            _ if excluded.is_empty() => first,
            _ => rings
                .round_robin_order(filter)
                .ids()
                .find(|id| !excluded.contains(id)),
        }
    }
}

/// How many more picks [`Selector::pick_usable`] makes when the one picked is not usable.
const UNUSABLE_REPICKS: usize = 4;

impl Selector {
    /// [`pick`](Self::pick), passing over candidates that are not `usable` (a server whose
    /// route is failing, say) while another one is: up to four more picks by the same mode,
    /// each excluding what was passed over, then the first pick. One pick and one `usable`
    /// call when the first candidate is usable.
    pub fn pick_usable(
        &mut self,
        select: &Select,
        among: Among<'_>,
        rng: &mut Rng,
        load: impl Fn(NodeId) -> u32,
        excluded: &[NodeId],
        usable: impl Fn(NodeId) -> bool,
    ) -> Option<NodeId> {
        let first = self.pick(select, among, rng, &load, excluded)?;
        if usable(first) {
            return Some(first);
        }
        let mut passed = excluded.to_vec();
        passed.push(first);
        for _ in 0..UNUSABLE_REPICKS {
            let Some(next) = self.pick(select, among, rng, &load, &passed) else {
                break;
            };
            if usable(next) {
                return Some(next);
            }
            passed.push(next);
        }
        Some(first)
    }
}

/// Whether `id` is a member whose metadata matches the filter registered as `filter`.
fn matches_filter(rings: &RingSet, filter: FilterId, id: NodeId) -> bool {
    rings
        .metadata(id)
        .zip(rings.filter(filter))
        .is_some_and(|(metadata, filter)| filter.matches(metadata))
}

/// A uniformly random member of the filter's ring (one `rng.below` draw).
fn random(rings: &RingSet, filter: Option<FilterId>, rng: &mut Rng) -> Option<NodeId> {
    let order = rings.round_robin_order(filter);
    if order.is_empty() {
        return None;
    }
    let len = u64::try_from(order.len()).expect("member count fits u64");
    let i = usize::try_from(rng.below(len)).expect("below(len) < len fits usize");
    order.get(i).map(|(_, id)| id)
}

/// Power of two choices over `len` members reached by index: two distinct members drawn
/// uniformly, the one with less `load` per `weight` (the first drawn on a tie).
fn two_choices(
    len: usize,
    at: impl Fn(usize) -> Option<NodeId>,
    rng: &mut Rng,
    load: &impl Fn(NodeId) -> u32,
    weight: impl Fn(NodeId) -> u32,
) -> Option<NodeId> {
    let len = u64::try_from(len).expect("member count fits u64");
    if len == 0 {
        return None;
    }
    let index = |i: u64| usize::try_from(i).expect("an index below the length fits usize");
    let i = rng.below(len);
    let a = at(index(i));
    let b = if len > 1 {
        // A second, distinct member: draw among the others.
        let j = rng.below(len - 1);
        at(index(if j >= i { j + 1 } else { j }))
    } else {
        None
    };
    match (a, b) {
        // load(b) / weight(b) < load(a) / weight(a), exactly (no division).
        (Some(a), Some(b))
            if u64::from(load(b)) * u64::from(weight(a))
                < u64::from(load(a)) * u64::from(weight(b)) =>
        {
            Some(b)
        }
        (a, _) => a,
    }
}
