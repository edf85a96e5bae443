//! The registry of topology peers: applying records, removing them, reading the forest.

use alloc::{collections::BTreeMap, vec::Vec};

use smallvec::SmallVec;

use super::{PeerData, TopologyError, TopologyPeer};
use crate::ids::NodeId;

/// The upstream forest as the applied topology records describe it.
///
/// Invariants kept by every method (and checked by the property tests):
/// - no peer has id 0; every non-`NONE` upstream is a peer of the registry;
/// - `b ∈ a.downstream` exactly when `b.upstream == a`;
/// - the upstream links have no cycle;
/// - a passive peer has no upstream, default data and at least one downstream.
///
/// Iteration is in ascending id order, so everything derived from it is deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologyRegistry {
    peers: BTreeMap<NodeId, TopologyPeer>,
}

/// An upstream switch: `None` stands for "no upstream" (a root).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamChange {
    /// The upstream before the update (`None` for a root or a peer that did not exist).
    pub old: Option<NodeId>,
    /// The upstream after the update.
    pub new: Option<NodeId>,
}

/// What [`TopologyRegistry::update_peer`] changed. A repeated identical update reports no
/// change ([`PeerChange::is_noop`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeerChange {
    /// The peer was not in the registry before.
    pub created: bool,
    /// The peer existed as passive (only referenced as an upstream) and is now proactive.
    pub promoted: bool,
    /// The upstream differs from before (for a new peer: it has an upstream).
    pub upstream_changed: Option<UpstreamChange>,
    /// Hostname, pid or labels differ from before (for a new peer: differ from the default).
    pub data_changed: bool,
    /// The new upstream was unknown and has been created as a passive peer.
    pub upstream_created: bool,
    /// Passive peers removed because the update took away their last downstream (the old
    /// upstream, when it was passive), in removal order.
    pub pruned: SmallVec<[NodeId; 1]>,
}

impl PeerChange {
    /// Whether the update left the registry exactly as it was.
    #[must_use]
    pub fn is_noop(&self) -> bool {
        !self.created
            && !self.promoted
            && self.upstream_changed.is_none()
            && !self.data_changed
            && !self.upstream_created
            && self.pruned.is_empty()
    }
}

/// What [`TopologyRegistry::remove_peer`] changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Removed {
    /// The peer is gone from the registry. `false` when it still has downstream peers: it
    /// then stays as a passive peer with no upstream and default data.
    pub erased: bool,
    /// The peer was proactive before the call (`false` means the call removed a record that
    /// was never applied; with `erased == false` and no `old_upstream` nothing changed).
    pub was_proactive: bool,
    /// The upstream the peer was unlinked from.
    pub old_upstream: Option<NodeId>,
    /// Passive peers removed because they lost their last downstream, in removal order.
    pub pruned: SmallVec<[NodeId; 1]>,
}

impl Removed {
    /// Whether the call left the registry exactly as it was (removing a passive peer that
    /// still has children).
    #[must_use]
    pub fn is_noop(&self) -> bool {
        !self.erased && !self.was_proactive && self.old_upstream.is_none() && self.pruned.is_empty()
    }
}

impl TopologyRegistry {
    /// An empty registry.
    #[must_use]
    pub fn new() -> TopologyRegistry {
        TopologyRegistry::default()
    }

    /// A registry holding one node's own record: `own` with upstream `upstream` and data
    /// `data` (what a node knows of itself from its config before any registry speaks).
    ///
    /// # Panics
    ///
    /// If `own` is 0 or its own upstream: a validated config has neither.
    #[must_use]
    pub fn with_own(own: NodeId, upstream: NodeId, data: PeerData) -> TopologyRegistry {
        let mut topology = TopologyRegistry::new();
        topology
            .update_peer(own, upstream, data)
            .expect("a validated config has a valid id and an upstream other than itself");
        topology
    }

    /// Applies a topology record: `id` now has upstream `upstream` (`NodeId::NONE` for a root)
    /// and data `data`, and is proactive. Call on every topology PUT.
    ///
    /// An unknown `upstream` is created as a passive peer. When the upstream changes, `id` is
    /// unlinked from the old one, and the old one is removed if it was passive and is left
    /// without children.
    ///
    /// # Errors
    ///
    /// [`TopologyError::InvalidId`] for id 0, [`TopologyError::SelfUpstream`] when
    /// `upstream == id`, [`TopologyError::Cycle`] when `upstream` is `id`'s descendant. The
    /// registry is unchanged on every error.
    pub fn update_peer(
        &mut self,
        id: NodeId,
        upstream: NodeId,
        data: PeerData,
    ) -> Result<PeerChange, TopologyError> {
        if !id.is_valid() {
            return Err(TopologyError::InvalidId);
        }
        if upstream == id {
            return Err(TopologyError::SelfUpstream(id));
        }
        if upstream.is_valid() && self.peers.contains_key(&id) {
            self.check_no_cycle(id, upstream)?;
        }

        // Validation done: from here on the update cannot fail.
        let mut change = PeerChange::default();
        if upstream.is_valid() && !self.peers.contains_key(&upstream) {
            self.peers.insert(upstream, TopologyPeer::passive(upstream));
            change.upstream_created = true;
        }

        let peer = self.peers.entry(id).or_insert_with(|| {
            change.created = true;
            TopologyPeer::passive(id)
        });
        change.promoted = !change.created && !peer.proactive;
        peer.proactive = true;
        change.data_changed = peer.data != data;
        peer.data = data;
        let old_upstream = peer.upstream;
        peer.upstream = upstream;

        if old_upstream != upstream {
            change.upstream_changed = Some(UpstreamChange {
                old: old_upstream.is_valid().then_some(old_upstream),
                new: upstream.is_valid().then_some(upstream),
            });
            if let Some(new_up) = self.peers.get_mut(&upstream) {
                new_up.downstream.insert(id);
            }
            if let Some(old_up) = self.peers.get_mut(&old_upstream) {
                old_up.downstream.remove(&id);
            }
            self.prune_passive(old_upstream, &mut change.pruned);
        }
        Ok(change)
    }

    /// Withdraws `id`'s topology record. Call on every topology DELETE.
    ///
    /// The peer stops being proactive and is unlinked from its upstream. It is erased if it
    /// has no downstream; otherwise it stays as a passive peer (no upstream, default data) so
    /// its children keep their upstream. A passive upstream left without children is removed,
    /// and so on up the chain.
    ///
    /// # Errors
    ///
    /// [`TopologyError::InvalidId`] for id 0 and [`TopologyError::UnknownPeer`] when the
    /// registry does not hold `id` (a duplicate DELETE); the registry is unchanged.
    pub fn remove_peer(&mut self, id: NodeId) -> Result<Removed, TopologyError> {
        if !id.is_valid() {
            return Err(TopologyError::InvalidId);
        }
        let peer = self
            .peers
            .get_mut(&id)
            .ok_or(TopologyError::UnknownPeer(id))?;

        let mut removed = Removed {
            was_proactive: peer.proactive,
            ..Removed::default()
        };
        let old_upstream = peer.upstream;
        peer.proactive = false;
        peer.upstream = NodeId::NONE;
        peer.data = PeerData::default();
        if peer.downstream.is_empty() {
            self.peers.remove(&id);
            removed.erased = true;
        }

        if let Some(old_up) = self.peers.get_mut(&old_upstream) {
            old_up.downstream.remove(&id);
            removed.old_upstream = Some(old_upstream);
        }
        self.prune_passive(old_upstream, &mut removed.pruned);
        Ok(removed)
    }

    /// The peer with id `id`, if the registry holds it (proactive or passive).
    #[must_use]
    pub fn get(&self, id: NodeId) -> Option<&TopologyPeer> {
        self.peers.get(&id)
    }

    /// Whether the registry holds `id` (proactive or passive).
    #[must_use]
    pub fn contains(&self, id: NodeId) -> bool {
        self.peers.contains_key(&id)
    }

    /// Whether `id` is held and proactive (a record for it is applied).
    #[must_use]
    pub fn is_proactive(&self, id: NodeId) -> bool {
        self.peers.get(&id).is_some_and(|p| p.proactive)
    }

    /// `id`'s upstream; `None` when `id` is a root or unknown.
    #[must_use]
    pub fn upstream_of(&self, id: NodeId) -> Option<NodeId> {
        self.peers.get(&id).and_then(TopologyPeer::upstream)
    }

    /// The peers whose upstream is `id`, in ascending id order (empty when `id` is unknown).
    pub fn downstream_of(&self, id: NodeId) -> impl DoubleEndedIterator<Item = NodeId> + '_ {
        self.peers
            .get(&id)
            .into_iter()
            .flat_map(TopologyPeer::downstream)
    }

    /// `id`'s upstream, that one's upstream, and so on to the root (empty when `id` is a root
    /// or unknown). The connection manager tries these as direct-link candidates after the
    /// target itself. Bounded by the number of peers.
    pub fn upstream_chain(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let mut next = self.upstream_of(id);
        let mut budget = self.peers.len();
        core::iter::from_fn(move || {
            let current = next?;
            if budget == 0 {
                return None;
            }
            budget -= 1;
            next = self.upstream_of(current);
            Some(current)
        })
    }

    /// Number of peers held, proactive and passive.
    #[must_use]
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether the registry holds no peer.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// All peers in ascending id order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &TopologyPeer> + ExactSizeIterator {
        self.peers.values()
    }

    /// All peer ids in ascending order.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator + '_ {
        self.peers.keys().copied()
    }

    /// Upstream of a held peer as the raw id (`NONE` for a root or unknown id).
    pub(super) fn raw_upstream(&self, id: NodeId) -> NodeId {
        self.peers.get(&id).map_or(NodeId::NONE, |p| p.upstream)
    }

    /// Rejects `upstream` when it is `id` or one of `id`'s descendants, i.e. when walking up
    /// from `upstream` reaches `id`. A walk longer than the peer count can only mean a
    /// corrupted registry; it is rejected as a cycle too rather than looping.
    fn check_no_cycle(&self, id: NodeId, upstream: NodeId) -> Result<(), TopologyError> {
        let mut path = Vec::new();
        path.push(id);
        let mut current = upstream;
        for _ in 0..=self.peers.len() {
            if !current.is_valid() {
                return Ok(());
            }
            path.push(current);
            if current == id {
                return Err(TopologyError::Cycle { id, upstream, path });
            }
            current = self.raw_upstream(current);
        }
        Err(TopologyError::Cycle { id, upstream, path })
    }

    /// Removes `start` if it is passive and childless, then its upstream under the same rule,
    /// and so on; records every removed id in `pruned`.
    ///
    /// A passive peer has no upstream, so in a consistent registry this removes at most one
    /// peer; the loop (bounded by the peer count) keeps it right without relying on that.
    fn prune_passive(&mut self, start: NodeId, pruned: &mut SmallVec<[NodeId; 1]>) {
        let mut current = start;
        for _ in 0..=self.peers.len() {
            let removable = self
                .peers
                .get(&current)
                .is_some_and(|p| !p.proactive && p.downstream.is_empty());
            if !removable {
                return;
            }
            let Some(peer) = self.peers.remove(&current) else {
                return;
            };
            pruned.push(current);
            if let Some(up) = self.peers.get_mut(&peer.upstream) {
                up.downstream.remove(&current);
            }
            current = peer.upstream;
        }
    }
}

impl<'a> IntoIterator for &'a TopologyRegistry {
    type Item = &'a TopologyPeer;
    type IntoIter = alloc::collections::btree_map::Values<'a, NodeId, TopologyPeer>;

    fn into_iter(self) -> Self::IntoIter {
        self.peers.values()
    }
}
