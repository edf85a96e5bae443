//! The registry at scale: N nodes on the real registry machines, with a network that charges
//! bytes as well as latency (docs/ARCHITECTURE.md §14, "Cost model").
//!
//! A [`ScaleRun`] is a registry-only harness: one [`RegistryServer`](crate::registry::server)
//! and N [`RegistryClient`](crate::registry::client::RegistryClient)s on a [`RegistryNet`]
//! whose registry egress is one FIFO serializer of a given bandwidth, without the bus. Every
//! member runs the real client (dial, `Register`, heartbeats, backoff, re-registration with a
//! new registry). A sample of **full** members also applies what its client reports to the
//! records a node holds (the discovery set and its rings, `Records`): their views are
//! compared with the registry's entries and measured. The others are **light**: the record
//! frames the registry sends them are charged to its egress and timed but not delivered
//! ([`RegistryNet::set_light`]), so N views need not fit in memory (10,000 views of 10,000
//! records would not); their silence timeout is off, since the record frames they are not
//! handed would have kept their link from falling silent.
//!
//! A scenario has **converged** when the registry lists exactly the live members (each with
//! its current incarnation, none in disconnect protection), every full member's discovery set
//! holds exactly those ids with those incarnations, and every record frame the registry sent
//! has arrived ([`RegistryNet::records_settle_at`]).

mod memory;
mod scenarios;
#[cfg(test)]
mod tests;

use alloc::{collections::BTreeMap, format, string::String, vec, vec::Vec};

pub use self::{
    memory::{DiscoveryMemory, discovery_memory},
    scenarios::{ChangeCost, ScenarioFigures},
};
use super::{NetOutput, NetSettings, RegistryNet};
use crate::{
    config::Config,
    discovery::DiscoveryInfo,
    ids::NodeId,
    records::Records,
    registry::{
        client::ClientConfig,
        server::{RegistryServer, ServerConfig},
    },
    time::{Duration, Instant},
    wire::{self, RegistryEntry},
};

/// How a [`ScaleRun`] is set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleConfig {
    /// Members (nodes), ids `1..=nodes`.
    pub nodes: usize,
    /// Full members, spread evenly over the ids (the first and the last always among them).
    pub full: usize,
    /// The registry's egress bandwidth, bytes per second.
    pub egress_bandwidth: u64,
    /// One-way link latency.
    pub link_latency: Duration,
    /// Time from a dial to its resolution.
    pub connect_latency: Duration,
    /// Seed of the net (and the clients' seeds).
    pub seed: u64,
}

impl ScaleConfig {
    /// `nodes` members, 16 of them full, on a 1 Gbit/s registry egress with 0.25 ms links
    /// and 0.5 ms dials.
    #[must_use]
    pub fn gigabit(nodes: usize) -> ScaleConfig {
        ScaleConfig {
            nodes,
            full: 16,
            egress_bandwidth: 125_000_000,
            link_latency: Duration::from_micros(250),
            connect_latency: Duration::from_micros(500),
            seed: 25,
        }
    }
}

/// One member of a [`ScaleRun`].
#[derive(Debug)]
struct Member {
    id: NodeId,
    /// Current incarnation (0: never started).
    incarnation: u64,
    alive: bool,
    /// A full member's records (a light member has none).
    records: Option<Records>,
    /// Registry events its client reported (full members only).
    events: u64,
}

/// N members on the registry machines; see the [module docs](self).
#[derive(Debug)]
pub struct ScaleRun {
    config: ScaleConfig,
    net: RegistryNet,
    members: Vec<Member>,
    /// A record frame reached a full member, or the registry changed, since the last check.
    dirty: bool,
    /// Events handed to full members' records.
    node_events: u64,
    /// The registry's (epoch, revision) when last drained.
    seen: Option<(u64, u64)>,
}

impl ScaleRun {
    /// The members, none started, and a running registry at time zero.
    #[must_use]
    pub fn new(config: ScaleConfig) -> ScaleRun {
        let settings = NetSettings {
            connect_latency: config.connect_latency,
            link_latency: config.link_latency,
            jitter: Duration::ZERO,
            seed: config.seed,
            egress_bandwidth: Some(config.egress_bandwidth),
        };
        let mut net = RegistryNet::new(settings, ServerConfig::default(), Instant::ZERO);
        let full = full_members(config.nodes, config.full);
        let members = (0..config.nodes)
            .map(|i| {
                let member = net.add_member();
                let is_full = full.binary_search(&i).is_ok();
                net.set_light(member, !is_full);
                let id = node_id(i);
                Member {
                    id,
                    incarnation: 0,
                    alive: false,
                    records: is_full.then(|| Records::for_node(&node_config(i))),
                    events: 0,
                }
            })
            .collect();
        net.start_server();
        ScaleRun {
            config,
            net,
            members,
            dirty: true,
            node_events: 0,
            seen: None,
        }
    }

    /// The virtual clock.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.net.now()
    }

    /// The net (traffic counters, the server).
    #[must_use]
    pub fn net(&self) -> &RegistryNet {
        &self.net
    }

    /// The members' count.
    #[must_use]
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether there are no members.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Registry events handed to full members' records so far.
    #[must_use]
    pub fn node_events(&self) -> u64 {
        self.node_events
    }

    /// Indices of the full members, ascending.
    #[must_use]
    pub fn full_members(&self) -> Vec<usize> {
        full_members(self.config.nodes, self.config.full)
    }

    /// Member `i`'s records (a full member's), for inspection.
    pub(crate) fn records(&self, i: usize) -> Option<&Records> {
        self.members[i].records.as_ref()
    }

    /// The record member `i` registers in its current incarnation.
    #[must_use]
    pub fn discovery_record(&self, i: usize) -> DiscoveryInfo {
        record(i, self.members[i].incarnation.max(1))
    }

    /// The encoded size of one member's entry in a `Snapshot` or `Put`
    /// ([`wire::entry_len`]): every member's record has this size.
    #[must_use]
    pub fn entry_len(&self) -> usize {
        let config = client_config(0, 1);
        let entry = RegistryEntry {
            incarnation: 1,
            discovery: config.discovery,
            topology: config.topology,
            lost_for: None,
        };
        wire::entry_len(&entry)
    }

    /// Starts member `i` with its next incarnation (killing a running one first, abruptly).
    pub fn start(&mut self, i: usize) {
        let m = &mut self.members[i];
        m.incarnation += 1;
        m.alive = true;
        let incarnation = m.incarnation;
        let light = m.records.is_none();
        if let Some(records) = m.records.as_mut() {
            // A new process: nothing known yet.
            *records = Records::for_node(&node_config(i));
        }
        let mut config = client_config(i, incarnation);
        config.seed ^= self.config.seed << 32;
        if light {
            config.silence_timeout = Duration::from_secs(u64::from(u32::MAX));
        }
        self.dirty = true;
        self.net.start_client(i, config);
        self.drain();
    }

    /// Kills member `i` abruptly (its registry link drops; the registry protects its entry).
    pub fn kill(&mut self, i: usize) {
        self.members[i].alive = false;
        self.dirty = true;
        self.net.kill_client(i);
        self.drain();
    }

    /// Member `i` publishes `info` as its new discovery record.
    pub fn update(&mut self, i: usize, info: DiscoveryInfo) {
        self.dirty = true;
        self.net.act(i, |client, _| client.update_discovery(info));
        self.drain();
    }

    /// Kills the registry now and starts a new one (a new epoch) `down` later.
    pub fn restart_registry_after(&mut self, down: Duration) {
        self.dirty = true;
        self.net.restart_server_after(down);
        self.drain();
    }

    /// Runs until `at`, processing everything due on the way.
    pub fn run_until(&mut self, at: Instant) {
        while let Some(next) = self.net.next_due().filter(|&t| t <= at) {
            self.net.step(next);
            self.drain();
        }
        self.net.set_now(at);
    }

    /// Runs until converged (see the [module docs](self)) or `limit`; returns the instant
    /// it converged.
    pub fn run_to_convergence(&mut self, limit: Instant) -> Option<Instant> {
        loop {
            if self.dirty
                && let Some(settle) = self.net.records_settle_at()
            {
                self.dirty = false;
                if self.exact() {
                    return Some(settle);
                }
            }
            let next = self.net.next_due().filter(|&t| t <= limit)?;
            self.net.step(next);
            self.drain();
        }
    }

    /// Runs until no record frame is on its way (or `limit`); returns when the last arrives.
    pub fn run_until_records_settle(&mut self, limit: Instant) -> Option<Instant> {
        loop {
            if let Some(settle) = self.net.records_settle_at() {
                return Some(settle);
            }
            let next = self.net.next_due().filter(|&t| t <= limit)?;
            self.net.step(next);
            self.drain();
        }
    }

    /// Whether the registry lists exactly the live members (current incarnations, none
    /// protected) and every live full member's discovery set holds exactly them.
    #[must_use]
    pub fn exact(&self) -> bool {
        let Some(server) = self.net.server() else {
            return false;
        };
        let expected: BTreeMap<NodeId, u64> = self
            .members
            .iter()
            .filter(|m| m.alive)
            .map(|m| (m.id, m.incarnation))
            .collect();
        registry_matches(server, &expected)
            && self
                .members
                .iter()
                .filter(|m| m.alive)
                .filter_map(|m| m.records.as_ref())
                .all(|records| {
                    records.discovery.len() == expected.len()
                        && records
                            .discovery
                            .iter()
                            .all(|info| expected.get(&info.id) == Some(&info.incarnation))
                })
    }

    /// Hands every registry event the net produced to its full member's records.
    fn drain(&mut self) {
        while let Some((at, output)) = self.net.poll_output() {
            if let NetOutput::Registry { member, event } = output {
                let m = &mut self.members[member];
                if let (true, Some(records)) = (m.alive, m.records.as_mut()) {
                    records.apply(at, event);
                    m.events += 1;
                    self.node_events += 1;
                    self.dirty = true;
                }
            }
        }
        let seen = self.net.server().map(|s| (s.epoch(), s.revision()));
        if seen != self.seen {
            self.seen = seen;
            self.dirty = true;
        }
    }
}

/// Whether `server` lists exactly `expected` (id → incarnation), none of them protected.
fn registry_matches(server: &RegistryServer, expected: &BTreeMap<NodeId, u64>) -> bool {
    let entries = server.entries();
    entries.len() == expected.len()
        && entries
            .iter()
            .all(|e| e.lost_for.is_none() && expected.get(&e.discovery.id) == Some(&e.incarnation))
}

/// `count` member indices spread evenly over `0..nodes`, the first and the last included.
fn full_members(nodes: usize, count: usize) -> Vec<usize> {
    let count = count.min(nodes);
    if count <= 1 {
        return vec![0; count];
    }
    let mut picked: Vec<usize> = (0..count).map(|k| k * (nodes - 1) / (count - 1)).collect();
    picked.dedup();
    picked
}

/// Member `i`'s id.
fn node_id(i: usize) -> NodeId {
    NodeId(0x1_0000 + i as u64)
}

/// Member `i`'s registry client in `incarnation`, configured as its node would
/// ([`ClientConfig::for_node`]: its topology record, the node's reconnect backoff).
fn client_config(i: usize, incarnation: u64) -> ClientConfig {
    ClientConfig::for_node(&node_config(i), record(i, incarnation), incarnation)
}

/// Member `i`'s node configuration: the defaults.
fn node_config(i: usize) -> Config {
    Config::new(node_id(i), name(i))
}

/// Member `i`'s name.
fn name(i: usize) -> String {
    format!("svc-{i:05}")
}

/// Member `i`'s discovery record in `incarnation`: what a deployed node publishes (name,
/// host, pid, one listen address, type, version, incarnation), the same encoded size for
/// every member below 50,000 and incarnation below 10.
fn record(i: usize, incarnation: u64) -> DiscoveryInfo {
    DiscoveryInfo {
        id: node_id(i),
        name: name(i),
        hostname: format!("host-{i:05}"),
        pid: 10_000 + (i % 50_000) as i32,
        listen: vec![format!("atcp://10.0.0.1:{}", 10_000 + i % 50_000)],
        type_id: 7,
        type_name: String::from("svc"),
        version: String::from("1.4.2"),
        incarnation,
        ..DiscoveryInfo::default()
    }
}
