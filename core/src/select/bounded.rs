//! Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018; Envoy's
//! `hash_balance_factor`): a key goes to its ring owner unless taking it would put that node
//! above `c ×` the mean load, the new request counted — Envoy's test, `(load + 1) × n ≤ c ×
//! (L + 1)`, where `L` is the total load of the `n` candidates and `c` the configured factor
//! (default 1.25); then to the next distinct node clockwise that passes it.
//!
//! A node passes when its load is below [`load_bound`], `⌊c × (L + 1) / n⌋`, the most a node
//! may carry once it has taken the request. So no pick ever leaves its node above `c ×` the
//! mean. When the mean is small (below `1 / (c − 1)`, 4 requests at the default) no node may
//! pass — one more request is already more than `c ×` the mean — and the key goes to the
//! first node clockwise among the least loaded, as Envoy takes its least overloaded host.
//!
//! # Costs
//!
//! No state but a reused successor buffer and the spill counter. A pick reads every
//! candidate's load once (O(n) to sum `L` and find the least load) and does one ring lookup;
//! a spill adds one unique-node successor walk of the ring: of its first 8 nodes (a few
//! points), of every node (O(points)) only when none of those 8 passes.

use super::Selector;
use crate::{
    hash::key_hash,
    ids::NodeId,
    ring::{FilterId, RingSet, SearchMode},
};

/// How many distinct successors a spill looks at before walking the whole ring.
const NEAR_SUCCESSORS: usize = 8;

/// The most load a node may carry after taking one more request when `n` candidates carry
/// `total`: `⌊percent × (total + 1) / (100 × n)⌋`, exactly (128-bit arithmetic). A node whose
/// load is below it passes Envoy's test `(load + 1) × n × 100 ≤ percent × (total + 1)`.
#[must_use]
pub fn load_bound(percent: u32, total: u64, n: usize) -> u64 {
    let n = u128::try_from(n.max(1)).unwrap_or(u128::MAX);
    let num = u128::from(percent) * (u128::from(total) + 1);
    u64::try_from(num / (100 * n)).unwrap_or(u64::MAX)
}

impl Selector {
    /// The bounded-load choice for `key` among the filter's ring, never one of `excluded`:
    /// the owner when its load is under the bound, else its first distinct successor under
    /// it (counted in [`SelectStats::bounded_spills`](super::SelectStats::bounded_spills));
    /// when no candidate not excluded is under it, the owner if it is among the least
    /// loaded, else the first of them clockwise (a spill). `None` on an empty ring or when every node is excluded.
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
        let (mut total, mut least) = (0u64, None::<u64>);
        for id in order.ids() {
            let l = u64::from(load(id));
            total += l;
            if !excluded.contains(&id) {
                least = Some(least.map_or(l, |m| m.min(l)));
            }
        }
        let least = least?;
        let bound = load_bound(self.config.bounded_load_percent, total, order.len());
        // Under the bound; when nobody is, the least loaded.
        let most = if least < bound { bound - 1 } else { least };
        let fits = |id: NodeId| u64::from(load(id)) <= most;
        let owner_fits = fits(owner);
        if owner_fits && !excluded.contains(&owner) {
            return Some(owner);
        }
        let mut walk = core::mem::take(&mut self.successors);
        let allowed = |id: &&NodeId| !excluded.contains(id);
        // The first few distinct successors first (a short walk, no allocation), every node
        // only when none of them fits. Some node fits: one carrying the least load does.
        let mut pick = None;
        for k in [NEAR_SUCCESSORS, ring.node_count()] {
            ring.successors_hash(hash, k, SearchMode::UNIQUE, &mut walk);
            pick = walk.iter().filter(allowed).find(|&&id| fits(id)).copied();
            if pick.is_some() || k >= ring.node_count() {
                break;
            }
        }
        self.successors = walk;
        if !owner_fits && pick.is_some_and(|id| id != owner) {
            self.stats.bounded_spills += 1;
        }
        pick
    }
}
