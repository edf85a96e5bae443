//! [`Revisions`]: revision gating of topology events, per node, and the gated events applied
//! to a [`TopologyRegistry`].

use alloc::collections::BTreeMap;

use super::{PeerChange, PeerData, TopologyRegistry};
use crate::{discovery::TopologyInfo, event::RegistryIgnored, ids::NodeId};

/// The latest applied topology revision per node (puts and deletes alike): an event older
/// than what was applied for its node is stale. Revision 0 means "not from a registry" and
/// is never stale (nor recorded).
#[derive(Clone, Debug, Default)]
pub(crate) struct Revisions(BTreeMap<NodeId, u64>);

impl Revisions {
    /// Admits a topology event for `id` at `revision` and records the revision; `Err(held)`
    /// (nothing recorded) when the revision `held` applied for `id` is newer.
    pub(crate) fn admit(&mut self, id: NodeId, revision: u64) -> Result<(), u64> {
        if revision == 0 {
            return Ok(());
        }
        match self.0.get(&id) {
            Some(&held) if held > revision => Err(held),
            _ => {
                self.0.insert(id, revision);
                Ok(())
            }
        }
    }

    /// Admits `id`'s event at `revision`, or says why it is ignored (a newer revision
    /// applied).
    fn gate(&mut self, id: NodeId, revision: u64) -> Result<(), RegistryIgnored> {
        (self.admit(id, revision)).map_err(|held| RegistryIgnored::StaleTopology {
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
        info: TopologyInfo,
    ) -> Result<PeerChange, RegistryIgnored> {
        self.gate(info.id, info.revision)?;
        let data = PeerData {
            hostname: info.hostname,
            pid: i64::from(info.pid),
            labels: info.data.label,
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
        self.gate(id, revision)?;
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
    fn nodes_are_gated_apart() {
        let mut revisions = Revisions::default();
        assert_eq!(revisions.admit(NodeId(7), 9), Ok(()));
        assert_eq!(revisions.admit(NodeId(8), 2), Ok(()));
        assert_eq!(revisions.admit(NodeId(7), 2), Err(9));
    }
}
