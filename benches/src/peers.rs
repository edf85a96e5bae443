//! Thin wrappers that give the peer crates one shape for the side-by-side benches: build from a
//! node list, add one node, remove one node, look up a `u64` key.
//!
//! Each crate is measured as shipped, with its default hasher:
//!
//! - `hashring` 0.3: a sorted `Vec` of `(hash, T)`, SipHash-2-4. It has no virtual points, so
//!   the wrapper adds 80 `(name, i)` pairs per node. Adding a node uses `batch_add` (one push of
//!   80 pairs and one sort; `add` would sort after every pair). Removing a node removes its 80
//!   pairs one by one (`Vec::remove` each).
//! - `conhash` 0.5: a `BTreeMap<Vec<u8>, N>` keyed by MD5 of `"name:i"`, 80 replicas per node.
//! - `anchorhash` 0.2: AnchorHash with capacity fixed at build time (the node count here, so
//!   lookups see the best case `a = w`), std `RandomState` (SipHash-1-3) for keys.
//! - `jumphash` 0.1: Jump consistent hash over SipHash-1-3; lookup only (buckets are numbered,
//!   only the last one can be removed). Seeded with fixed keys instead of `thread_rng` so runs
//!   repeat; the hash function is the shipped one.
//!
//! The "same hasher" column ([`HashringPeer::build_same_hasher`], [`JumpPeer::same_hasher`])
//! runs `hashring` and `jumphash` with [`Murmur3Hasher`] — murmur3_x64_128 with libatapp's key
//! seed, the hash our rings use for keys — so their rows compare data structures, not hashes.

use std::{
    collections::hash_map::RandomState,
    hash::{BuildHasher, BuildHasherDefault, Hasher},
    sync::Arc,
};

use anchorhash::AnchorHash;
use conhash::ConsistentHash;
use hashring::HashRing;
use jumphash::{CustomJumpHasher, JumpHasher};
use switchboard_core::hash::{LIBATAPP_KEY_SEED, murmur3_x64_128};

use crate::workload::POINTS_PER_NODE;

/// A [`Hasher`] returning `h1` of murmur3_x64_128 (seed [`LIBATAPP_KEY_SEED`]) of the bytes
/// written, buffered inline (no allocation; past 128 bytes the buffer is folded into its hash).
#[derive(Clone, Debug)]
pub struct Murmur3Hasher {
    buf: [u8; 128],
    len: usize,
}

impl Default for Murmur3Hasher {
    fn default() -> Murmur3Hasher {
        Murmur3Hasher {
            buf: [0; 128],
            len: 0,
        }
    }
}

impl Hasher for Murmur3Hasher {
    fn finish(&self) -> u64 {
        murmur3_x64_128(&self.buf[..self.len], LIBATAPP_KEY_SEED).0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(64) {
            if self.len + chunk.len() > self.buf.len() {
                let folded = self.finish().to_le_bytes();
                self.buf[..8].copy_from_slice(&folded);
                self.len = 8;
            }
            self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
    }
}

/// `hashring::HashRing` holding 80 `(name, i)` virtual points per node.
#[derive(Clone, Debug)]
pub struct HashringPeer<'a, S = RandomState> {
    ring: HashRing<(&'a str, u32), S>,
}

impl<'a> HashringPeer<'a> {
    /// Builds the ring for `names` with one `batch_add` (one sort), SipHash as shipped.
    #[must_use]
    pub fn build(names: &'a [String]) -> HashringPeer<'a> {
        HashringPeer::build_with(names, RandomState::new())
    }
}

impl<'a> HashringPeer<'a, BuildHasherDefault<Murmur3Hasher>> {
    /// [`HashringPeer::build`] with [`Murmur3Hasher`] (the same-hasher column).
    #[must_use]
    pub fn build_same_hasher(names: &'a [String]) -> Self {
        HashringPeer::build_with(names, BuildHasherDefault::default())
    }
}

impl<'a, S: BuildHasher> HashringPeer<'a, S> {
    /// Builds the ring for `names` with one `batch_add` (one sort) and `hasher`.
    #[must_use]
    pub fn build_with(names: &'a [String], hasher: S) -> HashringPeer<'a, S> {
        let mut ring = HashRing::with_hasher(hasher);
        let points = names
            .iter()
            .flat_map(|n| (0..POINTS_PER_NODE).map(move |i| (n.as_str(), i)))
            .collect();
        ring.batch_add(points);
        HashringPeer { ring }
    }

    /// Adds one node's 80 points with one `batch_add`.
    pub fn add(&mut self, name: &'a str) {
        self.ring
            .batch_add((0..POINTS_PER_NODE).map(|i| (name, i)).collect());
    }

    /// Removes one node's 80 points.
    pub fn remove(&mut self, name: &'a str) {
        for i in 0..POINTS_PER_NODE {
            self.ring.remove(&(name, i));
        }
    }

    /// The node name owning `key`.
    #[must_use]
    pub fn lookup(&self, key: u64) -> Option<&'a str> {
        self.ring.get(&key).map(|p| p.0)
    }

    /// Number of points on the ring.
    #[must_use]
    pub fn point_count(&self) -> usize {
        self.ring.len()
    }
}

/// A `conhash` node: its name, shared so the 80 replica copies are cheap clones.
#[derive(Clone, Debug)]
pub struct ConNode(pub Arc<str>);

impl conhash::Node for ConNode {
    fn name(&self) -> String {
        self.0.to_string()
    }
}

/// `conhash::ConsistentHash` with 80 replicas per node.
pub struct ConhashPeer {
    ring: ConsistentHash<ConNode>,
}

impl ConhashPeer {
    /// Builds the ring by adding every node (80 MD5 hashes and `BTreeMap` inserts each).
    #[must_use]
    pub fn build(names: &[String]) -> ConhashPeer {
        let mut peer = ConhashPeer {
            ring: ConsistentHash::new(),
        };
        for name in names {
            peer.add(name);
        }
        peer
    }

    /// Adds one node with 80 replicas.
    pub fn add(&mut self, name: &str) {
        self.ring
            .add(&ConNode(Arc::from(name)), POINTS_PER_NODE as usize);
    }

    /// Removes one node and its replicas.
    pub fn remove(&mut self, name: &str) {
        self.ring.remove(&ConNode(Arc::from(name)));
    }

    /// The node owning `key` (its 8 little-endian bytes).
    #[must_use]
    pub fn lookup(&self, key: u64) -> Option<&ConNode> {
        self.ring.get(&key.to_le_bytes())
    }

    /// Number of points on the ring.
    #[must_use]
    pub fn point_count(&self) -> usize {
        self.ring.len()
    }
}

/// `anchorhash::AnchorHash` over node indices, capacity = the initial node count.
#[derive(Clone, Debug)]
pub struct AnchorPeer {
    anchor: AnchorHash<u64, u32, RandomState>,
}

impl AnchorPeer {
    /// Builds an AnchorHash with `n` resources `0..n` and capacity `n` (at most 65 535).
    #[must_use]
    pub fn build(n: usize) -> AnchorPeer {
        let capacity = u16::try_from(n).expect("anchorhash capacity is a u16");
        let resources = (0..u32::from(capacity)).collect::<Vec<u32>>();
        let anchor = anchorhash::Builder::default()
            .with_resources(resources)
            .build(capacity);
        AnchorPeer { anchor }
    }

    /// Adds resource `node`; false when the capacity is reached.
    pub fn add(&mut self, node: u32) -> bool {
        self.anchor.add_resource(node).is_ok()
    }

    /// Removes resource `node`; false when it is not present.
    pub fn remove(&mut self, node: u32) -> bool {
        self.anchor.remove_resource(&node).is_ok()
    }

    /// The resource owning `key`.
    #[must_use]
    pub fn lookup(&self, key: u64) -> Option<u32> {
        self.anchor.get_resource(key).copied()
    }
}

/// `jumphash::JumpHasher` over `n` numbered buckets.
#[derive(Clone, Copy, Debug)]
pub struct JumpPeer {
    hasher: JumpHasher,
    buckets: u32,
}

/// `jumphash::CustomJumpHasher` with [`Murmur3Hasher`] over `n` buckets (same-hasher column).
#[derive(Clone, Debug)]
pub struct JumpSameHasherPeer {
    hasher: CustomJumpHasher<Murmur3Hasher>,
    buckets: u32,
}

impl JumpSameHasherPeer {
    /// The bucket owning `key`.
    #[must_use]
    pub fn lookup(&self, key: u64) -> u32 {
        self.hasher.slot(&key, self.buckets)
    }
}

impl JumpPeer {
    /// A jump hash over `n` buckets (n ≥ 1).
    #[must_use]
    pub fn new(n: usize) -> JumpPeer {
        JumpPeer {
            hasher: JumpHasher::new_with_keys(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210),
            buckets: u32::try_from(n).expect("bucket count fits u32"),
        }
    }

    /// The bucket owning `key`.
    #[must_use]
    pub fn lookup(&self, key: u64) -> u32 {
        self.hasher.slot(&key, self.buckets)
    }

    /// A jump hash over `n` buckets hashing keys with [`Murmur3Hasher`].
    #[must_use]
    pub fn same_hasher(n: usize) -> JumpSameHasherPeer {
        JumpSameHasherPeer {
            hasher: CustomJumpHasher::new(Murmur3Hasher::default()),
            buckets: u32::try_from(n).expect("bucket count fits u32"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Workload, keys};

    #[test]
    fn hashring_peer_holds_80_points_per_node_and_add_remove_round_trips() {
        let w = Workload::new(20, 1);
        let mut peer = HashringPeer::build(&w.names);
        assert_eq!(peer.point_count(), 1600);
        let before: Vec<_> = keys(500, 2).iter().map(|&k| peer.lookup(k)).collect();
        peer.remove(&w.names[3]);
        assert_eq!(peer.point_count(), 1520);
        assert!(
            keys(500, 2)
                .iter()
                .all(|&k| peer.lookup(k) != Some(w.names[3].as_str()))
        );
        peer.add(&w.names[3]);
        let after: Vec<_> = keys(500, 2).iter().map(|&k| peer.lookup(k)).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn conhash_peer_holds_80_points_per_node_and_add_remove_round_trips() {
        let w = Workload::new(20, 1);
        let mut peer = ConhashPeer::build(&w.names);
        assert_eq!(peer.point_count(), 1600);
        let owner = |p: &ConhashPeer, k: u64| p.lookup(k).map(|n| n.0.to_string());
        let before: Vec<_> = keys(500, 2).iter().map(|&k| owner(&peer, k)).collect();
        peer.remove(&w.names[3]);
        assert_eq!(peer.point_count(), 1520);
        peer.add(&w.names[3]);
        let after: Vec<_> = keys(500, 2).iter().map(|&k| owner(&peer, k)).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn anchor_peer_remove_then_add_restores_mapping() {
        let mut peer = AnchorPeer::build(50);
        let before: Vec<_> = keys(500, 2).iter().map(|&k| peer.lookup(k)).collect();
        assert!(before.iter().all(|o| o.is_some_and(|r| r < 50)));
        assert!(!peer.add(50), "capacity is the node count");
        assert!(peer.remove(7));
        assert!(!peer.remove(7));
        assert!(keys(500, 2).iter().all(|&k| peer.lookup(k) != Some(7)));
        assert!(peer.add(7));
        let after: Vec<_> = keys(500, 2).iter().map(|&k| peer.lookup(k)).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn murmur3_hasher_is_our_key_hash_of_the_written_bytes() {
        let mut h = Murmur3Hasher::default();
        h.write_u64(123);
        assert_eq!(h.finish(), switchboard_core::hash::key_hash_u64(123).hi);
        // Past the inline buffer the bytes are folded, still deterministically.
        let long = [7u8; 300];
        let (mut a, mut b) = (Murmur3Hasher::default(), Murmur3Hasher::default());
        a.write(&long);
        b.write(&long);
        assert_eq!(a.finish(), b.finish());
    }

    #[test]
    fn same_hasher_peers_round_trip_like_the_shipped_ones() {
        let w = Workload::new(20, 1);
        let mut peer = HashringPeer::build_same_hasher(&w.names);
        assert_eq!(peer.point_count(), 1600);
        let before: Vec<_> = keys(500, 2).iter().map(|&k| peer.lookup(k)).collect();
        peer.remove(&w.names[3]);
        assert!(
            keys(500, 2)
                .iter()
                .all(|&k| peer.lookup(k) != Some(w.names[3].as_str()))
        );
        peer.add(&w.names[3]);
        let after: Vec<_> = keys(500, 2).iter().map(|&k| peer.lookup(k)).collect();
        assert_eq!(before, after);
        let jump = JumpPeer::same_hasher(10);
        assert!(keys(1000, 3).iter().all(|&k| jump.lookup(k) < 10));
    }

    #[test]
    fn jump_peer_stays_in_range_and_is_deterministic() {
        let a = JumpPeer::new(10);
        let b = JumpPeer::new(10);
        for k in keys(1000, 3) {
            assert!(a.lookup(k) < 10);
            assert_eq!(a.lookup(k), b.lookup(k));
        }
    }
}
