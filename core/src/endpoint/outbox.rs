//! One target's outbox: every message accepted for it, from queued through in flight to
//! acknowledged or given up, with the one encoder of our own `Data` frames.
//!
//! An [`Outbox`] has two halves: the [`PendingQueue`] (accepted, not yet transmitted) and the
//! in-flight stream ([`inflight`](super::inflight): transmitted, not yet acknowledged). The
//! count and byte limits hold over both halves together; a message moves from the queue to
//! the stream when it is transmitted, in order, and never back. The
//! [`EndpointTable`](super::EndpointTable) drives outboxes (it owns the sender's identity,
//! the tag generator, the incarnations learned per target and the deadline queues); the
//! frames an outbox writes go to an [`OutboxSink`] with the outcomes.

use alloc::vec::Vec;

use super::{
    FlushStop, PendingMessage, PendingQueue, QueueLimits, TransmitResult,
    inflight::{InFlight, SendStream},
};
use crate::{
    ids::{LinkId, NodeId},
    outcome::{MessageOutcome, OutcomeSink},
    rng::Rng,
    time::Instant,
    wire,
};

/// Where an outbox puts what it produces: message outcomes and `Data` frames for links.
pub trait OutboxSink: OutcomeSink {
    /// `data` must be written to `link` as a `Data` frame, after everything written on it
    /// before. The sink encodes it (the node appends consecutive frames for one link to one
    /// buffer: one allocation per batch, not per message).
    fn transmit_data(&mut self, link: LinkId, data: &wire::Data<'_>);
}

/// Where one call's `Data` frames go: from us to the target over one link.
pub(super) struct DataRoute {
    /// This node (the frames' `src`).
    pub(super) src: NodeId,
    /// The target (the frames' `dst`).
    pub(super) dst: NodeId,
    /// The link carrying them.
    pub(super) link: LinkId,
}

impl DataRoute {
    /// Encodes our own `Data` frame of `message` (stamped `stamp`, hop count 0, flagged
    /// `retransmit`) and hands it to `sink` for the link. The one place our `Data` frames
    /// are built.
    pub(super) fn transmit<S: OutboxSink + ?Sized>(
        &mut self,
        sink: &mut S,
        stamp: u64,
        message: &InFlight,
        retransmit: bool,
    ) {
        let data = wire::Data {
            src: self.src,
            dst: self.dst,
            seq: message.seq,
            dst_incarnation: stamp,
            retransmit,
            msg_type: message.msg_type,
            hop_count: 0,
            payload: &message.payload,
        };
        sink.transmit_data(self.link, &data);
    }
}

/// The messages accepted for one target: queued, then in flight until acknowledged or given
/// up. The count and byte limits hold over both halves together; the
/// [`EndpointTable`](super::EndpointTable) drives it.
#[derive(Clone, Debug)]
pub struct Outbox {
    pub(super) queue: PendingQueue,
    pub(super) stream: SendStream,
}

impl Outbox {
    /// An empty outbox whose limits are `limits`.
    #[must_use]
    pub const fn new(limits: QueueLimits) -> Outbox {
        Outbox {
            queue: PendingQueue::new(limits),
            stream: SendStream::new(),
        }
    }

    /// The queued messages (accepted, not yet transmitted).
    #[must_use]
    pub const fn queue(&self) -> &PendingQueue {
        &self.queue
    }

    /// The messages in flight (transmitted, not yet acknowledged), oldest first.
    pub fn unacked(&self) -> impl ExactSizeIterator<Item = &InFlight> + '_ {
        self.stream.iter()
    }

    /// Payload bytes in flight.
    #[must_use]
    pub const fn unacked_bytes(&self) -> usize {
        self.stream.bytes()
    }

    /// The target incarnation the in-flight stream is stamped with (0 = not known, or no
    /// stream).
    #[must_use]
    pub const fn stamp(&self) -> u64 {
        self.stream.stamp()
    }

    /// Whether the limits take one more message of `payload_len` bytes, counting the queued
    /// and the in-flight messages together.
    #[must_use]
    pub fn admits(&self, payload_len: usize) -> bool {
        self.queue.limits().admits(
            self.queue.len() + self.stream.len(),
            self.queue.bytes() + self.stream.bytes(),
            payload_len,
        )
    }

    /// Whether nothing is queued or in flight.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.stream.len() == 0
    }

    /// Transmits a message that goes straight out (nothing queued, route ready): it joins the
    /// in-flight stream — started with a fresh tag from `rng`, stamped `known`, if there is
    /// none — and its frame goes to `sink`.
    #[inline]
    pub(super) fn transmit_new<S: OutboxSink + ?Sized>(
        &mut self,
        route: &mut DataRoute,
        sink: &mut S,
        rng: &mut Rng,
        known: u64,
        message: PendingMessage,
        now: Instant,
    ) {
        let stamp = self.stream.stamp_for_next(known);
        let sent = self.stream.push(rng, known, message, now);
        route.transmit(sink, stamp, sent, false);
    }

    /// Writes every in-flight message out again on `route`, oldest first, with its original
    /// seq (the receiver drops what it already has), and counts the transmissions — only the
    /// oldest while the stream probes a doubtful path. `false` when nothing is in flight.
    pub(super) fn retransmit<S: OutboxSink + ?Sized>(
        &mut self,
        route: &mut DataRoute,
        sink: &mut S,
        now: Instant,
    ) -> bool {
        if self.stream.len() == 0 {
            return false;
        }
        let stamp = self.stream.stamp();
        if self.stream.probing {
            // The path is in doubt: only the oldest message goes out (a probe), at most once
            // per instant.
            if let Some(m) = self.stream.iter().next() {
                if m.transmissions > 0 && self.stream.last_tx == now {
                    return true;
                }
                route.transmit(sink, stamp, m, m.transmissions > 0);
            }
            self.stream.mark_head_retransmitted(now);
            return true;
        }
        for m in self.stream.iter() {
            route.transmit(sink, stamp, m, m.transmissions > 0);
        }
        self.stream.mark_retransmitted(now);
        true
    }

    /// Hands queued messages to `route` in order, at most `budget` of them, each joining the
    /// in-flight stream. Queued messages already due at `now` end `Failed(Timeout)` first
    /// (their outcomes follow the frames). `None` when nothing was queued, or while the
    /// stream probes a doubtful path with its probe out (the queue waits for its ack); with
    /// none out, one message goes as the probe.
    pub(super) fn flush_queue<S: OutboxSink + ?Sized>(
        &mut self,
        route: &mut DataRoute,
        sink: &mut S,
        rng: &mut Rng,
        known: u64,
        now: Instant,
        budget: usize,
    ) -> Option<FlushStop> {
        if self.queue.is_empty() || (self.stream.probing && self.stream.len() > 0) {
            return None;
        }
        // Probing with nothing in flight: one message goes, as the probe.
        let budget = if self.stream.probing {
            budget.min(1)
        } else {
            budget
        };
        let Outbox { queue, stream } = self;
        let mut expired: Vec<MessageOutcome> = Vec::new();
        let progress = queue.flush(
            now,
            budget,
            |m| {
                let stamp = stream.stamp_for_next(known);
                let sent = stream.push(rng, known, m.clone(), now);
                route.transmit(sink, stamp, sent, false);
                TransmitResult::InFlight
            },
            &mut expired,
        );
        for o in expired {
            sink.emit(o.msg, o.outcome);
        }
        Some(progress.stop)
    }
}
