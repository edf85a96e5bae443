//! Snapshot diffing: what a watcher must synthesize after a re-list.
//!
//! After a compaction cancelled a watch, the history between the last delivered revision and
//! the compaction is gone: deletes in that gap would never be seen. The watcher therefore
//! re-lists and compares the fresh snapshot with what it has *delivered* so far
//! ([`DeliveredKeys`]: key → mod revision): keys that vanished get a synthetic delete at the
//! list revision, keys that are new or whose mod revision changed get a put. A key deleted and
//! recreated inside the gap has a new mod revision, so it is one put (the new record replaces
//! the old one). Keys delivered at exactly the listed mod revision produce nothing.

use alloc::{collections::BTreeMap, vec::Vec};

use super::KeyValue;

/// The keys a watcher has delivered and the mod revision each was delivered at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveredKeys {
    keys: BTreeMap<Vec<u8>, u64>,
}

impl DeliveredKeys {
    /// An empty set (nothing delivered yet).
    #[must_use]
    pub fn new() -> DeliveredKeys {
        DeliveredKeys::default()
    }

    /// Records that `key` was delivered as a put at `revision`.
    pub fn put(&mut self, key: &[u8], revision: u64) {
        if let Some(held) = self.keys.get_mut(key) {
            *held = revision;
        } else {
            self.keys.insert(Vec::from(key), revision);
        }
    }

    /// Records that `key` was delivered as deleted.
    pub fn delete(&mut self, key: &[u8]) {
        self.keys.remove(key);
    }

    /// The revision `key` was delivered at, if it is live.
    #[must_use]
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        self.keys.get(key).copied()
    }

    /// Number of live delivered keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is live.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The live keys with their revisions, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        self.keys.iter().map(|(k, &r)| (k.as_slice(), r))
    }
}

/// The changes to synthesize so that a watcher's delivered view equals a fresh list.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotDiff<'a> {
    /// Delivered keys missing from the list, in key order: deliver each as deleted at
    /// [`revision`](SnapshotDiff::revision).
    pub deletes: Vec<Vec<u8>>,
    /// List entries that are new or changed since delivered, in list order: deliver each as
    /// a put at its own mod revision.
    pub puts: Vec<&'a KeyValue>,
    /// The list's header revision, used for the synthetic deletes (every missing key was
    /// deleted at or before it, and after the revision it was delivered at).
    pub revision: u64,
}

/// Compares what was delivered with a list taken at `list_revision`.
///
/// Deletes come first (in key order), then puts (in list order). Applying both to
/// `delivered` makes it equal to the list's keys and mod revisions.
#[must_use]
pub fn diff_snapshot<'a>(
    delivered: &DeliveredKeys,
    list: &'a [KeyValue],
    list_revision: u64,
) -> SnapshotDiff<'a> {
    let listed: BTreeMap<&[u8], u64> = list
        .iter()
        .map(|kv| (kv.key.as_slice(), kv.revision()))
        .collect();
    let deletes = delivered
        .iter()
        .filter(|(key, _)| !listed.contains_key(key))
        .map(|(key, _)| Vec::from(key))
        .collect();
    let puts = list
        .iter()
        .filter(|kv| delivered.get(&kv.key) != Some(kv.revision()))
        .collect();
    SnapshotDiff {
        deletes,
        puts,
        revision: list_revision,
    }
}
