//! The perimeter after the handshake: acks and refusals count only from a stream's route,
//! and a leaf cannot speak for another source ([`crate::node::perimeter`]).

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{
    config,
    frames::{bytes, encode_data, encode_hello, encode_hello_ack, peer_incarnation},
    secs, topo, *,
};
use crate::{
    outcome::FailReason,
    wire::{self, Decoded, Frame, UnreachableReason},
};

const NODE: u64 = 0x201;
const TARGET: u64 = 0x202;
const FORGER: u64 = 0x204;

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

/// An accepted link on `node` whose peer said `Hello{peer}`; outputs drained.
fn accepted_up(node: &mut Node, at: Instant, peer: u64) -> LinkId {
    let link = node.handle_accepted(at);
    node.handle_received(at, link, encode_hello(NodeId(peer)));
    drain(node);
    link
}

/// Node 0x201 sending one message to 0x202 over a direct link at 0 s: the node, the
/// message, the link and the message's seq.
fn sending() -> (Node, MsgId, LinkId, u64) {
    let mut node = Node::new(config(NODE, 0, 3, true), secs(0)).unwrap();
    let (msg, link) = super::send_on_a_dialled_link(&mut node, TARGET);
    node.handle_received(secs(0), link, encode_hello_ack(NodeId(TARGET)));
    let seq = drain(&mut node)
        .into_iter()
        .find_map(|o| match o {
            Output::Transmit { link: l, bytes } if l == link => {
                match wire::decode(&bytes, wire::DEFAULT_MAX_FRAME) {
                    Ok(Decoded::Frame(Frame::Data(d), _)) => Some(d.seq),
                    _ => None,
                }
            }
            _ => None,
        })
        .expect("the message went out on the target's link");
    (node, msg, link, seq)
}

/// What a forger sends about our stream to the target.
#[derive(Clone, Copy, Debug)]
enum Forgery {
    None,
    Ack,
    Reset,
    Unreachable(UnreachableReason),
}

/// Node 0x201 sends one message to 0x202 over a direct link (0x202 never acknowledges it);
/// 0x204, a leaf linked to the node (a key holder's link, proven as 0x204), sends `forgery`
/// about that stream at 1 s. Runs to 30 s on virtual time, firing every deadline at its
/// instant. Returns the node's outcomes with their instants, and its perimeter counts.
fn forged(forgery: Forgery) -> (Vec<(Instant, MsgId, Outcome)>, PerimeterCounts, Vec<Event>) {
    let (mut node, msg, _, seq) = sending();
    let forger = accepted_up(&mut node, secs(1), FORGER);
    let (src, dst) = (NodeId(NODE), NodeId(TARGET));
    let incarnation = peer_incarnation(dst);
    let frame = match forgery {
        Forgery::None => None,
        Forgery::Ack | Forgery::Reset => Some(Frame::Ack(wire::Ack {
            src,
            dst,
            seq,
            dst_incarnation: incarnation,
            reset: matches!(forgery, Forgery::Reset).then_some(1),
        })),
        Forgery::Unreachable(reason) => Some(Frame::Unreachable(wire::Unreachable {
            src,
            dst,
            seq,
            reason,
            dst_incarnation: incarnation,
        })),
    };
    let mut outcomes = Vec::new();
    let mut events = Vec::new();
    let mut collect = |at: Instant, node: &mut Node| {
        for o in drain(node) {
            match o {
                Output::Outcome { msg: m, outcome } => {
                    assert_eq!(m, msg);
                    outcomes.push((at, m, outcome));
                }
                Output::Event(e @ (Event::OffRoute { .. } | Event::ForgedSource { .. })) => {
                    events.push(e);
                }
                _ => {}
            }
        }
    };
    if let Some(frame) = frame {
        node.handle_received(secs(1), forger, bytes(&frame));
        collect(secs(1), &mut node);
    }
    while let Some(at) = node.poll_timeout().filter(|&at| at <= secs(30)) {
        node.handle_timeout(at);
        collect(at, &mut node);
    }
    (outcomes, node.inspect().perimeter(), events)
}

#[test]
fn a_forged_ack_from_off_the_route_changes_no_outcome() {
    let (honest, counts, events) = forged(Forgery::None);
    assert_eq!(counts, PerimeterCounts::default());
    assert_eq!(events, vec![]);
    // Without the forgery: the target never answers, its link's heartbeats stop at 4.5 s
    // (interval 1.5 s × 3), which is evidence of its death: the message may have arrived.
    assert_eq!(
        honest,
        vec![(
            Instant::from_millis(4_500),
            MsgId(1),
            Outcome::Unknown(FailReason::TargetGone)
        )]
    );
    let off_route = |frame| Event::OffRoute {
        frame,
        dst: NodeId(TARGET),
        via: NodeId(FORGER),
    };
    for (forgery, frame, acks, notices) in [
        (Forgery::Ack, OffRouteFrame::Ack, 1, 0),
        (Forgery::Reset, OffRouteFrame::Ack, 1, 0),
        (
            Forgery::Unreachable(UnreachableReason::HopLimit),
            OffRouteFrame::Unreachable,
            0,
            1,
        ),
        (
            Forgery::Unreachable(UnreachableReason::TargetGone),
            OffRouteFrame::Unreachable,
            0,
            1,
        ),
    ] {
        let (outcomes, counts, events) = forged(forgery);
        assert_eq!(outcomes, honest, "{forgery:?}");
        assert_eq!(events, vec![off_route(frame)], "{forgery:?}");
        assert_eq!(
            (counts.acks_off_route, counts.notices_off_route),
            (acks, notices),
            "{forgery:?}"
        );
    }
}

/// The same ack from the target itself ends the message `Delivered` at once: the check
/// refuses only what is off the route.
#[test]
fn the_targets_own_ack_still_delivers() {
    let (mut node, msg, link, seq) = sending();
    let ack = wire::Ack {
        src: NodeId(NODE),
        dst: NodeId(TARGET),
        seq,
        dst_incarnation: peer_incarnation(NodeId(TARGET)),
        reset: None,
    };
    node.handle_received(secs(1), link, bytes(&Frame::Ack(ack)));
    let out = drain(&mut node);
    assert!(
        out.contains(&Output::Outcome {
            msg,
            outcome: Outcome::Delivered
        }),
        "{out:?}"
    );
    assert_eq!(node.inspect().perimeter(), PerimeterCounts::default());
}

/// A leaf linked as 0x101 sends `Data` claiming source 0x105: neither delivered nor
/// acknowledged nor relayed, counted, the link stays up; its own messages still arrive.
#[test]
fn a_leaf_claiming_another_source_is_refused_and_counted() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let link = accepted_up(&mut node, secs(0), 0x101);
    let forged = encode_data(NodeId(0x105), NodeId(0x102), 9, 0, b"forged");
    node.handle_received(secs(0), link, forged);
    let event = |dst| {
        Output::Event(Event::ForgedSource {
            link,
            via: NodeId(0x101),
            src: NodeId(0x105),
            dst: NodeId(dst),
        })
    };
    assert_eq!(drain(&mut node), vec![event(0x102)]);
    // Toward another node: not relayed either.
    let relayed = encode_data(NodeId(0x105), NodeId(0x106), 9, 0, b"forged");
    node.handle_received(secs(0), link, relayed);
    assert_eq!(drain(&mut node), vec![event(0x106)]);
    assert_eq!(node.inspect().perimeter().forged_sources, 2);
    assert_eq!(node.status().perimeter.forged_sources, 2);
    assert_eq!(node.inspect().link_peer(link), Some(NodeId(0x101)));
    // The leaf's own message is delivered as before.
    node.handle_received(
        secs(0),
        link,
        encode_data(NodeId(0x101), NodeId(0x102), 9, 0, b"own"),
    );
    let out = drain(&mut node);
    assert_eq!(
        out[0],
        Output::Received {
            from: NodeId(0x101),
            via: NodeId(0x101),
            msg_type: 9,
            payload: Bytes::from_static(b"own"),
        }
    );
    assert_eq!(out.len(), 2, "{out:?}"); // and its ack
}

/// A proxy (a node with downstream nodes in the topology) relays for its subtree: its
/// child's message is delivered through it.
#[test]
fn a_proxy_may_relay_for_its_child() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x101, 0, 1).into()),
    );
    node.handle_registry(
        secs(0),
        RegistryEvent::TopologyPut(topo(0x105, 0x101, 1).into()),
    );
    drain(&mut node);
    let link = accepted_up(&mut node, secs(0), 0x101);
    node.handle_received(
        secs(0),
        link,
        encode_data(NodeId(0x105), NodeId(0x102), 9, 1, b"relayed"),
    );
    let out = drain(&mut node);
    assert_eq!(
        out[0],
        Output::Received {
            from: NodeId(0x105),
            via: NodeId(0x101),
            msg_type: 9,
            payload: Bytes::from_static(b"relayed"),
        }
    );
    assert_eq!(node.inspect().perimeter(), PerimeterCounts::default());
}
