//! Endpoints: one per remote target, each owning the queue of messages waiting for a route.
//!
//! When the node accepts a `send` to a target that has no ready route yet (or whose queue is
//! not empty, to keep order), the message goes into that target's [`Endpoint`]: a
//! [`PendingQueue`] with count and byte limits and a deadline per message. When the connector
//! reports a ready route it calls [`Endpoint::flush`] (through [`EndpointTable::flush`]), which
//! hands messages to the route in order, a bounded number per call, and leaves a message the
//! route cannot take at the head of the queue — never dropped. Endpoints that lose their last
//! handle are collected after `endpoint_gc_timeout`, failing whatever is still queued.
//!
//! Every message leaves through exactly one [`Outcome`], pushed into
//! the [`OutcomeSink`] each call takes: `Delivered` when handed to a link, `Failed(Timeout)` at
//! its deadline, `Failed(QueueFull)` at the door, `Failed(TargetGone)` (or the caller's reason)
//! when its endpoint is collected or removed. libatapp instead drops a collected queue silently
//! unless a ready handle exists and leaves a removed handle's queue to time out (spec §10 item
//! 5); here both fail at once.
//!
//! The [`EndpointTable`] owns all endpoints behind generational keys, finds them by id, then
//! by name, and keeps one deadline index (message deadlines and GC deadlines) so the node can
//! answer `poll_timeout` and expire everything due in one `handle_timeout`.

mod pending;
mod table;

#[cfg(test)]
mod tests;

use alloc::string::String;

pub use pending::{PendingMessage, PendingQueue, QueueLimits, Rejected};
pub use table::{EndpointError, EndpointTable, TimeoutReport};

use crate::{
    config::Config,
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome, OutcomeSink},
    time::{Duration, Instant, earliest},
};

/// What a route did with the message [`Endpoint::flush`] offered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransmitResult {
    /// The message was handed to a ready link: it leaves the queue as `Delivered`.
    ///
    /// (With acknowledged delivery a sibling variant will move the message to an in-flight
    /// list instead; `Sent` keeps its meaning for routes that need no ack, e.g. loopback.)
    Sent,
    /// The message was transmitted and now waits for its acknowledgement outside the queue
    /// (the caller keeps it): it leaves the queue with no outcome yet.
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
    queue: PendingQueue,
    handles: u32,
    gc_deadline: Option<Instant>,
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
            queue: PendingQueue::new(limits),
            handles: 0,
            gc_deadline: Some(now + gc_timeout),
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
        &self.queue
    }

    /// Heap bytes this endpoint holds beyond `size_of::<Endpoint>()`: its name and its queue's
    /// buffers (payloads excluded — they are shared `Bytes` owned by the sender too).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.name.capacity() + self.queue.heap_bytes()
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
        earliest(self.queue.next_deadline(), self.gc_deadline)
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
        self.queue.push(PendingMessage {
            id,
            msg_type,
            payload,
            deadline: now + message_timeout,
        })
    }

    /// Offers queued messages, oldest first, to a ready route.
    ///
    /// First fails every message already due at `now` with `Failed(Timeout)` (a message is
    /// never transmitted at or after its deadline). Then, until `budget` messages were sent or
    /// the queue is empty, calls `transmit` with the head: on [`TransmitResult::Sent`] it is
    /// popped and reported `Delivered`; on [`TransmitResult::Blocked`] it stays at the head and
    /// the call stops. Expired messages do not count against the budget.
    ///
    /// Call when a route to the target becomes ready, and again while the result says
    /// [`FlushStop::Budget`]. Afterwards re-read [`next_deadline`](Self::next_deadline).
    pub fn flush<T, S>(
        &mut self,
        now: Instant,
        budget: usize,
        mut transmit: T,
        sink: &mut S,
    ) -> FlushProgress
    where
        T: FnMut(&PendingMessage) -> TransmitResult,
        S: OutcomeSink + ?Sized,
    {
        let expired = self.queue.expire(now, sink);
        let mut sent = 0;
        let stop = loop {
            let Some(head) = self.queue.front() else {
                break FlushStop::Drained;
            };
            if sent == budget {
                break FlushStop::Budget;
            }
            match transmit(head) {
                TransmitResult::Sent => {
                    let message = self.queue.pop_front().expect("head was just transmitted");
                    sink.emit(message.id, Outcome::Delivered);
                    sent += 1;
                }
                TransmitResult::InFlight => {
                    self.queue.pop_front().expect("head was just transmitted");
                    sent += 1;
                }
                TransmitResult::Blocked => break FlushStop::Blocked,
            }
        };
        FlushProgress {
            sent,
            expired,
            stop,
        }
    }

    /// Fails every message due at `now` with `Failed(Timeout)`; returns how many.
    pub fn expire<S: OutcomeSink + ?Sized>(&mut self, now: Instant, sink: &mut S) -> usize {
        self.queue.expire(now, sink)
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
        self.queue.drain_with(reason, sink)
    }

    fn set_limits(&mut self, limits: QueueLimits) {
        self.queue.set_limits(limits);
    }
}
