//! The registry client wired to its node: the config from the node's records and the split of
//! client outputs between node and driver.

use alloc::string::String;

use super::*;
use crate::{
    discovery::TopologyInfo,
    registry::client::{ClientOutput, RegistryClient},
};

fn leaf() -> Node {
    let mut config = Config::new(NodeId(0x101), "gate-1");
    config.upstream = NodeId(0x102);
    config.hostname = String::from("host-a");
    Node::new(config, Instant::ZERO).expect("a valid config")
}

#[test]
fn the_client_registers_the_nodes_own_records_and_incarnation() {
    let node = leaf();
    let config = node.registry_client_config();
    assert_eq!(config.discovery, node.discovery_info());
    assert_eq!(config.discovery.incarnation, node.incarnation());
    assert_eq!(
        config.topology,
        Some(node.inspect().config().topology_info(NodeId(0x102)))
    );
    assert_eq!(
        (config.incarnation, config.seed),
        (node.incarnation(), node.incarnation())
    );
}

#[test]
fn the_client_publishes_the_identity_hash_and_proves_the_secret_apart() {
    let mut config = Config::new(NodeId(0x101), "gate-1");
    config.identity = String::from("deploy-secret-7");
    let node = Node::new(config, Instant::ZERO).expect("a valid config");
    let client = node.registry_client_config();
    let published = crate::discovery::published_identity("deploy-secret-7");
    assert_eq!(client.discovery.identity, published);
    assert_eq!(client.topology.map(|t| t.identity), Some(published.clone()));
    let proof = client.identity_proof.expect("an identity: a proof");
    assert_eq!(
        Some(proof),
        crate::discovery::IdentityProof::of("deploy-secret-7")
    );
    assert!(proof.proves(&published));
    // No identity: nothing published, nothing to prove.
    let node = leaf();
    let client = node.registry_client_config();
    assert_eq!(
        (client.discovery.identity.as_str(), client.identity_proof),
        ("", None)
    );
}

#[test]
fn registry_changes_go_to_the_node_and_the_rest_to_the_driver() {
    let mut node = leaf();
    let mut client = RegistryClient::new(node.registry_client_config(), Instant::ZERO);
    let first = client.poll_output().expect("the client dials at once");
    assert_eq!(
        node.handle_client_output(Instant::ZERO, first),
        Some(ClientOutput::Connect)
    );
    let put = TopologyInfo {
        id: NodeId(0x103),
        name: String::from("gate-3"),
        upstream_id: NodeId(0x102),
        revision: 5,
        ..TopologyInfo::default()
    };
    let output = ClientOutput::Registry(RegistryEvent::TopologyPut(put.into()));
    assert_eq!(node.handle_client_output(Instant::ZERO, output), None);
    assert_eq!(
        node.inspect().topology().upstream_of(NodeId(0x103)),
        Some(NodeId(0x102))
    );
    let bytes = alloc::vec![1, 2, 3];
    let output = ClientOutput::Transmit {
        bytes: bytes.clone(),
    };
    assert_eq!(
        node.handle_client_output(Instant::ZERO, output),
        Some(ClientOutput::Transmit { bytes })
    );
}
