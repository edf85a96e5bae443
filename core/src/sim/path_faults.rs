//! The path-failure fault and its invariant (docs/ARCHITECTURE.md §9.3).
//!
//! **Fault** ([`Sim::fail_path`]): every link between `from` and `to` drops and dials from
//! `from` to `to` are refused for a while — one direction of one path, both processes alive
//! in the same incarnations (a NAT, a load balancer, a firewall reload); dials the other way
//! work.
//!
//! **Invariant** (checked on every `PeerDead` with `RedialFailed`): no peer alive in the
//! incarnation declared dead is declared dead by `from` through a path failure of `from → to`
//! shorter than `from`'s suspicion bound, nor while another path to it is up (a third node
//! with open links to both). Deaths the registry corroborates (the peer's registry session is
//! lost: the server lists it suspect) and deaths while a partition cuts the pair, or within
//! the bound after one did (the doubt may have started then), are not the path failure's,
//! and not checked.

use alloc::{collections::BTreeMap, format};

use super::{SimNode, cluster::Sim};
use crate::{
    ids::NodeId,
    time::{Duration, Instant},
};

/// One refused direction: since when, until when (the last one per pair is kept, so a death
/// soon after it ended is still checked against it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PathFault {
    since: Instant,
    until: Instant,
}

/// The path failures of a run, per (from, to), and when each partitioned pair came back.
#[derive(Clone, Debug, Default)]
pub(super) struct PathFaults {
    faults: BTreeMap<(NodeId, NodeId), PathFault>,
    /// Per pair (lower id first), when a partition of it last ended.
    partition_ended: BTreeMap<(NodeId, NodeId), Instant>,
}

impl PathFaults {
    /// The pair `a`–`b` came back from a partition at `now`.
    pub(super) fn pair_up(&mut self, a: NodeId, b: NodeId, now: Instant) {
        self.partition_ended.insert((a.min(b), a.max(b)), now);
    }

    /// Whether a partition of `a`–`b` ended at or after `since`.
    fn partitioned_since(&self, a: NodeId, b: NodeId, since: Instant) -> bool {
        (self.partition_ended.get(&(a.min(b), a.max(b)))).is_some_and(|&t| t >= since)
    }

    /// Whether a dial from `from` to `to` is refused at `now`.
    pub(super) fn refuses(&self, from: NodeId, to: NodeId, now: Instant) -> bool {
        self.faults
            .get(&(from, to))
            .is_some_and(|f| f.since <= now && now < f.until)
    }
}

impl<N: SimNode> Sim<N> {
    /// Fails the path `from → to` for `length` — one direction of one path, both processes
    /// alive (docs/ARCHITECTURE.md §9.3): its links drop now, dials from `from` to `to` are
    /// refused until `now + length`, dials the other way work.
    pub fn fail_path(&mut self, from: NodeId, to: NodeId, length: Duration) {
        self.note_with(None, || {
            format!("path {from} -> {to} refused for {} ms", length.as_millis())
        });
        self.cut(from, to);
        let since = self.now;
        let fault = PathFault {
            since,
            until: since + length,
        };
        self.path_faults.faults.insert((from, to), fault);
    }

    /// Ends every path failure now (dials succeed again).
    pub fn heal_paths(&mut self) {
        let now = self.now;
        for fault in self.path_faults.faults.values_mut() {
            fault.until = fault.until.min(now);
        }
    }

    /// The invariant (see the [module docs](self)): `observer` (slot `idx`) reported
    /// `peer`'s incarnation `incarnation` dead by a failed redial.
    pub(super) fn check_path_death(&mut self, idx: usize, peer: NodeId, incarnation: u64) {
        let now = self.now;
        let observer = self.slots[idx].id;
        let Some(bound) = self.slots[idx].node.as_ref().map(SimNode::suspicion_bound) else {
            return;
        };
        let Some(fault) = self.path_faults.faults.get(&(observer, peer)).copied() else {
            return;
        };
        let alive = self.index.get(&peer).is_some_and(|&p| {
            (self.slots[p].node.as_ref()).is_some_and(|n| n.incarnation() == incarnation)
        });
        if !alive
            || fault.since > now
            || now > fault.until + bound
            || self.pairs.is_down(observer, peer)
            || (self.path_faults).partitioned_since(observer, peer, now - bound)
            || self.session_lost(peer)
        {
            return;
        }
        let length = fault.until.saturating_duration_since(fault.since);
        if length < bound {
            self.violation(&format!(
                "{observer} declared live {peer} (incarnation {incarnation}) dead at {now:?} \
                 by a path failure of {length:?}, shorter than its suspicion bound {bound:?}"
            ));
        } else if now < fault.until
            && let Some(via) = self.other_path(observer, peer)
        {
            self.violation(&format!(
                "{observer} declared live {peer} (incarnation {incarnation}) dead at {now:?} \
                 while another path to it was up (through {via})"
            ));
        }
    }

    /// A live node other than `a` and `b` with open links to both.
    fn other_path(&self, a: NodeId, b: NodeId) -> Option<NodeId> {
        (self.slots.iter())
            .filter(|s| s.node.is_some() && s.id != a && s.id != b)
            .map(|s| s.id)
            .find(|&via| self.open_links(a, via) > 0 && self.open_links(via, b) > 0)
    }

    /// Whether the registry server lists `peer` as suspect (its session is lost).
    fn session_lost(&self, peer: NodeId) -> bool {
        let Some(server) = self.machines.as_ref().and_then(|m| m.net.server()) else {
            return false;
        };
        (server.entries().iter()).any(|e| e.discovery.id == peer && e.lost_for.is_some())
    }
}
