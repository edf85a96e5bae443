//! The registration transaction and the decoding of its outcome.
//!
//! A node registers in **one txn**: `if create_revision(by_id key) == 0` then put the topology,
//! `by_id` and `by_name` keys (libatapp's write order) all with the node's lease, else get the
//! `by_id` key so the conflict can name its owner. All three keys then appear — and, with the
//! lease, disappear — atomically. A topology-only change (an upstream switch) rewrites only the
//! topology key. These functions describe the operations; the adapter turns them into RPCs.
//!
//! **Unique names**: the txn also claims the node's name: its condition includes the name's
//! claim key ([`KeyLayout::claim_key`], `<prefix>names/<name>`) not existing (or, on a
//! takeover, being the one this id held), and its success branch puts the key (the decimal
//! id, on the lease). So two nodes racing for one free name cannot both register — one txn
//! commits, the other's condition fails and its failure branch reads the claim:
//! [`RegistrationTxn::outcome_with_claim`] reports [`RegisterOutcome::NameTaken`] naming the
//! winner. For holders that write no claim (libatapp nodes), the adapter also lists
//! [`RegistrationTxn::name_prefix`] (`<prefix>by_name/<name>-`) first; a key there naming
//! *another* id ([`RegistrationTxn::name_holder`]) is a live holder of the name too.
//!
//! **Takeover**: when the guard fails and the existing `by_id` record carries this node's own
//! non-empty identity ([`RegisterConflict::is_own`], libatapp's checker rule), the node takes
//! the keys over at once: the same puts with its own lease, guarded on the `by_id` key's
//! `mod_revision` being the one it saw ([`RegistrationTxn::takeover_guard`]). A put with the
//! new lease re-attaches each key, so the old lease expiring later deletes nothing of ours.

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
    /// The name's claim put (`<prefix>names/<name>` ← the decimal id, on the lease), last in
    /// the success branch; its key is also conditioned on. `None` for a node without a name.
    pub claim: Option<PutOp>,
}

impl RegistrationTxn {
    /// Plans the registration of `info` and `topology` under `layout`.
    ///
    /// Both discovery copies hold the same JSON; the topology record is written first.
    #[must_use]
    pub fn plan(layout: &KeyLayout, info: &DiscoveryInfo, topology: &TopologyInfo) -> Self {
        let [by_id, by_name] = RegistrationTxn::discovery_update(layout, info);
        RegistrationTxn {
            guard_key: layout.key(KeyKind::ById, &info.name, info.id),
            puts: alloc::vec![
                RegistrationTxn::topology_update(layout, info, topology),
                by_id,
                by_name,
            ],
            claim: layout.claim_key(&info.name).map(|key| PutOp {
                key,
                value: alloc::format!("{}", info.id.0).into_bytes(),
                with_lease: true,
            }),
        }
    }

    /// Who holds the name according to its claim key's value `claim` (as the failure branch
    /// read it): `Some(id)` when another id than this txn's holds it; `None` when the key is
    /// absent, holds this txn's own id, or does not parse (a foreign value claims nothing).
    #[must_use]
    pub fn claim_holder(&self, claim: Option<&KeyValue>) -> Option<crate::ids::NodeId> {
        let own = &self.claim.as_ref()?.value;
        let claim = claim?;
        if claim.value == *own {
            return None;
        }
        let text = core::str::from_utf8(&claim.value).ok()?;
        text.parse::<u64>().ok().map(crate::ids::NodeId)
    }

    /// [`outcome`](Self::outcome), also given the claim key as the failure branch read it: a
    /// failed txn whose name is claimed by another id is [`RegisterOutcome::NameTaken`]
    /// (whatever the `by_id` key says), else the `by_id` conflict as before.
    #[must_use]
    pub fn outcome_with_claim(
        &self,
        succeeded: bool,
        header_revision: i64,
        existing: Option<&KeyValue>,
        claim: Option<&KeyValue>,
    ) -> RegisterOutcome {
        if !succeeded
            && let (Some(holder), Some(put)) = (self.claim_holder(claim), self.claim.as_ref())
        {
            return RegisterOutcome::NameTaken {
                key: put.key.clone(),
                holder,
            };
        }
        self.outcome(succeeded, header_revision, existing)
    }

    /// The range to list before registering to find another holder of the node's name:
    /// `<prefix>by_name/<name>-` (every `by_name` key of that name, and of names that extend
    /// it with a `-`, which [`name_holder`](Self::name_holder) tells apart). `None` for a
    /// node without a name.
    #[must_use]
    pub fn name_prefix(layout: &KeyLayout, info: &DiscoveryInfo) -> Option<Vec<u8>> {
        if info.name.is_empty() {
            return None;
        }
        let mut prefix = layout.watch_prefix(KeyKind::ByName);
        prefix.extend_from_slice(info.name.as_bytes());
        prefix.push(b'-');
        Some(prefix)
    }

    /// The first of `listed` (the keys under [`name_prefix`](Self::name_prefix)) that holds
    /// `info`'s name under another id: its key and id. Keys of other names and unparsable
    /// keys are skipped.
    #[must_use]
    pub fn name_holder(
        layout: &KeyLayout,
        info: &DiscoveryInfo,
        listed: &[KeyValue],
    ) -> Option<(Vec<u8>, crate::ids::NodeId)> {
        listed.iter().find_map(|kv| {
            let parsed = layout.parse(&kv.key).ok()?;
            (parsed.kind == KeyKind::ByName && parsed.name == info.name && parsed.id != info.id)
                .then(|| (kv.key.clone(), parsed.id))
        })
    }

    /// The guard of a takeover of `conflict`'s key: its `mod_revision` must still be the one
    /// the failed txn saw (nobody else took it meanwhile). The success branch is
    /// [`puts`](Self::puts), the failure branch a get of the key, as for the registration.
    #[must_use]
    pub fn takeover_guard(conflict: &RegisterConflict) -> i64 {
        conflict.owner_mod_revision
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

    /// The puts of a discovery-only change (served methods, labels): both copies of the
    /// node's discovery record (`by_id`, `by_name`) rewritten with the lease, in that order.
    #[must_use]
    pub fn discovery_update(layout: &KeyLayout, info: &DiscoveryInfo) -> [PutOp; 2] {
        let discovery = info.to_json();
        [
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
        ]
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
        let (owner, error, lease, create_revision, mod_revision) = match existing {
            Some(kv) => {
                let (owner, error) = if kv.value.is_empty() {
                    (None, None)
                } else {
                    match DiscoveryInfo::from_json_at(&kv.value, kv.revision()) {
                        Ok(info) => (Some(info), None),
                        Err(error) => (None, Some(error)),
                    }
                };
                (owner, error, kv.lease, kv.create_revision, kv.mod_revision)
            }
            None => (None, None, 0, 0, 0),
        };
        RegisterOutcome::Conflict(Box::new(RegisterConflict {
            key: self.guard_key.clone(),
            owner,
            owner_error: error,
            owner_lease: lease,
            create_revision,
            owner_mod_revision: mod_revision,
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
    /// report it, never overwrite (unless it is this node's own, see
    /// [`RegisterConflict::is_own`]).
    Conflict(Box<RegisterConflict>),
    /// Another id holds the node's name (its claim key names another id, or a `by_name` key
    /// of that name under another id was listed at [`RegistrationTxn::name_prefix`]).
    /// Nothing was written; report it and retry later.
    NameTaken {
        /// The holder's claim key or `by_name` key.
        key: Vec<u8>,
        /// The holder's id.
        holder: crate::ids::NodeId,
    },
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
    /// When the existing key was last modified (0 if unknown): the guard of a takeover.
    pub owner_mod_revision: i64,
}

impl RegisterConflict {
    /// Whether the existing key is this very instance's: same lease (a retried txn that had
    /// in fact succeeded), or the same non-empty identity (libatapp's checker rule).
    /// `identity` is the *published* one (what the node's own record carries, the hash
    /// [`published_identity`](crate::discovery::published_identity) of its secret): etcd
    /// holds only published identities.
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
