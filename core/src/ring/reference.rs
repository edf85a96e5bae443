//! Naive reference model of a ring for tests: hash every point directly, sort by the full
//! `(position, low half, id)` triple, binary-search, and walk searches exactly like libatapp's
//! `lower_bound_node_hash_by_consistent_hash` loop over a materialised compact ring.

use alloc::{string::String, vec::Vec};
use std::collections::HashSet;

use super::{RingConfig, SearchMode};
use crate::{
    hash::{
        HashMode, KeyHash, compat_point, fast_node_hash, fast_point, murmur3_x64_128, node_bytes,
    },
    ids::NodeId,
};

/// A point of the naive ring: (stored position, low half or 0, node).
pub(crate) type NaivePoint = (u64, u64, NodeId);

/// The naive ring of a membership.
pub(crate) struct NaiveRing {
    pub(crate) config: RingConfig,
    pub(crate) points: Vec<NaivePoint>,
    pub(crate) nodes: usize,
}

impl NaiveRing {
    pub(crate) fn new(config: RingConfig, members: &[(NodeId, String)]) -> NaiveRing {
        let mut points = Vec::new();
        for (id, name) in members {
            if config.mode == HashMode::Fast {
                for i in 0..config.points_per_node {
                    points.push((fast_point(fast_node_hash(name, *id), i), 0, *id));
                }
                continue;
            }
            // The libatapp layouts, spelled out independently of `compat_sources`.
            let id_bytes = id.0.to_le_bytes();
            let sources: Vec<(&[u8], u32)> = match config.mode {
                HashMode::LibatappV012 if name.is_empty() => {
                    alloc::vec![(&id_bytes[..], config.points_per_node / 2)]
                }
                HashMode::LibatappV012 => alloc::vec![
                    (&id_bytes[..], config.points_per_node / 2),
                    (name.as_bytes(), config.points_per_node / 2),
                ],
                _ => alloc::vec![(node_bytes(name, &id_bytes), config.points_per_node)],
            };
            for (bytes, count) in sources {
                for i in 0..count {
                    let (h1, h2) = compat_point(bytes, i);
                    // compat_point is murmur3 with the test mask on h1.
                    debug_assert_eq!(h2, murmur3_x64_128(bytes, i).1);
                    points.push((h1, h2, *id));
                }
            }
        }
        points.sort_unstable();
        NaiveRing {
            config,
            points,
            nodes: members.len(),
        }
    }

    /// `(position, node)` in ring order, as `Ring::points` reports them.
    pub(crate) fn positions(&self) -> Vec<(u64, NodeId)> {
        self.points.iter().map(|&(k, _, id)| (k, id)).collect()
    }

    fn lower_bound(&self, h: KeyHash) -> usize {
        match self.config.mode {
            HashMode::Fast => self.points.partition_point(|p| p.0 < h.hi),
            _ => self.points.partition_point(|p| (p.0, p.1) < (h.hi, h.lo)),
        }
    }

    pub(crate) fn lookup(&self, h: KeyHash) -> Option<NodeId> {
        if self.points.is_empty() {
            return None;
        }
        let i = self.lower_bound(h);
        Some(self.points.get(i).unwrap_or(&self.points[0]).2)
    }

    /// libatapp `rebuild_compact_cache`, literally.
    pub(crate) fn compact(&self) -> Vec<NaivePoint> {
        let mut out: Vec<NaivePoint> = Vec::new();
        let Some(mut prev) = self.points.first().copied() else {
            return out;
        };
        for &p in &self.points[1..] {
            if p.2 != prev.2 {
                out.push(prev);
            }
            prev = p;
        }
        if out.is_empty() || prev.2 != out[0].2 {
            out.push(prev);
        }
        out
    }

    /// libatapp's search loop over the normal or compact ring. `skip_node` skips every point
    /// of that node (the documented `SearchMode` semantics).
    pub(crate) fn successors(&self, h: KeyHash, k: usize, mode: SearchMode) -> Vec<NodeId> {
        let compact;
        let ring: &[NaivePoint] = if mode.compact {
            compact = self.compact();
            &compact
        } else {
            &self.points
        };
        let mut out = Vec::new();
        if ring.is_empty() {
            return out;
        }
        let max_output = if mode.unique_node {
            self.nodes
        } else {
            ring.len()
        };
        let mut i = match self.config.mode {
            HashMode::Fast => ring.partition_point(|p| p.0 < h.hi),
            _ => ring.partition_point(|p| (p.0, p.1) < (h.hi, h.lo)),
        };
        let mut seen = HashSet::new();
        let mut check = ring.len();
        while out.len() < k && out.len() < max_output && check > 0 {
            if i == ring.len() {
                i = 0;
            }
            let node = ring[i].2;
            i += 1;
            check -= 1;
            if mode.skip_node == Some(node) {
                continue;
            }
            if mode.unique_node && !seen.insert(node) {
                continue;
            }
            out.push(node);
        }
        out
    }

    /// Exact arc owned by each node: a key maps to the first point at or after it, so a point
    /// owns the arc from its predecessor (exclusive) to itself (inclusive).
    pub(crate) fn arcs(&self) -> Vec<(NodeId, u128)> {
        let mut owned: Vec<(NodeId, u128)> = Vec::new();
        let n = self.points.len();
        for (i, p) in self.points.iter().enumerate() {
            let prev = self.points[(i + n - 1) % n].0;
            let arc = if n == 1 {
                1u128 << 64
            } else {
                u128::from(p.0.wrapping_sub(prev))
            };
            match owned.iter_mut().find(|(id, _)| *id == p.2) {
                Some(e) => e.1 += arc,
                None => owned.push((p.2, arc)),
            }
        }
        owned
    }
}
