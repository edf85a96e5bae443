//! Feed-level helpers: build registrations, run a backend and read its events with bounds,
//! and fold registry events into a latest-state view.

use std::{collections::BTreeMap, time::Duration};

use switchboard_core::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::RegistryEvent,
};
use switchboard_tokio::{
    etcd::{EtcdStats, spawn_etcd_with_stats},
    registry::{EtcdOptions, Feed, FeedCommand, FeedEvent, Registration},
};
use tokio::sync::oneshot;

/// Bound on waiting for one expected feed event.
pub const EVENT_BOUND: Duration = Duration::from_secs(30);

/// The records of node `id` named `name` under `upstream` (0 = root), listening on
/// `127.0.0.1:<port>`, identity `instance-<id>-<incarnation>`.
pub fn registration(
    id: u64,
    name: &str,
    upstream: u64,
    port: u16,
    incarnation: u64,
) -> Registration {
    let identity = format!("instance-{id}-{incarnation}");
    Registration::new(
        DiscoveryInfo {
            id: NodeId(id),
            name: name.to_owned(),
            hostname: String::from("test-host"),
            pid: 4242,
            listen: vec![format!("atcp://127.0.0.1:{port}")],
            identity: identity.clone(),
            ..DiscoveryInfo::default()
        },
        TopologyInfo {
            id: NodeId(id),
            name: name.to_owned(),
            hostname: String::from("test-host"),
            pid: 4242,
            identity,
            upstream_id: NodeId(upstream),
            ..TopologyInfo::default()
        },
        incarnation,
    )
}

/// A running backend and everything it sent so far.
pub struct Backend {
    /// The driver's end.
    pub feed: Feed,
    /// Its counters.
    pub stats: EtcdStats,
    /// Every event received, in order.
    pub seen: Vec<FeedEvent>,
    /// The latest state its registry events describe.
    pub view: RegistryView,
}

impl Backend {
    /// Starts a backend.
    pub fn spawn(options: EtcdOptions, registration: Registration) -> Backend {
        let (feed, stats) = spawn_etcd_with_stats(options, registration);
        Backend {
            feed,
            stats,
            seen: Vec::new(),
            view: RegistryView::default(),
        }
    }

    /// The next event, within [`EVENT_BOUND`].
    pub async fn next(&mut self) -> FeedEvent {
        let event = tokio::time::timeout(EVENT_BOUND, self.feed.events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no feed event within {EVENT_BOUND:?}; seen: {:#?}",
                    self.seen
                )
            })
            .expect("the backend ended its feed");
        if let FeedEvent::Registry(registry) = &event {
            self.view.apply(registry);
        }
        self.seen.push(event.clone());
        event
    }

    /// Reads events until one matches; returns it.
    pub async fn until(&mut self, what: &str, matches: impl Fn(&FeedEvent) -> bool) -> FeedEvent {
        let deadline = tokio::time::Instant::now() + EVENT_BOUND;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let event = tokio::time::timeout(left, self.next())
                .await
                .unwrap_or_else(|_| {
                    panic!("waited {EVENT_BOUND:?} for {what}; seen: {:#?}", self.seen)
                });
            if matches(&event) {
                return event;
            }
        }
    }

    /// Reads events until the view satisfies `done`.
    pub async fn until_view(&mut self, what: &str, done: impl Fn(&RegistryView) -> bool) {
        let deadline = tokio::time::Instant::now() + EVENT_BOUND;
        while !done(&self.view) {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if tokio::time::timeout(left, self.next()).await.is_err() {
                panic!("waited {EVENT_BOUND:?} for {what}; view: {:#?}", self.view);
            }
        }
    }

    /// Reads events until [`FeedEvent::Registered`].
    pub async fn registered(&mut self) {
        self.until("Registered", |e| *e == FeedEvent::Registered)
            .await;
    }

    /// Reads whatever arrives within `window` (no bound error: quiet is fine).
    pub async fn drain_for(&mut self, window: Duration) -> Vec<FeedEvent> {
        let deadline = tokio::time::Instant::now() + window;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, self.feed.events.recv()).await {
                Ok(Some(event)) => {
                    if let FeedEvent::Registry(registry) = &event {
                        self.view.apply(registry);
                    }
                    self.seen.push(event.clone());
                    got.push(event);
                }
                Ok(None) | Err(_) => return got,
            }
        }
    }

    /// Publishes a new topology record.
    pub async fn update_topology(&self, topology: TopologyInfo) {
        self.feed
            .commands
            .send(FeedCommand::UpdateTopology(topology))
            .await
            .expect("the backend is running");
    }

    /// Graceful shutdown (revokes the lease); waits for the answer.
    pub async fn shutdown(self) {
        let (done, answered) = oneshot::channel();
        self.feed
            .commands
            .send(FeedCommand::Shutdown(done))
            .await
            .expect("the backend is running");
        tokio::time::timeout(EVENT_BOUND, answered)
            .await
            .expect("shutdown answered in time")
            .expect("shutdown answered");
    }
}

/// Latest discovery and topology records by id, from registry events, gated on revision
/// (the `by_id` and `by_name` watchers deliver each discovery change twice, in any order
/// relative to each other).
#[derive(Debug, Default)]
pub struct RegistryView {
    /// id → (revision of the last change, record if live).
    pub discovery: BTreeMap<NodeId, (u64, Option<DiscoveryInfo>)>,
    /// id → (revision of the last change, record if live).
    pub topology: BTreeMap<NodeId, (u64, Option<TopologyInfo>)>,
}

impl RegistryView {
    /// Folds one event in.
    pub fn apply(&mut self, event: &RegistryEvent) {
        match event {
            RegistryEvent::DiscoveryPut(info) => {
                settle(
                    &mut self.discovery,
                    info.id,
                    info.revision,
                    Some(DiscoveryInfo::clone(info)),
                );
            }
            RegistryEvent::DiscoveryDelete { id, revision, .. } => {
                settle(&mut self.discovery, *id, *revision, None);
            }
            RegistryEvent::TopologyPut(info) => {
                settle(
                    &mut self.topology,
                    info.id,
                    info.revision,
                    Some((**info).clone()),
                );
            }
            RegistryEvent::TopologyDelete { id, revision } => {
                settle(&mut self.topology, *id, *revision, None);
            }
            _ => {}
        }
    }

    /// Ids with a live discovery record.
    pub fn discovered(&self) -> Vec<u64> {
        live(&self.discovery)
    }

    /// Ids with a live topology record.
    pub fn in_topology(&self) -> Vec<u64> {
        live(&self.topology)
    }

    /// The live discovery record of `id`.
    pub fn discovery_of(&self, id: u64) -> Option<&DiscoveryInfo> {
        self.discovery
            .get(&NodeId(id))
            .and_then(|(_, info)| info.as_ref())
    }

    /// The live topology record of `id`.
    pub fn topology_of(&self, id: u64) -> Option<&TopologyInfo> {
        self.topology
            .get(&NodeId(id))
            .and_then(|(_, info)| info.as_ref())
    }
}

fn settle<T>(
    map: &mut BTreeMap<NodeId, (u64, Option<T>)>,
    id: NodeId,
    revision: u64,
    value: Option<T>,
) {
    match map.get(&id) {
        Some((held, _)) if *held > revision => {}
        _ => {
            map.insert(id, (revision, value));
        }
    }
}

fn live<T>(map: &BTreeMap<NodeId, (u64, Option<T>)>) -> Vec<u64> {
    map.iter()
        .filter(|(_, (_, value))| value.is_some())
        .map(|(id, _)| id.0)
        .collect()
}
