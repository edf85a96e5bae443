//! `Node::status`: what the snapshot holds, and the JSON field names adapters serve.

use alloc::{borrow::ToOwned, format, string::String, vec, vec::Vec};

use bytes::Bytes;

use super::*;
use crate::time::Duration;

/// A leaf whose upstream is dialled but not connected, with one message queued for it.
fn leaf_waiting_for_its_upstream() -> Node {
    let mut config = Config::new(NodeId(0x101), "gate-1");
    config.upstream = NodeId(0x102);
    config.upstream_address = String::from("tcp://10.0.0.2:21902");
    config.listen = vec![String::from("atcp://10.0.0.1:21901")];
    let mut node = Node::new(config, Instant::ZERO).expect("a valid config");
    while node.poll_output().is_some() {}
    let now = Instant::ZERO + Duration::from_millis(1);
    node.send(
        now,
        Select::Node(NodeId(0x102)),
        1,
        Bytes::from_static(b"hi"),
    )
    .expect("accepted");
    node
}

#[test]
fn status_lists_the_dialled_link_the_route_and_the_queued_message() {
    let node = leaf_waiting_for_its_upstream();
    let status = node.status();
    assert_eq!(
        (status.id, status.name.as_str(), status.upstream),
        (0x101, "gate-1", 0x102)
    );
    assert_eq!(status.incarnation, node.incarnation());
    assert_eq!(status.listen, "atcp://10.0.0.1:21901");
    assert!(
        !status.registered,
        "the node does not know its registry backend"
    );
    assert_eq!(status.known_nodes, 0);
    assert_eq!(
        status
            .endpoints
            .iter()
            .map(|e| (e.id, e.name.clone(), e.pending, e.unacked))
            .collect::<Vec<_>>(),
        [(0x102, None, 1, 0)]
    );
    let route = &status.routes[0];
    assert_eq!(
        (route.target, route.flags.as_slice(), route.proxy),
        (0x102, ["active".to_owned()].as_slice(), None)
    );
    let link = &status.links[0];
    assert_eq!(
        (link.peer, link.state.as_str(), link.outbound),
        (Some(0x102), "connecting", true)
    );
}

/// Changed with bounded state for departed peers (docs/ARCHITECTURE.md §9.4): the status
/// carries `peer_tables`, appended after `perimeter`; every earlier field is unchanged.
#[test]
fn status_serializes_under_the_served_field_names() {
    let node = leaf_waiting_for_its_upstream();
    let json = serde_json::to_string(&node.status()).expect("serializable");
    let expected = format!(
        "{{\"id\":257,\"name\":\"gate-1\",\"incarnation\":\"{}\",\"listen\":\"atcp://10.0.0.1:21901\",\
         \"upstream\":258,\"registered\":false,\"known_nodes\":0,\
         \"endpoints\":[{{\"id\":258,\"name\":null,\"pending\":1,\"unacked\":0}}],\
         \"routes\":[{{\"target\":258,\"flags\":[\"active\"],\"proxy\":null,\"retry_count\":0}}],\
         \"links\":[{{\"link\":{},\"peer\":258,\"state\":\"connecting\",\"outbound\":true}}],\
         \"perimeter\":{{\"acks_off_route\":0,\"notices_off_route\":0,\"forged_sources\":0,\"unproven_refusals\":0}},\
         \"peer_tables\":{{\"links\":1,\"up_peers\":0,\"peer_incarnations\":0,\"recv_streams\":0,\"endpoints\":1,\
         \"known_incarnations\":0,\"routes\":1,\"route_links\":1,\"news_while_dialing\":0,\"suspects\":0,\"dead\":0,\
         \"relayed_targets\":0,\"relayed_sources\":0,\"clients\":0,\"departures\":0,\"discovery\":0,\
         \"discovery_tombstones\":0,\"topology\":2,\"topology_revisions\":0,\"rpc_servers\":0}}}}",
        node.incarnation(),
        node.status().links[0].link,
    );
    assert_eq!(json, expected);
    let parsed: Status = serde_json::from_str(&json).expect("parses back");
    assert_eq!(parsed, node.status());
    // Older output (a number) still parses.
    let as_number = json.replace(
        &format!("\"incarnation\":\"{}\"", node.incarnation()),
        &format!("\"incarnation\":{}", node.incarnation()),
    );
    let parsed: Status = serde_json::from_str(&as_number).expect("a number parses too");
    assert_eq!(parsed.incarnation, node.incarnation());
    // Older output (no perimeter counts) still parses, with zeros.
    let without = json.replace(
        ",\"perimeter\":{\"acks_off_route\":0,\"notices_off_route\":0,\"forged_sources\":0,\"unproven_refusals\":0}",
        "",
    );
    assert_ne!(without, json);
    let parsed: Status = serde_json::from_str(&without).expect("parses without the counts");
    assert_eq!(parsed, node.status());
}
