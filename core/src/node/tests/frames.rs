//! Frame builders for the node's tests: what a peer (or this node) puts on the wire.

use alloc::vec::Vec;

use bytes::Bytes;

use super::Node;
use crate::{
    bus::{handshake::PROTOCOL_VERSIONS, stream::make_seq},
    ids::NodeId,
    wire::{self, Frame, RefuseReason},
};

/// The incarnation test peers claim: their id (distinct per peer, stable across calls).
pub(super) const fn peer_incarnation(id: NodeId) -> u64 {
    id.0
}

/// The bytes of one frame.
pub(super) fn bytes(frame: &Frame<'_>) -> Bytes {
    let mut out = Vec::new();
    wire::encode(frame, &mut out).unwrap();
    Bytes::from(out)
}

/// A peer's `Hello` (incarnation [`peer_incarnation`], no proof, empty name).
pub(super) fn encode_hello(id: NodeId) -> Bytes {
    bytes(&Frame::Hello(wire::Hello {
        node: id,
        incarnation: peer_incarnation(id),
        versions: PROTOCOL_VERSIONS,
        name: "",
        challenge: None,
    }))
}

/// A peer's accepting `HelloAck` (incarnation [`peer_incarnation`], no proof, empty name).
pub(super) fn encode_hello_ack(id: NodeId) -> Bytes {
    bytes(&Frame::HelloAck(wire::HelloAck {
        node: id,
        incarnation: peer_incarnation(id),
        versions: PROTOCOL_VERSIONS,
        name: "",
        nonce: None,
        proof: None,
        result: Ok(()),
    }))
}

/// The `Hello` `node` sends when it dials.
pub(super) fn own_hello(node: &Node) -> Bytes {
    bytes(&Frame::Hello(wire::Hello {
        node: node.id(),
        incarnation: node.incarnation(),
        versions: PROTOCOL_VERSIONS,
        name: &node.inspect().config().name,
        challenge: None,
    }))
}

/// The `HelloAck` `node` answers an accepted link with.
pub(super) fn own_hello_ack(node: &Node, result: Result<(), RefuseReason>) -> Bytes {
    bytes(&Frame::HelloAck(wire::HelloAck {
        node: node.id(),
        incarnation: node.incarnation(),
        versions: PROTOCOL_VERSIONS,
        name: &node.inspect().config().name,
        nonce: None,
        proof: None,
        result,
    }))
}

/// A `Data` frame with an explicit `seq`.
pub(super) fn encode_data_seq(
    src: NodeId,
    dst: NodeId,
    seq: u64,
    msg_type: u32,
    hop_count: u8,
    payload: &[u8],
) -> Bytes {
    bytes(&Frame::Data(wire::Data {
        src,
        dst,
        seq,
        dst_incarnation: 0,
        retransmit: false,
        msg_type,
        hop_count,
        payload,
    }))
}

/// The first `Data` frame of a stream (tag 1, counter 1).
pub(super) fn encode_data(
    src: NodeId,
    dst: NodeId,
    msg_type: u32,
    hop_count: u8,
    payload: &[u8],
) -> Bytes {
    encode_data_seq(src, dst, make_seq(1, 1), msg_type, hop_count, payload)
}

/// A cumulative `Ack` of stream `src → dst` up to `seq`, from `dst` in `incarnation`.
pub(super) fn encode_ack(src: NodeId, dst: NodeId, seq: u64, incarnation: u64) -> Bytes {
    bytes(&Frame::Ack(wire::Ack {
        src,
        dst,
        seq,
        dst_incarnation: incarnation,
        reset: None,
    }))
}
