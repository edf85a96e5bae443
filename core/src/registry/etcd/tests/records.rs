//! Keys, range ends, the registration txn, mapping of libatapp-written documents, snapshot
//! diffs.

use alloc::{string::String, vec, vec::Vec};

use super::*;
use crate::{
    discovery::{
        Area, DecodeError, DiscoveryInfo, DiscoverySet, Gateway, Metadata, Runtime, TopologyData,
        TopologyInfo,
    },
    ids::NodeId,
    registry::RegistryEvent,
};

/// An `atapp_discovery` exactly as libatapp writes it: protobuf JSON, original field names,
/// declaration order, default fields omitted, int64 unquoted, compact.
pub(super) const LIBATAPP_DISCOVERY: &str = concat!(
    r#"{"id":4353,"name":"echo-svr-1","hostname":"node-b12.dc1","pid":2841,"#,
    r#""listen":["atcp://0.0.0.0:16001","unix:///var/run/echo-svr-1.sock"],"#,
    r#""hash_code":"3C1D9A77E0B2F4A85D6E7F8091A2B3C4","type_id":12,"type_name":"echo","#,
    r#""area":{"region":"eu-west","district":"ams","zone_id":1012},"#,
    r#""version":"2.3.1","identity":"9d1e2f3a-6b7c-4d8e-9f00-112233445566","#,
    r#""gateways":[{"address":"atcp://198.51.100.4:16001","match_hosts":["edge-1"],"#,
    r#""match_namespaces":["live"],"match_labels":{"cell":"c3"}}],"#,
    r#""runtime":{"stateful_pod_index":1},"#,
    r#""atbus_protocol_version":3,"atbus_protocol_min_version":2,"#,
    r#""metadata":{"api_version":"v1","kind":"echo","group":"svc","name":"echo-svr","#,
    r#""namespace_name":"live","uid":"a1b2","service_subset":"stable","#,
    r#""labels":{"cell":"c3","tier":"core"}}}"#
);

/// An `atapp_topology_info` exactly as libatapp writes it.
pub(super) const LIBATAPP_TOPOLOGY: &str = concat!(
    r#"{"id":4353,"name":"echo-svr-1","hostname":"node-b12.dc1","pid":2841,"#,
    r#""identity":"9d1e2f3a-6b7c-4d8e-9f00-112233445566","version":"2.3.1","#,
    r#""upstream_id":4097,"data":{"label":{"cell":"c3"}}}"#
);

fn map(items: &[(&str, &str)]) -> crate::discovery::Labels {
    items
        .iter()
        .map(|(k, v)| (String::from(*k), String::from(*v)))
        .collect()
}

fn s(text: &str) -> String {
    String::from(text)
}

pub(super) fn expected_discovery(revision: u64) -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(4353),
        name: s("echo-svr-1"),
        hostname: s("node-b12.dc1"),
        pid: 2841,
        listen: vec![
            s("atcp://0.0.0.0:16001"),
            s("unix:///var/run/echo-svr-1.sock"),
        ],
        hash_code: s("3C1D9A77E0B2F4A85D6E7F8091A2B3C4").into(),
        type_id: 12,
        type_name: s("echo"),
        area: Area {
            region: s("eu-west"),
            district: s("ams"),
            zone_id: 1012,
        }
        .into(),
        version: s("2.3.1"),
        custom_data: String::new().into(),
        identity: s("9d1e2f3a-6b7c-4d8e-9f00-112233445566"),
        gateways: vec![Gateway {
            address: s("atcp://198.51.100.4:16001"),
            match_hosts: vec![s("edge-1")],
            match_namespaces: vec![s("live")],
            match_labels: map(&[("cell", "c3")]),
        }]
        .into(),
        runtime: Runtime {
            stateful_pod_index: 1,
        },
        atbus_protocol_version: 3,
        atbus_protocol_min_version: 2,
        incarnation: 0,
        metadata: Metadata {
            api_version: s("v1"),
            kind: s("echo"),
            group: s("svc"),
            name: s("echo-svr"),
            namespace_name: s("live"),
            uid: s("a1b2"),
            service_subset: s("stable"),
            labels: map(&[("cell", "c3"), ("tier", "core")]),
        }
        .into(),
        revision,
    }
}

pub(super) fn expected_topology(revision: u64) -> TopologyInfo {
    TopologyInfo {
        id: NodeId(4353),
        name: s("echo-svr-1"),
        hostname: s("node-b12.dc1"),
        pid: 2841,
        identity: s("9d1e2f3a-6b7c-4d8e-9f00-112233445566"),
        version: s("2.3.1").into(),
        upstream_id: NodeId(4097),
        data: TopologyData {
            label: map(&[("cell", "c3")]),
        }
        .into(),
        revision,
    }
}

pub(super) fn layout() -> KeyLayout {
    KeyLayout::new("/atapp/services")
}

pub(super) fn kv(key: &str, value: &str, create: i64, modr: i64) -> KeyValue {
    KeyValue {
        key: key.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
        create_revision: create,
        mod_revision: modr,
        version: 1,
        lease: 0x6d2a_0000_0001,
    }
}

// ---- keys -------------------------------------------------------------------------------

#[test]
fn prefix_is_normalised() {
    assert_eq!(KeyLayout::new("").prefix(), "/");
    assert_eq!(
        KeyLayout::new("/atapp/services").prefix(),
        "/atapp/services/"
    );
    assert_eq!(
        KeyLayout::new("/atapp/services/").prefix(),
        "/atapp/services/"
    );
    assert_eq!(KeyLayout::new("svc").prefix(), "svc/");
}

#[test]
fn keys_follow_the_libatapp_layout() {
    let l = layout();
    assert_eq!(
        l.key(KeyKind::ById, "echo-svr-1", NodeId(4353)),
        b"/atapp/services/by_id/echo-svr-1-4353".to_vec()
    );
    assert_eq!(
        l.key(KeyKind::ByName, "echo-svr-1", NodeId(4353)),
        b"/atapp/services/by_name/echo-svr-1-4353".to_vec()
    );
    assert_eq!(
        l.key(KeyKind::Topology, "echo-svr-1", NodeId(4353)),
        b"/atapp/services/topology/echo-svr-1-4353".to_vec()
    );
    assert_eq!(
        l.key(KeyKind::ById, "", NodeId(77)),
        b"/atapp/services/by_id/77".to_vec()
    );
    assert_eq!(
        KeyLayout::new("").key(KeyKind::ByName, "a", NodeId(0)),
        b"/by_name/a-0".to_vec()
    );
}

#[test]
fn keys_round_trip() {
    let l = layout();
    for kind in KeyKind::ALL {
        for (name, id) in [("echo-svr-1", 4353), ("x", u64::MAX), ("", 9), ("a--b", 1)] {
            let key = l.key(kind, name, NodeId(id));
            assert_eq!(
                l.parse(&key),
                Ok(ParsedKey {
                    kind,
                    name: s(name),
                    id: NodeId(id)
                })
            );
        }
    }
    // A name-only discovery key round-trips; topology needs an id.
    let key = l.key(KeyKind::ByName, "solo", NodeId(0));
    assert_eq!(
        l.parse(&key),
        Ok(ParsedKey {
            kind: KeyKind::ByName,
            name: s("solo"),
            id: NodeId(0)
        })
    );
}

#[test]
fn parse_takes_the_last_segment_and_the_last_dash() {
    let l = layout();
    assert_eq!(
        l.parse(b"/atapp/services/by_id/echo-svr-1-4353"),
        Ok(ParsedKey {
            kind: KeyKind::ById,
            name: s("echo-svr-1"),
            id: NodeId(4353)
        })
    );
    assert_eq!(
        l.parse(b"/atapp/services/by_name/old/nested/gw-12"),
        Ok(ParsedKey {
            kind: KeyKind::ByName,
            name: s("gw"),
            id: NodeId(12)
        })
    );
    assert_eq!(
        l.parse(b"/atapp/services/topology/4353"),
        Ok(ParsedKey {
            kind: KeyKind::Topology,
            name: String::new(),
            id: NodeId(4353)
        })
    );
}

#[test]
fn bad_keys_are_typed_errors() {
    let l = layout();
    let cases: [(&[u8], KeyError); 11] = [
        (b"/other/by_id/a-1", KeyError::NotUnderPrefix),
        (b"/atapp/services/by_ip/a-1", KeyError::UnknownKind),
        (b"/atapp/services/by_id", KeyError::UnknownKind),
        (b"/atapp/services/by_id/", KeyError::EmptySegment),
        (b"/atapp/services/by_id/a-1/", KeyError::EmptySegment),
        (b"/atapp/services/by_id/\xff-1", KeyError::NotUtf8),
        (b"/atapp/services/by_id/echo-svr", KeyError::BadId(s("svr"))),
        (
            b"/atapp/services/by_id/echo-",
            KeyError::BadId(String::new()),
        ),
        (
            b"/atapp/services/by_id/a-18446744073709551616",
            KeyError::BadId(s("18446744073709551616")),
        ),
        (b"/atapp/services/by_id/0", KeyError::NoIdentity),
        (b"/atapp/services/topology/named-0", KeyError::NoIdentity),
    ];
    for (key, error) in cases {
        assert_eq!(l.parse(key), Err(error), "key {key:?}");
    }
    assert_eq!(
        l.parse(b"/atapp/services/by_id/a-+1"),
        Err(KeyError::BadId(s("+1")))
    );
}

#[test]
fn range_end_is_prefix_plus_one() {
    assert_eq!(range_end(b"/atapp/by_id/"), b"/atapp/by_id0".to_vec());
    assert_eq!(range_end(b"a\xff"), b"b".to_vec());
    assert_eq!(range_end(b"a\xfe\xff\xff"), b"a\xff".to_vec());
    assert_eq!(range_end(b"\xff\xff"), vec![0]);
    assert_eq!(range_end(b""), vec![0]);
    assert_eq!(
        layout().watch_range(KeyKind::Topology),
        (
            b"/atapp/services/topology/".to_vec(),
            b"/atapp/services/topology0".to_vec()
        )
    );
}

// ---- registration -----------------------------------------------------------------------

#[test]
fn registration_txn_writes_topology_then_by_id_then_by_name_on_the_lease() {
    let info = expected_discovery(0);
    let topo = expected_topology(0);
    let txn = RegistrationTxn::plan(&layout(), &info, &topo);
    assert_eq!(
        txn.guard_key,
        b"/atapp/services/by_id/echo-svr-1-4353".to_vec()
    );
    assert_eq!(
        txn.puts,
        vec![
            PutOp {
                key: b"/atapp/services/topology/echo-svr-1-4353".to_vec(),
                value: LIBATAPP_TOPOLOGY.as_bytes().to_vec(),
                with_lease: true,
            },
            PutOp {
                key: b"/atapp/services/by_id/echo-svr-1-4353".to_vec(),
                value: LIBATAPP_DISCOVERY.as_bytes().to_vec(),
                with_lease: true,
            },
            PutOp {
                key: b"/atapp/services/by_name/echo-svr-1-4353".to_vec(),
                value: LIBATAPP_DISCOVERY.as_bytes().to_vec(),
                with_lease: true,
            },
        ]
    );
    let mut moved = topo.clone();
    moved.upstream_id = NodeId(4098);
    assert_eq!(
        RegistrationTxn::topology_update(&layout(), &info, &moved),
        PutOp {
            key: b"/atapp/services/topology/echo-svr-1-4353".to_vec(),
            value: LIBATAPP_TOPOLOGY
                .replace("4097", "4098")
                .as_bytes()
                .to_vec(),
            with_lease: true,
        }
    );
}

#[test]
fn registration_outcomes_decode() {
    let txn = RegistrationTxn::plan(&layout(), &expected_discovery(0), &expected_topology(0));
    assert_eq!(
        txn.outcome(true, 120, None),
        RegisterOutcome::Registered { revision: 120 }
    );
    let mut other = kv(
        "/atapp/services/by_id/echo-svr-1-4353",
        LIBATAPP_DISCOVERY,
        90,
        95,
    );
    other.lease = 0x77;
    let RegisterOutcome::Conflict(conflict) = txn.outcome(false, 121, Some(&other)) else {
        panic!("a failed guard is a conflict");
    };
    assert_eq!(
        *conflict,
        RegisterConflict {
            key: b"/atapp/services/by_id/echo-svr-1-4353".to_vec(),
            owner: Some(expected_discovery(95)),
            owner_error: None,
            owner_lease: 0x77,
            create_revision: 90,
            owner_mod_revision: 95,
        }
    );
    assert_eq!(RegistrationTxn::takeover_guard(&conflict), 95);
    assert!(conflict.is_own(0x77, ""));
    assert!(conflict.is_own(5, "9d1e2f3a-6b7c-4d8e-9f00-112233445566"));
    assert!(!conflict.is_own(5, "another-instance"));
    assert!(!conflict.is_own(0, ""));

    let garbage = kv("/atapp/services/by_id/echo-svr-1-4353", "{\"id\":", 90, 95);
    let RegisterOutcome::Conflict(conflict) = txn.outcome(false, 121, Some(&garbage)) else {
        panic!("a failed guard is a conflict");
    };
    assert_eq!(conflict.owner, None);
    assert_eq!(
        conflict.owner_error,
        Some(DecodeError::Truncated { line: 1, column: 6 })
    );
    assert_eq!(
        txn.outcome(false, 121, None),
        RegisterOutcome::Conflict(alloc::boxed::Box::new(RegisterConflict {
            key: b"/atapp/services/by_id/echo-svr-1-4353".to_vec(),
            owner: None,
            owner_error: None,
            owner_lease: 0,
            create_revision: 0,
            owner_mod_revision: 0,
        }))
    );
}

#[test]
fn a_name_is_held_by_a_by_name_key_of_that_name_under_another_id() {
    let l = layout();
    let info = expected_discovery(0); // echo-svr-1, id 4353
    assert_eq!(
        RegistrationTxn::name_prefix(&l, &info),
        Some(b"/atapp/services/by_name/echo-svr-1-".to_vec())
    );
    let unnamed = DiscoveryInfo {
        name: alloc::string::String::new(),
        ..info.clone()
    };
    assert_eq!(RegistrationTxn::name_prefix(&l, &unnamed), None);
    let own = kv("/atapp/services/by_name/echo-svr-1-4353", "", 10, 10);
    let longer_name = kv("/atapp/services/by_name/echo-svr-1-b-77", "", 11, 11);
    let garbage = kv("/atapp/services/by_name/echo-svr-1-x", "", 12, 12);
    let rival = kv("/atapp/services/by_name/echo-svr-1-9", "", 13, 13);
    assert_eq!(
        RegistrationTxn::name_holder(
            &l,
            &info,
            &[own.clone(), longer_name.clone(), garbage.clone()]
        ),
        None,
        "its own key, a longer name and an unparsable key hold nothing"
    );
    assert_eq!(
        RegistrationTxn::name_holder(&l, &info, &[own, longer_name, garbage, rival]),
        Some((b"/atapp/services/by_name/echo-svr-1-9".to_vec(), NodeId(9)))
    );
}

#[test]
fn the_txn_claims_the_name_and_a_claim_of_another_id_is_name_taken() {
    let l = layout();
    let info = expected_discovery(0); // echo-svr-1, id 4353
    let txn = RegistrationTxn::plan(&l, &info, &expected_topology(0));
    assert_eq!(
        txn.claim,
        Some(PutOp {
            key: b"/atapp/services/names/echo-svr-1".to_vec(),
            value: b"4353".to_vec(),
            with_lease: true,
        })
    );
    let unnamed = DiscoveryInfo {
        name: alloc::string::String::new(),
        ..info.clone()
    };
    assert_eq!(
        RegistrationTxn::plan(&l, &unnamed, &expected_topology(0)).claim,
        None
    );
    let rival = kv("/atapp/services/names/echo-svr-1", "9", 30, 31);
    let own = kv("/atapp/services/names/echo-svr-1", "4353", 30, 31);
    let junk = kv("/atapp/services/names/echo-svr-1", "x", 30, 31);
    assert_eq!(txn.claim_holder(Some(&rival)), Some(NodeId(9)));
    assert_eq!(txn.claim_holder(Some(&own)), None);
    assert_eq!(txn.claim_holder(Some(&junk)), None);
    assert_eq!(txn.claim_holder(None), None);
    // The race's loser: its condition failed on the claim, the id's key is free.
    assert_eq!(
        txn.outcome_with_claim(false, 40, None, Some(&rival)),
        RegisterOutcome::NameTaken {
            key: b"/atapp/services/names/echo-svr-1".to_vec(),
            holder: NodeId(9),
        }
    );
    // Its own claim (a previous life) is no rival: the `by_id` outcome stands.
    assert_eq!(
        txn.outcome_with_claim(false, 40, None, Some(&own)),
        txn.outcome(false, 40, None)
    );
    assert_eq!(
        txn.outcome_with_claim(true, 41, None, Some(&rival)),
        RegisterOutcome::Registered { revision: 41 }
    );
}

// ---- mapping ----------------------------------------------------------------------------

#[test]
fn libatapp_documents_map_to_exact_events() {
    let l = layout();
    let by_id = kv(
        "/atapp/services/by_id/echo-svr-1-4353",
        LIBATAPP_DISCOVERY,
        40,
        42,
    );
    let by_name = kv(
        "/atapp/services/by_name/echo-svr-1-4353",
        LIBATAPP_DISCOVERY,
        40,
        42,
    );
    let topo = kv(
        "/atapp/services/topology/echo-svr-1-4353",
        LIBATAPP_TOPOLOGY,
        40,
        42,
    );
    let want = RegistryEvent::DiscoveryPut(expected_discovery(42).into());
    assert_eq!(map_put(&l, &by_id), Ok(want.clone()));
    assert_eq!(map_put(&l, &by_name), Ok(want));
    assert_eq!(
        map_put(&l, &topo),
        Ok(RegistryEvent::TopologyPut(expected_topology(42).into()))
    );
    // Written back, the documents are byte-identical.
    assert_eq!(
        expected_discovery(0).to_json(),
        LIBATAPP_DISCOVERY.as_bytes()
    );
    assert_eq!(expected_topology(0).to_json(), LIBATAPP_TOPOLOGY.as_bytes());
}

#[test]
fn both_discovery_copies_apply_once() {
    let l = layout();
    let mut set = DiscoverySet::new();
    for family in ["by_id", "by_name"] {
        let key = alloc::format!("/atapp/services/{family}/echo-svr-1-4353");
        let Ok(RegistryEvent::DiscoveryPut(info)) =
            map_put(&l, &kv(&key, LIBATAPP_DISCOVERY, 40, 42))
        else {
            panic!("decodes");
        };
        let applied = set.put(info);
        if family == "by_id" {
            assert!(applied.is_change());
        } else {
            assert_eq!(applied, crate::discovery::Applied::Duplicate);
        }
    }
    assert_eq!(set.len(), 1);
}

#[test]
fn empty_values_are_key_only_records() {
    let l = layout();
    assert_eq!(
        map_put(&l, &kv("/atapp/services/by_name/gw-9", "", 3, 5)),
        Ok(RegistryEvent::DiscoveryPut(
            DiscoveryInfo {
                id: NodeId(9),
                name: s("gw"),
                revision: 5,
                ..DiscoveryInfo::default()
            }
            .into()
        ))
    );
    assert_eq!(
        map_put(&l, &kv("/atapp/services/topology/12", "", 3, 6)),
        Ok(RegistryEvent::TopologyPut(
            TopologyInfo {
                id: NodeId(12),
                revision: 6,
                ..TopologyInfo::default()
            }
            .into()
        ))
    );
}

#[test]
fn deletes_map_from_the_key_at_their_revision() {
    let l = layout();
    let mut gone = kv("/atapp/services/by_id/echo-svr-1-4353", "", 0, 77);
    gone.version = 0;
    let event = WatchEvent {
        kind: EventKind::Delete,
        kv: gone.clone(),
        prev_kv: None,
    };
    assert_eq!(
        map_event(&l, &event, 80),
        Ok(RegistryEvent::DiscoveryDelete {
            id: NodeId(4353),
            name: s("echo-svr-1"),
            revision: 77
        })
    );
    gone.mod_revision = 0;
    let event = WatchEvent {
        kind: EventKind::Delete,
        kv: gone,
        prev_kv: None,
    };
    assert_eq!(
        map_event(&l, &event, 80),
        Ok(RegistryEvent::DiscoveryDelete {
            id: NodeId(4353),
            name: s("echo-svr-1"),
            revision: 80
        })
    );
    assert_eq!(
        map_delete(&l, b"/atapp/services/topology/echo-svr-1-4353", 81),
        Ok(RegistryEvent::TopologyDelete {
            id: NodeId(4353),
            revision: 81
        })
    );
}

#[test]
fn garbage_values_are_typed_errors() {
    let l = layout();
    assert_eq!(
        map_put(&l, &kv("/atapp/services/by_id/a-1", "{\"id\":[]}", 1, 1)),
        Err(MapError::Value {
            kind: KeyKind::ById,
            error: DecodeError::WrongType {
                line: 1,
                column: 8,
                message: s(
                    "invalid type: sequence, expected an unsigned 64-bit integer (number or decimal string)"
                ),
            }
        })
    );
    assert_eq!(
        map_put(&l, &kv("/atapp/services/topology/a-1", "{}", 1, 1)),
        Err(MapError::Value {
            kind: KeyKind::Topology,
            error: DecodeError::NoIdentity,
        })
    );
    assert_eq!(
        map_put(&l, &kv("/atapp/services/by_id/a-x", "{}", 1, 1)),
        Err(MapError::Key(KeyError::BadId(s("x"))))
    );
}

// ---- snapshot diff ----------------------------------------------------------------------

fn delivered(items: &[(&str, u64)]) -> DeliveredKeys {
    let mut d = DeliveredKeys::new();
    for (key, rev) in items {
        d.put(key.as_bytes(), *rev);
    }
    d
}

#[test]
fn diff_synthesizes_exact_deletes_and_puts() {
    let d = delivered(&[("k/a-1", 3), ("k/b-2", 4), ("k/c-3", 5), ("k/d-4", 6)]);
    let list = vec![
        kv("k/a-1", "", 3, 3),   // unchanged
        kv("k/c-3", "", 5, 9),   // modified in the gap
        kv("k/d-4", "", 11, 11), // deleted and recreated in the gap
        kv("k/e-5", "", 10, 10), // new
    ];
    let diff = diff_snapshot(&d, &list, 12);
    assert_eq!(diff.deletes, vec![b"k/b-2".to_vec()]);
    assert_eq!(diff.puts, vec![&list[1], &list[2], &list[3]]);
    assert_eq!(diff.revision, 12);
    let empty = diff_snapshot(&DeliveredKeys::new(), &[], 1);
    assert_eq!((empty.deletes.len(), empty.puts.len()), (0, 0));
}

#[test]
fn delivered_keys_track_puts_and_deletes() {
    let mut d = delivered(&[("x", 1)]);
    d.put(b"x", 5);
    d.put(b"y", 6);
    d.delete(b"x");
    d.delete(b"never");
    assert_eq!(d.iter().collect::<Vec<_>>(), vec![(&b"y"[..], 6)]);
    assert_eq!((d.len(), d.is_empty(), d.get(b"x")), (1, false, None));
}
