//! Per-stream sequencing: the sender's unacknowledged messages and the receiver's
//! duplicate filter.
//!
//! Every `src → dst` pair of nodes is a *stream*. A `Data` frame's 64-bit `seq` is
//! `tag << 32 | counter`: `tag` is a random non-zero 32-bit value the sender draws whenever it
//! starts a stream (first message to a target, after the target restarted, after the stream
//! was abandoned), `counter` counts the stream's messages from 1. The tag plays the part of the
//! sender's incarnation for the receiver (a `Data` frame that crossed proxies carries no
//! other trace of who sent it when): a new tag starting at counter 1 replaces the stream the
//! receiver held; a counter that is not the next one is never delivered.
//!
//! **Sender** ([`SendStreams`]): each transmitted message stays *in flight* (with its payload,
//! deadline and transmission count) until a cumulative [`Ack`](crate::wire::Ack) covers its
//! seq — then it is `Delivered`. In-flight messages are retransmitted, in order and with their
//! original seqs, when the route becomes ready again or when the oldest one has waited
//! `retransmit_after` without an ack. A stream whose oldest in-flight message is given up
//! (deadline, target restarted, route removed) ends *every* in-flight message of it — the
//! receiver would wait for the missing one for ever — and the next message starts a fresh
//! stream.
//!
//! **Receiver** ([`RecvStreams`]): delivers exactly the next counter of the current tag, drops
//! duplicates (counter already delivered) and gaps (a later counter: the sender retransmits
//! from its first unacked message), and remembers the last few retired tags so a stale
//! retransmission of an old stream cannot restart it. Tags are random, so two streams of one
//! sender collide with probability 2⁻³² per restart — documented, not handled.

use alloc::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use crate::{
    ids::{MsgId, NodeId},
    outcome::{Outcome, OutcomeSink},
    rng::Rng,
    time::{Duration, Instant, earliest},
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
const fn at_or_before(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) >= 0
}

/// One transmitted, unacknowledged message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// Its outcome's id.
    pub msg: MsgId,
    /// Its full `seq`.
    pub seq: u64,
    /// Application message type.
    pub msg_type: u32,
    /// The payload (shared with the sender's copy).
    pub payload: Bytes,
    /// When it is given up (`Unknown(Timeout)`).
    pub deadline: Instant,
    /// How many times it was transmitted (1 after the first).
    pub transmissions: u32,
}

/// The sending half of one stream.
#[derive(Clone, Debug)]
struct SendStream {
    tag: u32,
    /// Counter of the last message pushed.
    last: u32,
    inflight: VecDeque<InFlight>,
    bytes: usize,
    /// When the in-flight list was last (re)transmitted.
    last_tx: Instant,
}

/// Every stream this node sends on, by destination.
#[derive(Clone, Debug)]
pub struct SendStreams {
    streams: BTreeMap<NodeId, SendStream>,
    rng: Rng,
    retransmit_after: Duration,
}

impl SendStreams {
    /// No streams; tags are drawn from `rng`; the oldest unacked message of a stream is
    /// retransmitted (with everything after it) once it waited `retransmit_after`.
    #[must_use]
    pub fn new(rng: Rng, retransmit_after: Duration) -> SendStreams {
        SendStreams {
            streams: BTreeMap::new(),
            rng,
            retransmit_after,
        }
    }

    /// In-flight messages to `dst` and their payload bytes.
    #[must_use]
    pub fn inflight(&self, dst: NodeId) -> (usize, usize) {
        self.streams
            .get(&dst)
            .map_or((0, 0), |s| (s.inflight.len(), s.bytes))
    }

    /// The in-flight messages to `dst`, oldest first.
    pub fn unacked(&self, dst: NodeId) -> impl Iterator<Item = &InFlight> + '_ {
        self.streams
            .get(&dst)
            .into_iter()
            .flat_map(|s| s.inflight.iter())
    }

    /// Every in-flight message, by destination then age (for invariant checks).
    pub fn all(&self) -> impl Iterator<Item = (NodeId, &InFlight)> + '_ {
        self.streams
            .iter()
            .flat_map(|(&dst, s)| s.inflight.iter().map(move |m| (dst, m)))
    }

    /// Records a message being transmitted to `dst` for the first time and returns its `seq`
    /// (starting a stream with a fresh tag if there is none).
    pub fn push(
        &mut self,
        dst: NodeId,
        msg: MsgId,
        msg_type: u32,
        payload: Bytes,
        deadline: Instant,
        now: Instant,
    ) -> u64 {
        let rng = &mut self.rng;
        let stream = self.streams.entry(dst).or_insert_with(|| SendStream {
            tag: fresh_tag(rng, 0),
            last: 0,
            inflight: VecDeque::new(),
            bytes: 0,
            last_tx: now,
        });
        stream.last = stream.last.wrapping_add(1);
        if stream.last == 0 {
            stream.last = 1;
        }
        let seq = make_seq(stream.tag, stream.last);
        if stream.inflight.is_empty() {
            stream.last_tx = now;
        }
        stream.bytes += payload.len();
        stream.inflight.push_back(InFlight {
            msg,
            seq,
            msg_type,
            payload,
            deadline,
            transmissions: 1,
        });
        seq
    }

    /// A cumulative ack of `seq` from `dst`: every in-flight message up to it ends
    /// `Delivered`. Acks of another tag (an abandoned stream) are ignored. Returns how many
    /// messages it acknowledged.
    pub fn on_ack<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        seq: u64,
        sink: &mut S,
    ) -> usize {
        let Some(stream) = self.streams.get_mut(&dst) else {
            return 0;
        };
        if stream.tag != seq_tag(seq) {
            return 0;
        }
        let upto = seq_counter(seq);
        let mut acked = 0;
        while let Some(head) = stream.inflight.front() {
            if !at_or_before(seq_counter(head.seq), upto) || !at_or_before(upto, stream.last) {
                break;
            }
            let m = stream.inflight.pop_front().expect("front exists");
            stream.bytes -= m.payload.len();
            sink.emit(m.msg, Outcome::Delivered);
            acked += 1;
        }
        acked
    }

    /// Marks every in-flight message to `dst` retransmitted at `now` (call after writing them
    /// all out again, in order).
    pub fn mark_retransmitted(&mut self, dst: NodeId, now: Instant) {
        if let Some(stream) = self.streams.get_mut(&dst) {
            stream.last_tx = now;
            for m in &mut stream.inflight {
                m.transmissions = m.transmissions.saturating_add(1);
            }
        }
    }

    /// Ends every in-flight message to `dst` with `outcome` (oldest first) and forgets the
    /// stream, so the next message starts a fresh one. Returns how many ended.
    pub fn abandon<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        outcome: Outcome,
        sink: &mut S,
    ) -> usize {
        let Some(stream) = self.streams.remove(&dst) else {
            return 0;
        };
        let n = stream.inflight.len();
        for m in stream.inflight {
            sink.emit(m.msg, outcome);
        }
        n
    }

    /// Ends every in-flight message of every stream with `outcome` and forgets them all.
    pub fn abandon_all<S: OutcomeSink + ?Sized>(&mut self, outcome: Outcome, sink: &mut S) {
        for (_, stream) in core::mem::take(&mut self.streams) {
            for m in stream.inflight {
                sink.emit(m.msg, outcome);
            }
        }
    }

    /// Whether `seq` is in flight to `dst` (its stream is the current one).
    #[must_use]
    pub fn holds(&self, dst: NodeId, seq: u64) -> bool {
        self.streams
            .get(&dst)
            .is_some_and(|s| s.inflight.iter().any(|m| m.seq == seq))
    }

    /// Pushes the retransmission timer of `dst`'s stream to `now + retransmit_after` without
    /// counting a transmission (nothing could be sent).
    pub fn touch(&mut self, dst: NodeId, now: Instant) {
        if let Some(stream) = self.streams.get_mut(&dst) {
            stream.last_tx = now;
        }
    }

    /// Whether the oldest in-flight message to `dst` was transmitted exactly once.
    #[must_use]
    pub fn head_sent_once(&self, dst: NodeId, seq: u64) -> bool {
        self.streams.get(&dst).is_some_and(|s| {
            s.inflight
                .front()
                .is_some_and(|m| m.seq == seq && m.transmissions == 1)
        })
    }

    /// The earliest instant something must happen: an in-flight deadline or a retransmission.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.streams
            .values()
            .filter_map(|s| {
                let head = s.inflight.front()?;
                Some(head.deadline.min(s.last_tx + self.retransmit_after))
            })
            .fold(None, |acc, t| earliest(acc, Some(t)))
    }

    /// Streams whose oldest in-flight message reached its deadline at `now`: each is
    /// abandoned with `Unknown(reason)`. Returns the destinations.
    pub fn expire<S: OutcomeSink + ?Sized>(
        &mut self,
        now: Instant,
        outcome: Outcome,
        sink: &mut S,
    ) -> alloc::vec::Vec<NodeId> {
        let due: alloc::vec::Vec<NodeId> = self
            .streams
            .iter()
            .filter(|(_, s)| s.inflight.front().is_some_and(|m| m.deadline <= now))
            .map(|(&d, _)| d)
            .collect();
        for &dst in &due {
            self.abandon(dst, outcome, sink);
        }
        due
    }

    /// Destinations whose oldest in-flight message waited `retransmit_after` at `now`.
    #[must_use]
    pub fn due_retransmits(&self, now: Instant) -> alloc::vec::Vec<NodeId> {
        self.streams
            .iter()
            .filter(|(_, s)| !s.inflight.is_empty() && s.last_tx + self.retransmit_after <= now)
            .map(|(&d, _)| d)
            .collect()
    }
}

/// A non-zero tag other than `previous`.
fn fresh_tag(rng: &mut Rng, previous: u32) -> u32 {
    loop {
        let tag = (rng.next_u64() >> 32) as u32;
        if tag != 0 && tag != previous {
            return tag;
        }
    }
}

/// How many retired tags a receiver remembers per sender.
const RETIRED: usize = 4;

/// The receiving half of one stream.
#[derive(Clone, Debug, Default)]
struct RecvStream {
    tag: u32,
    delivered: u32,
    retired: [u32; RETIRED],
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
}

/// Every stream this node receives on, by source.
#[derive(Clone, Debug, Default)]
pub struct RecvStreams {
    streams: BTreeMap<NodeId, RecvStream>,
}

impl RecvStreams {
    /// No streams.
    #[must_use]
    pub fn new() -> RecvStreams {
        RecvStreams::default()
    }

    /// Judges a `Data` frame with `seq` from `src` and records a delivery.
    pub fn on_data(&mut self, src: NodeId, seq: u64) -> Verdict {
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
        if tag == 0 || counter != 1 || stream.retired.contains(&tag) {
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
