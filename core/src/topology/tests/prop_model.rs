//! Property test: random update/remove sequences against a naive model.
//!
//! The model is a plain map `id -> (upstream, proactive, data)` with no downstream sets;
//! children are found by scanning, chains by plain loops. After every operation the registry
//! must match the model peer for peer, report the same change (or error), keep its
//! invariants, and give the same relation and next hop as the naive reference for every
//! ordered pair of ids in 0..=13 (0 and 13 are never valid peers).

use alloc::{boxed::Box, collections::BTreeMap, collections::BTreeSet, string::String, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};
use smallvec::SmallVec;

use crate::{
    ids::NodeId,
    topology::{
        PeerChange, PeerData, Relation, Removed, TopologyError, TopologyRegistry, UpstreamChange,
    },
};

#[derive(Clone, Debug, PartialEq)]
struct ModelPeer {
    up: u64,
    proactive: bool,
    data: PeerData,
}

type Model = BTreeMap<u64, ModelPeer>;

#[derive(Clone, Debug)]
enum Op {
    Update(u64, u64, PeerData),
    Remove(u64),
}

const MAX_ID: u64 = 12;
/// More steps than any acyclic chain over MAX_ID peers can take.
const WALK_LIMIT: usize = 100;

fn nz(id: u64) -> Option<NodeId> {
    (id != 0).then_some(NodeId(id))
}

fn up_of(model: &Model, id: u64) -> u64 {
    model.get(&id).map_or(0, |p| p.up)
}

fn has_children(model: &Model, id: u64) -> bool {
    model.values().any(|p| p.up == id)
}

/// `id`'s upstream, its upstream, ... (not including `id`).
fn chain(model: &Model, id: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut cur = up_of(model, id);
    while cur != 0 {
        assert!(out.len() < WALK_LIMIT, "model has a cycle through {id}");
        out.push(cur);
        cur = up_of(model, cur);
    }
    out
}

fn prune(model: &mut Model, start: u64, pruned: &mut SmallVec<[NodeId; 1]>) {
    let mut cur = start;
    while cur != 0 && model.get(&cur).is_some_and(|p| !p.proactive) && !has_children(model, cur) {
        let gone = model.remove(&cur).unwrap();
        pruned.push(NodeId(cur));
        cur = gone.up;
    }
}

fn model_update(
    model: &mut Model,
    id: u64,
    up: u64,
    data: PeerData,
) -> Result<PeerChange, TopologyError> {
    if id == 0 {
        return Err(TopologyError::InvalidId);
    }
    if id == up {
        return Err(TopologyError::SelfUpstream(NodeId(id)));
    }
    if up != 0 {
        let mut path = Vec::from([id, up]);
        path.extend(chain(model, up));
        if let Some(pos) = path.iter().skip(1).position(|&x| x == id) {
            path.truncate(pos + 2);
            return Err(TopologyError::Cycle {
                id: NodeId(id),
                upstream: NodeId(up),
                path: path.into_iter().map(NodeId).collect(),
            });
        }
    }
    let mut change = PeerChange::default();
    if up != 0 && !model.contains_key(&up) {
        model.insert(
            up,
            ModelPeer {
                up: 0,
                proactive: false,
                data: PeerData::default(),
            },
        );
        change.upstream_created = true;
    }
    let old = model.get(&id).cloned();
    change.created = old.is_none();
    change.promoted = old.as_ref().is_some_and(|p| !p.proactive);
    let (old_up, old_data) = old.map_or((0, PeerData::default()), |p| (p.up, p.data));
    change.data_changed = old_data != data;
    model.insert(
        id,
        ModelPeer {
            up,
            proactive: true,
            data,
        },
    );
    if old_up != up {
        change.upstream_changed = Some(UpstreamChange {
            old: nz(old_up),
            new: nz(up),
        });
        prune(model, old_up, &mut change.pruned);
    }
    Ok(change)
}

fn model_remove(model: &mut Model, id: u64) -> Result<Removed, TopologyError> {
    if id == 0 {
        return Err(TopologyError::InvalidId);
    }
    let Some(peer) = model.get_mut(&id) else {
        return Err(TopologyError::UnknownPeer(NodeId(id)));
    };
    let mut removed = Removed {
        was_proactive: peer.proactive,
        ..Removed::default()
    };
    let old_up = peer.up;
    *peer = ModelPeer {
        up: 0,
        proactive: false,
        data: PeerData::default(),
    };
    if !has_children(model, id) {
        model.remove(&id);
        removed.erased = true;
    }
    removed.old_upstream = nz(old_up);
    prune(model, old_up, &mut removed.pruned);
    Ok(removed)
}

/// The relation table of ARCHITECTURE §6, evaluated on upstream chains.
fn naive_route(model: &Model, from: u64, to: u64) -> (Relation, Option<u64>) {
    if from == 0 || to == 0 || !model.contains_key(&from) || !model.contains_key(&to) {
        return (Relation::Invalid, None);
    }
    if from == to {
        return (Relation::Self_, Some(to));
    }
    let from_chain = chain(model, from);
    let to_chain = chain(model, to);
    let from_up = from_chain.first().copied();
    let to_up = to_chain.first().copied();
    if from_up == Some(to) {
        return (Relation::ImmediateUpstream, Some(to));
    }
    if to_up == Some(from) {
        return (Relation::ImmediateDownstream, Some(to));
    }
    if from_up.is_some() && from_up == to_up {
        return (Relation::SameUpstreamPeer, from_up);
    }
    if from_chain.contains(&to) {
        return (Relation::TransitiveUpstream, from_up);
    }
    if let Some(pos) = to_chain.iter().position(|&x| x == from) {
        // pos >= 1 here (pos 0 is ImmediateDownstream); the child is the hop just below.
        return (Relation::TransitiveDownstream, Some(to_chain[pos - 1]));
    }
    (Relation::OtherUpstreamPeer, Some(from_up.unwrap_or(to)))
}

/// Structural invariants of the registry, checked without the model.
fn check_invariants(reg: &TopologyRegistry) {
    for peer in reg.iter() {
        let id = peer.id();
        assert!(id.is_valid());
        if let Some(up) = peer.upstream() {
            let parent = reg
                .get(up)
                .unwrap_or_else(|| panic!("{id}'s upstream {up} is missing"));
            assert!(
                parent.contains_downstream(id),
                "{up} does not list child {id}"
            );
        }
        for child in peer.downstream() {
            assert_eq!(
                reg.upstream_of(child),
                Some(id),
                "{id} lists {child}, which is not its child"
            );
        }
        if !peer.is_proactive() {
            assert!(peer.downstream_len() > 0, "passive {id} has no children");
            assert_eq!(peer.upstream(), None, "passive {id} has an upstream");
            assert_eq!(peer.data(), &PeerData::default(), "passive {id} has data");
        }
        // No cycle: the chain ends within len() steps and never meets `id`.
        let mut steps = 0;
        let mut cur = peer.upstream();
        while let Some(up) = cur {
            assert_ne!(up, id, "cycle through {id}");
            steps += 1;
            assert!(steps <= reg.len(), "chain from {id} does not end");
            cur = reg.upstream_of(up);
        }
    }
}

fn check_against_model(reg: &TopologyRegistry, model: &Model) {
    let reg_ids: Vec<u64> = reg.ids().map(|id| id.0).collect();
    let model_ids: Vec<u64> = model.keys().copied().collect();
    assert_eq!(reg_ids, model_ids);
    for (&id, mp) in model {
        let peer = reg.get(NodeId(id)).unwrap();
        assert_eq!(peer.upstream(), nz(mp.up), "upstream of {id}");
        assert_eq!(peer.is_proactive(), mp.proactive, "proactive flag of {id}");
        assert_eq!(peer.data(), &mp.data, "data of {id}");
        let children: BTreeSet<u64> = model
            .iter()
            .filter(|(_, p)| p.up == id)
            .map(|(&c, _)| c)
            .collect();
        let listed: BTreeSet<u64> = peer.downstream().map(|c| c.0).collect();
        assert_eq!(listed, children, "downstream of {id}");
    }
    for from in 0..=MAX_ID + 1 {
        for to in 0..=MAX_ID + 1 {
            let route = reg.route(NodeId(from), NodeId(to));
            let (relation, hop) = naive_route(model, from, to);
            assert_eq!(
                (route.relation, route.next_hop),
                (relation, hop.map(NodeId)),
                "route {from} -> {to}"
            );
        }
    }
}

fn data_strategy() -> impl Strategy<Value = PeerData> {
    (
        prop::sample::select(["", "a", "b"].as_slice()),
        0i64..=2,
        prop::option::of(prop::sample::select(["1", "2"].as_slice())),
    )
        .prop_map(|(host, pid, zone)| {
            let mut data = PeerData {
                hostname: String::from(host),
                pid,
                ..PeerData::default()
            };
            if let Some(zone) = zone {
                data.labels.insert(String::from("zone"), String::from(zone));
            }
            data
        })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let upstream = prop_oneof![1 => Just(0u64), 3 => 1..=MAX_ID];
    prop_oneof![
        3 => (0..=MAX_ID, upstream, data_strategy()).prop_map(|(id, up, d)| Op::Update(id, up, d)),
        2 => (0..=MAX_ID).prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 192,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/topology_registry_model.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn registry_matches_naive_model(ops in prop::collection::vec(op_strategy(), 1..60)) {
        let mut reg = TopologyRegistry::new();
        let mut model = Model::new();
        for op in ops {
            let before = reg.clone();
            match op {
                Op::Update(id, up, data) => {
                    let got = reg.update_peer(NodeId(id), NodeId(up), data.clone());
                    let want = model_update(&mut model, id, up, data);
                    prop_assert_eq!(&got, &want, "update {} under {}", id, up);
                    if got.is_err() || got.as_ref().is_ok_and(PeerChange::is_noop) {
                        prop_assert_eq!(&reg, &before);
                    }
                }
                Op::Remove(id) => {
                    let got = reg.remove_peer(NodeId(id));
                    let want = model_remove(&mut model, id);
                    prop_assert_eq!(&got, &want, "remove {}", id);
                    if got.is_err() || got.as_ref().is_ok_and(Removed::is_noop) {
                        prop_assert_eq!(&reg, &before);
                    }
                }
            }
            check_invariants(&reg);
            check_against_model(&reg, &model);
        }
    }
}
