//! Node identity bound to transport credentials ([`Node::bind_link_identity`]): a handshake
//! claiming an id the peer's certificate does not name is refused before anything of the
//! link is acted on, in both directions.

use alloc::{string::ToString, vec, vec::Vec};

use bytes::Bytes;

use super::{
    config, disc,
    frames::{encode_hello, encode_hello_ack, own_hello, own_hello_ack},
    secs, topo, *,
};

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

fn root(id: u64) -> Node {
    Node::new(config(id, 0, 2, false), secs(0)).unwrap()
}

/// Node 0x201 (upstream 0x203, direct routes) that may dial its sibling 0x202.
fn sibling() -> Node {
    let mut node = Node::new(config(0x201, 0x203, 3, true), secs(0)).unwrap();
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x202, 0x203, 1).into()),
    );
    node
}

fn not_certified(link: LinkId, claimed: u64, certified: &[u64], peer: Option<u64>) -> Vec<Output> {
    vec![
        Output::Event(Event::LinkRejected {
            link,
            reason: LinkError::NotCertified {
                claimed: NodeId(claimed),
                certified: certified.iter().copied().map(NodeId).collect(),
            },
        }),
        Output::Close { link },
        Output::Event(Event::LinkClosed {
            link,
            peer: peer.map(NodeId),
        }),
    ]
}

/// `node` dials 0x202: the link id of its `Connect`.
fn dial_0x202(node: &mut Node) -> LinkId {
    node.handle_registry(secs(0), RegistryEvent::DiscoveryPut(disc(0x202, 2).into()));
    drain(node);
    node.send(
        secs(0),
        Select::Node(NodeId(0x202)),
        1,
        Bytes::from_static(b"q"),
    )
    .unwrap();
    drain(node)
        .into_iter()
        .find_map(|o| match o {
            Output::Connect { link, .. } => Some(link),
            _ => None,
        })
        .unwrap()
}

#[test]
fn an_accepted_hello_claiming_an_id_the_certificate_does_not_name_is_refused_unanswered() {
    let mut node = root(0x102);
    let link = node.handle_accepted(secs(0));
    node.bind_link_identity(link, &[NodeId(7)]);
    node.handle_received(secs(0), link, encode_hello(NodeId(8)));
    // No `HelloAck`, no `LinkUp`: the link is rejected before the claim is believed.
    assert_eq!(drain(&mut node), not_certified(link, 8, &[7], None));
    assert_eq!(node.inspect().link_count(), 0);
    assert_eq!(node.inspect().link_peer(link), None);
    let reason = LinkError::NotCertified {
        claimed: NodeId(8),
        certified: vec![NodeId(7), NodeId(0x1f)],
    };
    assert_eq!(
        reason.to_string(),
        "the peer says it is 0x8 but its certificate names [0x7, 0x1f]"
    );
}

#[test]
fn an_accepted_hello_claiming_a_certified_id_links() {
    let mut node = root(0x102);
    let link = node.handle_accepted(secs(0));
    node.bind_link_identity(link, &[NodeId(7), NodeId(0x101)]);
    node.handle_received(secs(0), link, encode_hello(NodeId(0x101)));
    let out = drain(&mut node);
    assert_eq!(
        out[0],
        Output::Transmit {
            link,
            bytes: own_hello_ack(&node, Ok(()))
        }
    );
    assert_eq!(node.inspect().link_peer(link), Some(NodeId(0x101)));
}

#[test]
fn a_dialled_peer_whose_certificate_names_another_id_is_refused() {
    let mut node = sibling();
    let link = dial_0x202(&mut node);
    node.bind_link_identity(link, &[NodeId(0x203)]);
    node.handle_connected(secs(0), link);
    assert_eq!(
        drain(&mut node),
        vec![Output::Transmit {
            link,
            bytes: own_hello(&node)
        }]
    );
    node.handle_received(secs(0), link, encode_hello_ack(NodeId(0x202)));
    assert_eq!(
        drain(&mut node),
        not_certified(link, 0x202, &[0x203], Some(0x202))
    );
    assert_eq!(node.inspect().link_peer(link), None);
    assert_eq!(node.inspect().pending(NodeId(0x202)), 1);
}

#[test]
fn a_dialled_peer_whose_certificate_names_its_id_links() {
    let mut node = sibling();
    let link = dial_0x202(&mut node);
    node.bind_link_identity(link, &[NodeId(0x202)]);
    node.handle_connected(secs(0), link);
    drain(&mut node);
    node.handle_received(secs(0), link, encode_hello_ack(NodeId(0x202)));
    let out = drain(&mut node);
    assert!(
        out.iter().any(|o| matches!(o,
            Output::Event(Event::LinkUp { link: l, peer }) if *l == link && *peer == NodeId(0x202))),
        "{out:?}"
    );
}

#[test]
fn an_empty_binding_refuses_every_id_and_unknown_links_are_ignored() {
    let mut node = root(0x102);
    node.bind_link_identity(LinkId(999), &[NodeId(1)]);
    assert_eq!(drain(&mut node), vec![]);
    let link = node.handle_accepted(secs(0));
    node.bind_link_identity(link, &[]);
    node.handle_received(secs(0), link, encode_hello(NodeId(0x101)));
    assert_eq!(drain(&mut node), not_certified(link, 0x101, &[], None));
}
