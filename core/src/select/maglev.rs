//! Maglev hashing (Eisenbud et al., NSDI 2016, §3.4): a lookup table of a prime size `M`
//! whose every slot names a node. A lookup hashes the key as the ring does ([`key_hash`]) and
//! reads one slot: O(1), no search.
//!
//! # Population
//!
//! Each node has a permutation of the slots, `offset + j × skip (mod M)` for `j = 0, 1, …`,
//! where `offset = h mod M` and `skip = h' mod (M − 1) + 1` come from the two halves of the
//! node id's [`key_hash_u64`]; `M` prime makes every permutation visit every slot. A node's
//! preferred slots do not depend on the other nodes. Two fills ([`MaglevFill`]):
//!
//! - **Balanced** (the paper's, the default): the nodes, in ascending id order, take turns,
//!   each claiming the next slot of its permutation that is still empty, until the table is
//!   full. Every node claims one slot per round, so each owns `⌊M/N⌋` or `⌈M/N⌉` slots. The
//!   price: a change shifts which node claims what in every later round, so one removal at
//!   N = 1,000 moves 6.7 × the ring's share of keys (docs/ARCHITECTURE.md §7).
//! - **Stable**: in round `j` each node *offers* its `j`-th preferred slot and takes it if it
//!   is empty — it does not hunt on for the next empty one — until it owns `⌈M/N⌉ + 1`
//!   slots. A slot then goes to the node that prefers it earliest (ties by id) among those
//!   still under the cap, so a removal moves the removed node's slots and only the few that
//!   a cap shifts: 1.7 × the ring's share at N = 1,000. No node owns more than `⌈M/N⌉ + 1`
//!   slots, but some own fewer than `⌊M/N⌋` (the least-served node about 0.78 × the mean at
//!   N = 1,000, M = 65,537; fewer still when `M/N` is small).
//!
//! # Costs
//!
//! `4 × M` bytes of table (256 KiB at the default 65,537) plus 36 bytes per node (its
//! permutation, kept and double-buffered, and its cursor; 44 with the stable fill's count and
//! place in the active list); a build is about `M × ln(N)` probes over the table's cache
//! lines (see `select-report`'s `maglev_build_ns` and `maglev_stable_build_ns`); it reuses
//! its buffers, so a rebuild allocates only when the node count or the size grows. The
//! selector's rebuilds are lazy (`maglev/fill.rs`): a lookup fills only until its slot is
//! claimed — about `M` probes for the first lookup after a change instead of the whole
//! build — and the same answers as a full build, since a claimed slot keeps its owner.

use alloc::vec::Vec;

pub use self::shared::SharedMaglev;
use super::{Selector, round_robin::ring_slot};
use crate::{
    hash::{KeyHash, key_hash, key_hash_u64},
    ids::NodeId,
    ring::{FilterId, RingSet},
};

/// A slot no node has claimed yet (only while building).
const EMPTY: u32 = u32::MAX;

/// Why a table size was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MaglevError {
    /// The size is not a prime between 2 and [`MaglevTable::MAX_SIZE`].
    #[error("maglev table size {size} is not a prime between 2 and {max}", max = MaglevTable::MAX_SIZE)]
    NotPrime {
        /// The refused size.
        size: u32,
    },
}

/// How a [`MaglevTable`] is filled from the nodes' permutations (see `select/maglev.rs`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum MaglevFill {
    /// The paper's turns: each node owns `⌊M/N⌋` or `⌈M/N⌉` slots; a change moves several
    /// times a ring's share of keys.
    #[default]
    Balanced,
    /// Offers in preference order, each node capped at `⌈M/N⌉ + 1` slots: a change moves
    /// less than twice a ring's share; the busiest node owns at most one slot more than
    /// the balanced fill's, the least served fewer.
    Stable,
}

/// One node's permutation: the next slot it tries and its step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Permutation {
    id: NodeId,
    offset: u32,
    skip: u32,
}

/// A Maglev lookup table over a set of nodes (see the [`select`](crate::select) module docs;
/// its population and costs are described in `select/maglev.rs`).
///
/// ```
/// use switchboard_core::{ids::NodeId, select::MaglevTable};
///
/// let mut table = MaglevTable::new(MaglevTable::DEFAULT_SIZE)?;
/// table.build([NodeId(1), NodeId(2), NodeId(3)]);
/// let owner = table.lookup(b"user:42").expect("three nodes");
/// // Each node owns 21,845 or 21,846 of the 65,537 slots.
/// let owned = table.slots().filter(|&id| id == owner).count();
/// assert!((21_845..=21_846).contains(&owned));
/// # Ok::<(), switchboard_core::select::MaglevError>(())
/// ```
#[derive(Clone, Debug)]
pub struct MaglevTable {
    size: u32,
    fill: MaglevFill,
    /// The nodes in ascending id order, with their permutations (kept between builds: a node
    /// still present keeps its hashed offset and skip).
    nodes: Vec<Permutation>,
    /// Build buffer: the nodes of the next build, and each node's next slot while filling.
    next_nodes: Vec<Permutation>,
    cursors: Vec<u32>,
    /// Stable fill only: slots each node owns so far, and the nodes still under the cap.
    counts: Vec<u32>,
    active: Vec<u32>,
    /// Slot → index into `nodes`.
    table: Vec<u32>,
    /// Where the fill of the last build stopped; `None` once the table is full (always after
    /// [`build`](Self::build); only the selector's lazy builds leave a fill pending).
    pending: Option<fill::Progress>,
}

impl MaglevTable {
    /// The paper's and Envoy's default size, a prime.
    pub const DEFAULT_SIZE: u32 = 65_537;

    /// The largest accepted size (a table of this size takes 64 MiB).
    pub const MAX_SIZE: u32 = 1 << 24;

    /// An empty table of `size` slots (nothing is allocated until the first build).
    ///
    /// # Errors
    ///
    /// [`MaglevError::NotPrime`] unless `size` is a prime no larger than [`Self::MAX_SIZE`].
    pub fn new(size: u32) -> Result<MaglevTable, MaglevError> {
        if !Self::valid_size(size) {
            return Err(MaglevError::NotPrime { size });
        }
        Ok(MaglevTable {
            size,
            ..MaglevTable::default_size()
        })
    }

    /// An empty table of [`Self::DEFAULT_SIZE`] slots.
    #[must_use]
    pub fn default_size() -> MaglevTable {
        MaglevTable {
            size: Self::DEFAULT_SIZE,
            fill: MaglevFill::Balanced,
            nodes: Vec::new(),
            next_nodes: Vec::new(),
            cursors: Vec::new(),
            counts: Vec::new(),
            active: Vec::new(),
            table: Vec::new(),
            pending: None,
        }
    }

    /// This table filled by `fill` from the next build on.
    #[must_use]
    pub fn with_fill(mut self, fill: MaglevFill) -> MaglevTable {
        self.fill = fill;
        self
    }

    /// How the table is filled.
    #[must_use]
    pub const fn fill(&self) -> MaglevFill {
        self.fill
    }

    /// Whether `size` is a prime no larger than [`Self::MAX_SIZE`] (trial division).
    #[must_use]
    pub fn valid_size(size: u32) -> bool {
        if !(2..=Self::MAX_SIZE).contains(&size) {
            return false;
        }
        let mut d = 2u32;
        while d * d <= size {
            if size.is_multiple_of(d) {
                return false;
            }
            d += 1;
        }
        true
    }

    /// The number of slots.
    #[must_use]
    pub const fn size(&self) -> u32 {
        self.size
    }

    /// The number of nodes the table was built from.
    #[must_use]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Heap bytes held (table, nodes and build buffers, by capacity).
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        let perm = core::mem::size_of::<Permutation>();
        self.table.capacity() * 4
            + (self.cursors.capacity() + self.counts.capacity() + self.active.capacity()) * 4
            + (self.nodes.capacity() + self.next_nodes.capacity()) * perm
    }

    /// Rebuilds the table over `ids` (duplicates count once; id 0 is skipped). An empty set
    /// gives an empty table, whose lookups return `None`.
    pub fn build(&mut self, ids: impl IntoIterator<Item = NodeId>) {
        self.start_build(ids);
        self.fill_until(None);
    }

    /// Starts a rebuild over `ids` (as [`build`](Self::build)) without filling any slot:
    /// [`lookup_filling`](Self::lookup_filling) fills as far as each lookup needs, and
    /// nothing else may read the table until the fill is done.
    fn start_build(&mut self, ids: impl IntoIterator<Item = NodeId>) {
        self.next_nodes.clear();
        let size = self.size;
        self.next_nodes.extend(
            ids.into_iter()
                .filter(|id| id.is_valid())
                .map(|id| Permutation {
                    id,
                    offset: 0,
                    skip: 0,
                }),
        );
        self.next_nodes.sort_unstable_by_key(|p| p.id);
        self.next_nodes.dedup_by_key(|p| p.id);
        // Merge with the previous nodes (both in id order): a node still present keeps its
        // permutation, a new one is hashed.
        let mut old = self.nodes.iter().peekable();
        for p in &mut self.next_nodes {
            while old.next_if(|o| o.id < p.id).is_some() {}
            *p = match old.next_if(|o| o.id == p.id) {
                Some(o) => *o,
                None => permutation(p.id, size),
            };
        }
        core::mem::swap(&mut self.nodes, &mut self.next_nodes);
        let mut buf = fill::Buffers {
            table: &mut self.table,
            cursors: &mut self.cursors,
            counts: &mut self.counts,
            active: &mut self.active,
        };
        self.pending = fill::start(size, &self.nodes, &mut buf);
    }

    /// Continues the pending fill until slot `target` is claimed (or, with `None`, until the
    /// table is full); nothing to do once it is full.
    fn fill_until(&mut self, target: Option<usize>) {
        let Some(at) = self.pending else {
            return;
        };
        let mut buf = fill::Buffers {
            table: &mut self.table,
            cursors: &mut self.cursors,
            counts: &mut self.counts,
            active: &mut self.active,
        };
        let (size, nodes) = (self.size, &self.nodes);
        self.pending = match self.fill {
            MaglevFill::Balanced => fill::balanced(size, nodes, &mut buf, at, target),
            MaglevFill::Stable => fill::stable(size, nodes, &mut buf, at, target),
        };
    }

    /// [`lookup_hash`](Self::lookup_hash) on a table whose fill may be pending: fills only
    /// until the key's slot is claimed. The answer is the full table's (a claimed slot keeps
    /// its owner).
    fn lookup_filling(&mut self, hash: KeyHash) -> Option<NodeId> {
        let slot = usize::try_from(self.slot_of(hash)).ok()?;
        if self.table.get(slot) == Some(&EMPTY) {
            self.fill_until(Some(slot));
        }
        self.owner_of(slot)
    }

    /// The owner of a claimed slot; `None` for a slot past the end (an empty table).
    #[inline]
    fn owner_of(&self, slot: usize) -> Option<NodeId> {
        let index = *self.table.get(slot)?;
        self.nodes.get(index as usize).map(|p| p.id)
    }

    /// The slot a key hash reads: `⌊hi × M / 2^64⌋`.
    #[inline]
    fn slot_of(&self, hash: KeyHash) -> u128 {
        (u128::from(hash.hi) * u128::from(self.size)) >> 64
    }

    /// The node owning `key`, hashed as the ring hashes keys; `None` when empty.
    #[must_use]
    #[inline]
    pub fn lookup(&self, key: &[u8]) -> Option<NodeId> {
        self.lookup_hash(key_hash(key))
    }

    /// [`lookup`](Self::lookup) of an already hashed key: slot `⌊hi × M / 2^64⌋` (a multiply
    /// and a shift instead of a division).
    #[must_use]
    #[inline]
    pub fn lookup_hash(&self, hash: KeyHash) -> Option<NodeId> {
        debug_assert!(self.pending.is_none(), "a lazy build read before its fill");
        self.owner_of(usize::try_from(self.slot_of(hash)).ok()?)
    }

    /// The owner of every slot in slot order (empty when the table is).
    pub fn slots(&self) -> impl Iterator<Item = NodeId> + '_ {
        debug_assert!(self.pending.is_none(), "a lazy build read before its fill");
        self.table.iter().map(|&i| self.nodes[i as usize].id)
    }
}

/// A ring's Maglev table and the ring update count it was built at.
#[derive(Clone, Debug)]
pub(super) struct CachedMaglev {
    /// The ring update count of the last build (`u64::MAX` before the first).
    updates: u64,
    /// The selector's own table, built lazily at `updates` when `built`.
    table: MaglevTable,
    built: bool,
    /// The ring's members at `updates` as a build keeps them (ascending, distinct, valid),
    /// for shared tables; current when `ids_current`.
    ids: Vec<NodeId>,
    ids_current: bool,
}

impl Selector {
    /// Swaps `tables` with the selector's shared Maglev tables: lends it some with `Some`,
    /// takes them back with `None`. While it holds shared tables, a Maglev pick reads (and
    /// lazily fills) the shared table of its ring's membership instead of building its own:
    /// the same owners, computed once for every selector that sees the membership. Counted
    /// builds ([`SelectStats::maglev_builds`](super::SelectStats::maglev_builds)) stay
    /// those of the selector's own rings.
    pub fn swap_shared_maglev(&mut self, tables: &mut Option<SharedMaglev>) {
        core::mem::swap(&mut self.shared_maglev, tables);
    }

    /// The owner of `key` in the Maglev table of the filter's ring. The table is built on
    /// first use and rebuilt (reusing its buffers) only when that ring's update count
    /// ([`RingSet::ring_updates_of`]) has moved since; a build is lazy: its fill runs as far
    /// as lookups need ([`MaglevTable::lookup_filling`]). With shared tables lent, the
    /// shared table of the ring's members is read instead.
    pub(super) fn maglev_lookup(
        &mut self,
        set: &RingSet,
        filter: Option<FilterId>,
        key: &[u8],
    ) -> Option<NodeId> {
        let slot = ring_slot(set, filter);
        if self.maglev.len() <= slot {
            self.maglev.resize_with(slot + 1, || None);
        }
        let updates = set.ring_updates_of(filter);
        let (size, fill) = (self.config.maglev_table_size, self.config.maglev_fill);
        let cached = self.maglev[slot].get_or_insert_with(|| CachedMaglev {
            updates: u64::MAX,
            table: MaglevTable::new(size)
                .unwrap_or_else(|_| MaglevTable::default_size())
                .with_fill(fill),
            built: false,
            ids: Vec::new(),
            ids_current: false,
        });
        if cached.updates != updates {
            cached.updates = updates;
            cached.built = false;
            cached.ids_current = false;
            self.stats.maglev_builds += 1;
        }
        let hash = key_hash(key);
        if let Some(shared) = self.shared_maglev.as_mut() {
            if !cached.ids_current {
                cached.ids.clear();
                let members = set.round_robin_order(filter).ids();
                cached.ids.extend(members.filter(|id| id.is_valid()));
                cached.ids.sort_unstable();
                cached.ids.dedup();
                cached.ids_current = true;
            }
            return shared.lookup(size, fill, &cached.ids, hash);
        }
        if !cached.built {
            let members = set.round_robin_order(filter).ids();
            cached.table.start_build(members);
            cached.built = true;
        }
        cached.table.lookup_filling(hash)
    }
}

/// `id`'s permutation in a table of `size` slots.
fn permutation(id: NodeId, size: u32) -> Permutation {
    let h = key_hash_u64(id.0);
    let offset = u32::try_from(h.hi % u64::from(size)).expect("below size, a u32");
    let skip = if size > 1 {
        u32::try_from(h.lo % u64::from(size - 1)).expect("below size, a u32") + 1
    } else {
        1
    };
    Permutation { id, offset, skip }
}

mod fill;
mod shared;
#[cfg(test)]
mod tests;
