//! The driver's side of [`Poster`](crate::node::stream::Poster)s: each poster's outcomes are
//! gathered during a wake-up and handed to its stream as one batch at the end of the drain
//! (one channel send and at most one wake of the reader per batch, instead of a oneshot and a
//! wake per message).
//!
//! A poster's stream ends (its sender here is dropped) once the poster was closed and none of
//! its messages waits for an outcome any more, or when its reader is gone (its outcomes are
//! then dropped: the messages are still delivered or failed, and counted).

use std::collections::HashMap;

use switchboard_core::{node::SendError, outcome::Outcome};

use crate::node::stream::{PostReport, ReportSender, Ticket};

/// One poster's stream end.
#[derive(Debug)]
struct Sink {
    reports: ReportSender,
    /// Outcomes gathered since the last flush.
    batch: Vec<PostReport>,
    /// Accepted messages still waiting for their outcome.
    in_flight: usize,
    /// The poster was dropped.
    closed: bool,
}

/// Every open poster of the node, by id. Poster ids are sequential integers of this process:
/// a fast non-keyed hash is enough (SipHash was 12 % of a streamed round trip's
/// instructions, three lookups per message).
#[derive(Debug, Default)]
pub(super) struct Posters {
    sinks: HashMap<u64, Sink, foldhash::fast::FixedState>,
    /// Posters whose batch holds outcomes, or that may end, since the last flush.
    dirty: Vec<u64>,
}

impl Posters {
    /// A poster starts.
    pub(super) fn open(&mut self, poster: u64, reports: ReportSender) {
        self.sinks.insert(
            poster,
            Sink {
                reports,
                batch: Vec::new(),
                in_flight: 0,
                closed: false,
            },
        );
    }

    /// Whether `poster` still has a reader (messages of a poster whose reader is gone are
    /// still sent, their outcomes not kept).
    pub(super) fn is_open(&self, poster: u64) -> bool {
        self.sinks.contains_key(&poster)
    }

    /// The core accepted `count` of `poster`'s messages: as many outcomes are owed.
    pub(super) fn accepted(&mut self, poster: u64, count: usize) {
        if let Some(sink) = self.sinks.get_mut(&poster) {
            sink.in_flight += count;
        }
    }

    /// The core refused a message of `poster`: reported as such, nothing is owed.
    pub(super) fn refused(&mut self, poster: u64, ticket: Ticket, error: SendError) {
        self.report(poster, ticket, Err(error), false);
    }

    /// The outcome of an accepted message of `poster`.
    pub(super) fn outcome(&mut self, poster: u64, ticket: Ticket, outcome: Outcome) {
        self.report(poster, ticket, Ok(outcome), true);
    }

    fn report(
        &mut self,
        poster: u64,
        ticket: Ticket,
        outcome: Result<Outcome, SendError>,
        was_in_flight: bool,
    ) {
        if let Some(sink) = self.sinks.get_mut(&poster) {
            if was_in_flight {
                sink.in_flight = sink.in_flight.saturating_sub(1);
            }
            if sink.batch.is_empty() {
                self.dirty.push(poster);
            }
            sink.batch.push(PostReport { ticket, outcome });
        }
    }

    /// The poster was dropped: its stream ends after its last owed outcome.
    pub(super) fn close(&mut self, poster: u64) {
        if let Some(sink) = self.sinks.get_mut(&poster) {
            sink.closed = true;
            self.dirty.push(poster);
        }
    }

    /// Hands each poster's gathered outcomes to its stream, one batch each; drops the sinks
    /// whose stream ended or whose reader is gone.
    pub(super) fn flush(&mut self) {
        for poster in self.dirty.drain(..) {
            let Some(sink) = self.sinks.get_mut(&poster) else {
                continue;
            };
            let reader_gone = !sink.batch.is_empty()
                && sink.reports.send(std::mem::take(&mut sink.batch)).is_err();
            if reader_gone || (sink.closed && sink.in_flight == 0) {
                self.sinks.remove(&poster);
            }
        }
    }
}
