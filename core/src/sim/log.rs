//! Per-node logs kept by the simulator: what each node sent, received and was told about its
//! messages, and the dials it asked for, each stamped with the virtual time. Tests assert on
//! these.

use alloc::{string::String, vec::Vec};

use bytes::Bytes;

use crate::{
    ids::{LinkId, MsgId, NodeId},
    node::Event,
    outcome::Outcome,
    time::Instant,
};

/// A message a node handed to the application (`Output::Received`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// Virtual time of delivery.
    pub at: Instant,
    /// The original sender.
    pub from: NodeId,
    /// The peer on the link it arrived on (the sender itself, or the relay).
    pub via: NodeId,
    /// Application message type.
    pub msg_type: u32,
    /// Payload bytes.
    pub payload: Bytes,
}

/// A message the application sent through [`Sim::send`](super::Sim::send) and the node
/// accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// Virtual time of the `send` call.
    pub at: Instant,
    /// The id the node returned.
    pub msg: MsgId,
    /// Application message type.
    pub msg_type: u32,
    /// Payload bytes.
    pub payload: Bytes,
}

/// How one message ended (`Output::Outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutcomeRecord {
    /// Virtual time the outcome was reported.
    pub at: Instant,
    /// The message.
    pub msg: MsgId,
    /// Its outcome.
    pub outcome: Outcome,
}

/// One RPC output of a node (`Output::Rpc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcRecord {
    /// Virtual time it was reported.
    pub at: Instant,
    /// The simulator's incarnation count of the node that reported it (0 = first life).
    pub life: u32,
    /// The output.
    pub output: crate::rpc::RpcOutput,
}

/// A dial a node asked for (`Output::Connect`), and how it resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dial {
    /// Virtual time of the `Connect` output.
    pub at: Instant,
    /// The node's id for the new link.
    pub link: LinkId,
    /// The peer the node meant to reach.
    pub peer: NodeId,
    /// The address dialed.
    pub addr: String,
    /// `Some(true)` once the node got `handle_connected`, `Some(false)` once it got
    /// `handle_connect_failed`; `None` before the dial resolves, and for good if it never
    /// does (the dialer closed the link first, or died).
    pub connected: Option<bool>,
}

/// Everything logged for one node, across its incarnations.
#[derive(Debug, Default)]
pub struct NodeLog {
    /// Messages delivered to the application, in order.
    pub received: Vec<Received>,
    /// Messages accepted by `send`, in order.
    pub sent: Vec<Sent>,
    /// Outcomes, in the order reported.
    pub outcomes: Vec<OutcomeRecord>,
    /// Observability events, with their time.
    pub events: Vec<(Instant, Event)>,
    /// Dials, in the order the node asked for them.
    pub dials: Vec<Dial>,
    /// RPC outputs (requests, call and broadcast outcomes, republish requests), in order.
    pub rpc: Vec<RpcRecord>,
}

impl NodeLog {
    /// The outcome reported for `msg`, if any (the first one; a second is a violation).
    #[must_use]
    pub fn outcome_of(&self, msg: MsgId) -> Option<OutcomeRecord> {
        self.outcomes.iter().find(|o| o.msg == msg).copied()
    }

    /// Records how the latest unresolved dial on `link` ended.
    pub(super) fn dial_resolved(&mut self, link: LinkId, connected: bool) {
        if let Some(dial) = self
            .dials
            .iter_mut()
            .rev()
            .find(|d| d.link == link && d.connected.is_none())
        {
            dial.connected = Some(connected);
        }
    }

    /// Accepted messages with no outcome yet, in send order.
    #[must_use]
    pub fn unresolved(&self) -> Vec<MsgId> {
        self.sent
            .iter()
            .map(|s| s.msg)
            .filter(|&m| self.outcome_of(m).is_none())
            .collect()
    }
}
