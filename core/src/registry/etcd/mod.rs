//! Pure parts of the etcd registry backend: key layout, libatapp JSON mapping, watcher and
//! lease bookkeeping, snapshot diffing.
//!
//! The etcd adapter (`switchboard-tokio`, feature `etcd`) performs the RPCs; everything it has
//! to *decide* lives here as plain functions and sans-IO state machines, so it is unit-tested,
//! property-tested against a model etcd and fuzzed:
//!
//! - [`keys`]: libatapp's key layout (`<prefix>by_id/<name>-<id>`, `by_name`, `topology`),
//!   parsing keys back, watch prefixes and their `range_end`;
//! - [`register`]: the registration transaction (guarded on `by_id` not existing, topology
//!   first) and the decoding of a conflict;
//! - [`mapping`]: an etcd key-value or watch event → a [`crate::registry::RegistryEvent`];
//! - [`diff`]: what a watcher has delivered versus a fresh list → synthetic puts and deletes;
//! - [`watch`]: [`WatchState`], one per watcher: list → watch from revision + 1 → re-watch
//!   after errors, re-list after compaction, progress watchdog; etcd 3.4 quirks handled;
//! - [`lease`]: [`LeaseState`]: grant, keepalive every 10 s, lease-lost detection,
//!   registration replay, revoke on shutdown.
//!
//! etcd's own data is represented by the small plain structs below ([`KeyValue`],
//! [`WatchEvent`], [`WatchResponse`]); the adapter copies the client crate's values into them.

pub mod diff;
pub mod keys;
pub mod lease;
pub mod mapping;
pub mod register;
pub mod watch;

#[cfg(test)]
mod tests;

use alloc::vec::Vec;

pub use diff::{DeliveredKeys, SnapshotDiff, diff_snapshot};
pub use keys::{KeyError, KeyKind, KeyLayout, ParsedKey, range_end};
pub use lease::{LeaseAction, LeaseConfig, LeaseState, LeaseStats};
pub use mapping::{MapError, map_delete, map_event, map_put};
pub use register::{PutOp, RegisterConflict, RegisterOutcome, RegistrationTxn};
pub use watch::{Delivered, WatchAction, WatchConfig, WatchState, WatchStats};

/// One etcd key-value pair as a range or watch response carries it (`mvccpb.KeyValue`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyValue {
    /// The key bytes.
    pub key: Vec<u8>,
    /// The value bytes; empty for a delete event's kv, and for libatapp's key-only records.
    pub value: Vec<u8>,
    /// Revision of the last creation of this key (0 in a delete event).
    pub create_revision: i64,
    /// Revision of the last modification; for a delete event, the revision of the delete.
    pub mod_revision: i64,
    /// Number of modifications since creation (0 in a delete event).
    pub version: i64,
    /// Lease the key is attached to (0 = none).
    pub lease: i64,
}

impl KeyValue {
    /// The mod revision as an unsigned registry revision (negative values, which etcd never
    /// sends, become 0).
    #[must_use]
    pub fn revision(&self) -> u64 {
        u64::try_from(self.mod_revision).unwrap_or(0)
    }
}

/// Kind of a watch event (`mvccpb.Event.EventType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The key was created or modified.
    Put,
    /// The key was deleted (explicitly, or by its lease expiring or being revoked).
    Delete,
}

/// One watch event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// Put or delete.
    pub kind: EventKind,
    /// The key after the event (for a delete: key and `mod_revision` of the delete only).
    pub kv: KeyValue,
    /// The key before the event, when the watch was created with `prev_kv`.
    pub prev_kv: Option<KeyValue>,
}

/// One message of a watch stream (`etcdserverpb.WatchResponse`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchResponse {
    /// Revision in the response header. **0 in a cancel response on etcd 3.4**: never used as
    /// a resume point from a cancel.
    pub header_revision: i64,
    /// The watch id the server assigned; **-1 for an on-demand progress response on etcd
    /// 3.4**.
    pub watch_id: i64,
    /// The watch was just created.
    pub created: bool,
    /// The watch was cancelled by the server.
    pub canceled: bool,
    /// Set with `canceled` when the requested start revision was compacted: the compaction
    /// revision.
    pub compact_revision: i64,
    /// The response is one fragment of a larger one (only with the fragment option).
    pub fragment: bool,
    /// The events, in revision order.
    pub events: Vec<WatchEvent>,
}

impl WatchResponse {
    /// Whether this is a progress notification: no events, not a creation, not a cancel. Its
    /// header revision is a bookmark (every later event is newer). On etcd 3.4 an on-demand
    /// progress response carries `watch_id` -1 whatever the watcher: route it to every
    /// watcher of the stream.
    #[must_use]
    pub fn is_progress_notify(&self) -> bool {
        self.events.is_empty() && !self.created && !self.canceled
    }
}
