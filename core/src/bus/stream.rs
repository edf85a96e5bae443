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
//! So a reset from incarnation X means "X delivered nothing of this stream and never will".
//!
//! The sender ([`SendStreams`]) learns a target's incarnation from acks (and from a direct
//! handshake, [`SendStreams::on_incarnation`]) and stamps every stream it starts with it; a
//! stream started stamped 0 takes the incarnation of its first ack (only the incarnation
//! that acknowledged it may have delivered it). A reset ([`SendStreams::on_reset`]) voids the
//! stream: the in-flight messages from the first one no *earlier* incarnation can have
//! received — every copy of it was refused (by relays with `Unreachable`, or by this reset),
//! or the resetting incarnation (a reset carries its age) was already running when it was
//! first sent, or when it was sent again after every earlier copy had been refused — move, in order, onto a fresh stream stamped with the resetting incarnation
//! and are sent again (receivers deliver in order, so nothing after such a message was
//! delivered either); the ones before it end `Unknown(TargetRestarted)` (delivery unknown: a
//! previous incarnation may have delivered them). Either way no message
//! is delivered twice, and after a restart behind a proxy the next message reaches the new
//! incarnation without waiting for a timeout. Relays forward both fields unchanged.
//!
//! **Sender** ([`SendStreams`]): each transmitted message stays *in flight* (with its payload,
//! deadline and transmission count) until a cumulative [`Ack`](crate::wire::Ack) covers its
//! seq — then it is `Delivered`. In-flight messages are retransmitted, in order and with their
//! original seqs, when the route becomes ready again or when the oldest one has waited
//! `retransmit_after` without an ack. A stream whose oldest in-flight message is given up
//! (deadline, target restarted, route removed) ends every in-flight message of it that may
//! have arrived — the receiver would wait for the missing one for ever — and the next
//! message (or the ones that provably never arrived, below) starts a fresh stream.
//!
//! **Giving up** ([`SendStreams::give_up`], [`SendStreams::expire`]): a message with no copy
//! that may have arrived (its transmissions are 0: never sent since it moved to a fresh
//! stream, or every copy refused by a relay with `Unreachable`, [`SendStreams::on_refused`])
//! provably never arrived, nor did anything after it (receivers deliver in order). A stream
//! given up ends the messages before the first such message `Unknown(reason)`, that one and
//! the rest `Failed(reason)`. At a deadline the reason is `NoRoute` when a relay refused one
//! of the stream's frames since its last (re)transmission (the last thing that happened to
//! it was a refusal), else `Timeout`; of the messages that provably never arrived only the
//! due ones end, and the others move, in order, onto a fresh stream (as first transmissions)
//! and keep their own deadlines.
//!
//! **Receiver** ([`RecvStreams`]): delivers exactly the next counter of the current tag, drops
//! duplicates (counter already delivered) and gaps (a later counter: the sender retransmits
//! from its first unacked message), and remembers the last few retired tags so a stale
//! retransmission of an old stream cannot restart it. Tags are random, so two streams of one
//! sender collide with probability 2⁻³² per restart — documented, not handled. Likewise a
//! receiver remembers the last 4 refused tags per sender: a first copy delayed past 4 later
//! refusals from the same sender could still be delivered — documented, not handled.

use alloc::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use crate::{
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome, OutcomeSink},
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
    /// When it was first transmitted.
    pub first_tx: Instant,
    /// How many copies of it may have reached the target: one per transmission, less one per
    /// copy refused (by a relay with `Unreachable`, or by the reset of a new incarnation).
    /// 0 = it provably never arrived. A frame of a message with transmissions > 0 goes out
    /// with the `retransmit` flag.
    pub transmissions: u32,
    /// When the oldest copy that may have arrived was sent: its first transmission, or the
    /// first one after every earlier copy had been refused (every copy sent before this
    /// instant provably did not arrive). Meaningless while `transmissions` is 0.
    pub open_since: Instant,
}

/// The sending half of one stream.
#[derive(Clone, Debug)]
struct SendStream {
    tag: u32,
    /// The target incarnation its frames are stamped with (0 = not known).
    stamp: u64,
    /// Counter of the last message pushed.
    last: u32,
    inflight: VecDeque<InFlight>,
    bytes: usize,
    /// When the in-flight list was last (re)transmitted.
    last_tx: Instant,
    /// A relay refused one of its frames (`Unreachable`) since its last (re)transmission:
    /// given up now, its reason is `NoRoute` rather than `Timeout`.
    refused: bool,
}

/// Every stream this node sends on, by destination.
#[derive(Clone, Debug)]
pub struct SendStreams {
    streams: BTreeMap<NodeId, SendStream>,
    /// The last incarnation learned per target (acks, resets, handshakes).
    known: BTreeMap<NodeId, u64>,
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
            known: BTreeMap::new(),
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
        let stamp = self.known.get(&dst).copied().unwrap_or(0);
        let stream = self.streams.entry(dst).or_insert_with(|| SendStream {
            tag: fresh_tag(rng, 0),
            stamp,
            last: 0,
            inflight: VecDeque::new(),
            bytes: 0,
            last_tx: now,
            refused: false,
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
            first_tx: now,
            transmissions: 1,
            open_since: now,
        });
        seq
    }

    /// A cumulative ack of `seq` from `dst` in `incarnation`: every in-flight message up to
    /// it ends `Delivered`, and a stream stamped 0 is stamped `incarnation` (the one that
    /// acknowledged it). Acks of another tag (an abandoned stream) or from another incarnation
    /// than the stream's stamp are ignored. Returns how many messages it acknowledged.
    pub fn on_ack<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        seq: u64,
        incarnation: u64,
        sink: &mut S,
    ) -> usize {
        let Some(stream) = self.streams.get_mut(&dst) else {
            return 0;
        };
        if stream.tag != seq_tag(seq) || (stream.stamp != 0 && stream.stamp != incarnation) {
            return 0;
        }
        if incarnation != 0 {
            stream.stamp = incarnation;
            self.known.insert(dst, incarnation);
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

    /// A reset from `dst`: `refusal.incarnation` refused the frame `refusal.seq` and does
    /// not hold its stream. Ignored unless the seq belongs to the current stream. Otherwise
    /// the target's incarnation is now `refusal.incarnation`, the refused copy is counted as
    /// not arrived, and the in-flight messages split in two, in order:
    ///
    /// - the first one that provably never reached an *earlier* incarnation, and everything
    ///   after it (receivers deliver in order), move onto a fresh stream stamped with the
    ///   resetting incarnation (send them again with [`SendStreams::unacked`], as first
    ///   transmissions). A message provably never reached an earlier incarnation when every
    ///   copy of it was refused (its transmissions are 0: by a relay with `Unreachable`, or
    ///   this reset), or when the resetting incarnation was already running when the oldest
    ///   copy of it that may have arrived was sent (`now - age`, less a margin for clock-rate
    ///   differences of 0.1 % + 1 ms, is at or before [`InFlight::open_since`]: every copy
    ///   sent before was refused);
    /// - the messages before it may have been delivered by an earlier incarnation: they end
    ///   `Unknown(TargetRestarted)`.
    ///
    /// The resetting incarnation holds nothing of the voided stream (a reset says so), so
    /// nothing that moves can be delivered twice. Returns [`Reset::Restarted`] when some
    /// messages moved, [`Reset::Abandoned`] when every one ended (the stream is forgotten).
    pub fn on_reset<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        refusal: Refusal,
        now: Instant,
        sink: &mut S,
    ) -> Reset {
        let Some(stream) = self.streams.get_mut(&dst) else {
            return Reset::Ignored;
        };
        if stream.tag != seq_tag(refusal.seq) {
            return Reset::Ignored;
        }
        self.known.insert(dst, refusal.incarnation);
        if let Some(m) = stream.inflight.iter_mut().find(|m| m.seq == refusal.seq) {
            m.transmissions = m.transmissions.saturating_sub(1);
        }
        let age = refusal.age;
        let margin = age / 1000 + Duration::from_millis(1);
        let born_by = now.saturating_sub(age.saturating_sub(margin));
        let keep_from = stream
            .inflight
            .iter()
            .position(|m| m.transmissions == 0 || born_by <= m.open_since)
            .unwrap_or(stream.inflight.len());
        let ended = keep_from;
        for m in stream.inflight.drain(..keep_from) {
            stream.bytes -= m.payload.len();
            sink.emit(m.msg, Outcome::Unknown(FailReason::TargetRestarted));
        }
        if stream.inflight.is_empty() {
            self.streams.remove(&dst);
            return Reset::Abandoned(ended);
        }
        stream.tag = fresh_tag(&mut self.rng, stream.tag);
        stream.stamp = refusal.incarnation;
        stream.last = 0;
        stream.refused = false;
        for m in &mut stream.inflight {
            stream.last += 1;
            m.seq = make_seq(stream.tag, stream.last);
            m.transmissions = 0;
        }
        Reset::Restarted {
            ended,
            moved: stream.inflight.len(),
        }
    }

    /// `dst`'s handshake says it runs `incarnation` (call on every link up). A stream stamped
    /// with another incarnation, or any stream when the incarnation known before differs (it
    /// restarted), is abandoned with `Unknown(TargetRestarted)`; a stream stamped 0 is kept
    /// (its frames carry the `retransmit` flag, which the new incarnation refuses). Returns
    /// how many messages ended.
    pub fn on_incarnation<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        incarnation: u64,
        sink: &mut S,
    ) -> usize {
        let previous = self.known.insert(dst, incarnation);
        let stale_stamp = self
            .streams
            .get(&dst)
            .is_some_and(|s| s.stamp != 0 && s.stamp != incarnation);
        if stale_stamp || previous.is_some_and(|p| p != incarnation) {
            return self.abandon(dst, Outcome::Unknown(FailReason::TargetRestarted), sink);
        }
        0
    }

    /// The incarnation the current stream to `dst` is stamped with: the `dst_incarnation` of
    /// its frames (0 = not known, or no stream).
    #[must_use]
    pub fn stamp(&self, dst: NodeId) -> u64 {
        self.streams.get(&dst).map_or(0, |s| s.stamp)
    }

    /// The last incarnation of `dst` learned from its acks, resets or handshake (0 = none).
    #[must_use]
    pub fn known_incarnation(&self, dst: NodeId) -> u64 {
        self.known.get(&dst).copied().unwrap_or(0)
    }

    /// A relay refused the frame `seq` to `dst` (`Unreachable`); ignored unless `seq` is in
    /// flight on the current stream. The stream is marked refused until its next
    /// (re)transmission (given up meanwhile, its reason is `NoRoute`). That copy of `seq`
    /// provably did not arrive: its message's transmissions drop by one. A message whose every
    /// copy was refused (transmissions 0) provably never arrived, nor did anything after it in
    /// the stream (receivers deliver in order): its next copy goes out as a first transmission
    /// (no `retransmit` flag); given up, it ends `Failed` rather than `Unknown`, and a reset
    /// moves it to a fresh stream ([`SendStreams::on_reset`]).
    pub fn on_refused(&mut self, dst: NodeId, seq: u64) {
        let Some(stream) = self.streams.get_mut(&dst) else {
            return;
        };
        let Some(m) = stream.inflight.iter_mut().find(|m| m.seq == seq) else {
            return;
        };
        m.transmissions = m.transmissions.saturating_sub(1);
        stream.refused = true;
    }

    /// Marks every in-flight message to `dst` retransmitted at `now` (call after writing them
    /// all out again, in order).
    pub fn mark_retransmitted(&mut self, dst: NodeId, now: Instant) {
        if let Some(stream) = self.streams.get_mut(&dst) {
            stream.last_tx = now;
            stream.refused = false;
            for m in &mut stream.inflight {
                if m.transmissions == 0 {
                    m.open_since = now;
                }
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

/// A reset `Ack` as the sender sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The refused frame's seq.
    pub seq: u64,
    /// The refusing incarnation.
    pub incarnation: u64,
    /// How long it had been running when it refused.
    pub age: Duration,
}

/// What [`SendStreams::on_reset`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reset {
    /// Not about the current stream (stale): nothing changed.
    Ignored,
    /// The in-flight messages from the first one an earlier incarnation provably never
    /// received moved onto a fresh stream stamped with the new incarnation (send them again);
    /// the ones before it ended `Unknown(TargetRestarted)`.
    Restarted {
        /// How many ended `Unknown(TargetRestarted)`.
        ended: usize,
        /// How many moved onto the fresh stream.
        moved: usize,
    },
    /// This many in-flight messages ended `Unknown(TargetRestarted)`.
    Abandoned(usize),
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
    /// Tags this incarnation refused with a reset and never held: refused for good.
    refused: [u32; RETIRED],
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
        if foreign || (counter == 1 && retransmit && dst_incarnation == 0) {
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

    /// The cumulative `seq` to acknowledge for `src` (`None` before any delivery).
    #[must_use]
    pub fn ack_seq(&self, src: NodeId) -> Option<u64> {
        self.streams
            .get(&src)
            .filter(|s| s.tag != 0)
            .map(|s| make_seq(s.tag, s.delivered))
    }
}

mod give_up;
#[cfg(test)]
mod tests;
