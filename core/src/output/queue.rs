//! [`OutQueue`], the node's output queue: what the driver takes with `poll_output`, in order.
//!
//! `Data` frames for one link (our own messages and the ones we relay), pushed one after the
//! other with nothing in between, are appended to one open buffer that becomes a single `Transmit` (at most
//! [`MAX_TRANSMIT`] bytes) when anything else is pushed or the driver takes it: one
//! allocation per batch instead of one per message, and one write for the driver.

use alloc::{collections::VecDeque, vec::Vec};

use bytes::Bytes;

use super::Output;
use crate::{ids::LinkId, wire};

/// The size past which our `Data` frames for a link start a new `Transmit` (a frame is never
/// split: one larger than this is a `Transmit` of its own).
pub(crate) const MAX_TRANSMIT: usize = 64 * 1024;

/// The least a `Data` frames' buffer starts with; it starts with the size of the previous
/// one when that was larger (batches tend to repeat: one allocation, no regrowth). Small,
/// so a batch of one small message (a request, a reply) stays in the allocator's
/// per-thread cache (2048 cost a request-reply cycle ~5 % more instructions).
const OPEN_CAPACITY: usize = 512;

#[derive(Debug, Default)]
pub(crate) struct OutQueue {
    items: VecDeque<Output>,
    /// Our `Data` frames for one link, logically after every queued output.
    open: Option<(LinkId, Vec<u8>)>,
    /// The length of the last such buffer (its successor's starting capacity).
    last_open_len: usize,
}

impl OutQueue {
    /// Appends `output`.
    #[inline]
    pub(crate) fn push_back(&mut self, output: Output) {
        self.close_open();
        self.items.push_back(output);
    }

    /// Appends the `Data` frame `data` for `link` (ours or relayed): to the open buffer when
    /// it is `link`'s and has room, else to a new one.
    #[inline]
    pub(crate) fn push_data(&mut self, link: LinkId, data: &wire::Data<'_>) {
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
    pub(crate) fn pop_front(&mut self) -> Option<Output> {
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
