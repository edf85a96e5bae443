//! Registry records applied: a registry event goes, revision-gated, to the discovery set
//! (docs/ARCHITECTURE.md §5, §7) or the topology registry (§6, gated by
//! [`Revisions`]), and what actually changed comes back as a [`RecordChange`] for the node to
//! apply to the other machines (the connector re-routes, a new incarnation or a deletion is
//! evidence of death, waiting calls look again). An event that changes nothing applied is
//! [`RecordChange::Ignored`] with its reason.
//!
//! Deploys fail nothing (ARCHITECTURE §7, "Send grace"): a member's deleted record is
//! remembered for the send grace ([`Departed`]), so a send naming it is held for its next
//! life instead of refused; a record marked leaving ([`DiscoveryInfo::is_leaving`]) holds new
//! messages for it, and for every node routed through it, until its next life's record.
//!
//! [`DiscoveryInfo::is_leaving`]: crate::discovery::DiscoveryInfo::is_leaving

use alloc::vec::Vec;

use crate::{
    config::Config,
    connector::World,
    discovery::{Applied, Departed, DiscoverySet},
    event::RegistryIgnored,
    ids::NodeId,
    registry::RegistryEvent,
    ring::RingConfig,
    select::Select,
    time::Instant,
    topology::{PeerChange, PeerData, Revisions, TopologyRegistry},
};

/// What a registry event changed; see the [module docs](self).
#[derive(Debug)]
pub(crate) enum RecordChange {
    /// A discovery record for `id` (0: a name-only node) was added or replaced, stating
    /// `incarnation` (0: not stated); the node `displaced` lost its name to it and is gone.
    DiscoveryPut {
        /// The node.
        id: NodeId,
        /// The incarnation its record states.
        incarnation: u64,
        /// The node that held its name before, removed.
        displaced: Option<NodeId>,
        /// The record is a light client's ([`DiscoveryInfo::is_client`](crate::discovery::DiscoveryInfo::is_client)).
        client: bool,
    },
    /// `id`'s discovery record was deleted; its last record stated `incarnation`.
    DiscoveryDeleted {
        /// The node.
        id: NodeId,
        /// The incarnation its last record stated.
        incarnation: u64,
        /// The record was a light client's: it left.
        client: bool,
    },
    /// `id`'s topology record changed the registry by `change` (never a no-op).
    TopologyPut {
        /// The node.
        id: NodeId,
        /// What changed.
        change: PeerChange,
    },
    /// `id`'s topology record was withdrawn.
    TopologyDeleted {
        /// The node.
        id: NodeId,
    },
    /// The registry's session with `id` (`incarnation`) was lost or is back: no record
    /// changes, the evidence book hears it ([`RegistryEvent::Session`]).
    Session {
        /// The node.
        id: NodeId,
        /// The incarnation it registered with.
        incarnation: u64,
        /// Lost (else back).
        lost: bool,
    },
    /// Applied, but nothing changed (a topology record equal to the one held).
    Nothing,
    /// Not applied, for this reason.
    Ignored(RegistryIgnored),
}

/// The records a node routes by and applies registry events to: the discovery set, the
/// topology registry and its revision gate; see the [module docs](self).
#[derive(Debug)]
pub(crate) struct Records {
    /// The node's id (its own topology record is its config's).
    own: NodeId,
    /// The discovery set and its rings.
    pub(crate) discovery: DiscoverySet,
    /// The topology registry.
    pub(crate) topology: TopologyRegistry,
    /// The latest applied topology revision per node.
    revisions: Revisions,
    /// Members' records deleted within the send grace.
    pub(crate) departed: Departed,
    /// Light clients' records deleted within the send grace: a client never comes back under
    /// its id, so what is sent to one now ends at once ([`Records::client_left`]).
    left_clients: Departed,
    /// The nodes whose record is marked leaving.
    leaving: alloc::collections::BTreeSet<NodeId>,
}

impl Records {
    /// A node's records at its start: its own topology record (id, configured upstream,
    /// host, pid, labels) applied locally, an empty discovery set with the configured ring.
    pub(crate) fn for_node(config: &Config) -> Records {
        let own = PeerData {
            hostname: config.hostname.clone(),
            pid: config.pid,
            labels: config.labels.clone(),
        };
        let mut discovery = DiscoverySet::with_ring(RingConfig {
            points_per_node: config.ring_points_per_node,
            mode: config.ring_hash_mode,
        });
        // Every read of a node's ring points (hash and bounded picks) passes through
        // `rings_for(true)`, which settles: a registry burst is rebuilt once at the next such
        // pick, not merged change by change (other picks read only the exact member table).
        discovery.set_ring_burst_deferral(true);
        Records {
            own: config.id,
            discovery,
            topology: TopologyRegistry::with_own(config.id, config.upstream, own),
            revisions: Revisions::default(),
            departed: Departed::new(config.send_grace),
            left_clients: Departed::new(config.send_grace),
            leaving: alloc::collections::BTreeSet::new(),
        }
    }

    /// Topology revisions held ([`Revisions`]).
    pub(crate) fn revision_count(&self) -> usize {
        self.revisions.len()
    }

    /// What the connector routes by.
    pub(crate) fn world(&self) -> World<'_> {
        World::new(&self.topology, &self.discovery)
    }

    /// The incarnation `id`'s discovery record states (0: none, or not stated).
    pub(crate) fn announced(&self, id: NodeId) -> u64 {
        self.discovery
            .get_by_id(id)
            .map_or(0, |info| info.incarnation)
    }

    /// Whether new messages for `id` wait rather than go out through `hop` (the node its
    /// route goes through now): `id` departed within the send grace (they wait for its next
    /// life), or its record or `hop`'s is marked leaving (they wait for its next life's
    /// record). One emptiness check when nothing departed or leaves.
    #[inline]
    pub(crate) fn holds(&self, id: NodeId, hop: NodeId) -> bool {
        (!self.leaving.is_empty() && (self.leaving.contains(&id) || self.leaving.contains(&hop)))
            || self.departed.contains(id)
    }

    /// Whether `id` is a light client whose record was deleted within the send grace (and
    /// nothing came back under its id since): a message for it — an echo or a reply to its
    /// last requests, say — has no one to wait for and ends `Failed(TargetGone)` at once.
    #[inline]
    pub(crate) fn client_left(&self, id: NodeId) -> bool {
        self.left_clients.contains(id)
    }

    /// When the earliest send grace ends ([`Departed`]), members' and clients'.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        match (
            self.departed.next_deadline(),
            self.left_clients.next_deadline(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The departed members whose send grace ends at or before `now` (forgotten, in deadline
    /// order); departed clients past their grace are forgotten too.
    pub(crate) fn expire_departed(&mut self, now: Instant) -> Vec<NodeId> {
        self.left_clients.expire(now);
        self.departed.expire(now)
    }

    /// The member that held `to`'s name if its record was deleted within the send grace and
    /// the pick was among every node (`unfiltered`): its messages wait for its next life.
    pub(crate) fn departed_pick(&self, to: &Select, unfiltered: bool) -> Option<NodeId> {
        match to {
            Select::Name(name) if unfiltered => self.departed.by_name(name),
            _ => None,
        }
    }

    /// The name `id`'s discovery record gives it (`""`: none).
    pub(crate) fn name_of(&self, id: NodeId) -> &str {
        self.discovery
            .get_by_id(id)
            .map_or("", |info| info.name.as_str())
    }

    /// Applies `event`: discovery changes to the discovery set (revision-gated), topology
    /// changes to the topology registry (revision-gated per node; cycles and other invalid
    /// records are rejected with the registry unchanged). A member's record deleted at `now`
    /// is [`Departed`] until `now + send_grace`; a record put ends its id's and name's
    /// departure.
    pub(crate) fn apply(&mut self, now: Instant, event: RegistryEvent) -> RecordChange {
        match event {
            RegistryEvent::DiscoveryPut(info) => {
                let (id, incarnation, client) = (info.id, info.incarnation, info.is_client());
                let (name, leaving) = (info.name.clone(), info.is_leaving());
                match self.discovery.put(info) {
                    Applied::Added { id, displaced, .. }
                    | Applied::Updated { id, displaced, .. } => {
                        self.departed.arrived(id, &name);
                        self.left_clients.arrived(id, "");
                        if let Some(displaced) = &displaced {
                            self.leaving.remove(&displaced.id);
                        }
                        if leaving {
                            self.leaving.insert(id);
                        } else {
                            self.leaving.remove(&id);
                        }
                        RecordChange::DiscoveryPut {
                            id,
                            incarnation,
                            displaced: displaced.map(|d| d.id),
                            client,
                        }
                    }
                    _ => RecordChange::Ignored(RegistryIgnored::Discovery { id }),
                }
            }
            RegistryEvent::DiscoveryDelete { id, name, revision } => {
                match self.discovery.remove(id, &name, revision) {
                    Applied::Removed(info) => {
                        self.leaving.remove(&info.id);
                        if info.is_client() {
                            self.left_clients.note(info.id, "", now);
                        } else {
                            self.departed.note(info.id, &info.name, now);
                        }
                        RecordChange::DiscoveryDeleted {
                            id: info.id,
                            incarnation: info.incarnation,
                            client: info.is_client(),
                        }
                    }
                    _ => RecordChange::Ignored(RegistryIgnored::Discovery { id }),
                }
            }
            RegistryEvent::TopologyPut(info) => {
                let id = info.id;
                match self.revisions.put(&mut self.topology, &info) {
                    Ok(change) if change.is_noop() => RecordChange::Nothing,
                    Ok(change) => RecordChange::TopologyPut { id, change },
                    Err(reason) => RecordChange::Ignored(reason),
                }
            }
            RegistryEvent::TopologyDelete { id, revision } => {
                match self
                    .revisions
                    .delete(&mut self.topology, self.own, id, revision)
                {
                    Ok(()) => RecordChange::TopologyDeleted { id },
                    Err(reason) => RecordChange::Ignored(reason),
                }
            }
            RegistryEvent::Session {
                id,
                incarnation,
                lost_for,
            } => RecordChange::Session {
                id,
                incarnation,
                lost: lost_for.is_some(),
            },
        }
    }
}
