//! One node as the topology registry knows it: its upstream, its data and its children.

use alloc::{collections::BTreeSet, string::String};

use crate::ids::NodeId;

/// What a topology record says about a node besides its upstream: where it runs and its
/// labels. The direct-connection policy ([`super::TopologyPolicy`]) compares these.
///
/// All fields count for change detection: a new hostname or pid is a change (libatapp ignores
/// both, which leaves same-host/same-process decisions stale).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PeerData {
    /// Host the node runs on.
    pub hostname: String,
    /// Process id of the node on its host (libatapp sends an `int32`).
    pub pid: i64,
    /// Topology labels (libatapp's `data.label{}`), ordered by key.
    pub labels: crate::discovery::Labels,
}

/// A node in the [`super::TopologyRegistry`].
///
/// A peer is *proactive* when a topology record for it was applied
/// ([`super::TopologyRegistry::update_peer`]) and *passive* when it is only known because
/// other peers name it as their upstream. A passive peer has no upstream, default data and at
/// least one downstream; the registry removes it once its last child leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyPeer {
    pub(super) id: NodeId,
    /// `NodeId::NONE` for a root.
    pub(super) upstream: NodeId,
    pub(super) data: PeerData,
    pub(super) proactive: bool,
    pub(super) downstream: BTreeSet<NodeId>,
}

impl TopologyPeer {
    /// A passive peer with no upstream, no data and no children.
    pub(super) fn passive(id: NodeId) -> TopologyPeer {
        TopologyPeer {
            id,
            upstream: NodeId::NONE,
            data: PeerData::default(),
            proactive: false,
            downstream: BTreeSet::new(),
        }
    }

    /// The peer's node id (never `NodeId::NONE`).
    #[must_use]
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The peer's upstream, or `None` for a root (and for every passive peer).
    #[must_use]
    pub fn upstream(&self) -> Option<NodeId> {
        self.upstream.is_valid().then_some(self.upstream)
    }

    /// Hostname, pid and labels from the peer's last applied record (default for a passive
    /// peer).
    #[must_use]
    pub fn data(&self) -> &PeerData {
        &self.data
    }

    /// Shorthand for `data().hostname`.
    #[must_use]
    pub fn hostname(&self) -> &str {
        &self.data.hostname
    }

    /// Shorthand for `data().pid`.
    #[must_use]
    pub fn pid(&self) -> i64 {
        self.data.pid
    }

    /// Shorthand for `data().labels`.
    #[must_use]
    pub fn labels(&self) -> &crate::discovery::Labels {
        &self.data.labels
    }

    /// Whether a topology record for this peer is applied (as opposed to the peer only being
    /// referenced as someone's upstream).
    #[must_use]
    pub fn is_proactive(&self) -> bool {
        self.proactive
    }

    /// The peers whose upstream is this one, in ascending id order.
    pub fn downstream(&self) -> impl DoubleEndedIterator<Item = NodeId> + ExactSizeIterator + '_ {
        self.downstream.iter().copied()
    }

    /// Whether `id` names this peer as its upstream.
    #[must_use]
    pub fn contains_downstream(&self, id: NodeId) -> bool {
        self.downstream.contains(&id)
    }

    /// How many peers name this one as their upstream.
    #[must_use]
    pub fn downstream_len(&self) -> usize {
        self.downstream.len()
    }
}
