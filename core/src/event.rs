//! What a [`Node`](crate::Node) lets its driver observe: [`Event`]s (state changes, ignored or
//! rejected input; never needing a reaction), the [`Evidence`] of a peer's death and why a
//! registry event was not applied ([`RegistryIgnored`]).

pub use crate::bus::links::LinkError;
use crate::{
    bus::links::LinkEvent,
    connector::RouteEvent,
    ids::{LinkId, NodeId},
    topology::TopologyError,
};

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
    /// off the stream's route: dropped, counted ([`Inspect::perimeter`](crate::Inspect::perimeter)),
    /// no outcome changed.
    OffRoute {
        /// What arrived.
        frame: crate::perimeter::OffRouteFrame,
        /// The stream's target.
        dst: NodeId,
        /// The peer it arrived from.
        via: NodeId,
    },
    /// A `Data` frame on `link` claimed the source `src`, which its peer `via` may not relay
    /// for (a leaf speaks only for itself): dropped — not delivered, relayed or acknowledged
    /// — and counted ([`Inspect::perimeter`](crate::Inspect::perimeter)). The link stays up.
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

/// What the link machine reports, as the node reports it to the driver.
impl From<LinkEvent> for Event {
    fn from(event: LinkEvent) -> Event {
        match event {
            LinkEvent::Closed { link, peer } => Event::LinkClosed { link, peer },
            LinkEvent::Rejected { link, reason } => Event::LinkRejected { link, reason },
            LinkEvent::HandshakeTimeout { link, dialed } => {
                Event::HandshakeTimedOut { link, dialed }
            }
            LinkEvent::HandshakeLimit { link } => Event::HandshakeLimit { link },
            LinkEvent::ForgedSource {
                link,
                via,
                src,
                dst,
            } => Event::ForgedSource {
                link,
                via,
                src,
                dst,
            },
            LinkEvent::ForwardDropped { src, dst, msg_type } => {
                Event::ForwardDropped { src, dst, msg_type }
            }
        }
    }
}
