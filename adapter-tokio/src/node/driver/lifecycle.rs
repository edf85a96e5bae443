//! Starting and stopping a node: binding, the records it registers, the registry backend,
//! and the graceful stop.

use std::{collections::VecDeque, sync::Arc};

use switchboard_core::node::{Node, SendError};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{info, warn};

use super::{
    Driver, FLUSH_TIMEOUT, UNREGISTER_GRACE, UNREGISTER_TIMEOUT, accounting,
    accounting::Counters,
    links::{LINK_EVENT_CAPACITY, Links},
};
use crate::{
    clock::Clock,
    net,
    node::{COMMAND_CAPACITY, Command, Inbox, NodeBuilder, NodeHandle, RegistrySpec, StartError},
    registry::{
        client::{ClientTuning, SharedRecords, spawn_client_sharing},
        feed::{Feed, FeedCommand},
    },
};

/// Binds, builds the `Node`, starts the registry backend and spawns the loop.
pub(in crate::node) async fn start(
    builder: NodeBuilder,
) -> Result<(NodeHandle, Inbox), StartError> {
    let NodeBuilder {
        mut config,
        listen,
        advertise,
        registry,
        tuning,
        shared_records,
        inbox_capacity,
        transport,
        trace,
    } = builder;
    config.validate()?;
    let publishes = !matches!(registry, crate::node::RegistrySpec::None);
    if publishes && listen.ip().is_unspecified() && advertise.is_none() && config.listen.is_empty()
    {
        return Err(StartError::WildcardWithoutAdvertise { addr: listen });
    }
    if config.nonce_entropy.is_empty() {
        config.nonce_entropy = net::nonce_entropy();
    }
    let bind_error = |source| StartError::Bind {
        addr: listen,
        source,
    };
    let listener = net::bind_listener(listen).await.map_err(bind_error)?;
    let local_addr = listener.local_addr().map_err(bind_error)?;
    config.fill_from_process_advertised(
        local_addr,
        advertise.as_ref(),
        std::process::id(),
        net::hostname,
        net::entropy(),
    );
    let clock = Clock::start();
    let node = Node::new(config, clock.now())?;
    let topology = node
        .inspect()
        .config()
        .topology_info(node.inspect().config().upstream);
    let feed = start_backend(&registry, &node, &tuning, shared_records, &transport)?;

    let (commands_tx, commands) = mpsc::channel(COMMAND_CAPACITY);
    let commands_weak = commands_tx.downgrade();
    let (inbox_tx, inbox) = crate::node::inbox::channel(inbox_capacity);
    let (link_tx, link_events) = mpsc::channel(LINK_EVENT_CAPACITY);
    let kill_switch = Arc::new(Notify::new());
    let (known_tx, known_rx) = watch::channel(accounting::known(&node, false, None, None));
    let handle = NodeHandle {
        id: node.id(),
        name: node.inspect().config().name.clone(),
        local_addr,
        incarnation: node.incarnation(),
        commands: commands_tx,
        kill_switch: Arc::clone(&kill_switch),
        known: known_rx,
        trace: trace.clone(),
    };
    info!(
        id = node.id().0, name = %node.inspect().config().name, %local_addr,
        incarnation = %node.incarnation(), upstream = node.inspect().config().upstream.0,
        "node started"
    );
    let mut links = Links::new(link_tx, transport);
    links.spawn_accept(listener, node.inspect().config().max_pending_handshakes);
    let mut driver = Driver {
        node,
        clock,
        links,
        pending: super::PendingMap::default(),
        inbox: inbox_tx,
        overflow: VecDeque::new(),
        feed,
        topology,
        counters: Counters::default(),
        registered: false,
        conflict: None,
        unavailable: None,
        known: known_tx,
        batch: Vec::with_capacity(super::BURST),
        rpc: super::rpc::RpcWaiters::traced(trace),
        posters: super::posters::Posters::default(),
        commands: commands_weak,
        leaving: None,
    };
    let early: Vec<String> = driver
        .node
        .inspect()
        .served_methods()
        .map(str::to_owned)
        .collect();
    driver.rpc.hold(early.iter().map(String::as_str));
    driver.drain();
    tokio::spawn(driver.run(commands, link_events, kill_switch));
    Ok((handle, inbox))
}

/// Starts the registry backend `spec` names for `node`'s records; `None` without a registry.
fn start_backend(
    spec: &RegistrySpec,
    node: &Node,
    tuning: &ClientTuning,
    records: Option<SharedRecords>,
    transport: &crate::transport::Transport,
) -> Result<Option<Feed>, StartError> {
    let embedded = |host_port: String| {
        let mut config = node.registry_client_config();
        tuning.apply(&mut config);
        spawn_client_sharing(host_port, config, transport.clone(), records)
    };
    match spec {
        RegistrySpec::None => Ok(None),
        RegistrySpec::Embedded(addr) => Ok(Some(embedded(addr.to_string()))),
        RegistrySpec::EmbeddedHost(host_port) => Ok(Some(embedded(host_port.clone()))),
        #[cfg(feature = "etcd")]
        RegistrySpec::Etcd(options) => {
            let registration = crate::registry::feed::Registration {
                discovery: node.discovery_info(),
                topology: node
                    .inspect()
                    .config()
                    .topology_info(node.inspect().config().upstream),
                incarnation: node.incarnation(),
            };
            Ok(Some(crate::etcd::spawn_etcd(options.clone(), registration)))
        }
        #[cfg(not(feature = "etcd"))]
        RegistrySpec::Etcd(_) => Err(StartError::EtcdDisabled),
        RegistrySpec::Custom(backend) => Ok(Some(
            backend.start(crate::registry::feed::Registration {
                discovery: node.discovery_info(),
                topology: node
                    .inspect()
                    .config()
                    .topology_info(node.inspect().config().upstream),
                incarnation: node.incarnation(),
            }),
        )),
    }
}

impl Driver {
    /// Graceful stop: every accepted message gets its outcome, the backend unregisters, the
    /// links flush and close; received messages still queued reach the inbox afterwards.
    pub(super) async fn shutdown(&mut self) {
        let now = self.clock.now();
        self.node.shutdown(now);
        self.drain();
        if let Some(feed) = self.feed.take() {
            let (tx, rx) = oneshot::channel();
            if feed.commands.send(FeedCommand::Shutdown(tx)).await.is_ok() {
                let mut unregistered = Box::pin(until_unregistered(feed, rx));
                if tokio::time::timeout(UNREGISTER_TIMEOUT, &mut unregistered)
                    .await
                    .is_err()
                {
                    // A busy backend (or registry) is still on its way to the goodbye: it
                    // goes on in the background, holding the feed — a dropped feed ends the
                    // backend at once, without `Bye`, and the registry would protect the
                    // node instead of removing it.
                    warn!(
                        id = self.node.id().0,
                        "registry backend did not confirm the unregister within {UNREGISTER_TIMEOUT:?}; \
                         it goes on in the background"
                    );
                    tokio::spawn(tokio::time::timeout(UNREGISTER_GRACE, unregistered));
                }
            }
        }
        self.links.close_all(FLUSH_TIMEOUT).await;
        self.registered = false;
        self.publish_known();
        if !self.overflow.is_empty() {
            let inbox = self.inbox.clone();
            let rest = std::mem::take(&mut self.overflow);
            tokio::spawn(async move { inbox.hand_over_all(rest).await });
        }
        info!(id = self.node.id().0, "node stopped");
    }
}

/// After a graceful stop: refuses the sends still queued (`Shutdown`) and answers the other
/// commands, so no caller waits on a dropped driver.
pub(super) fn answer_after_stop(commands: &mut mpsc::Receiver<Command>, driver: &mut Driver) {
    commands.close();
    let taken = std::mem::take(&mut driver.batch);
    let queued = std::iter::from_fn(|| commands.try_recv().ok());
    for command in taken.into_iter().chain(queued) {
        match command {
            Command::Send { accepted, .. } => {
                let _ = accepted.send(Err(SendError::Shutdown));
            }
            Command::Post { outcome, .. } => {
                let _ = outcome.send(Err(SendError::Shutdown));
            }
            Command::SendBatch { messages, accepted } => {
                let _ = accepted.send(messages.iter().map(|_| Err(SendError::Shutdown)).collect());
            }
            Command::SetUpstream { done, .. } => {
                let _ = done.send(());
            }
            Command::Status(tx) => {
                let _ = tx.send(accounting::status(&driver.node, driver.registered));
            }
            Command::Metrics(tx) => {
                let _ = tx.send(driver.counters.snapshot(&driver.node, &driver.links));
            }
            Command::Shutdown(done) => {
                let _ = done.send(());
            }
            Command::Leave(_) => {}
            Command::Rpc(command) => super::rpc::answer_after_stop(command),
            Command::OpenPoster { poster, reports } => driver.posters.open(poster, reports),
            Command::Stream { poster, ticket, .. } => {
                driver.posters.refused(poster, ticket, SendError::Shutdown);
            }
            Command::StreamBatch {
                poster,
                first,
                messages,
            } => {
                for ticket in (first..).take(messages.len()) {
                    driver.posters.refused(poster, ticket, SendError::Shutdown);
                }
            }
            Command::ClosePoster { poster } => driver.posters.close(poster),
        }
    }
    driver.posters.flush();
}

/// Waits until the registry backend confirms the unregister (`done`), taking its events
/// meanwhile so it is never blocked on a full feed, and holding the feed until then.
async fn until_unregistered(mut feed: Feed, mut done: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut done => return,
            event = feed.events.recv() => if event.is_none() { return },
        }
    }
}
