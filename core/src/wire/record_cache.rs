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
//! The cache is direct-mapped: a record's slot is chosen by a hash of its bytes, a new
//! record replaces whatever held its slot, and a lookup compares the whole bytes, so a
//! collision costs a decode, never a wrong record.

use alloc::{boxed::Box, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;

use crate::discovery::{DecodeError, DiscoveryInfo, TopologyInfo};

/// Hash seed of the slot choice (any fixed value: the cache is deterministic).
const SEED: u64 = 0x5eed_0f_4ec0_4d5;

/// A record decoded once, with the bytes it was decoded from.
#[derive(Clone, Debug)]
struct Slot<T> {
    json: Box<[u8]>,
    record: T,
}

/// Decoded discovery and topology records by their JSON bytes; see the [module
/// docs](self).
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
    /// Slots of each kind by default: the records of a cluster of about this many nodes
    /// stay cached while a change travels to every watcher.
    pub const DEFAULT_SLOTS: usize = 1024;

    /// An empty cache of [`DEFAULT_SLOTS`](Self::DEFAULT_SLOTS) slots per kind.
    #[must_use]
    pub fn new() -> RecordCache {
        RecordCache::default()
    }

    /// An empty cache of `slots` slots per kind (rounded up to a power of two, at least 1);
    /// a slot holds one record and its bytes, so memory is about `slots` × (record + JSON)
    /// once full.
    #[must_use]
    pub fn with_slots(slots: usize) -> RecordCache {
        let slots = slots.max(1).next_power_of_two();
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

/// The record of `json`: a copy of the slot's when it holds these bytes, else decoded and
/// (when good) stored in the slot.
fn lookup<T: Clone>(
    slots: &mut [Option<Slot<T>>],
    (hits, misses): (&mut u64, &mut u64),
    json: &[u8],
    decode: fn(&[u8]) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    // The slot count is a power of two (`with_slots`); the hash's low bits pick the slot.
    let at = (FixedState::with_seed(SEED).hash_one(json) as usize) & (slots.len() - 1);
    if let Some(slot) = &slots[at] {
        if *slot.json == *json {
            *hits += 1;
            return Ok(slot.record.clone());
        }
    }
    *misses += 1;
    let record = decode(json)?;
    slots[at] = Some(Slot {
        json: json.into(),
        record: record.clone(),
    });
    Ok(record)
}
