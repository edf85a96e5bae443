//! Helpers of the mio driver tests: an embedded registry (and tokio nodes) on a background
//! tokio runtime, MioNodes tuned for fast tests, a [`Peer`] that collects what its node
//! produces, bounded waits and sequence-numbered payloads.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use bytes::Bytes;
use switchboard_core::{
    backoff::{BackoffConfig, Jitter},
    config::Config,
    ids::{MsgId, NodeId},
    node::Event,
    outcome::Outcome,
    registry::{client::ClientEvent, server::ServerConfig},
};
use switchboard_mio::{AppEvent, MioNode};
use switchboard_tokio::registry::{RegistryHandle, spawn_registry};

/// Upper bound of any single wait in a test (generous: the machine may be loaded).
pub(crate) const STEP: Duration = Duration::from_secs(20);
/// How long one `run_once` may block in the tests' loops.
pub(crate) const TICK: Duration = Duration::from_millis(2);

/// A loopback address with a free port.
pub(crate) fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A tokio runtime (its worker threads run the registry and tokio nodes in the background)
/// and an embedded registry on a free loopback port.
pub(crate) struct World {
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) registry: RegistryHandle,
}

impl World {
    /// Starts the runtime and the registry (default server config).
    pub(crate) fn start() -> World {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime starts");
        let registry = rt
            .block_on(async {
                tokio::time::timeout(STEP, spawn_registry(any_port(), ServerConfig::default(), 7))
                    .await
            })
            .expect("the registry binds in time")
            .expect("the registry binds");
        World { rt, registry }
    }

    /// The registry's address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.registry.local_addr()
    }
}

/// Core settings for tests: fast reconnects and heartbeats, messages time out after 10 s.
pub(crate) fn fast(config: &mut Config) {
    config.reconnect_start = Duration::from_millis(100);
    config.reconnect_max = Duration::from_millis(300);
    config.reconnect_max_tries = 0;
    config.reconnect_jitter_percent = 0;
    config.heartbeat_interval = Duration::from_millis(500);
    config.message_timeout = Duration::from_secs(10);
    config.lost_topology_timeout = Duration::from_secs(10);
}

/// Registry client settings for tests: reconnect within 100-300 ms, heartbeats every 500 ms.
pub(crate) fn tune_client(config: &mut switchboard_core::registry::client::ClientConfig) {
    config.backoff = BackoffConfig {
        start: Duration::from_millis(100),
        max: Duration::from_millis(300),
        max_tries: 0,
        jitter: Jitter::None,
    };
    config.heartbeat_interval = Duration::from_millis(500);
    config.silence_timeout = Duration::from_secs(5);
}

/// A node `id` called `name`, with [`fast`] settings, `edit` applied, on `registry` (if any).
pub(crate) fn mio_node(
    registry: Option<SocketAddr>,
    id: u64,
    name: &str,
    edit: impl FnOnce(&mut Config),
) -> Peer {
    let mut config = Config::new(NodeId(id), name);
    fast(&mut config);
    edit(&mut config);
    let node = MioNode::bind_with(config, any_port(), registry, tune_client).expect("binds");
    Peer::new(node)
}

/// A root node that may link any other node directly.
pub(crate) fn direct(config: &mut Config) {
    config.topology_policy.allow_direct_connection = true;
}

/// A received message: (from, via, msg_type, payload).
pub(crate) type Got = (NodeId, NodeId, u32, Bytes);

/// A MioNode and everything it produced so far.
pub(crate) struct Peer {
    pub(crate) node: MioNode,
    pub(crate) received: Vec<Got>,
    pub(crate) outcomes: Vec<(MsgId, Outcome)>,
    pub(crate) node_events: Vec<Event>,
    pub(crate) registry_events: Vec<ClientEvent>,
    /// RPC events (requests, call outcomes, broadcast reports), in order.
    pub(crate) rpc: Vec<switchboard_core::RpcOutput>,
}

impl Peer {
    pub(crate) fn new(node: MioNode) -> Peer {
        Peer {
            node,
            received: Vec::new(),
            outcomes: Vec::new(),
            node_events: Vec::new(),
            registry_events: Vec::new(),
            rpc: Vec::new(),
        }
    }

    /// One `run_once` (at most [`TICK`]), then every event taken.
    pub(crate) fn pump(&mut self) {
        self.node.run_once(Some(TICK)).expect("the poll works");
        self.take_events();
    }

    /// Takes every waiting event into the collections.
    pub(crate) fn take_events(&mut self) {
        while let Some(event) = self.node.poll_event() {
            match event {
                AppEvent::Received {
                    from,
                    via,
                    msg_type,
                    payload,
                } => self.received.push((from, via, msg_type, payload)),
                AppEvent::Outcome { msg, outcome } => self.outcomes.push((msg, outcome)),
                AppEvent::Node(event) => self.node_events.push(event),
                AppEvent::Registry(event) => self.registry_events.push(event),
                AppEvent::Rpc(output) => self.rpc.push(output),
                other => panic!("unexpected event {other:?}"),
            }
        }
    }

    /// Whether the node has discovery and topology records of every id in `ids`.
    pub(crate) fn knows(&self, ids: &[u64]) -> bool {
        let node = self.node.node();
        ids.iter().all(|&id| {
            node.inspect().discovery().get_by_id(NodeId(id)).is_some()
                && node.inspect().topology().contains(NodeId(id))
        })
    }

    /// The outcome of `msg`, if it ended.
    pub(crate) fn outcome_of(&self, msg: MsgId) -> Option<Outcome> {
        self.outcomes
            .iter()
            .find(|(m, _)| *m == msg)
            .map(|(_, o)| *o)
    }
}

/// Pumps every peer in turn until `done` holds, at most [`STEP`]; panics naming `what`.
pub(crate) fn pump_until(
    what: &str,
    peers: &mut [&mut Peer],
    mut done: impl FnMut(&[&mut Peer]) -> bool,
) {
    let deadline = Instant::now() + STEP;
    loop {
        for peer in peers.iter_mut() {
            peer.pump();
        }
        if done(peers) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {STEP:?}: {what}"
        );
    }
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
