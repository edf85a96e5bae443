//! The node's output queue. Each push notes whether the RPC layer must look at the queue
//! before the driver takes from it: a delivery of an RPC message, the outcome of one of the
//! RPC layer's own messages, or evidence of a peer's death or restart. On the plain message
//! path (a `Transmit`, an `Outcome` while the RPC layer has no message out) the note folds
//! away at compile time, so `poll_output` costs nothing extra there.

use alloc::collections::VecDeque;
use core::ops::{Deref, DerefMut};

use super::{Event, Output};
use crate::wire::RPC_MSG_TYPE;

#[derive(Debug, Default)]
pub(super) struct OutQueue {
    items: VecDeque<Output>,
    /// Something the RPC layer takes or reads may be in the queue.
    pub(super) rpc_pending: bool,
    /// The RPC layer has messages whose outcomes are its own.
    pub(super) rpc_outcomes: bool,
}

impl OutQueue {
    /// Appends `output`, noting whether the RPC layer must look at it.
    #[inline]
    pub(super) fn push_back(&mut self, output: Output) {
        self.rpc_pending |= match &output {
            Output::Received { msg_type, .. } => *msg_type == RPC_MSG_TYPE,
            Output::Outcome { .. } => self.rpc_outcomes,
            Output::Event(Event::PeerDead { .. } | Event::PeerRestarted { .. }) => true,
            _ => false,
        };
        self.items.push_back(output);
    }
}

impl Deref for OutQueue {
    type Target = VecDeque<Output>;

    fn deref(&self) -> &VecDeque<Output> {
        &self.items
    }
}

impl DerefMut for OutQueue {
    fn deref_mut(&mut self) -> &mut VecDeque<Output> {
        &mut self.items
    }
}
