//! [`Revisions`]: revision gating of topology events, per node, and the gated events applied
//! to a [`TopologyRegistry`].

use alloc::collections::BTreeMap;

use super::{PeerChange, PeerData, TopologyRegistry};
use crate::{
    discovery::{DEFAULT_TOMBSTONE_LIMIT, TopologyInfo},
    event::RegistryIgnored,
    ids::NodeId,
};

/// The latest applied topology revision per node (puts and deletes alike): an event older
/// than what was applied for its node is stale. Revision 0 means "not from a registry" and
/// is never stale (nor recorded). A delete's revision is a tombstone (a late put older than
/// the delete must not bring the node back); like the discovery set's tombstones they are
/// bounded: past [`DEFAULT_TOMBSTONE_LIMIT`] the oldest quarter goes (docs/ARCHITECTURE.md
/// §9.4), so the map holds the nodes with a record plus at most that many departed ones.
#[derive(Clone, Debug)]
pub(crate) struct Revisions {
    /// Per node, its latest revision and whether it was a delete.
    held: BTreeMap<NodeId, (u64, bool)>,
    /// Entries of `held` that are deletes.
    deletes: usize,
    /// Deletes kept before the oldest are dropped.
    limit: usize,
}

impl Default for Revisions {
    fn default() -> Revisions {
        Revisions::with_limit(DEFAULT_TOMBSTONE_LIMIT)
    }
}

impl Revisions {
    /// No revision held; at most `limit` (at least 1) deletes kept.
    pub(crate) fn with_limit(limit: usize) -> Revisions {
        Revisions {
            held: BTreeMap::new(),
            deletes: 0,
            limit: limit.max(1),
        }
    }

    /// Nodes with a revision held.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// Admits a topology event for `id` at `revision` and records the revision; `Err(held)`
    /// (nothing recorded) when the revision `held` applied for `id` is newer.
    #[cfg(test)]
    pub(crate) fn admit(&mut self, id: NodeId, revision: u64) -> Result<(), u64> {
        self.admit_as(id, revision, false)
    }

    /// [`admit`](Self::admit), recording whether the event is a delete (a tombstone).
    fn admit_as(&mut self, id: NodeId, revision: u64, delete: bool) -> Result<(), u64> {
        if revision == 0 {
            return Ok(());
        }
        match self.held.get(&id) {
            Some(&(held, _)) if held > revision => Err(held),
            _ => {
                let was_delete = self
                    .held
                    .insert(id, (revision, delete))
                    .is_some_and(|h| h.1);
                self.deletes = self.deletes + usize::from(delete) - usize::from(was_delete);
                if self.deletes > self.limit {
                    self.drop_oldest_deletes();
                }
                Ok(())
            }
        }
    }

    /// Drops the oldest deletes until three quarters of the limit remain (ties at the cut
    /// go too, deterministically).
    fn drop_oldest_deletes(&mut self) {
        let mut revisions: alloc::vec::Vec<u64> =
            (self.held.values()).filter(|h| h.1).map(|h| h.0).collect();
        revisions.sort_unstable();
        let cut = revisions[self.deletes - (self.limit - self.limit / 4) - 1];
        let before = self.held.len();
        self.held.retain(|_, h| !(h.1 && h.0 <= cut));
        self.deletes -= before - self.held.len();
    }

    /// Admits `id`'s event at `revision`, or says why it is ignored (a newer revision
    /// applied).
    fn gate(&mut self, id: NodeId, revision: u64, delete: bool) -> Result<(), RegistryIgnored> {
        (self.admit_as(id, revision, delete)).map_err(|held| RegistryIgnored::StaleTopology {
            id,
            revision,
            held,
        })
    }

    /// A topology put, revision-gated, applied to `topology`: what changed, or why it is
    /// ignored (stale; a cycle or another invalid record, the registry unchanged).
    pub(crate) fn put(
        &mut self,
        topology: &mut TopologyRegistry,
        info: &TopologyInfo,
    ) -> Result<PeerChange, RegistryIgnored> {
        self.gate(info.id, info.revision, false)?;
        let data = PeerData {
            hostname: info.hostname.clone(),
            pid: i64::from(info.pid),
            labels: info.data.label.clone(),
        };
        (topology.update_peer(info.id, info.upstream_id, data)).map_err(RegistryIgnored::Topology)
    }

    /// A topology delete of `id` at `revision`, revision-gated, applied to `topology`; the
    /// deletion of this node's (`own`) record is ignored (its own record is its config's).
    pub(crate) fn delete(
        &mut self,
        topology: &mut TopologyRegistry,
        own: NodeId,
        id: NodeId,
        revision: u64,
    ) -> Result<(), RegistryIgnored> {
        if id == own {
            return Err(RegistryIgnored::OwnTopologyDelete);
        }
        self.gate(id, revision, true)?;
        topology
            .remove_peer(id)
            .map(|_| ())
            .map_err(RegistryIgnored::Topology)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_revision_is_stale_and_changes_nothing() {
        let mut revisions = Revisions::default();
        assert_eq!(revisions.admit(NodeId(7), 5), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 4), Err(5));
        // The refused revision was not recorded: 5 still holds.
        assert_eq!(revisions.admit(NodeId(7), 3), Err(5));
    }

    #[test]
    fn an_equal_or_newer_revision_is_admitted_and_recorded() {
        let mut revisions = Revisions::default();
        assert_eq!(revisions.admit(NodeId(7), 5), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 5), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 9), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 8), Err(9));
    }

    #[test]
    fn revision_zero_is_never_stale_nor_recorded() {
        let mut revisions = Revisions::default();
        assert_eq!(revisions.admit(NodeId(7), 0), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 1), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 0), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 1), Ok(()));
    }

    #[test]
    fn deletes_past_the_limit_drop_the_oldest_quarter_and_puts_stay() {
        let mut revisions = Revisions::with_limit(4);
        assert_eq!(revisions.admit(NodeId(1), 1), Ok(()));
        for id in 2..=5 {
            assert_eq!(revisions.admit_as(NodeId(id), id, true), Ok(()));
        }
        assert_eq!((revisions.len(), revisions.deletes), (5, 4));
        // The fifth delete passes the limit: down to 3 deletes, the oldest (2, 3) gone.
        assert_eq!(revisions.admit_as(NodeId(6), 6, true), Ok(()));
        assert_eq!((revisions.len(), revisions.deletes), (4, 3));
        assert_eq!(
            revisions.admit(NodeId(2), 1),
            Ok(()),
            "2's tombstone was dropped"
        );
        assert_eq!(revisions.admit(NodeId(4), 3), Err(4), "4's tombstone holds");
        // A put over a tombstone is no delete any more.
        assert_eq!(revisions.admit(NodeId(4), 7), Ok(()));
        assert_eq!(revisions.deletes, 2);
    }

    #[test]
    fn nodes_are_gated_apart() {
        let mut revisions = Revisions::default();
        assert_eq!(revisions.admit(NodeId(7), 9), Ok(()));
        assert_eq!(revisions.admit(NodeId(8), 2), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 2), Err(9));
    }
}
