//! The bus on one node, byte for byte: handshake refusals, heartbeats, receiver dedup, and
//! a target restart ending unacknowledged messages `Unknown(TargetRestarted)`.

use alloc::{vec, vec::Vec};

use bytes::Bytes;

use super::{
    config,
    frames::{bytes, encode_ack, encode_data_seq, encode_hello, own_hello_ack},
    secs, *,
};
use crate::{
    bus::{
        handshake::PROTOCOL_VERSIONS,
        stream::{make_seq, seq_counter, seq_tag},
    },
    outcome::FailReason,
    wire::{self, Decoded, Frame, RefuseReason, VersionRange},
};

fn drain(node: &mut Node) -> Vec<Output> {
    core::iter::from_fn(|| node.poll_output()).collect()
}

fn hello(
    id: u64,
    incarnation: u64,
    versions: VersionRange,
    challenge: Option<wire::Challenge>,
) -> Bytes {
    bytes(&Frame::Hello(wire::Hello {
        node: NodeId(id),
        incarnation,
        versions,
        name: "peer",
        challenge,
    }))
}

fn refused(node: &Node, link: LinkId, reason: RefuseReason, ack: Bytes) -> Vec<Output> {
    let _ = node;
    vec![
        Output::Transmit { link, bytes: ack },
        Output::Event(Event::LinkRejected {
            link,
            reason: LinkError::Refused(reason),
        }),
        Output::Close { link },
        Output::Event(Event::LinkClosed { link, peer: None }),
    ]
}

#[test]
fn a_peer_without_a_common_version_is_refused_with_the_reason() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&hello(0x101, 1, VersionRange { min: 2, max: 4 }, None)),
    );
    let ack = own_hello_ack(&node, Err(RefuseReason::VersionMismatch));
    assert_eq!(
        drain(&mut node),
        refused(&node, link, RefuseReason::VersionMismatch, ack)
    );
    assert_eq!(node.inspect().link_count(), 0);
}

#[test]
fn a_second_link_for_a_live_id_is_refused_unless_it_is_the_same_incarnation() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let first = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        first,
        Bytes::copy_from_slice(&hello(0x101, 7, PROTOCOL_VERSIONS, None)),
    );
    drain(&mut node);
    // Another life of 0x101 while the first link is up: refused.
    let impostor = node.handle_accepted(secs(1));
    node.handle_received(
        secs(1),
        impostor,
        Bytes::copy_from_slice(&hello(0x101, 8, PROTOCOL_VERSIONS, None)),
    );
    let ack = own_hello_ack(&node, Err(RefuseReason::DuplicateId));
    assert_eq!(
        drain(&mut node),
        refused(&node, impostor, RefuseReason::DuplicateId, ack)
    );
    // The same life dialling again (a parallel link): accepted; the lowest link carries
    // traffic.
    let parallel = node.handle_accepted(secs(1));
    node.handle_received(
        secs(1),
        parallel,
        Bytes::copy_from_slice(&hello(0x101, 7, PROTOCOL_VERSIONS, None)),
    );
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Transmit {
                link: parallel,
                bytes: own_hello_ack(&node, Ok(()))
            },
            Output::Event(Event::LinkUp {
                link: parallel,
                peer: NodeId(0x101)
            }),
        ]
    );
    assert_eq!(node.inspect().link_to(NodeId(0x101)), Some(first));
}

#[test]
fn a_silent_link_is_pinged_then_closed_at_the_exact_instant() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let link = node.handle_accepted(secs(1));
    node.handle_received(
        secs(1),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(0x101))),
    );
    drain(&mut node);
    let ping = |nonce| Output::Transmit {
        link,
        bytes: bytes(&Frame::Ping(wire::Ping { nonce })),
    };
    // Default heartbeat: 1.5 s × 3. Pings every silent interval...
    let ms = Instant::from_millis;
    for (k, at) in [(1, 2_500), (2, 4_000)] {
        assert_eq!(node.poll_timeout(), Some(ms(at)));
        node.handle_timeout(ms(at));
        assert_eq!(drain(&mut node), vec![ping(k)]);
    }
    // ... and the peer stays silent: dead at exactly 1 + 1.5 × 3 = 5.5 s.
    assert_eq!(node.poll_timeout(), Some(ms(5_500)));
    node.handle_timeout(ms(5_500) - crate::time::Duration::from_nanos(1));
    assert_eq!(drain(&mut node), vec![]);
    node.handle_timeout(ms(5_500));
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Event(Event::LinkRejected {
                link,
                reason: LinkError::HeartbeatTimeout(3)
            }),
            Output::Close { link },
            Output::Event(Event::LinkClosed {
                link,
                peer: Some(NodeId(0x101))
            }),
            // Stopped heartbeats are evidence that this incarnation of the peer is dead.
            Output::Event(Event::PeerDead {
                peer: NodeId(0x101),
                incarnation: 0x101,
                evidence: crate::node::Evidence::HeartbeatsStopped,
            }),
        ]
    );
    // Changed with bounded state for departed peers (docs/ARCHITECTURE.md §9.4): the dead
    // peer is looked at again one grace (8 s + 1.5 s × 3) later, when what the node keeps of
    // it (it has no record, no link) is forgotten silently; then nothing is scheduled.
    assert_eq!(node.poll_timeout(), Some(ms(18_000)));
    node.handle_timeout(ms(18_000));
    assert_eq!(drain(&mut node), vec![]);
    assert_eq!(node.inspect().peer_tables().dead, 0);
    assert_eq!(node.poll_timeout(), None);
}

#[test]
fn pings_are_answered_and_any_frame_keeps_a_link_alive() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(0x101))),
    );
    drain(&mut node);
    node.handle_received(
        secs(1),
        link,
        Bytes::copy_from_slice(&bytes(&Frame::Ping(wire::Ping { nonce: 77 }))),
    );
    assert_eq!(
        drain(&mut node),
        vec![Output::Transmit {
            link,
            bytes: bytes(&Frame::Pong(wire::Pong { nonce: 77 }))
        }]
    );
    // Heard at 1 s: the next ping is due `heartbeat_interval` (1.5 s) later.
    assert_eq!(node.poll_timeout(), Some(Instant::from_millis(2_500)));
}

#[test]
fn the_receiver_delivers_each_message_once_in_order_and_acks_every_batch() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(0x101))),
    );
    drain(&mut node);
    let data = |counter| {
        encode_data_seq(
            NodeId(0x101),
            NodeId(0x102),
            make_seq(5, counter),
            9,
            0,
            b"m",
        )
    };
    let incarnation = node.incarnation();
    let ack = |counter| Output::Transmit {
        link,
        bytes: encode_ack(
            NodeId(0x101),
            NodeId(0x102),
            make_seq(5, counter),
            incarnation,
        ),
    };
    let got = Output::Received {
        from: NodeId(0x101),
        via: NodeId(0x101),
        msg_type: 9,
        payload: Bytes::from_static(b"m"),
    };
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&data(1)));
    assert_eq!(drain(&mut node), vec![got.clone(), ack(1)]);
    // A retransmitted duplicate is dropped and acked again.
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&data(1)));
    assert_eq!(drain(&mut node), vec![ack(1)]);
    // A gap is not delivered out of order.
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&data(3)));
    assert_eq!(drain(&mut node), vec![ack(1)]);
    // One batch of two frames: two deliveries, one coalesced ack.
    let mut batch = data(2).to_vec();
    batch.extend_from_slice(&data(3));
    node.handle_received(secs(0), link, Bytes::copy_from_slice(&batch));
    assert_eq!(drain(&mut node), vec![got.clone(), got, ack(3)]);
}

/// The seq of the `Data` frame in `out`, if it is one.
fn data_seq(out: &Output) -> Option<u64> {
    let Output::Transmit { bytes, .. } = out else {
        return None;
    };
    match wire::decode(bytes, wire::DEFAULT_MAX_FRAME) {
        Ok(Decoded::Frame(Frame::Data(d), _)) => Some(d.seq),
        _ => None,
    }
}

#[test]
fn a_restarted_target_ends_unacked_messages_unknown_and_gets_the_rest_on_a_fresh_stream() {
    let mut c = config(0x201, 0x202, 0, false);
    c.upstream_address = "tcp://up".into();
    let mut node = Node::new(c, secs(0)).unwrap();
    let hello_ack = |incarnation| {
        bytes(&Frame::HelloAck(wire::HelloAck {
            node: NodeId(0x202),
            incarnation,
            versions: PROTOCOL_VERSIONS,
            name: "up",
            nonce: None,
            proof: None,
            result: Ok(()),
        }))
    };
    let connect = |node: &mut Node| {
        drain(node)
            .into_iter()
            .find_map(|o| match o {
                Output::Connect { link, .. } => Some(link),
                _ => None,
            })
            .unwrap()
    };
    let first = connect(&mut node);
    node.handle_connected(secs(0), first);
    node.handle_received(secs(0), first, Bytes::copy_from_slice(&hello_ack(1111)));
    drain(&mut node);
    let target = Select::Node(NodeId(0x202));
    let m1 = node
        .send(secs(0), target.clone(), 1, Bytes::from_static(b"one"))
        .unwrap();
    let old_seq = drain(&mut node).iter().find_map(data_seq).unwrap();
    assert_eq!(seq_counter(old_seq), 1);
    assert_eq!(node.inspect().unacked(NodeId(0x202)), 1);
    // The link drops before the ack; the next message queues.
    node.handle_closed(secs(1), first);
    drain(&mut node);
    let m2 = node
        .send(secs(1), target, 2, Bytes::from_static(b"two"))
        .unwrap();
    assert_eq!(node.inspect().pending(NodeId(0x202)), 1);
    // The upstream redial (the stream's retransmission timer fires first, at
    // `heartbeat_interval` 1.5 s, with no route: nothing is sent).
    assert_eq!(node.poll_timeout(), Some(Instant::from_millis(1_500)));
    node.handle_timeout(Instant::from_millis(1_500));
    assert_eq!(drain(&mut node), vec![]);
    let redial = node.poll_timeout().unwrap();
    assert_eq!(redial, secs(3));
    node.handle_timeout(redial);
    // The upstream comes back as a new incarnation.
    let second = connect(&mut node);
    node.handle_connected(redial, second);
    drain(&mut node);
    node.handle_received(redial, second, Bytes::copy_from_slice(&hello_ack(2222)));
    let outs = drain(&mut node);
    assert_eq!(
        outs[..2],
        [
            Output::Outcome {
                msg: m1,
                outcome: Outcome::Unknown(FailReason::TargetRestarted)
            },
            Output::Event(Event::PeerRestarted {
                peer: NodeId(0x202),
                incarnation: 2222
            }),
        ]
    );
    let seqs: Vec<u64> = outs.iter().filter_map(data_seq).collect();
    assert_eq!(seqs.len(), 1, "only m2 goes out: {outs:?}");
    assert_eq!(seq_counter(seqs[0]), 1);
    assert_ne!(seq_tag(seqs[0]), seq_tag(old_seq));
    assert!(
        !outs
            .iter()
            .any(|o| matches!(o, Output::Outcome { msg, .. } if *msg == m2))
    );
    // Its ack makes it Delivered.
    node.handle_received(
        redial,
        second,
        Bytes::copy_from_slice(&encode_ack(NodeId(0x201), NodeId(0x202), seqs[0], 2222)),
    );
    assert_eq!(
        drain(&mut node),
        vec![Output::Outcome {
            msg: m2,
            outcome: Outcome::Delivered
        }]
    );
    assert_eq!(node.inspect().unacked(NodeId(0x202)), 0);
}

#[test]
fn refused_frames_are_answered_with_an_exact_reset_and_never_delivered() {
    let mut node = Node::new(config(0x102, 0, 2, false), secs(0)).unwrap();
    let link = node.handle_accepted(secs(0));
    node.handle_received(
        secs(0),
        link,
        Bytes::copy_from_slice(&encode_hello(NodeId(0x101))),
    );
    drain(&mut node);
    let own = node.incarnation();
    let frame = |seq, dst_incarnation, retransmit| {
        bytes(&Frame::Data(wire::Data {
            src: NodeId(0x101),
            dst: NodeId(0x102),
            seq,
            dst_incarnation,
            retransmit,
            msg_type: 9,
            hop_count: 1,
            payload: b"m",
        }))
    };
    // Stamped 3 s after start: the reset says who refused, and how long it has run.
    let reset = |seq: u64| {
        let mut b = vec![48, 0, 0, 0, 1, 4, 1, 0];
        b.extend_from_slice(&0x101u64.to_le_bytes());
        b.extend_from_slice(&0x102u64.to_le_bytes());
        b.extend_from_slice(&seq.to_le_bytes());
        b.extend_from_slice(&own.to_le_bytes());
        b.extend_from_slice(&3_000_000_000u64.to_le_bytes());
        Output::Transmit {
            link,
            bytes: Bytes::from(b),
        }
    };
    // Rule 1: stamped for another incarnation.
    node.handle_received(
        secs(3),
        link,
        Bytes::copy_from_slice(&frame(make_seq(5, 1), own ^ 1, false)),
    );
    assert_eq!(drain(&mut node), vec![reset(make_seq(5, 1))]);
    // Rule 4: a retransmitted first message stamped 0 of a stream this node does not hold.
    node.handle_received(
        secs(3),
        link,
        Bytes::copy_from_slice(&frame(make_seq(6, 1), 0, true)),
    );
    assert_eq!(drain(&mut node), vec![reset(make_seq(6, 1))]);
    // A refused stream stays refused, even its first copy stamped for us.
    node.handle_received(
        secs(3),
        link,
        Bytes::copy_from_slice(&frame(make_seq(6, 1), own, false)),
    );
    assert_eq!(drain(&mut node), vec![reset(make_seq(6, 1))]);
    // A new stream stamped with our incarnation is delivered and acked (not reset).
    node.handle_received(
        secs(3),
        link,
        Bytes::copy_from_slice(&frame(make_seq(7, 1), own, true)),
    );
    assert_eq!(
        drain(&mut node),
        vec![
            Output::Received {
                from: NodeId(0x101),
                via: NodeId(0x101),
                msg_type: 9,
                payload: Bytes::from_static(b"m"),
            },
            Output::Transmit {
                link,
                bytes: encode_ack(NodeId(0x101), NodeId(0x102), make_seq(7, 1), own),
            },
        ]
    );
}

/// `poll_timeout` names the exact next heartbeat after traffic moves deadlines, whichever
/// link got the traffic: received bytes leave the heartbeat queue alone and only its earliest
/// entry is made exact again, which must still be the true minimum.
#[test]
fn the_next_heartbeat_is_exact_whichever_link_traffic_arrives_on() {
    let ms = Instant::from_millis;
    let mut c = config(0x102, 0, 2, false);
    c.heartbeat_interval = Duration::from_secs(2);
    let mut node = Node::new(c, secs(0)).unwrap();
    let a = node.handle_accepted(ms(0));
    node.handle_received(ms(0), a, encode_hello(NodeId(0x101)));
    let b = node.handle_accepted(ms(1_000));
    node.handle_received(ms(1_000), b, encode_hello(NodeId(0x103)));
    drain(&mut node);
    // a: silent since 0 → 2 s; b: since 1 s → 3 s.
    assert_eq!(node.poll_timeout(), Some(ms(2_000)));
    let ping = |node: &mut Node, at: Instant, link: LinkId, nonce: u64| {
        node.handle_received(at, link, bytes(&Frame::Ping(wire::Ping { nonce })));
        drain(node)
    };
    // Traffic on the earliest link moves the answer to the other one.
    ping(&mut node, ms(1_500), a, 1);
    assert_eq!(node.poll_timeout(), Some(ms(3_000)));
    // Traffic on the other link: a's 3.5 s is next.
    ping(&mut node, ms(2_000), b, 2);
    assert_eq!(node.poll_timeout(), Some(ms(3_500)));
    // A timeout at 3 s finds nothing due.
    node.handle_timeout(ms(3_000));
    assert_eq!(drain(&mut node), []);
    assert_eq!(node.poll_timeout(), Some(ms(3_500)));
    // At 3.5 s a pings (its next check 2 s later); b, silent since 2 s, is next at 4 s.
    node.handle_timeout(ms(3_500));
    assert_eq!(
        drain(&mut node),
        [Output::Transmit {
            link: a,
            bytes: bytes(&Frame::Ping(wire::Ping { nonce: 1 })),
        }]
    );
    assert_eq!(node.poll_timeout(), Some(ms(4_000)));
    // b closing leaves a's 5.5 s.
    node.handle_closed(ms(3_600), b);
    drain(&mut node);
    assert_eq!(node.poll_timeout(), Some(ms(5_500)));
}
