//! The direct-connection policy: when two nodes may link directly instead of going through
//! the upstream tree.

use alloc::{collections::BTreeMap, string::String, vec::Vec};

use super::{PeerData, Relation};

/// The `bus.topology.rule` configuration block of libatapp. Everything is off by default:
/// no direct links, and no restriction on them once they are allowed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct TopologyPolicy {
    /// Peers (Same/OtherUpstreamPeer, or nodes the registry does not know) may be linked
    /// directly.
    pub allow_direct_connection: bool,
    /// Direct links only to peers under the same upstream.
    pub require_same_upstream: bool,
    /// Direct links only to nodes in the same process: same hostname and pid.
    pub require_same_process: bool,
    /// Direct links only to nodes on the same host.
    pub require_same_host: bool,
    /// Label key → allowed values: the remote must carry every key with one of its values
    /// (an empty value list allows nothing).
    pub match_label: BTreeMap<String, Vec<String>>,
}

/// Why [`TopologyPolicy::check_policy`] refused a direct link. Checks run in the order of the
/// variants (labels in key order), and the first failure is reported.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyDenied {
    /// Same host (or same process) is required and the hostnames differ.
    #[error("remote host {remote:?} differs from local host {local:?}")]
    DifferentHost {
        /// Local hostname.
        local: String,
        /// Remote hostname.
        remote: String,
    },
    /// Same process is required and the pids differ (hostnames are equal).
    #[error("remote pid {remote} differs from local pid {local}")]
    DifferentProcess {
        /// Local pid.
        local: i64,
        /// Remote pid.
        remote: i64,
    },
    /// The remote lacks a required label.
    #[error("remote has no label {key:?}")]
    MissingLabel {
        /// The label key.
        key: String,
    },
    /// The remote's label value is not among the allowed ones.
    #[error("remote label {key:?} = {value:?} is not an allowed value")]
    LabelNotAllowed {
        /// The label key.
        key: String,
        /// The remote's value.
        value: String,
    },
}

impl TopologyPolicy {
    /// Whether `remote` may be linked directly from a node whose own data is `local`, as far
    /// as host, process and labels go (libatbus's `check_policy`). Does not look at
    /// `allow_direct_connection` or the relation; see [`TopologyPolicy::direct_path_allowed`].
    ///
    /// Call for each direct-link candidate; re-check when either side's data changes
    /// ([`super::PeerChange::data_changed`]).
    ///
    /// # Errors
    ///
    /// The first failed rule, as a [`PolicyDenied`].
    pub fn check_policy(&self, local: &PeerData, remote: &PeerData) -> Result<(), PolicyDenied> {
        if (self.require_same_process || self.require_same_host)
            && local.hostname != remote.hostname
        {
            return Err(PolicyDenied::DifferentHost {
                local: local.hostname.clone(),
                remote: remote.hostname.clone(),
            });
        }
        if self.require_same_process && local.pid != remote.pid {
            return Err(PolicyDenied::DifferentProcess {
                local: local.pid,
                remote: remote.pid,
            });
        }
        for (key, allowed) in &self.match_label {
            let Some(value) = remote.labels.get(key) else {
                return Err(PolicyDenied::MissingLabel { key: key.clone() });
            };
            if !allowed.contains(value) {
                return Err(PolicyDenied::LabelNotAllowed {
                    key: key.clone(),
                    value: value.clone(),
                });
            }
        }
        Ok(())
    }

    /// Whether the connection manager may try a direct (peer) path to a target with this
    /// relation: the target is a peer or unknown to the registry (SameUpstreamPeer,
    /// OtherUpstreamPeer, Invalid), direct connections are allowed, and, if the same upstream
    /// is required, the relation is SameUpstreamPeer. Each candidate still has to pass
    /// [`TopologyPolicy::check_policy`].
    #[must_use]
    pub fn direct_path_allowed(&self, relation: Relation) -> bool {
        let is_peer = matches!(
            relation,
            Relation::SameUpstreamPeer | Relation::OtherUpstreamPeer | Relation::Invalid
        );
        is_peer
            && self.allow_direct_connection
            && (!self.require_same_upstream || relation == Relation::SameUpstreamPeer)
    }
}
