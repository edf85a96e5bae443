//! Helpers of the driver tests: a registry and nodes tuned for fast tests, bounded waits,
//! and sequence-numbered payloads.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::{collections::BTreeSet, future::Future, net::SocketAddr, time::Duration};

use bytes::Bytes;
use switchboard_core::{
    CallSpec, backoff::BackoffConfig, config::Config, ids::NodeId, outcome::Outcome,
    registry::server::ServerConfig,
};
use switchboard_tokio::{
    Inbox, NodeBuilder, NodeHandle, PendingOutcome, Received, TargetSpec,
    node::Stopped,
    registry::{RegistryHandle, client::ClientTuning, spawn_registry},
};

/// A call of `echo` with `payload`: 10 s budget, 5 s grace.
pub(crate) fn echo_call(payload: &'static [u8]) -> CallSpec {
    CallSpec::new("echo", Bytes::from_static(payload))
        .timeout(Duration::from_secs(10))
        .grace(Duration::from_secs(5))
}

/// Upper bound of any single wait in a test (generous: the machine may be loaded).
pub(crate) const STEP: Duration = Duration::from_secs(15);

/// Logs to the test output when `SWITCHBOARD_TEST_LOG` names a level (`debug`, `info`, ...).
pub(crate) fn init_logs() {
    if let Ok(level) = std::env::var("SWITCHBOARD_TEST_LOG") {
        let level = level.parse().unwrap_or(tracing::Level::DEBUG);
        let _ = tracing_subscriber::fmt()
            .with_max_level(level)
            .with_test_writer()
            .try_init();
    }
}

/// Awaits `fut` for at most [`STEP`]; panics naming `what` on timeout.
pub(crate) async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(STEP, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {STEP:?}: {what}"),
    }
}

/// Registry settings for tests: short access and heartbeat timeouts; protection long enough
/// that no test sees a protection expire unless it waits for it.
pub(crate) fn server_config() -> ServerConfig {
    ServerConfig {
        access_timeout: Duration::from_secs(2),
        disconnect_protection: Duration::from_secs(20),
        heartbeat_timeout: Some(Duration::from_secs(3)),
        ..ServerConfig::default()
    }
}

/// A registry on a free loopback port.
pub(crate) async fn start_registry() -> RegistryHandle {
    start_registry_at(SocketAddr::from(([127, 0, 0, 1], 0))).await
}

/// A registry on `addr` (may be the address of one killed a moment ago).
pub(crate) async fn start_registry_at(addr: SocketAddr) -> RegistryHandle {
    within("registry bind", spawn_registry(addr, server_config(), 7))
        .await
        .expect("the registry binds")
}

/// Registry client settings for tests: reconnect within 100-300 ms, heartbeats every 500 ms.
pub(crate) fn tuning() -> ClientTuning {
    let mut tuning = ClientTuning::default();
    tuning.backoff = Some(BackoffConfig::without_jitter(
        Duration::from_millis(100),
        Duration::from_millis(300),
        0,
    ));
    tuning.grace = Some(Duration::from_secs(20));
    tuning.heartbeat_interval = Some(Duration::from_millis(500));
    tuning.silence_timeout = Some(Duration::from_secs(3));
    tuning
}

/// Core settings for tests: fast reconnects and heartbeats, no route ever given up on
/// retries, messages time out after 10 s.
pub(crate) fn fast(config: &mut Config) {
    config.reconnect_start = Duration::from_millis(100);
    config.reconnect_max = Duration::from_millis(300);
    config.reconnect_max_tries = 0;
    config.reconnect_jitter_percent = 0;
    config.heartbeat_interval = Duration::from_millis(500);
    config.message_timeout = Duration::from_secs(10);
    config.lost_topology_timeout = Duration::from_secs(10);
}

/// A builder for node `id` called `name` on the registry at `registry`, with [`fast`] and
/// [`tuning`].
pub(crate) fn builder(registry: SocketAddr, id: u64, name: &str) -> NodeBuilder {
    NodeBuilder::new(NodeId(id), name)
        .registry(registry)
        .registry_tuning(tuning())
        .config(fast)
}

/// A root node that may link any other node directly.
pub(crate) fn direct(registry: SocketAddr, id: u64, name: &str) -> NodeBuilder {
    builder(registry, id, name).config(|c| c.topology_policy.allow_direct_connection = true)
}

/// Starts `builder` (bounded).
pub(crate) async fn start(builder: NodeBuilder) -> (NodeHandle, Inbox) {
    within("node start", builder.start())
        .await
        .expect("the node starts")
}

/// Waits until `node` knows every id in `ids` (discovery and topology).
pub(crate) async fn wait_known(node: &NodeHandle, ids: &[u64]) {
    let ids: Vec<NodeId> = ids.iter().map(|&i| NodeId(i)).collect();
    assert!(
        node.wait_known(&ids, STEP).await,
        "node {} did not learn {ids:?}: {:?}",
        node.id(),
        node.known()
    );
}

/// A payload naming its sender and sequence number, padded to `len` bytes (at least 16).
pub(crate) fn payload(from: u64, seq: u64, len: usize) -> Bytes {
    let mut v = Vec::with_capacity(len.max(16));
    v.extend_from_slice(&from.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    while v.len() < len {
        v.push((v.len() % 251) as u8);
    }
    Bytes::from(v)
}

/// The (sender, sequence number) of a [`payload`].
pub(crate) fn parse(payload: &[u8]) -> (u64, u64) {
    let from = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
    let seq = u64::from_le_bytes(payload[8..16].try_into().expect("8 bytes"));
    (from, seq)
}

/// The next `n` messages of `inbox` (bounded).
pub(crate) async fn recv_n(inbox: &mut Inbox, n: usize) -> Vec<Received> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let msg = within("inbox message", inbox.recv())
            .await
            .expect("the node is running");
        out.push(msg);
    }
    out
}

/// Waits until `node` has an up link to each of `peers` (polling its status).
pub(crate) async fn wait_links_up(node: &NodeHandle, peers: &[u64]) {
    within("links up", async {
        loop {
            let status = node.status().await.expect("running");
            let up = |p: &u64| {
                status
                    .links
                    .iter()
                    .any(|l| l.peer == Some(*p) && l.state == "up")
            };
            if peers.iter().all(up) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// Submits messages `seqs` from `node` (id `from`) to `target`, one every `pace`; returns
/// each sequence number with its outcome future (refused sends are a test failure).
pub(crate) async fn submit_paced(
    node: &NodeHandle,
    target: u64,
    seqs: std::ops::Range<u64>,
    pace: Duration,
) -> Vec<(u64, PendingOutcome)> {
    let mut out = Vec::new();
    for seq in seqs {
        let p = within(
            "submit",
            node.submit(
                TargetSpec::Id(NodeId(target)),
                1,
                payload(node.id().0, seq, 32),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("send {seq} refused: {e}"));
        out.push((seq, p));
        tokio::time::sleep(pace).await;
    }
    out
}

/// Every outcome of `pending` (an outcome future that ends without one is `Err(Stopped)`).
pub(crate) async fn outcomes(
    pending: Vec<(u64, PendingOutcome)>,
) -> Vec<(u64, Result<Outcome, Stopped>)> {
    let mut out = Vec::with_capacity(pending.len());
    for (seq, p) in pending {
        out.push((seq, within("outcome", p).await));
    }
    out
}

/// Sequence numbers of `outcomes` that ended as `want`.
pub(crate) fn seqs_with(
    outcomes: &[(u64, Result<Outcome, Stopped>)],
    want: impl Fn(&Outcome) -> bool,
) -> BTreeSet<u64> {
    outcomes
        .iter()
        .filter(|(_, o)| o.as_ref().is_ok_and(&want))
        .map(|(seq, _)| *seq)
        .collect()
}

/// Drains `inbox` of messages from `from`: waits until every seq in `must` arrived, then takes
/// whatever else arrives within `quiet` of silence. Returns the sequence numbers in arrival
/// order (duplicates kept).
pub(crate) async fn drain_inbox(
    inbox: &mut Inbox,
    from: u64,
    must: &BTreeSet<u64>,
    quiet: Duration,
) -> Vec<u64> {
    let mut got = Vec::new();
    let mut seen = BTreeSet::new();
    let next = async |inbox: &mut Inbox, wait: Duration| {
        tokio::time::timeout(wait, inbox.recv())
            .await
            .ok()
            .flatten()
    };
    loop {
        let missing = must.iter().any(|s| !seen.contains(s));
        let wait = if missing { STEP } else { quiet };
        match next(inbox, wait).await {
            Some(msg) => {
                let (sender, seq) = parse(&msg.payload);
                assert_eq!(sender, from, "a message from an unexpected sender");
                seen.insert(seq);
                got.push(seq);
            }
            None if missing => panic!(
                "messages reported delivered never arrived: {:?}",
                must.difference(&seen).collect::<Vec<_>>()
            ),
            None => return got,
        }
    }
}

/// The duplicates in `seqs`.
pub(crate) fn duplicates(seqs: &[u64]) -> Vec<u64> {
    let mut seen = BTreeSet::new();
    seqs.iter().filter(|s| !seen.insert(**s)).copied().collect()
}

/// The `Register` frame of node `id` (incarnation `100 + id`).
pub(crate) fn register_frame(id: u64) -> Vec<u8> {
    let frame = switchboard_core::wire::Register {
        watch: false,
        incarnation: 100 + id,
        discovery: switchboard_core::discovery::DiscoveryInfo {
            id: NodeId(id),
            name: format!("n{id}"),
            ..switchboard_core::discovery::DiscoveryInfo::default()
        },
        topology: None,
        proof: None,
    };
    let mut bytes = Vec::new();
    switchboard_core::wire::encode(&frame.into(), &mut bytes).expect("encodable");
    bytes
}

/// The body of `GET /metrics` from the admin server at `admin`.
pub(crate) async fn scrape(admin: SocketAddr) -> String {
    within("scrape", async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(admin)
            .await
            .expect("connect");
        let request = "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("read");
        let (head, body) = answer.split_once("\r\n\r\n").expect("head and body");
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
        body.to_owned()
    })
    .await
}
