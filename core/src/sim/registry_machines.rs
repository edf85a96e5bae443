//! The simulator with the real registry machines: a [`RegistryNet`] inside the [`Sim`], one
//! registry client per node, the registry server on the simulated clock.
//!
//! [`Sim::start_registry`] turns this mode on. From then on a node learns about the cluster the
//! way it does in production: the records it [registers](Sim::register) travel in its client's
//! `Register` over an emulated link to the [`RegistryServer`], and the events the node is handed
//! are the ones its [`RegistryClient`] derives from the server's snapshots, puts and deletes —
//! with the server's disconnect protection, epochs, the client's reconnect backoff and
//! new-epoch grace all in play. A node's client lives and dies with the node: [`Sim::kill`]
//! drops its registry link abruptly (the server protects the entry), [`Sim::restart`] starts a
//! new client with a new incarnation and the records last registered, [`Sim::shutdown`] says
//! `Bye`. Registry faults: [`Sim::kill_registry`], [`Sim::restart_registry_after`] (a new
//! server, a new epoch) and [`Sim::cut_registry_link`].
//!
//! The scripted registry ([`Sim::registry_put_discovery`] and friends) keeps working beside
//! it, for tests that need events in an exact order; [`Sim::registered_ids`] and the
//! quiescence checks read the server when the machines are on.

use alloc::{format, vec::Vec};

use super::{NetOutput, RegistryNet, SimNode, cluster::Sim, registry_net::NetSettings};
use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::{
        client::{ClientConfig, RegistryClient},
        server::{RegistryServer, ServerConfig},
    },
    time::{Duration, Instant},
};

/// How the simulator runs the registry machines ([`Sim::start_registry`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryMachines {
    /// The server's configuration (every restart uses it too).
    pub server: ServerConfig,
    /// Every node's client configuration: its records, incarnation and seed are replaced per
    /// node and per start.
    pub client: ClientConfig,
}

impl Default for RegistryMachines {
    /// The machines' own defaults (ARCHITECTURE §14).
    fn default() -> RegistryMachines {
        RegistryMachines {
            server: ServerConfig::default(),
            client: ClientConfig::new(DiscoveryInfo::default(), None, 0),
        }
    }
}

/// The machines inside a running simulation.
#[derive(Debug)]
pub(super) struct Machines {
    pub(super) net: RegistryNet,
    pub(super) client: ClientConfig,
}

/// The records a node registers.
#[derive(Clone, Debug)]
pub(super) struct Records {
    pub(super) discovery: DiscoveryInfo,
    pub(super) topology: Option<TopologyInfo>,
}

impl<N: SimNode> Sim<N> {
    /// Turns the registry machines on and starts the server now. Registry links use the
    /// simulator's connect latency, link latency and jitter. No-op if they are on already
    /// (see [`Sim::start_registry_server`] to bring a killed server back).
    pub fn start_registry(&mut self, machines: RegistryMachines) {
        if self.machines.is_some() {
            return;
        }
        let settings = NetSettings {
            connect_latency: self.settings.connect_latency,
            link_latency: self.settings.link_latency,
            jitter: self.settings.jitter,
            seed: self.settings.seed,
            egress_bandwidth: None,
        };
        let mut net = RegistryNet::new(settings, machines.server, self.now);
        for _ in &self.slots {
            net.add_member();
        }
        self.machines = Some(Machines {
            net,
            client: machines.client,
        });
        self.note(None, "registry machines on");
        self.start_registry_server();
    }

    /// Whether the registry machines are on.
    #[must_use]
    pub fn registry_machines_on(&self) -> bool {
        self.machines.is_some()
    }

    /// Starts a registry server now (a new epoch) if none runs.
    ///
    /// # Panics
    ///
    /// If the registry machines are off.
    pub fn start_registry_server(&mut self) {
        self.note(None, "registry server starts");
        self.net().start_server();
        self.drain_net();
    }

    /// Kills the registry server abruptly: every connected client hears its link close now.
    ///
    /// # Panics
    ///
    /// If the registry machines are off.
    pub fn kill_registry(&mut self) {
        self.note(None, "registry server killed");
        self.net().kill_server();
        self.drain_net();
    }

    /// Kills the registry server now and starts a new one (a new epoch) `down` later.
    ///
    /// # Panics
    ///
    /// If the registry machines are off.
    pub fn restart_registry_after(&mut self, down: Duration) {
        self.note_with(None, || {
            format!("registry server killed, back in {} ms", down.as_millis())
        });
        self.net().restart_server_after(down);
        self.drain_net();
    }

    /// Whether a registry server runs (`false` with the machines off).
    #[must_use]
    pub fn registry_running(&self) -> bool {
        self.machines
            .as_ref()
            .is_some_and(|m| m.net.server_running())
    }

    /// The running registry server.
    #[must_use]
    pub fn registry_server(&self) -> Option<&RegistryServer> {
        self.machines.as_ref().and_then(|m| m.net.server())
    }

    /// Node `id`'s running registry client.
    #[must_use]
    pub fn registry_client(&self, id: NodeId) -> Option<&RegistryClient> {
        let idx = self.slot_index(id);
        self.machines.as_ref().and_then(|m| m.net.client(idx))
    }

    /// Node `id` registers `discovery` and `topology` with the registry: its client starts now
    /// (replacing a running one), and every later restart of the node registers them again.
    ///
    /// # Panics
    ///
    /// If the registry machines are off, or `id` is unknown.
    pub fn register(
        &mut self,
        id: NodeId,
        discovery: DiscoveryInfo,
        topology: Option<TopologyInfo>,
    ) {
        assert!(
            self.machines.is_some(),
            "sim: the registry machines are off (Sim::start_registry)"
        );
        let idx = self.slot_index(id);
        self.slots[idx].records = Some(Records {
            discovery,
            topology,
        });
        if self.slots[idx].node.is_some() {
            self.start_client(idx);
        }
    }

    /// Node `id` publishes a new topology record: sent as an update now if its client is
    /// connected, and registered on every later connection and restart.
    ///
    /// # Panics
    ///
    /// If the registry machines are off, or `id` never registered.
    pub fn update_registered_topology(&mut self, id: NodeId, info: TopologyInfo) {
        let idx = self.slot_index(id);
        let Some(records) = self.slots[idx].records.as_mut() else {
            panic!("sim: {id} never registered");
        };
        records.topology = Some(info.clone());
        self.note_with(Some(id), || {
            format!("registry update topology up {}", info.upstream_id)
        });
        self.net()
            .act(idx, |client, _| client.update_topology(info));
        self.drain_net();
    }

    /// Node `id` publishes a new discovery record (its served methods changed): sent as an
    /// update now if its client is connected, and registered on every later connection and
    /// restart.
    ///
    /// # Panics
    ///
    /// If the registry machines are off, or `id` never registered.
    pub fn update_registered_discovery(&mut self, id: NodeId, info: DiscoveryInfo) {
        let idx = self.slot_index(id);
        let Some(records) = self.slots[idx].records.as_mut() else {
            panic!("sim: {id} never registered");
        };
        records.discovery = info.clone();
        self.note(Some(id), "registry update discovery");
        self.net()
            .act(idx, |client, _| client.update_discovery(info));
        self.drain_net();
    }

    /// Node `id` leaves the registry for good: its client says `Bye` (the server removes it
    /// at once) and later restarts do not register.
    ///
    /// # Panics
    ///
    /// If the registry machines are off.
    pub fn deregister(&mut self, id: NodeId) {
        let idx = self.slot_index(id);
        self.slots[idx].records = None;
        self.note(Some(id), "registry deregister");
        self.net().act(idx, |client, _| client.shutdown());
        self.drain_net();
    }

    /// The transport drops node `id`'s registry link: both ends hear the close now.
    ///
    /// # Panics
    ///
    /// If the registry machines are off.
    pub fn cut_registry_link(&mut self, id: NodeId) {
        let idx = self.slot_index(id);
        self.note(Some(id), "registry link cut");
        self.net().drop_link(idx);
        self.drain_net();
    }

    /// Latency of node `id`'s registry link for bytes sent from now on (`None`: the
    /// simulator's link latency).
    ///
    /// # Panics
    ///
    /// If the registry machines are off.
    pub fn set_registry_latency(&mut self, id: NodeId, latency: Option<Duration>) {
        let idx = self.slot_index(id);
        self.net().set_latency(idx, latency);
    }

    /// Ids with a discovery record in the registry in use — the server's entries (suspects
    /// included) with the machines on, else the scripted registry's — ascending.
    #[must_use]
    pub fn registered_ids(&self) -> Vec<NodeId> {
        match self.machines.as_ref() {
            Some(m) => {
                let mut ids: Vec<NodeId> = m
                    .net
                    .server()
                    .map(|s| s.entries().into_iter().map(|e| e.discovery.id).collect())
                    .unwrap_or_default();
                ids.sort_unstable();
                ids
            }
            None => self.registry.discovery_ids().collect(),
        }
    }

    // ---- hooks of the cluster and the driver -------------------------------------------

    /// The net, its clock moved to now.
    fn net(&mut self) -> &mut RegistryNet {
        let now = self.now;
        let Some(machines) = self.machines.as_mut() else {
            panic!("sim: the registry machines are off (Sim::start_registry)");
        };
        machines.net.set_now(now);
        &mut machines.net
    }

    /// A node slot was added: its member.
    pub(super) fn machines_add_member(&mut self) {
        if let Some(m) = self.machines.as_mut() {
            m.net.add_member();
        }
    }

    /// Node `idx` died: its client dies with it.
    pub(super) fn machines_node_killed(&mut self, idx: usize) {
        if self.machines.is_some() {
            self.net().kill_client(idx);
            self.drain_net();
        }
    }

    /// Node `idx` started a new incarnation: it registers again, if it registered before.
    pub(super) fn machines_node_started(&mut self, idx: usize) {
        if self.machines.is_some() && self.slots[idx].records.is_some() {
            self.start_client(idx);
        }
    }

    /// Node `idx` shuts down gracefully: its client says `Bye`.
    pub(super) fn machines_node_shutdown(&mut self, idx: usize) {
        if self.machines.is_some() {
            self.net().act(idx, |client, _| client.shutdown());
            self.drain_net();
        }
    }

    /// Starts node `idx`'s client with its records, for its current incarnation.
    fn start_client(&mut self, idx: usize) {
        let slot = &self.slots[idx];
        let Some(records) = slot.records.clone() else {
            return;
        };
        let incarnation = u64::from(slot.incarnation) + 1;
        let id = slot.id;
        let Some(machines) = self.machines.as_ref() else {
            panic!("sim: the registry machines are off (Sim::start_registry)");
        };
        let mut config = machines.client.clone();
        config.discovery = records.discovery;
        config.topology = records.topology;
        config.incarnation = incarnation;
        config.seed = id.0 ^ (incarnation << 48);
        self.note_with(Some(id), || {
            format!("registry client starts (incarnation {incarnation})")
        });
        self.net().start_client(idx, config);
        self.drain_net();
    }

    /// The earliest instant the machines have something due.
    pub(super) fn machines_next_due(&self) -> Option<Instant> {
        self.machines.as_ref().and_then(|m| m.net.next_due())
    }

    /// Processes one thing the machines have due now.
    pub(super) fn machines_step(&mut self) {
        let now = self.now;
        if let Some(m) = self.machines.as_mut() {
            m.net.step(now);
        }
        self.drain_net();
    }

    /// Acts on the machines' outputs: registry events go to their live nodes, the rest to
    /// the trace.
    fn drain_net(&mut self) {
        loop {
            let Some((_, output)) = self.machines.as_mut().and_then(|m| m.net.poll_output()) else {
                return;
            };
            match output {
                NetOutput::Registry { member, event } => {
                    if self.slots[member].node.is_some() {
                        self.deliver_registry(member, event);
                    }
                }
                NetOutput::Client { member, event } => {
                    let id = self.slots[member].id;
                    self.note_with(Some(id), || format!("registry client {event:?}"));
                }
                NetOutput::Server(event) => {
                    self.note_with(None, || format!("registry server {event:?}"));
                }
            }
        }
    }
}
