//! A core `Node` on tokio: [`NodeBuilder`] starts it, [`NodeHandle`] talks to it, [`Inbox`]
//! yields what it receives.
//!
//! One task (the private `driver` module) owns the `Node`. It waits for a command, a link
//! event, a registry feed event or the core's next deadline, makes one `handle_*` call, drains
//! `poll_output` into I/O and re-arms its timer. The driver reads its links' sockets itself;
//! each link has a writer task for the core's `Transmit`s (batched). Routing decisions live
//! in the core only.

mod driver;
mod inbox;
mod leave;
mod registered;
pub mod rpc;
mod service;
pub mod stream;
pub mod trace;

use std::{
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use switchboard_core::{
    config::Config, discovery::address::Advertise, ids::NodeId, node::SendError, outcome::Outcome,
};
use tokio::sync::{Notify, mpsc, oneshot, watch};

pub use self::inbox::Inbox;
pub use self::leave::Drained;
pub use self::registered::NotRegistered;
pub use self::service::{ServiceRequest, ServiceServing};
use crate::{
    observe::{Known, Metrics, Status},
    registry::client::{ClientTuning, SharedRecords},
    target::TargetSpec,
};

/// Capacity of the command channel into the driver (senders wait when it is full).
pub const COMMAND_CAPACITY: usize = 4096;
/// Capacity of the inbox (the driver stops reading links while it is full).
pub const INBOX_CAPACITY: usize = 65_536;

/// Where a node finds the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrySpec {
    /// No registry: peers are known from config only (`upstream_address`).
    None,
    /// The embedded registry at this address.
    Embedded(SocketAddr),
    /// The embedded registry at a host name and port (`registry:7000`), resolved again at
    /// every connect (compose and Kubernetes service names).
    EmbeddedHost(String),
    /// etcd (needs the `etcd` feature; without it `start` fails with
    /// [`StartError::EtcdDisabled`]).
    Etcd(crate::registry::EtcdOptions),
    /// A backend of the application's own, speaking the feed contract
    /// ([`crate::registry::feed`]).
    Custom(CustomBackend),
}

/// A registry backend of the application's own: at start the node calls it once with its
/// [`Registration`](crate::registry::Registration) and drives the [`Feed`](crate::registry::Feed)
/// it returns (the backend keeps the [`FeedPort`](crate::registry::FeedPort) end, usually in a
/// task it spawns). Called inside the tokio runtime, so it may spawn.
///
/// Two `CustomBackend`s are equal when they are clones of one.
#[derive(Clone)]
pub struct CustomBackend(Arc<StartBackend>);

/// The function a [`CustomBackend`] wraps.
type StartBackend =
    dyn Fn(crate::registry::Registration) -> crate::registry::Feed + Send + Sync + 'static;

impl CustomBackend {
    /// A backend started by `start`.
    pub fn new(
        start: impl Fn(crate::registry::Registration) -> crate::registry::Feed + Send + Sync + 'static,
    ) -> CustomBackend {
        CustomBackend(Arc::new(start))
    }

    pub(crate) fn start(
        &self,
        registration: crate::registry::Registration,
    ) -> crate::registry::Feed {
        (self.0)(registration)
    }
}

impl std::fmt::Debug for CustomBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CustomBackend(..)")
    }
}

impl PartialEq for CustomBackend {
    fn eq(&self, other: &CustomBackend) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for CustomBackend {}

/// A message received by this node.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Received {
    /// The node that sent it.
    pub from: NodeId,
    /// The node it arrived from (the sender, or the last relay).
    pub via: NodeId,
    /// Application message type.
    pub msg_type: u32,
    /// The payload, byte for byte as sent.
    pub payload: Bytes,
}

impl Received {
    /// A received message with these parts (for tests of code that handles them).
    #[must_use]
    pub fn new(from: NodeId, via: NodeId, msg_type: u32, payload: Bytes) -> Received {
        Received {
            from,
            via,
            msg_type,
            payload,
        }
    }
}

/// Why a send was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendFailure {
    /// The core refused it; nothing was accepted.
    #[error(transparent)]
    Refused(#[from] SendError),
    /// The node's driver has stopped.
    #[error("the node is stopped")]
    Stopped,
}

/// The node's driver has stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the node is stopped")]
pub struct Stopped;

/// Why a node did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration is invalid.
    #[error("invalid config: {0}")]
    Config(#[from] switchboard_core::config::ConfigError),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
    /// An etcd registry was asked for in a build without the `etcd` feature.
    #[error("this build has no etcd support (rebuild with `--features etcd`)")]
    EtcdDisabled,
    /// A node with a registry listens on a wildcard address with nothing to publish instead:
    /// it would publish loopback, which no other host reaches. Give
    /// [`NodeBuilder::advertise`] (or a `listen` in the config).
    #[error(
        "listening on {addr} (a wildcard address) would publish loopback to other hosts: give \
         advertise, the address other hosts reach this node at"
    )]
    WildcardWithoutAdvertise {
        /// The wildcard listen address.
        addr: SocketAddr,
    },
}

/// A send target as it crosses the command channel: a node id inline, any other target boxed,
/// so the hot command (a send to an id) stays small (a `TargetSpec` with its inline filter is
/// over 200 bytes, moved several times per message).
#[derive(Debug)]
pub(crate) enum Dest {
    /// `TargetSpec::Id`.
    Id(NodeId),
    /// Every other target.
    Other(Box<TargetSpec>),
}

impl From<TargetSpec> for Dest {
    fn from(target: TargetSpec) -> Dest {
        match target {
            TargetSpec::Id(id) => Dest::Id(id),
            other => Dest::Other(Box::new(other)),
        }
    }
}

impl Dest {
    /// The core's selection and the filter it picks among.
    pub(crate) fn to_select(
        &self,
    ) -> (
        Option<&switchboard_core::discovery::Filter>,
        switchboard_core::Select,
    ) {
        match self {
            Dest::Id(id) => (None, switchboard_core::Select::Node(*id)),
            Dest::Other(target) => target.to_select(),
        }
    }
}

/// Commands from handles to the driver.
#[derive(Debug)]
pub(crate) enum Command {
    Send {
        target: Dest,
        msg_type: u32,
        payload: Bytes,
        accepted: oneshot::Sender<Result<OutcomeReceiver, SendError>>,
    },
    Post {
        target: Dest,
        msg_type: u32,
        payload: Bytes,
        outcome: oneshot::Sender<Result<Outcome, SendError>>,
    },
    SendBatch {
        messages: Vec<(TargetSpec, u32, Bytes)>,
        accepted: oneshot::Sender<Vec<Result<OutcomeReceiver, SendError>>>,
    },
    SetUpstream {
        upstream: NodeId,
        done: oneshot::Sender<()>,
    },
    Status(oneshot::Sender<Status>),
    Metrics(oneshot::Sender<Metrics>),
    Shutdown(oneshot::Sender<()>),
    /// Publish the record marked leaving, for this reason ([`NodeHandle::leave`]).
    Leave(String),
    Rpc(rpc::RpcCommand),
    /// A [`stream::Poster`] starts: its outcomes go to `reports`.
    OpenPoster {
        poster: u64,
        reports: stream::ReportSender,
    },
    /// One message of a poster.
    Stream {
        poster: u64,
        ticket: stream::Ticket,
        target: Dest,
        msg_type: u32,
        payload: Bytes,
    },
    /// Messages of a poster, tickets from `first` on.
    StreamBatch {
        poster: u64,
        first: stream::Ticket,
        messages: Vec<(Dest, u32, Bytes)>,
    },
    /// The poster was dropped: its stream ends after its last outcome.
    ClosePoster {
        poster: u64,
    },
}

/// Resolves to the outcome of one accepted message.
pub type OutcomeReceiver = oneshot::Receiver<Outcome>;

/// An accepted message whose outcome is still to come.
#[derive(Debug)]
pub struct PendingOutcome {
    rx: OutcomeReceiver,
}

impl Future for PendingOutcome {
    /// `Err(Stopped)` if the driver stopped before reporting (only after [`NodeHandle::kill`]:
    /// a graceful shutdown reports every accepted message).
    type Output = Result<Outcome, Stopped>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx)
            .poll(cx)
            .map(|r| r.map_err(|_| Stopped))
    }
}

/// A message handed over with [`NodeHandle::post`]: resolves to its outcome, or to why it was
/// not accepted.
#[derive(Debug)]
pub struct PostedOutcome {
    rx: oneshot::Receiver<Result<Outcome, SendError>>,
}

impl Future for PostedOutcome {
    /// `Err(Refused)` if the core refused the message (nothing was accepted), `Err(Stopped)`
    /// if the driver stopped before reporting (only after [`NodeHandle::kill`], or when the
    /// node had stopped before the message reached it).
    type Output = Result<Outcome, SendFailure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|r| match r {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(refused)) => Err(SendFailure::Refused(refused)),
            Err(_) => Err(SendFailure::Stopped),
        })
    }
}

/// Configures and starts a node.
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    config: Config,
    listen: SocketAddr,
    advertise: Option<Advertise>,
    registry: RegistrySpec,
    tuning: ClientTuning,
    shared_records: Option<SharedRecords>,
    inbox_capacity: usize,
    transport: crate::transport::Transport,
    trace: Option<trace::TraceHook>,
}

impl NodeBuilder {
    /// A node with this id and name, the core's default config, listening on
    /// `127.0.0.1:0`, without a registry.
    ///
    /// Two root nodes (no upstream) do not link each other by default — links follow the
    /// upstream tree unless allowed, as in libatapp — so give
    /// [`allow_direct_connection`](Self::allow_direct_connection) for a flat cluster.
    #[must_use]
    pub fn new(id: NodeId, name: impl Into<String>) -> NodeBuilder {
        NodeBuilder {
            config: Config::new(id, name),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            advertise: None,
            registry: RegistrySpec::None,
            tuning: ClientTuning::default(),
            shared_records: None,
            inbox_capacity: INBOX_CAPACITY,
            transport: crate::transport::Transport::plain(),
            trace: None,
        }
    }

    /// Serves `method` from the start: the node's first discovery record lists it (a
    /// restarted server is never published without its methods), and its requests wait for
    /// the stream [`NodeHandle::serve`] returns for the method — call it right after
    /// [`start`](Self::start). A bad method name fails `start` ([`StartError::Config`]).
    #[must_use]
    pub fn serve(mut self, method: impl Into<String>) -> NodeBuilder {
        self.config.serve.push(method.into());
        self
    }

    /// The address to listen on (port 0 = any free port).
    #[must_use]
    pub fn listen(mut self, addr: SocketAddr) -> NodeBuilder {
        self.listen = addr;
        self
    }

    /// The address other hosts reach this node at, published in discovery instead of the
    /// bound one (`atcp://host:port`, the port being the advertised one or else the bound
    /// one). Needed for a cluster across hosts when listening on a wildcard address: without
    /// it such a node publishes loopback. Ignored when the config sets `listen` itself.
    #[must_use]
    pub fn advertise(mut self, advertise: Advertise) -> NodeBuilder {
        self.advertise = Some(advertise);
        self
    }

    /// This node's upstream (its proxy).
    #[must_use]
    pub fn upstream(mut self, id: NodeId) -> NodeBuilder {
        self.config.upstream = id;
        self
    }

    /// Whether this node may link peers directly instead of only along the upstream tree
    /// (the core's `topology_policy.allow_direct_connection`, off by default): what root
    /// nodes of a flat cluster need to reach each other.
    #[must_use]
    pub fn allow_direct_connection(mut self, allow: bool) -> NodeBuilder {
        self.config.topology_policy.allow_direct_connection = allow;
        self
    }

    /// Adds a label to the node's records.
    #[must_use]
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> NodeBuilder {
        self.config.labels.insert(key.into(), value.into());
        self
    }

    /// Use the embedded registry at `addr`.
    #[must_use]
    pub fn registry(mut self, addr: SocketAddr) -> NodeBuilder {
        self.registry = RegistrySpec::Embedded(addr);
        self
    }

    /// Where to find the registry.
    #[must_use]
    pub fn registry_spec(mut self, spec: RegistrySpec) -> NodeBuilder {
        self.registry = spec;
        self
    }

    /// Overrides the embedded registry client's defaults (reconnect backoff, grace after a
    /// registry restart, heartbeat); ignored by other backends.
    #[must_use]
    pub fn registry_tuning(mut self, tuning: ClientTuning) -> NodeBuilder {
        self.tuning = tuning;
        self
    }

    /// Decodes the embedded registry's records through `records`, shared with the other
    /// nodes of this process given the same ([`SharedRecords`]): for a process that runs
    /// many nodes of one cluster, each record is decoded once instead of once per node. The
    /// node's view is the same either way; ignored by other backends.
    #[must_use]
    pub fn shared_records(mut self, records: SharedRecords) -> NodeBuilder {
        self.shared_records = Some(records);
        self
    }

    /// Capacity of the [`Inbox`] (default [`INBOX_CAPACITY`]; at least 1). While it is full
    /// the node stops reading its links.
    #[must_use]
    pub fn inbox_capacity(mut self, capacity: usize) -> NodeBuilder {
        self.inbox_capacity = capacity.max(1);
        self
    }

    /// What carries the node's bus links and its embedded-registry connection (default plain
    /// TCP; TLS with the `tls` feature). Every peer and the registry must use the same.
    #[must_use]
    pub fn transport(mut self, transport: crate::transport::Transport) -> NodeBuilder {
        self.transport = transport;
        self
    }

    /// Propagates a tracing system's context through calls ([`trace::TraceContext`]): each
    /// call's `rpc.call` span is injected into its request's metadata, and each served
    /// request's `rpc.serve` span continues the context it carries. Without it the spans
    /// are still opened, and the request's `traceparent` is a field of `rpc.serve`.
    #[must_use]
    pub fn trace_context(mut self, hook: impl trace::TraceContext) -> NodeBuilder {
        self.trace = Some(trace::TraceHook(Arc::new(hook)));
        self
    }

    /// Changes the core config (timeouts, limits, seed, ...) before start.
    #[must_use]
    pub fn config(mut self, f: impl FnOnce(&mut Config)) -> NodeBuilder {
        f(&mut self.config);
        self
    }

    /// Binds the listener, creates the core `Node`, starts the registry backend and the
    /// driver task.
    ///
    /// Filled in at start when left at their defaults: `listen` (the [advertised](Self::advertise)
    /// address, else the bound address as `atcp://ip:port`, loopback for an unspecified ip),
    /// `pid`, `hostname`. Fresh entropy is
    /// mixed into `rng_seed`, so a restarted node is always a new incarnation.
    ///
    /// **Cancellation:** dropping the future before it resolves drops what was bound or
    /// spawned so far (the listener closes; a started driver sees its last handle gone and
    /// shuts down gracefully).
    ///
    /// # Errors
    ///
    /// An invalid config, a failed bind, or a wildcard `listen` with a registry and nothing
    /// to publish instead ([`StartError::WildcardWithoutAdvertise`]).
    pub async fn start(self) -> Result<(NodeHandle, Inbox), StartError> {
        driver::start(self).await
    }
}

/// A cheap, cloneable handle to a running node.
///
/// When the last handle is dropped the node shuts down gracefully, as after
/// [`shutdown`](Self::shutdown).
#[derive(Clone, Debug)]
pub struct NodeHandle {
    id: NodeId,
    name: String,
    local_addr: SocketAddr,
    incarnation: u64,
    commands: mpsc::Sender<Command>,
    kill_switch: Arc<Notify>,
    known: watch::Receiver<Known>,
    trace: Option<trace::TraceHook>,
}

impl NodeHandle {
    /// The node's id.
    #[must_use]
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The node's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The address the node listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// This life's incarnation.
    #[must_use]
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Sends and waits for the outcome.
    ///
    /// **Cancellation:** as [`submit`](Self::submit) until the message is accepted; dropped
    /// after that, the message is still delivered or failed by the node (and counted in its
    /// metrics), only its outcome is no longer reported to anyone. Use `submit` to keep the
    /// outcome future across a cancellation point.
    ///
    /// # Errors
    ///
    /// The core refused the message, or the node stopped.
    pub async fn send(
        &self,
        target: TargetSpec,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<Outcome, SendFailure> {
        self.submit(target, msg_type, payload)
            .await?
            .await
            .map_err(|Stopped| SendFailure::Stopped)
    }

    /// Hands a message to the node; returns once it is accepted (or refused), with a future
    /// of its outcome. Use this to keep many messages in flight.
    ///
    /// **Cancellation:** dropping this future withdraws the message if the node has not
    /// looked at it yet (while waiting for room in the command queue, or queued behind other
    /// commands): it is then never sent. Only if the node accepts it in the instant between
    /// its last check and the drop is it sent with no one to learn its outcome (the outcome
    /// is still counted in [`metrics`](Self::metrics)). Once this returns, the
    /// [`PendingOutcome`] may be dropped at any time: the message is still delivered or
    /// failed, its outcome unobserved.
    ///
    /// # Errors
    ///
    /// The core refused the message, or the node stopped.
    pub async fn submit(
        &self,
        target: TargetSpec,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<PendingOutcome, SendFailure> {
        let (accepted, rx) = oneshot::channel();
        self.commands
            .send(Command::Send {
                target: target.into(),
                msg_type,
                payload,
                accepted,
            })
            .await
            .map_err(|_| SendFailure::Stopped)?;
        match rx.await {
            Ok(Ok(rx)) => Ok(PendingOutcome { rx }),
            Ok(Err(e)) => Err(SendFailure::Refused(e)),
            Err(_) => Err(SendFailure::Stopped),
        }
    }

    /// Hands a message to the node without waiting for the node to look at it: returns as
    /// soon as the command queue has room, with a future of its outcome (or of its refusal).
    /// Unlike [`submit`](Self::submit) this costs no round trip to the driver per message, so
    /// one task can stream messages at full speed; the bounded command queue is the
    /// backpressure.
    ///
    /// **Cancellation:** safe. Dropped before it returns, the message was not queued and is
    /// never sent; once it returns the message is queued and will be sent (or refused) even if
    /// the [`PostedOutcome`] is dropped, which makes `post` fire-and-forget.
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn post(
        &self,
        target: TargetSpec,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<PostedOutcome, Stopped> {
        let (outcome, rx) = oneshot::channel();
        self.command(Command::Post {
            target: target.into(),
            msg_type,
            payload,
            outcome,
        })
        .await?;
        Ok(PostedOutcome { rx })
    }

    /// Hands several messages to the node in one command — one round trip to the driver
    /// instead of one per message — and returns, in order, each one's outcome future or why
    /// the core refused it. Use this to push many messages fast from one task.
    ///
    /// **Cancellation:** as [`submit`](Self::submit), for the whole batch: dropped before the
    /// node looked at it, none of the messages is sent.
    ///
    /// # Errors
    ///
    /// The node stopped (nothing was accepted).
    pub async fn submit_batch(
        &self,
        messages: Vec<(TargetSpec, u32, Bytes)>,
    ) -> Result<Vec<Result<PendingOutcome, SendError>>, Stopped> {
        let (accepted, rx) = oneshot::channel();
        self.command(Command::SendBatch { messages, accepted })
            .await?;
        let results = rx.await.map_err(|_| Stopped)?;
        Ok(results
            .into_iter()
            .map(|r| r.map(|rx| PendingOutcome { rx }))
            .collect())
    }

    /// Switches this node's upstream: publishes the new topology record to the registry (the
    /// core applies it when the registry reports it back, as for any node).
    ///
    /// **Cancellation:** dropping the future after the command was queued does not withdraw
    /// it: the switch still happens.
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn set_upstream(&self, upstream: NodeId) -> Result<(), Stopped> {
        let (done, rx) = oneshot::channel();
        self.command(Command::SetUpstream { upstream, done })
            .await?;
        rx.await.map_err(|_| Stopped)
    }

    /// A point-in-time view of endpoints, routes and links.
    ///
    /// **Cancellation:** safe; a dropped call only discards its answer.
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn status(&self) -> Result<Status, Stopped> {
        let (tx, rx) = oneshot::channel();
        self.command(Command::Status(tx)).await?;
        rx.await.map_err(|_| Stopped)
    }

    /// Counters and gauges.
    ///
    /// **Cancellation:** safe; a dropped call only discards its answer.
    ///
    /// # Errors
    ///
    /// The node stopped.
    pub async fn metrics(&self) -> Result<Metrics, Stopped> {
        let (tx, rx) = oneshot::channel();
        self.command(Command::Metrics(tx)).await?;
        rx.await.map_err(|_| Stopped)
    }

    /// Graceful stop: unregisters, fails what is queued with `Shutdown`, reports every
    /// outcome, closes links, ends the driver. Returns when it is done.
    ///
    /// **Cancellation:** dropping the future after the command was queued does not stop the
    /// shutdown; it only stops waiting for its end.
    ///
    /// # Errors
    ///
    /// The node had already stopped.
    pub async fn shutdown(&self) -> Result<(), Stopped> {
        let (tx, rx) = oneshot::channel();
        self.command(Command::Shutdown(tx)).await?;
        rx.await.map_err(|_| Stopped)
    }

    /// Abrupt stop, as if the process were killed: every socket is dropped at once, nothing
    /// is unregistered, no goodbye is sent, pending outcome futures resolve to `Stopped`.
    pub fn kill(&self) {
        // A stored permit: the driver sees it at its next wait even if it is busy now.
        self.kill_switch.notify_one();
    }

    /// What the node's registry view holds now.
    #[must_use]
    pub fn known(&self) -> Known {
        self.known.borrow().clone()
    }

    /// Waits until `done` holds for the node's registry view (checked now and after every
    /// registry event), at most `timeout`. Returns whether it held; `false` also when the node
    /// stopped.
    ///
    /// **Cancellation:** safe; it only observes.
    pub async fn wait_for(&self, timeout: Duration, mut done: impl FnMut(&Known) -> bool) -> bool {
        let mut known = self.known.clone();
        tokio::time::timeout(
            timeout,
            async move { known.wait_for(|k| done(k)).await.is_ok() },
        )
        .await
        .unwrap_or(false)
    }

    /// Waits until discovery and topology records of every node in `ids` are applied, at
    /// most `timeout`. Returns whether they are.
    ///
    /// **Cancellation:** safe; it only observes.
    pub async fn wait_known(&self, ids: &[NodeId], timeout: Duration) -> bool {
        self.wait_for(timeout, |k| k.knows_all(ids)).await
    }

    async fn command(&self, command: Command) -> Result<(), Stopped> {
        self.commands.send(command).await.map_err(|_| Stopped)
    }
}
