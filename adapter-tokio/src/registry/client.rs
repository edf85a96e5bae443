//! The embedded registry client backend: a task that drives the core's `RegistryClient` over
//! one TCP connection to the registry and speaks the [`super::feed`] contract.
//!
//! The task waits for the client machine's next deadline, a byte chunk or close from the
//! registry connection, a dial result, or a [`FeedCommand`]; makes one `handle_*` call; and
//! drains `poll_output`, split by the core (`ClientOutput::route`): registry changes go to the
//! node driver as [`FeedEvent::Registry`] (awaiting room in the feed), which hands them to
//! `Node::handle_registry`; of the driver's actions, it dials on `Connect`, queues `Transmit`s
//! on the connection's writer, closes on `Close` (the writer flushes first), and turns reports
//! into [`FeedEvent::Registered`], [`FeedEvent::Disconnected`] and [`FeedEvent::Conflict`].
//!
//! The task ends after [`FeedCommand::Shutdown`] (a `Bye{Shutdown}` is written and flushed:
//! the registry removes the node at once) or, abruptly, when the driver drops its [`Feed`] —
//! that is how a killed node leaves: no goodbye, its entry goes into disconnect protection.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use bytes::Bytes;
use switchboard_core::{
    backoff::BackoffConfig,
    registry::client::{ClientConfig, ClientEvent, ClientOutput, RegistryClient},
    time::Duration,
    wire::RecordCache,
};
use tokio::{
    sync::mpsc,
    task::{AbortHandle, JoinSet},
};
use tracing::{debug, info, warn};

use super::feed::{Feed, FeedCommand, FeedEvent, FeedPort, feed_channel};
use crate::{
    clock::Clock,
    net,
    transport::{Stream, Transport},
};

/// Overrides of the embedded registry client's defaults (`ClientConfig::new`), as a node
/// carries them from its builder into the config it passes to [`spawn_client`]. `None` keeps
/// the default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientTuning {
    /// Delays between connection attempts (default 1 s → 60 s, ±20 %).
    pub backoff: Option<BackoffConfig>,
    /// How long peers missing from a restarted registry's snapshot are kept (default 30 s).
    pub grace: Option<Duration>,
    /// Period of the client's heartbeats (default 5 s).
    pub heartbeat_interval: Option<Duration>,
    /// Silence after which the registry connection is dropped and redialled (default 15 s).
    pub silence_timeout: Option<Duration>,
}

impl ClientTuning {
    /// Writes the overrides into `config`.
    pub fn apply(&self, config: &mut ClientConfig) {
        if let Some(backoff) = self.backoff {
            config.backoff = backoff;
        }
        if let Some(grace) = self.grace {
            config.grace = grace;
        }
        if let Some(interval) = self.heartbeat_interval {
            config.heartbeat_interval = interval;
        }
        if let Some(silence) = self.silence_timeout {
            config.silence_timeout = silence;
        }
    }
}

/// Decoded registry records shared by the embedded registry clients of the nodes of one
/// process ([`NodeBuilder::shared_records`](crate::NodeBuilder::shared_records)): the
/// registry sends each change to every node in the same bytes, and the first client to read
/// them decodes them for all (the core's [`RecordCache`]). For a process running many nodes
/// of one cluster, as `switchboard swarm` does; a node alone gains nothing from it.
///
/// A client never waits for the cache: while another client holds it, it decodes alone.
#[derive(Clone, Debug, Default)]
pub struct SharedRecords(Arc<Mutex<RecordCache>>);

impl SharedRecords {
    /// An empty cache of [`RecordCache::DEFAULT_SLOTS`] records per kind.
    #[must_use]
    pub fn new() -> SharedRecords {
        SharedRecords::default()
    }

    /// An empty cache of `slots` records per kind: two per node of the cluster keep a
    /// change's record cached until every node has read it.
    #[must_use]
    pub fn with_slots(slots: usize) -> SharedRecords {
        SharedRecords(Arc::new(Mutex::new(RecordCache::with_slots(slots))))
    }

    /// (hits, misses) so far: records copied from the cache, records decoded.
    #[must_use]
    pub fn counts(&self) -> (u64, u64) {
        match self.0.lock() {
            Ok(cache) => (cache.hits(), cache.misses()),
            Err(poisoned) => {
                let cache = poisoned.into_inner();
                (cache.hits(), cache.misses())
            }
        }
    }

    /// `bytes` from the registry into `client`, through the cache when no other client
    /// holds it.
    fn receive(
        &self,
        client: &mut RegistryClient,
        now: switchboard_core::time::Instant,
        bytes: &[u8],
    ) {
        match self.0.try_lock() {
            Ok(mut cache) => client.handle_received_cached(now, bytes, &mut cache),
            // Held by another client (or poisoned by a panic there): decode alone.
            Err(_) => client.handle_received(now, bytes),
        }
    }
}

/// How long a graceful shutdown waits for the goodbye to be written.
const SHUTDOWN_FLUSH: Duration = Duration::from_secs(2);

/// At most one warning that the registry is lost or unreachable per this period.
const LOST_WARN_PERIOD: std::time::Duration = std::time::Duration::from_secs(10);

/// The registry session as the operator hears of it: a warning when it drops (or the
/// registry cannot be reached after it was), at most one per [`LOST_WARN_PERIOD`], and one
/// when it is back after a warned loss. A registry not reached yet is logged at info.
#[derive(Debug, Default)]
struct Session {
    /// Registered now.
    up: bool,
    /// Registered at least once: a failure before that is not a lost session (info only).
    ever_up: bool,
    /// When the session was lost (or the first attempt failed), while it is.
    lost_at: Option<std::time::Instant>,
    /// When the last loss warning was written.
    warned_at: Option<std::time::Instant>,
    /// Why the last dial failed or the connection closed (`connection refused`, ...).
    last_failure: Option<String>,
}

impl Session {
    /// The connection closed or a dial failed for `reason`.
    fn failed(&mut self, registry: &str, reason: &str) {
        let now = std::time::Instant::now();
        let was_up = std::mem::replace(&mut self.up, false);
        self.last_failure = Some(reason.to_owned());
        if !self.ever_up {
            info!(%registry, %reason, "registry not reachable yet; retrying");
            return;
        }
        self.lost_at.get_or_insert(now);
        let quiet = self
            .warned_at
            .is_some_and(|at| now.duration_since(at) < LOST_WARN_PERIOD);
        if quiet {
            debug!(%registry, %reason, "registry still lost");
            return;
        }
        self.warned_at = Some(now);
        if was_up {
            warn!(%registry, %reason, "registry session lost; rejoining as soon as it answers");
        } else {
            warn!(%registry, %reason, "registry still lost; retrying");
        }
    }

    /// Registered (again).
    fn registered(&mut self, registry: &str) {
        self.up = true;
        self.ever_up = true;
        self.last_failure = None;
        if let (Some(lost_at), Some(_)) = (self.lost_at.take(), self.warned_at.take()) {
            let after_ms = u64::try_from(lost_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            warn!(%registry, after_ms, "registry session back");
        }
    }
}

/// Starts the client task with `config` (from `Node::registry_client_config`, tuned) against
/// the registry at `addr`.
///
/// Must be called inside a tokio runtime. Dropping the returned [`Feed`] ends the task
/// abruptly (no unregister); send [`FeedCommand::Shutdown`] to leave gracefully.
#[must_use]
pub fn spawn_client(addr: SocketAddr, config: ClientConfig) -> Feed {
    spawn_client_with(addr, config, Transport::plain())
}

/// [`spawn_client`] over `transport` (TLS: the registry must present a certificate of the
/// CA; a failed TLS handshake counts as a failed dial and is retried with backoff). A
/// `config.nonce_entropy` left at zeros is filled from the OS random source.
#[must_use]
pub fn spawn_client_with(addr: SocketAddr, config: ClientConfig, transport: Transport) -> Feed {
    spawn_client_to(addr.to_string(), config, transport)
}

/// [`spawn_client_with`] against the registry at `host_port` (`registry:7000`,
/// `[::1]:7000`): the name is resolved again at every dial, so a registry that comes back at
/// another address under its name (a container restarted, a DNS record moved) is found.
#[must_use]
pub fn spawn_client_to(host_port: String, config: ClientConfig, transport: Transport) -> Feed {
    spawn_client_sharing(host_port, config, transport, None)
}

/// [`spawn_client_to`], decoding the registry's records through `records` when given.
#[must_use]
pub fn spawn_client_sharing(
    host_port: String,
    mut config: ClientConfig,
    transport: Transport,
    records: Option<SharedRecords>,
) -> Feed {
    if config.nonce_entropy.is_empty() {
        config.nonce_entropy = crate::net::nonce_entropy();
    }
    let (feed, port) = feed_channel();
    tokio::spawn(run(host_port, config, port, transport, records));
    feed
}

/// Events of the registry connection's tasks, tagged with the connection's generation so a
/// late event of a closed connection is ignored.
enum ConnEvent {
    Connected(u64, Stream),
    ConnectFailed(u64, String),
    Bytes(u64, Bytes),
    Closed(u64, String),
}

/// The live registry connection.
struct Conn {
    generation: u64,
    writer: mpsc::UnboundedSender<Bytes>,
    reader: AbortHandle,
}

struct ClientTask {
    /// The registry's `host:port`, resolved at every dial.
    addr: String,
    clock: Clock,
    client: RegistryClient,
    port: FeedPort,
    /// Generation of the latest dial; events of older ones are ignored.
    generation: u64,
    transport: Transport,
    dialing: Option<AbortHandle>,
    conn: Option<Conn>,
    events_tx: mpsc::Sender<ConnEvent>,
    tasks: JoinSet<()>,
    session: Session,
    /// The process's shared decoded records, if the node was given them.
    records: Option<SharedRecords>,
}

/// What the loop does next.
enum Step {
    Continue,
    Stop,
}

async fn run(
    addr: String,
    config: ClientConfig,
    port: FeedPort,
    transport: Transport,
    records: Option<SharedRecords>,
) {
    let clock = Clock::start();
    let client = RegistryClient::new(config, clock.now());
    let (events_tx, mut events_rx) = mpsc::channel(256);
    let mut task = ClientTask {
        addr,
        clock,
        client,
        port,
        generation: 0,
        transport,
        dialing: None,
        conn: None,
        events_tx,
        tasks: JoinSet::new(),
        session: Session::default(),
        records,
    };
    if let Step::Stop = task.drain().await {
        return;
    }
    loop {
        let deadline = task.client.poll_timeout().map(|d| task.clock.to_tokio(d));
        let step = tokio::select! {
            command = task.port.commands.recv() => match command {
                Some(FeedCommand::UpdateTopology(info)) => {
                    task.client.update_topology(info);
                    task.drain().await
                }
                Some(FeedCommand::UpdateDiscovery(info)) => {
                    task.client.update_discovery(*info);
                    task.drain().await
                }
                Some(FeedCommand::Shutdown(done)) => {
                    task.shutdown(&mut events_rx).await;
                    let _ = done.send(());
                    return;
                }
                None => {
                    debug!(registry = %task.addr, "registry client dropped by its node");
                    return;
                }
            },
            Some(event) = events_rx.recv() => {
                task.on_conn_event(event);
                task.drain().await
            }
            () = net::sleep_until(deadline) => {
                let now = task.clock.now();
                task.client.handle_timeout(now);
                task.drain().await
            }
        };
        if let Step::Stop = step {
            return;
        }
    }
}

impl ClientTask {
    fn on_conn_event(&mut self, event: ConnEvent) {
        let now = self.clock.now();
        match event {
            ConnEvent::Connected(generation, stream) if generation == self.generation => {
                self.dialing = None;
                debug!(registry = %self.addr, "registry connected");
                self.attach(generation, stream);
                self.client.handle_connected(now);
            }
            ConnEvent::ConnectFailed(generation, reason) if generation == self.generation => {
                self.dialing = None;
                debug!(registry = %self.addr, %reason, "registry dial failed");
                self.session.failed(&self.addr, &reason);
                self.client.handle_connect_failed(now);
            }
            ConnEvent::Bytes(generation, bytes)
                if self
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.generation == generation) =>
            {
                match &self.records {
                    Some(records) => records.receive(&mut self.client, now, &bytes),
                    None => self.client.handle_received(now, &bytes),
                }
            }
            ConnEvent::Closed(generation, reason)
                if self
                    .conn
                    .as_ref()
                    .is_some_and(|c| c.generation == generation) =>
            {
                info!(registry = %self.addr, %reason, "registry connection lost");
                self.session.failed(&self.addr, &reason);
                self.close();
                self.client.handle_closed(now);
            }
            _ => {}
        }
        self.reap();
    }

    fn attach(&mut self, generation: u64, stream: Stream) {
        let (read, write) = stream.into_boxed_split();
        let (writer, queue) = mpsc::unbounded_channel();
        let events = self.events_tx.clone();
        self.tasks.spawn(async move {
            if let Err(e) = net::write_loop_keeping(write, queue, net::REGISTRY_BUFFER).await {
                let _ = events
                    .send(ConnEvent::Closed(generation, e.to_string()))
                    .await;
            }
        });
        let events = self.events_tx.clone();
        let reader = self.tasks.spawn(net::read_loop(
            read,
            events,
            move |b| ConnEvent::Bytes(generation, b),
            move |reason| ConnEvent::Closed(generation, reason),
            net::REGISTRY_BUFFER,
        ));
        self.conn = Some(Conn {
            generation,
            writer,
            reader,
        });
    }

    /// Drops the connection: the writer flushes what is queued and closes; the reader stops.
    fn close(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.reader.abort();
        }
    }

    fn dial(&mut self) {
        self.close();
        if let Some(dial) = self.dialing.take() {
            dial.abort();
        }
        self.generation += 1;
        let generation = self.generation;
        let addr = self.addr.clone();
        let events = self.events_tx.clone();
        let transport = self.transport.clone();
        self.dialing = Some(self.tasks.spawn(async move {
            let event = match transport.dial(&addr).await {
                Ok(stream) => ConnEvent::Connected(generation, stream),
                Err(e) => ConnEvent::ConnectFailed(generation, e.to_string()),
            };
            let _ = events.send(event).await;
        }));
    }

    fn reap(&mut self) {
        while self.tasks.try_join_next().is_some() {}
    }

    /// Performs every output of the client machine; `Stop` when the node driver is gone.
    async fn drain(&mut self) -> Step {
        while let Some(output) = self.client.poll_output() {
            let event = match output {
                ClientOutput::Registry(event) => FeedEvent::Registry(event),
                ClientOutput::Connect => {
                    self.dial();
                    continue;
                }
                ClientOutput::Transmit { bytes } => {
                    self.write(bytes);
                    continue;
                }
                ClientOutput::Close => {
                    self.close();
                    continue;
                }
                ClientOutput::Event(event) => match self.translate(event) {
                    Some(event) => event,
                    None => continue,
                },
            };
            if self.port.events.send(event).await.is_err() {
                return Step::Stop;
            }
        }
        Step::Continue
    }

    /// Queues `bytes` on the live connection's writer (dropped without one: the client
    /// registers again on the next connection).
    fn write(&self, bytes: Vec<u8>) {
        if let Some(conn) = &self.conn {
            let _ = conn.writer.send(Bytes::from(bytes));
        }
    }

    fn translate(&mut self, event: ClientEvent) -> Option<FeedEvent> {
        match event {
            ClientEvent::Registered {
                epoch,
                new_epoch,
                in_grace,
            } => {
                info!(registry = %self.addr, epoch, new_epoch, in_grace, "registered");
                self.session.registered(&self.addr);
                Some(FeedEvent::Registered)
            }
            ClientEvent::Refused { holder } => {
                warn!(registry = %self.addr, %holder, "registration refused: the id is held by another incarnation");
                Some(FeedEvent::Conflict {
                    holder: format!("id held by incarnation {holder}"),
                })
            }
            ClientEvent::NameTaken { name, holder } => {
                warn!(registry = %self.addr, %name, holder = holder.0, "registration refused: the name is taken");
                Some(FeedEvent::Conflict {
                    holder: format!("name {name:?} taken by id {}", holder.0),
                })
            }
            ClientEvent::RecordTooLarge { error, local } => {
                let by = if local {
                    "not sent: over this node's limits"
                } else {
                    "refused by the registry"
                };
                warn!(registry = %self.addr, %error, local, "registration {by}: records too large");
                Some(FeedEvent::Conflict {
                    holder: format!("records too large ({by}): {error}"),
                })
            }
            ClientEvent::AuthRefused => {
                warn!(registry = %self.addr, "registration refused: the registry did not accept this node's cluster key");
                Some(FeedEvent::Conflict {
                    holder: "the registry refused this node's cluster key".to_owned(),
                })
            }
            ClientEvent::UnprovenRefusal(reason) => {
                warn!(registry = %self.addr, ?reason, "refusal before the registry proved the cluster key: not believed, retrying");
                Some(FeedEvent::Disconnected {
                    reason: format!("unproven refusal ({reason:?}); retrying"),
                })
            }
            ClientEvent::Unauthenticated(failure) => {
                // Nothing an unproven peer says is believed, a refusal included: this is not a
                // conflict (a squatter on the registry's address must not stop the node), only
                // a failed attempt, retried on the backoff.
                warn!(registry = %self.addr, failure = failure.as_str(), "the registry did not prove the cluster key; not registering, retrying");
                Some(FeedEvent::Disconnected {
                    reason: format!(
                        "the registry did not prove the cluster key ({failure:?}); retrying"
                    ),
                })
            }
            ClientEvent::Disconnected { retry_at } => {
                let retry_in = retry_at.saturating_duration_since(self.clock.now());
                debug!(registry = %self.addr, ?retry_in, "registry disconnected");
                let retrying = format!("retrying in {} ms", retry_in.as_millis());
                Some(FeedEvent::Disconnected {
                    reason: match &self.session.last_failure {
                        Some(why) => format!("{why}; {retrying}"),
                        None => retrying,
                    },
                })
            }
            ClientEvent::ProtocolError(error) => {
                warn!(registry = %self.addr, %error, "registry protocol error");
                None
            }
            _ => {
                debug!(registry = %self.addr, "registry client event");
                None
            }
        }
    }

    /// Graceful leave: `Bye{Shutdown}` on the live connection, flushed, then every task ends.
    ///
    /// The connection is read until the registry closes it (it does on the `Bye`): closing a
    /// socket with unread bytes (a `Put` pushed just now) would reset it, and a reset can
    /// drop the `Bye` on the registry's side, leaving this node protected for 30 s as if it
    /// had crashed.
    async fn shutdown(&mut self, events: &mut mpsc::Receiver<ConnEvent>) {
        self.client.shutdown();
        let mut bye_sent = false;
        while let Some(output) = self.client.poll_output() {
            match output {
                ClientOutput::Transmit { bytes } => {
                    bye_sent |= self.conn.is_some();
                    self.write(bytes);
                }
                ClientOutput::Close => {}
                _ => {}
            }
        }
        if let Some(dial) = self.dialing.take() {
            dial.abort();
        }
        // Dropping the writer flushes the `Bye` and half-closes; the reader runs on.
        let reader = self.conn.take().map(|conn| conn.reader);
        if let Some(reader) = reader {
            if bye_sent {
                let _ = tokio::time::timeout(SHUTDOWN_FLUSH, async {
                    while let Some(event) = events.recv().await {
                        if let ConnEvent::Closed(..) = event {
                            return;
                        }
                    }
                })
                .await;
            }
            reader.abort();
        }
        let tasks = &mut self.tasks;
        let _ = tokio::time::timeout(SHUTDOWN_FLUSH, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        info!(registry = %self.addr, "left the registry");
    }
}
