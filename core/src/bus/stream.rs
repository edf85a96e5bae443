//! Per-stream sequencing: the `seq` layout of `Data` frames and the receiver's duplicate
//! filter (the sender's half, the in-flight messages of each target, lives in
//! [`crate::endpoint`]'s outbox: [`crate::endpoint::inflight`]).
//!
//! Every `src → dst` pair of nodes is a *stream*. A `Data` frame's 64-bit `seq` is
//! `tag << 32 | counter`: `tag` is a random non-zero 32-bit value the sender draws whenever it
//! starts a stream (first message to a target, after the target restarted, after the stream
//! was abandoned), `counter` counts the stream's messages from 1. The tag plays the part of the
//! sender's incarnation for the receiver (a `Data` frame that crossed proxies carries no
//! other trace of who sent it when): a new tag starting at counter 1 replaces the stream the
//! receiver held; a counter that is not the next one is never delivered.
//!
//! **Incarnations.** The tag alone cannot tell a receiver that restarted that it already
//! delivered a message in its previous life (the sender may sit behind a proxy and never see
//! the restart). So every `Data` frame also carries `dst_incarnation`, the receiver
//! incarnation its stream is *stamped* with (0 = not known), and a `retransmit` flag (an
//! earlier copy of this message may have reached the receiver); every `Ack` carries the
//! acker's incarnation, and a *reset* `Ack` says "I, incarnation X, refused frame `seq`: I do
//! not hold its stream". The receiver rules ([`RecvStreams::on_data`]):
//!
//! 1. A frame of the stream it holds → deliver the next counter, else duplicate or gap
//!    (whatever the stamp: this incarnation delivered the stream's first message, so the
//!    stream is talking to it).
//! 2. Tag 0, or a tag retired by a newer stream of the same sender → [`Verdict::Unknown`]
//!    (dropped silently).
//! 3. A tag it refused before → [`Verdict::Reset`] again.
//! 4. A stream it does not hold, stamped with another incarnation (non-zero, not its own), or
//!    its counter 1 *retransmitted* and stamped 0 (a previous incarnation may have delivered
//!    the first copy) → [`Verdict::Reset`], and the tag is remembered as refused: this
//!    incarnation never delivers anything of that stream, even a delayed first copy.
//! 5. Otherwise counter ≠ 1 → [`Verdict::Unknown`] (the sender retransmits from its oldest
//!    unacked message); counter 1 (a first transmission stamped 0, or stamped with its own
//!    incarnation) starts a new stream: deliver.
//!
//! 6. A *retransmitted* frame stamped with its own incarnation, counter ≠ 1, of a source it
//!    holds no stream of at all → [`Verdict::Reset`]: the sender resends from its oldest
//!    unacked message, so this incarnation acked the ones before — it held the stream and
//!    forgot it ([`RecvStreams::forget`], only after a grace of quiet: nothing still in flight
//!    was delivered). The sender moves what is in flight to a fresh stream.
//!
//! So a reset from incarnation X means "X delivered nothing of this stream and never will"
//! (of what is in flight, for rule 6).
//!
//! **Receiver** ([`RecvStreams`]): delivers exactly the next counter of the current tag, drops
//! duplicates (counter already delivered) and gaps (a later counter: the sender retransmits
//! from its first unacked message), and remembers the last few retired tags so a stale
//! retransmission of an old stream cannot restart it. Tags are random, so two streams of one
//! sender collide with probability 2⁻³² per restart — documented, not handled. Likewise a
//! receiver remembers the last 4 refused tags per sender: a first copy delayed past 4 later
//! refusals from the same sender could still be delivered — documented, not handled.

use alloc::collections::BTreeMap;

use crate::{
    ids::NodeId,
    time::{Duration, Instant},
};

/// The tag half of a `seq`.
#[must_use]
pub const fn seq_tag(seq: u64) -> u32 {
    (seq >> 32) as u32
}

/// The counter half of a `seq`.
#[must_use]
pub const fn seq_counter(seq: u64) -> u32 {
    seq as u32
}

/// A `seq` from its tag and counter.
#[must_use]
pub const fn make_seq(tag: u32, counter: u32) -> u64 {
    ((tag as u64) << 32) | counter as u64
}

/// Whether counter `a` is at or before `b` in wrapping 32-bit order.
pub(crate) const fn at_or_before(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) >= 0
}

/// How many retired tags a receiver remembers per sender.
const RETIRED: usize = 4;

/// The receiving half of one stream.
#[derive(Clone, Debug, Default)]
struct RecvStream {
    tag: u32,
    delivered: u32,
    retired: [u32; RETIRED],
    /// Tags this incarnation refused with a reset and never held: refused for good.
    refused: [u32; RETIRED],
    /// When a frame of this source was last judged (see [`RecvStreams::forget`]).
    heard: Instant,
}

/// What the receiver does with one `Data` frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// The next message of the stream (or the first of a new one): deliver it, then ack.
    Deliver,
    /// Already delivered: drop it, ack again (the earlier ack may be lost).
    Duplicate,
    /// A later message than the next one: drop it (the sender goes back to its first
    /// unacked one), ack what was delivered.
    Gap,
    /// A stream this receiver does not hold that does not start at counter 1 (this node
    /// restarted mid-stream, or the stream is a retired one): drop it, no ack.
    Unknown,
    /// A stream this node does not hold, stamped for another incarnation, or its
    /// retransmitted first message stamped 0 (a previous incarnation may have delivered it),
    /// or a stream refused before: drop it and answer a reset `Ack` (this incarnation, its
    /// age, the frame's seq). This incarnation delivers nothing of that stream, ever.
    Reset,
}

/// Every stream this node receives on, by source.
#[derive(Clone, Debug)]
pub struct RecvStreams {
    streams: BTreeMap<NodeId, RecvStream>,
    incarnation: u64,
}

impl RecvStreams {
    /// No streams, for a node in `incarnation`.
    #[must_use]
    pub fn new(incarnation: u64) -> RecvStreams {
        RecvStreams {
            streams: BTreeMap::new(),
            incarnation,
        }
    }

    /// The incarnation this receiver answers for (the `dst_incarnation` of its acks).
    #[must_use]
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Judges a `Data` frame from `src` with `seq`, stamped `dst_incarnation`, flagged
    /// `retransmit`, and records a delivery (rules in the [module docs](self)).
    pub fn on_data(
        &mut self,
        src: NodeId,
        seq: u64,
        dst_incarnation: u64,
        retransmit: bool,
    ) -> Verdict {
        let (tag, counter) = (seq_tag(seq), seq_counter(seq));
        let stream = self.streams.entry(src).or_default();
        if tag == stream.tag && tag != 0 {
            return if counter == stream.delivered.wrapping_add(1) && counter != 0 {
                stream.delivered = counter;
                Verdict::Deliver
            } else if at_or_before(counter, stream.delivered) {
                Verdict::Duplicate
            } else {
                Verdict::Gap
            };
        }
        if tag == 0 {
            return Verdict::Unknown;
        }
        if stream.refused.contains(&tag) {
            return Verdict::Reset;
        }
        if stream.retired.contains(&tag) {
            return Verdict::Unknown;
        }
        let foreign = dst_incarnation != 0 && dst_incarnation != self.incarnation;
        // Rule 6: this incarnation acked the stream's earlier messages (the sender resends
        // from its oldest unacked one) and holds nothing of it: it forgot a departed peer's
        // stream after a grace of quiet, so what is still in flight was never delivered.
        let forgotten =
            stream.tag == 0 && retransmit && counter != 1 && dst_incarnation == self.incarnation;
        if foreign || forgotten || (counter == 1 && retransmit && dst_incarnation == 0) {
            stream.refused.rotate_right(1);
            stream.refused[0] = tag;
            return Verdict::Reset;
        }
        if counter != 1 {
            return Verdict::Unknown;
        }
        if stream.tag != 0 {
            stream.retired.rotate_right(1);
            stream.retired[0] = stream.tag;
        }
        stream.tag = tag;
        stream.delivered = 1;
        Verdict::Deliver
    }

    /// Streams held (one per source heard from and not forgotten).
    #[must_use]
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether no stream is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Whether a stream of `src` is held.
    #[must_use]
    pub fn holds(&self, src: NodeId) -> bool {
        self.streams.contains_key(&src)
    }

    /// `src`'s frame just judged by [`on_data`](Self::on_data) arrived at `now`.
    pub fn heard(&mut self, src: NodeId, now: Instant) {
        if let Some(stream) = self.streams.get_mut(&src) {
            stream.heard = now;
        }
    }

    /// Forgets `src`'s stream if no frame of it was heard within `grace` before `now`
    /// (docs/ARCHITECTURE.md §9.4): every copy of a message is sent within a message timeout
    /// of its first, which was heard, and arrives within a link's silence bound, so after
    /// `grace` of quiet no copy can come and be delivered twice. `false` (kept) otherwise.
    pub fn forget(&mut self, src: NodeId, now: Instant, grace: Duration) -> bool {
        match self.streams.get(&src) {
            Some(stream) if now < stream.heard.saturating_add(grace) => false,
            _ => {
                self.streams.remove(&src);
                true
            }
        }
    }

    /// The cumulative `seq` to acknowledge for `src` (`None` before any delivery).
    #[must_use]
    pub fn ack_seq(&self, src: NodeId) -> Option<u64> {
        self.streams
            .get(&src)
            .filter(|s| s.tag != 0)
            .map(|s| make_seq(s.tag, s.delivered))
    }
}

#[cfg(test)]
mod tests;
