//! Per-node logs kept by the simulator: what each node sent, received and was told about its
//! messages, each stamped with the virtual time. Tests assert on these.

use alloc::vec::Vec;

use bytes::Bytes;

use crate::{
    ids::{MsgId, NodeId},
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
}

impl NodeLog {
    /// The outcome reported for `msg`, if any (the first one; a second is a violation).
    #[must_use]
    pub fn outcome_of(&self, msg: MsgId) -> Option<OutcomeRecord> {
        self.outcomes.iter().find(|o| o.msg == msg).copied()
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
