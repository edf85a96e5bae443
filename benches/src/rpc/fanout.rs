//! Broadcast against unicast: a hub with [`LEAVES`] leaves below it (each leaf's upstream is
//! the hub, so the hub has one link to each). [`Fanout::broadcast`] keeps broadcasts (one
//! frame to every leaf, by a label filter) in flight; [`Fanout::unicast`] posts the same
//! frames to each leaf one by one through a `Poster`, the same number in flight. Both count
//! recipient frames acknowledged; every leaf checks each frame's sender, type and bytes.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use switchboard_core::{
    BroadcastSpec,
    discovery::{Filter, Metadata},
    ids::NodeId,
    outcome::Outcome,
};
use switchboard_tokio::{NodeBuilder, NodeHandle, PostReport, TargetSpec, Transport};

use super::closed_loop;
use crate::transport::{
    BenchError,
    nodes::BenchNodes,
    ours::{MSG_TYPE, PAYLOAD, ReceiverCounts, spawn_drainer},
};

/// Leaves a broadcast reaches.
pub const LEAVES: usize = 16;
const REGISTRY_SEED: u64 = 0x7d_7d;
const HUB: NodeId = NodeId(0x7d00);
const LEAF_LABEL: &str = "fanout";

/// What a fan-out run delivered.
#[derive(Debug, Default)]
pub struct FanoutRun {
    /// Recipient frames acknowledged.
    pub delivered: u64,
    /// Recipients without a `Delivered`, by label.
    pub failures: BTreeMap<String, u64>,
    /// The run's length.
    pub elapsed: Duration,
}

impl FanoutRun {
    /// Recipient frames per second.
    #[must_use]
    pub fn frames_per_sec(&self) -> f64 {
        crate::transport::load::per_sec(self.delivered, self.elapsed)
    }
}

/// The hub and its leaves.
#[derive(Debug)]
pub struct Fanout {
    nodes: BenchNodes,
    hub: NodeHandle,
    leaves: Vec<NodeId>,
    counts: Vec<Arc<ReceiverCounts>>,
}

impl Fanout {
    /// Starts the registry, the hub and the leaves; waits until the hub knows every leaf and
    /// a broadcast reaches all of them.
    ///
    /// # Errors
    ///
    /// A start failed or the leaves never all got a broadcast within `ready_timeout`.
    pub async fn start(ready_timeout: Duration) -> Result<Fanout, BenchError> {
        let mut nodes = BenchNodes::start(REGISTRY_SEED, Transport::plain(), &[]).await?;
        let (hub, hub_inbox) = nodes.node(HUB, "hub", None).await?;
        spawn_drainer(hub_inbox, NodeId::NONE, NodeId::NONE);
        let mut leaves = Vec::new();
        let mut counts = Vec::new();
        for i in 0..LEAVES {
            let id = NodeId(0x7d01 + i as u64);
            let builder = NodeBuilder::new(id, format!("leaf-{i}")).label(LEAF_LABEL, "leaf");
            let (_, inbox) = nodes.node_from(builder, "leaf", Some(HUB)).await?;
            counts.push(spawn_drainer(inbox, HUB, HUB));
            leaves.push(id);
        }
        let fanout = Fanout {
            nodes,
            hub,
            leaves,
            counts,
        };
        fanout.wait_ready(ready_timeout).await?;
        Ok(fanout)
    }

    async fn wait_ready(&self, timeout: Duration) -> Result<(), BenchError> {
        let started = Instant::now();
        let mut last = String::from("the hub never knew every leaf");
        if self.hub.wait_known(&self.leaves, timeout).await {
            while started.elapsed() < timeout {
                match self.hub.broadcast(self.spec()).await {
                    Ok(done) if done.delivered.len() == LEAVES => return Ok(()),
                    Ok(done) => {
                        last = format!("{} of {LEAVES} leaves got it", done.delivered.len())
                    }
                    Err(e) => last = e.to_string(),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Err(BenchError::RouteNotReady {
            route: "fanout",
            waited_ms: timeout.as_millis(),
            last,
        })
    }

    fn spec(&self) -> BroadcastSpec {
        let mut leaves = Metadata::default();
        leaves
            .labels
            .insert(LEAF_LABEL.to_owned(), "leaf".to_owned());
        BroadcastSpec::new(Some(Filter(leaves)), MSG_TYPE, Bytes::from_static(PAYLOAD))
    }

    /// Frames every leaf counted as exactly as sent, and frames any counted otherwise.
    #[must_use]
    pub fn received(&self) -> (u64, u64) {
        self.counts.iter().fold((0, 0), |(ok, bad), c| {
            (ok + c.received(), bad + c.unexpected())
        })
    }

    /// Waits (at most `timeout`) until the leaves counted `expected` frames in all; returns
    /// what they counted.
    pub async fn settle(&self, expected: u64, timeout: Duration) -> u64 {
        let started = Instant::now();
        loop {
            let (got, _) = self.received();
            if got >= expected || started.elapsed() >= timeout {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Broadcasts for `duration`, `frames_in_flight / LEAVES` broadcasts at a time.
    pub async fn broadcast(&self, frames_in_flight: usize, duration: Duration) -> FanoutRun {
        let mut run = FanoutRun::default();
        let reports = std::sync::Mutex::new(Vec::new());
        let started = Instant::now();
        let calls = closed_loop((frames_in_flight / LEAVES).max(1), duration, || async {
            match self.hub.broadcast(self.spec()).await {
                Ok(done) => {
                    let (ok, failed) =
                        (done.delivered.len(), done.failed.len() + done.unknown.len());
                    if let Ok(mut reports) = reports.lock() {
                        reports.push((ok, failed));
                    }
                    if failed == 0 && ok == LEAVES {
                        Ok(())
                    } else {
                        Err(format!("{ok} of {LEAVES} delivered"))
                    }
                }
                Err(e) => Err(format!("broadcast: {e}")),
            }
        })
        .await;
        run.elapsed = started.elapsed();
        for (ok, failed) in reports.into_inner().unwrap_or_default() {
            run.delivered += ok as u64;
            if failed > 0 {
                *run.failures.entry("not delivered".to_owned()).or_insert(0) += failed as u64;
            }
        }
        for (label, n) in calls.failures {
            *run.failures.entry(label).or_insert(0) += n;
        }
        run
    }

    /// Posts one frame to each leaf in turn for `duration`, `frames_in_flight` at a time (a
    /// burst of one frame per leaf handed over at once, as one broadcast is).
    ///
    /// # Errors
    ///
    /// The hub stopped.
    pub async fn unicast(
        &self,
        frames_in_flight: usize,
        duration: Duration,
    ) -> Result<FanoutRun, BenchError> {
        let stopped = |_| BenchError::Task("the hub stopped".to_owned());
        let (mut poster, mut outcomes) = self.hub.poster().await.map_err(stopped)?;
        let mut run = FanoutRun::default();
        let payload = Bytes::from_static(PAYLOAD);
        let mut in_flight = 0;
        let mut batch: Vec<PostReport> = Vec::new();
        let started = Instant::now();
        loop {
            while in_flight + LEAVES <= frames_in_flight.max(LEAVES) && started.elapsed() < duration
            {
                let burst = self
                    .leaves
                    .iter()
                    .map(|leaf| (TargetSpec::Id(*leaf), MSG_TYPE, payload.clone()));
                poster.post_many(burst).await.map_err(stopped)?;
                in_flight += LEAVES;
            }
            if in_flight == 0 {
                break;
            }
            if outcomes.recv_many(&mut batch).await == 0 {
                return Err(BenchError::Task(
                    "the outcome stream ended early".to_owned(),
                ));
            }
            in_flight -= batch.len();
            for report in batch.drain(..) {
                match report.outcome {
                    Ok(Outcome::Delivered) => run.delivered += 1,
                    Ok(other) => *run.failures.entry(other.label()).or_insert(0) += 1,
                    Err(e) => *run.failures.entry(format!("refused: {e}")).or_insert(0) += 1,
                }
            }
        }
        run.elapsed = started.elapsed();
        Ok(run)
    }

    /// Shuts every node down, then the registry (each bounded by `timeout`).
    pub async fn shutdown(self, timeout: Duration) {
        self.nodes.shutdown(timeout).await;
    }
}
