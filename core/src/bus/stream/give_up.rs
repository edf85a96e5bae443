//! Giving streams up: at a message deadline, on route removal, at shutdown (the rules are in
//! the [`crate::bus::stream`] docs, "Giving up").

use alloc::vec::Vec;

use super::{InFlight, SendStreams, fresh_tag, make_seq};
use crate::{
    ids::NodeId,
    outcome::{FailReason, Outcome, OutcomeSink},
    time::Instant,
};

impl SendStreams {
    /// Gives up `dst`'s stream for `reason` (see [`crate::bus::stream`], "Giving up"): every in-flight
    /// message ends `Failed(reason)` when the oldest one provably never arrived, else
    /// `Unknown(reason)`; the stream is forgotten like [`abandon`](Self::abandon). Returns how
    /// many ended.
    pub fn give_up<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        let outcome = if self.head_undelivered(dst) {
            Outcome::Failed(reason)
        } else {
            Outcome::Unknown(reason)
        };
        self.abandon(dst, outcome, sink)
    }

    /// Gives up every stream for `reason` ([`give_up`](Self::give_up) each, by destination)
    /// and forgets them all.
    pub fn give_up_all<S: OutcomeSink + ?Sized>(&mut self, reason: FailReason, sink: &mut S) {
        let all: Vec<NodeId> = self.streams.keys().copied().collect();
        for dst in all {
            self.give_up(dst, reason, sink);
        }
    }

    /// Whether a relay refused a frame of `dst`'s stream since its last (re)transmission.
    #[must_use]
    pub fn refused(&self, dst: NodeId) -> bool {
        self.streams.get(&dst).is_some_and(|s| s.refused)
    }

    /// Whether the oldest in-flight message to `dst` has no copy that may have arrived.
    fn head_undelivered(&self, dst: NodeId) -> bool {
        self.streams
            .get(&dst)
            .and_then(|s| s.inflight.front())
            .is_some_and(|m| m.transmissions == 0)
    }

    /// Streams whose oldest in-flight message reached its deadline at `now`, given up for
    /// `NoRoute` if a relay refused one of their frames since their last (re)transmission,
    /// else for `Timeout` (see [`crate::bus::stream`], "Giving up"): a stream whose head may have arrived
    /// ends whole, `Unknown(reason)`; one whose head provably never arrived ends its due
    /// messages `Failed(reason)` and moves the rest onto a fresh stream. Returns the
    /// destinations.
    pub fn expire<S: OutcomeSink + ?Sized>(&mut self, now: Instant, sink: &mut S) -> Vec<NodeId> {
        let due: Vec<NodeId> = self
            .streams
            .iter()
            .filter(|(_, s)| s.inflight.front().is_some_and(|m| m.deadline <= now))
            .map(|(&d, _)| d)
            .collect();
        for &dst in &due {
            let reason = if self.refused(dst) {
                FailReason::NoRoute
            } else {
                FailReason::Timeout
            };
            if self.head_undelivered(dst) {
                self.expire_undelivered(dst, now, reason, sink);
            } else {
                self.give_up(dst, reason, sink);
            }
        }
        due
    }

    /// `dst`'s head is due and provably never arrived, so nothing of the stream did: the
    /// messages due end `Failed(reason)`, the others move in order onto a fresh stream (same
    /// stamp, first transmissions) — a later copy of an old seq can never be delivered, the
    /// receiver missing the head.
    fn expire_undelivered<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        now: Instant,
        reason: FailReason,
        sink: &mut S,
    ) {
        let Some(stream) = self.streams.get_mut(&dst) else {
            return;
        };
        let (ended, kept): (Vec<InFlight>, Vec<InFlight>) = core::mem::take(&mut stream.inflight)
            .into_iter()
            .partition(|m| m.deadline <= now);
        for m in &ended {
            sink.emit(m.msg, Outcome::Failed(reason));
        }
        if kept.is_empty() {
            self.streams.remove(&dst);
            return;
        }
        stream.tag = fresh_tag(&mut self.rng, stream.tag);
        stream.last = 0;
        stream.bytes = 0;
        for mut m in kept {
            stream.last += 1;
            m.seq = make_seq(stream.tag, stream.last);
            m.transmissions = 0;
            stream.bytes += m.payload.len();
            stream.inflight.push_back(m);
        }
    }
}
