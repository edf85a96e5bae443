//! The outboxes' reactions to what the other machines report: what the link layer hears
//! about our streams — acks, resets, a relay's refusal, a refused link — each returning what
//! the composition must apply to the other machines (the connector's route, a flush); and
//! what the routes do — ready (a flush), removed (giving up), a due retransmission on
//! whatever link the route has now. The rules are in docs/ARCHITECTURE.md §9.

use super::{EndpointTable, Refusal, Reset};
use crate::{
    endpoint::OutboxSink,
    ids::{LinkId, NodeId},
    outcome::{FailReason, OutcomeSink},
    time::{Duration, Instant},
    wire::{self, UnreachableReason},
};

/// What the composition does after an outbox took an `Ack`
/// ([`EndpointTable::react_to_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckFollowup {
    /// Nothing more.
    Nothing,
    /// Flush the target's outbox: a reset moved messages onto a fresh stream.
    Flush,
    /// The probe got through: the connector hears the path is proven, and the rest of the
    /// window and the queue follow now (a flush).
    PathProven,
}

impl EndpointTable {
    /// An `Ack` of one of our streams: an acknowledgement (messages end `Delivered`,
    /// [`on_ack`](Self::on_ack)) or a reset (the stream is void: the messages no previous
    /// incarnation can have received move to a fresh stream and go out again, the ones
    /// before them end `Unknown(TargetRestarted)`; [`on_reset`](Self::on_reset)).
    pub fn react_to_ack<S: OutcomeSink + ?Sized>(
        &mut self,
        ack: &wire::Ack,
        now: Instant,
        sink: &mut S,
    ) -> AckFollowup {
        let Some(age) = ack.reset else {
            let probing = self.probing(ack.dst);
            self.on_ack(ack.dst, ack.seq, ack.dst_incarnation, sink);
            return if probing && !self.probing(ack.dst) {
                AckFollowup::PathProven
            } else {
                AckFollowup::Nothing
            };
        };
        let refusal = Refusal {
            seq: ack.seq,
            incarnation: ack.dst_incarnation,
            age: Duration::from_nanos(age),
        };
        match self.on_reset(ack.dst, refusal, now, sink) {
            Reset::Ignored => AckFollowup::Nothing,
            _ => AckFollowup::Flush,
        }
    }

    /// A relay could not route our message `u.seq` to `u.dst`; `via` is the hop it came
    /// back from, `ready_hop` the hop the target's route is ready through now. Ignored unless
    /// the message is in flight on the current stream. Returns whether the route must hear
    /// of the failure (the connector marks it unready and schedules its retry by its
    /// backoff); then [`after_route_failed`](Self::after_route_failed) says what follows.
    ///
    /// A refusal for lack of a route right now (`NoRoute`, `UnknownTarget`, `Overloaded`) is
    /// transient: the messages stay in flight (that copy of the refused one provably did not
    /// arrive — [`on_refused`](Self::on_refused)). If the route still goes through `via` it
    /// fails; a route that is already unready, or moved to another hop, is left alone (a
    /// window of frames brings one `Unreachable` each: only the first acts). When the route
    /// is ready again the stream goes out again, in order. The messages end by the usual
    /// means: an ack, their deadline (`NoRoute` instead of `Timeout` if the last thing that
    /// happened to the stream was a refusal), the route's removal, shutdown.
    ///
    /// `HopLimit` (a routing loop) is not transient: the route fails wherever it goes.
    pub fn react_to_refusal(
        &mut self,
        u: &wire::Unreachable,
        via: NodeId,
        ready_hop: Option<NodeId>,
    ) -> bool {
        if !self.holds(u.dst, u.seq) {
            return false;
        }
        self.on_refused(u.dst, u.seq);
        u.reason == UnreachableReason::HopLimit || ready_hop == Some(via)
    }

    /// After the route to `u.dst` heard of the failure
    /// [`react_to_refusal`](Self::react_to_refusal) reported, it is ready through `ready_hop`
    /// (if at all).
    /// Returns whether the stream goes out again now (a flush): another hop is ready at once.
    /// Otherwise, after a `HopLimit`, the in-flight messages end now — `Failed(NoRoute)` from
    /// the first one every copy of which was refused, `Unknown(NoRoute)` before it.
    pub fn after_route_failed<S: OutcomeSink + ?Sized>(
        &mut self,
        u: &wire::Unreachable,
        via: NodeId,
        ready_hop: Option<NodeId>,
        sink: &mut S,
    ) -> bool {
        if ready_hop.is_some_and(|hop| hop != via) {
            return true;
        }
        if u.reason == UnreachableReason::HopLimit {
            self.give_up_unacked(u.dst, FailReason::NoRoute, sink);
        }
        false
    }

    /// The link to `peer` was refused for `reason` (`None`: a link to it is up again):
    /// messages to it, and to the `dependents` routed through it, that reach their deadlines
    /// end with that reason instead of `Timeout`.
    pub fn note_refusal(
        &mut self,
        peer: NodeId,
        dependents: impl IntoIterator<Item = NodeId>,
        reason: Option<FailReason>,
    ) {
        self.set_deadline_reason(peer, reason);
        for dependent in dependents {
            self.set_deadline_reason(dependent, reason);
        }
    }
}

impl EndpointTable {
    /// On a ready route: retransmits `target`'s unacknowledged messages, then hands its
    /// queued messages to the route, in order, at most `budget` of them (each stays in
    /// flight until acknowledged); the rest continue at the next timeout. `ready_link` is the
    /// up link of `target`'s route, asked only when something waits; without one an
    /// unfinished flush is forgotten.
    pub fn flush_ready<S: OutboxSink + ?Sized>(
        &mut self,
        target: NodeId,
        ready_link: impl FnOnce() -> Option<LinkId>,
        (now, budget): (Instant, usize),
        sink: &mut S,
    ) {
        match self.has_outgoing(target).then(ready_link).flatten() {
            Some(link) => self.flush_outbox(target, link, now, budget, sink),
            None => self.cancel_flush(target),
        }
    }

    /// The retransmissions due at `now`: on the up link `ready_link` names for the target,
    /// else (its route is not ready) pushed back without counting a transmission
    /// ([`touch`](Self::touch)).
    pub fn retransmit_due<S: OutboxSink + ?Sized>(
        &mut self,
        now: Instant,
        ready_link: impl Fn(NodeId) -> Option<LinkId>,
        sink: &mut S,
    ) {
        for dst in self.due_retransmits(now) {
            match ready_link(dst) {
                Some(link) => self.retransmit(dst, link, now, sink),
                None => self.touch(dst, now),
            }
        }
    }

    /// A light client `id` left (its record was deleted): its endpoint goes at once, what
    /// waited for it ending `TargetGone` — nothing redials a client.
    pub fn client_left<S: OutcomeSink + ?Sized>(&mut self, id: NodeId, sink: &mut S) {
        if let Some(key) = self.find_by_id(id) {
            self.remove(key, FailReason::TargetGone, sink);
        }
    }

    /// The route record serving `target`'s endpoint is gone: its outbox gives up (queued
    /// messages `Failed(reason)`, unacknowledged ones `Unknown(reason)` — `Failed(reason)`
    /// from the first that provably never arrived), and the endpoint releases its handle (it
    /// is collected after the GC timeout).
    pub fn route_removed<S: OutcomeSink + ?Sized>(
        &mut self,
        target: NodeId,
        reason: FailReason,
        now: Instant,
        sink: &mut S,
    ) {
        self.give_up(target, reason, sink);
        if let Some(key) = self.find_by_id(target) {
            self.detach_handle(key, now);
        }
    }
}
