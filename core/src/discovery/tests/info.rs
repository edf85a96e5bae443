//! Decoding and encoding of discovery and topology records in libatapp's JSON form.

use alloc::{
    format,
    string::{String, ToString},
    vec,
    vec::Vec,
};

use super::*;
use crate::ids::NodeId;

/// A record as libatapp writes it: compact, original field names, 64-bit integers unquoted.
const ECHO_SVR_UNQUOTED: &str = concat!(
    r#"{"id":4353,"name":"echo-svr-1","hostname":"game-host-07","pid":31337,"#,
    r#""listen":["atcp://127.0.0.1:21437","unix:///run/atapp/echo-svr-1.sock"],"#,
    r#""hash_code":"9F1C3A2B7D4E5F60A1B2C3D4E5F60718","type_id":17,"type_name":"echosvr","#,
    r#""area":{"region":"cn-south","district":"sz-1","zone_id":518000},"#,
    r#""version":"1.4.2.7788","custom_data":"{\"weight\":3}","#,
    r#""identity":"c0ffee00-0000-4000-8000-000000004353","#,
    r#""gateways":[{"address":"atcp://10.0.3.7:21437","match_hosts":["game-host-07","game-host-08"],"#,
    r#""match_namespaces":["prod"],"match_labels":{"rack":"r12"}},"#,
    r#"{"address":"atcp://203.0.113.9:31437"}],"#,
    r#""runtime":{"stateful_pod_index":3},"#,
    r#""atbus_protocol_version":3,"atbus_protocol_min_version":3,"#,
    r#""metadata":{"api_version":"v1","kind":"echo","group":"demo","name":"echo-svr","#,
    r#""namespace_name":"prod","uid":"b9e1f0c2","service_subset":"canary","#,
    r#""labels":{"tier":"backend","zone":"1"}}}"#
);

/// The same record as a proto3 JSON writer may produce it: 64-bit integers quoted.
const ECHO_SVR_QUOTED: &str = concat!(
    r#"{"id":"4353","name":"echo-svr-1","hostname":"game-host-07","pid":31337,"#,
    r#""listen":["atcp://127.0.0.1:21437","unix:///run/atapp/echo-svr-1.sock"],"#,
    r#""hash_code":"9F1C3A2B7D4E5F60A1B2C3D4E5F60718","type_id":"17","type_name":"echosvr","#,
    r#""area":{"region":"cn-south","district":"sz-1","zone_id":"518000"},"#,
    r#""version":"1.4.2.7788","custom_data":"{\"weight\":3}","#,
    r#""identity":"c0ffee00-0000-4000-8000-000000004353","#,
    r#""gateways":[{"address":"atcp://10.0.3.7:21437","match_hosts":["game-host-07","game-host-08"],"#,
    r#""match_namespaces":["prod"],"match_labels":{"rack":"r12"}},"#,
    r#"{"address":"atcp://203.0.113.9:31437"}],"#,
    r#""runtime":{"stateful_pod_index":3},"#,
    r#""atbus_protocol_version":"3","atbus_protocol_min_version":"3","#,
    r#""metadata":{"api_version":"v1","kind":"echo","group":"demo","name":"echo-svr","#,
    r#""namespace_name":"prod","uid":"b9e1f0c2","service_subset":"canary","#,
    r#""labels":{"tier":"backend","zone":"1"}}}"#
);

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn labels(items: &[(&str, &str)]) -> crate::discovery::Labels {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn echo_svr_expected() -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(4353),
        name: "echo-svr-1".to_string(),
        hostname: "game-host-07".to_string(),
        pid: 31337,
        listen: strings(&[
            "atcp://127.0.0.1:21437",
            "unix:///run/atapp/echo-svr-1.sock",
        ]),
        hash_code: "9F1C3A2B7D4E5F60A1B2C3D4E5F60718".to_string().into(),
        type_id: 17,
        type_name: "echosvr".to_string(),
        area: Area {
            region: "cn-south".to_string(),
            district: "sz-1".to_string(),
            zone_id: 518_000,
        }
        .into(),
        version: "1.4.2.7788".to_string(),
        custom_data: r#"{"weight":3}"#.to_string().into(),
        identity: "c0ffee00-0000-4000-8000-000000004353".to_string(),
        gateways: vec![
            Gateway {
                address: "atcp://10.0.3.7:21437".to_string(),
                match_hosts: strings(&["game-host-07", "game-host-08"]),
                match_namespaces: strings(&["prod"]),
                match_labels: labels(&[("rack", "r12")]),
            },
            Gateway {
                address: "atcp://203.0.113.9:31437".to_string(),
                ..Gateway::default()
            },
        ]
        .into(),
        runtime: Runtime {
            stateful_pod_index: 3,
        },
        atbus_protocol_version: 3,
        atbus_protocol_min_version: 3,
        incarnation: 0,
        metadata: Metadata {
            api_version: "v1".to_string(),
            kind: "echo".to_string(),
            group: "demo".to_string(),
            name: "echo-svr".to_string(),
            namespace_name: "prod".to_string(),
            uid: "b9e1f0c2".to_string(),
            service_subset: "canary".to_string(),
            labels: labels(&[("zone", "1"), ("tier", "backend")]),
        }
        .into(),
        revision: 0,
    }
}

#[test]
fn libatapp_record_with_unquoted_integers_decodes_every_field() {
    let info = DiscoveryInfo::from_json(ECHO_SVR_UNQUOTED.as_bytes()).expect("valid record");
    assert_eq!(info, echo_svr_expected());
}

#[test]
fn a_decoded_record_keeps_no_spare_list_capacity() {
    let info = DiscoveryInfo::from_json(ECHO_SVR_UNQUOTED.as_bytes()).expect("valid record");
    assert_eq!(info.listen.len(), 2);
    assert_eq!(info.listen.capacity(), 2);
    assert_eq!(info.gateways.len(), 2);
    assert_eq!(info.gateways.capacity(), 2);
    let gateway = &info.gateways[0];
    assert_eq!(gateway.match_hosts.len(), 2);
    assert_eq!(gateway.match_hosts.capacity(), 2);
    assert_eq!(gateway.match_namespaces.len(), 1);
    assert_eq!(gateway.match_namespaces.capacity(), 1);
}

#[test]
fn proto3_record_with_quoted_integers_decodes_the_same() {
    let info = DiscoveryInfo::from_json(ECHO_SVR_QUOTED.as_bytes()).expect("valid record");
    assert_eq!(info, echo_svr_expected());
}

#[test]
fn to_json_writes_libatapp_field_names_in_proto_order() {
    // Our encoding of the full record is exactly libatapp's unquoted document.
    let bytes = echo_svr_expected().to_json();
    assert_eq!(String::from_utf8(bytes).expect("utf-8"), ECHO_SVR_UNQUOTED);
}

#[test]
fn round_trip_is_identity_and_revision_is_not_encoded() {
    let mut info = echo_svr_expected();
    info.revision = 77;
    let bytes = info.to_json();
    assert!(
        !String::from_utf8(bytes.clone())
            .expect("utf-8")
            .contains("revision")
    );
    assert_eq!(DiscoveryInfo::from_json_at(&bytes, 77), Ok(info.clone()));
    let back = DiscoveryInfo::from_json(&bytes).expect("round trip");
    assert_eq!(back.revision, 0);
    assert!(back.same_content(&info));
}

#[test]
fn minimal_record_omits_defaults_and_round_trips() {
    let info = DiscoveryInfo {
        id: NodeId(0x0102_0304),
        runtime: Runtime {
            stateful_pod_index: -1,
        },
        ..DiscoveryInfo::default()
    };
    let bytes = info.to_json();
    assert_eq!(
        bytes,
        br#"{"id":16909060,"name":"","runtime":{"stateful_pod_index":-1}}"#
    );
    assert_eq!(DiscoveryInfo::from_json(&bytes), Ok(info));
}

#[test]
fn the_incarnation_is_written_as_a_decimal_string_last_and_read_in_either_form() {
    let info = DiscoveryInfo {
        id: NodeId(7),
        name: "leaf".to_string(),
        incarnation: 0xfedc_ba98_7654_3210,
        ..DiscoveryInfo::default()
    };
    let bytes = info.to_json();
    assert_eq!(
        bytes,
        br#"{"id":7,"name":"leaf","incarnation":"18364758544493064720"}"#
    );
    assert_eq!(DiscoveryInfo::from_json(&bytes), Ok(info.clone()));
    let unquoted = br#"{"id":7,"name":"leaf","incarnation":18364758544493064720}"#;
    assert_eq!(DiscoveryInfo::from_json(unquoted), Ok(info.clone()));
    // Another incarnation is another record's content: the registry reports it as news.
    let restarted = DiscoveryInfo {
        incarnation: 1,
        ..info.clone()
    };
    assert!(!restarted.same_content(&info));
}

#[test]
fn missing_null_and_unknown_fields_mean_defaults() {
    let doc = concat!(
        r#"{"id":9,"name":null,"hostname":null,"pid":null,"listen":null,"area":null,"#,
        r#""gateways":null,"runtime":{"stateful_pod_index":null},"metadata":{"labels":null,"kind":null},"#,
        r#""gateway":["deprecated"],"future_field":{"nested":[1,2,{"x":null}]},"type_id":null}"#
    );
    let info = DiscoveryInfo::from_json(doc.as_bytes()).expect("valid record");
    assert_eq!(
        info,
        DiscoveryInfo {
            id: NodeId(9),
            ..DiscoveryInfo::default()
        }
    );
}

#[test]
fn camel_case_aliases_of_proto3_json_are_accepted() {
    let doc = concat!(
        r#"{"id":5,"name":"n","hashCode":"AB","typeId":"2","typeName":"t","customData":"c","#,
        r#""area":{"zoneId":7},"runtime":{"statefulPodIndex":"4"},"atbusProtocolVersion":3,"#,
        r#""atbusProtocolMinVersion":2,"gateways":[{"matchHosts":["h"],"matchNamespaces":["ns"],"#,
        r#""matchLabels":{"a":"b"}}],"metadata":{"apiVersion":"v2","namespaceName":"ns","#,
        r#""serviceSubset":"blue"}}"#
    );
    let info = DiscoveryInfo::from_json(doc.as_bytes()).expect("valid record");
    assert_eq!(
        info,
        DiscoveryInfo {
            id: NodeId(5),
            name: "n".to_string(),
            hash_code: "AB".to_string().into(),
            type_id: 2,
            type_name: "t".to_string(),
            custom_data: "c".to_string().into(),
            area: Area {
                zone_id: 7,
                ..Area::default()
            }
            .into(),
            runtime: Runtime {
                stateful_pod_index: 4
            },
            atbus_protocol_version: 3,
            atbus_protocol_min_version: 2,
            gateways: vec![Gateway {
                address: String::new(),
                match_hosts: strings(&["h"]),
                match_namespaces: strings(&["ns"]),
                match_labels: labels(&[("a", "b")]),
            }]
            .into(),
            metadata: Metadata {
                api_version: "v2".to_string(),
                namespace_name: "ns".to_string(),
                service_subset: "blue".to_string(),
                ..Metadata::default()
            }
            .into(),
            ..DiscoveryInfo::default()
        }
    );
}

#[test]
fn record_without_id_or_name_has_no_identity() {
    assert_eq!(
        DiscoveryInfo::from_json(b"{}"),
        Err(DecodeError::NoIdentity)
    );
    assert_eq!(
        DiscoveryInfo::from_json(br#"{"id":0,"name":"","hostname":"h"}"#),
        Err(DecodeError::NoIdentity)
    );
    // Either part alone is enough.
    assert_eq!(
        DiscoveryInfo::from_json(br#"{"id":"0","name":"by-name"}"#).map(|i| i.id),
        Ok(NodeId(0))
    );
    assert_eq!(
        DiscoveryInfo::from_json(br#"{"id":12}"#).map(|i| i.name),
        Ok(String::new())
    );
}

#[test]
fn every_truncation_of_a_valid_record_is_truncated_never_a_panic() {
    for doc in [ECHO_SVR_UNQUOTED, ECHO_SVR_QUOTED] {
        let bytes = doc.as_bytes();
        for cut in 0..bytes.len() {
            match DiscoveryInfo::from_json(&bytes[..cut]) {
                Err(DecodeError::Truncated { line: 1, column }) => assert_eq!(column, cut),
                other => panic!("prefix of {cut} bytes gave {other:?}"),
            }
        }
        assert_eq!(
            DiscoveryInfo::from_json(bytes).map(|i| i.id),
            Ok(NodeId(4353))
        );
    }
}

#[test]
fn every_truncation_of_a_topology_record_is_truncated() {
    let doc =
        br#"{"id":4353,"name":"echo-svr-1","upstream_id":"4097","data":{"label":{"rack":"r12"}}}"#;
    for cut in 0..doc.len() {
        assert!(
            matches!(
                TopologyInfo::from_json(&doc[..cut]),
                Err(DecodeError::Truncated { .. })
            ),
            "prefix of {cut} bytes"
        );
    }
}

#[test]
fn garbage_is_a_syntax_error() {
    for garbage in [
        &b"\xff\xfe\x00garbage"[..],
        b"not json",
        b"{\"id\":12,}",
        b"{\"id\":12}}",
        b"{\"name\":\"\\uZZZZ\"}",
        b"{'id':1}",
        b"{\"name\":\"tab\there\"}",
    ] {
        assert!(
            matches!(
                DiscoveryInfo::from_json(garbage),
                Err(DecodeError::Syntax { .. })
            ),
            "{:?} gave {:?}",
            String::from_utf8_lossy(garbage),
            DiscoveryInfo::from_json(garbage)
        );
    }
}

#[test]
fn wrong_types_are_typed_errors() {
    for doc in [
        r#"{"id":{"value":1}}"#,
        r#"{"id":[1]}"#,
        r#"{"id":true}"#,
        r#"{"id":1,"listen":"atcp://127.0.0.1:21437"}"#,
        r#"{"id":1,"listen":[7]}"#,
        r#"{"id":1,"name":42}"#,
        r#"{"id":1,"area":"cn"}"#,
        r#"{"id":1,"metadata":{"labels":["a"]}}"#,
        r#"{"id":1,"gateways":{"address":"x"}}"#,
        r#"{"id":1,"runtime":{"stateful_pod_index":[]}}"#,
        r#"{"id":1,"area":["cn","sz",1]}"#,
        r#"{"id":1,"gateways":[["atcp://10.0.0.1:1"]]}"#,
        r#"{"id":1,"metadata":["v1"]}"#,
        "[4353]",
        "[]",
        "null",
        "42",
    ] {
        assert!(
            matches!(
                DiscoveryInfo::from_json(doc.as_bytes()),
                Err(DecodeError::WrongType { .. })
            ),
            "{doc} gave {:?}",
            DiscoveryInfo::from_json(doc.as_bytes())
        );
    }
}

#[test]
fn out_of_range_numbers_are_invalid_values() {
    for doc in [
        r#"{"id":18446744073709551616}"#,
        r#"{"id":"18446744073709551616"}"#,
        r#"{"id":99999999999999999999999999999}"#,
        r#"{"id":-4353}"#,
        r#"{"id":1,"pid":2147483648}"#,
        r#"{"id":1,"type_id":1.5}"#,
        r#"{"id":1,"area":{"zone_id":"12ab"}}"#,
        r#"{"id":1,"id":2}"#,
        r#"{"id":1,"hash_code":"A","hashCode":"B"}"#,
    ] {
        assert!(
            matches!(
                DiscoveryInfo::from_json(doc.as_bytes()),
                Err(DecodeError::InvalidValue { .. })
            ),
            "{doc} gave {:?}",
            DiscoveryInfo::from_json(doc.as_bytes())
        );
    }
    assert_eq!(
        DiscoveryInfo::from_json(br#"{"id":18446744073709551615}"#).map(|i| i.id),
        Ok(NodeId(u64::MAX))
    );
}

#[test]
fn deep_nesting_never_overflows_the_stack() {
    let depth = 100_000;
    let nested = |prefix: &str| {
        let mut doc = String::from(prefix);
        doc.extend(core::iter::repeat_n('[', depth));
        doc.extend(core::iter::repeat_n(']', depth));
        doc.push('}');
        doc
    };
    // serde_json skips an unknown value iteratively, so the record is fine.
    let unknown = nested(r#"{"id":1,"x":"#);
    assert_eq!(
        DiscoveryInfo::from_json(unknown.as_bytes()).map(|i| i.id),
        Ok(NodeId(1))
    );
    // In a known field the second bracket is already the wrong type.
    let known = nested(r#"{"id":1,"listen":"#);
    assert_eq!(
        DiscoveryInfo::from_json(known.as_bytes()),
        Err(DecodeError::WrongType {
            line: 1,
            column: 18,
            message: "invalid type: sequence, expected a string".to_string()
        })
    );
}

#[test]
fn single_byte_corruptions_never_panic() {
    let bytes = ECHO_SVR_UNQUOTED.as_bytes();
    for at in 0..bytes.len() {
        for replacement in [b'"', b'{', b'}', b',', b'9', 0xff] {
            let mut doc = bytes.to_vec();
            doc[at] = replacement;
            // Any outcome but a panic is acceptable; a success must still have an identity.
            if let Ok(info) = DiscoveryInfo::from_json(&doc) {
                assert!(info.has_identity());
            }
        }
    }
}

#[test]
fn decode_error_messages_name_the_problem() {
    let err = DiscoveryInfo::from_json(br#"{"id":1,"listen":"x"}"#).expect_err("wrong type");
    assert_eq!(
        format!("{err}"),
        "wrong JSON type at line 1 column 20: invalid type: string \"x\", expected a sequence"
    );
    assert_eq!(
        format!("{}", DecodeError::NoIdentity),
        "record has no identity (id 0 and no usable name)"
    );
}

#[test]
fn topology_record_decodes_both_integer_forms_and_round_trips() {
    let unquoted = concat!(
        r#"{"id":4353,"name":"echo-svr-1","hostname":"game-host-07","pid":31337,"#,
        r#""identity":"c0ffee00","version":"1.4.2","upstream_id":4097,"#,
        r#""data":{"label":{"rack":"r12","zone":"1"}}}"#
    );
    let quoted = unquoted
        .replace(":4353", ":\"4353\"")
        .replace(":4097", ":\"4097\"");
    let expected = TopologyInfo {
        id: NodeId(4353),
        name: "echo-svr-1".to_string(),
        hostname: "game-host-07".to_string(),
        pid: 31337,
        identity: "c0ffee00".to_string(),
        version: "1.4.2".into(),
        upstream_id: NodeId(4097),
        data: TopologyData {
            label: labels(&[("rack", "r12"), ("zone", "1")]),
        }
        .into(),
        revision: 0,
    };
    assert_eq!(
        TopologyInfo::from_json(unquoted.as_bytes()),
        Ok(expected.clone())
    );
    assert_eq!(
        TopologyInfo::from_json(quoted.as_bytes()),
        Ok(expected.clone())
    );
    assert_eq!(
        String::from_utf8(expected.to_json()).expect("utf-8"),
        unquoted
    );
    let mut at = expected.clone();
    at.revision = 12;
    assert_eq!(TopologyInfo::from_json_at(&expected.to_json(), 12), Ok(at));
}

#[test]
fn topology_root_omits_upstream_and_requires_an_id() {
    let root = TopologyInfo {
        id: NodeId(1),
        name: "root".to_string(),
        ..TopologyInfo::default()
    };
    assert_eq!(root.to_json(), br#"{"id":1,"name":"root"}"#);
    assert_eq!(
        TopologyInfo::from_json(br#"{"id":1,"name":"root","upstream_id":null}"#),
        Ok(root)
    );
    assert_eq!(
        TopologyInfo::from_json(br#"{"name":"no-id"}"#),
        Err(DecodeError::NoIdentity)
    );
    assert!(matches!(
        TopologyInfo::from_json(br#"{"id":1,"upstream_id":-1}"#),
        Err(DecodeError::InvalidValue { .. })
    ));
    assert!(matches!(
        TopologyInfo::from_json(br#"{"id":1,"data":{"label":"x"}}"#),
        Err(DecodeError::WrongType { .. })
    ));
}

#[test]
fn round_robin_key_orders_by_pod_index_then_id_then_name() {
    let node = |pod: i32, id: u64, name: &str| DiscoveryInfo {
        id: NodeId(id),
        name: name.to_string(),
        runtime: Runtime {
            stateful_pod_index: pod,
        },
        ..DiscoveryInfo::default()
    };
    let mut nodes = [
        node(2, 1, "a"),
        node(1, 9, "b"),
        node(1, 3, "z"),
        node(1, 3, "c"),
    ];
    nodes.sort_by(|a, b| a.round_robin_key().cmp(&b.round_robin_key()));
    let order: Vec<(i32, u64, &str)> = nodes
        .iter()
        .map(|n| (n.stateful_pod_index(), n.id.0, n.name.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![(1, 3, "c"), (1, 3, "z"), (1, 9, "b"), (2, 1, "a")]
    );
}

/// A known node's records are kept once per known node: its inline size is pinned, so growing
/// it is a visible decision (the rare parts are [`Sparse`], one pointer each while empty).
#[test]
#[cfg(target_pointer_width = "64")]
fn a_record_is_compact() {
    use core::mem::size_of;
    assert_eq!(size_of::<DiscoveryInfo>(), 240);
    assert_eq!(size_of::<TopologyInfo>(), 120);
    assert_eq!(size_of::<Sparse<Metadata>>(), 8);
}

#[test]
fn a_decoded_record_boxes_only_the_rare_parts_it_carries() {
    let minimal = DiscoveryInfo::from_json(
        br#"{"id":5,"name":"n","metadata":{},"area":null,"gateways":[],"hash_code":""}"#,
    )
    .expect("valid record");
    assert!(!Sparse::is_allocated(&minimal.metadata));
    assert!(!Sparse::is_allocated(&minimal.area));
    assert!(!Sparse::is_allocated(&minimal.gateways));
    assert!(!Sparse::is_allocated(&minimal.hash_code));
    assert!(!Sparse::is_allocated(&minimal.custom_data));
    let full = DiscoveryInfo::from_json(ECHO_SVR_UNQUOTED.as_bytes()).expect("valid record");
    assert!(Sparse::is_allocated(&full.metadata));
    assert!(Sparse::is_allocated(&full.area));
    assert!(Sparse::is_allocated(&full.gateways));
    assert!(Sparse::is_allocated(&full.hash_code));
    assert!(Sparse::is_allocated(&full.custom_data));
    // A boxed default part is the same record and writes the same JSON.
    let mut boxed = minimal.clone();
    boxed.metadata.kind.clear();
    boxed.area.zone_id = 0;
    assert!(Sparse::is_allocated(&boxed.metadata) && Sparse::is_allocated(&boxed.area));
    assert_eq!(boxed, minimal);
    assert!(boxed.same_content(&minimal));
    assert_eq!(boxed.to_json(), minimal.to_json());
    assert_eq!(minimal.to_json(), br#"{"id":5,"name":"n"}"#);
}
