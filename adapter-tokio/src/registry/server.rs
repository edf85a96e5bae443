//! The embedded registry server over TCP: one task drives the core's `RegistryServer`, per
//! connection reader and writer tasks move bytes.
//!
//! The task waits for an accepted connection, a byte chunk or close from a connection, a
//! request from the [`RegistryHandle`], or the server machine's next deadline; makes one
//! `handle_*` call; and drains `poll_output` into the connections' writers (`Close` drops a
//! writer, which flushes and closes). Every connection task lives in the server task's
//! `JoinSet`, so killing the server task drops the listener and every socket at once — what a
//! killed registry process looks like to its clients.
//!
//! **Connection caps** ([`ConnectionCaps`]): at most `max_connections` connections at once
//! (65,536 by default) and at most `max_unregistered` of them not registered yet
//! (1,024; TLS handshakes in flight count toward both). At `max_unregistered`, a new
//! connection closes the oldest unregistered one to make room (silent strangers cannot keep
//! real nodes out until their access timeout); over `max_connections` (or with every
//! unregistered place a TLS handshake in flight) the new connection is accepted and closed at
//! once. Both are counted ([`RegistryMetrics`]'s `connections_refused`) and logged at most
//! once per [`REFUSAL_LOG_PERIOD`]; a slot freed by a close or a registration is available to
//! the very next accept. An `accept` error (e.g. EMFILE, no file descriptor
//! left) pauses accepting until a connection closes or a backoff (10 ms doubling to 1 s)
//! ends, instead of retrying in a tight loop.

use std::{
    collections::{BTreeSet, HashMap},
    net::SocketAddr,
    time::Duration,
};

use bytes::Bytes;
use switchboard_core::{
    ids::NodeId,
    registry::server::{ConnId, EntryKey, RegistryServer, ServerConfig, ServerEvent, ServerOutput},
    wire::RegistryEntry,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{mpsc, oneshot},
    task::{AbortHandle, JoinHandle, JoinSet},
};
use tracing::{debug, info, warn};

use crate::{
    clock::Clock,
    net,
    observe::RegistryMetrics,
    transport::{Stream, Transport},
};

/// At most this many queued connection events are handled before a due deadline (the
/// capacity of the events channel: everything the readers handed over).
const EVENTS_BEFORE_TIMEOUT: usize = EVENTS_CAPACITY;

/// Capacity of the channel the connection tasks report to the registry loop on.
const EVENTS_CAPACITY: usize = 1024;

/// How long a graceful stop waits for the writers to flush.
const SHUTDOWN_FLUSH: std::time::Duration = std::time::Duration::from_secs(2);

/// Refusals at a cap, and accept errors, are logged at most once per this period (with the
/// number left unlogged meanwhile).
pub const REFUSAL_LOG_PERIOD: Duration = Duration::from_secs(10);

/// First pause after an `accept` error; it doubles up to [`ACCEPT_PAUSE_MAX`].
const ACCEPT_PAUSE_MIN: Duration = Duration::from_millis(10);

/// Longest pause after repeated `accept` errors.
const ACCEPT_PAUSE_MAX: Duration = Duration::from_secs(1);

/// How many connections the registry holds at once (see the module docs).
///
/// The defaults: 65,536 connections in all (one per node of a large cluster, well under the
/// file-descriptor limit a registry host is given), and 1,024 not registered yet — a
/// registering node needs its slot for one round trip, so 1,024 lets a whole rack restart at
/// once while a flood of idle or trickling connections (each holds its slot up to the 10 s
/// access timeout) cannot crowd out the registered cluster or exhaust descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionCaps {
    /// Most connections open at once, registered or not.
    pub max_connections: usize,
    /// Most connections open at once that have not registered yet (TLS handshakes included).
    pub max_unregistered: usize,
}

impl ConnectionCaps {
    /// At most `max_connections` open, `max_unregistered` of them not registered yet.
    #[must_use]
    pub fn new(max_connections: usize, max_unregistered: usize) -> ConnectionCaps {
        ConnectionCaps {
            max_connections,
            max_unregistered,
        }
    }
}

impl Default for ConnectionCaps {
    fn default() -> Self {
        ConnectionCaps {
            max_connections: 65_536,
            max_unregistered: 1_024,
        }
    }
}

/// Requests from a [`RegistryHandle`].
#[derive(Debug)]
enum Control {
    Entries(oneshot::Sender<Vec<RegistryEntry>>),
    Metrics(oneshot::Sender<RegistryMetrics>),
    Shutdown(oneshot::Sender<()>),
}

/// A running embedded registry.
///
/// Dropping the handle leaves the registry running (as a detached task); use
/// [`kill`](Self::kill) or [`shutdown`](Self::shutdown) to stop it.
#[derive(Debug)]
pub struct RegistryHandle {
    local_addr: SocketAddr,
    epoch: u64,
    control: mpsc::Sender<Control>,
    abort: AbortHandle,
    task: JoinHandle<()>,
}

impl RegistryHandle {
    /// The address it listens on (the real port when bound to port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The registry's epoch (new at every start).
    ///
    /// **Cancellation:** safe; it only reads.
    pub async fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The entries it lists now (registered and protected); empty once it stopped.
    ///
    /// **Cancellation:** safe; a dropped call only discards its answer.
    pub async fn entries(&self) -> Vec<RegistryEntry> {
        let (tx, rx) = oneshot::channel();
        if self.control.send(Control::Entries(tx)).await.is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    /// Its counters and gauges now; `None` once it stopped.
    pub async fn metrics(&self) -> Option<RegistryMetrics> {
        self.stats().metrics().await
    }

    /// A cloneable handle that only reads the registry's metrics (what its admin server
    /// serves).
    #[must_use]
    pub fn stats(&self) -> RegistryStats {
        RegistryStats {
            control: self.control.clone(),
        }
    }

    /// Stops abruptly: the listener and every connection are dropped without a goodbye (as
    /// if the process were killed). The port is free once the runtime dropped the task — a
    /// moment later; [`spawn_registry`] on the same address waits for that.
    pub fn kill(&self) {
        self.abort.abort();
    }

    /// Stops gracefully — stops listening, flushes and closes every connection (clients see
    /// a close and keep their view: the node entries are not removed) — and waits until the
    /// task ended.
    ///
    /// **Cancellation:** dropping the future after the request was queued does not stop the
    /// graceful stop; it only stops waiting for its end. Dropped before, the handle is gone and
    /// the registry runs on (use [`kill`](Self::kill) to stop it).
    pub async fn shutdown(self) {
        let (tx, rx) = oneshot::channel();
        if self.control.send(Control::Shutdown(tx)).await.is_ok() {
            let _ = rx.await;
        }
        let _ = self.task.await;
    }
}

/// Reads a running registry's [`RegistryMetrics`] ([`RegistryHandle::stats`]).
#[derive(Clone, Debug)]
pub struct RegistryStats {
    control: mpsc::Sender<Control>,
}

impl RegistryStats {
    /// The registry's counters and gauges now; `None` once it stopped.
    pub async fn metrics(&self) -> Option<RegistryMetrics> {
        let (tx, rx) = oneshot::channel();
        self.control.send(Control::Metrics(tx)).await.ok()?;
        rx.await.ok()
    }
}

/// Binds `addr` and starts a registry with `config` (its epoch drawn from `seed` and the
/// clock; a `config.nonce_entropy` left at zeros is filled from the OS random source).
///
/// An address still held by a registry killed a moment ago in this process is retried for a
/// short while, so a registry can be restarted on the same address right after
/// [`RegistryHandle::kill`].
///
/// **Cancellation:** dropping the future before it resolves closes the listener bound so
/// far; no registry task is left running.
///
/// # Errors
///
/// The bind failed.
pub async fn spawn_registry(
    addr: SocketAddr,
    config: ServerConfig,
    seed: u64,
) -> std::io::Result<RegistryHandle> {
    spawn_registry_with(addr, config, seed, Transport::plain()).await
}

/// [`spawn_registry`] with its connections carried by `transport` (TLS: every client must
/// complete the TLS handshake, with a certificate of the CA, before the registry sees a byte).
///
/// # Errors
///
/// The bind failed.
pub async fn spawn_registry_with(
    addr: SocketAddr,
    config: ServerConfig,
    seed: u64,
    transport: Transport,
) -> std::io::Result<RegistryHandle> {
    spawn_registry_capped(addr, config, seed, transport, ConnectionCaps::default()).await
}

/// [`spawn_registry_with`] holding at most `caps` connections.
///
/// # Errors
///
/// `config` is inconsistent ([`ServerConfig::validate`]; `InvalidInput`), a cap is 0
/// (`InvalidInput`), or the bind failed.
pub async fn spawn_registry_capped(
    addr: SocketAddr,
    mut config: ServerConfig,
    seed: u64,
    transport: Transport,
    caps: ConnectionCaps,
) -> std::io::Result<RegistryHandle> {
    config
        .validate()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    if caps.max_connections == 0 || caps.max_unregistered == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "registry connection caps must be at least 1",
        ));
    }
    let listener = net::bind_listener(addr).await?;
    let local_addr = listener.local_addr()?;
    if config.nonce_entropy.is_empty() {
        config.nonce_entropy = net::nonce_entropy();
    }
    let server = RegistryServer::new(config, seed ^ net::entropy());
    let epoch = server.epoch();
    let (control, control_rx) = mpsc::channel(16);
    let (events_tx, events_rx) = mpsc::channel(EVENTS_CAPACITY);
    let task = ServerTask {
        clock: Clock::start(),
        server,
        conns: HashMap::new(),
        events_tx,
        tasks: JoinSet::new(),
        snapshots_sent: 0,
        counted: EventCounts::default(),
        transport,
        caps,
        unregistered: BTreeSet::new(),
        tls_pending: 0,
        refused: Refused::default(),
        strangers: Strangers::default(),
        accept_paused_until: None,
        accept_backoff: Duration::ZERO,
    };
    info!(%local_addr, epoch, "registry listening");
    let task = tokio::spawn(task.run(listener, events_rx, control_rx));
    Ok(RegistryHandle {
        local_addr,
        epoch,
        control,
        abort: task.abort_handle(),
        task,
    })
}

/// What a connection's tasks report.
enum ConnEvent {
    /// An accepted connection finished its TLS handshake; with the node ids its certificate
    /// names, if any (its registration must claim one of them).
    Accepted(Stream, SocketAddr, Option<Vec<NodeId>>),
    /// An accepted connection's TLS handshake failed (its slot is free again).
    TlsFailed,
    Bytes(ConnId, Bytes),
    Closed(ConnId, String),
}

/// One open connection: its writer queue and its reader task.
struct Conn {
    writer: mpsc::UnboundedSender<Bytes>,
    reader: AbortHandle,
    peer: SocketAddr,
}

struct ServerTask {
    clock: Clock,
    server: RegistryServer,
    conns: HashMap<ConnId, Conn>,
    events_tx: mpsc::Sender<ConnEvent>,
    tasks: JoinSet<()>,
    /// Snapshots sent: the server answers every registration with one.
    snapshots_sent: u64,
    /// What the server's events counted (registrations, removals, expiries, ...).
    counted: EventCounts,
    transport: Transport,
    caps: ConnectionCaps,
    /// Open connections that have not registered yet.
    /// Connections not registered yet, oldest first.
    unregistered: BTreeSet<ConnId>,
    /// TLS handshakes in flight (they count toward both caps).
    tls_pending: usize,
    refused: Refused,
    strangers: Strangers,
    /// After an `accept` error: accept again at this instant, or at the next close.
    accept_paused_until: Option<tokio::time::Instant>,
    /// The last pause after an `accept` error (zero after a successful accept).
    accept_backoff: Duration,
}

/// Handshakes that did not complete (wrong key, no key, aborted after our proof, timed out):
/// where they came from, and the rate limit of their warn lines — one per
/// [`REFUSAL_LOG_PERIOD`] at most, with the count left unlogged since the last.
#[derive(Debug, Default)]
struct Strangers {
    /// Peers of connections closed during this drain, for the events that follow the close.
    gone: HashMap<ConnId, SocketAddr>,
    logged_at: Option<tokio::time::Instant>,
    unlogged: u64,
}

impl Strangers {
    /// Logs one refused handshake from `peer` unless a line went out within the period.
    fn refused(&mut self, peer: Option<SocketAddr>, failure: switchboard_core::AuthFailure) {
        let now = tokio::time::Instant::now();
        if self
            .logged_at
            .is_some_and(|at| now.duration_since(at) < REFUSAL_LOG_PERIOD)
        {
            self.unlogged += 1;
            return;
        }
        self.logged_at = Some(now);
        let unlogged = std::mem::take(&mut self.unlogged);
        let peer = peer.map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        warn!(
            %peer,
            kind = failure.as_str(),
            unlogged,
            "registry refused a connection: its handshake did not prove the cluster key \
             (a retired or wrong key, no key, aborted after our proof, or timed out)"
        );
    }
}

/// Connections refused at a cap, and the rate limit of their log lines.
#[derive(Debug, Default)]
struct Refused {
    /// At `max_connections`.
    total: u64,
    /// At `max_unregistered`.
    unregistered: u64,
    /// `accept` errors.
    accept_errors: u64,
    /// When a refusal or error was last logged.
    logged_at: Option<tokio::time::Instant>,
    /// Refusals and errors since then, not logged.
    unlogged: u64,
}

impl Refused {
    /// Whether to log now (at most once per [`REFUSAL_LOG_PERIOD`]); the count of the
    /// ones not logged since the last line, if so.
    fn log_now(&mut self) -> Option<u64> {
        let now = tokio::time::Instant::now();
        if self
            .logged_at
            .is_some_and(|at| now.duration_since(at) < REFUSAL_LOG_PERIOD)
        {
            self.unlogged += 1;
            return None;
        }
        self.logged_at = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }
}

impl ServerTask {
    async fn run(
        mut self,
        listener: TcpListener,
        mut events: mpsc::Receiver<ConnEvent>,
        mut control: mpsc::Receiver<Control>,
    ) {
        let mut control_open = true;
        loop {
            let deadline = self.server.poll_timeout().map(|d| self.clock.to_tokio(d));
            let paused_until = self.accept_paused_until;
            tokio::select! {
                accepted = listener.accept(), if paused_until.is_none() => match accepted {
                    Ok((stream, peer)) => {
                        self.accept_backoff = Duration::ZERO;
                        self.accepted(stream, peer);
                    }
                    Err(e) => self.accept_failed(&e),
                },
                () = net::sleep_until(paused_until), if paused_until.is_some() => {
                    self.accept_paused_until = None;
                }
                Some(event) = events.recv() => self.on_event(event),
                request = control.recv(), if control_open => match request {
                    Some(Control::Entries(tx)) => {
                        let _ = tx.send(self.server.entries());
                    }
                    Some(Control::Metrics(tx)) => {
                        let _ = tx.send(self.metrics());
                    }
                    Some(Control::Shutdown(done)) => {
                        drop(listener);
                        self.shutdown().await;
                        let _ = done.send(());
                        return;
                    }
                    None => control_open = false,
                },
                () = net::sleep_until(deadline) => {
                    // What the readers already handed over arrived before this deadline: a
                    // heartbeat queued behind a busy moment refreshes its connection before
                    // the silence timer looks at it.
                    for _ in 0..EVENTS_BEFORE_TIMEOUT {
                        let Ok(event) = events.try_recv() else { break };
                        self.on_event(event);
                        self.drain();
                    }
                    let now = self.clock.now();
                    self.server.handle_timeout(now);
                }
            }
            self.drain();
        }
    }

    /// A TCP connection came in: plain, it is a connection at once; with TLS a task runs the
    /// TLS handshake first and reports [`ConnEvent::Accepted`] (a failed one is dropped, and
    /// the registry never sees the client).
    fn accepted(&mut self, stream: TcpStream, peer: SocketAddr) {
        let open = self.conns.len() + self.tls_pending;
        let fresh = self.unregistered.len() + self.tls_pending;
        if open < self.caps.max_connections
            && fresh >= self.caps.max_unregistered
            && let Some(&oldest) = self.unregistered.first()
        {
            // The oldest unregistered connection makes room: strangers that connect and
            // stay silent cannot keep a real node out until their access timeout.
            self.evict(oldest, peer);
        }
        let open = self.conns.len() + self.tls_pending;
        let fresh = self.unregistered.len() + self.tls_pending;
        if open >= self.caps.max_connections || fresh >= self.caps.max_unregistered {
            let total = open >= self.caps.max_connections;
            if total {
                self.refused.total += 1;
            } else {
                self.refused.unregistered += 1;
            }
            drop(stream);
            if let Some(unlogged) = self.refused.log_now() {
                let (cap, limit) = if total {
                    ("max_connections", self.caps.max_connections)
                } else {
                    ("max_unregistered", self.caps.max_unregistered)
                };
                warn!(
                    %peer, cap, limit, unlogged,
                    "registry refused a connection: at its connection cap"
                );
            }
            return;
        }
        if !self.transport.is_tls() {
            let _ = stream.set_nodelay(true);
            self.accept(Stream::Tcp(stream), peer, None);
            return;
        }
        let transport = self.transport.clone();
        let events = self.events_tx.clone();
        self.tls_pending += 1;
        self.tasks.spawn(async move {
            match transport.accept(stream).await {
                Ok(stream) => match transport.cert_node_ids(&stream) {
                    Ok(ids) => {
                        let _ = events.send(ConnEvent::Accepted(stream, peer, ids)).await;
                    }
                    Err(e) => {
                        warn!(%peer, error = %e, "registry refused a connection: certificate");
                        let _ = events.send(ConnEvent::TlsFailed).await;
                    }
                },
                Err(e) => {
                    debug!(%peer, error = %e, "registry refused a connection: TLS handshake failed");
                    let _ = events.send(ConnEvent::TlsFailed).await;
                }
            }
        });
    }

    /// Closes the unregistered connection `conn` to make room for a new one from `peer`
    /// (counted as a refusal at `max_unregistered`).
    fn evict(&mut self, conn: ConnId, peer: SocketAddr) {
        let Some(c) = self.conns.remove(&conn) else {
            self.unregistered.remove(&conn);
            return;
        };
        c.reader.abort();
        drop(c.writer);
        self.unregistered.remove(&conn);
        self.server.handle_closed(self.clock.now(), conn);
        self.refused.unregistered += 1;
        if let Some(unlogged) = self.refused.log_now() {
            warn!(
                evicted = %c.peer, %peer, limit = self.caps.max_unregistered, unlogged,
                "registry closed its oldest unregistered connection to make room: at max_unregistered"
            );
        }
    }

    /// `accept` failed (a per-connection error, or no descriptor left): pause accepting
    /// until a connection closes or the pause ends, the pause doubling while errors repeat.
    fn accept_failed(&mut self, error: &std::io::Error) {
        self.refused.accept_errors += 1;
        let pause = if self.accept_backoff.is_zero() {
            ACCEPT_PAUSE_MIN
        } else {
            (self.accept_backoff * 2).min(ACCEPT_PAUSE_MAX)
        };
        self.accept_backoff = pause;
        self.accept_paused_until = Some(tokio::time::Instant::now() + pause);
        if let Some(unlogged) = self.refused.log_now() {
            warn!(%error, ?pause, unlogged, "registry accept failed; pausing accepts");
        }
    }

    /// A slot freed, or the pause after an accept error ended: accept again now.
    /// A repeated error pauses for twice as long as the last (the backoff is kept).
    fn resume_accepting(&mut self) {
        self.accept_paused_until = None;
    }

    fn accept(&mut self, stream: Stream, peer: SocketAddr, ids: Option<Vec<NodeId>>) {
        let conn = self.server.handle_accepted(self.clock.now());
        self.unregistered.insert(conn);
        debug!(conn = conn.0, %peer, certified = %crate::observe::DecimalIds(ids.as_deref()), "registry accepted a connection");
        if let Some(ids) = ids {
            self.server.bind_conn_identity(conn, &ids);
        }
        let (read, write) = stream.into_boxed_split();
        let (writer, queue) = mpsc::unbounded_channel();
        // A failed write does not close the connection: the peer's reset that failed it also
        // ends the reader, which reports the close only after the bytes that arrived before
        // it (a client's `Bye{Shutdown}` must not be overtaken by the close, or the node it
        // removes would go into protection instead). A reader that never ends is closed by
        // the heartbeat timeout.
        self.tasks.spawn(async move {
            if let Err(e) = net::write_loop_keeping(write, queue, net::REGISTRY_BUFFER).await {
                debug!(conn = conn.0, error = %e, "registry write failed; the reader reports the close");
            }
        });
        let reader = self.tasks.spawn(net::read_loop(
            read,
            self.events_tx.clone(),
            move |b| ConnEvent::Bytes(conn, b),
            move |reason| ConnEvent::Closed(conn, reason),
            net::REGISTRY_BUFFER,
        ));
        self.conns.insert(
            conn,
            Conn {
                writer,
                reader,
                peer,
            },
        );
    }

    fn on_event(&mut self, event: ConnEvent) {
        let now = self.clock.now();
        match event {
            ConnEvent::Accepted(stream, peer, ids) => {
                self.tls_pending = self.tls_pending.saturating_sub(1);
                self.accept(stream, peer, ids);
            }
            ConnEvent::TlsFailed => {
                self.tls_pending = self.tls_pending.saturating_sub(1);
                self.resume_accepting();
            }
            ConnEvent::Bytes(conn, bytes) => {
                if self.conns.contains_key(&conn) {
                    self.server.handle_received(now, conn, &bytes);
                }
            }
            ConnEvent::Closed(conn, reason) => {
                if let Some(c) = self.conns.remove(&conn) {
                    debug!(conn = conn.0, peer = %c.peer, %reason, "registry connection closed");
                    self.strangers.gone.insert(conn, c.peer);
                    c.reader.abort();
                    self.unregistered.remove(&conn);
                    self.server.handle_closed(now, conn);
                    self.resume_accepting();
                }
                while self.tasks.try_join_next().is_some() {}
            }
        }
    }

    fn drain(&mut self) {
        while let Some(output) = self.server.poll_output() {
            match output {
                ServerOutput::Transmit { conn, bytes } => {
                    if let Some(c) = self.conns.get(&conn) {
                        let _ = c.writer.send(Bytes::from(bytes));
                    }
                }
                ServerOutput::Close { conn } => {
                    if let Some(c) = self.conns.remove(&conn) {
                        self.strangers.gone.insert(conn, c.peer);
                        c.reader.abort();
                        self.unregistered.remove(&conn);
                        self.resume_accepting();
                    }
                }
                ServerOutput::Event(event) => {
                    if let ServerEvent::Registered { conn, .. } | ServerEvent::Watching { conn } =
                        event
                    {
                        self.snapshots_sent += 1;
                        self.unregistered.remove(&conn);
                    }
                    self.counted.count(&event);
                    if let ServerEvent::Unauthenticated { conn, failure } = event {
                        let peer = self
                            .conns
                            .get(&conn)
                            .map(|c| c.peer)
                            .or_else(|| self.strangers.gone.get(&conn).copied());
                        self.strangers.refused(peer, failure);
                    } else {
                        log_event(&event);
                    }
                }
                _ => debug!("unhandled registry server output"),
            }
        }
        self.strangers.gone.clear();
    }

    fn metrics(&self) -> RegistryMetrics {
        let entries = self.server.entries();
        let protected = entries.iter().filter(|e| e.lost_for.is_some()).count() as u64;
        let stats = self.server.stats();
        RegistryMetrics {
            nodes_live: entries.len() as u64 - protected,
            nodes_protected: protected,
            connections: self.server.connection_count() as u64,
            snapshots_sent: self.snapshots_sent,
            duplicate_ids: stats.duplicate_ids,
            names_taken: stats.names_taken,
            takeovers: stats.takeovers,
            unauthenticated: stats.auth_refusals.total(),
            auth_refusals: stats.auth_refusals,
            records_too_large: stats.records_too_large,
            unregistered: self.unregistered.len() as u64,
            refused_at_max_connections: self.refused.total,
            refused_at_max_unregistered: self.refused.unregistered,
            accept_errors: self.refused.accept_errors,
            registrations: self.counted.registrations,
            removals: self.counted.removals,
            access_timeouts: self.counted.access_timeouts,
            heartbeat_timeouts: self.counted.heartbeat_timeouts,
            protocol_errors: self.counted.protocol_errors,
            sessions: (self.conns.len() as u64).saturating_sub(self.unregistered.len() as u64),
            // Every session (a registration or a watch) starts with a snapshot.
            sessions_opened: self.snapshots_sent,
        }
    }

    async fn shutdown(mut self) {
        for (_, conn) in self.conns.drain() {
            conn.reader.abort();
        }
        let tasks = &mut self.tasks;
        let _ = tokio::time::timeout(SHUTDOWN_FLUSH, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        info!("registry stopped");
    }
}

/// Counters of the server's events, for [`RegistryMetrics`].
#[derive(Debug, Default)]
struct EventCounts {
    registrations: u64,
    removals: u64,
    access_timeouts: u64,
    heartbeat_timeouts: u64,
    protocol_errors: u64,
}

impl EventCounts {
    fn count(&mut self, event: &ServerEvent) {
        let counter = match event {
            ServerEvent::Registered { .. } => &mut self.registrations,
            ServerEvent::Removed { .. } => &mut self.removals,
            ServerEvent::AccessTimeout { .. } => &mut self.access_timeouts,
            ServerEvent::HeartbeatTimeout { .. } => &mut self.heartbeat_timeouts,
            ServerEvent::ProtocolError { .. } => &mut self.protocol_errors,
            _ => return,
        };
        *counter += 1;
    }
}

/// An entry key in logs: a node id in decimal (as the CLI flags take it), or a name.
struct LogKey<'a>(&'a EntryKey);

impl std::fmt::Display for LogKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            EntryKey::Id(id) => write!(f, "{}", id.0),
            EntryKey::Name(name) => write!(f, "name {name:?}"),
        }
    }
}

fn log_event(event: &ServerEvent) {
    match event {
        ServerEvent::Registered {
            key,
            incarnation,
            restored,
            ..
        } => info!(key = %LogKey(key), %incarnation, restored, "node registered"),
        ServerEvent::Refused {
            key,
            incarnation,
            holder,
            ..
        } => warn!(
            key = %LogKey(key),
            %incarnation, %holder, "registration refused: duplicate id"
        ),
        ServerEvent::NameTaken {
            key, name, holder, ..
        } => {
            warn!(key = %LogKey(key), %name, holder = holder.0, "registration refused: name taken")
        }
        ServerEvent::TakenOver {
            key, incarnation, ..
        } => warn!(
            key = %LogKey(key),
            replaced = %incarnation,
            "takeover: a registration proved the holder's identity; the old connection is replaced"
        ),
        ServerEvent::TooLarge { conn, error } => {
            warn!(conn = conn.0, %error, "registration refused: too large");
        }
        ServerEvent::Removed { key } => info!(key = %LogKey(key), "node removed"),
        ServerEvent::Protected { key } => info!(key = %LogKey(key), "node disconnected, protected"),
        ServerEvent::ProtocolError { conn, error } => {
            warn!(conn = conn.0, %error, "registry protocol error, connection closed");
        }
        other => log_other_event(other),
    }
}

/// The debug line of a server event with no line of its own in [`log_event`].
fn log_other_event(event: &ServerEvent) {
    match event {
        ServerEvent::Watching { conn } => debug!(conn = conn.0, "a connection watches"),
        ServerEvent::Updated { conn, key } => {
            debug!(conn = conn.0, key = %LogKey(key), "node updated its records");
        }
        ServerEvent::AccessTimeout { conn } => {
            debug!(
                conn = conn.0,
                "connection closed: not registered within the access timeout"
            );
        }
        ServerEvent::HeartbeatTimeout { conn } => {
            debug!(
                conn = conn.0,
                "connection closed: no heartbeat within the timeout"
            );
        }
        _ => debug!("registry event"),
    }
}
