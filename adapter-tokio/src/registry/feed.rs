//! The contract between a registry backend and the node driver.
//!
//! A backend (the embedded registry client in [`super::client`], or the etcd backend behind
//! the `etcd` feature) runs as its own task. It registers the node's records, follows the
//! registry, and sends the node driver [`FeedEvent`]s; the driver passes every
//! [`FeedEvent::Registry`] to `Node::handle_registry` and counts the rest for metrics. The
//! driver sends [`FeedCommand`]s back: an updated topology record (upstream switch) or a
//! graceful shutdown (unregister: `Bye` to the embedded registry, lease revoke on etcd).
//! Both channels are bounded; a backend awaits room rather than dropping an event.

use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    registry::RegistryEvent,
};
use tokio::sync::{mpsc, oneshot};

/// Capacity of each feed channel.
pub const FEED_CAPACITY: usize = 1024;

/// What a node registers: its records and this life's incarnation.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Registration {
    /// The node's discovery record (id, name, listen address, labels).
    pub discovery: DiscoveryInfo,
    /// The node's topology record (upstream, host, pid, labels).
    pub topology: TopologyInfo,
    /// The node's incarnation (`Node::incarnation`), new at every start.
    pub incarnation: u64,
}

impl Registration {
    /// A registration of these records for this incarnation.
    #[must_use]
    pub fn new(discovery: DiscoveryInfo, topology: TopologyInfo, incarnation: u64) -> Registration {
        Registration {
            discovery,
            topology,
            incarnation,
        }
    }
}

/// From a backend to the node driver.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FeedEvent {
    /// Pass to `Node::handle_registry`.
    Registry(RegistryEvent),
    /// The node's records are registered and the backend's view is complete (embedded: the
    /// snapshot arrived; etcd: the txn committed and every watcher listed).
    Registered,
    /// The backend lost the registry and is retrying; the view is kept meanwhile.
    Disconnected {
        /// Why, for logs.
        reason: String,
    },
    /// Another live instance holds this node's id, or another node its name: the
    /// registration is refused and never overwritten. The backend keeps retrying in case the
    /// holder goes away.
    Conflict {
        /// What is held and by whom, for logs, the ready line and `/status` (e.g.
        /// `id held by incarnation 7`, `name "a" taken by id 3`, the etcd lease or value).
        holder: String,
    },
}

/// From the node driver to a backend.
#[derive(Debug)]
#[non_exhaustive]
pub enum FeedCommand {
    /// Publish this topology record (an upstream switch); only the topology is rewritten.
    UpdateTopology(TopologyInfo),
    /// Publish this discovery record (served methods changed); only the discovery record is
    /// rewritten.
    UpdateDiscovery(Box<DiscoveryInfo>),
    /// Unregister gracefully, then answer on the channel and end the task.
    Shutdown(oneshot::Sender<()>),
}

/// The driver's end of a running backend.
#[derive(Debug)]
#[non_exhaustive]
pub struct Feed {
    /// Events from the backend, in order.
    pub events: mpsc::Receiver<FeedEvent>,
    /// Commands to the backend.
    pub commands: mpsc::Sender<FeedCommand>,
}

/// The backend's end: created together with a [`Feed`] by [`feed_channel`].
#[derive(Debug)]
#[non_exhaustive]
pub struct FeedPort {
    /// Where the backend sends its events.
    pub events: mpsc::Sender<FeedEvent>,
    /// The commands the backend must obey.
    pub commands: mpsc::Receiver<FeedCommand>,
}

/// A connected pair of ends, each channel bounded by [`FEED_CAPACITY`].
#[must_use]
pub fn feed_channel() -> (Feed, FeedPort) {
    let (event_tx, event_rx) = mpsc::channel(FEED_CAPACITY);
    let (command_tx, command_rx) = mpsc::channel(FEED_CAPACITY);
    (
        Feed {
            events: event_rx,
            commands: command_tx,
        },
        FeedPort {
            events: event_tx,
            commands: command_rx,
        },
    )
}
