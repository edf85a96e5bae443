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
    /// Gives up `dst`'s stream for `reason` (see [`crate::bus::stream`], "Giving up"): the
    /// in-flight messages before the first one that provably never arrived (every copy
    /// refused) end `Unknown(reason)`, that one and everything after it `Failed(reason)`
    /// (receivers deliver in order); the stream is forgotten like
    /// [`abandon`](Self::abandon). Returns how many ended.
    pub fn give_up<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        let Some(stream) = self.streams.remove(&dst) else {
            return 0;
        };
        let n = stream.inflight.len();
        let undelivered_from = first_undelivered(stream.inflight.iter());
        for (i, m) in stream.inflight.into_iter().enumerate() {
            let outcome = if i < undelivered_from {
                Outcome::Unknown(reason)
            } else {
                Outcome::Failed(reason)
            };
            sink.emit(m.msg, outcome);
        }
        n
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

    /// Streams whose oldest in-flight message reached its deadline at `now`, given up for
    /// `NoRoute` if a relay refused one of their frames since their last (re)transmission,
    /// else for `Timeout` (see [`crate::bus::stream`], "Giving up"): the messages before the
    /// first one that provably never arrived end `Unknown(reason)` (the receiver may hold
    /// some of them and waits for the due one for ever); from that one on, the due messages
    /// end `Failed(reason)` and the others move, in order, onto a fresh stream and keep their
    /// deadlines. Returns the destinations.
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
            self.expire_stream(dst, now, reason, sink);
        }
        due
    }

    /// `dst`'s head is due: the messages that may have arrived (before the first one that
    /// provably never did) end `Unknown(reason)`; of the others — none of which arrived —
    /// the due ones end `Failed(reason)` and the rest move in order onto a fresh stream (same
    /// stamp, first transmissions): a later copy of an old seq can never be delivered, the
    /// receiver missing the head.
    fn expire_stream<S: OutcomeSink + ?Sized>(
        &mut self,
        dst: NodeId,
        now: Instant,
        reason: FailReason,
        sink: &mut S,
    ) {
        let Some(stream) = self.streams.get_mut(&dst) else {
            return;
        };
        let undelivered_from = first_undelivered(stream.inflight.iter());
        let mut all = core::mem::take(&mut stream.inflight);
        let rest = all.split_off(undelivered_from);
        for m in &all {
            sink.emit(m.msg, Outcome::Unknown(reason));
        }
        let (ended, kept): (Vec<InFlight>, Vec<InFlight>) =
            rest.into_iter().partition(|m| m.deadline <= now);
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
