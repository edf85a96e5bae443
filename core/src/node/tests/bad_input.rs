//! Bad input: malformed or lying peers, unknown or duplicate events, invalid sends and
//! registry records — typed errors, outcomes or events; never a panic, never a silent drop.

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{
    config, disc,
    frames::{encode_ack, encode_data, encode_hello, encode_hello_ack, own_hello, own_hello_ack},
    secs, topo, *,
};
use crate::{
    bus::stream::make_seq, connector::RouteFlags, outcome::FailReason, time::Duration,
    topology::TopologyError, wire::DecodeError,
};

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

fn root(id: u64) -> Node {
    Node::new(config(id, 0, 2, false), secs(0)).unwrap()
}

/// An accepted link on `node` whose peer said `Hello{peer}`; outputs drained.
fn accepted_up(node: &mut Node, peer: u64) -> LinkId {
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(peer))),
    );
    drain(node);
    link
}

fn rejected(link: LinkId, reason: LinkError, peer: Option<u64>) -> Vec<Output> {
    vec![
        Output::Event(Event::LinkRejected { link, reason }),
        Output::Close { link },
        Output::Event(Event::LinkClosed {
            link,
            peer: peer.map(NodeId),
        }),
    ]
}

#[test]
fn acceptor_replies_hello_and_learns_the_peer() {
    let mut node = root(0x102);
    let link = node.handle_accepted(secs(0));
    assert_eq!(node.inspect().link_peer(link), None);
    let hello = encode_hello(NodeId(0x101));
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&hello[..5]));
    assert_eq!(drain(&mut node), vec![]);
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&hello[5..]));
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Transmit {
                link,
                bytes: own_hello_ack(&node, Ok(()))
            },
            Output::Event(Event::LinkUp {
                link,
                peer: NodeId(0x101)
            }),
        ]
    );
    assert_eq!(node.inspect().link_peer(link), Some(NodeId(0x101)));
    assert_eq!(node.inspect().link_to(NodeId(0x101)), Some(link));
}

#[test]
fn data_for_this_node_is_delivered_byte_for_byte_from_any_split() {
    let mut node = root(0x102);
    // 0x101 is 0x105's upstream: it may relay 0x105's messages.
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x101, 0, 1).into()),
    );
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x105, 0x101, 1).into()),
    );
    drain(&mut node);
    let link = accepted_up(&mut node, 0x101);
    let mut stream = Vec::new();
    stream.extend_from_slice(&encode_data(NodeId(0x101), NodeId(0x102), 9, 0, b"abc"));
    stream.extend_from_slice(&encode_data(NodeId(0x105), NodeId(0x102), 10, 1, b""));
    for chunk in stream.chunks(3) {
        node.handle_received(secs(0), link, Bytes::copy_from_slice(chunk));
    }
    let incarnation = node.incarnation();
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Received {
                from: NodeId(0x101),
                via: NodeId(0x101),
                msg_type: 9,
                payload: Bytes::from_static(b"abc"),
            },
            Output::Transmit {
                link,
                bytes: encode_ack(NodeId(0x101), NodeId(0x102), make_seq(1, 1), incarnation),
            },
            Output::Received {
                from: NodeId(0x105),
                via: NodeId(0x101),
                msg_type: 10,
                payload: Bytes::new(),
            },
            Output::Transmit {
                link,
                bytes: encode_ack(NodeId(0x105), NodeId(0x102), make_seq(1, 1), incarnation),
            },
        ]
    );
}

#[test]
fn malformed_oversized_and_out_of_order_frames_close_the_link() {
    let mut node = root(0x102);
    let max = crate::wire::DEFAULT_MAX_FRAME;
    let too_long = u32::try_from(max + 1).unwrap().to_le_bytes().to_vec();
    let cases: Vec<(Vec<u8>, LinkError, bool, bool)> = vec![
        (
            vec![8, 0, 0, 0, 1, 0x7f, 0, 0],
            LinkError::Frame(DecodeError::UnknownKind { kind: 0x7f }),
            false,
            false,
        ),
        (
            vec![0, 0, 0, 0],
            LinkError::Frame(DecodeError::BadLength { len: 0 }),
            false,
            false,
        ),
        // Before the handshake the limit is the largest handshake frame (a `HelloAck`);
        // once up, `max_frame`.
        (
            too_long.clone(),
            LinkError::Frame(DecodeError::FrameTooLarge {
                len: max + 1,
                max: crate::wire::MAX_HELLO_ACK_LEN,
            }),
            false,
            false,
        ),
        (
            too_long,
            LinkError::Frame(DecodeError::FrameTooLarge { len: max + 1, max }),
            true,
            false,
        ),
        (
            encode_data(NodeId(1), NodeId(0x102), 1, 0, b"x").to_vec(),
            LinkError::DataBeforeHello,
            false,
            false,
        ),
        (
            encode_hello(NodeId(0)).to_vec(),
            LinkError::InvalidPeerId(NodeId(0)),
            false,
            true,
        ),
        (
            encode_hello(NodeId(0x102)).to_vec(),
            LinkError::InvalidPeerId(NodeId(0x102)),
            false,
            true,
        ),
        (
            encode_hello(NodeId(0x103)).to_vec(),
            LinkError::UnexpectedHello,
            true,
            false,
        ),
        (
            encode_hello_ack(NodeId(0x103)).to_vec(),
            LinkError::UnexpectedFrame(crate::wire::FrameKind::HelloAck),
            false,
            false,
        ),
    ];
    for (bytes, reason, after_hello, refused) in cases {
        let link = if after_hello {
            accepted_up(&mut node, 0x101)
        } else {
            node.handle_accepted(secs(0))
        };
        node.handle_received(secs(0), link, Bytes::copy_from_slice(&bytes));
        let peer = after_hello.then_some(0x101);
        let mut expected = rejected(link, reason.clone(), peer);
        if refused {
            let refusal = own_hello_ack(&node, Err(crate::wire::RefuseReason::InvalidHello));
            expected.insert(
                0,
                Output::Transmit {
                    link,
                    bytes: refusal,
                },
            );
        }
        assert_eq!(drain(&mut node), expected, "{reason:?}");
        assert_eq!(node.inspect().link_peer(link), None);
        // The link is forgotten: more bytes are ignored.
        node.handle_received(secs(0), link, Bytes::copy_from_slice(&bytes));
        assert_eq!(drain(&mut node), vec![]);
    }
    assert_eq!(node.inspect().link_count(), 0);
}

#[test]
fn a_dialled_peer_lying_about_its_id_is_closed_and_counts_as_a_failed_dial() {
    let mut node = Node::new(config(0x201, 0x203, 3, true), secs(0)).unwrap();
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x202, 0x203, 1).into()),
    );
    node.handle_registry(secs(0), RegistryEvent::DiscoveryPut(disc(0x202, 2).into()));
    drain(&mut node);
    node.send(
        secs(0),
        Select::Node(NodeId(0x202)),
        1,
        Bytes::from_static(b"q"),
    )
    .unwrap();
    let link = drain(&mut node)
        .into_iter()
        .find_map(|o| match o {
            Output::Connect { link, .. } => Some(link),
            _ => None,
        })
        .unwrap();
    node.handle_connected(secs(0), link);
    assert_eq!(
        drain(&mut node),
        vec![Output::Transmit {
            link,
            bytes: own_hello(&node)
        }]
    );
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello_ack(NodeId(0x2ff))),
    );
    assert_eq!(
        drain(&mut node),
        rejected(
            link,
            LinkError::PeerIdMismatch {
                expected: NodeId(0x202),
                claimed: NodeId(0x2ff)
            },
            Some(0x202)
        )
    );
    let v = node.inspect().route(NodeId(0x202)).unwrap();
    assert_eq!(
        (v.flags, v.retry_count, v.timer),
        (RouteFlags::ACTIVE, 1, Some(secs(2)))
    );
    assert_eq!(node.inspect().pending(NodeId(0x202)), 1);
}

#[test]
fn events_for_unknown_links_and_duplicate_reports_change_nothing() {
    let mut node = root(0x102);
    let ghost = LinkId(999);
    node.handle_connected(secs(1), ghost);
    node.handle_connect_failed(secs(1), ghost);
    node.handle_closed(secs(1), ghost);
    node.handle_received(secs(1), ghost, Bytes::from_static(b"\x00\x00\x00\x01\x01"));
    node.handle_timeout(secs(1));
    assert_eq!(drain(&mut node), vec![]);
    assert_eq!(node.inspect().link_count(), 0);

    let link = accepted_up(&mut node, 0x101);
    // An accepted link reported "connected" is not a dial: no hello is sent.
    node.handle_connected(secs(1), link);
    assert_eq!(drain(&mut node), vec![]);
    node.handle_closed(secs(1), link);
    assert_eq!(
        drain(&mut node),
        vec![Output::Event(Event::LinkClosed {
            link,
            peer: Some(NodeId(0x101))
        })]
    );
    node.handle_closed(secs(1), link);
    assert_eq!(drain(&mut node), vec![]);
}

#[test]
fn bytes_on_a_dial_not_yet_connected_close_it() {
    let mut node = Node::new(config(0x101, 0x102, 2, false), secs(0)).unwrap();
    node.handle_registry(secs(0), RegistryEvent::DiscoveryPut(disc(0x102, 1).into()));
    let link = drain(&mut node)
        .into_iter()
        .find_map(|o| match o {
            Output::Connect { link, .. } => Some(link),
            _ => None,
        })
        .unwrap();
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(0x102))),
    );
    assert_eq!(
        drain(&mut node),
        rejected(link, LinkError::NotConnected, Some(0x102))
    );
    // The upstream keeper schedules its redial.
    assert_eq!(node.poll_timeout(), Some(secs(2)));
}

#[test]
fn invalid_sends_are_typed_errors_and_accept_nothing() {
    let mut node = root(0x101);
    assert_eq!(
        node.send(secs(0), Select::Node(NodeId(0)), 1, Bytes::new()),
        Err(SendError::InvalidTarget)
    );
    // A root with no direct links has no route to a node in another tree.
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x103, 0x102, 1).into()),
    );
    assert_eq!(
        node.send(secs(0), Select::Node(NodeId(0x103)), 1, Bytes::new()),
        Err(SendError::NoRoute)
    );
    assert_eq!(node.inspect().endpoints().len(), 0);
    assert!(node.inspect().route(NodeId(0x103)).is_none());
    let big = Bytes::from(vec![0u8; crate::output::MAX_PAYLOAD_LEN + 1]);
    assert_eq!(
        node.send(secs(0), Select::Node(NodeId(0x101)), 1, big),
        Err(SendError::PayloadTooLarge {
            len: crate::output::MAX_PAYLOAD_LEN + 1,
            max: crate::output::MAX_PAYLOAD_LEN
        })
    );
    assert_eq!(drain(&mut node), vec![]);
}

#[test]
fn a_target_no_registry_knows_waits_instead_of_being_refused_or_relayed_blindly() {
    let mut node = Node::new(config(0x101, 0x102, 2, false), secs(0)).unwrap();
    let msg = node
        .send(
            secs(0),
            Select::Node(NodeId(0x1ff)),
            1,
            Bytes::from_static(b"?"),
        )
        .unwrap();
    let v = node.inspect().route(NodeId(0x1ff)).unwrap();
    assert_eq!(v.flags, RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY);
    assert_eq!((v.proxy, v.timer), (None, Some(secs(2))));
    drain(&mut node);
    // A.3's fake target: nothing ever arrives; the record is given up at its second try,
    // failing the message before its 8 s deadline.
    node.handle_timeout(secs(2));
    assert_eq!(drain(&mut node).len(), 1, "attempt 2 scheduled");
    node.handle_timeout(secs(6));
    let outcomes: Vec<Output> = drain(&mut node)
        .into_iter()
        .filter(|o| matches!(o, Output::Outcome { .. }))
        .collect();
    assert_eq!(
        outcomes,
        vec![Output::Outcome {
            msg,
            outcome: Outcome::Failed(FailReason::NoRoute)
        }]
    );
}

#[test]
fn a_target_known_only_by_id_waits_for_discovery_when_direct_links_are_allowed() {
    let mut node = Node::new(config(0x201, 0, 3, true), secs(0)).unwrap();
    let msg = node
        .send(
            secs(0),
            Select::Node(NodeId(0x2aa)),
            1,
            Bytes::from_static(b"w"),
        )
        .unwrap();
    let v = node.inspect().route(NodeId(0x2aa)).unwrap();
    assert_eq!(v.flags, RouteFlags::ACTIVE | RouteFlags::WAIT_DISCOVERY);
    assert_eq!(node.inspect().pending(NodeId(0x2aa)), 1);
    // Discovery never comes: the message times out at 8 s, the record at its third try.
    node.handle_timeout(secs(8));
    let outs = drain(&mut node);
    assert!(outs.contains(&Output::Outcome {
        msg,
        outcome: Outcome::Failed(FailReason::Timeout)
    }));
}

#[test]
fn over_the_limit_messages_fail_with_queue_full_and_the_queue_is_kept() {
    let mut c = config(0x101, 0x102, 2, false);
    c.send_buffer_number = 2;
    let mut node = Node::new(c, secs(0)).unwrap();
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x103, 0x102, 1).into()),
    );
    let ids: Vec<MsgId> = (0..3)
        .map(|i| {
            node.send(
                secs(0),
                Select::Node(NodeId(0x103)),
                i,
                Bytes::from_static(b"p"),
            )
            .unwrap()
        })
        .collect();
    assert_eq!(
        drain(&mut node),
        vec![Output::Outcome {
            msg: ids[2],
            outcome: Outcome::Failed(FailReason::QueueFull)
        }]
    );
    assert_eq!(node.inspect().pending(NodeId(0x103)), 2);
}

#[test]
fn invalid_and_stale_registry_events_are_reported_and_change_nothing() {
    let mut node = root(0x101);
    let ignored = |r| Output::Event(Event::RegistryIgnored(r));
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x102, 0x103, 5).into()),
    );
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x103, 0x102, 6).into()),
    );
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x102, 0x101, 4).into()),
    );
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyDelete {
            id: NodeId(0x1ff),
            revision: 7,
        },
    );
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyDelete {
            id: NodeId(0x101),
            revision: 8,
        },
    );
    node.handle_registry(secs(0), RegistryEvent::DiscoveryPut(disc(0x102, 9).into()));
    node.handle_registry(secs(0), RegistryEvent::DiscoveryPut(disc(0x102, 9).into()));
    assert_eq!(
        drain(&mut node),
        vec![
            ignored(RegistryIgnored::Topology(TopologyError::Cycle {
                id: NodeId(0x103),
                upstream: NodeId(0x102),
                path: vec![NodeId(0x103), NodeId(0x102), NodeId(0x103)],
            })),
            ignored(RegistryIgnored::StaleTopology {
                id: NodeId(0x102),
                revision: 4,
                held: 5
            }),
            ignored(RegistryIgnored::Topology(TopologyError::UnknownPeer(
                NodeId(0x1ff)
            ))),
            ignored(RegistryIgnored::OwnTopologyDelete),
            ignored(RegistryIgnored::Discovery { id: NodeId(0x102) }),
        ]
    );
    assert_eq!(
        node.inspect().topology().upstream_of(NodeId(0x102)),
        Some(NodeId(0x103))
    );
    assert_eq!(node.inspect().topology().upstream_of(NodeId(0x103)), None);
}

#[test]
fn relayed_data_beyond_the_hop_limit_is_dropped_with_an_event() {
    let mut node = root(0x102);
    let from = accepted_up(&mut node, 0x101);
    let _to = accepted_up(&mut node, 0x103);
    node.handle_received(
        secs(0),
        from,
        Bytes::copy_from_slice(&encode_data(
            NodeId(0x101),
            NodeId(0x103),
            5,
            crate::bus::links::MAX_HOPS,
            b"loop",
        )),
    );
    // Dropped, and the source is told (on the link the frame came from).
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Event(Event::ForwardDropped {
                src: NodeId(0x101),
                dst: NodeId(0x103),
                msg_type: 5
            }),
            Output::Transmit {
                link: from,
                bytes: super::frames::bytes(&crate::wire::Frame::Unreachable(
                    crate::wire::Unreachable {
                        src: NodeId(0x101),
                        dst: NodeId(0x103),
                        seq: make_seq(1, 1),
                        reason: crate::wire::UnreachableReason::HopLimit,
                        dst_incarnation: 0,
                    }
                )),
            },
        ]
    );
    node.handle_received(
        secs(0),
        from,
        Bytes::copy_from_slice(&encode_data(NodeId(0x101), NodeId(0x103), 5, 3, b"ok")),
    );
    assert_eq!(
        drain(&mut node),
        vec![Output::Transmit {
            link: node.inspect().link_to(NodeId(0x103)).unwrap(),
            bytes: encode_data(NodeId(0x101), NodeId(0x103), 5, 4, b"ok"),
        }]
    );
}

#[test]
fn time_going_backwards_is_clamped() {
    let mut node = Node::new(config(0x101, 0x102, 2, false), secs(0)).unwrap();
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x103, 0x102, 1).into()),
    );
    let msg = node
        .send(secs(10), Select::Node(NodeId(0x103)), 1, Bytes::new())
        .unwrap();
    node.handle_timeout(secs(5));
    assert_eq!(drain(&mut node), vec![]);
    assert_eq!(node.poll_timeout(), Some(secs(18)));
    node.handle_timeout(secs(18) - Duration::from_nanos(1));
    assert_eq!(drain(&mut node), vec![]);
    node.handle_timeout(secs(18));
    assert_eq!(
        drain(&mut node),
        vec![Output::Outcome {
            msg,
            outcome: Outcome::Failed(FailReason::Timeout)
        }]
    );
}
