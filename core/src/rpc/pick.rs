//! Server selection for calls: one place for every mode, so later modes (Maglev, bounded
//! load, least request with load reports, outlier ejection) are one more arm here.
//!
//! The candidates are the members of the method's filter ring ([`super::servers_of`]) in the
//! discovery set: the consistent-hash ring for `Hash`, its round-robin order for the others.

use bytes::Bytes;

use crate::{ids::NodeId, ring::FilterId, ring::RingSet, rng::Rng, select::Selector};

/// How a call chooses its server among the servers of its method.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Select {
    /// The owner of this key on the method's consistent-hash ring (the same key goes to the
    /// same server while membership holds).
    Hash(Bytes),
    /// The next server in turn (one cursor per method).
    RoundRobin,
    /// A server drawn uniformly from the node's seeded generator.
    Random,
    /// Two servers drawn at random, the one with fewer of this node's calls outstanding
    /// (power of two choices; the first on a tie).
    LeastOutstanding,
    /// This node, if it serves the method (else the call waits for it within the grace).
    Node(NodeId),
}

/// Where a pick looks: the discovery set's rings and the method's filter.
#[derive(Clone, Copy)]
pub(crate) struct Candidates<'a> {
    /// The discovery set's rings.
    pub(crate) rings: &'a RingSet,
    /// The method's filter ring.
    pub(crate) filter: FilterId,
}

/// Picks a server for `select` among `candidates`, never one of `excluded` (servers a call
/// already tried: then the first other member in round-robin order). `None` when no
/// candidate qualifies. `outstanding` counts this node's calls waiting on a server.
pub(crate) fn pick(
    select: &Select,
    candidates: Candidates<'_>,
    selector: &mut Selector,
    rng: &mut Rng,
    outstanding: impl Fn(NodeId) -> u32,
    excluded: &[NodeId],
) -> Option<NodeId> {
    let Candidates { rings, filter } = candidates;
    let order = rings.round_robin_order(Some(filter));
    let first = match select {
        Select::Node(id) => {
            let serves = rings
                .metadata(*id)
                .zip(rings.filter(filter))
                .is_some_and(|(metadata, filter)| filter.matches(metadata));
            return serves.then_some(*id).filter(|id| !excluded.contains(id));
        }
        Select::Hash(key) => crate::select::by_hash(rings, Some(filter), key),
        Select::RoundRobin => selector.round_robin(rings, Some(filter)),
        Select::Random => crate::select::random(rings, Some(filter), rng),
        Select::LeastOutstanding => {
            if excluded.is_empty() {
                let len = order.len();
                two_choices(len, |i| order.get(i).map(|(_, id)| id), rng, &outstanding)
            } else {
                // A retry (rare): the two choices are drawn among the servers not tried.
                let left: alloc::vec::Vec<NodeId> =
                    order.ids().filter(|id| !excluded.contains(id)).collect();
                two_choices(left.len(), |i| left.get(i).copied(), rng, &outstanding)
            }
        }
    };
    match first {
        Some(id) if !excluded.contains(&id) => Some(id),
        _ if excluded.is_empty() => first,
        _ => order.ids().find(|id| !excluded.contains(id)),
    }
}

/// Power of two choices over `len` members reached by index: two distinct members drawn
/// uniformly, the one with fewer `outstanding` calls (the first on a tie).
fn two_choices(
    len: usize,
    at: impl Fn(usize) -> Option<NodeId>,
    rng: &mut Rng,
    outstanding: &impl Fn(NodeId) -> u32,
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
        (Some(a), Some(b)) if outstanding(b) < outstanding(a) => Some(b),
        (a, _) => a,
    }
}
