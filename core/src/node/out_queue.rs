//! The node's output queue. Each push notes whether the RPC layer must look at the queue
//! before the driver takes from it: a delivery of an RPC message, the outcome of one of the
//! RPC layer's own messages, or evidence of a peer's death or restart. On the plain message
//! path (a `Transmit`, an `Outcome` while the RPC layer has no message out) the note folds
//! away at compile time, so `poll_output` costs nothing extra there.
//!
//! `Data` frames for one link (our own messages and the ones we relay), pushed one after the
//! other with nothing in between, are appended to one open buffer that becomes a single `Transmit` (at most
//! [`MAX_TRANSMIT`] bytes) when anything else is pushed or the driver takes it: one
//! allocation per batch instead of one per message, and one write for the driver.

use alloc::{collections::VecDeque, vec::Vec};
use core::ops::{Deref, DerefMut};

use bytes::Bytes;

use super::{Event, Output};
use crate::{
    ids::LinkId,
    wire::{self, RPC_MSG_TYPE},
};

/// The size past which our `Data` frames for a link start a new `Transmit` (a frame is never
/// split: one larger than this is a `Transmit` of its own).
pub(super) const MAX_TRANSMIT: usize = 64 * 1024;

/// The least a `Data` frames' buffer starts with; it starts with the size of the previous
/// one when that was larger (batches tend to repeat: one allocation, no regrowth).
const OPEN_CAPACITY: usize = 2048;

#[derive(Debug, Default)]
pub(super) struct OutQueue {
    items: VecDeque<Output>,
    /// Something the RPC layer takes or reads may be in the queue.
    pub(super) rpc_pending: bool,
    /// The RPC layer has messages whose outcomes are its own.
    pub(super) rpc_outcomes: bool,
    /// Our `Data` frames for one link, logically after every queued output.
    open: Option<(LinkId, Vec<u8>)>,
    /// The length of the last such buffer (its successor's starting capacity).
    last_open_len: usize,
}

impl OutQueue {
    /// Appends `output`, noting whether the RPC layer must look at it.
    #[inline]
    pub(super) fn push_back(&mut self, output: Output) {
        self.close_open();
        self.rpc_pending |= match &output {
            Output::Received { msg_type, .. } => *msg_type == RPC_MSG_TYPE,
            Output::Outcome { .. } => self.rpc_outcomes,
            Output::Event(Event::PeerDead { .. } | Event::PeerRestarted { .. }) => true,
            _ => false,
        };
        self.items.push_back(output);
    }

    /// Appends the `Data` frame `data` for `link` (ours or relayed): to the open buffer when
    /// it is `link`'s and has room, else to a new one.
    #[inline]
    pub(super) fn push_data(&mut self, link: LinkId, data: &wire::Data<'_>) {
        let fits = |buf: &Vec<u8>| buf.len() + data.payload.len() < MAX_TRANSMIT;
        let buf = match &mut self.open {
            Some((open, buf)) if *open == link && fits(buf) => buf,
            _ => {
                self.close_open();
                let capacity = self.last_open_len.clamp(OPEN_CAPACITY, MAX_TRANSMIT);
                &mut self.open.insert((link, Vec::with_capacity(capacity))).1
            }
        };
        wire::encode_data(data, buf)
            .expect("payloads are checked at send, relayed ones were decoded: they fit a frame");
    }

    /// The next output, the open `Data` frames last.
    #[inline]
    pub(super) fn pop_front(&mut self) -> Option<Output> {
        match self.items.pop_front() {
            Some(output) => Some(output),
            None => self.open.take().map(|(link, buf)| {
                self.last_open_len = buf.len();
                Output::Transmit {
                    link,
                    bytes: Bytes::from(buf),
                }
            }),
        }
    }

    /// Queues the open `Data` frames as one `Transmit`.
    #[inline]
    fn close_open(&mut self) {
        if let Some((link, buf)) = self.open.take() {
            self.last_open_len = buf.len();
            self.items.push_back(Output::Transmit {
                link,
                bytes: Bytes::from(buf),
            });
        }
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
