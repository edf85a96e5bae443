//! Ours with the streaming API: a [`Poster`] hands the measured messages over in bursts
//! (`post_many` at each load flush (`RequestSink::flush`), as the baseline client gathers its frames
//! until a flush) and one collector task reads the [`PostOutcomes`] in batches
//! (`recv_many`), giving the window back once per batch.

use std::{collections::VecDeque, sync::Arc, time::Instant};

use bytes::Bytes;
use switchboard_core::outcome::Outcome;
use switchboard_tokio::{PostOutcomes, PostReport, Poster, SendFailure, TargetSpec};
use tokio::sync::{Semaphore, mpsc};

use super::{
    BenchError,
    load::{Load, RequestSink, RunOutcome, drive},
    ours::{Collected, MSG_TYPE, OursRoute, PAYLOAD},
};

/// One measured run on `route` per `load` through a [`Poster`]; returns once every message
/// has its outcome.
///
/// # Errors
///
/// The node stopped, or a measuring task failed.
pub async fn run_streamed(route: &OursRoute, load: &Load) -> Result<RunOutcome, BenchError> {
    let stopped = |_| BenchError::Send {
        route: route.name(),
        source: SendFailure::Stopped,
    };
    let (poster, outcomes) = route.sender().poster().await.map_err(stopped)?;
    let window = Arc::new(Semaphore::new(load.in_flight));
    let (sent_tx, sent_rx) = mpsc::unbounded_channel();
    let collector = tokio::spawn(collect(
        outcomes,
        sent_rx,
        Arc::clone(&window),
        load.expected_requests(),
    ));
    let mut sink = StreamSink {
        route,
        poster,
        target: TargetSpec::Id(route.target()),
        payload: Bytes::from_static(PAYLOAD),
        queued: Vec::new(),
        sent_at: Vec::new(),
        sent: sent_tx,
    };
    let driven = drive(&mut sink, load, &window).await;
    // Dropping the poster ends the outcome stream after the last outcome.
    drop(sink);
    let collected = collector
        .await
        .map_err(|e| BenchError::Task(e.to_string()))??;
    let (started, sent) = driven?;
    Ok(collected.into_run(started, sent))
}

/// The sending half: gathers messages until a flush, then posts them in one command.
struct StreamSink<'r> {
    route: &'r OursRoute,
    poster: Poster,
    target: TargetSpec,
    payload: Bytes,
    queued: Vec<(TargetSpec, u32, Bytes)>,
    sent_at: Vec<Instant>,
    /// Each posted burst's send instants, in ticket order, to the collector.
    sent: mpsc::UnboundedSender<Vec<Instant>>,
}

impl RequestSink for StreamSink<'_> {
    async fn send(&mut self, sent_at: Instant) -> Result<(), BenchError> {
        self.queued
            .push((self.target.clone(), MSG_TYPE, self.payload.clone()));
        self.sent_at.push(sent_at);
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), BenchError> {
        if self.queued.is_empty() {
            return Ok(());
        }
        // The instants go first: the collector must know them before the outcomes come.
        self.sent
            .send(std::mem::take(&mut self.sent_at))
            .map_err(|_| BenchError::Task("the outcome collector ended early".to_owned()))?;
        self.poster
            .post_many(self.queued.drain(..))
            .await
            .map(drop)
            .map_err(|_| BenchError::Send {
                route: self.route.name(),
                source: SendFailure::Stopped,
            })
    }
}

/// Reads outcome batches until the stream ends; each ticket's round trip is measured from
/// its send instant (tickets number the messages from 0 in send order).
async fn collect(
    mut outcomes: PostOutcomes,
    mut sent: mpsc::UnboundedReceiver<Vec<Instant>>,
    window: Arc<Semaphore>,
    expected: usize,
) -> Result<Collected, BenchError> {
    let mut c = Collected::new(expected);
    // Send instants of tickets `base..`, each taken once its outcome came.
    let mut instants: VecDeque<Option<Instant>> = VecDeque::new();
    let mut base: u64 = 0;
    let mut batch: Vec<PostReport> = Vec::new();
    while outcomes.recv_many(&mut batch).await > 0 {
        let now = Instant::now();
        let reported = batch.len();
        for report in batch.drain(..) {
            let index = usize::try_from(report.ticket - base).unwrap_or(usize::MAX);
            while instants.len() <= index {
                let Some(burst) = sent.recv().await else {
                    return Err(BenchError::Task(format!(
                        "outcome for ticket {} that was never posted",
                        report.ticket
                    )));
                };
                instants.extend(burst.into_iter().map(Some));
            }
            let sent_at = instants[index].take();
            match (report.outcome, sent_at) {
                (Ok(Outcome::Delivered), Some(at)) => {
                    c.delivered(now.saturating_duration_since(at));
                }
                (_, None) => {
                    return Err(BenchError::Task(format!(
                        "ticket {} reported twice",
                        report.ticket
                    )));
                }
                (Ok(other), Some(_)) => c.failed(other.label()),
                (Err(refused), Some(_)) => c.failed(format!("refused: {refused}")),
            }
            while instants.front().is_some_and(Option::is_none) {
                instants.pop_front();
                base += 1;
            }
        }
        // The window back once per batch.
        window.add_permits(reported);
        c.seen_at(now);
    }
    Ok(c)
}
