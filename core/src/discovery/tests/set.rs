//! Scenario tests of the revision gating in [`DiscoverySet`].

use alloc::{string::ToString, sync::Arc, vec, vec::Vec};

use super::*;
use crate::ids::NodeId;

fn node(id: u64, name: &str, revision: u64) -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(id),
        name: name.to_string(),
        listen: vec![alloc::format!("atcp://127.0.0.1:{}", 21_000 + id)],
        revision,
        ..DiscoveryInfo::default()
    }
}

fn with_kind(mut info: DiscoveryInfo, kind: &str) -> DiscoveryInfo {
    info.metadata.kind = kind.to_string();
    info
}

fn ids(set: &DiscoverySet) -> Vec<(u64, &str, u64)> {
    set.iter()
        .map(|n| (n.id.0, n.name.as_str(), n.revision))
        .collect()
}

#[test]
fn new_node_is_added_and_indexed_by_id_and_name() {
    let mut set = DiscoverySet::new();
    let applied = set.put(node(7, "echo-7", 10));
    assert_eq!(
        applied,
        Applied::Added {
            id: NodeId(7),
            name: "echo-7".to_string(),
            displaced: None
        }
    );
    assert!(applied.is_change());
    assert_eq!(set.get_by_id(NodeId(7)), Some(&node(7, "echo-7", 10)));
    assert_eq!(set.get_by_name("echo-7"), Some(&node(7, "echo-7", 10)));
    assert_eq!(set.len(), 1);
    assert!(!set.is_empty());
    set.assert_consistent();
}

#[test]
fn by_id_and_by_name_copies_of_one_put_apply_once() {
    let mut set = DiscoverySet::new();
    let change = node(7, "echo-7", 10);
    assert!(matches!(set.put(change.clone()), Applied::Added { .. }));
    assert_eq!(set.put(change), Applied::Duplicate);
    assert!(!Applied::Duplicate.is_change());
    assert_eq!(set.len(), 1);
}

#[test]
fn older_put_is_stale_and_changes_nothing() {
    let mut set = DiscoverySet::new();
    set.put(with_kind(node(7, "echo-7", 10), "new"));
    assert_eq!(
        set.put(with_kind(node(7, "echo-7", 9), "old")),
        Applied::Stale { held_revision: 10 }
    );
    assert_eq!(
        set.get_by_id(NodeId(7)).map(|n| n.metadata.kind.as_str()),
        Some("new")
    );
}

#[test]
fn newer_identical_put_only_advances_the_revision() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 10));
    let applied = set.put(node(7, "echo-7", 12));
    assert_eq!(
        applied,
        Applied::Updated {
            id: NodeId(7),
            name: "echo-7".to_string(),
            previous: Arc::new(node(7, "echo-7", 10)),
            name_changed: false,
            metadata_changed: false,
            pod_index_changed: false,
            content_changed: false,
            displaced: None,
        }
    );
    assert!(!applied.is_change());
    assert_eq!(set.get_by_id(NodeId(7)).map(|n| n.revision), Some(12));
}

#[test]
fn equal_revision_with_different_content_is_applied() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 10));
    let applied = set.put(with_kind(node(7, "echo-7", 10), "echo"));
    assert!(matches!(
        applied,
        Applied::Updated {
            metadata_changed: true,
            content_changed: true,
            name_changed: false,
            ..
        }
    ));
}

#[test]
fn metadata_and_pod_index_changes_are_reported() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 10));
    let mut moved = with_kind(node(7, "echo-7", 11), "echo");
    moved.runtime.stateful_pod_index = 4;
    match set.put(moved) {
        Applied::Updated {
            metadata_changed,
            pod_index_changed,
            name_changed,
            content_changed,
            previous,
            ..
        } => {
            assert_eq!(
                (
                    metadata_changed,
                    pod_index_changed,
                    name_changed,
                    content_changed
                ),
                (true, true, false, true)
            );
            assert_eq!(*previous, node(7, "echo-7", 10));
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    assert_eq!(
        set.get_by_id(NodeId(7))
            .map(DiscoveryInfo::stateful_pod_index),
        Some(4)
    );
}

#[test]
fn rename_moves_the_name_index() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "old", 10));
    let applied = set.put(node(7, "new", 11));
    assert!(
        matches!(applied, Applied::Updated { name_changed: true, ref name, .. } if name == "new")
    );
    assert_eq!(set.get_by_name("old"), None);
    assert_eq!(set.get_by_name("new").map(|n| n.id), Some(NodeId(7)));
    set.assert_consistent();
}

#[test]
fn name_reused_by_a_newer_node_displaces_the_old_holder() {
    let mut set = DiscoverySet::new();
    set.put(node(1, "echo", 10));
    let applied = set.put(node(2, "echo", 11));
    assert_eq!(
        applied,
        Applied::Added {
            id: NodeId(2),
            name: "echo".to_string(),
            displaced: Some(Arc::new(node(1, "echo", 10))),
        }
    );
    assert_eq!(set.get_by_id(NodeId(1)), None);
    assert_eq!(set.get_by_name("echo").map(|n| n.id), Some(NodeId(2)));
    assert_eq!(set.len(), 1);
    set.assert_consistent();
}

#[test]
fn name_reused_by_an_older_node_is_stale() {
    let mut set = DiscoverySet::new();
    set.put(node(1, "echo", 10));
    assert_eq!(
        set.put(node(2, "echo", 9)),
        Applied::Stale { held_revision: 10 }
    );
    assert_eq!(ids(&set), vec![(1, "echo", 10)]);
}

#[test]
fn rename_onto_a_held_name_updates_and_displaces() {
    let mut set = DiscoverySet::new();
    set.put(node(1, "a", 10));
    set.put(node(2, "b", 11));
    match set.put(node(1, "b", 12)) {
        Applied::Updated {
            id,
            name_changed: true,
            displaced: Some(displaced),
            ..
        } => {
            assert_eq!(id, NodeId(1));
            assert_eq!(*displaced, node(2, "b", 11));
        }
        other => panic!("expected Updated with a displaced node, got {other:?}"),
    }
    assert_eq!(ids(&set), vec![(1, "b", 12)]);
    set.assert_consistent();
}

#[test]
fn delete_removes_once_and_blocks_a_late_older_put() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 10));
    assert_eq!(
        set.remove(NodeId(7), "echo-7", 15),
        Applied::Removed(Arc::new(node(7, "echo-7", 10)))
    );
    // The by_name copy of the same delete.
    assert_eq!(set.remove(NodeId(7), "echo-7", 15), Applied::Duplicate);
    // A put from the other stream, older than the delete, must not resurrect the node.
    assert_eq!(
        set.put(node(7, "echo-7", 12)),
        Applied::Stale { held_revision: 15 }
    );
    assert!(set.is_empty());
    assert_eq!(set.tombstone_count(), 1);
    // A genuinely newer registration comes back and clears the tombstone.
    assert!(matches!(
        set.put(node(7, "echo-7", 16)),
        Applied::Added { .. }
    ));
    assert_eq!(set.tombstone_count(), 0);
    set.assert_consistent();
}

#[test]
fn delete_older_than_the_record_is_stale() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 20));
    assert_eq!(
        set.remove(NodeId(7), "echo-7", 15),
        Applied::Stale { held_revision: 20 }
    );
    assert_eq!(set.len(), 1);
}

#[test]
fn delete_of_an_old_key_of_a_renamed_node_keeps_the_node() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "old", 10));
    set.put(node(7, "new", 11));
    assert_eq!(set.remove(NodeId(7), "old", 12), Applied::Unknown);
    assert_eq!(ids(&set), vec![(7, "new", 11)]);
    // A late put of the old key older than its delete stays out.
    assert_eq!(
        set.put(node(7, "old", 9)),
        Applied::Stale { held_revision: 12 }
    );
}

#[test]
fn delete_of_an_unknown_key_leaves_a_tombstone() {
    let mut set = DiscoverySet::new();
    assert_eq!(set.remove(NodeId(3), "ghost", 5), Applied::Unknown);
    assert_eq!(set.remove(NodeId(3), "ghost", 5), Applied::Duplicate);
    assert_eq!(
        set.remove(NodeId(3), "ghost", 4),
        Applied::Stale { held_revision: 5 }
    );
    assert_eq!(
        set.put(node(3, "ghost", 4)),
        Applied::Stale { held_revision: 5 }
    );
    assert_eq!(set.tombstone_count(), 1);
}

#[test]
fn legacy_id_only_delete_blocks_older_puts_under_any_name() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 10));
    assert!(matches!(
        set.remove_by_id(NodeId(7), 15),
        Applied::Removed(_)
    ));
    assert_eq!(
        set.put(node(7, "renamed", 14)),
        Applied::Stale { held_revision: 15 }
    );
    assert!(matches!(
        set.put(node(7, "renamed", 16)),
        Applied::Added { .. }
    ));
}

#[test]
fn remove_by_name_resolves_the_holder() {
    let mut set = DiscoverySet::new();
    set.put(node(7, "echo-7", 10));
    assert_eq!(set.remove_by_name("nobody", 11), Applied::Unknown);
    assert_eq!(set.tombstone_count(), 0);
    assert_eq!(
        set.remove_by_name("echo-7", 11),
        Applied::Removed(Arc::new(node(7, "echo-7", 10)))
    );
    assert_eq!(
        set.put(node(7, "echo-7", 10)),
        Applied::Stale { held_revision: 11 }
    );
}

#[test]
fn records_without_identity_are_rejected() {
    let mut set = DiscoverySet::new();
    assert_eq!(set.put(node(0, "", 1)), Applied::Rejected);
    assert_eq!(set.remove(NodeId::NONE, "", 1), Applied::Rejected);
    assert!(set.is_empty());
    assert_eq!(set.tombstone_count(), 0);
}

#[test]
fn name_only_nodes_are_held_by_name_and_iterate_first() {
    let mut set = DiscoverySet::new();
    set.put(node(9, "nine", 1));
    assert_eq!(
        set.put(node(0, "gw", 2)),
        Applied::Added {
            id: NodeId::NONE,
            name: "gw".to_string(),
            displaced: None
        }
    );
    set.put(node(3, "three", 3));
    set.put(node(0, "api", 4));
    assert_eq!(
        ids(&set),
        vec![(0, "api", 4), (0, "gw", 2), (3, "three", 3), (9, "nine", 1)]
    );
    assert_eq!(set.get_by_id(NodeId::NONE), None);
    assert_eq!(set.get_by_name("gw").map(|n| n.revision), Some(2));
    // An id node taking the name displaces the name-only record.
    match set.put(node(5, "gw", 6)) {
        Applied::Added {
            id,
            displaced: Some(old),
            ..
        } => {
            assert_eq!(id, NodeId(5));
            assert_eq!(*old, node(0, "gw", 2));
        }
        other => panic!("expected Added with displaced, got {other:?}"),
    }
    assert_eq!(
        set.remove(NodeId::NONE, "api", 7),
        Applied::Removed(Arc::new(node(0, "api", 4)))
    );
    assert_eq!(
        ids(&set),
        vec![(3, "three", 3), (5, "gw", 6), (9, "nine", 1)]
    );
    set.assert_consistent();
}

#[test]
fn iteration_is_in_id_order() {
    let mut set = DiscoverySet::new();
    for (id, rev) in [(40, 1), (2, 2), (17, 3), (1, 4)] {
        set.put(node(id, &alloc::format!("n{id}"), rev));
    }
    let order: Vec<u64> = set.iter().map(|n| n.id.0).collect();
    assert_eq!(order, vec![1, 2, 17, 40]);
}

#[test]
fn put_json_applies_a_valid_document_with_the_given_revision() {
    let mut set = DiscoverySet::new();
    let applied = set.put_json(
        br#"{"id":"4353","name":"echo-svr-1","listen":["atcp://127.0.0.1:21437"]}"#,
        42,
    );
    assert_eq!(
        applied,
        Ok(Applied::Added {
            id: NodeId(4353),
            name: "echo-svr-1".to_string(),
            displaced: None
        })
    );
    assert_eq!(set.get_by_id(NodeId(4353)).map(|n| n.revision), Some(42));
}

#[test]
fn put_json_with_a_bad_document_leaves_the_set_unchanged() {
    let mut set = DiscoverySet::new();
    set.put(node(1, "echo", 10));
    set.remove(NodeId(2), "gone", 11);
    let before: Vec<DiscoveryInfo> = set.iter().cloned().collect();
    // Would displace "echo" and clear the tombstone if it decoded.
    for bad in [
        &br#"{"id":2,"name":"echo","pid":"x"}"#[..],
        br#"{"id":2,"name":"echo","#,
        br#"{"id":2,"name":"echo","listen":"a"}"#,
        br#"{"id":0,"name":""}"#,
        b"\x00",
    ] {
        assert!(set.put_json(bad, 12).is_err());
        assert_eq!(set.iter().cloned().collect::<Vec<_>>(), before);
        assert_eq!(set.tombstone_count(), 1);
        set.assert_consistent();
    }
}

#[test]
fn compact_forgets_tombstones_at_or_below_the_revision() {
    let mut set = DiscoverySet::new();
    set.remove(NodeId(1), "a", 5);
    set.remove(NodeId(2), "b", 8);
    set.compact(5);
    assert_eq!(set.tombstone_count(), 1);
    // Once forgotten, a put older than the delete is accepted again (the caller promised no
    // such put can still arrive).
    assert!(matches!(set.put(node(1, "a", 4)), Applied::Added { .. }));
    assert_eq!(
        set.put(node(2, "b", 7)),
        Applied::Stale { held_revision: 8 }
    );
    set.compact(u64::MAX);
    assert_eq!(set.tombstone_count(), 0);
    set.assert_consistent();
}

#[test]
fn tombstones_are_bounded_by_the_limit_dropping_the_oldest() {
    let mut set = DiscoverySet::with_tombstone_limit(8);
    for id in 1..=9 {
        set.remove(NodeId(id), "", 100 + id);
    }
    // Nine exceeded eight: the oldest went until three quarters of the limit (six) remain.
    assert_eq!(set.tombstone_count(), 6);
    assert_eq!(
        set.put(node(4, "d", 1)),
        Applied::Stale { held_revision: 104 }
    );
    for id in 1..=3 {
        assert!(matches!(
            set.put(node(id, &alloc::format!("n{id}"), 1)),
            Applied::Added { .. }
        ));
    }
    set.assert_consistent();
}
