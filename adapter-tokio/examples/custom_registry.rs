//! A registry of your own through the feed contract ([`switchboard_tokio::registry::feed`]):
//! an in-memory board shared by the nodes of one process, plugged in with
//! [`RegistrySpec::Custom`]. Two nodes register on it, find each other and exchange a message.
//!
//! ```sh
//! cargo run -p switchboard-tokio --example custom_registry
//! ```
//!
//! A real backend (a database, a service mesh's catalogue, ...) keeps the same shape: at start
//! it gets the node's [`Registration`], sends the records it knows as
//! [`FeedEvent::Registry`] (with a revision each), then [`FeedEvent::Registered`] once its
//! view is complete, then every change; it obeys [`FeedCommand`]s (publish a new topology
//! record, unregister and answer on shutdown).

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use bytes::Bytes;
use switchboard_tokio::{
    CustomBackend, NodeBuilder, RegistrySpec, TargetSpec,
    registry::{FeedCommand, FeedEvent, FeedPort, Registration, feed_channel},
    switchboard_core::{
        discovery::{DiscoveryInfo, TopologyInfo},
        ids::NodeId,
        registry::RegistryEvent,
    },
};
use tokio::sync::broadcast;

/// The shared records, each put or delete numbered by one revision counter.
#[derive(Default)]
struct Records {
    revision: u64,
    discovery: BTreeMap<NodeId, DiscoveryInfo>,
    topology: BTreeMap<NodeId, TopologyInfo>,
}

/// The in-memory registry: records and a broadcast of every change.
struct Board {
    records: Mutex<Records>,
    changes: broadcast::Sender<RegistryEvent>,
}

impl Board {
    fn new() -> Arc<Board> {
        Arc::new(Board {
            records: Mutex::new(Records::default()),
            changes: broadcast::channel(1024).0,
        })
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Subscribes, takes a snapshot of what is listed, then puts the node's records (the
    /// subscriber sees them as changes, after the snapshot).
    fn register(
        &self,
        registration: Registration,
    ) -> (Vec<RegistryEvent>, broadcast::Receiver<RegistryEvent>) {
        let mut records = self.records();
        let changes = self.changes.subscribe();
        let snapshot = records
            .discovery
            .values()
            .cloned()
            .map(|info| RegistryEvent::DiscoveryPut(info.into()))
            .chain(
                records
                    .topology
                    .values()
                    .cloned()
                    .map(|info| RegistryEvent::TopologyPut(info.into())),
            )
            .collect();
        self.put_discovery(&mut records, registration.discovery);
        self.put_topology(&mut records, registration.topology);
        (snapshot, changes)
    }

    fn put_discovery(&self, records: &mut Records, mut info: DiscoveryInfo) {
        records.revision += 1;
        info.revision = records.revision;
        records.discovery.insert(info.id, info.clone());
        let _ = self.changes.send(RegistryEvent::DiscoveryPut(info.into()));
    }

    fn put_topology(&self, records: &mut Records, mut info: TopologyInfo) {
        records.revision += 1;
        info.revision = records.revision;
        records.topology.insert(info.id, info.clone());
        let _ = self.changes.send(RegistryEvent::TopologyPut(info.into()));
    }

    fn unregister(&self, id: NodeId) {
        let mut records = self.records();
        if let Some(info) = records.discovery.remove(&id) {
            records.revision += 1;
            let revision = records.revision;
            let _ = self.changes.send(RegistryEvent::DiscoveryDelete {
                id,
                name: info.name,
                revision,
            });
        }
        if records.topology.remove(&id).is_some() {
            records.revision += 1;
            let revision = records.revision;
            let _ = self
                .changes
                .send(RegistryEvent::TopologyDelete { id, revision });
        }
    }

    /// The backend a node starts: a task per node speaking the feed contract.
    fn backend(self: &Arc<Board>) -> CustomBackend {
        let board = Arc::clone(self);
        CustomBackend::new(move |registration| {
            let (feed, port) = feed_channel();
            tokio::spawn(serve(Arc::clone(&board), registration, port));
            feed
        })
    }
}

/// One node's backend task.
async fn serve(board: Arc<Board>, registration: Registration, port: FeedPort) {
    let FeedPort {
        events,
        mut commands,
        ..
    } = port;
    let id = registration.discovery.id;
    let (snapshot, mut changes) = board.register(registration);
    for event in snapshot {
        if events.send(FeedEvent::Registry(event)).await.is_err() {
            return;
        }
    }
    if events.send(FeedEvent::Registered).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            change = changes.recv() => match change {
                Ok(event) => {
                    if events.send(FeedEvent::Registry(event)).await.is_err() {
                        break;
                    }
                }
                // A real backend would resynchronise (send a fresh snapshot) after a lag.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            },
            command = commands.recv() => match command {
                Some(FeedCommand::UpdateTopology(info)) => {
                    let mut records = board.records();
                    board.put_topology(&mut records, info);
                }
                Some(FeedCommand::Shutdown(done)) => {
                    board.unregister(id);
                    let _ = done.send(());
                    break;
                }
                // The driver is gone (or sent a command this backend does not know).
                None => break,
                Some(_) => {}
            },
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let board = Board::new();
    let node = |id, name| {
        NodeBuilder::new(NodeId(id), name)
            .listen(SocketAddr::from(([127, 0, 0, 1], 0)))
            .registry_spec(RegistrySpec::Custom(board.backend()))
            .config(|c| c.topology_policy.allow_direct_connection = true)
    };
    let (alpha, _alpha_inbox) = node(1, "alpha").start().await?;
    let (beta, mut beta_inbox) = node(2, "beta").start().await?;
    let both = [NodeId(1), NodeId(2)];
    if !alpha.wait_known(&both, Duration::from_secs(10)).await {
        return Err("alpha did not learn both nodes from the board".into());
    }

    let outcome = alpha
        .send(
            TargetSpec::Name("beta".into()),
            7,
            Bytes::from_static(b"hi"),
        )
        .await?;
    let got = beta_inbox.recv().await.ok_or("beta stopped")?;
    println!(
        "alpha -> beta: {outcome:?}; beta got {:?} from {}",
        got.payload, got.from
    );

    alpha.shutdown().await?;
    beta.shutdown().await?;
    println!(
        "listed after both shut down: {}",
        board.records().discovery.len()
    );
    Ok(())
}
