//! The pending queue: messages accepted for one target and not yet handed to a link.

use alloc::collections::VecDeque;

use bytes::Bytes;

use super::{FlushProgress, FlushStop, TransmitResult};
use crate::{
    ids::MsgId,
    outcome::{FailReason, Outcome, OutcomeSink},
    time::Instant,
};

/// Queues that drain empty keep at most this many slots of capacity (`VecDeque`'s smallest
/// allocation, 4 × 56 bytes): enough that a push-one/flush-one pattern does not allocate per
/// message, while an endpoint that saw one burst does not hold its peak allocation for ever.
const RETAINED_CAPACITY: usize = 4;

/// A message waiting for a route: accepted, not yet transmitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingMessage {
    /// The id its outcome will carry.
    pub id: MsgId,
    /// Application message type, carried to the receiver unchanged.
    pub msg_type: u32,
    /// The payload; cloning is a reference-count increment.
    pub payload: Bytes,
    /// When it is given up with `Failed(Timeout)` (expired at exactly this instant).
    pub deadline: Instant,
}

/// Count and byte limits of one pending queue. 0 means unlimited (libatapp's
/// `send_buffer_number` / `send_buffer_size` semantics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueLimits {
    /// Most messages queued at once; 0 = unlimited.
    pub max_messages: usize,
    /// Most payload bytes queued at once; 0 = unlimited.
    pub max_bytes: usize,
}

impl QueueLimits {
    /// No limits at all.
    pub const UNLIMITED: QueueLimits = QueueLimits {
        max_messages: 0,
        max_bytes: 0,
    };

    /// Whether a queue holding `len` messages and `bytes` bytes may take one more message of
    /// `payload_len` bytes.
    #[must_use]
    pub const fn admits(&self, len: usize, bytes: usize, payload_len: usize) -> bool {
        let count_ok = self.max_messages == 0 || len < self.max_messages;
        let bytes_ok = self.max_bytes == 0
            || match bytes.checked_add(payload_len) {
                Some(total) => total <= self.max_bytes,
                None => false,
            };
        count_ok && bytes_ok
    }
}

/// A message that was not accepted, handed back so the caller can report its outcome
/// (`Outcome::Failed(reason)`) — the queue never drops a message silently.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejected {
    /// Why: [`FailReason::QueueFull`] from a queue, [`FailReason::TargetGone`] for a stale
    /// endpoint key.
    pub reason: FailReason,
    /// The message, untouched.
    pub message: PendingMessage,
}

/// FIFO of [`PendingMessage`]s with count and byte limits and per-message deadlines.
///
/// **Expiry order.** Deadlines are normally `accept time + message_timeout`, so FIFO order is
/// deadline order and expiring means popping from the front: O(expired). If deadlines arrive
/// out of order (the timeout changed at runtime, or a caller picked its own deadline), a later
/// message can expire before an earlier one; it must still be failed exactly at its deadline,
/// even from the middle of the queue. For that case the queue keeps a *min-window*: the
/// messages that are each the earliest deadline of the queue from them to the back, in
/// queue order (a monotonic deque, amortised O(1) per push and pop). Its front is the exact
/// earliest deadline. The window exists only while the queue is out of order; it is built on
/// the first out-of-order push and dropped as soon as every queued message is in it again
/// (the queue is back in deadline order). Expiring out of order scans the queue once, failing
/// every due message in FIFO order.
///
/// **Accounting.** `len` and `bytes` always equal the number and total payload length of the
/// queued messages; a push is admitted only if both stay within the limits afterwards.
#[derive(Clone, Debug, Default)]
pub struct PendingQueue {
    messages: VecDeque<PendingMessage>,
    bytes: usize,
    limits: QueueLimits,
    /// Sequence number of `messages[0]`; message `i` has sequence `front_seq + i`.
    front_seq: u64,
    /// Out-of-order mode only: `(sequence, deadline)` of the suffix minima, non-decreasing
    /// deadlines. Empty whenever the queue is in deadline order.
    min_window: VecDeque<(u64, Instant)>,
}

impl PendingQueue {
    /// An empty queue with these limits.
    #[must_use]
    pub const fn new(limits: QueueLimits) -> PendingQueue {
        PendingQueue {
            messages: VecDeque::new(),
            bytes: 0,
            limits,
            front_seq: 0,
            min_window: VecDeque::new(),
        }
    }

    /// The limits pushes are checked against.
    #[must_use]
    pub const fn limits(&self) -> QueueLimits {
        self.limits
    }

    /// Changes the limits for future pushes. Messages already queued stay, even above a new,
    /// lower limit (they are never dropped); pushes are refused until the queue is below it.
    pub fn set_limits(&mut self, limits: QueueLimits) {
        self.limits = limits;
    }

    /// Number of queued messages.
    #[must_use]
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Total payload bytes queued.
    #[must_use]
    pub const fn bytes(&self) -> usize {
        self.bytes
    }

    /// Heap bytes the queue itself holds (its buffers, not the payloads, which are shared
    /// [`Bytes`]). For memory accounting and stats.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.messages.capacity() * core::mem::size_of::<PendingMessage>()
            + self.min_window.capacity() * core::mem::size_of::<(u64, Instant)>()
    }

    /// The queued messages in FIFO order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &PendingMessage> + '_ {
        self.messages.iter()
    }

    /// The oldest queued message: the next to transmit.
    #[must_use]
    pub fn front(&self) -> Option<&PendingMessage> {
        self.messages.front()
    }

    /// The earliest deadline of any queued message (exact, wherever it sits in the queue);
    /// `None` when empty. Call after every change to re-arm the owner's timer.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        match self.min_window.front() {
            Some(&(_, deadline)) => Some(deadline),
            None => self.messages.front().map(|m| m.deadline),
        }
    }

    /// Appends `message` if both limits admit it.
    ///
    /// # Errors
    ///
    /// [`Rejected`] with [`FailReason::QueueFull`] and the message itself when the count or
    /// byte limit would be exceeded; the queue is unchanged.
    pub fn push(&mut self, message: PendingMessage) -> Result<(), Rejected> {
        let payload_len = message.payload.len();
        if !self
            .limits
            .admits(self.messages.len(), self.bytes, payload_len)
        {
            return Err(Rejected {
                reason: FailReason::QueueFull,
                message,
            });
        }
        let seq = self.seq_of(self.messages.len());
        let deadline = message.deadline;
        if !self.min_window.is_empty() {
            self.window_push(seq, deadline);
        } else if self.messages.back().is_some_and(|m| deadline < m.deadline) {
            // First out-of-order deadline: every queued message is its own suffix minimum
            // (they are in non-decreasing order), then the new one evicts the later ones.
            self.rebuild_window();
            self.window_push(seq, deadline);
        }
        self.messages.push_back(message);
        self.bytes += payload_len;
        self.leave_window_mode_if_ordered();
        Ok(())
    }

    /// Removes and returns the oldest message (after it was transmitted, or to fail it).
    pub fn pop_front(&mut self) -> Option<PendingMessage> {
        let message = self.messages.pop_front()?;
        self.bytes -= message.payload.len();
        if self
            .min_window
            .front()
            .is_some_and(|&(seq, _)| seq == self.front_seq)
        {
            self.min_window.pop_front();
        }
        self.front_seq = self.front_seq.wrapping_add(1);
        self.leave_window_mode_if_ordered();
        self.release_idle_capacity();
        Some(message)
    }

    /// Takes the queued message `id` out of the queue, wherever it sits, with no outcome: it
    /// was never transmitted, and its sender owns what that means (a call's request moving
    /// to another server). `None` when it is not queued.
    pub fn withdraw(&mut self, id: MsgId) -> Option<PendingMessage> {
        let index = self.messages.iter().position(|m| m.id == id)?;
        if index == 0 {
            return self.pop_front();
        }
        let message = self.messages.remove(index)?;
        self.bytes -= message.payload.len();
        if !self.min_window.is_empty() {
            // Sequence numbers after `index` moved down by one: rebuild.
            self.rebuild_window();
            self.leave_window_mode_if_ordered();
        }
        Some(message)
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
        let expired = self.expire(now, sink);
        let mut sent = 0;
        let stop = loop {
            let Some(head) = self.front() else {
                break FlushStop::Drained;
            };
            if sent == budget {
                break FlushStop::Budget;
            }
            match transmit(head) {
                TransmitResult::Sent => {
                    let message = self.pop_front().expect("head was just transmitted");
                    sink.emit(message.id, Outcome::Delivered);
                    sent += 1;
                }
                TransmitResult::InFlight => {
                    self.pop_front().expect("head was just transmitted");
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

    /// Fails every message whose deadline is `<= now` with `Failed(Timeout)`, in FIFO order,
    /// wherever it sits in the queue. Returns how many expired.
    ///
    /// Call from the owner's timeout handling (and before transmitting at `now`). A message is
    /// still queued 1 ns before its deadline and expired at exactly its deadline.
    pub fn expire<S: OutcomeSink + ?Sized>(&mut self, now: Instant, sink: &mut S) -> usize {
        self.expire_for(now, FailReason::Timeout, sink)
    }

    /// [`expire`](Self::expire) with another reason than `Timeout` (the deadline passed
    /// while the target refused our links, say).
    pub fn expire_for<S: OutcomeSink + ?Sized>(
        &mut self,
        now: Instant,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        if self.min_window.is_empty() {
            let mut expired = 0;
            while self.messages.front().is_some_and(|m| m.deadline <= now) {
                let message = self.pop_front().expect("front was just seen");
                sink.emit(message.id, Outcome::Failed(reason));
                expired += 1;
            }
            return expired;
        }
        if self.next_deadline().is_none_or(|d| d > now) {
            return 0;
        }
        let before = self.messages.len();
        let bytes = &mut self.bytes;
        self.messages.retain(|m| {
            if m.deadline <= now {
                *bytes -= m.payload.len();
                sink.emit(m.id, Outcome::Failed(reason));
                false
            } else {
                true
            }
        });
        self.rebuild_window();
        self.leave_window_mode_if_ordered();
        self.release_idle_capacity();
        before - self.messages.len()
    }

    /// Fails every queued message with `Failed(reason)`, in FIFO order, leaving the queue
    /// empty. Returns how many were failed. Used when the target is removed, collected or the
    /// node shuts down.
    pub fn drain_with<S: OutcomeSink + ?Sized>(
        &mut self,
        reason: FailReason,
        sink: &mut S,
    ) -> usize {
        let drained = self.messages.len();
        for message in self.messages.drain(..) {
            sink.emit(message.id, Outcome::Failed(reason));
        }
        self.bytes = 0;
        self.front_seq = self.front_seq.wrapping_add(drained as u64);
        self.min_window.clear();
        self.release_idle_capacity();
        drained
    }

    fn seq_of(&self, index: usize) -> u64 {
        self.front_seq.wrapping_add(index as u64)
    }

    /// Pushes `(seq, deadline)` onto the min-window, evicting entries it undercuts.
    fn window_push(&mut self, seq: u64, deadline: Instant) {
        while self.min_window.back().is_some_and(|&(_, d)| d > deadline) {
            self.min_window.pop_back();
        }
        self.min_window.push_back((seq, deadline));
    }

    /// Rebuilds the min-window from the queue as it stands.
    fn rebuild_window(&mut self) {
        self.min_window.clear();
        for index in 0..self.messages.len() {
            let seq = self.seq_of(index);
            let deadline = self.messages[index].deadline;
            self.window_push(seq, deadline);
        }
    }

    /// Every queued message in the window means deadlines are in FIFO order again.
    fn leave_window_mode_if_ordered(&mut self) {
        if self.min_window.len() == self.messages.len() {
            self.min_window.clear();
        }
    }

    fn release_idle_capacity(&mut self) {
        if !self.messages.is_empty() {
            return;
        }
        if self.messages.capacity() > RETAINED_CAPACITY {
            self.messages.shrink_to(RETAINED_CAPACITY);
        }
        if self.min_window.capacity() != 0 {
            self.min_window = VecDeque::new();
        }
    }
}
