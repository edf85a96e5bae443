//! libatbus `atbus_topology`'s nine cases, one test each, with the corrected semantics.

use alloc::{collections::BTreeMap, string::String, vec, vec::Vec};

use smallvec::smallvec;

use super::{data, ids, n, put};
use crate::{
    ids::NodeId,
    topology::{
        PeerChange, PeerData, PolicyDenied, Relation, Removed, TopologyError, TopologyPolicy,
        TopologyRegistry, UpstreamChange,
    },
};

fn up_change(old: Option<u64>, new: Option<u64>) -> Option<UpstreamChange> {
    Some(UpstreamChange {
        old: old.map(NodeId),
        new: new.map(NodeId),
    })
}

#[test]
fn peer_basics() {
    let mut reg = TopologyRegistry::new();
    assert!(reg.is_empty());
    let parent = n(0x1234_5678);
    let child = n(0x2234_5678);

    let mut labels = crate::discovery::Labels::new();
    labels.insert(String::from("key1"), String::from("value1"));
    labels.insert(String::from("key2"), String::from("value2"));
    let parent_data = PeerData {
        hostname: String::from("test_host"),
        pid: 1234,
        labels: labels.clone(),
    };
    let change = reg.update_peer(parent, NodeId::NONE, parent_data).unwrap();
    assert_eq!(
        change,
        PeerChange {
            created: true,
            data_changed: true,
            ..PeerChange::default()
        }
    );

    let peer = reg.get(parent).unwrap();
    assert_eq!(peer.id(), parent);
    assert_eq!(peer.upstream(), None);
    assert_eq!(peer.pid(), 1234);
    assert_eq!(peer.hostname(), "test_host");
    assert_eq!(peer.labels(), &labels);
    assert!(peer.is_proactive());
    assert_eq!(peer.downstream_len(), 0);
    assert!(!peer.contains_downstream(child));

    let change = reg
        .update_peer(child, parent, data(2, "test_host"))
        .unwrap();
    assert_eq!(
        change,
        PeerChange {
            created: true,
            upstream_changed: up_change(None, Some(0x1234_5678)),
            data_changed: true,
            ..PeerChange::default()
        }
    );
    assert!(reg.get(parent).unwrap().contains_downstream(child));
    assert!(!reg.get(child).unwrap().contains_downstream(parent));
    assert_eq!(reg.upstream_of(child), Some(parent));
    assert_eq!(reg.upstream_of(parent), None);
    assert_eq!(reg.len(), 2);

    let removed = reg.remove_peer(child).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: true,
            was_proactive: true,
            old_upstream: Some(parent),
            pruned: smallvec![],
        }
    );
    assert!(!reg.get(parent).unwrap().contains_downstream(child));
    assert!(!reg.contains(child));
    assert_eq!(reg.len(), 1);
}

#[test]
fn downstream_iteration() {
    let mut reg = TopologyRegistry::new();
    for child in [5, 3, 9, 2] {
        put(&mut reg, child, 1, "h");
    }
    assert_eq!(ids(reg.downstream_of(n(1))), vec![2, 3, 5, 9]);
    assert_eq!(ids(reg.downstream_of(n(1)).rev()), vec![9, 5, 3, 2]);
    assert_eq!(reg.get(n(1)).unwrap().downstream().len(), 4);
    assert!(
        !reg.is_proactive(n(1)),
        "1 is only referenced, hence passive"
    );
    assert_eq!(ids(reg.ids()), vec![1, 2, 3, 5, 9]);

    put(&mut reg, 5, 3, "h");
    assert_eq!(ids(reg.downstream_of(n(1))), vec![2, 3, 9]);
    assert_eq!(ids(reg.downstream_of(n(3))), vec![5]);
    assert_eq!(ids(reg.downstream_of(n(5))), Vec::<u64>::new());
    assert_eq!(ids(reg.downstream_of(n(77))), Vec::<u64>::new());
    assert_eq!(ids(reg.downstream_of(NodeId::NONE)), Vec::<u64>::new());
    assert_eq!(ids(reg.upstream_chain(n(5))), vec![3, 1]);
    assert_eq!(ids(reg.upstream_chain(n(1))), Vec::<u64>::new());
    assert_eq!(ids(reg.upstream_chain(n(77))), Vec::<u64>::new());
}

/// The forest used by libatbus: 2 and 4 under 1, 3 under 2, 10 a separate root.
fn forest() -> TopologyRegistry {
    let mut reg = TopologyRegistry::new();
    put(&mut reg, 1, 0, "h1");
    put(&mut reg, 2, 1, "h1");
    put(&mut reg, 3, 2, "h1");
    put(&mut reg, 4, 1, "h1");
    put(&mut reg, 10, 0, "h2");
    reg
}

#[test]
fn relations_on_forest() {
    use Relation::{
        ImmediateDownstream as ImmDown, ImmediateUpstream as ImmUp, OtherUpstreamPeer as Other,
        SameUpstreamPeer as Same, Self_, TransitiveDownstream as TransDown,
        TransitiveUpstream as TransUp,
    };
    let reg = forest();
    // (from, to, relation, next hop) for every ordered pair of the five peers.
    let expected: [(u64, u64, Relation, u64); 25] = [
        (1, 1, Self_, 1),
        (1, 2, ImmDown, 2),
        (1, 3, TransDown, 2),
        (1, 4, ImmDown, 4),
        (1, 10, Other, 10),
        (2, 1, ImmUp, 1),
        (2, 2, Self_, 2),
        (2, 3, ImmDown, 3),
        (2, 4, Same, 1),
        (2, 10, Other, 1),
        (3, 1, TransUp, 2),
        (3, 2, ImmUp, 2),
        (3, 3, Self_, 3),
        (3, 4, Other, 2),
        (3, 10, Other, 2),
        (4, 1, ImmUp, 1),
        (4, 2, Same, 1),
        (4, 3, Other, 1),
        (4, 4, Self_, 4),
        (4, 10, Other, 1),
        (10, 1, Other, 1),
        (10, 2, Other, 2),
        (10, 3, Other, 3),
        (10, 4, Other, 4),
        (10, 10, Self_, 10),
    ];
    for (from, to, relation, hop) in expected {
        let route = reg.route(n(from), n(to));
        assert_eq!(
            (route.relation, route.next_hop),
            (relation, Some(n(hop))),
            "{from} -> {to}"
        );
        assert_eq!(reg.relation(n(from), n(to)), relation);
        assert_eq!(reg.next_hop(n(from), n(to)), Some(n(hop)));
    }
    for (from, to) in [(0, 1), (1, 0), (0, 0), (1, 9999), (9999, 1), (9999, 9999)] {
        let route = reg.route(n(from), n(to));
        assert_eq!(
            (route.relation, route.next_hop),
            (Relation::Invalid, None),
            "{from} -> {to}"
        );
    }
}

#[test]
fn update_and_remove() {
    let mut reg = TopologyRegistry::new();
    put(&mut reg, 1, 0, "h1");
    put(&mut reg, 10, 0, "h2");
    put(&mut reg, 2, 1, "h1");
    put(&mut reg, 3, 2, "h1");
    assert!(reg.get(n(1)).unwrap().contains_downstream(n(2)));
    assert_eq!(reg.upstream_of(n(2)), Some(n(1)));

    // Move 2 from upstream 1 to upstream 10, changing its host too.
    let change = reg.update_peer(n(2), n(10), data(2, "h2")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            upstream_changed: up_change(Some(1), Some(10)),
            data_changed: true,
            ..PeerChange::default()
        }
    );
    assert!(!reg.get(n(1)).unwrap().contains_downstream(n(2)));
    assert!(reg.get(n(10)).unwrap().contains_downstream(n(2)));
    assert_eq!(reg.upstream_of(n(2)), Some(n(10)));
    assert!(
        reg.contains(n(1)),
        "1 is proactive, so it stays without children"
    );

    // The same record again changes nothing.
    let change = reg.update_peer(n(2), n(10), data(2, "h2")).unwrap();
    assert!(change.is_noop());
    assert_eq!(change, PeerChange::default());

    // Host and pid alone are changes (libatapp ignores both).
    let change = reg.update_peer(n(2), n(10), data(2, "h3")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            data_changed: true,
            ..PeerChange::default()
        }
    );
    let change = reg.update_peer(n(2), n(10), data(22, "h3")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            data_changed: true,
            ..PeerChange::default()
        }
    );
    assert_eq!(reg.get(n(2)).unwrap().data(), &data(22, "h3"));

    // Removing 2 keeps it as a passive peer, because 3 still names it; it forgets its
    // upstream and its data.
    let removed = reg.remove_peer(n(2)).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: false,
            was_proactive: true,
            old_upstream: Some(n(10)),
            pruned: smallvec![],
        }
    );
    let two = reg.get(n(2)).unwrap();
    assert!(!two.is_proactive());
    assert_eq!(two.upstream(), None);
    assert_eq!(two.data(), &PeerData::default());
    assert_eq!(ids(two.downstream()), vec![3]);
    assert!(!reg.get(n(10)).unwrap().contains_downstream(n(2)));
    assert_eq!(reg.upstream_of(n(3)), Some(n(2)));

    // Removing the passive 2 again changes nothing.
    let removed = reg.remove_peer(n(2)).unwrap();
    assert!(removed.is_noop());
    assert_eq!(removed, Removed::default());

    // 3 leaves: the passive 2 goes with it.
    let removed = reg.remove_peer(n(3)).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: true,
            was_proactive: true,
            old_upstream: Some(n(2)),
            pruned: smallvec![n(2)],
        }
    );
    assert_eq!(ids(reg.ids()), vec![1, 10]);

    let removed = reg.remove_peer(n(10)).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: true,
            was_proactive: true,
            old_upstream: None,
            pruned: smallvec![],
        }
    );
    assert_eq!(
        reg.remove_peer(n(10)),
        Err(TopologyError::UnknownPeer(n(10)))
    );
    assert_eq!(ids(reg.ids()), vec![1]);
}

#[test]
fn proactive_orphan_kept() {
    let mut reg = TopologyRegistry::new();
    put(&mut reg, 1, 0, "h");
    put(&mut reg, 2, 1, "h");
    put(&mut reg, 3, 2, "h");

    // 1's record goes away: 1 stays (passive) because 2 names it; 2 keeps its upstream.
    let removed = reg.remove_peer(n(1)).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: false,
            was_proactive: true,
            old_upstream: None,
            pruned: smallvec![],
        }
    );
    assert!(!reg.is_proactive(n(1)));
    assert!(reg.is_proactive(n(2)));
    assert_eq!(reg.upstream_of(n(2)), Some(n(1)));
    assert_eq!(reg.relation(n(2), n(1)), Relation::ImmediateUpstream);

    // 3 leaves: 2 is childless now but proactive, so it stays.
    let removed = reg.remove_peer(n(3)).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: true,
            was_proactive: true,
            old_upstream: Some(n(2)),
            pruned: smallvec![],
        }
    );
    assert_eq!(ids(reg.ids()), vec![1, 2]);
    assert!(reg.is_proactive(n(2)));

    // 2 leaves: the passive 1 is pruned with it.
    let removed = reg.remove_peer(n(2)).unwrap();
    assert_eq!(
        removed,
        Removed {
            erased: true,
            was_proactive: true,
            old_upstream: Some(n(1)),
            pruned: smallvec![n(1)],
        }
    );
    assert!(reg.is_empty());
}

#[test]
fn passive_upstream_auto_removed() {
    let mut reg = TopologyRegistry::new();
    let change = reg.update_peer(n(2), n(1), data(2, "h")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            created: true,
            upstream_changed: up_change(None, Some(1)),
            data_changed: true,
            upstream_created: true,
            pruned: smallvec![],
            ..PeerChange::default()
        }
    );
    let one = reg.get(n(1)).unwrap();
    assert!(!one.is_proactive());
    assert_eq!(one.data(), &PeerData::default());
    assert_eq!(one.upstream(), None);

    let change = reg.update_peer(n(3), n(1), data(3, "h")).unwrap();
    assert!(!change.upstream_created);

    // One child leaves: 1 still has 3.
    assert_eq!(
        reg.remove_peer(n(2)).unwrap().pruned,
        smallvec![] as smallvec::SmallVec<[NodeId; 1]>
    );
    assert!(reg.contains(n(1)));

    // The last child moves away: 1 is pruned, the new upstream 5 is created passive.
    let change = reg.update_peer(n(3), n(5), data(3, "h")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            upstream_changed: up_change(Some(1), Some(5)),
            upstream_created: true,
            pruned: smallvec![n(1)],
            ..PeerChange::default()
        }
    );
    assert!(!reg.contains(n(1)));
    assert_eq!(ids(reg.ids()), vec![3, 5]);

    // The last child becomes a root: 5 is pruned.
    let change = reg.update_peer(n(3), NodeId::NONE, data(3, "h")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            upstream_changed: up_change(Some(5), None),
            pruned: smallvec![n(5)],
            ..PeerChange::default()
        }
    );
    assert_eq!(ids(reg.ids()), vec![3]);

    // Passive 7 under nobody, child 8; 8 leaves for good: 7 goes too.
    put(&mut reg, 8, 7, "h");
    let removed = reg.remove_peer(n(8)).unwrap();
    assert_eq!(
        removed.pruned,
        smallvec![n(7)] as smallvec::SmallVec<[NodeId; 1]>
    );
    assert_eq!(ids(reg.ids()), vec![3]);
}

#[test]
fn passive_to_proactive_promotion() {
    let mut reg = TopologyRegistry::new();
    put(&mut reg, 2, 1, "h");
    assert!(!reg.is_proactive(n(1)));

    let change = reg.update_peer(n(1), NodeId::NONE, data(1, "h")).unwrap();
    assert_eq!(
        change,
        PeerChange {
            promoted: true,
            data_changed: true,
            ..PeerChange::default()
        }
    );
    assert!(reg.is_proactive(n(1)));
    assert_eq!(ids(reg.downstream_of(n(1))), vec![2]);

    // Its only child leaves; a proactive peer is not pruned.
    assert_eq!(
        reg.remove_peer(n(2)).unwrap(),
        Removed {
            erased: true,
            was_proactive: true,
            old_upstream: Some(n(1)),
            pruned: smallvec![],
        }
    );
    assert_eq!(ids(reg.ids()), vec![1]);
    assert!(
        reg.update_peer(n(1), NodeId::NONE, data(1, "h"))
            .unwrap()
            .is_noop()
    );

    // A passive peer promoted with default data and an upstream: only the promotion and the
    // upstream are reported.
    put(&mut reg, 3, 7, "h");
    let change = reg.update_peer(n(7), n(1), PeerData::default()).unwrap();
    assert_eq!(
        change,
        PeerChange {
            promoted: true,
            upstream_changed: up_change(None, Some(1)),
            ..PeerChange::default()
        }
    );
    assert_eq!(ids(reg.upstream_chain(n(3))), vec![7, 1]);
    assert_eq!(reg.relation(n(3), n(1)), Relation::TransitiveUpstream);
}

#[test]
fn foreach_and_policy() {
    let mut reg = TopologyRegistry::new();
    reg.update_peer(n(1), NodeId::NONE, data(100, "host_a"))
        .unwrap();
    reg.update_peer(n(2), n(1), data(101, "host_a")).unwrap();
    reg.update_peer(n(3), n(1), data(102, "host_b")).unwrap();

    assert_eq!(reg.iter().count(), 3);
    assert_eq!(
        (&reg).into_iter().map(|p| p.pid()).collect::<Vec<_>>(),
        vec![100, 101, 102]
    );
    // Stopping early (libatbus's callback returning false): visit up to the first peer on
    // host_a with a parent.
    let mut visited = Vec::new();
    for peer in &reg {
        visited.push(peer.id().0);
        if peer.hostname() == "host_a" && peer.upstream().is_some() {
            break;
        }
    }
    assert_eq!(visited, vec![1, 2]);

    let with_zone = |pid: i64, host: &str, zone: Option<&str>| {
        let mut d = data(pid, host);
        if let Some(zone) = zone {
            d.labels.insert(String::from("zone"), String::from(zone));
        }
        d
    };
    let zones = |allowed: &[&str]| {
        let mut m = BTreeMap::new();
        m.insert(
            String::from("zone"),
            allowed.iter().map(|s| String::from(*s)).collect(),
        );
        m
    };
    let local = data(1234, "host_a");
    let host_a = String::from("host_a");
    let host_b = String::from("host_b");

    let all = TopologyPolicy {
        require_same_host: true,
        require_same_process: true,
        match_label: zones(&["1", "2"]),
        ..TopologyPolicy::default()
    };
    assert_eq!(
        all.check_policy(&local, &with_zone(1234, "host_a", Some("1"))),
        Ok(())
    );
    assert_eq!(
        all.check_policy(&local, &with_zone(1234, "host_b", Some("1"))),
        Err(PolicyDenied::DifferentHost {
            local: host_a.clone(),
            remote: host_b.clone()
        })
    );
    assert_eq!(
        all.check_policy(&local, &with_zone(5678, "host_a", Some("1"))),
        Err(PolicyDenied::DifferentProcess {
            local: 1234,
            remote: 5678
        })
    );
    assert_eq!(
        all.check_policy(&local, &with_zone(1234, "host_a", Some("3"))),
        Err(PolicyDenied::LabelNotAllowed {
            key: String::from("zone"),
            value: String::from("3")
        })
    );
    assert_eq!(
        all.check_policy(&local, &with_zone(1234, "host_a", None)),
        Err(PolicyDenied::MissingLabel {
            key: String::from("zone")
        })
    );

    let host_only = TopologyPolicy {
        require_same_host: true,
        match_label: zones(&["1"]),
        ..TopologyPolicy::default()
    };
    assert_eq!(
        host_only.check_policy(&local, &with_zone(5678, "host_a", Some("1"))),
        Ok(())
    );
    assert_eq!(
        host_only.check_policy(&local, &with_zone(5678, "host_b", Some("1"))),
        Err(PolicyDenied::DifferentHost {
            local: host_a.clone(),
            remote: host_b.clone()
        })
    );
    assert_eq!(
        host_only.check_policy(&local, &with_zone(5678, "host_a", Some("2"))),
        Err(PolicyDenied::LabelNotAllowed {
            key: String::from("zone"),
            value: String::from("2")
        })
    );

    // Same process implies same host.
    let process_only = TopologyPolicy {
        require_same_process: true,
        match_label: zones(&["1"]),
        ..TopologyPolicy::default()
    };
    assert_eq!(
        process_only.check_policy(&local, &with_zone(1234, "host_a", Some("1"))),
        Ok(())
    );
    assert_eq!(
        process_only.check_policy(&local, &with_zone(5678, "host_a", Some("1"))),
        Err(PolicyDenied::DifferentProcess {
            local: 1234,
            remote: 5678
        })
    );
    assert_eq!(
        process_only.check_policy(&local, &with_zone(1234, "host_b", Some("1"))),
        Err(PolicyDenied::DifferentHost {
            local: host_a.clone(),
            remote: host_b.clone()
        })
    );

    let labels_only = TopologyPolicy {
        match_label: zones(&["1"]),
        ..TopologyPolicy::default()
    };
    assert_eq!(
        labels_only.check_policy(&local, &with_zone(5678, "host_b", Some("1"))),
        Ok(())
    );
    assert_eq!(
        labels_only.check_policy(&local, &with_zone(5678, "host_b", Some("2"))),
        Err(PolicyDenied::LabelNotAllowed {
            key: String::from("zone"),
            value: String::from("2")
        })
    );
    assert_eq!(
        labels_only.check_policy(&local, &with_zone(5678, "host_b", None)),
        Err(PolicyDenied::MissingLabel {
            key: String::from("zone")
        })
    );
    // An empty allowed list admits no value.
    let nothing_allowed = TopologyPolicy {
        match_label: zones(&[]),
        ..TopologyPolicy::default()
    };
    assert_eq!(
        nothing_allowed.check_policy(&local, &with_zone(1, "x", Some("1"))),
        Err(PolicyDenied::LabelNotAllowed {
            key: String::from("zone"),
            value: String::from("1")
        })
    );
    // The default policy admits anyone.
    assert_eq!(
        TopologyPolicy::default().check_policy(&local, &PeerData::default()),
        Ok(())
    );

    // Policy against registry data: 2 (host_a) may not link to 3 (host_b) under same-host.
    let same_host = TopologyPolicy {
        require_same_host: true,
        ..TopologyPolicy::default()
    };
    let two = reg.get(n(2)).unwrap().data();
    assert_eq!(
        same_host.check_policy(two, reg.get(n(3)).unwrap().data()),
        Err(PolicyDenied::DifferentHost {
            local: host_a.clone(),
            remote: host_b
        })
    );
    assert_eq!(
        same_host.check_policy(two, reg.get(n(1)).unwrap().data()),
        Ok(())
    );

    // Direct paths: only to peers (or unknown nodes), only when allowed, and only under the
    // same upstream when that is required.
    let all_relations: Vec<Relation> = (0..=7).filter_map(Relation::from_u8).collect();
    let allowed_for = |policy: &TopologyPolicy| -> Vec<u8> {
        all_relations
            .iter()
            .filter(|r| policy.direct_path_allowed(**r))
            .map(|r| r.as_u8())
            .collect()
    };
    assert_eq!(allowed_for(&TopologyPolicy::default()), Vec::<u8>::new());
    let direct = TopologyPolicy {
        allow_direct_connection: true,
        ..TopologyPolicy::default()
    };
    assert_eq!(allowed_for(&direct), vec![0, 6, 7]);
    let direct_same_up = TopologyPolicy {
        allow_direct_connection: true,
        require_same_upstream: true,
        ..TopologyPolicy::default()
    };
    assert_eq!(allowed_for(&direct_same_up), vec![6]);
    assert!(direct.direct_path_allowed(reg.relation(n(2), n(3))));
    assert!(!direct.direct_path_allowed(reg.relation(n(2), n(1))));
}

#[test]
fn cycle_detection() {
    let mut reg = TopologyRegistry::new();
    assert_eq!(
        reg.update_peer(n(1), n(1), data(1, "h1")),
        Err(TopologyError::SelfUpstream(n(1)))
    );
    assert!(reg.is_empty(), "a rejected self-loop creates nothing");

    // 2 and 4 under 1, 3 under 2.
    put(&mut reg, 1, 0, "h1");
    put(&mut reg, 2, 1, "h1");
    put(&mut reg, 3, 2, "h1");
    put(&mut reg, 4, 1, "h1");
    let snapshot = reg.clone();

    let cycle = |id: u64, upstream: u64, path: &[u64]| TopologyError::Cycle {
        id: n(id),
        upstream: n(upstream),
        path: path.iter().copied().map(NodeId).collect(),
    };
    // Direct: 1 -> 2 -> 1. The new data must not leak in either.
    assert_eq!(
        reg.update_peer(n(1), n(2), data(99, "other")),
        Err(cycle(1, 2, &[1, 2, 1]))
    );
    assert_eq!(reg, snapshot);
    // Indirect: 1 -> 3 -> 2 -> 1.
    assert_eq!(
        reg.update_peer(n(1), n(3), data(1, "h1")),
        Err(cycle(1, 3, &[1, 3, 2, 1]))
    );
    assert_eq!(reg, snapshot);
    // 2 -> 3 -> 2.
    assert_eq!(
        reg.update_peer(n(2), n(3), data(2, "h1")),
        Err(cycle(2, 3, &[2, 3, 2]))
    );
    assert_eq!(reg, snapshot);

    // A valid move: 4 under 2.
    let change = reg.update_peer(n(4), n(2), data(4, "h1")).unwrap();
    assert_eq!(change.upstream_changed, up_change(Some(1), Some(2)));
    assert!(!reg.get(n(1)).unwrap().contains_downstream(n(4)));
    assert!(reg.get(n(2)).unwrap().contains_downstream(n(4)));

    // Deeper: 1 -> 4 -> 2 -> 1.
    let snapshot = reg.clone();
    assert_eq!(
        reg.update_peer(n(1), n(4), data(1, "h1")),
        Err(cycle(1, 4, &[1, 4, 2, 1]))
    );
    assert_eq!(reg, snapshot);

    // A passive peer cannot be hung under its own child either.
    put(&mut reg, 6, 5, "h1");
    let snapshot = reg.clone();
    assert_eq!(
        reg.update_peer(n(5), n(6), data(5, "h1")),
        Err(cycle(5, 6, &[5, 6, 5]))
    );
    assert_eq!(reg, snapshot);
    assert!(!reg.is_proactive(n(5)));
}
