//! The discovery set keeps its hash rings in step with each applied change: exactly the
//! rings a change concerns are touched, and nothing else.

use alloc::{string::ToString, vec::Vec};

use super::*;
use crate::{
    ids::NodeId,
    ring::{FilterId, SearchMode},
};

fn node(id: u64, name: &str, revision: u64, kind: &str) -> DiscoveryInfo {
    let mut info = DiscoveryInfo {
        id: NodeId(id),
        name: name.to_string(),
        revision,
        ..DiscoveryInfo::default()
    };
    info.metadata.kind = kind.to_string();
    info
}

fn kind(kind: &str) -> Filter {
    Filter(Metadata {
        kind: kind.to_string(),
        ..Metadata::default()
    })
}

fn members(set: &DiscoverySet, filter: Option<FilterId>) -> Vec<u64> {
    let mut out = Vec::new();
    set.rings()
        .ring(filter)
        .successors(b"any key", usize::MAX, SearchMode::UNIQUE, &mut out);
    let mut ids: Vec<u64> = out.iter().map(|id| id.0).collect();
    ids.sort_unstable();
    ids
}

#[test]
fn added_nodes_join_the_default_ring_and_the_filter_rings_they_match() {
    let mut set = DiscoverySet::new();
    let game = set.add_filter(kind("game"));
    let gate = set.add_filter(kind("gate"));
    set.put(node(1, "game-1", 10, "game"));
    set.put(node(2, "game-2", 11, "game"));
    set.put(node(3, "gate-3", 12, "gate"));
    assert_eq!(members(&set, None), [1, 2, 3]);
    assert_eq!(members(&set, Some(game)), [1, 2]);
    assert_eq!(members(&set, Some(gate)), [3]);
    assert_eq!(set.rings().ring(None).point_count(), 3 * 80);
    set.assert_rings_follow();
}

#[test]
fn stale_duplicate_and_revision_only_puts_touch_no_ring() {
    let mut set = DiscoverySet::new();
    let game = set.add_filter(kind("game"));
    set.put(node(1, "game-1", 10, "game"));
    let before = (
        set.rings().ring_updates_of(None),
        set.rings().ring_updates_of(Some(game)),
    );
    assert_eq!(set.put(node(1, "game-1", 10, "game")), Applied::Duplicate);
    assert_eq!(
        set.put(node(1, "game-1", 9, "gate")),
        Applied::Stale { held_revision: 10 }
    );
    let revision_only = set.put(node(1, "game-1", 12, "game"));
    assert!(matches!(
        revision_only,
        Applied::Updated {
            content_changed: false,
            ..
        }
    ));
    let after = (
        set.rings().ring_updates_of(None),
        set.rings().ring_updates_of(Some(game)),
    );
    assert_eq!(after, before);
}

#[test]
fn metadata_change_touches_only_the_filter_rings_it_leaves_and_joins() {
    let mut set = DiscoverySet::new();
    let game = set.add_filter(kind("game"));
    let gate = set.add_filter(kind("gate"));
    let chat = set.add_filter(kind("chat"));
    set.put(node(1, "n-1", 10, "game"));
    set.put(node(2, "n-2", 11, "chat"));
    let default_before = set.rings().ring_updates_of(None);
    let (game_before, gate_before, chat_before) = (
        set.rings().ring_updates_of(Some(game)),
        set.rings().ring_updates_of(Some(gate)),
        set.rings().ring_updates_of(Some(chat)),
    );
    // Node 1 moves from "game" to "gate": the default and "chat" rings stay as they are.
    set.put(node(1, "n-1", 12, "gate"));
    assert_eq!(set.rings().ring_updates_of(None), default_before);
    assert_eq!(set.rings().ring_updates_of(Some(game)), game_before + 1);
    assert_eq!(set.rings().ring_updates_of(Some(gate)), gate_before + 1);
    assert_eq!(set.rings().ring_updates_of(Some(chat)), chat_before);
    assert_eq!(members(&set, Some(game)), Vec::<u64>::new());
    assert_eq!(members(&set, Some(gate)), [1]);
    set.assert_rings_follow();
}

#[test]
fn removed_and_displaced_nodes_leave_every_ring() {
    let mut set = DiscoverySet::new();
    let game = set.add_filter(kind("game"));
    set.put(node(1, "shared-name", 10, "game"));
    set.put(node(2, "n-2", 11, "game"));
    // Node 3 takes node 1's name with a newer revision: node 1 is displaced.
    let applied = set.put(node(3, "shared-name", 12, "game"));
    assert!(matches!(
        applied,
        Applied::Added {
            displaced: Some(_),
            ..
        }
    ));
    assert_eq!(members(&set, None), [2, 3]);
    assert!(matches!(
        set.remove(NodeId(2), "n-2", 13),
        Applied::Removed(_)
    ));
    assert_eq!(members(&set, None), [3]);
    assert_eq!(members(&set, Some(game)), [3]);
    set.assert_rings_follow();
}

#[test]
fn name_only_nodes_are_held_but_take_no_ring_share() {
    let mut set = DiscoverySet::new();
    set.put(node(0, "legacy", 10, "game"));
    set.put(node(5, "n-5", 11, "game"));
    assert_eq!(set.len(), 2);
    assert_eq!(members(&set, None), [5]);
    assert_eq!(set.ring_rejections(), 0);
    set.assert_rings_follow();
}

#[test]
fn a_lookup_answers_the_same_node_as_a_fresh_ring() {
    let mut set = DiscoverySet::new();
    for id in 1..=20u64 {
        set.put(node(id, &alloc::format!("svc-{id}"), id, "game"));
    }
    set.remove(NodeId(7), "svc-7", 30);
    let mut fresh = crate::ring::Ring::new(crate::ring::RingConfig::default());
    let names: Vec<(NodeId, alloc::string::String)> = (1..=20u64)
        .filter(|&id| id != 7)
        .map(|id| (NodeId(id), alloc::format!("svc-{id}")))
        .collect();
    fresh
        .build(
            names
                .iter()
                .map(|(id, name)| crate::ring::RingMember::new(*id, name)),
        )
        .expect("20 nodes fit");
    for key in 0..2_000u64 {
        assert_eq!(
            set.rings().ring(None).lookup_u64(key),
            fresh.lookup_u64(key),
            "key {key}"
        );
    }
}
