//! Ours: switchboard-tokio nodes on loopback, driven through the public API only.
//!
//! [`OursCluster::start`] runs an embedded registry and two measured routes on it:
//! - `direct`: node A with node B as its upstream, so A → B is one TCP link;
//! - `proxied`: nodes A and B both below proxy P (direct links off, the core's default), so
//!   A → B is relayed by P — checked on every received message (`Received::via == P`).
//!
//! [`run_ours`] measures one route: the sender task hands messages to the node per the
//! [`Load`] — with [`SendApi::Post`] (`NodeHandle::post`: no round trip to the driver per
//! message, the API meant for streaming) or [`SendApi::Submit`] (`NodeHandle::submit`: waits
//! until the driver accepted each one) — and passes each outcome future with its send instant
//! to a collector task, which awaits the outcomes in order (acks are cumulative, so they
//! resolve in order), records each `Delivered` round trip and returns the window permit. A drainer task per receiving node reads its inbox and
//! checks every message (sender, relay, type, payload bytes), so a run can also assert
//! exactly-once delivery.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use switchboard_core::{auth::ClusterKey, ids::NodeId, outcome::Outcome};
use switchboard_tokio::{
    Inbox, NodeHandle, PendingOutcome, PostedOutcome, SendFailure, TargetSpec, Transport,
};
use tokio::sync::{Semaphore, mpsc};

use super::{
    BenchError, PAYLOAD_BYTES,
    load::{Load, RequestSink, RunOutcome, drive},
    nodes::BenchNodes,
    stats::Latencies,
};

/// Application message type of the measured messages.
pub const MSG_TYPE: u32 = 0x7b;
/// The measured payload (64 bytes, checked byte for byte by the receiver).
pub const PAYLOAD: &[u8; PAYLOAD_BYTES] =
    b"switchboard transport bench payload: 64 bytes checked on arrival";
/// Seed of the embedded registry.
const REGISTRY_SEED: u64 = 0x7b_7b;

const DIRECT_SENDER: NodeId = NodeId(0x7b01);
const DIRECT_RECEIVER: NodeId = NodeId(0x7b02);
const PROXY: NodeId = NodeId(0x7b10);
const PROXIED_SENDER: NodeId = NodeId(0x7b11);
const PROXIED_RECEIVER: NodeId = NodeId(0x7b12);

/// Which `NodeHandle` call hands the measured messages to the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendApi {
    /// `NodeHandle::post`: returns once the command queue took the message.
    Post,
    /// `NodeHandle::submit`: returns once the driver accepted (or refused) the message.
    Submit,
    /// A `Poster`: messages gathered until the load's flush and handed over with
    /// `post_many`, outcomes read in batches from its `PostOutcomes`
    /// ([`super::ours_stream`]).
    Stream,
}

impl SendApi {
    /// The call's name in reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SendApi::Post => "post",
            SendApi::Submit => "submit",
            SendApi::Stream => "poster",
        }
    }
}

/// What a receiving node's drainer has seen.
#[derive(Debug, Default)]
pub struct ReceiverCounts {
    received: AtomicU64,
    unexpected: AtomicU64,
}

impl ReceiverCounts {
    /// Messages that arrived exactly as sent (sender, relay, type, payload).
    #[must_use]
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Acquire)
    }

    /// Messages that arrived with anything else than expected.
    #[must_use]
    pub fn unexpected(&self) -> u64 {
        self.unexpected.load(Ordering::Acquire)
    }
}

/// One measured path: a sending node, the target id, and the target's drainer counts.
#[derive(Clone, Debug)]
pub struct OursRoute {
    name: &'static str,
    sender: NodeHandle,
    target: NodeId,
    receiver: Arc<ReceiverCounts>,
}

impl OursRoute {
    /// The route's name in reports (`direct`, `proxied`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The target's drainer counts.
    #[must_use]
    pub fn receiver(&self) -> &ReceiverCounts {
        &self.receiver
    }

    /// The sending node.
    #[must_use]
    pub fn sender(&self) -> &NodeHandle {
        &self.sender
    }

    /// The target node.
    #[must_use]
    pub fn target(&self) -> NodeId {
        self.target
    }

    /// Sends one message at a time until one is `Delivered` (discovery and the link come up
    /// in the background), at most for `timeout`.
    ///
    /// # Errors
    ///
    /// [`BenchError::RouteNotReady`] with every attempt's result and the sender's status.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<(), BenchError> {
        let started = Instant::now();
        let mut attempts = Vec::new();
        while started.elapsed() < timeout {
            let remaining = timeout.saturating_sub(started.elapsed());
            let sent_at = Instant::now();
            let attempt = self.sender.send(
                TargetSpec::Id(self.target),
                MSG_TYPE,
                Bytes::from_static(PAYLOAD),
            );
            let result = match tokio::time::timeout(remaining, attempt).await {
                Ok(Ok(Outcome::Delivered)) => return self.wait_counted(started, timeout).await,
                Ok(Ok(other)) => format!("outcome {other:?}"),
                Ok(Err(e)) => format!("send error: {e}"),
                Err(_) => String::from("no outcome yet"),
            };
            attempts.push(format!(
                "attempt {}: {result} after {} ms",
                attempts.len() + 1,
                sent_at.elapsed().as_millis()
            ));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let status = match tokio::time::timeout(Duration::from_secs(1), self.sender.status()).await
        {
            Ok(Ok(status)) => serde_json::to_string(&status)
                .unwrap_or_else(|e| format!("status not serializable: {e}")),
            Ok(Err(_)) => String::from("the sender stopped"),
            Err(_) => String::from("the sender did not answer a status request within 1 s"),
        };
        Err(BenchError::RouteNotReady {
            route: self.name,
            waited_ms: timeout.as_millis(),
            last: format!("{}; sender status: {status}", attempts.join("; ")),
        })
    }

    /// The target acks a message once its node handed it to the inbox; the drainer task
    /// counts it a moment later. Waits for that count, so a run that reads `received()`
    /// next never sees the warm-up message arrive inside its own window.
    async fn wait_counted(&self, started: Instant, timeout: Duration) -> Result<(), BenchError> {
        let left = timeout.saturating_sub(started.elapsed());
        let got = self.settle_received(1, left).await;
        if got >= 1 {
            return Ok(());
        }
        Err(BenchError::RouteNotReady {
            route: self.name,
            waited_ms: timeout.as_millis(),
            last: String::from(
                "the warm-up message was Delivered but its receiver never counted it",
            ),
        })
    }

    /// Waits (polling every millisecond, at most `timeout`) until the target's drainer has
    /// counted `expected` messages; returns the count it reached.
    pub async fn settle_received(&self, expected: u64, timeout: Duration) -> u64 {
        let started = Instant::now();
        loop {
            let got = self.receiver.received();
            if got >= expected || started.elapsed() >= timeout {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// A registry, a direct pair and a proxied pair, all on loopback.
#[derive(Debug)]
pub struct OursCluster {
    nodes: BenchNodes,
    /// A → B over one link (B is A's upstream).
    pub direct: OursRoute,
    /// A → P → B (A and B share the upstream P).
    pub proxied: OursRoute,
}

impl OursCluster {
    /// Starts the registry and the five nodes, then waits until each route delivered a
    /// message (at most `ready_timeout` per route).
    ///
    /// # Errors
    ///
    /// A bind or node start failed, or a route did not become ready.
    pub async fn start(ready_timeout: Duration) -> Result<OursCluster, BenchError> {
        OursCluster::start_with(ready_timeout, Transport::plain(), &[]).await
    }

    /// [`OursCluster::start`] with every link and registry connection over `transport`,
    /// authenticated with `keys` (the challenge-response handshake on every bus and registry
    /// link) unless `keys` is empty.
    ///
    /// # Errors
    ///
    /// A bind or node start failed, or a route did not become ready.
    pub async fn start_with(
        ready_timeout: Duration,
        transport: Transport,
        keys: &[ClusterKey],
    ) -> Result<OursCluster, BenchError> {
        let mut nodes = BenchNodes::start(REGISTRY_SEED, transport, keys).await?;
        let direct_b = nodes.node(DIRECT_RECEIVER, "direct-b", None).await?;
        let direct_a = nodes
            .node(DIRECT_SENDER, "direct-a", Some(DIRECT_RECEIVER))
            .await?;
        let proxy = nodes.node(PROXY, "proxy", None).await?;
        let proxied_b = nodes
            .node(PROXIED_RECEIVER, "proxied-b", Some(PROXY))
            .await?;
        let proxied_a = nodes.node(PROXIED_SENDER, "proxied-a", Some(PROXY)).await?;

        let direct = OursRoute {
            name: "direct",
            sender: direct_a.0,
            target: DIRECT_RECEIVER,
            receiver: spawn_drainer(direct_b.1, DIRECT_SENDER, DIRECT_SENDER),
        };
        let proxied = OursRoute {
            name: "proxied",
            sender: proxied_a.0,
            target: PROXIED_RECEIVER,
            receiver: spawn_drainer(proxied_b.1, PROXIED_SENDER, PROXY),
        };
        // Nobody sends to these; their drainers only keep the inboxes from filling.
        spawn_drainer(direct_a.1, NodeId::NONE, NodeId::NONE);
        spawn_drainer(proxy.1, NodeId::NONE, NodeId::NONE);
        spawn_drainer(proxied_a.1, NodeId::NONE, NodeId::NONE);

        direct.wait_ready(ready_timeout).await?;
        proxied.wait_ready(ready_timeout).await?;
        Ok(OursCluster {
            nodes,
            direct,
            proxied,
        })
    }

    /// The embedded registry's address.
    #[must_use]
    pub fn registry_addr(&self) -> SocketAddr {
        self.nodes.registry_addr()
    }

    /// Shuts every node down gracefully, then the registry (each step bounded by `timeout`).
    pub async fn shutdown(self, timeout: Duration) {
        self.nodes.shutdown(timeout).await;
    }
}

/// Messages a drainer takes from its inbox at once.
const DRAIN_BATCH: usize = 1024;

/// Reads `inbox` (in batches, `Inbox::recv_many`) until the node stops, counting messages from `from` relayed by `via` with
/// the bench type and payload as `received`, anything else as `unexpected`.
pub(crate) fn spawn_drainer(mut inbox: Inbox, from: NodeId, via: NodeId) -> Arc<ReceiverCounts> {
    let counts = Arc::new(ReceiverCounts::default());
    let task_counts = Arc::clone(&counts);
    tokio::spawn(async move {
        let mut batch = Vec::with_capacity(DRAIN_BATCH);
        while inbox.recv_many(&mut batch, DRAIN_BATCH).await > 0 {
            let (mut exact, mut other) = (0, 0);
            for msg in batch.drain(..) {
                if msg.from == from
                    && msg.via == via
                    && msg.msg_type == MSG_TYPE
                    && msg.payload.as_ref() == PAYLOAD
                {
                    exact += 1;
                } else {
                    other += 1;
                }
            }
            task_counts.unexpected.fetch_add(other, Ordering::AcqRel);
            task_counts.received.fetch_add(exact, Ordering::AcqRel);
        }
    });
    counts
}

/// One measured run on `route` per `load`, messages handed over with `api`; returns once
/// every message has its outcome.
///
/// # Errors
///
/// A send was refused (with [`SendApi::Submit`]; [`SendApi::Post`] reports refusals as
/// failures) or the node stopped.
pub async fn run_ours(
    route: &OursRoute,
    load: &Load,
    api: SendApi,
) -> Result<RunOutcome, BenchError> {
    if api == SendApi::Stream {
        return super::ours_stream::run_streamed(route, load).await;
    }
    let window = Arc::new(Semaphore::new(load.in_flight));
    let (pending_tx, pending_rx) = mpsc::channel(load.in_flight.max(1));
    let collector = tokio::spawn(collect_outcomes(
        pending_rx,
        Arc::clone(&window),
        load.expected_requests(),
    ));
    let mut sink = OursSink {
        route,
        target: TargetSpec::Id(route.target),
        payload: Bytes::from_static(PAYLOAD),
        pending: pending_tx,
        api,
    };
    let driven = drive(&mut sink, load, &window).await;
    // Dropping the sink closes the channel: the collector ends after the last outcome.
    drop(sink);
    let collected = collector
        .await
        .map_err(|e| BenchError::Task(e.to_string()))?;
    let (started, sent) = driven?;
    Ok(collected.into_run(started, sent))
}

/// The sending half of a run.
struct OursSink<'r> {
    route: &'r OursRoute,
    target: TargetSpec,
    payload: Bytes,
    pending: mpsc::Sender<(Instant, OutcomeFuture)>,
    api: SendApi,
}

/// The outcome future of one message, from either call.
enum OutcomeFuture {
    Submitted(PendingOutcome),
    Posted(PostedOutcome),
}

impl OutcomeFuture {
    /// The outcome, or the label of why there is none.
    async fn resolve(self) -> Result<Outcome, String> {
        match self {
            OutcomeFuture::Submitted(pending) => pending.await.map_err(|_| "stopped".to_owned()),
            OutcomeFuture::Posted(posted) => posted.await.map_err(|e| match e {
                SendFailure::Refused(refused) => format!("refused: {refused}"),
                _ => "stopped".to_owned(),
            }),
        }
    }
}

impl RequestSink for OursSink<'_> {
    async fn send(&mut self, sent_at: Instant) -> Result<(), BenchError> {
        let node = &self.route.sender;
        let (target, payload) = (self.target.clone(), self.payload.clone());
        let outcome = match self.api {
            SendApi::Post => node
                .post(target, MSG_TYPE, payload)
                .await
                .map(OutcomeFuture::Posted)
                .map_err(|_| SendFailure::Stopped),
            SendApi::Submit | SendApi::Stream => node
                .submit(target, MSG_TYPE, payload)
                .await
                .map(OutcomeFuture::Submitted),
        }
        .map_err(|source| BenchError::Send {
            route: self.route.name,
            source,
        })?;
        self.pending
            .send((sent_at, outcome))
            .await
            .map_err(|_| BenchError::Task("the outcome collector ended early".to_owned()))
    }

    async fn flush(&mut self) -> Result<(), BenchError> {
        // Handed-over messages are the driver's to batch; nothing is buffered here.
        Ok(())
    }
}

/// What the collector saw.
pub(crate) struct Collected {
    completed: u64,
    failed: u64,
    failures: BTreeMap<String, u64>,
    last_at: Option<Instant>,
    latencies: Latencies,
}

impl Collected {
    /// Nothing seen yet; room for `expected` round trips.
    pub(crate) fn new(expected: usize) -> Collected {
        Collected {
            completed: 0,
            failed: 0,
            failures: BTreeMap::new(),
            last_at: None,
            latencies: Latencies::with_capacity(expected),
        }
    }

    /// A `Delivered` round trip of `rtt`.
    pub(crate) fn delivered(&mut self, rtt: Duration) {
        self.latencies.record(rtt);
        self.completed += 1;
    }

    /// A message that ended otherwise, by label.
    pub(crate) fn failed(&mut self, label: String) {
        self.failed += 1;
        *self.failures.entry(label).or_insert(0) += 1;
    }

    /// An outcome (or a batch of them) came at `at`.
    pub(crate) fn seen_at(&mut self, at: Instant) {
        self.last_at = Some(at);
    }

    /// The run's outcome: `sent` messages from `started` until the last outcome.
    pub(crate) fn into_run(self, started: Instant, sent: u64) -> RunOutcome {
        RunOutcome {
            sent,
            completed: self.completed,
            failed: self.failed,
            failures: self.failures,
            elapsed: self.last_at.map_or(Duration::ZERO, |last| {
                last.saturating_duration_since(started)
            }),
            latencies: self.latencies,
        }
    }
}

async fn collect_outcomes(
    mut pending: mpsc::Receiver<(Instant, OutcomeFuture)>,
    window: Arc<Semaphore>,
    expected: usize,
) -> Collected {
    let mut c = Collected::new(expected);
    while let Some((sent_at, outcome)) = pending.recv().await {
        let outcome = outcome.resolve().await;
        let now = Instant::now();
        match outcome {
            Ok(Outcome::Delivered) => c.delivered(now.saturating_duration_since(sent_at)),
            Ok(other) => c.failed(other.label()),
            Err(label) => c.failed(label),
        }
        c.seen_at(now);
        window.add_permits(1);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::load::Stop;

    /// 500 messages on each route (direct with every call, proxied with `post` and a poster): every one
    /// `Delivered` and received exactly once, as sent.
    async fn assert_every_message_once(cluster: &OursCluster) {
        let load = Load {
            in_flight: 32,
            rate_per_sec: None,
            stop: Stop::Count(500),
        };
        let runs = [
            (&cluster.direct, SendApi::Post),
            (&cluster.direct, SendApi::Submit),
            (&cluster.proxied, SendApi::Post),
            (&cluster.direct, SendApi::Stream),
            (&cluster.proxied, SendApi::Stream),
        ];
        for (route, api) in runs {
            let before = route.receiver().received();
            let run = tokio::time::timeout(Duration::from_secs(30), run_ours(route, &load, api))
                .await
                .expect("bounded run")
                .expect("run");
            assert_eq!(run.sent, 500, "{}", route.name());
            assert_eq!(run.completed, 500, "{}: {:?}", route.name(), run.failures);
            assert_eq!(run.failed, 0, "{}", route.name());
            assert_eq!(run.latencies.len(), 500, "{}", route.name());
            let got = route
                .settle_received(before + 500, Duration::from_secs(10))
                .await;
            assert_eq!(got, before + 500, "{}: each message once", route.name());
            assert_eq!(route.receiver().unexpected(), 0, "{}", route.name());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_routes_deliver_every_message_exactly_once() {
        let cluster = tokio::time::timeout(
            Duration::from_secs(30),
            OursCluster::start(Duration::from_secs(20)),
        )
        .await
        .expect("bounded start")
        .expect("cluster starts");
        assert_every_message_once(&cluster).await;
        cluster.shutdown(Duration::from_secs(5)).await;
    }

    /// The bench's authenticated cluster: every message once, and its registry really
    /// checks the key (a node with another key is never registered).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_keyed_cluster_delivers_every_message_once_and_refuses_another_key() {
        let key = ClusterKey::from_hex(&"a7".repeat(32)).expect("a key");
        let cluster = tokio::time::timeout(
            Duration::from_secs(30),
            OursCluster::start_with(Duration::from_secs(20), Transport::plain(), &[key]),
        )
        .await
        .expect("bounded start")
        .expect("keyed cluster starts");
        assert_every_message_once(&cluster).await;
        let other = vec![ClusterKey::from_hex(&"b8".repeat(32)).expect("a key")];
        let (stranger, _inbox) = switchboard_tokio::NodeBuilder::new(NodeId(0x7b99), "stranger")
            .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
            .registry(cluster.registry_addr())
            .config(move |config| config.cluster_keys = other)
            .start()
            .await
            .expect("the stranger starts");
        assert!(
            stranger
                .wait_registered(Duration::from_secs(2))
                .await
                .is_err(),
            "another key never registers"
        );
        let _ = stranger.shutdown().await;
        cluster.shutdown(Duration::from_secs(5)).await;
    }
}
