//! The driver task: one loop over the core `Node`.
//!
//! [`start`] binds the listener, builds the `Node` and the records the node registers, starts
//! the registry backend ([`start_backend`]) and spawns the loop. The loop waits for one of: a
//! command from a [`NodeHandle`], a link event ([`links`]), a registry feed event, room in a
//! full inbox, or the core's next deadline (one `Sleep`, reset only when the deadline moves).
//! It makes the matching `handle_*` call (or command), then drains `poll_output` into I/O:
//! `Connect` → a dial task, `Transmit` → the link's writer, `Close` → the link's tasks stop
//! (the writer flushes first), `Received` → the inbox, `Outcome` → the sender's outcome
//! future, `Event` → counters and logs. No routing decision is taken here.
//!
//! Backpressure: while the inbox is full, received messages wait in a local queue and the
//! loop stops taking link events, so the link readers stop and the peers' TCP windows close.

mod accounting;
mod links;

use std::{
    collections::{HashMap, VecDeque},
    net::SocketAddr,
    sync::Arc,
    time::Duration,
};

use switchboard_core::{
    config::Config,
    discovery::{DiscoveryInfo, TopologyData, TopologyInfo},
    ids::{MsgId, NodeId},
    node::{Event, Node, Output, RegistryEvent},
    outcome::Outcome,
    time::Instant,
};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{debug, info, warn};

use self::{
    accounting::Counters,
    links::{LINK_EVENT_CAPACITY, LinkEvent, Links},
};
use super::{
    COMMAND_CAPACITY, Command, INBOX_CAPACITY, Inbox, NodeHandle, Received, RegistrySpec,
    StartError,
};
use crate::{
    clock::Clock,
    net,
    observe::Known,
    registry::{
        client::{ClientTuning, spawn_client},
        feed::{Feed, FeedCommand, FeedEvent, Registration},
    },
};

/// How long a graceful shutdown waits for the registry backend to unregister.
const UNREGISTER_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a graceful shutdown waits for the link writers to flush.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Binds, builds the `Node`, starts the registry backend and spawns the loop.
pub(super) async fn start(
    mut config: Config,
    listen: SocketAddr,
    registry: RegistrySpec,
    tuning: ClientTuning,
) -> Result<(NodeHandle, Inbox), StartError> {
    config.validate()?;
    let bind_error = |source| StartError::Bind {
        addr: listen,
        source,
    };
    let listener = net::bind_listener(listen).await.map_err(bind_error)?;
    let local_addr = listener.local_addr().map_err(bind_error)?;
    if config.listen.is_empty() {
        config.listen = vec![net::published_address(local_addr)];
    }
    if config.pid == 0 {
        config.pid = i64::from(std::process::id());
    }
    if config.hostname.is_empty() {
        config.hostname = local_hostname();
    }
    // A restarted node must be a new incarnation, whatever seed it was given.
    config.rng_seed ^= net::entropy();
    let clock = Clock::start();
    let node = Node::new(config, clock.now())?;
    let topology = topology_of(&node, node.config().upstream);
    let registration = Registration {
        discovery: discovery_of(&node),
        topology: topology.clone(),
        incarnation: node.incarnation(),
    };
    let feed = start_backend(&registry, registration, &tuning)?;

    let (commands_tx, commands) = mpsc::channel(COMMAND_CAPACITY);
    let (inbox_tx, inbox_rx) = mpsc::channel(INBOX_CAPACITY);
    let (link_tx, link_events) = mpsc::channel(LINK_EVENT_CAPACITY);
    let kill_switch = Arc::new(Notify::new());
    let (known_tx, known_rx) = watch::channel(accounting::known(&node, false));
    let handle = NodeHandle {
        id: node.id(),
        name: node.config().name.clone(),
        local_addr,
        incarnation: node.incarnation(),
        commands: commands_tx,
        kill_switch: Arc::clone(&kill_switch),
        known: known_rx,
    };
    info!(
        id = %node.id(), name = %node.config().name, %local_addr,
        incarnation = node.incarnation(), upstream = %node.config().upstream,
        "node started"
    );
    let mut links = Links::new(link_tx);
    links.spawn_accept(listener);
    let mut driver = Driver {
        node,
        clock,
        links,
        pending: HashMap::new(),
        inbox: inbox_tx,
        overflow: VecDeque::new(),
        feed,
        topology,
        counters: Counters::default(),
        registered: false,
        known: known_tx,
    };
    driver.drain();
    tokio::spawn(driver.run(commands, link_events, kill_switch));
    Ok((handle, Inbox { rx: inbox_rx }))
}

/// Starts the registry backend `spec` names for `registration`; `None` without a registry.
fn start_backend(
    spec: &RegistrySpec,
    registration: Registration,
    tuning: &ClientTuning,
) -> Result<Option<Feed>, StartError> {
    match spec {
        RegistrySpec::None => Ok(None),
        RegistrySpec::Embedded(addr) => Ok(Some(spawn_client(*addr, registration, |c| {
            tuning.apply(c);
        }))),
        RegistrySpec::Etcd(_) => Err(StartError::EtcdDisabled),
    }
}

/// The discovery record a node publishes: identity, listen addresses, host, pid, and its
/// labels as metadata labels (so filters can select on them).
fn discovery_of(node: &Node) -> DiscoveryInfo {
    let config = node.config();
    let mut info = DiscoveryInfo {
        id: config.id,
        name: config.name.clone(),
        hostname: config.hostname.clone(),
        pid: i32::try_from(config.pid).unwrap_or(0),
        listen: config.listen.clone(),
        ..DiscoveryInfo::default()
    };
    info.metadata.labels = config.labels.clone();
    info
}

/// The topology record of a node with `upstream`.
fn topology_of(node: &Node, upstream: NodeId) -> TopologyInfo {
    let config = node.config();
    TopologyInfo {
        id: config.id,
        name: config.name.clone(),
        hostname: config.hostname.clone(),
        pid: i32::try_from(config.pid).unwrap_or(0),
        upstream_id: upstream,
        data: TopologyData {
            label: config.labels.clone(),
        },
        ..TopologyInfo::default()
    }
}

fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| String::from("localhost"))
}

/// The loop's state: the core node and everything its outputs go to.
struct Driver {
    node: Node,
    clock: Clock,
    links: Links,
    /// Outcome futures of accepted messages.
    pending: HashMap<MsgId, oneshot::Sender<Outcome>>,
    inbox: mpsc::Sender<Received>,
    /// Received messages waiting for room in the inbox (link events pause meanwhile).
    overflow: VecDeque<Received>,
    feed: Option<Feed>,
    /// The topology record as last published.
    topology: TopologyInfo,
    counters: Counters,
    registered: bool,
    known: watch::Sender<Known>,
}

/// How the loop ended.
enum Exit {
    Killed,
    Shutdown(Option<oneshot::Sender<()>>),
}

impl Driver {
    async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut link_events: mpsc::Receiver<LinkEvent>,
        kill_switch: Arc<Notify>,
    ) {
        let far = || tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let sleep = tokio::time::sleep_until(far());
        tokio::pin!(sleep);
        let mut armed: Option<Instant> = None;
        let exit = loop {
            let deadline = self.node.poll_timeout();
            if deadline != armed {
                armed = deadline;
                let at = deadline.map_or_else(far, |d| self.clock.to_tokio(d));
                sleep.as_mut().reset(at);
            }
            let inbox_blocked = !self.overflow.is_empty();
            tokio::select! {
                () = kill_switch.notified() => break Exit::Killed,
                command = commands.recv() => match command {
                    Some(Command::Shutdown(done)) => break Exit::Shutdown(Some(done)),
                    Some(command) => self.on_command(command),
                    None => break Exit::Shutdown(None),
                },
                Some(event) = link_events.recv(), if !inbox_blocked => self.on_link_event(event),
                event = feed_recv(&mut self.feed) => self.on_feed_event(event),
                room = inbox_room(&self.inbox), if inbox_blocked => {
                    if room {
                        self.push_overflow();
                    } else {
                        self.drop_overflow();
                    }
                }
                () = &mut sleep, if armed.is_some() => {
                    let now = self.clock.now();
                    self.node.handle_timeout(now);
                }
            }
            self.drain();
        };
        match exit {
            Exit::Killed => {
                info!(id = %self.node.id(), "node killed");
                // Dropping the driver drops the link table (aborting every task and socket),
                // the feed (the backend ends without unregistering) and every outcome sender.
            }
            Exit::Shutdown(done) => {
                self.shutdown().await;
                answer_after_stop(&mut commands, &self);
                if let Some(done) = done {
                    let _ = done.send(());
                }
            }
        }
    }

    fn on_command(&mut self, command: Command) {
        let now = self.clock.now();
        match command {
            Command::Send {
                target,
                msg_type,
                payload,
                accepted,
            } => match self.node.send(now, target.as_target(), msg_type, payload) {
                Ok(msg) => {
                    self.counters.accepted();
                    let (tx, rx) = oneshot::channel();
                    self.pending.insert(msg, tx);
                    let _ = accepted.send(Ok(rx));
                }
                Err(error) => {
                    self.counters.refused(&error);
                    let _ = accepted.send(Err(error));
                }
            },
            Command::SetUpstream { upstream, done } => {
                self.set_upstream(now, upstream);
                let _ = done.send(());
            }
            Command::Status(tx) => {
                let _ = tx.send(accounting::status(&self.node, &self.links, self.registered));
            }
            Command::Metrics(tx) => {
                let _ = tx.send(self.counters.snapshot(&self.node, &self.links));
            }
            Command::Shutdown(done) => {
                // Handled by the loop; unreachable here, answered anyway.
                let _ = done.send(());
            }
        }
    }

    /// Publishes a topology record naming `upstream`. With a registry the core applies it
    /// when the registry echoes the node's own record back (as for any node); without one it
    /// is applied at once.
    fn set_upstream(&mut self, now: Instant, upstream: NodeId) {
        self.topology.upstream_id = upstream;
        info!(id = %self.node.id(), %upstream, "switching upstream");
        match &self.feed {
            Some(feed) => {
                let update = FeedCommand::UpdateTopology(self.topology.clone());
                if let Err(e) = feed.commands.try_send(update) {
                    warn!(error = %e, "registry backend did not take the topology update");
                }
            }
            None => {
                let event = RegistryEvent::TopologyPut(self.topology.clone());
                self.node.handle_registry(now, event);
                self.publish_known();
            }
        }
    }

    fn on_link_event(&mut self, event: LinkEvent) {
        let now = self.clock.now();
        match event {
            LinkEvent::Accepted(stream, peer) => {
                let link = self.node.handle_accepted(now);
                debug!(%link, %peer, "accepted");
                self.links.accepted(link, stream);
            }
            LinkEvent::Connected(link, stream) => {
                if self.links.connected(link, stream) {
                    self.node.handle_connected(now, link);
                }
            }
            LinkEvent::ConnectFailed(link, reason) => {
                if self.links.gone(link) {
                    debug!(%link, %reason, "dial failed");
                    self.counters.dial_failed();
                    self.node.handle_connect_failed(now, link);
                }
            }
            LinkEvent::Bytes(link, bytes) => {
                if self.links.contains(link) {
                    self.node.handle_received(now, link, &bytes);
                }
            }
            LinkEvent::Closed(link, reason) => {
                if self.links.gone(link) {
                    debug!(%link, %reason, "link closed by the peer or the network");
                    self.node.handle_closed(now, link);
                }
            }
        }
    }

    fn on_feed_event(&mut self, event: Option<FeedEvent>) {
        let Some(event) = event else {
            debug!(id = %self.node.id(), "registry backend ended");
            self.feed = None;
            return;
        };
        match event {
            FeedEvent::Registry(event) => {
                self.counters.registry_event(&event);
                let now = self.clock.now();
                self.node.handle_registry(now, event);
            }
            FeedEvent::Registered => {
                self.counters.registered();
                self.registered = true;
            }
            FeedEvent::Disconnected { reason } => {
                if self.registered {
                    info!(id = %self.node.id(), %reason, "registry lost");
                }
                self.counters.registry_disconnected();
                self.registered = false;
            }
            FeedEvent::Conflict { holder } => {
                warn!(id = %self.node.id(), %holder, "another instance holds this node's id");
                self.counters.registry_conflict();
                self.registered = false;
            }
        }
        self.publish_known();
    }

    fn publish_known(&mut self) {
        let known = accounting::known(&self.node, self.registered);
        self.known.send_if_modified(|k| {
            if *k == known {
                false
            } else {
                *k = known;
                true
            }
        });
    }

    /// Performs every pending output of the core.
    fn drain(&mut self) {
        while let Some(output) = self.node.poll_output() {
            match output {
                Output::Connect { link, peer, addr } => {
                    self.counters.dial();
                    self.links.dial(link, peer, addr);
                }
                Output::Transmit { link, bytes } => self.links.transmit(link, bytes),
                Output::Close { link } => self.links.close(link),
                Output::Received {
                    from,
                    via,
                    msg_type,
                    payload,
                } => {
                    self.counters.received();
                    self.deliver(Received {
                        from,
                        via,
                        msg_type,
                        payload,
                    });
                }
                Output::Outcome { msg, outcome } => {
                    self.counters.outcome(outcome);
                    if let Some(tx) = self.pending.remove(&msg) {
                        let _ = tx.send(outcome);
                    }
                }
                Output::Event(event) => self.on_event(&event),
                other => debug!(?other, "unhandled node output"),
            }
        }
    }

    fn on_event(&mut self, event: &Event) {
        self.counters.event(event);
        match event {
            Event::LinkUp { link, peer } => {
                self.links.mark_up(*link, *peer);
                debug!(id = %self.node.id(), %link, %peer, "link up");
            }
            Event::LinkClosed { link, peer } => {
                debug!(id = %self.node.id(), %link, ?peer, "link down");
            }
            Event::LinkRejected { link, reason } => {
                warn!(id = %self.node.id(), %link, %reason, "link rejected");
            }
            Event::PeerRestarted { peer, incarnation } => {
                info!(id = %self.node.id(), %peer, incarnation, "peer restarted");
            }
            other => debug!(id = %self.node.id(), ?other, "node event"),
        }
    }

    /// Hands `msg` to the inbox, or queues it while the inbox is full.
    fn deliver(&mut self, msg: Received) {
        if !self.overflow.is_empty() {
            self.overflow.push_back(msg);
            return;
        }
        match self.inbox.try_send(msg) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(msg)) => self.overflow.push_back(msg),
            Err(mpsc::error::TrySendError::Closed(_)) => self.counters.inbox_dropped(),
        }
    }

    /// Moves queued messages into the inbox while it has room.
    fn push_overflow(&mut self) {
        while let Some(msg) = self.overflow.pop_front() {
            match self.inbox.try_send(msg) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(msg)) => {
                    self.overflow.push_front(msg);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.counters.inbox_dropped();
                    self.drop_overflow();
                    return;
                }
            }
        }
    }

    fn drop_overflow(&mut self) {
        for _ in self.overflow.drain(..) {
            self.counters.inbox_dropped();
        }
    }

    /// Graceful stop: every accepted message gets its outcome, the backend unregisters, the
    /// links flush and close; received messages still queued reach the inbox afterwards.
    async fn shutdown(&mut self) {
        let now = self.clock.now();
        self.node.shutdown(now);
        self.drain();
        if let Some(mut feed) = self.feed.take() {
            let (tx, mut rx) = oneshot::channel();
            if feed.commands.send(FeedCommand::Shutdown(tx)).await.is_ok() {
                // Keep taking the backend's events so it is never blocked on a full feed.
                let wait = async {
                    loop {
                        tokio::select! {
                            _ = &mut rx => return,
                            event = feed.events.recv() => if event.is_none() { return },
                        }
                    }
                };
                if tokio::time::timeout(UNREGISTER_TIMEOUT, wait)
                    .await
                    .is_err()
                {
                    warn!(id = %self.node.id(), "registry backend did not confirm the unregister");
                }
            }
        }
        self.links.close_all(FLUSH_TIMEOUT).await;
        self.registered = false;
        self.publish_known();
        if !self.overflow.is_empty() {
            let inbox = self.inbox.clone();
            let overflow = std::mem::take(&mut self.overflow);
            tokio::spawn(async move {
                for msg in overflow {
                    if inbox.send(msg).await.is_err() {
                        return;
                    }
                }
            });
        }
        info!(id = %self.node.id(), "node stopped");
    }
}

/// After a graceful stop: refuses the sends still queued (`Shutdown`) and answers the other
/// commands, so no caller waits on a dropped driver.
fn answer_after_stop(commands: &mut mpsc::Receiver<Command>, driver: &Driver) {
    commands.close();
    while let Ok(command) = commands.try_recv() {
        match command {
            Command::Send { accepted, .. } => {
                let _ = accepted.send(Err(switchboard_core::node::SendError::Shutdown));
            }
            Command::SetUpstream { done, .. } => {
                let _ = done.send(());
            }
            Command::Status(tx) => {
                let _ = tx.send(accounting::status(
                    &driver.node,
                    &driver.links,
                    driver.registered,
                ));
            }
            Command::Metrics(tx) => {
                let _ = tx.send(driver.counters.snapshot(&driver.node, &driver.links));
            }
            Command::Shutdown(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Waits until the inbox has room (`true`; the driver is its only sender, so the room stays
/// until it sends) or was dropped (`false`).
async fn inbox_room(inbox: &mpsc::Sender<Received>) -> bool {
    inbox.reserve().await.is_ok()
}

async fn feed_recv(feed: &mut Option<Feed>) -> Option<FeedEvent> {
    match feed {
        Some(feed) => feed.events.recv().await,
        None => std::future::pending().await,
    }
}
