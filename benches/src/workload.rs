//! Deterministic workloads shared by the criterion benches and the `ring-report` binary.
//!
//! A [`Workload`] is a set of `n` nodes with libatapp-style names (about 40 bytes, so hashing
//! them costs what it costs in a real cluster), non-zero ids and metadata that splits the nodes
//! into two zones, `a` (even index) and `b` (odd index). Every implementation under test is fed
//! from the same workload, and the same seed always yields the same nodes and keys.

use switchboard_core::{
    discovery::{Filter, Metadata},
    hash::HashMode,
    ids::NodeId,
    ring::{Ring, RingConfig, RingMember},
    rng::Rng,
};

use crate::libatapp_emu::{EmuNode, LibatappSet};

/// Virtual points per node for every ring in the comparison (libatapp `HASH_POINT_PER_INS`).
pub const POINTS_PER_NODE: u32 = 80;

/// Node counts of the side-by-side comparison.
pub const NODE_COUNTS: [usize; 4] = [10, 100, 1000, 10_000];

/// One generated node set.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Node ids, all non-zero and distinct.
    pub ids: Vec<NodeId>,
    /// Node names, distinct, about 40 bytes each.
    pub names: Vec<String>,
    /// Node metadata: label `zone` = `a` for even indices, `b` for odd ones.
    pub metadata: Vec<Metadata>,
}

impl Workload {
    /// Generates `n` nodes; different seeds give disjoint name sets.
    #[must_use]
    pub fn new(n: usize, seed: u64) -> Workload {
        let mut ids = Vec::with_capacity(n);
        let mut names = Vec::with_capacity(n);
        let mut metadata = Vec::with_capacity(n);
        for i in 0..n {
            // Ids look like libatapp bus ids (dense, 0x<area><zone><type><instance>), never 0.
            let id = (seed << 32) | (0x0001_0000 + i as u64);
            ids.push(NodeId(id));
            names.push(format!(
                "logic-{seed:02}-{i:05}.gamesvr.zone-1.cluster.local"
            ));
            metadata.push(zone_metadata(if i % 2 == 0 { "a" } else { "b" }));
        }
        Workload {
            ids,
            names,
            metadata,
        }
    }

    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Node `i` as a ring member (id and name).
    #[must_use]
    pub fn member(&self, i: usize) -> RingMember<'_> {
        RingMember::new(self.ids[i], &self.names[i])
    }

    /// Whether the workload has no nodes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Every node of `w` as a ring member, in index order.
pub fn members(w: &Workload) -> impl Iterator<Item = RingMember<'_>> + '_ {
    (0..w.len()).map(|i| w.member(i))
}

/// Metadata of a node in `zone` (kind `logic`, label `zone`).
#[must_use]
pub fn zone_metadata(zone: &str) -> Metadata {
    Metadata {
        kind: "logic".to_owned(),
        labels: [("zone", zone)].into(),
        ..Metadata::default()
    }
}

/// The filter selecting nodes of `zone` (half of every workload).
#[must_use]
pub fn zone_filter(zone: &str) -> Filter {
    Filter(zone_metadata(zone))
}

/// `count` uniformly random lookup keys, pre-generated so benches time only the lookup.
#[must_use]
pub fn keys(count: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed ^ 0x6b65_7973);
    (0..count).map(|_| rng.next_u64()).collect()
}

/// The workload's nodes in a freshly built [`Ring`] of `mode`.
#[must_use]
pub fn ring(w: &Workload, mode: HashMode) -> Ring {
    let mut ring = Ring::new(RingConfig {
        mode,
        ..RingConfig::default()
    });
    ring.build(members(w)).expect("workload ids are non-zero");
    ring
}

/// The workload's nodes in the libatapp emulation (its rings are built lazily on first use).
#[must_use]
pub fn emu_set(w: &Workload) -> LibatappSet {
    let mut set = LibatappSet::new();
    for i in 0..w.len() {
        set.add_node(EmuNode::new(
            w.ids[i],
            w.names[i].clone(),
            w.metadata[i].clone(),
        ));
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_is_deterministic_and_distinct() {
        let a = Workload::new(100, 7);
        let b = Workload::new(100, 7);
        assert_eq!(a.names, b.names);
        assert_eq!(a.ids, b.ids);
        assert_eq!(a.names[3], "logic-07-00003.gamesvr.zone-1.cluster.local");
        assert_eq!(a.ids[3], NodeId(0x0000_0007_0001_0003));
        let mut names = a.names.clone();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 100);
        assert_ne!(Workload::new(100, 8).names[3], a.names[3]);
    }

    #[test]
    fn zone_filter_selects_even_nodes() {
        let w = Workload::new(10, 1);
        let f = zone_filter("a");
        let picked: Vec<usize> = (0..10).filter(|&i| f.matches(&w.metadata[i])).collect();
        assert_eq!(picked, vec![0, 2, 4, 6, 8]);
    }
}
