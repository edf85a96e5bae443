//! Giving a stream's in-flight messages up: at a message deadline, on route removal, at
//! shutdown (the rules are in the [`inflight`](super::inflight) docs, "Giving up").

use alloc::vec::Vec;

use super::inflight::{InFlight, SendStream, fresh_tag};
use crate::{
    bus::stream::make_seq,
    outcome::{FailReason, Outcome, OutcomeSink},
    rng::Rng,
    time::Instant,
};

impl SendStream {
    /// Gives the stream up for `reason`: the in-flight messages before the first one that
    /// provably never arrived (every copy refused) end `Unknown(reason)`, that one and
    /// everything after it `Failed(reason)` (receivers deliver in order); the stream is
    /// closed ([`close`](Self::close)). Returns how many ended.
    pub(super) fn give_up<S: OutcomeSink + ?Sized>(
        &mut self,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        let n = self.inflight.len();
        let undelivered_from = first_undelivered(self.inflight.iter());
        for (i, m) in self.inflight.drain(..).enumerate() {
            let outcome = if i < undelivered_from {
                Outcome::Unknown(reason)
            } else {
                Outcome::Failed(reason)
            };
            sink.emit(m.msg, outcome);
        }
        self.close();
        n
    }

    /// The oldest message is due at `now`: the stream is given up for `NoRoute` if a relay
    /// refused one of its frames since its last (re)transmission, else for `timeout_reason`
    /// (`Timeout`, or why the target refuses our links). The messages that may have arrived
    /// (before the first one that provably never did) end `Unknown(reason)` if they are due,
    /// `Unknown(StreamAbandoned)` if not (never `Timeout` before their own deadline) — the
    /// receiver may hold some of them and waits for the due one for ever; of the others — none of which arrived — the due ones end `Failed(reason)` and the
    /// rest move in order onto a fresh stream (same stamp, first transmissions) and keep their
    /// deadlines: a later copy of an old seq can never be delivered, the receiver missing the
    /// head.
    pub(super) fn expire<S: OutcomeSink + ?Sized>(
        &mut self,
        now: Instant,
        timeout_reason: FailReason,
        rng: &mut Rng,
        sink: &mut S,
    ) {
        let reason = if self.probing && timeout_reason == FailReason::Timeout {
            self.probe_reason
        } else if self.refused {
            FailReason::NoRoute
        } else {
            timeout_reason
        };
        let undelivered_from = first_undelivered(self.inflight.iter());
        let mut all = core::mem::take(&mut self.inflight);
        let rest = all.split_off(undelivered_from);
        for m in &all {
            // Only the due ones end for the reason; the rest end because they are behind
            // them, before their own deadline.
            let why = if m.deadline <= now {
                reason
            } else {
                FailReason::StreamAbandoned
            };
            sink.emit(m.msg, Outcome::Unknown(why));
        }
        let (ended, kept): (Vec<InFlight>, Vec<InFlight>) =
            rest.into_iter().partition(|m| m.deadline <= now);
        for m in &ended {
            sink.emit(m.msg, Outcome::Failed(reason));
        }
        // Keep the emptied buffer's capacity for the moved messages.
        all.clear();
        let stamp = self.stamp;
        self.restart_with(all, kept, stamp, rng);
    }

    /// The incarnation the stream is aimed at is dead (evidence of death; `reason` is
    /// `TargetGone` or `TargetRestarted`): the messages that may have reached it — before the
    /// first one every copy of which was refused — end `Unknown(reason)` at once; that one and
    /// everything after it, none of which arrived, move in order onto a fresh stream stamped
    /// `next_stamp` (the new incarnation, or 0 while none is known) as first transmissions and
    /// keep their deadlines: they wait for a live incarnation. Returns (ended, moved).
    pub(super) fn die<S: OutcomeSink + ?Sized>(
        &mut self,
        reason: FailReason,
        next_stamp: u64,
        rng: &mut Rng,
        sink: &mut S,
    ) -> (usize, usize) {
        let undelivered_from = first_undelivered(self.inflight.iter());
        let mut all = core::mem::take(&mut self.inflight);
        let rest = all.split_off(undelivered_from);
        for m in &all {
            sink.emit(m.msg, Outcome::Unknown(reason));
        }
        let (ended, moved) = (all.len(), rest.len());
        all.clear();
        self.restart_with(all, rest.into_iter().collect(), next_stamp, rng);
        // A gone target's survivors probe (one at a time) until a live incarnation acks; a
        // restarted one is alive: they all go.
        self.probing = reason == FailReason::TargetGone;
        self.probe_reason = reason;
        (ended, moved)
    }

    /// Replaces the stream by a fresh one (new tag, `stamp`) holding `kept` in order as first
    /// transmissions, in `buffer` (emptied, kept for its capacity); closes it if `kept` is
    /// empty.
    fn restart_with(
        &mut self,
        buffer: alloc::collections::VecDeque<InFlight>,
        kept: Vec<InFlight>,
        stamp: u64,
        rng: &mut Rng,
    ) {
        if kept.is_empty() {
            self.close();
            return;
        }
        self.inflight = buffer;
        self.tag = fresh_tag(rng, self.tag);
        self.stamp = stamp;
        self.last = 0;
        self.bytes = 0;
        for mut m in kept {
            self.last += 1;
            m.seq = make_seq(self.tag, self.last);
            m.transmissions = 0;
            self.bytes += m.payload.len();
            self.append(m);
        }
    }
}

/// The index of the first message, in stream order, whose every copy was refused (it and
/// everything after it provably never arrived), or the count if there is none.
fn first_undelivered<'a>(inflight: impl Iterator<Item = &'a InFlight>) -> usize {
    let mut n = 0;
    for m in inflight {
        if m.transmissions == 0 {
            return n;
        }
        n += 1;
    }
    n
}
