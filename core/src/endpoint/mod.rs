//! Endpoints: one per remote target, each with its outbox — every message accepted for the
//! target, queued, then in flight, until it is acknowledged or given up.
//!
//! When the node accepts a `send`, the target's [`Endpoint`] takes it into its [`Outbox`]
//! ([`EndpointTable::send`]): over the count or byte limit (queued and in-flight messages
//! together) it ends at once `Failed(QueueFull)`; with a ready route and nothing queued it is
//! transmitted at once; otherwise it waits in the [`PendingQueue`] (a deadline per message)
//! until the route is ready, when [`EndpointTable::flush_outbox`] hands queued messages to
//! the link in order, a bounded number per call, unfinished flushes continuing at the next
//! timeout. A transmitted message stays in flight ([`inflight`]) until the target's
//! cumulative ack; in-flight messages are retransmitted in order when the route is ready
//! again or the oldest waited too long for its ack, and given up by the rules in
//! [`inflight`] (`Unknown(reason)` for what may have arrived, `Failed(reason)` for what
//! provably did not). Our own `Data` frames are encoded in one place, the outbox's
//! transmit, into one reused buffer. Endpoints that lose their last handle are collected
//! after `endpoint_gc_timeout`, failing whatever is still queued.
//!
//! Every message leaves through exactly one [`Outcome`](crate::outcome::Outcome), pushed into the
//! [`OutcomeSink`] (or [`OutboxSink`], which also takes frames) each call takes: `Delivered` when
//! acknowledged (or, for a bare queue flush, when handed to a link), `Failed(Timeout)` at its
//! deadline while queued, `Failed(QueueFull)` at the door, `Failed(TargetGone)` (or the caller's
//! reason) when its endpoint is collected or removed. libatapp instead drops a collected queue
//! silently unless a ready handle exists and leaves a removed handle's queue to time out (spec §10
//! item 5); here both fail at once.
//!
//! The [`EndpointTable`] owns all endpoints behind generational keys, finds them by id, then
//! by name, and keeps every deadline of every outbox — queued messages, GC, the oldest
//! in-flight message, retransmissions, unfinished flushes — in keyed
//! [`TimerQueue`](crate::timer::TimerQueue)s, so the node answers `poll_timeout` in O(1) and
//! handles everything due in one `handle_timeout`.

mod delivery;
mod give_up;
pub mod inflight;
mod outbox;
mod pending;
mod react;
mod table;

#[cfg(test)]
mod tests;

use alloc::string::String;

pub use inflight::{InFlight, Refusal, Reset};
pub use outbox::{Outbox, OutboxSink};
pub use pending::{PendingMessage, PendingQueue, QueueLimits, Rejected};
pub use react::AckFollowup;
pub use table::{EndpointError, EndpointTable, TimeoutReport};

use crate::{
    config::Config,
    ids::{MsgId, NodeId},
    outcome::{FailReason, OutcomeSink},
    time::{Duration, Instant, earliest},
};

/// What a route did with the message [`Endpoint::flush`] offered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransmitResult {
    /// The message was handed to a ready link: it leaves the queue as `Delivered` (for
    /// routes that need no ack, e.g. loopback).
    Sent,
    /// The message was transmitted and now waits for its acknowledgement outside the queue
    /// (in the outbox's in-flight stream): it leaves the queue with no outcome yet.
    InFlight,
    /// The route cannot take it now (link full, or found dead): the message stays at the head
    /// of the queue and the flush stops. It goes out on a later flush or fails at its deadline.
    Blocked,
}

/// Why a flush call stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushStop {
    /// The queue is empty.
    Drained,
    /// The per-call budget was spent and messages remain: call `flush` again soon (next
    /// loop iteration), without waiting for a route event.
    Budget,
    /// The route refused a message: wait for the route to become ready/writable again.
    Blocked,
}

/// What one [`Endpoint::flush`] call did. Outcomes went to the sink; this is the summary.
///
/// Non-exhaustive so acknowledged delivery can add counts (e.g. messages now in flight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FlushProgress {
    /// Messages handed to the route (each reported `Delivered`).
    pub sent: usize,
    /// Messages found expired and failed with `Timeout` instead of being sent.
    pub expired: usize,
    /// Why the call stopped.
    pub stop: FlushStop,
}

impl FlushProgress {
    /// Whether messages remain queued after this call.
    #[must_use]
    pub fn more_pending(&self) -> bool {
        self.stop != FlushStop::Drained
    }
}

/// The per-endpoint settings an [`EndpointTable`] applies, taken from [`Config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointSettings {
    /// Queue limits (`send_buffer_number`, `send_buffer_size`).
    pub limits: QueueLimits,
    /// Deadline of each message, counted from acceptance (`message_timeout`).
    pub message_timeout: Duration,
    /// Life of an endpoint without handles (`endpoint_gc_timeout`; zero = immediately due).
    pub gc_timeout: Duration,
}

impl EndpointSettings {
    /// The endpoint part of a node config.
    #[must_use]
    pub fn from_config(config: &Config) -> EndpointSettings {
        EndpointSettings {
            limits: QueueLimits {
                max_messages: config.send_buffer_number,
                max_bytes: config.send_buffer_size,
            },
            message_timeout: config.message_timeout,
            gc_timeout: config.endpoint_gc_timeout,
        }
    }
}

impl Default for EndpointSettings {
    fn default() -> EndpointSettings {
        EndpointSettings::from_config(&Config::default())
    }
}

/// One remote target: its identity, its pending queue and its GC bookkeeping.
///
/// An endpoint knows nothing of links or routes. The connector tells it how many *handles*
/// (routes or connection attempts) serve it — [`attach_handle`](Endpoint::attach_handle),
/// [`detach_handle`](Endpoint::detach_handle) — and offers it a transmit function when a route
/// is ready ([`flush`](Endpoint::flush)). An endpoint with no handles has a GC deadline; at it,
/// the owner [`collect`](Endpoint::collect)s it.
#[derive(Clone, Debug)]
pub struct Endpoint {
    id: NodeId,
    name: String,
    outbox: Outbox,
    handles: u32,
    gc_deadline: Option<Instant>,
    /// What a message that reaches its deadline ends with: `Timeout`, or why the target
    /// cannot be reached (its link refused: [`EndpointTable::set_deadline_reason`]).
    ///
    /// [`EndpointTable::set_deadline_reason`]: crate::endpoint::EndpointTable::set_deadline_reason
    pub(crate) deadline_reason: FailReason,
}

impl Endpoint {
    /// A new endpoint with no handles, so its GC deadline is `now + gc_timeout` until the
    /// first [`attach_handle`](Endpoint::attach_handle).
    #[must_use]
    pub fn new(
        id: NodeId,
        name: String,
        limits: QueueLimits,
        now: Instant,
        gc_timeout: Duration,
    ) -> Endpoint {
        Endpoint {
            id,
            name,
            outbox: Outbox::new(limits),
            handles: 0,
            gc_deadline: Some(now + gc_timeout),
            deadline_reason: FailReason::Timeout,
        }
    }

    /// The target's node id ([`NodeId::NONE`] while only its name is known).
    #[must_use]
    pub const fn id(&self) -> NodeId {
        self.id
    }

    /// The target's name (empty while only its id is known).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The pending queue (read-only; change it through the endpoint).
    #[must_use]
    pub const fn queue(&self) -> &PendingQueue {
        &self.outbox.queue
    }

    /// The outbox: the pending queue and the messages in flight (read-only; change it
    /// through the table).
    #[must_use]
    pub const fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// Heap bytes this endpoint holds beyond `size_of::<Endpoint>()`: its name and its queue's
    /// buffers (payloads excluded — they are shared `Bytes` owned by the sender too).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.name.capacity() + self.outbox.queue.heap_bytes() + self.outbox.stream.heap_bytes()
    }

    /// How many handles currently serve this endpoint.
    #[must_use]
    pub const fn handles(&self) -> u32 {
        self.handles
    }

    /// When this endpoint is due for collection; `None` while it has a handle.
    #[must_use]
    pub const fn gc_deadline(&self) -> Option<Instant> {
        self.gc_deadline
    }

    /// The earliest of its message deadlines and its GC deadline.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        earliest(self.outbox.queue.next_deadline(), self.gc_deadline)
    }

    /// Queues a message with deadline `now + message_timeout`.
    ///
    /// Call when a send to this target cannot go out directly (no ready route, or messages
    /// already queued — order is kept). Afterwards re-read [`next_deadline`](Self::next_deadline).
    ///
    /// # Errors
    ///
    /// [`Rejected`] (`QueueFull`, with the message) when a limit would be exceeded; report
    /// `Failed(QueueFull)` for it.
    pub fn push(
        &mut self,
        id: MsgId,
        msg_type: u32,
        payload: bytes::Bytes,
        now: Instant,
        message_timeout: Duration,
    ) -> Result<(), Rejected> {
        self.outbox.queue.push(PendingMessage {
            id,
            msg_type,
            payload,
            deadline: now + message_timeout,
        })
    }

    /// Offers queued messages, oldest first, to a ready route: [`PendingQueue::flush`] on
    /// this endpoint's queue.
    ///
    /// Call when a route to the target becomes ready, and again while the result says
    /// [`FlushStop::Budget`]. Afterwards re-read [`next_deadline`](Self::next_deadline).
    pub fn flush<T, S>(
        &mut self,
        now: Instant,
        budget: usize,
        transmit: T,
        sink: &mut S,
    ) -> FlushProgress
    where
        T: FnMut(&PendingMessage) -> TransmitResult,
        S: OutcomeSink + ?Sized,
    {
        self.outbox.queue.flush(now, budget, transmit, sink)
    }

    /// Fails every message due at `now` with `Failed(Timeout)` — or the reason the target is
    /// known to refuse us, or why its path is in doubt while the stream probes it; returns
    /// how many.
    pub fn expire<S: OutcomeSink + ?Sized>(&mut self, now: Instant, sink: &mut S) -> usize {
        let stream = &self.outbox.stream;
        let reason = if self.deadline_reason == FailReason::Timeout && stream.probing {
            // Held back behind a probe of a doubtful path: say why the path is in doubt.
            stream.probe_reason
        } else {
            self.deadline_reason
        };
        self.outbox.queue.expire_for(now, reason, sink)
    }

    /// Records one more handle serving this endpoint; cancels any pending GC.
    ///
    /// Call when the connector binds a route or connection attempt to the target.
    pub fn attach_handle(&mut self) {
        self.handles = self.handles.saturating_add(1);
        self.gc_deadline = None;
    }

    /// Records that a handle stopped serving this endpoint. When it was the last one, the GC
    /// deadline becomes `now + gc_timeout` and `true` is returned. A detach without a matching
    /// attach is ignored (returns `false`).
    pub fn detach_handle(&mut self, now: Instant, gc_timeout: Duration) -> bool {
        if self.handles == 0 {
            return false;
        }
        self.handles -= 1;
        if self.handles == 0 {
            self.gc_deadline = Some(now + gc_timeout);
            true
        } else {
            false
        }
    }

    /// Whether the endpoint has no handles and its GC deadline is `<= now`.
    #[must_use]
    pub fn gc_due(&self, now: Instant) -> bool {
        self.handles == 0 && self.gc_deadline.is_some_and(|deadline| deadline <= now)
    }

    /// Fails everything still queued with `Failed(reason)` (FIFO order) and returns how many.
    ///
    /// Call when the endpoint is collected (`TargetGone`), its target removed (the caller's
    /// reason) or the node shuts down (`Shutdown`).
    pub fn collect<S: OutcomeSink + ?Sized>(&mut self, reason: FailReason, sink: &mut S) -> usize {
        self.outbox.queue.drain_with(reason, sink)
    }

    fn set_limits(&mut self, limits: QueueLimits) {
        self.outbox.queue.set_limits(limits);
    }
}
