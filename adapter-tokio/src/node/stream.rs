//! Fire-and-forget sending with outcomes as a stream: [`NodeHandle::poster`] returns a
//! [`Poster`] (hands messages to the node, each numbered with a [`Ticket`]) and its
//! [`PostOutcomes`] (every posted message's outcome, by ticket).
//!
//! The fast path of the adapter: a post costs one slot in the command queue and nothing else
//! (no oneshot channel, no per-message wake of the sender); [`Poster::post_many`] hands a
//! whole burst over in one command, so the driver is woken once per burst. The driver gathers
//! the outcomes of each of its wake-ups per poster and hands them over as one batch, so the
//! reader is woken once per batch and takes it whole with [`PostOutcomes::recv_many`].

use std::{
    collections::VecDeque,
    ops::Range,
    pin::Pin,
    sync::atomic::{AtomicU64, Ordering},
    task::{Context, Poll},
};

use bytes::Bytes;
use switchboard_core::{node::SendError, outcome::Outcome};
use tokio::sync::mpsc;

use super::{Command, Dest, NodeHandle, Stopped};
use crate::target::TargetSpec;

/// The number of one posted message within its [`Poster`]: 0 for the first, then one more
/// per message, in the order they were posted.
pub type Ticket = u64;

/// The outcome of one posted message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostReport {
    /// The message's ticket.
    pub ticket: Ticket,
    /// `Ok` with the outcome once the core reports one, or why the core refused the message
    /// (nothing was sent; `Shutdown` also for a message still queued when the node stopped).
    pub outcome: Result<Outcome, SendError>,
}

impl PostReport {
    /// The report of the message `ticket` (for tests of code that reads reports).
    #[must_use]
    pub fn new(ticket: Ticket, outcome: Result<Outcome, SendError>) -> PostReport {
        PostReport { ticket, outcome }
    }
}

/// Where the driver sends a poster's outcome batches.
pub(crate) type ReportSender = mpsc::UnboundedSender<Vec<PostReport>>;

/// Numbers every poster of the process (the driver's table is keyed by it).
static NEXT_POSTER: AtomicU64 = AtomicU64::new(1);

/// Hands messages to a node without waiting for it; their outcomes arrive on the
/// [`PostOutcomes`] made with it. Dropping it ends that stream once every message posted has
/// its outcome.
#[derive(Debug)]
pub struct Poster {
    id: u64,
    next: Ticket,
    commands: mpsc::Sender<Command>,
}

impl Poster {
    /// Queues one message for the node; returns its ticket as soon as the command queue took
    /// it (the bounded queue is the backpressure).
    ///
    /// **Cancellation:** safe. Dropped before it returns, the message was not queued (and
    /// its ticket is not used).
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn post(
        &mut self,
        target: TargetSpec,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<Ticket, Stopped> {
        let ticket = self.next;
        self.commands
            .send(Command::Stream {
                poster: self.id,
                ticket,
                target: target.into(),
                msg_type,
                payload,
            })
            .await
            .map_err(|_| Stopped)?;
        self.next += 1;
        Ok(ticket)
    }

    /// Queues every message of `messages` in one command (the node takes them in order, in
    /// one step); returns their tickets.
    ///
    /// **Cancellation:** as [`post`](Self::post), for the whole batch.
    ///
    /// # Errors
    ///
    /// The node stopped (none was queued).
    pub async fn post_many(
        &mut self,
        messages: impl IntoIterator<Item = (TargetSpec, u32, Bytes)>,
    ) -> Result<Range<Ticket>, Stopped> {
        let messages: Vec<(Dest, u32, Bytes)> = messages
            .into_iter()
            .map(|(target, msg_type, payload)| (target.into(), msg_type, payload))
            .collect();
        let first = self.next;
        let end = first + messages.len() as u64;
        if messages.is_empty() {
            return Ok(first..end);
        }
        self.commands
            .send(Command::StreamBatch {
                poster: self.id,
                first,
                messages,
            })
            .await
            .map_err(|_| Stopped)?;
        self.next = end;
        Ok(first..end)
    }

    /// The ticket the next posted message gets.
    #[must_use]
    pub fn next_ticket(&self) -> Ticket {
        self.next
    }
}

impl Drop for Poster {
    fn drop(&mut self) {
        // Best effort: with the command queue full the stream ends only when the node stops.
        let _ = self
            .commands
            .try_send(Command::ClosePoster { poster: self.id });
    }
}

/// The outcomes of a [`Poster`]'s messages, in the order the node reported them (a
/// [`futures_core::Stream`], or [`recv`](Self::recv) / [`recv_many`](Self::recv_many)).
/// Ends once the poster is dropped and every message it posted has its outcome, or when the
/// node stops (after a [`NodeHandle::kill`] the outcomes still owed are never reported).
///
/// Unbounded: dropping it is how a poster stops having its outcomes kept.
#[derive(Debug)]
pub struct PostOutcomes {
    rx: mpsc::UnboundedReceiver<Vec<PostReport>>,
    /// What is left of the batch last taken by `recv`.
    left: VecDeque<PostReport>,
}

impl PostOutcomes {
    /// The next outcome; `None` once the stream ended.
    ///
    /// **Cancellation:** safe: a dropped call takes nothing out.
    pub async fn recv(&mut self) -> Option<PostReport> {
        std::future::poll_fn(|cx| self.poll_report(cx)).await
    }

    /// Appends every outcome reported so far to `out` (waiting for at least one); returns how
    /// many it appended, 0 once the stream ended.
    ///
    /// **Cancellation:** safe: a dropped call takes nothing out.
    pub async fn recv_many(&mut self, out: &mut Vec<PostReport>) -> usize {
        let before = out.len();
        out.extend(self.left.drain(..));
        if out.len() == before {
            match self.rx.recv().await {
                Some(batch) => out.extend(batch),
                None => return 0,
            }
        }
        while let Ok(batch) = self.rx.try_recv() {
            out.extend(batch);
        }
        out.len() - before
    }

    fn poll_report(&mut self, cx: &mut Context<'_>) -> Poll<Option<PostReport>> {
        loop {
            if let Some(report) = self.left.pop_front() {
                return Poll::Ready(Some(report));
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => self.left.extend(batch),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl futures_core::Stream for PostOutcomes {
    type Item = PostReport;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<PostReport>> {
        self.poll_report(cx)
    }
}

impl NodeHandle {
    /// A new [`Poster`] and the stream of its outcomes: the fast way to stream messages (no
    /// per-message channel or wake-up; see [`Poster::post_many`]). A node may have any number
    /// of posters, each with its own tickets and outcome stream.
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn poster(&self) -> Result<(Poster, PostOutcomes), Stopped> {
        let id = NEXT_POSTER.fetch_add(1, Ordering::Relaxed);
        let (reports, rx) = mpsc::unbounded_channel();
        self.command(Command::OpenPoster {
            poster: id,
            reports,
        })
        .await?;
        let poster = Poster {
            id,
            next: 0,
            commands: self.commands.clone(),
        };
        Ok((
            poster,
            PostOutcomes {
                rx,
                left: VecDeque::new(),
            },
        ))
    }
}
