//! Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018; Envoy's
//! `hash_balance_factor`): a key goes to its ring owner unless that node is at the bound
//! `⌈c × (L + 1) / n⌉`, where `L` is the total load of the `n` candidates and `c` the
//! configured factor (default 1.25); then to the next distinct node clockwise on the ring
//! that is under it.
//!
//! A node is *under the bound* when its load is below it, i.e. one more request keeps it at
//! or below `c ×` the mean load counting the new one. Some candidate always is: if all `n`
//! carried at least `⌈c × (L + 1) / n⌉ ≥ (L + 1) / n` their loads would sum past `L`.
//!
//! # Costs
//!
//! No state but a reused successor buffer and the spill counter. A pick reads every
//! candidate's load once (O(n) to sum `L`) and does one ring lookup; a spill adds one
//! unique-node successor walk of the ring: of its first 8 nodes (a few points), of every node
//! (O(points)) only when none of those 8 is under the bound.

use super::Selector;
use crate::{
    hash::key_hash,
    ids::NodeId,
    ring::{FilterId, RingSet, SearchMode},
};

/// How many distinct successors a spill looks at before walking the whole ring.
const NEAR_SUCCESSORS: usize = 8;

/// The load bound over `n` candidates carrying `total`: `⌈percent × (total + 1) / (100 ×
/// n)⌉`, exactly (128-bit arithmetic). A node whose load is below it takes one more request,
/// so no node ends a pick above it.
#[must_use]
pub fn load_bound(percent: u32, total: u64, n: usize) -> u64 {
    let n = u128::try_from(n.max(1)).unwrap_or(u128::MAX);
    let num = u128::from(percent) * (u128::from(total) + 1);
    let bound = num.div_ceil(100 * n);
    u64::try_from(bound).unwrap_or(u64::MAX)
}

impl Selector {
    /// The bounded-load choice for `key` among the filter's ring, never one of `excluded`:
    /// the owner when under the bound, else its first distinct successor under it (counted in
    /// [`SelectStats::bounded_spills`](super::SelectStats::bounded_spills)); when every node
    /// not excluded is at the bound (only possible with exclusions), the first of them
    /// clockwise. `None` on an empty ring or when every node is excluded.
    pub(super) fn bounded(
        &mut self,
        set: &RingSet,
        filter: Option<FilterId>,
        key: &[u8],
        load: &impl Fn(NodeId) -> u32,
        excluded: &[NodeId],
    ) -> Option<NodeId> {
        let ring = set.ring(filter);
        let hash = key_hash(key);
        let owner = ring.lookup_hash(hash)?;
        let order = set.round_robin_order(filter);
        let total: u64 = order.ids().map(|id| u64::from(load(id))).sum();
        let bound = load_bound(self.config.bounded_load_percent, total, order.len());
        let under = |id: NodeId| u64::from(load(id)) < bound;
        let owner_under = under(owner);
        if owner_under && !excluded.contains(&owner) {
            return Some(owner);
        }
        let mut walk = core::mem::take(&mut self.successors);
        let allowed = |id: &&NodeId| !excluded.contains(id);
        // The first few distinct successors first (a short walk, no allocation), every node
        // only when none of them is under the bound.
        let mut pick = None;
        for k in [NEAR_SUCCESSORS, ring.node_count()] {
            ring.successors_hash(hash, k, SearchMode::UNIQUE, &mut walk);
            pick = walk.iter().filter(allowed).find(|&&id| under(id)).copied();
            if pick.is_some() || k >= ring.node_count() {
                break;
            }
        }
        let pick = pick.or_else(|| walk.iter().find(allowed).copied());
        self.successors = walk;
        if !owner_under && pick.is_some_and(|id| id != owner) {
            self.stats.bounded_spills += 1;
        }
        pick
    }
}
