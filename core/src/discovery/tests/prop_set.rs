//! Model-based property tests of [`DiscoverySet`] and round-trip properties of the codec.
//!
//! The model is deliberately naive (a list of records and a list of tombstones, linear scans)
//! and implements the rules of the `set` module docs independently of the indexed version.

use alloc::{
    boxed::Box,
    string::{String, ToString},
    sync::Arc,
    vec::Vec,
};
use std::format;

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::*;
use crate::ids::NodeId;

const NAMES: [&str; 4] = ["", "a", "b", "c"];

#[derive(Clone, Debug)]
enum Op {
    Put {
        id: u64,
        name: usize,
        revision: u64,
        kind: bool,
        pod: i32,
    },
    Remove {
        id: u64,
        name: usize,
        revision: u64,
    },
    RemoveByName {
        name: usize,
        revision: u64,
    },
    Compact {
        revision: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..4u64, 0..4usize, 0..12u64, any::<bool>(), 0..2i32)
            .prop_map(|(id, name, revision, kind, pod)| Op::Put { id, name, revision, kind, pod }),
        3 => (0..4u64, 0..4usize, 0..12u64)
            .prop_map(|(id, name, revision)| Op::Remove { id, name, revision }),
        1 => (0..4usize, 0..12u64).prop_map(|(name, revision)| Op::RemoveByName { name, revision }),
        1 => (0..12u64).prop_map(|revision| Op::Compact { revision }),
    ]
}

fn record(id: u64, name: &str, revision: u64, kind: bool, pod: i32) -> DiscoveryInfo {
    let mut info = DiscoveryInfo {
        id: NodeId(id),
        name: name.to_string(),
        revision,
        ..DiscoveryInfo::default()
    };
    if kind {
        info.metadata.kind = "game".to_string();
    }
    info.runtime.stateful_pod_index = pod;
    info
}

/// The reference: every rule spelled out over flat lists.
#[derive(Default)]
struct Model {
    nodes: Vec<DiscoveryInfo>,
    tombs: Vec<(NodeId, String, u64)>,
}

impl Model {
    fn tomb(&self, id: NodeId, name: &str) -> Option<u64> {
        self.tombs
            .iter()
            .find(|(i, n, _)| *i == id && n == name)
            .map(|t| t.2)
    }

    fn same_node(n: &DiscoveryInfo, id: NodeId, name: &str) -> bool {
        n.id == id && (id.is_valid() || n.name == name)
    }

    fn put(&mut self, info: DiscoveryInfo) -> Applied {
        if info.id == NodeId::NONE && info.name.is_empty() {
            return Applied::Rejected;
        }
        let rev = info.revision;
        let current = self
            .nodes
            .iter()
            .position(|n| Model::same_node(n, info.id, &info.name));
        let rival = self
            .nodes
            .iter()
            .position(|n| !info.name.is_empty() && n.name == info.name && n.id != info.id);
        let mut newest = self.tomb(info.id, &info.name);
        if info.id.is_valid() && !info.name.is_empty() {
            newest = newest.max(self.tomb(info.id, ""));
        }
        newest = newest.max(current.map(|c| self.nodes[c].revision));
        newest = newest.max(rival.map(|r| self.nodes[r].revision));
        if let Some(held) = newest
            && held > rev
        {
            return Applied::Stale {
                held_revision: held,
            };
        }
        if let Some(c) = current
            && self.nodes[c].revision == rev
            && self.nodes[c].same_content(&info)
        {
            return Applied::Duplicate;
        }
        let displaced = rival.map(|r| Arc::new(self.nodes.remove(r)));
        self.tombs.retain(|(i, n, _)| {
            !(*i == info.id && (n == &info.name || (info.id.is_valid() && n.is_empty())))
        });
        let (id, name) = (info.id, info.name.clone());
        match self
            .nodes
            .iter()
            .position(|n| Model::same_node(n, id, &name))
        {
            None => {
                self.nodes.push(info);
                Applied::Added {
                    id,
                    name,
                    displaced,
                }
            }
            Some(c) => {
                let previous = core::mem::replace(&mut self.nodes[c], info);
                let new = &self.nodes[c];
                Applied::Updated {
                    id,
                    name_changed: previous.name != new.name,
                    metadata_changed: previous.metadata != new.metadata,
                    pod_index_changed: previous.runtime != new.runtime,
                    content_changed: !previous.same_content(new),
                    name,
                    previous: Arc::new(previous),
                    displaced,
                }
            }
        }
    }

    fn raise(&mut self, id: NodeId, name: &str, rev: u64) {
        match self
            .tombs
            .iter_mut()
            .find(|(i, n, _)| *i == id && n == name)
        {
            Some(t) => t.2 = t.2.max(rev),
            None => self.tombs.push((id, name.to_string(), rev)),
        }
    }

    fn remove(&mut self, id: NodeId, name: &str, rev: u64) -> Applied {
        if id == NodeId::NONE && name.is_empty() {
            return Applied::Rejected;
        }
        let found = self
            .nodes
            .iter()
            .position(|n| Model::same_node(n, id, name) && (name.is_empty() || n.name == name));
        match found {
            Some(f) if self.nodes[f].revision > rev => Applied::Stale {
                held_revision: self.nodes[f].revision,
            },
            Some(f) => {
                let removed = self.nodes.remove(f);
                self.raise(id, name, rev);
                Applied::Removed(Arc::new(removed))
            }
            None => match self.tomb(id, name) {
                Some(t) if t == rev => Applied::Duplicate,
                Some(t) if t > rev => Applied::Stale { held_revision: t },
                _ => {
                    self.raise(id, name, rev);
                    Applied::Unknown
                }
            },
        }
    }

    fn remove_by_name(&mut self, name: &str, rev: u64) -> Applied {
        match self
            .nodes
            .iter()
            .find(|n| !name.is_empty() && n.name == name)
        {
            Some(holder) => {
                let id = holder.id;
                self.remove(id, name, rev)
            }
            None => Applied::Unknown,
        }
    }

    fn compact(&mut self, rev: u64) {
        self.tombs.retain(|t| t.2 > rev);
    }

    fn sorted(&self) -> Vec<DiscoveryInfo> {
        let mut nodes = self.nodes.clone();
        nodes.sort_by(|a, b| (a.id, &a.name).cmp(&(b.id, &b.name)));
        nodes
    }
}

fn apply(set: &mut DiscoverySet, model: &mut Model, op: &Op) -> (Option<Applied>, Option<Applied>) {
    match *op {
        Op::Put {
            id,
            name,
            revision,
            kind,
            pod,
        } => {
            let info = record(id, NAMES[name], revision, kind, pod);
            (Some(set.put(info.clone())), Some(model.put(info)))
        }
        Op::Remove { id, name, revision } => (
            Some(set.remove(NodeId(id), NAMES[name], revision)),
            Some(model.remove(NodeId(id), NAMES[name], revision)),
        ),
        Op::RemoveByName { name, revision } => (
            Some(set.remove_by_name(NAMES[name], revision)),
            Some(model.remove_by_name(NAMES[name], revision)),
        ),
        Op::Compact { revision } => {
            set.compact(revision);
            model.compact(revision);
            (None, None)
        }
    }
}

fn assert_matches_model(set: &DiscoverySet, model: &Model) {
    set.assert_consistent();
    let held: Vec<DiscoveryInfo> = set.iter().cloned().collect();
    assert_eq!(held, model.sorted());
    assert_eq!(set.len(), model.nodes.len());
    assert_eq!(set.tombstone_count(), model.tombs.len());
    for name in NAMES.iter().filter(|n| !n.is_empty()) {
        let expected = model.nodes.iter().find(|n| n.name == *name);
        assert_eq!(set.get_by_name(name), expected);
    }
    for id in 1..4 {
        let expected = model.nodes.iter().find(|n| n.id == NodeId(id));
        assert_eq!(set.get_by_id(NodeId(id)), expected);
    }
}

fn config(suite: &str, cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            // Leaked once per suite: proptest needs a 'static path.
            Box::leak(format!("../proptest-regressions/{suite}.txt").into_boxed_str()),
        ))),
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config("discovery_set_model", 256))]

    #[test]
    fn set_follows_the_model(ops in proptest::collection::vec(op(), 1..60), filter_at in 0..60usize) {
        let mut set = DiscoverySet::new();
        let mut model = Model::default();
        let game = Filter(Metadata { kind: "game".to_string(), ..Metadata::default() });
        for (i, op) in ops.iter().enumerate() {
            // Register a filter ring at an arbitrary point: from then on the consistency check
            // compares it with a fresh build as well.
            if i == filter_at {
                set.add_filter(game.clone());
            }
            let (got, want) = apply(&mut set, &mut model, op);
            prop_assert_eq!(got, want, "op {:?}", op);
            assert_matches_model(&set, &model);
        }
    }
}

proptest! {
    #![proptest_config(config("discovery_set_duplicates", 192))]

    #[test]
    fn every_change_delivered_twice_applies_once(ops in proptest::collection::vec(op(), 1..40)) {
        let mut set = DiscoverySet::new();
        set.add_filter(Filter(Metadata { kind: "game".to_string(), ..Metadata::default() }));
        for op in &ops {
            let mut scratch = Model::default();
            let (first, _) = apply(&mut set, &mut scratch, op);
            let after_first: Vec<DiscoveryInfo> = set.iter().cloned().collect();
            let tombstones = set.tombstone_count();
            let ring_updates = set.rings().ring_updates();
            let (second, _) = apply(&mut set, &mut scratch, op);
            let expected = match &first {
                None => None,
                Some(Applied::Stale { held_revision }) => {
                    Some(Applied::Stale { held_revision: *held_revision })
                }
                Some(Applied::Rejected) => Some(Applied::Rejected),
                // remove_by_name is for local use: once the name is free it is Unknown (no
                // tombstone lookup by name alone).
                Some(_) if matches!(op, Op::RemoveByName { .. }) => Some(Applied::Unknown),
                Some(_) => Some(Applied::Duplicate),
            };
            prop_assert_eq!(second, expected, "op {:?} first {:?}", op, first);
            prop_assert_eq!(set.iter().cloned().collect::<Vec<_>>(), after_first);
            prop_assert_eq!(set.tombstone_count(), tombstones);
            // The second copy of a change never touches a ring.
            prop_assert_eq!(set.rings().ring_updates(), ring_updates);
            set.assert_consistent();
        }
    }
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z0-9.-]{1,12}",
        "\\PC{0,8}",
        Just("quote\" back\\slash \u{1}ctl \u{e9} \u{1F600}".to_string()),
    ]
}

fn discovery_info() -> impl Strategy<Value = DiscoveryInfo> {
    let head = (
        any::<u64>(),
        text(),
        text(),
        any::<i32>(),
        proptest::collection::vec(text(), 0..3),
    );
    let middle = (
        text(),
        any::<u64>(),
        text(),
        text(),
        text(),
        any::<u64>(),
        any::<i32>(),
    );
    let tail = (
        any::<u64>(),
        any::<u64>(),
        text(),
        proptest::collection::btree_map(text(), text(), 0..3),
        proptest::collection::vec((text(), proptest::collection::vec(text(), 0..2)), 0..2),
    );
    (head, middle, tail).prop_map(
        |(
            (id, name, hostname, pid, listen),
            (hash_code, type_id, type_name, version, region, zone_id, pod),
            (proto, proto_min, kind, labels, gateways),
        )| DiscoveryInfo {
            id: NodeId(id),
            name,
            hostname,
            pid,
            listen,
            hash_code: hash_code.into(),
            type_id,
            type_name,
            area: Area {
                region,
                district: String::new(),
                zone_id,
            }
            .into(),
            version,
            custom_data: String::new().into(),
            identity: String::new(),
            gateways: gateways
                .into_iter()
                .map(|(address, match_hosts)| Gateway {
                    address,
                    match_hosts,
                    ..Gateway::default()
                })
                .collect(),
            runtime: Runtime {
                stateful_pod_index: pod,
            },
            atbus_protocol_version: proto,
            atbus_protocol_min_version: proto_min,
            incarnation: proto ^ proto_min.rotate_left(7),
            metadata: Metadata {
                kind,
                labels: labels.into(),
                ..Metadata::default()
            }
            .into(),
            revision: 0,
        },
    )
}

proptest! {
    #![proptest_config(config("discovery_codec", 256))]

    #[test]
    fn encode_then_decode_is_identity(info in discovery_info()) {
        let bytes = info.to_json();
        if info.has_identity() {
            prop_assert_eq!(DiscoveryInfo::from_json(&bytes), Ok(info));
        } else {
            prop_assert_eq!(DiscoveryInfo::from_json(&bytes), Err(DecodeError::NoIdentity));
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        let _ = DiscoveryInfo::from_json(&bytes);
        let _ = TopologyInfo::from_json(&bytes);
    }

    #[test]
    fn spliced_records_never_panic(info in discovery_info(), at in any::<prop::sample::Index>(),
                                   junk in proptest::collection::vec(any::<u8>(), 0..8)) {
        let mut bytes = info.to_json();
        let at = at.index(bytes.len() + 1);
        bytes.splice(at..at, junk);
        let mut set = DiscoverySet::new();
        if set.put_json(&bytes, 1).is_err() {
            prop_assert!(set.is_empty());
        }
    }
}
