//! [`RecordCache`]: decoded registry records kept by their JSON bytes, for the registry
//! clients of one process to share.
//!
//! The registry sends each change to every watcher in the same bytes. A process that runs
//! many nodes — the simulator, `switchboard swarm` — would decode each record once per node,
//! N² decodes for a cluster's join. With a cache lent to the frame reader
//! ([`FrameReader::next_frame_cached`](super::FrameReader::next_frame_cached)) the first
//! client decodes a record and the others copy the decoded value: a decode is a pure
//! function of the bytes, so a copy is exactly what a decode would have given (the revision
//! is stamped on the copy, as on a decode). Only good records are kept; bytes that fail to
//! decode fail again, with the same error, at every client.
//!
//! Only records of at most [`MAX_KEPT_JSON`](RecordCache::MAX_KEPT_JSON) bytes are kept
//! (a record is a few hundred), so a full cache holds a bounded amount whatever the registry
//! sends: larger ones are decoded at every client, as without a cache.
//!
//! The cache is two-way set-associative: a hash of a record's bytes picks a set of two
//! slots, a hit moves the record to the set's first slot, a new record goes there and
//! pushes the first slot's record to the second (the least recently used of the two is
//! dropped), and a lookup compares the whole bytes, so a collision costs a decode, never a
//! wrong record.

use alloc::{boxed::Box, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;

use crate::discovery::{DecodeError, DiscoveryInfo, TopologyInfo};

/// Hash seed of the slot choice (any fixed value: the cache is deterministic).
const SEED: u64 = 0x5eed_0f4e_c04d_5eed;

/// A record decoded once, with the bytes it was decoded from.
#[derive(Clone, Debug)]
struct Slot<T> {
    json: Box<[u8]>,
    record: T,
}

/// Decoded discovery and topology records by their JSON bytes, lent to
/// [`FrameReader::next_frame_cached`](super::FrameReader::next_frame_cached) by the registry
/// clients of one process so that each record is decoded once between them: a hit is a copy
/// of the decoded value with the entry's revision stamped, bad bytes are never kept, records
/// over [`MAX_KEPT_JSON`](Self::MAX_KEPT_JSON) bytes are not kept, and each hash picks a set
/// of two slots whose least recently used record a new one replaces.
#[derive(Clone, Debug)]
pub struct RecordCache {
    discovery: Vec<Option<Slot<DiscoveryInfo>>>,
    topology: Vec<Option<Slot<TopologyInfo>>>,
    hits: u64,
    misses: u64,
}

impl Default for RecordCache {
    fn default() -> RecordCache {
        RecordCache::with_slots(RecordCache::DEFAULT_SLOTS)
    }
}

impl RecordCache {
    /// The largest JSON record kept (bytes); larger ones are decoded every time.
    pub const MAX_KEPT_JSON: usize = 4096;

    /// Slots of each kind by default: the records of a cluster of about this many nodes
    /// stay cached while a change travels to every watcher.
    pub const DEFAULT_SLOTS: usize = 1024;

    /// An empty cache of [`DEFAULT_SLOTS`](Self::DEFAULT_SLOTS) slots per kind.
    #[must_use]
    pub fn new() -> RecordCache {
        RecordCache::default()
    }

    /// An empty cache of `slots` slots per kind (rounded up to a power of two, at least 2);
    /// a slot holds one record and its bytes, so memory is about `slots` × (record + JSON)
    /// once full.
    #[must_use]
    pub fn with_slots(slots: usize) -> RecordCache {
        let slots = slots.max(2).next_power_of_two();
        RecordCache {
            discovery: (0..slots).map(|_| None).collect(),
            topology: (0..slots).map(|_| None).collect(),
            hits: 0,
            misses: 0,
        }
    }

    /// Lookups answered from the cache.
    #[must_use]
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Lookups that decoded (a new record, a replaced slot, or bytes that do not decode).
    #[must_use]
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// [`DiscoveryInfo::from_json_at`], answered from the cache when these bytes decoded
    /// before.
    pub(super) fn discovery(
        &mut self,
        json: &[u8],
        revision: u64,
    ) -> Result<DiscoveryInfo, DecodeError> {
        let mut info = lookup(
            &mut self.discovery,
            (&mut self.hits, &mut self.misses),
            json,
            DiscoveryInfo::from_json,
        )?;
        info.revision = revision;
        Ok(info)
    }

    /// [`TopologyInfo::from_json_at`], answered from the cache when these bytes decoded
    /// before.
    pub(super) fn topology(
        &mut self,
        json: &[u8],
        revision: u64,
    ) -> Result<TopologyInfo, DecodeError> {
        let mut info = lookup(
            &mut self.topology,
            (&mut self.hits, &mut self.misses),
            json,
            TopologyInfo::from_json,
        )?;
        info.revision = revision;
        Ok(info)
    }
}

/// The record of `json`: a copy of its set's when the set holds these bytes, else decoded
/// and (when good) stored first in the set.
fn lookup<T: Clone>(
    slots: &mut [Option<Slot<T>>],
    (hits, misses): (&mut u64, &mut u64),
    json: &[u8],
    decode: fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    if json.len() > RecordCache::MAX_KEPT_JSON {
        *misses += 1;
        return decode(json);
    }
    // The slot count is a power of two of at least 2 (`with_slots`): sets of two slots, the
    // hash's low bits pick the set.
    let sets = slots.len() / 2;
    let first = 2 * ((FixedState::with_seed(SEED).hash_one(json) as usize) & (sets - 1));
    let set = &mut slots[first..first + 2];
    let holds = |slot: &Option<Slot<T>>| slot.as_ref().is_some_and(|s| *s.json == *json);
    if holds(&set[1]) {
        set.swap(0, 1);
    }
    if let Some(slot) = set[0].as_ref().filter(|s| *s.json == *json) {
        *hits += 1;
        return Ok(slot.record.clone());
    }
    *misses += 1;
    let record = decode(json)?;
    set.swap(0, 1);
    set[0] = Some(Slot {
        json: json.into(),
        record: record.clone(),
    });
    Ok(record)
}
