//! The client's view of the registry: the peers it reports to its node, and how snapshots,
//! puts and deletes (of one epoch or a new one) turn into [`RegistryEvent`]s.
//!
//! # Revisions across epochs
//!
//! Each registry epoch numbers its changes from 1, but the node's
//! [`DiscoverySet`](crate::discovery::DiscoverySet) gates by revision, so the view maps a
//! registry revision `r` of the `g`-th epoch it has seen (`g` from 1) to
//! `(g << 40) | min(r, 2^40 - 1)`: strictly increasing across epochs, never 0 (0 means "not
//! from a registry" to the node), monotonic within one epoch up to 2^40 changes.

use alloc::{
    collections::{BTreeSet, VecDeque},
    string::String,
    sync::Arc,
};

use super::{ClientOutput, grace::GraceTimers, peers::Peers};
use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    registry::RegistryEvent,
    registry::server::EntryKey,
    time::{Duration, Instant},
    wire::{RegistryEntry, Snapshot},
};

/// Bits of a mapped revision taken by the registry's own revision.
pub const REVISION_BITS: u32 = 40;

const REVISION_MASK: u64 = (1 << REVISION_BITS) - 1;

/// One peer as reported to the node (records carry mapped revisions).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Peer {
    /// Incarnation it registered with.
    pub incarnation: u64,
    /// Its discovery record, as last reported (the same record the node's discovery set
    /// holds).
    pub discovery: Arc<DiscoveryInfo>,
    /// Its topology record, as last reported (behind an `Arc`: a view holds one `Peer` per
    /// known node, and a small entry keeps the view's tree small).
    pub topology: Option<Arc<TopologyInfo>>,
    /// Its registry session is lost (the registry marks it suspect: disconnect protection).
    pub suspect: bool,
}

/// Whether two mapped revisions name the same version of a record: the registry stamps a
/// record with a new revision whenever it changes, so within one epoch (the generation bits)
/// an equal revision is equal content and needs no field-by-field comparison. A revision
/// clamped at the mask is not trusted.
fn same_version(held: u64, new: u64) -> bool {
    held == new && new & REVISION_MASK != REVISION_MASK
}

#[derive(Debug, Default)]
pub(super) struct View {
    pub(super) peers: Peers,
    /// Peers missing from a new-epoch snapshot, until their grace ends.
    pub(super) in_grace: GraceTimers,
    pub(super) epoch: Option<u64>,
    generation: u64,
    /// Latest registry revision seen in the current epoch.
    revision: u64,
}

impl View {
    /// The node-facing revision of registry revision `revision` in the current epoch.
    pub(super) fn map(&self, revision: u64) -> u64 {
        (self.generation << REVISION_BITS) | revision.min(REVISION_MASK)
    }

    pub(super) fn grace_deadline(&self) -> Option<Instant> {
        self.in_grace.next_deadline()
    }

    /// Merges a snapshot; returns (new epoch, peers now inside the grace).
    pub(super) fn snapshot(
        &mut self,
        now: Instant,
        grace: Duration,
        snapshot: Snapshot,
        out: &mut VecDeque<ClientOutput>,
    ) -> (bool, usize) {
        let new_epoch = self.epoch != Some(snapshot.epoch);
        if new_epoch {
            self.generation += 1;
            self.epoch = Some(snapshot.epoch);
        }
        self.revision = snapshot.revision;
        let mut present = BTreeSet::new();
        for entry in snapshot.entries {
            let Some(key) = EntryKey::of(&entry.discovery) else {
                continue;
            };
            present.insert(key.clone());
            self.in_grace.end(&key);
            self.upsert(key, entry, out);
        }
        let absent: alloc::vec::Vec<EntryKey> = (self.peers.iter())
            .map(|(key, _)| key)
            .filter(|k| !present.contains(k))
            .collect();
        for key in absent {
            if new_epoch || self.in_grace.contains(&key) {
                // Not back with the new registry yet (or still inside an earlier grace, whose
                // deadline stays).
                self.in_grace.start(key, now + grace);
            } else {
                let revision = self.map(snapshot.revision);
                self.remove(&key, revision, out);
            }
        }
        (new_epoch, self.in_grace.len())
    }

    pub(super) fn put(
        &mut self,
        revision: u64,
        entry: RegistryEntry,
        out: &mut VecDeque<ClientOutput>,
    ) {
        self.revision = self.revision.max(revision);
        if let Some(key) = EntryKey::of(&entry.discovery) {
            self.in_grace.end(&key);
            self.upsert(key, entry, out);
        }
    }

    pub(super) fn delete(
        &mut self,
        revision: u64,
        key: &EntryKey,
        out: &mut VecDeque<ClientOutput>,
    ) {
        self.revision = self.revision.max(revision);
        let mapped = self.map(revision);
        self.remove(key, mapped, out);
    }

    /// Deletes every peer whose grace ended at or before `now`, earliest deadline first.
    pub(super) fn expire(&mut self, now: Instant, out: &mut VecDeque<ClientOutput>) {
        let revision = self.map(self.revision);
        while let Some(key) = self.in_grace.pop_expired(now) {
            self.remove(&key, revision, out);
        }
    }

    fn remove(&mut self, key: &EntryKey, revision: u64, out: &mut VecDeque<ClientOutput>) {
        self.in_grace.end(key);
        let Some(peer) = self.peers.remove(key) else {
            return;
        };
        out.push_back(ClientOutput::Registry(RegistryEvent::DiscoveryDelete {
            id: peer.discovery.id,
            name: peer.discovery.name.clone(),
            revision,
        }));
        if peer.topology.is_some() {
            out.push_back(ClientOutput::Registry(RegistryEvent::TopologyDelete {
                id: peer.discovery.id,
                revision,
            }));
        }
    }

    /// Stores `entry` and reports what changed: topology first (libatapp's order), then
    /// discovery, then the session when its `lost_for` flag changed (a new entry reports a
    /// lost one only, with the age the registry gave). An entry equal in content to what the node holds reports nothing.
    fn upsert(&mut self, key: EntryKey, entry: RegistryEntry, out: &mut VecDeque<ClientOutput>) {
        let RegistryEntry {
            incarnation,
            mut discovery,
            mut topology,
            lost_for,
        } = entry;
        let suspect = lost_for.is_some();
        discovery.revision = self.map(discovery.revision);
        let discovery = Arc::new(discovery);
        if let Some(t) = topology.as_mut() {
            t.revision = self.map(t.revision);
        }
        let topology = topology.map(Arc::new);
        // One search for both the comparison and the store.
        self.peers.upsert(key, |old| {
            match (old.and_then(|p| p.topology.as_deref()), &topology) {
                (Some(held), Some(new)) if same_version(held.revision, new.revision) => {}
                (Some(held), Some(new)) if held.same_content(new) => {}
                (_, Some(new)) => {
                    out.push_back(ClientOutput::Registry(RegistryEvent::TopologyPut(
                        Arc::clone(new),
                    )));
                }
                (Some(held), None) => {
                    out.push_back(ClientOutput::Registry(RegistryEvent::TopologyDelete {
                        id: held.id,
                        revision: discovery.revision,
                    }));
                }
                (None, None) => {}
            }
            let unchanged = old.is_some_and(|p| {
                same_version(p.discovery.revision, discovery.revision)
                    || p.discovery.same_content(&discovery)
            });
            if !unchanged {
                out.push_back(ClientOutput::Registry(RegistryEvent::DiscoveryPut(
                    Arc::clone(&discovery),
                )));
            }
            if old.map_or(suspect, |p| p.suspect != suspect) {
                out.push_back(ClientOutput::Registry(RegistryEvent::Session {
                    id: discovery.id,
                    incarnation,
                    lost_for,
                }));
            }
            Peer {
                incarnation,
                discovery,
                topology,
                suspect,
            }
        });
    }

    /// The key a `Delete` frame names.
    pub(super) fn key_of_delete(id: crate::ids::NodeId, name: &str) -> EntryKey {
        if id.is_valid() {
            EntryKey::Id(id)
        } else {
            EntryKey::Name(String::from(name))
        }
    }
}
