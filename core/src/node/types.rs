//! The values that go in and out of a [`super::Node`]: targets, outputs, events and errors.

use alloc::string::String;

use bytes::Bytes;

pub use crate::bus::links::LinkError;
use crate::{
    connector::RouteEvent,
    discovery::Filter,
    ids::{LinkId, MsgId, NodeId},
    outcome::Outcome,
    topology::TopologyError,
};

/// Whom a `send` is for.
///
/// `Id` and `Name` address one node. `Hash`, `RoundRobin` and `Random` pick one node among the
/// discovery records matching `filter` (every node with an id when `None`), on the
/// consistent-hash ring the discovery set keeps for that filter: `Hash` takes the owner of
/// `key` on the ring, `RoundRobin` the next member in the ring's sorted order (one cursor per
/// ring, which resumes after the last node it returned when membership changes), `Random` a
/// member drawn from the node's seeded generator. The pick is made at `send` and the message
/// stays with that node.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Target<'a> {
    /// The node with this id.
    Id(NodeId),
    /// The node holding this name in discovery.
    Name(&'a str),
    /// A node chosen by hashing `key`.
    Hash {
        /// Restricts the candidates; `None` = every node.
        filter: Option<&'a Filter>,
        /// The key to hash.
        key: &'a [u8],
    },
    /// The next node in turn.
    RoundRobin {
        /// Restricts the candidates; `None` = every node.
        filter: Option<&'a Filter>,
    },
    /// A node chosen at random (seeded).
    Random {
        /// Restricts the candidates; `None` = every node.
        filter: Option<&'a Filter>,
    },
}

/// What the driver must do, or may observe. Drained with [`super::Node::poll_output`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// Dial `addr` (the peer's address from discovery or config) for `link`; report the
    /// result with `handle_connected(link)` or `handle_connect_failed(link)`.
    Connect {
        /// The link the core assigned to this dial.
        link: LinkId,
        /// The node being dialled (the handshake checks the peer really is it).
        peer: NodeId,
        /// Where to dial.
        addr: String,
    },
    /// Write these bytes on `link`, after everything written on it before.
    Transmit {
        /// The link.
        link: LinkId,
        /// The bytes (one or more frames).
        bytes: Bytes,
    },
    /// Close `link`. The core already forgot it: do not report `handle_closed` for it (a
    /// report is harmless, it is ignored).
    Close {
        /// The link.
        link: LinkId,
    },
    /// A message for this node.
    Received {
        /// The node that sent it.
        from: NodeId,
        /// The node it arrived from (the sender itself, or the last relay; this node for
        /// loopback) — libatapp's `direct_source_id`.
        via: NodeId,
        /// Application message type.
        msg_type: u32,
        /// The payload, byte for byte as sent.
        payload: Bytes,
    },
    /// How an accepted message ended; exactly one per [`MsgId`] returned by `send`.
    Outcome {
        /// The message.
        msg: MsgId,
        /// How it ended.
        outcome: Outcome,
    },
    /// Something observable happened.
    Event(Event),
    /// Calls, requests, broadcasts ([`crate::rpc`]): a request to answer, how a call or a
    /// broadcast ended, a discovery record to publish again.
    Rpc(crate::rpc::RpcOutput),
}

/// Observability: state changes and ignored or rejected input. Never needs a reaction.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A route record changed.
    Route(RouteEvent),
    /// A link finished its handshake with `peer`.
    LinkUp {
        /// The link.
        link: LinkId,
        /// The peer, as its `Hello` said.
        peer: NodeId,
    },
    /// A link is gone (closed by either side, or its dial failed).
    LinkClosed {
        /// The link.
        link: LinkId,
        /// Its peer, if known.
        peer: Option<NodeId>,
    },
    /// This node closed a link because of what the peer sent.
    LinkRejected {
        /// The link.
        link: LinkId,
        /// What was wrong.
        reason: LinkError,
    },
    /// A link was still handshaking `handshake_timeout` after it was accepted (or its dial
    /// connected) and was closed; a [`LinkClosed`](Self::LinkClosed) follows. A dialled link
    /// counts as a failed dial.
    HandshakeTimedOut {
        /// The link.
        link: LinkId,
        /// The node it was dialled for (`None`: an accepted link).
        dialed: Option<NodeId>,
    },
    /// An accepted link still handshaking was closed to make room for a new connection,
    /// because `max_pending_handshakes` accepted links were handshaking: the oldest that had
    /// not sent a whole `Hello`, else the oldest.
    HandshakeLimit {
        /// The link closed.
        link: LinkId,
    },
    /// A peer's handshake carried another incarnation than the one seen before: it
    /// restarted. Messages it had not acknowledged ended `Unknown(TargetRestarted)`.
    PeerRestarted {
        /// The peer.
        peer: NodeId,
        /// Its new incarnation.
        incarnation: u64,
    },
    /// A message for another node arrived here and could not be forwarded (no ready link
    /// towards `dst`, or its hop limit was reached); an `Unreachable` went back toward `src`.
    ForwardDropped {
        /// Original sender.
        src: NodeId,
        /// Intended target.
        dst: NodeId,
        /// Application message type.
        msg_type: u32,
    },
    /// A registry event was not applied.
    RegistryIgnored(RegistryIgnored),
    /// An `Ack` or `Unreachable` about this node's stream to `dst` arrived from `via`, a peer
    /// off the stream's route: dropped, counted ([`Node::perimeter`](super::Node::perimeter)),
    /// no outcome changed.
    OffRoute {
        /// What arrived.
        frame: super::OffRouteFrame,
        /// The stream's target.
        dst: NodeId,
        /// The peer it arrived from.
        via: NodeId,
    },
    /// A `Data` frame on `link` claimed the source `src`, which its peer `via` may not relay
    /// for (a leaf speaks only for itself): dropped — not delivered, relayed or acknowledged
    /// — and counted ([`Node::perimeter`](super::Node::perimeter)). The link stays up.
    ForgedSource {
        /// The link.
        link: LinkId,
        /// The link's proven peer.
        via: NodeId,
        /// The source the frame claimed.
        src: NodeId,
        /// Its destination.
        dst: NodeId,
    },
    /// Evidence that `peer`'s incarnation `incarnation` is dead (ARCHITECTURE §9): what may
    /// have reached it ended `Unknown(TargetGone | TargetRestarted)` at once, what provably
    /// did not waits for a live incarnation, and the senders relaying to it through this
    /// node were told (an `Unreachable` with `TargetGone`).
    PeerDead {
        /// The peer.
        peer: NodeId,
        /// Its dead incarnation (0 = the one never seen in a handshake).
        incarnation: u64,
        /// What showed it.
        evidence: Evidence,
    },
}

/// What showed that a peer's incarnation is dead ([`Event::PeerDead`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Evidence {
    /// The registry deleted its record.
    RegistryDeleted,
    /// The registry announced another incarnation of it.
    NewIncarnation,
    /// A dial after its link closed failed (refused, timed out, or never finished its
    /// handshake).
    RedialFailed,
    /// Its link's heartbeats stopped (nothing heard for interval × misses).
    HeartbeatsStopped,
    /// The relay its route goes through said so.
    RelayNotice,
}

impl Evidence {
    /// Every kind, in declaration order (for label sets that list each one).
    pub const ALL: [Evidence; 5] = [
        Evidence::RegistryDeleted,
        Evidence::NewIncarnation,
        Evidence::RedialFailed,
        Evidence::HeartbeatsStopped,
        Evidence::RelayNotice,
    ];

    /// The label in logs and metrics: `registry_deleted`, `new_incarnation`,
    /// `redial_failed`, `heartbeats_stopped`, `relay_notice`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Evidence::RegistryDeleted => "registry_deleted",
            Evidence::NewIncarnation => "new_incarnation",
            Evidence::RedialFailed => "redial_failed",
            Evidence::HeartbeatsStopped => "heartbeats_stopped",
            Evidence::RelayNotice => "relay_notice",
        }
    }
}

/// Why a registry event was not applied.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryIgnored {
    /// The discovery set did not apply it (stale, duplicate, unknown key, no identity).
    Discovery {
        /// The node id the event named.
        id: NodeId,
    },
    /// A topology event older than (or as old as) what was applied for this node.
    StaleTopology {
        /// The node.
        id: NodeId,
        /// The event's revision.
        revision: u64,
        /// The revision already applied.
        held: u64,
    },
    /// The topology registry rejected the put (id 0, self-upstream, cycle) or the delete
    /// (unknown peer); nothing changed.
    Topology(TopologyError),
    /// A topology delete of this node itself (a node never removes itself).
    OwnTopologyDelete,
}

/// Why `send` refused a message. Nothing was accepted: no [`MsgId`], no outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The target is node 0 or an empty name.
    #[error("the target must be a non-zero id or a non-empty name")]
    InvalidTarget,
    /// No discovery record matches the name or filter (a target given by id never gets this:
    /// it may wait for its discovery record).
    #[error("no known node matches the target")]
    UnknownTarget,
    /// No route exists or can be set up: direct links are not allowed for it, it is not up
    /// or down the topology tree, and this node has no upstream to relay through.
    #[error("no route to the target")]
    NoRoute,
    /// The payload is larger than a frame can carry.
    #[error("payload of {len} bytes exceeds the limit of {max}")]
    PayloadTooLarge {
        /// The payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The node was shut down.
    #[error("the node is shut down")]
    Shutdown,
    /// The message type is reserved for the RPC layer ([`crate::wire::RPC_MSG_TYPE`]).
    #[error("message type reserved for calls")]
    ReservedType,
}

impl SendError {
    /// The refusal's label in metrics and reports, in snake case: `invalid_target`,
    /// `unknown_target`, `no_route`, `payload_too_large`, `shutdown`, `reserved_type`.
    #[must_use]
    pub const fn as_str(&self) -> &'static str {
        match self {
            SendError::InvalidTarget => "invalid_target",
            SendError::UnknownTarget => "unknown_target",
            SendError::NoRoute => "no_route",
            SendError::PayloadTooLarge { .. } => "payload_too_large",
            SendError::Shutdown => "shutdown",
            SendError::ReservedType => "reserved_type",
        }
    }
}
