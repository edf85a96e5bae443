//! What a [`Node`](crate::Node) hands its driver ([`Output`], drained with
//! [`Node::poll_output`](crate::Node::poll_output)) and why a `send` is refused ([`SendError`]).

mod outlets;
mod queue;

pub(crate) use outlets::Outlets;
pub(crate) use queue::OutQueue;

use alloc::string::String;

use bytes::Bytes;

use crate::{
    event::Event,
    ids::{LinkId, MsgId, NodeId},
    outcome::Outcome,
};

/// What the driver must do, or may observe. Drained with [`crate::Node::poll_output`].
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
    /// Write these bytes on `link`, after everything written on it before. A link that
    /// cannot take them is closed and reported with `handle_closed`: a `Transmit` dropped on
    /// the floor is a message the peer never sees.
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

/// Largest payload a `Data` frame can carry with the default frame limit.
pub(crate) const MAX_PAYLOAD_LEN: usize = crate::wire::MAX_DATA_PAYLOAD;

impl From<crate::connector::RouteError> for SendError {
    fn from(e: crate::connector::RouteError) -> SendError {
        match e {
            crate::connector::RouteError::InvalidTarget => SendError::InvalidTarget,
            _ => SendError::NoRoute,
        }
    }
}

impl SendError {
    /// The checks an application's message passes before anything of it is accepted (a
    /// `send` or a `broadcast`): the node is not shut down, the payload fits a frame, the
    /// type is not the RPC layer's.
    #[inline(always)]
    pub(crate) fn check(shut_down: bool, msg_type: u32, len: usize) -> Result<(), SendError> {
        if shut_down {
            Err(SendError::Shutdown)
        } else if len > MAX_PAYLOAD_LEN {
            Err(SendError::PayloadTooLarge {
                len,
                max: MAX_PAYLOAD_LEN,
            })
        } else if msg_type == crate::wire::RPC_MSG_TYPE {
            Err(SendError::ReservedType)
        } else {
            Ok(())
        }
    }

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
