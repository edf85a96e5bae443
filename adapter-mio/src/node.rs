//! [`MioNode`]: one core `Node` (and optionally its embedded-registry client) on a
//! single-threaded `mio::Poll`, driven by the caller's loop through
//! [`run_once`](MioNode::run_once).
//!
//! This module holds the node's state, how it starts ([`MioNode::bind`]: listener, records,
//! registry client), the commands (`send`, `shutdown`) and the read-only views. The loop
//! itself — readiness → one `handle_*` call → drained outputs → socket operations — lives in
//! the private `driver` module.

use std::{
    collections::{BTreeSet, HashMap, VecDeque, hash_map::RandomState},
    env, fs,
    hash::BuildHasher,
    io,
    net::SocketAddr,
    process,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use mio::{Events, Interest, Poll, Registry, Token, net::TcpListener};
use switchboard_core::{
    NonceEntropy, RpcOutput,
    config::{Config, ConfigError, host_name},
    ids::{LinkId, MsgId, NodeId},
    node::{Event, Node, SendError, Status},
    outcome::Outcome,
    registry::client::{ClientConfig, ClientEvent, RegistryClient},
    rng::entropy_seed,
    select::Select,
};

use crate::{
    clock::Clock,
    conn::Conn,
    tokens::{TokenRange, Tokens},
};

/// Readiness events taken from the poll at once.
const EVENTS_CAPACITY: usize = 1024;
/// How long [`MioNode::shutdown`] waits for links and the registry connection to flush.
pub const SHUTDOWN_FLUSH: Duration = Duration::from_secs(2);

/// Something the application may act on, taken with [`MioNode::poll_event`] in the order it
/// happened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppEvent {
    /// A message for this node.
    Received {
        /// The node that sent it.
        from: NodeId,
        /// The node it arrived from (the sender, or the last relay).
        via: NodeId,
        /// Application message type.
        msg_type: u32,
        /// The payload, byte for byte as sent.
        payload: Bytes,
    },
    /// How an accepted message ended: exactly one per [`MsgId`] that `send` returned.
    Outcome {
        /// The message.
        msg: MsgId,
        /// How it ended.
        outcome: Outcome,
    },
    /// A core observability event (link up or closed, route changes, rejected input).
    Node(Event),
    /// A registry client event (registered, refused, disconnected, protocol error).
    Registry(ClientEvent),
    /// An RPC event: a request for a served method (answer with [`MioNode::reply`]), a
    /// cancelled request, a call's outcome, a broadcast's report. (The core's `Republish` is
    /// handled by the node: its record is published again on the registry.)
    Rpc(RpcOutput),
}

/// Why [`MioNode::bind`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The configuration is invalid.
    #[error("invalid config: {0}")]
    Config(#[from] ConfigError),
    /// The poll could not be created, or the listen address not bound or registered.
    #[error("cannot listen on {addr}: {source}")]
    Io {
        /// The listen address asked for.
        addr: SocketAddr,
        /// The error.
        source: io::Error,
    },
    /// The token range given to [`MioNode::embed`] has fewer than 2 tokens or passes
    /// `usize::MAX`.
    #[error("unusable token range {0:?}: a node needs at least 2 tokens")]
    TokenRange(TokenRange),
}

/// The poll of a node that owns it ([`MioNode::bind`]).
#[derive(Debug)]
pub(crate) struct OwnedPoll {
    pub(crate) poll: Poll,
    pub(crate) events: Events,
}

/// The registry client and its one connection.
#[derive(Debug)]
pub(crate) struct RegistrySide {
    pub(crate) addr: SocketAddr,
    pub(crate) client: RegistryClient,
    pub(crate) conn: Option<Conn>,
    /// Generation of the current connection (its token is derived from it).
    pub(crate) generation: u64,
}

/// A connection the core (or the registry client) closed: flushing what it holds, then
/// waiting for the peer's end of stream, at most until `deadline`.
#[derive(Debug)]
pub(crate) struct Closing {
    pub(crate) conn: Conn,
    pub(crate) deadline: switchboard_core::time::Instant,
    pub(crate) fin_sent: bool,
}

/// A switchboard node on a single-threaded `mio::Poll` — its own ([`bind`](Self::bind)) or
/// the application's ([`embed`](Self::embed)). See the [crate docs](crate).
#[derive(Debug)]
pub struct MioNode {
    /// The node's own poll; `None` when embedded in the application's.
    pub(crate) owned: Option<OwnedPoll>,
    /// Where the node registers its sockets: its own poll's registry or the application's.
    pub(crate) mio: Registry,
    /// The tokens it registers them with, and what each stands for.
    pub(crate) tokens: Tokens,
    pub(crate) listener: Option<TcpListener>,
    pub(crate) local_addr: SocketAddr,
    pub(crate) node: Node,
    pub(crate) clock: Clock,
    pub(crate) links: HashMap<LinkId, Conn>,
    pub(crate) closing: HashMap<Token, Closing>,
    pub(crate) registry: Option<RegistrySide>,
    pub(crate) app: VecDeque<AppEvent>,
    /// Links with bytes queued since their last flush.
    pub(crate) dirty: BTreeSet<LinkId>,
    /// Whether the registry connection has bytes queued since its last flush.
    pub(crate) registry_dirty: bool,
    /// Connections whose read stopped early (budget or a full event queue): read again at
    /// the next `run_once`.
    pub(crate) resume: BTreeSet<Token>,
    pub(crate) scratch: Vec<u8>,
}

impl MioNode {
    /// Binds `listen` (port 0 picks a free one) and starts a node with `config`, joined to
    /// the embedded registry at `registry` if given (default client settings). See
    /// [`bind_with`](Self::bind_with).
    ///
    /// # Errors
    ///
    /// An invalid config, or the poll or listener could not be set up.
    pub fn bind(
        config: Config,
        listen: SocketAddr,
        registry: Option<SocketAddr>,
    ) -> Result<MioNode, BindError> {
        MioNode::bind_with(config, listen, registry, |_| {})
    }

    /// Like [`bind`](Self::bind), with `tune` applied to the registry client's config
    /// (backoff, heartbeat, silence timeout) before it starts.
    ///
    /// An empty `config.listen` becomes the bound address (`atcp://ip:port`, loopback for an
    /// unspecified ip); an empty hostname and a zero pid become this host's and process's;
    /// fresh entropy is mixed into `rng_seed` so a restarted node is a new incarnation. The
    /// node registers its discovery record (id, name, host, pid, listen addresses, labels as
    /// metadata labels) and its topology record (upstream, labels). Nothing is dialled until
    /// the first [`run_once`](Self::run_once) — the dials are queued already.
    ///
    /// # Errors
    ///
    /// An invalid config, or the poll or listener could not be set up.
    pub fn bind_with(
        config: Config,
        listen: SocketAddr,
        registry: Option<SocketAddr>,
        tune: impl FnOnce(&mut ClientConfig),
    ) -> Result<MioNode, BindError> {
        let io_error = |source| BindError::Io {
            addr: listen,
            source,
        };
        let poll = Poll::new().map_err(io_error)?;
        let mio = poll.registry().try_clone().map_err(io_error)?;
        let owned = OwnedPoll {
            poll,
            events: Events::with_capacity(EVENTS_CAPACITY),
        };
        MioNode::start(
            config,
            listen,
            registry,
            tune,
            mio,
            TokenRange::ALL,
            Some(owned),
        )
    }

    /// Starts a node like [`bind`](Self::bind), embedded in the application's `mio::Poll`
    /// instead of owning one: it registers its listener and connections with `mio` (the
    /// application poll's registry) under tokens of `tokens` only. The application's loop
    /// then waits on its poll for at most [`poll_timeout`](Self::poll_timeout) (or until
    /// [`next_timeout`](Self::next_timeout)), passes each event whose token the node
    /// [`owns`](Self::owns) to [`handle_event`](Self::handle_event), calls
    /// [`process`](Self::process) after every poll, and takes
    /// [`poll_event`](Self::poll_event)s. See the [crate docs](crate) for an example.
    ///
    /// `tokens.base()` is the listener's token; the others are given to connections as they
    /// open, so `tokens.len() - 1` bounds the node's open connections (links, the registry
    /// connection, closing ones): a dial or accept beyond that fails like a refused
    /// connection. Several nodes and the application's own sources share one poll when
    /// their ranges do not overlap.
    ///
    /// # Errors
    ///
    /// An invalid config, an unusable token range, or the listener could not be set up.
    pub fn embed(
        config: Config,
        listen: SocketAddr,
        registry: Option<SocketAddr>,
        mio: &Registry,
        tokens: TokenRange,
    ) -> Result<MioNode, BindError> {
        MioNode::embed_with(config, listen, registry, mio, tokens, |_| {})
    }

    /// Like [`embed`](Self::embed), with `tune` applied to the registry client's config.
    ///
    /// # Errors
    ///
    /// An invalid config, an unusable token range, or the listener could not be set up.
    pub fn embed_with(
        config: Config,
        listen: SocketAddr,
        registry: Option<SocketAddr>,
        mio: &Registry,
        tokens: TokenRange,
        tune: impl FnOnce(&mut ClientConfig),
    ) -> Result<MioNode, BindError> {
        if !tokens.is_usable() {
            return Err(BindError::TokenRange(tokens));
        }
        let mio = mio.try_clone().map_err(|source| BindError::Io {
            addr: listen,
            source,
        })?;
        MioNode::start(config, listen, registry, tune, mio, tokens, None)
    }

    /// What `bind_with` and `embed_with` share: everything but where the poll comes from.
    fn start(
        mut config: Config,
        listen: SocketAddr,
        registry: Option<SocketAddr>,
        tune: impl FnOnce(&mut ClientConfig),
        mio: Registry,
        tokens: TokenRange,
        owned: Option<OwnedPoll>,
    ) -> Result<MioNode, BindError> {
        config.validate()?;
        let io_error = |source| BindError::Io {
            addr: listen,
            source,
        };
        let tokens = Tokens::new(tokens);
        let mut listener = TcpListener::bind(listen).map_err(io_error)?;
        let local_addr = listener.local_addr().map_err(io_error)?;
        mio.register(&mut listener, tokens.range().base(), Interest::READABLE)
            .map_err(io_error)?;
        // This process's facts: the core picks the host name and mixes the entropy.
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH);
        let random = RandomState::new().hash_one(());
        let entropy = entropy_seed(random, nanos.map_or(0, |d| d.as_nanos()), process::id());
        let hostname = || {
            let proc = fs::read_to_string("/proc/sys/kernel/hostname").ok();
            host_name([proc.as_deref(), env::var("HOSTNAME").ok().as_deref()])
        };
        config.fill_from_process(local_addr, process::id(), hostname, entropy);
        if config.nonce_entropy.is_empty() {
            config.nonce_entropy = nonce_entropy();
        }
        let clock = Clock::start();
        let node = Node::new(config, clock.now())?;
        let registry = registry.map(|addr| {
            let mut client_config = node.registry_client_config();
            tune(&mut client_config);
            RegistrySide {
                addr,
                client: RegistryClient::new(client_config, clock.now()),
                conn: None,
                generation: 0,
            }
        });
        let mut mio_node = MioNode {
            owned,
            mio,
            tokens,
            listener: Some(listener),
            local_addr,
            node,
            clock,
            links: HashMap::new(),
            closing: HashMap::new(),
            registry,
            app: VecDeque::new(),
            dirty: BTreeSet::new(),
            registry_dirty: false,
            resume: BTreeSet::new(),
            scratch: vec![0; crate::driver::READ_CHUNK],
        };
        let now = mio_node.clock.now();
        mio_node.drain(now);
        Ok(mio_node)
    }

    /// The address the listener is bound to.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The core node, read-only: discovery, topology, routes, pending counts.
    #[must_use]
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The registry client, read-only (`None` without a registry).
    #[must_use]
    pub fn registry_client(&self) -> Option<&RegistryClient> {
        self.registry.as_ref().map(|r| &r.client)
    }

    /// The node's status now: the core's snapshot (the one `switchboard-tokio` serves on
    /// `/status`) with `registered` as [`is_registered`](Self::is_registered) says.
    #[must_use]
    pub fn status(&self) -> Status {
        let mut status = self.node.status();
        status.registered = self.is_registered();
        status
    }

    /// Whether the registry answered this node's registration on the current connection.
    #[must_use]
    pub fn is_registered(&self) -> bool {
        self.registry
            .as_ref()
            .is_some_and(|r| r.client.is_registered())
    }

    /// Hands a message to the core; its [`AppEvent::Outcome`] follows. The frames go out
    /// at the next [`run_once`](Self::run_once) (sends between two calls are written in one
    /// batch).
    ///
    /// # Errors
    ///
    /// The core's [`SendError`]: nothing was accepted and no outcome will follow.
    pub fn send(
        &mut self,
        target: Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        let now = self.clock.now();
        let msg = self.node.send(now, target, msg_type, payload)?;
        self.drain(now);
        Ok(msg)
    }

    /// The oldest event not taken yet. Call until `None` after every
    /// [`run_once`](Self::run_once): while [`EVENT_CAPACITY`](crate::EVENT_CAPACITY) events
    /// wait, the node stops reading its links (the peers see backpressure).
    pub fn poll_event(&mut self) -> Option<AppEvent> {
        self.app.pop_front()
    }

    /// Events waiting to be taken.
    #[must_use]
    pub fn pending_events(&self) -> usize {
        self.app.len()
    }

    /// Graceful stop: every queued or unacknowledged message ends (`Failed(Shutdown)` /
    /// `Unknown(Shutdown)`, waiting in [`poll_event`](Self::poll_event)), the registry client
    /// says `Bye` (the registry removes the node at once), the listener closes, and the
    /// links and registry connection are flushed and closed — this call drives the poll for
    /// at most [`SHUTDOWN_FLUSH`] to do so (an embedded node returns at once; the
    /// application's loop, still passing events and calling `process`, finishes them). Later `send`s fail with
    /// [`SendError::Shutdown`]; later `run_once` calls do nothing but finish closes.
    ///
    /// # Errors
    ///
    /// The poll failed.
    pub fn shutdown(&mut self) -> io::Result<()> {
        let now = self.clock.now();
        self.node.shutdown(now);
        if let Some(registry) = &mut self.registry {
            registry.client.shutdown();
        }
        self.drain(now);
        if let Some(mut listener) = self.listener.take() {
            let _ = self.mio.deregister(&mut listener);
        }
        self.stop_registry_dial();
        let until = std::time::Instant::now() + SHUTDOWN_FLUSH;
        loop {
            self.flush_dirty(self.clock.now());
            let left = until.saturating_duration_since(std::time::Instant::now());
            if self.owned.is_none() {
                // Embedded: the application's loop finishes the closes (`process` ends each
                // within its linger).
                return Ok(());
            }
            if self.closing.is_empty() || left.is_zero() {
                break;
            }
            self.run_once(Some(left))?;
        }
        for (token, mut closing) in self.closing.drain() {
            closing.conn.deregister(&self.mio);
            self.tokens.give_back(token);
        }
        Ok(())
    }
}

/// 32 bytes from the operating system's random source for the handshake nonces
/// ([`NonceEntropy`]); should the OS refuse (it does not on Linux after boot), the process's
/// randomly keyed hashers stand in.
fn nonce_entropy() -> NonceEntropy {
    let mut bytes = [0u8; 32];
    if getrandom::getrandom(&mut bytes).is_err() {
        for (i, chunk) in bytes.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&RandomState::new().hash_one(i).to_le_bytes());
        }
    }
    NonceEntropy(bytes)
}
