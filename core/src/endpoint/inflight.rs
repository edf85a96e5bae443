//! The in-flight half of an outbox: the messages transmitted to one target and not yet
//! acknowledged, numbered on the sending half of their stream.
//!
//! A message leaves the pending queue when it is transmitted and stays here — with its
//! payload, deadline and transmission count — until a cumulative [`Ack`](crate::wire::Ack)
//! covers its seq (then it is `Delivered`) or it is given up. The stream layout (`seq` =
//! random tag · counter), the receiver's rules and the meaning of a reset are in
//! [`crate::bus::stream`]; this module is the sender's side of them.
//!
//! **Incarnations.** The sender learns a target's incarnation from acks (and from a direct
//! handshake, [`EndpointTable::on_incarnation`](super::EndpointTable::on_incarnation)) and
//! stamps every stream it starts with it; a stream started stamped 0 takes the incarnation of
//! its first ack (only the incarnation that acknowledged it may have delivered it). A reset
//! ([`EndpointTable::on_reset`](super::EndpointTable::on_reset)) voids the stream: the
//! in-flight messages from the first one no *earlier* incarnation can have received — every
//! copy of it was refused (by relays with `Unreachable`, or by this reset), or the resetting
//! incarnation (a reset carries its age) was already running when it was first sent, or when
//! it was sent again after every earlier copy had been refused — move, in order, onto a fresh
//! stream stamped with the resetting incarnation and are sent again (receivers deliver in
//! order, so nothing after such a message was delivered either); the ones before it end
//! `Unknown(TargetRestarted)` (delivery unknown: a previous incarnation may have delivered
//! them). Either way no message is delivered twice, and after a restart behind a proxy the
//! next message reaches the new incarnation without waiting for a timeout. Relays forward
//! both fields unchanged.
//!
//! **Sender**: each transmitted message stays *in flight* until a cumulative ack covers its
//! seq — then it is `Delivered`. In-flight messages are retransmitted, in order and with their
//! original seqs, when the route becomes ready again or when the oldest one has waited
//! `retransmit_after` without an ack. A stream whose oldest in-flight message is given up
//! (deadline, target restarted, route removed) ends every in-flight message of it that may
//! have arrived — the receiver would wait for the missing one for ever — and the next
//! message (or the ones that provably never arrived, below) starts a fresh stream.
//!
//! **Giving up** ([`EndpointTable::give_up`](super::EndpointTable::give_up),
//! [`EndpointTable::expire_unacked`](super::EndpointTable::expire_unacked)): a message with no copy
//! that may have arrived (its transmissions are 0: never sent since it moved to a fresh stream, or
//! every copy refused by a relay with `Unreachable`,
//! [`EndpointTable::on_refused`](super::EndpointTable::on_refused)) provably never arrived, nor did
//! anything after it (receivers deliver in order). A stream given up ends the messages before the
//! first such message `Unknown(reason)`, that one and the rest `Failed(reason)`. At a deadline the
//! reason is `NoRoute` when a relay refused one of the stream's frames since its last
//! (re)transmission (the last thing that happened to it was a refusal), else `Timeout`; of the
//! messages that provably never arrived only the due ones end, and the others move, in order, onto
//! a fresh stream (as first transmissions) and keep their own deadlines.

use alloc::collections::VecDeque;

use bytes::Bytes;

use super::PendingMessage;
use crate::{
    bus::stream::{at_or_before, make_seq, seq_counter, seq_tag},
    ids::MsgId,
    outcome::{FailReason, Outcome, OutcomeSink},
    rng::Rng,
    time::{Duration, Instant},
};

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

/// What [`EndpointTable::on_reset`](super::EndpointTable::on_reset) did.
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

/// The sending half of the stream to one target: its tag and counter, its stamp, and the
/// messages in flight on it, oldest first.
///
/// Tag 0 means "no stream": the next [`push`](Self::push) starts one with a fresh tag. A
/// stream whose messages were all acknowledged stays open (the next message takes the next
/// counter); a stream given up or abandoned is closed, so the next message starts afresh.
#[derive(Clone, Debug)]
pub(super) struct SendStream {
    pub(super) tag: u32,
    /// The target incarnation its frames are stamped with (0 = not known, or no stream).
    pub(super) stamp: u64,
    /// Counter of the last message pushed.
    pub(super) last: u32,
    pub(super) inflight: VecDeque<InFlight>,
    pub(super) bytes: usize,
    /// When the in-flight list was last (re)transmitted.
    pub(super) last_tx: Instant,
    /// A relay refused one of its frames (`Unreachable`) since its last (re)transmission:
    /// given up now, its reason is `NoRoute` rather than `Timeout`.
    pub(super) refused: bool,
    /// The path is in doubt (a relay refused a frame, or the target's incarnation died):
    /// until something is acknowledged again only the oldest message goes out, once per
    /// retry, and nothing new joins the stream — no window is thrown at a relay that bounces
    /// every frame.
    pub(super) probing: bool,
    /// Why the path is in doubt (`NoRoute`: a relay refused; `TargetGone`: the target's
    /// incarnation died): what the stream's and the queue's messages end with at their
    /// deadlines while it probes.
    pub(super) probe_reason: FailReason,
    /// A message joined with a deadline earlier than the one before it (a call's deadline
    /// behind a plain message's, a caller's own timeout): the earliest deadline may sit
    /// anywhere, not at the front. Cleared when a message joins an empty stream.
    pub(super) out_of_order: bool,
}

impl Default for SendStream {
    fn default() -> SendStream {
        SendStream::new()
    }
}

impl SendStream {
    /// No stream yet.
    pub(super) const fn new() -> SendStream {
        SendStream {
            tag: 0,
            stamp: 0,
            last: 0,
            inflight: VecDeque::new(),
            bytes: 0,
            last_tx: Instant::ZERO,
            refused: false,
            probing: false,
            probe_reason: FailReason::NoRoute,
            out_of_order: false,
        }
    }

    /// The stamp the next pushed message goes out with: the stream's, or `known` for the
    /// stream it starts.
    /// Whether the next message starts a new stream (a fresh tag, stamped with the
    /// incarnation known then); only then does [`push`](Self::push) read `known`.
    pub(super) const fn needs_tag(&self) -> bool {
        self.tag == 0
    }

    pub(super) const fn stamp_for_next(&self, known: u64) -> u64 {
        if self.tag == 0 { known } else { self.stamp }
    }

    /// Messages in flight.
    pub(super) fn len(&self) -> usize {
        self.inflight.len()
    }

    /// Heap bytes of its buffer (payloads excluded: they are shared `Bytes`).
    pub(super) fn heap_bytes(&self) -> usize {
        self.inflight.capacity() * core::mem::size_of::<InFlight>()
    }

    /// Payload bytes in flight.
    pub(super) const fn bytes(&self) -> usize {
        self.bytes
    }

    /// The in-flight messages, oldest first.
    pub(super) fn iter(&self) -> alloc::collections::vec_deque::Iter<'_, InFlight> {
        self.inflight.iter()
    }

    /// The incarnation its frames are stamped with (0 = not known, or no stream).
    pub(super) const fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Whether a relay refused one of its frames since its last (re)transmission.
    pub(super) const fn refused(&self) -> bool {
        self.refused
    }

    /// When its earliest-due message is due (`None` when nothing is in flight): the oldest
    /// message's deadline while deadlines joined in order (the common case, O(1)), else the
    /// least of all (O(in flight), only after an out-of-order deadline). Every message is
    /// given up exactly at its own deadline, wherever it sits (`expire` ends each due one).
    pub(super) fn earliest_deadline(&self) -> Option<Instant> {
        if self.out_of_order {
            self.inflight.iter().map(|m| m.deadline).min()
        } else {
            self.inflight.front().map(|m| m.deadline)
        }
    }

    /// Appends `m`, noting whether its deadline broke the deadline order.
    pub(super) fn append(&mut self, m: InFlight) {
        match self.inflight.back() {
            None => self.out_of_order = false,
            Some(last) if m.deadline < last.deadline => self.out_of_order = true,
            Some(_) => {}
        }
        self.inflight.push_back(m);
    }

    /// When its messages go out again unless acknowledged (`None` when nothing is in flight).
    pub(super) fn retransmit_at(&self, retransmit_after: Duration) -> Option<Instant> {
        (!self.inflight.is_empty()).then(|| self.last_tx + retransmit_after)
    }

    /// Records a message being transmitted for the first time and returns it (with its
    /// `seq`). Without an open stream one starts: a fresh tag from `rng`, stamped `known`
    /// (the target's last known incarnation, 0 = none).
    // Always inlined (a send and a flush each call it once per message): a plain
    // `#[inline]` left it a call that moved the message through once more.
    #[inline(always)]
    pub(super) fn push(
        &mut self,
        rng: &mut Rng,
        known: u64,
        message: PendingMessage,
        now: Instant,
    ) -> &InFlight {
        let PendingMessage {
            id: msg,
            msg_type,
            payload,
            deadline,
        } = message;
        if self.tag == 0 {
            self.tag = fresh_tag(rng, 0);
            self.stamp = known;
            self.last = 0;
            self.last_tx = now;
            self.refused = false;
        }
        self.last = self.last.wrapping_add(1);
        if self.last == 0 {
            self.last = 1;
        }
        let seq = make_seq(self.tag, self.last);
        if self.inflight.is_empty() {
            self.last_tx = now;
        }
        self.bytes += payload.len();
        self.append(InFlight {
            msg,
            seq,
            msg_type,
            payload,
            deadline,
            first_tx: now,
            transmissions: 1,
            open_since: now,
        });
        self.inflight.back().expect("just pushed")
    }

    /// A cumulative ack of `seq` from the target in `incarnation`: every in-flight message up
    /// to it ends `Delivered`, and a stream stamped 0 is stamped `incarnation`. `None` (nothing
    /// changed) for an ack of another tag (an abandoned stream) or from another incarnation
    /// than the stream's stamp; else how many messages it acknowledged.
    pub(super) fn on_ack<S: OutcomeSink + ?Sized>(
        &mut self,
        seq: u64,
        incarnation: u64,
        sink: &mut S,
    ) -> Option<usize> {
        if self.tag == 0
            || self.tag != seq_tag(seq)
            || (self.stamp != 0 && self.stamp != incarnation)
        {
            return None;
        }
        if incarnation != 0 {
            self.stamp = incarnation;
        }
        let upto = seq_counter(seq);
        // An ack beyond the last message sent acknowledges nothing.
        let acked = if at_or_before(upto, self.last) {
            self.inflight
                .iter()
                .take_while(|m| at_or_before(seq_counter(m.seq), upto))
                .count()
        } else {
            0
        };
        // One pass over the acknowledged prefix, oldest first.
        for m in self.inflight.drain(..acked) {
            self.bytes -= m.payload.len();
            sink.emit(m.msg, Outcome::Delivered);
        }
        if acked > 0 {
            self.probing = false;
        }
        Some(acked)
    }

    /// Whether `refusal` is about this stream (its seq carries the current tag).
    pub(super) fn is_current(&self, seq: u64) -> bool {
        self.tag != 0 && self.tag == seq_tag(seq)
    }

    /// A reset of this stream (the caller checked [`is_current`](Self::is_current)); the
    /// rules are on [`EndpointTable::on_reset`](super::EndpointTable::on_reset).
    pub(super) fn on_reset<S: OutcomeSink + ?Sized>(
        &mut self,
        refusal: Refusal,
        now: Instant,
        rng: &mut Rng,
        sink: &mut S,
    ) -> Reset {
        if let Some(m) = self.inflight.iter_mut().find(|m| m.seq == refusal.seq) {
            m.transmissions = m.transmissions.saturating_sub(1);
        }
        let age = refusal.age;
        let margin = age / 1000 + Duration::from_millis(1);
        let born_by = now.saturating_sub(age.saturating_sub(margin));
        let keep_from = self
            .inflight
            .iter()
            .position(|m| m.transmissions == 0 || born_by <= m.open_since)
            .unwrap_or(self.inflight.len());
        let ended = keep_from;
        for m in self.inflight.drain(..keep_from) {
            self.bytes -= m.payload.len();
            sink.emit(m.msg, Outcome::Unknown(FailReason::TargetRestarted));
        }
        if self.inflight.is_empty() {
            self.close();
            return Reset::Abandoned(ended);
        }
        self.tag = fresh_tag(rng, self.tag);
        self.stamp = refusal.incarnation;
        self.last = 0;
        self.refused = false;
        // A reset comes from a live incarnation: the moved messages all go.
        self.probing = false;
        for m in &mut self.inflight {
            self.last += 1;
            m.seq = make_seq(self.tag, self.last);
            m.transmissions = 0;
        }
        Reset::Restarted {
            ended,
            moved: self.inflight.len(),
        }
    }

    /// A relay refused the frame `seq`: that copy provably did not arrive, and the stream is
    /// marked refused until its next (re)transmission. `false` (nothing changed) unless `seq`
    /// is in flight.
    pub(super) fn on_refused(&mut self, seq: u64) -> bool {
        let Some(m) = self.inflight.iter_mut().find(|m| m.seq == seq) else {
            return false;
        };
        m.transmissions = m.transmissions.saturating_sub(1);
        self.refused = true;
        if !self.probing {
            // A refusal starts the doubt; one that comes while the target is known gone
            // does not hide that.
            self.probe_reason = FailReason::NoRoute;
        }
        self.probing = true;
        true
    }

    /// Whether `seq` is in flight on this stream.
    pub(super) fn holds(&self, seq: u64) -> bool {
        self.inflight.iter().any(|m| m.seq == seq)
    }

    /// Marks every in-flight message retransmitted at `now` (after writing them all out
    /// again, in order).
    pub(super) fn mark_retransmitted(&mut self, now: Instant) {
        self.last_tx = now;
        self.refused = false;
        for m in &mut self.inflight {
            if m.transmissions == 0 {
                m.open_since = now;
            }
            m.transmissions = m.transmissions.saturating_add(1);
        }
    }

    /// Marks the oldest in-flight message retransmitted at `now` (a probe: only it went out
    /// again).
    pub(super) fn mark_head_retransmitted(&mut self, now: Instant) {
        self.last_tx = now;
        self.refused = false;
        if let Some(m) = self.inflight.front_mut() {
            if m.transmissions == 0 {
                m.open_since = now;
            }
            m.transmissions = m.transmissions.saturating_add(1);
        }
    }

    /// Pushes the retransmission timer to `now + retransmit_after` without counting a
    /// transmission (nothing could be sent).
    pub(super) fn touch(&mut self, now: Instant) {
        self.last_tx = now;
    }

    /// Forgets the stream (its messages are gone): the next message starts a fresh one.
    pub(super) fn close(&mut self) {
        self.inflight.clear();
        self.tag = 0;
        self.stamp = 0;
        self.last = 0;
        self.bytes = 0;
        self.refused = false;
        // `probing` stays: the doubt about the path outlives the stream (the queue behind
        // it ends for `probe_reason`); an ack or a live incarnation clears it.
    }
}

/// A non-zero tag other than `previous`.
pub(super) fn fresh_tag(rng: &mut Rng, previous: u32) -> u32 {
    loop {
        let tag = (rng.next_u64() >> 32) as u32;
        if tag != 0 && tag != previous {
            return tag;
        }
    }
}
