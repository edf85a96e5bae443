//! The inbox channel: the driver hands over the received messages of one drain as one batch
//! (one lock, at most one wake of the reader); [`Inbox`] takes the whole queue at once into a
//! local buffer and hands messages out of it.
//!
//! The bound counts messages: a message counts from the moment the driver hands it over until
//! the reader takes it out of the [`Inbox`] (`recv`, `recv_many`, the stream), whether it is in
//! the shared queue or already in the reader's buffer. The driver hands over at most the room
//! left and keeps the rest (and stops reading its links) until the reader makes room.

use std::{
    collections::VecDeque,
    future::poll_fn,
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll, Waker},
};

use tokio::sync::Notify;

use super::Received;

/// What the driver and the reader share.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Messages handed over and not yet taken out of the [`Inbox`].
    held: AtomicUsize,
    capacity: usize,
    /// Signalled when the reader takes messages out of a full inbox, or goes away.
    room: Notify,
}

#[derive(Debug)]
struct State {
    queue: VecDeque<Received>,
    /// The reader, when it waits for a message.
    reader: Option<Waker>,
    /// Live [`InboxSender`]s; the inbox ends once they are gone and everything was read.
    senders: usize,
    reader_gone: bool,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Nothing panics while holding the lock; a poisoned lock still holds a valid queue.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A bounded inbox of `capacity` messages (at least 1): the driver's sender and the reader.
pub(super) fn channel(capacity: usize) -> (InboxSender, Inbox) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            reader: None,
            senders: 1,
            reader_gone: false,
        }),
        held: AtomicUsize::new(0),
        capacity: capacity.max(1),
        room: Notify::new(),
    });
    let inbox = Inbox {
        shared: Arc::clone(&shared),
        buffer: VecDeque::new(),
    };
    (InboxSender { shared }, inbox)
}

/// The reader dropped its [`Inbox`]: nothing handed over will be read.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ReaderGone;

/// The driver's end of the inbox.
#[derive(Debug)]
pub(super) struct InboxSender {
    shared: Arc<Shared>,
}

impl InboxSender {
    /// How many more messages the inbox takes now.
    pub(super) fn room(&self) -> usize {
        let held = self.shared.held.load(Ordering::Acquire);
        self.shared.capacity.saturating_sub(held)
    }

    /// Moves as many messages from the front of `messages` into the inbox as it has room for,
    /// in order, with one lock and at most one wake of the reader; the rest stay in
    /// `messages`. `Err` (and nothing moved) once the reader is gone.
    pub(super) fn hand_over(&self, messages: &mut VecDeque<Received>) -> Result<(), ReaderGone> {
        if messages.is_empty() {
            return Ok(());
        }
        let reader = {
            let mut state = self.shared.state();
            if state.reader_gone {
                return Err(ReaderGone);
            }
            let moved = self.room().min(messages.len());
            if moved == 0 {
                return Ok(());
            }
            // Counted before the reader can see them, so its release never underflows.
            self.shared.held.fetch_add(moved, Ordering::AcqRel);
            if moved == messages.len() && state.queue.is_empty() {
                // The common case: swap the buffers (both keep their allocations cycling).
                std::mem::swap(&mut state.queue, messages);
            } else {
                state.queue.extend(messages.drain(..moved));
            }
            state.reader.take()
        };
        if let Some(reader) = reader {
            reader.wake();
        }
        Ok(())
    }

    /// Waits until the inbox has room (`true`) or the reader is gone (`false`).
    ///
    /// **Cancellation:** safe; it only observes.
    pub(super) async fn wait_room(&self) -> bool {
        loop {
            if self.shared.state().reader_gone {
                return false;
            }
            if self.room() > 0 {
                return true;
            }
            // A release between the check and this wait leaves a permit: no wake is lost.
            self.shared.room.notified().await;
        }
    }

    /// Hands over every message in `messages`, waiting for room as often as needed; stops
    /// when the reader is gone.
    pub(super) async fn hand_over_all(&self, mut messages: VecDeque<Received>) {
        while self.hand_over(&mut messages).is_ok() && !messages.is_empty() {
            if !self.wait_room().await {
                return;
            }
        }
    }
}

impl Clone for InboxSender {
    fn clone(&self) -> InboxSender {
        self.shared.state().senders += 1;
        InboxSender {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for InboxSender {
    fn drop(&mut self) {
        let reader = {
            let mut state = self.shared.state();
            state.senders -= 1;
            if state.senders > 0 {
                return;
            }
            state.reader.take()
        };
        if let Some(reader) = reader {
            reader.wake();
        }
    }
}

/// The messages a node receives, in arrival order. Ends when the node stops.
///
/// Bounded ([`INBOX_CAPACITY`](super::INBOX_CAPACITY) messages unless
/// [`NodeBuilder::inbox_capacity`](super::NodeBuilder::inbox_capacity) says otherwise): a
/// message counts from its arrival until it is taken out of the inbox. While the inbox is full
/// the driver stops reading its links, so senders see backpressure (their pending queues
/// fill) instead of this node buffering without limit.
///
/// The driver hands over what one pass over its sockets received as one batch, with one
/// wake-up of the reader.
#[derive(Debug)]
pub struct Inbox {
    shared: Arc<Shared>,
    /// Messages taken from the shared queue, not yet handed out (they still count against the
    /// bound).
    buffer: VecDeque<Received>,
}

impl Inbox {
    /// The next message; `None` once the node stopped and everything was read.
    ///
    /// **Cancellation:** safe (use it in `select!`): a dropped call takes no message out.
    pub async fn recv(&mut self) -> Option<Received> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Appends up to `limit` messages to `out`, every one already waiting (waits for the
    /// first); returns how many, 0 once the node stopped and everything was read (or for a
    /// `limit` of 0). One wake-up hands over a whole burst.
    ///
    /// **Cancellation:** safe: a dropped call takes no message out.
    pub async fn recv_many(&mut self, out: &mut Vec<Received>, limit: usize) -> usize {
        if limit == 0 || !poll_fn(|cx| self.poll_fill(cx)).await {
            return 0;
        }
        if self.buffer.len() < limit {
            self.take_queued();
        }
        let taken = limit.min(self.buffer.len());
        out.extend(self.buffer.drain(..taken));
        self.release(taken);
        taken
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        match self.poll_fill(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(false) => Poll::Ready(None),
            Poll::Ready(true) => {
                let msg = self.buffer.pop_front();
                self.release(1);
                Poll::Ready(msg)
            }
        }
    }

    /// Ready with `true` once the buffer holds a message, `false` once the node stopped and
    /// everything was read; registers the reader's waker otherwise.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        if !self.buffer.is_empty() {
            return Poll::Ready(true);
        }
        let mut state = self.shared.state();
        if !state.queue.is_empty() {
            std::mem::swap(&mut state.queue, &mut self.buffer);
            return Poll::Ready(true);
        }
        if state.senders == 0 {
            return Poll::Ready(false);
        }
        match &mut state.reader {
            Some(waker) => waker.clone_from(cx.waker()),
            None => state.reader = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Appends what waits in the shared queue to the buffer.
    fn take_queued(&mut self) {
        let mut state = self.shared.state();
        self.buffer.append(&mut state.queue);
    }

    /// `taken` messages left the inbox: their room goes back to the driver.
    fn release(&self, taken: usize) {
        if taken == 0 {
            return;
        }
        let before = self.shared.held.fetch_sub(taken, Ordering::AcqRel);
        if before >= self.shared.capacity {
            // The inbox was full: the driver may be waiting for room.
            self.shared.room.notify_one();
        }
    }
}

impl futures_core::Stream for Inbox {
    type Item = Received;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Received>> {
        self.poll_recv(cx)
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.shared.state().reader_gone = true;
        self.shared.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use bytes::Bytes;
    use switchboard_core::ids::NodeId;

    use super::*;

    fn msg(n: u8) -> Received {
        Received::new(NodeId(1), NodeId(1), 9, Bytes::from(vec![n; 3]))
    }

    fn queue(range: std::ops::Range<u8>) -> VecDeque<Received> {
        range.map(msg).collect()
    }

    fn first_bytes(msgs: &[Received]) -> Vec<u8> {
        msgs.iter().map(|m| m.payload[0]).collect()
    }

    #[tokio::test]
    async fn the_bound_counts_messages_until_the_reader_takes_them() {
        let (tx, mut inbox) = channel(4);
        let mut waiting = queue(0..6);
        assert_eq!(tx.hand_over(&mut waiting), Ok(()));
        // Four fit; the other two stay with the driver, in order.
        assert_eq!(first_bytes(waiting.make_contiguous()), [4, 5]);
        assert_eq!(tx.room(), 0);
        // Taking the queue into the reader's buffer frees nothing; handing out one does.
        assert_eq!(
            inbox.recv().await.map(|m| m.payload),
            Some(Bytes::from(vec![0; 3]))
        );
        assert_eq!(inbox.buffer.len(), 3);
        assert_eq!(tx.room(), 1);
        assert!(tx.wait_room().await);
        assert_eq!(tx.hand_over(&mut waiting), Ok(()));
        assert_eq!(first_bytes(waiting.make_contiguous()), [5]);
        let mut out = Vec::new();
        // The buffer holds 3, the shared queue 1: a limit of 10 takes all four.
        assert_eq!(inbox.recv_many(&mut out, 10).await, 4);
        assert_eq!(first_bytes(&out), [1, 2, 3, 4]);
        assert_eq!(tx.room(), 4);
        assert_eq!(out[0].payload, Bytes::from(vec![1; 3]));
    }

    #[tokio::test]
    async fn a_hand_over_wakes_a_waiting_reader_once_and_the_end_follows_the_last_message() {
        let (tx, mut inbox) = channel(8);
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(inbox.poll_recv(&mut cx), Poll::Pending);
        assert!(inbox.shared.state().reader.is_some());
        let mut batch = queue(0..3);
        assert_eq!(tx.hand_over(&mut batch), Ok(()));
        assert!(batch.is_empty());
        // The waker was taken (woken); a second batch finds no one to wake.
        assert!(inbox.shared.state().reader.is_none());
        let mut more = queue(3..5);
        assert_eq!(tx.hand_over(&mut more), Ok(()));
        drop(tx);
        let mut out = Vec::new();
        assert_eq!(inbox.recv_many(&mut out, 2).await, 2);
        assert_eq!(inbox.recv_many(&mut out, 0).await, 0);
        assert_eq!(inbox.recv_many(&mut out, 9).await, 3);
        assert_eq!(first_bytes(&out), [0, 1, 2, 3, 4]);
        assert!(inbox.recv().await.is_none());
        assert_eq!(inbox.recv_many(&mut out, 9).await, 0);
    }

    #[tokio::test]
    async fn a_gone_reader_refuses_hand_overs_and_ends_the_wait_for_room() {
        let (tx, inbox) = channel(1);
        let mut batch = queue(0..2);
        assert_eq!(tx.hand_over(&mut batch), Ok(()));
        assert_eq!(batch.len(), 1);
        let waiting = tokio::spawn(async move {
            let room = tx.wait_room().await;
            (room, tx.hand_over(&mut batch), batch.len())
        });
        tokio::task::yield_now().await;
        drop(inbox);
        assert_eq!(
            waiting.await.expect("no panic"),
            (false, Err(ReaderGone), 1)
        );
    }

    #[tokio::test]
    async fn hand_over_all_waits_for_room_as_often_as_needed() {
        let (tx, mut inbox) = channel(2);
        let clone = tx.clone();
        let sending = tokio::spawn(async move { clone.hand_over_all(queue(0..7)).await });
        let mut got = Vec::new();
        while got.len() < 7 {
            got.push(inbox.recv().await.expect("a sender lives"));
        }
        sending.await.expect("no panic");
        assert_eq!(first_bytes(&got), [0, 1, 2, 3, 4, 5, 6]);
        drop(tx);
        assert!(inbox.recv().await.is_none());
    }
}
