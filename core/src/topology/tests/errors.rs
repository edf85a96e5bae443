//! Every rejected call leaves the registry exactly as it was, with an exact error.

use alloc::string::ToString;

use super::{data, n, put};
use crate::{
    ids::NodeId,
    topology::{Relation, TopologyError, TopologyRegistry},
};

/// 1 root with 2 under it, and a chain 10 <- 11 <- ... <- 17 (17 at the bottom).
fn sample() -> TopologyRegistry {
    let mut reg = TopologyRegistry::new();
    put(&mut reg, 1, 0, "h");
    put(&mut reg, 2, 1, "h");
    put(&mut reg, 10, 0, "h");
    for id in 11..=17 {
        put(&mut reg, id, id - 1, "h");
    }
    reg
}

#[test]
fn id_zero_is_rejected_without_change() {
    let mut reg = sample();
    let before = reg.clone();
    assert_eq!(
        reg.update_peer(NodeId::NONE, n(1), data(0, "h")),
        Err(TopologyError::InvalidId)
    );
    assert_eq!(
        reg.update_peer(NodeId::NONE, NodeId::NONE, data(0, "h")),
        Err(TopologyError::InvalidId)
    );
    assert_eq!(reg.remove_peer(NodeId::NONE), Err(TopologyError::InvalidId));
    assert_eq!(reg, before);
}

#[test]
fn self_upstream_is_rejected_without_change() {
    let mut reg = sample();
    let before = reg.clone();
    // On an existing peer with new data, and on an unknown one.
    assert_eq!(
        reg.update_peer(n(2), n(2), data(77, "elsewhere")),
        Err(TopologyError::SelfUpstream(n(2)))
    );
    assert_eq!(
        reg.update_peer(n(40), n(40), data(40, "h")),
        Err(TopologyError::SelfUpstream(n(40)))
    );
    assert_eq!(reg, before);
}

#[test]
fn two_cycle_is_rejected_without_change() {
    let mut reg = sample();
    let before = reg.clone();
    let err = reg.update_peer(n(1), n(2), data(1, "moved")).unwrap_err();
    assert_eq!(
        err,
        TopologyError::Cycle {
            id: n(1),
            upstream: n(2),
            path: [1, 2, 1].map(NodeId).to_vec()
        }
    );
    assert_eq!(
        err.to_string(),
        "making 0x2 the upstream of 0x1 would close the cycle 0x1 -> 0x2 -> 0x1"
    );
    assert_eq!(reg, before);
}

#[test]
fn long_cycle_is_rejected_without_change() {
    let mut reg = sample();
    let before = reg.clone();
    let err = reg.update_peer(n(10), n(17), data(10, "h")).unwrap_err();
    assert_eq!(
        err,
        TopologyError::Cycle {
            id: n(10),
            upstream: n(17),
            path: [10, 17, 16, 15, 14, 13, 12, 11, 10].map(NodeId).to_vec(),
        }
    );
    assert_eq!(reg, before);
    // A middle link of the chain cannot go under its own descendants either.
    let err = reg.update_peer(n(13), n(15), data(13, "h")).unwrap_err();
    assert_eq!(
        err,
        TopologyError::Cycle {
            id: n(13),
            upstream: n(15),
            path: [13, 15, 14, 13].map(NodeId).to_vec()
        }
    );
    assert_eq!(reg, before);
    // While moving it under a sibling tree is fine.
    reg.update_peer(n(13), n(2), data(13, "h")).unwrap();
    assert_eq!(reg.relation(n(17), n(1)), Relation::TransitiveUpstream);
    assert_eq!(reg.next_hop(n(1), n(17)), Some(n(2)));
}

#[test]
fn unknown_peer_removal_is_an_error_without_change() {
    let mut reg = sample();
    let before = reg.clone();
    let err = reg.remove_peer(n(99)).unwrap_err();
    assert_eq!(err, TopologyError::UnknownPeer(n(99)));
    assert_eq!(err.to_string(), "peer 0x63 is not in the topology registry");
    assert_eq!(reg, before);
}

#[test]
fn relation_values_match_libatbus() {
    let expected = [
        (Relation::Invalid, 0),
        (Relation::Self_, 1),
        (Relation::ImmediateUpstream, 2),
        (Relation::TransitiveUpstream, 3),
        (Relation::ImmediateDownstream, 4),
        (Relation::TransitiveDownstream, 5),
        (Relation::SameUpstreamPeer, 6),
        (Relation::OtherUpstreamPeer, 7),
    ];
    for (relation, value) in expected {
        assert_eq!(relation.as_u8(), value);
        assert_eq!(Relation::from_u8(value), Some(relation));
    }
    assert_eq!(Relation::from_u8(8), None);
    assert_eq!(Relation::from_u8(255), None);
}
