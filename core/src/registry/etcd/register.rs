//! The registration transaction and the decoding of its outcome.
//!
//! A node registers in **one txn**: `if create_revision(by_id key) == 0` then put the topology,
//! `by_id` and `by_name` keys (libatapp's write order) all with the node's lease, else get the
//! `by_id` key so the conflict can name its owner. All three keys then appear — and, with the
//! lease, disappear — atomically. A topology-only change (an upstream switch) rewrites only the
//! topology key. These functions describe the operations; the adapter turns them into RPCs.

use alloc::{boxed::Box, vec::Vec};

use crate::discovery::{DecodeError, DiscoveryInfo, TopologyInfo};

use super::{
    KeyValue,
    keys::{KeyKind, KeyLayout},
};

/// One put the adapter must perform.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PutOp {
    /// The key.
    pub key: Vec<u8>,
    /// The value (libatapp JSON).
    pub value: Vec<u8>,
    /// Attach the node's lease.
    pub with_lease: bool,
}

/// The registration txn: `when create_revision(guard_key) == 0 then puts else get(guard_key)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistrationTxn {
    /// The `by_id` key whose `create_revision` must be 0 (the key must not exist).
    pub guard_key: Vec<u8>,
    /// The puts of the success branch, in order: topology, `by_id`, `by_name`.
    pub puts: Vec<PutOp>,
}

impl RegistrationTxn {
    /// Plans the registration of `info` and `topology` under `layout`.
    ///
    /// Both discovery copies hold the same JSON; the topology record is written first.
    #[must_use]
    pub fn plan(layout: &KeyLayout, info: &DiscoveryInfo, topology: &TopologyInfo) -> Self {
        let discovery = info.to_json();
        let topology_put = RegistrationTxn::topology_update(layout, info, topology);
        RegistrationTxn {
            guard_key: layout.key(KeyKind::ById, &info.name, info.id),
            puts: alloc::vec![
                topology_put,
                PutOp {
                    key: layout.key(KeyKind::ById, &info.name, info.id),
                    value: discovery.clone(),
                    with_lease: true,
                },
                PutOp {
                    key: layout.key(KeyKind::ByName, &info.name, info.id),
                    value: discovery,
                    with_lease: true,
                },
            ],
        }
    }

    /// The single put of a topology-only change (upstream switch, label change): only the
    /// topology key of the node `info` names is rewritten, with the lease.
    #[must_use]
    pub fn topology_update(
        layout: &KeyLayout,
        info: &DiscoveryInfo,
        topology: &TopologyInfo,
    ) -> PutOp {
        PutOp {
            key: layout.key(KeyKind::Topology, &info.name, info.id),
            value: topology.to_json(),
            with_lease: true,
        }
    }

    /// Decodes the txn's outcome: `succeeded` with the response header revision, or the
    /// failure branch's get result (`existing`, `None` if the key vanished meanwhile).
    #[must_use]
    pub fn outcome(
        &self,
        succeeded: bool,
        header_revision: i64,
        existing: Option<&KeyValue>,
    ) -> RegisterOutcome {
        if succeeded {
            return RegisterOutcome::Registered {
                revision: u64::try_from(header_revision).unwrap_or(0),
            };
        }
        let (owner, error, lease, create_revision) = match existing {
            Some(kv) => {
                let (owner, error) = if kv.value.is_empty() {
                    (None, None)
                } else {
                    match DiscoveryInfo::from_json_at(&kv.value, kv.revision()) {
                        Ok(info) => (Some(info), None),
                        Err(error) => (None, Some(error)),
                    }
                };
                (owner, error, kv.lease, kv.create_revision)
            }
            None => (None, None, 0, 0),
        };
        RegisterOutcome::Conflict(Box::new(RegisterConflict {
            key: self.guard_key.clone(),
            owner,
            owner_error: error,
            owner_lease: lease,
            create_revision,
        }))
    }
}

/// What a registration txn achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterOutcome {
    /// All three keys were written at `revision`.
    Registered {
        /// The txn's revision.
        revision: u64,
    },
    /// The `by_id` key already exists: another instance owns the id. Nothing was written;
    /// report it, never overwrite.
    Conflict(Box<RegisterConflict>),
}

/// The existing owner of a contested `by_id` key.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegisterConflict {
    /// The contested key.
    pub key: Vec<u8>,
    /// The owner's record, when its value decodes (with its mod revision); `None` for a
    /// key-only record, an undecodable value, or a key that vanished before the get.
    pub owner: Option<DiscoveryInfo>,
    /// Why the owner's value did not decode, if it did not.
    pub owner_error: Option<DecodeError>,
    /// The lease the existing key is attached to (0 = none or unknown).
    pub owner_lease: i64,
    /// When the existing key was created (0 if unknown).
    pub create_revision: i64,
}

impl RegisterConflict {
    /// Whether the existing key is this very instance's: same lease (a retried txn that had
    /// in fact succeeded), or the same non-empty identity (libatapp's checker rule).
    #[must_use]
    pub fn is_own(&self, lease: i64, identity: &str) -> bool {
        (lease != 0 && self.owner_lease == lease)
            || (!identity.is_empty()
                && self
                    .owner
                    .as_ref()
                    .is_some_and(|owner| owner.identity == identity))
    }
}
