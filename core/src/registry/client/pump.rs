//! Test pump: one [`RegistryServer`] and N [`RegistryClient`]s wired together on virtual
//! time, zero latency, everything delivered in order. Records every event with its instant.

use alloc::{format, string::String, vec, vec::Vec};

use super::{ClientConfig, ClientEvent, ClientOutput, RegistryClient};
use crate::{
    backoff::BackoffConfig,
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::RegistryEvent,
    registry::server::{ConnId, RegistryServer, ServerConfig, ServerEvent, ServerOutput},
    time::{Duration, Instant, earliest},
};

pub(crate) fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// A discovery record of node `id` of type `type_name`, named `n<id>`.
pub(crate) fn disc(id: u64, type_name: &str) -> DiscoveryInfo {
    DiscoveryInfo {
        id: NodeId(id),
        name: format!("n{id}"),
        type_name: String::from(type_name),
        listen: vec![format!("atcp://127.0.0.1:{}", 7000 + id)],
        ..DiscoveryInfo::default()
    }
}

/// A topology record of node `id` under `upstream`.
pub(crate) fn topo(id: u64, upstream: u64) -> TopologyInfo {
    TopologyInfo {
        id: NodeId(id),
        name: format!("n{id}"),
        upstream_id: NodeId(upstream),
        ..TopologyInfo::default()
    }
}

/// Client defaults for exact instants: backoff 1 s doubling to 8 s, no jitter.
pub(crate) fn client_config(discovery: DiscoveryInfo, incarnation: u64) -> ClientConfig {
    let mut config = ClientConfig::new(discovery, None, incarnation);
    config.backoff =
        BackoffConfig::without_jitter(Duration::from_secs(1), Duration::from_secs(8), 0);
    config
}

pub(crate) struct Slot {
    pub(crate) client: Option<RegistryClient>,
    pub(crate) conn: Option<ConnId>,
    pub(crate) registry: Vec<(Instant, RegistryEvent)>,
    pub(crate) events: Vec<(Instant, ClientEvent)>,
}

pub(crate) struct Pump {
    pub(crate) now: Instant,
    pub(crate) server: Option<RegistryServer>,
    pub(crate) server_events: Vec<(Instant, ServerEvent)>,
    pub(crate) slots: Vec<Slot>,
}

impl Pump {
    pub(crate) fn new(config: ServerConfig, seed: u64) -> Pump {
        Pump {
            now: Instant::ZERO,
            server: Some(RegistryServer::new(config, seed)),
            server_events: Vec::new(),
            slots: Vec::new(),
        }
    }

    /// Starts a client now; returns its index.
    pub(crate) fn add(&mut self, config: ClientConfig) -> usize {
        self.slots.push(Slot {
            client: Some(RegistryClient::new(config, self.now)),
            conn: None,
            registry: Vec::new(),
            events: Vec::new(),
        });
        self.settle();
        self.slots.len() - 1
    }

    pub(crate) fn client(&mut self, i: usize) -> &mut RegistryClient {
        self.slots[i].client.as_mut().expect("test: client alive")
    }

    /// Kills client `i` abruptly: its connection closes, it says nothing.
    pub(crate) fn kill_client(&mut self, i: usize) {
        self.slots[i].client = None;
        if let (Some(conn), Some(server)) = (self.slots[i].conn.take(), self.server.as_mut()) {
            server.handle_closed(self.now, conn);
        }
        self.settle();
    }

    /// Replaces client `i` by a fresh one (a restarted node), connecting now.
    pub(crate) fn restart_client(&mut self, i: usize, config: ClientConfig) {
        if let (Some(conn), Some(server)) = (self.slots[i].conn.take(), self.server.as_mut()) {
            server.handle_closed(self.now, conn);
        }
        self.slots[i].client = Some(RegistryClient::new(config, self.now));
        self.settle();
    }

    /// The transport drops client `i`'s connection: both ends see a close.
    pub(crate) fn drop_link(&mut self, i: usize) {
        if let Some(conn) = self.slots[i].conn.take() {
            if let Some(server) = self.server.as_mut() {
                server.handle_closed(self.now, conn);
            }
            if let Some(c) = self.slots[i].client.as_mut() {
                c.handle_closed(self.now);
            }
        }
        self.settle();
    }

    /// Kills the server: every client sees its connection close.
    pub(crate) fn kill_server(&mut self) {
        self.server = None;
        for slot in &mut self.slots {
            if slot.conn.take().is_some() {
                if let Some(c) = slot.client.as_mut() {
                    c.handle_closed(self.now);
                }
            }
        }
        self.settle();
    }

    pub(crate) fn start_server(&mut self, config: ServerConfig, seed: u64) {
        self.server = Some(RegistryServer::new(config, seed));
        self.settle();
    }

    /// Delivers everything until no machine has output.
    pub(crate) fn settle(&mut self) {
        let now = self.now;
        loop {
            let mut progress = false;
            for slot in &mut self.slots {
                let Some(client) = slot.client.as_mut() else {
                    continue;
                };
                while let Some(out) = client.poll_output() {
                    progress = true;
                    match out {
                        ClientOutput::Connect => match self.server.as_mut() {
                            Some(server) => {
                                slot.conn = Some(server.handle_accepted(now));
                                client.handle_connected(now);
                            }
                            None => client.handle_connect_failed(now),
                        },
                        ClientOutput::Transmit { bytes } => {
                            if let (Some(conn), Some(server)) = (slot.conn, self.server.as_mut()) {
                                server.handle_received(now, conn, &bytes);
                            }
                        }
                        ClientOutput::Close => {
                            if let (Some(conn), Some(server)) =
                                (slot.conn.take(), self.server.as_mut())
                            {
                                server.handle_closed(now, conn);
                            }
                        }
                        ClientOutput::Registry(e) => slot.registry.push((now, e)),
                        ClientOutput::Event(e) => slot.events.push((now, e)),
                    }
                }
            }
            while let Some(out) = self.server.as_mut().and_then(RegistryServer::poll_output) {
                progress = true;
                match out {
                    ServerOutput::Transmit { conn, bytes } => {
                        if let Some(slot) = self.slots.iter_mut().find(|s| s.conn == Some(conn)) {
                            if let Some(c) = slot.client.as_mut() {
                                c.handle_received(now, &bytes);
                            }
                        }
                    }
                    ServerOutput::Close { conn } => {
                        if let Some(slot) = self.slots.iter_mut().find(|s| s.conn == Some(conn)) {
                            slot.conn = None;
                            if let Some(c) = slot.client.as_mut() {
                                c.handle_closed(now);
                            }
                        }
                    }
                    ServerOutput::Event(e) => self.server_events.push((now, e)),
                }
            }
            if !progress {
                return;
            }
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let mut next = self.server.as_ref().and_then(RegistryServer::poll_timeout);
        for slot in &self.slots {
            if let Some(c) = &slot.client {
                next = earliest(next, c.poll_timeout());
            }
        }
        next
    }

    /// Runs every deadline up to `to`, then sets the clock to `to`.
    pub(crate) fn advance(&mut self, to: Instant) {
        while let Some(next) = self.next_deadline().filter(|d| *d <= to) {
            self.now = next.max(self.now);
            let now = self.now;
            if let Some(s) = self.server.as_mut() {
                if s.poll_timeout().is_some_and(|d| d <= now) {
                    s.handle_timeout(now);
                }
            }
            for slot in &mut self.slots {
                if let Some(c) = slot.client.as_mut() {
                    if c.poll_timeout().is_some_and(|d| d <= now) {
                        c.handle_timeout(now);
                    }
                }
            }
            self.settle();
        }
        self.now = to.max(self.now);
        self.settle();
    }

    /// The node ids client `i` currently reports.
    pub(crate) fn view(&self, i: usize) -> Vec<u64> {
        self.slots[i]
            .client
            .as_ref()
            .map(|c| c.peers().map(|(_, p)| p.discovery.id.0).collect())
            .unwrap_or_default()
    }

    /// Drains the registry events client `i` emitted so far.
    pub(crate) fn take_registry(&mut self, i: usize) -> Vec<(Instant, RegistryEvent)> {
        core::mem::take(&mut self.slots[i].registry)
    }

    pub(crate) fn take_events(&mut self, i: usize) -> Vec<(Instant, ClientEvent)> {
        core::mem::take(&mut self.slots[i].events)
    }

    pub(crate) fn take_server_events(&mut self) -> Vec<(Instant, ServerEvent)> {
        core::mem::take(&mut self.server_events)
    }
}
