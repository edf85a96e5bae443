//! Seeded chaos scenarios: a cluster of a hub, proxies and leaves, random traffic and faults,
//! then heal, quiesce, probe and check — the engine of the seeds runner
//! (`cargo run --profile sim -p switchboard-core --features sim --example sim`), the `node_ops`
//! and `sim_seed` fuzz targets and the simulator bench.
//!
//! **Cluster.** A hub `0x100` (topology root), proxies `0x110`, `0x111` under it, and 4–8
//! leaves `0x120..` alternately under the proxies; proxies added by scale-out are `0x140..`.
//! Links carry a random base latency. Nodes use short timers (reconnect 100 ms..1 s, message
//! timeout 3 s, heartbeat 500 ms, send buffer 32 messages) so faults and recoveries happen
//! within a few seconds, and Maglev tables sized for the cluster ([`MAGLEV_TABLE_SIZE`]).
//!
//! **Registry** ([`RegistryMode`]). By default every node registers its topology and
//! discovery records through its own registry client with the real registry server
//! ([`Sim::start_registry`]), on the same short timescale (disconnect protection 2 s, new-epoch
//! grace 3 s, registry heartbeats every second, reconnects from 100 ms); a leaf move is the
//! leaf's own topology update, a graceful scale-in the proxy's `Bye`. In scripted mode the run
//! publishes the records itself (topology first) and the simulator fans them out.
//!
//! **Run.** [`Chaos::chaos`] applies generated [`Op`]s for a bounded stretch of virtual time,
//! checking [`Sim::check_invariants`] after every op; [`Chaos::finish`] heals every fault
//! (partitions end, the registry runs, killed nodes restart and re-register), runs until
//! reconnects and message deadlines are done, sends one probe from every leaf to every other
//! leaf — each must end `Delivered` — and runs [`Sim::check_quiescent`].
//!
//! **Faults** ([`Faults`]): link breaks, partitions, kills and restarts, slow paths (latency
//! changes that make an old path slower than a new one, so retransmissions overtake frames in
//! flight), proxy scale-out / scale-in / leaf moves, per-node registry delays, link jitter,
//! registry restarts (a new server and epoch after up to 3 s without one), cut registry
//! links and path failures (one member's dials to another refused while both live). [`Faults::mild`] is the default set of the runner; [`Faults::all`] enables
//! everything.

pub(crate) mod call_ledger;
mod ops;
mod rpc;

use alloc::{
    collections::{BTreeMap, BTreeSet},
    format,
    string::String,
    vec,
    vec::Vec,
};

use bytes::Bytes;

pub use self::{call_ledger::RpcTotals, ops::Op};
use super::{
    LedgerTotals, RegistryMachines, Sim, SimSettings, discovery_info, sim_addr, topology_info,
};
use crate::{
    backoff::BackoffConfig,
    config::Config,
    ids::NodeId,
    node::Node,
    outcome::Outcome,
    registry::server::ServerConfig,
    rng::Rng,
    select::{Mode, Select},
    sim::Fanout,
    time::Duration,
};

/// Which faults a chaos run may inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one switch per fault kind is the natural shape"
)]
pub struct Faults {
    /// Random extra latency per transmission.
    pub jitter: bool,
    /// Links break (in-flight bytes lost, both ends closed).
    pub link_breaks: bool,
    /// Per-node random delays of registry events (reordering across nodes).
    pub registry_delays: bool,
    /// Latency changes per pair (slow old paths).
    pub slow_paths: bool,
    /// Partitions.
    pub partitions: bool,
    /// Kills and restarts.
    pub kills: bool,
    /// Proxy scale-out, scale-in and leaf moves.
    pub scale: bool,
    /// Registry restarts (a new server and epoch after a pause) and cut registry links; only
    /// with the registry machines ([`RegistryMode::Machines`]).
    pub registry_restarts: bool,
    /// Path failures: one member's dials to another refused for 50 ms – 3 s while both live
    /// (their links drop), checked by the path-failure invariant (`sim/path_faults.rs`).
    pub path_failures: bool,
    /// Not a fault: the workload also makes calls by method, serves and unserves methods
    /// and broadcasts, checked by the call ledger (the docs of `sim/scenario/call_ledger.rs`).
    pub rpc: bool,
}

impl Faults {
    /// The runner's default: jitter, link breaks, registry delays, slow paths, registry
    /// restarts.
    #[must_use]
    pub const fn mild() -> Faults {
        Faults {
            jitter: true,
            link_breaks: true,
            registry_delays: true,
            slow_paths: true,
            partitions: false,
            kills: false,
            scale: false,
            registry_restarts: true,
            path_failures: false,
            rpc: false,
        }
    }

    /// Every fault kind (`--faults all`).
    #[must_use]
    pub const fn all() -> Faults {
        Faults {
            jitter: true,
            link_breaks: true,
            registry_delays: true,
            slow_paths: true,
            partitions: true,
            kills: true,
            scale: true,
            registry_restarts: true,
            path_failures: true,
            rpc: true,
        }
    }
}

/// Where the nodes of a chaos run learn about the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RegistryMode {
    /// The real registry machines: each node registers through its own registry client with
    /// a registry server, over emulated links ([`Sim::start_registry`]). The default.
    #[default]
    Machines,
    /// The scripted registry: the run publishes records and the simulator fans the events
    /// out, with per-node delays.
    Scripted,
}

/// What one seed produced.
#[derive(Clone, Debug, Default)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// Ledger totals (sends, deliveries, outcomes).
    pub totals: LedgerTotals,
    /// Deliveries and timer firings processed.
    pub events: u64,
    /// Every invariant breach, in order.
    pub violations: Vec<String>,
    /// Calls and broadcasts of the RPC workload (zero without [`Faults::rpc`]).
    pub rpc: RpcTotals,
}

const HUB: NodeId = NodeId(0x100);
/// Virtual time of the chaos phase.
const CHAOS_TIME: Duration = Duration::from_secs(20);
/// Time after healing for reconnects and message deadlines.
const SETTLE_TIME: Duration = Duration::from_secs(15);

/// A chaos run in progress: the simulator and the run's view of the cluster.
pub struct Chaos {
    /// The simulated cluster.
    pub sim: Sim<Node>,
    rng: Rng,
    faults: Faults,
    /// Proxies that are part of the cluster (alive or killed), in join order.
    proxies: Vec<NodeId>,
    /// Leaves, in id order.
    leaves: Vec<NodeId>,
    /// Every node ever started, in start order (the operand space of ops).
    members: Vec<NodeId>,
    /// Scaled-in proxies: dead for good, records deleted.
    retired: BTreeSet<NodeId>,
    /// Each node's upstream as last published.
    upstreams: BTreeMap<NodeId, NodeId>,
    mode: RegistryMode,
    next_proxy: u64,
    latency_base: u64,
    /// The RPC workload and its call ledger (with [`Faults::rpc`]).
    rpc: rpc::RpcWorkload,
}

/// The selection a workload byte names: `mode` indexes [`Mode::ALL`] (modulo its length),
/// `member` is the node the `Node` and `Name` modes name, `key` the hash key. An exhaustive
/// `match`: a new mode does not compile until the simulator sends and calls with it.
fn select_of(mode: u8, member: NodeId, key: u8) -> Select {
    match Mode::ALL[usize::from(mode) % Mode::ALL.len()] {
        Mode::Node => Select::Node(member),
        Mode::Name => Select::Name(name(member)),
        Mode::Hash => Select::Hash(Bytes::copy_from_slice(&[key])),
        Mode::RoundRobin => Select::RoundRobin,
        Mode::Random => Select::Random,
        Mode::LeastOutstanding => Select::LeastOutstanding,
        Mode::Maglev => Select::Maglev(Bytes::copy_from_slice(&[key])),
        Mode::Bounded => Select::Bounded(Bytes::copy_from_slice(&[key])),
    }
}

fn name(id: NodeId) -> String {
    format!("node-{:x}", id.0)
}

/// The nodes' Maglev table size: the paper's `M ≥ 100 × N` for the ≤ 20 members a chaos
/// cluster reaches, as a deployment of that size would choose. The default 65,537 slots
/// would make every membership change a node sees cost ~65,000 probes of a fresh fill — a
/// quarter of the simulator's time at the chaos runs' rate of changes — for picks that test
/// nothing more (the tables themselves are tested in `select::maglev`).
pub const MAGLEV_TABLE_SIZE: u32 = 2_003;

fn config(id: NodeId, upstream: NodeId, seed: u64) -> Config {
    let mut c = Config::new(id, name(id));
    c.maglev_table_size = MAGLEV_TABLE_SIZE;
    c.reconnect_start = Duration::from_millis(100);
    c.reconnect_max = Duration::from_secs(1);
    c.message_timeout = Duration::from_secs(3);
    c.heartbeat_interval = Duration::from_millis(500);
    c.lost_topology_timeout = Duration::from_secs(5);
    c.endpoint_gc_timeout = Duration::from_secs(5);
    c.send_buffer_number = 32;
    c.rng_seed = seed;
    c.upstream = upstream;
    if upstream.is_valid() {
        c.upstream_address = sim_addr(upstream);
    }
    c.listen = vec![sim_addr(id)];
    c
}

/// The registry machines of a chaos run, on the same short timescale as the nodes: protection
/// and grace 2–3 s, heartbeats every second, reconnects from 100 ms.
fn machines() -> RegistryMachines {
    let mut client = RegistryMachines::default().client;
    client.backoff = BackoffConfig {
        start: Duration::from_millis(100),
        max: Duration::from_secs(1),
        max_tries: 0,
        ..BackoffConfig::default()
    };
    client.grace = Duration::from_secs(3);
    client.heartbeat_interval = Duration::from_secs(1);
    client.silence_timeout = Duration::from_secs(3);
    RegistryMachines {
        server: ServerConfig {
            access_timeout: Duration::from_secs(2),
            disconnect_protection: Duration::from_secs(2),
            heartbeat_timeout: Some(Duration::from_secs(3)),
            ..ServerConfig::default()
        },
        client,
    }
}

impl Chaos {
    /// A cluster for `seed`: hub, two proxies, 4–8 leaves (`leaves` overrides the count),
    /// registered through `mode` and settled. `trace` keeps the simulator trace (for
    /// replays).
    ///
    /// # Panics
    ///
    /// Never for the built-in configs (they validate).
    #[must_use]
    pub fn new(
        seed: u64,
        faults: Faults,
        mode: RegistryMode,
        leaves: Option<usize>,
        trace: bool,
    ) -> Chaos {
        let mut rng = Rng::new(seed ^ 0x5eed_c4a0_5000_0001);
        let settings = SimSettings {
            strict: false,
            trace,
            step_limit: 1_000_000,
            jitter: if faults.jitter {
                Duration::from_millis(rng.below(20))
            } else {
                Duration::ZERO
            },
            seed: rng.next_u64(),
            link_latency: Duration::from_micros(rng.in_range(50, 3000)),
            connect_latency: Duration::from_micros(rng.in_range(50, 3000)),
        };
        let mut sim = Sim::with_settings(settings);
        sim.enable_ledger();
        sim.share_maglev_tables();
        let n_leaves = leaves.unwrap_or_else(|| rng.in_range(4, 9) as usize);
        let proxies = vec![NodeId(0x110), NodeId(0x111)];
        let leaves: Vec<NodeId> = (0..n_leaves as u64).map(|i| NodeId(0x120 + i)).collect();
        let mut layout = vec![(HUB, NodeId::NONE)];
        layout.extend(proxies.iter().map(|&p| (p, HUB)));
        layout.extend(leaves.iter().enumerate().map(|(i, &l)| (l, proxies[i % 2])));
        if mode == RegistryMode::Machines {
            sim.start_registry(machines());
        }
        for &(id, up) in &layout {
            sim.add_node(config(id, up, seed))
                .expect("the chaos configs validate");
        }
        let mut chaos = Chaos {
            sim,
            rng,
            faults,
            proxies,
            leaves,
            members: layout.iter().map(|&(id, _)| id).collect(),
            retired: BTreeSet::new(),
            upstreams: layout.iter().copied().collect(),
            mode,
            next_proxy: 0x140,
            latency_base: 0,
            rpc: rpc::RpcWorkload::default(),
        };
        chaos.rpc_start();
        chaos.latency_base = chaos.rng.in_range(50, 3000);
        match mode {
            RegistryMode::Scripted => {
                for &(id, up) in &layout {
                    chaos
                        .sim
                        .registry_put_topology(topology_info(id, &name(id), up));
                }
                for &(id, _) in &layout {
                    let info = chaos.record(id);
                    chaos.sim.registry_put_discovery(info);
                }
            }
            RegistryMode::Machines => {
                for &(id, up) in &layout {
                    chaos.register(id, up);
                }
            }
        }
        chaos.sim.advance(Duration::from_millis(200));
        chaos.sim.check_invariants();
        chaos
    }

    fn fanout(&mut self) -> Fanout {
        if self.faults.registry_delays {
            Fanout::all().spread(Duration::from_millis(self.rng.below(400)))
        } else {
            Fanout::all()
        }
    }

    /// Node `id` registers through its registry client (machines mode); with registry
    /// delays on, its registry link gets a random extra latency below 400 ms.
    fn register(&mut self, id: NodeId, up: NodeId) {
        if self.faults.registry_delays {
            let delay = Duration::from_millis(self.rng.below(400));
            self.sim.set_registry_latency(id, Some(delay));
        }
        let info = self.record(id);
        self.sim
            .register(id, info, Some(topology_info(id, &name(id), up)));
    }

    /// Publishes `id`'s records (scripted mode: a restarted node's registration; the
    /// machines re-register by themselves).
    fn publish(&mut self, id: NodeId, up: NodeId) {
        if self.mode == RegistryMode::Machines {
            return;
        }
        let f = self.fanout();
        self.sim
            .registry_put_topology_with(topology_info(id, &name(id), up), f);
        let f = self.fanout();
        let info = self.record(id);
        self.sim.registry_put_discovery_with(info, f);
    }

    /// Publishes `id`'s topology record with upstream `up`.
    fn set_upstream(&mut self, id: NodeId, up: NodeId) {
        self.upstreams.insert(id, up);
        let info = topology_info(id, &name(id), up);
        match self.mode {
            RegistryMode::Scripted => {
                let f = self.fanout();
                self.sim.registry_put_topology_with(info, f);
            }
            RegistryMode::Machines => self.sim.update_registered_topology(id, info),
        }
    }

    fn member(&self, i: u8) -> NodeId {
        self.members[usize::from(i) % self.members.len()]
    }

    fn active_proxies(&self) -> Vec<NodeId> {
        self.proxies
            .iter()
            .copied()
            .filter(|p| !self.retired.contains(p))
            .collect()
    }

    fn upstream_of(&self, leaf: NodeId) -> NodeId {
        self.upstreams.get(&leaf).copied().unwrap_or(NodeId::NONE)
    }

    /// Applies one op, then checks the per-step invariants.
    pub fn apply(&mut self, op: Op) {
        self.rpc_answer_due();
        match op {
            Op::Send {
                from,
                kind,
                to,
                filler,
            } => {
                let from = self.member(from);
                if !self.sim.is_alive(from) {
                    return;
                }
                let target = select_of(kind, self.member(to), to);
                let _ =
                    self.sim
                        .send_tagged(from, target, 1 + u32::from(kind), usize::from(filler));
            }
            Op::Advance { ms } => self.sim.advance(Duration::from_millis(u64::from(ms))),
            Op::Cut { a, b } => {
                let (a, b) = (self.member(a), self.member(b));
                if a != b {
                    self.sim.cut(a, b);
                }
            }
            Op::Partition { mask } => {
                let side: Vec<NodeId> = self
                    .members
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| mask & (1 << (i % 16)) != 0)
                    .map(|(_, &id)| id)
                    .collect();
                if !side.is_empty() && side.len() < self.members.len() {
                    self.sim.partition(&side);
                }
            }
            Op::Heal => self.sim.heal(),
            Op::PathFailure { from, to, ms } => {
                let (from, to) = (self.member(from), self.member(to));
                if from != to {
                    let length = Duration::from_millis(u64::from(ms));
                    self.sim.fail_path(from, to, length);
                }
            }
            Op::Kill { node } => {
                let id = self.member(node);
                self.sim.kill(id);
            }
            Op::Restart { node } => {
                let id = self.member(node);
                if !self.retired.contains(&id) {
                    self.restart(id);
                }
            }
            Op::Latency { a, b, ms } => {
                let (a, b) = (self.member(a), self.member(b));
                let d = Duration::from_micros(self.latency_base + u64::from(ms) * 1000);
                self.sim.set_latency(a, b, d);
            }
            Op::ScaleOut { mask } => self.scale_out(mask),
            Op::ScaleIn { proxy, die } => self.scale_in(proxy, die),
            Op::MoveLeaf { leaf, proxy } => {
                let active = self.active_proxies();
                let leaf = self.leaves[usize::from(leaf) % self.leaves.len()];
                let proxy = active[usize::from(proxy) % active.len()];
                if self.upstream_of(leaf) != proxy {
                    self.set_upstream(leaf, proxy);
                }
            }
            Op::RegistryRestart { down_ms } => {
                if self.mode == RegistryMode::Machines && self.sim.registry_running() {
                    self.sim
                        .restart_registry_after(Duration::from_millis(u64::from(down_ms)));
                }
            }
            Op::RegistryCut { node } => {
                let id = self.member(node);
                if self.mode == RegistryMode::Machines && self.sim.is_alive(id) {
                    self.sim.cut_registry_link(id);
                }
            }
            Op::Call { .. } | Op::Serve { .. } | Op::Broadcast { .. } | Op::Cancel { .. } => {
                if self.faults.rpc {
                    self.rpc_apply(op);
                }
            }
        }
        self.sim.check_invariants();
        self.rpc_check();
    }

    /// A new incarnation of `id`, which re-registers (new revisions, same records).
    fn restart(&mut self, id: NodeId) {
        self.sim.restart(id);
        self.rpc_restarted(id);
        let up = self.upstream_of(id);
        let up = if id == HUB { NodeId::NONE } else { up };
        self.publish(id, up);
    }

    fn scale_out(&mut self, mask: u8) {
        if self.proxies.len() >= 6 {
            return;
        }
        let id = NodeId(self.next_proxy);
        self.next_proxy += 1;
        self.sim
            .add_node(config(id, HUB, 0))
            .expect("the chaos configs validate");
        self.proxies.push(id);
        self.members.push(id);
        self.upstreams.insert(id, HUB);
        match self.mode {
            RegistryMode::Scripted => self.publish(id, HUB),
            RegistryMode::Machines => self.register(id, HUB),
        }
        for (i, &leaf) in self.leaves.clone().iter().enumerate() {
            if mask & (1 << (i % 8)) != 0 {
                self.set_upstream(leaf, id);
            }
        }
    }

    fn scale_in(&mut self, proxy: u8, die: bool) {
        let active = self.active_proxies();
        if active.len() < 2 {
            return;
        }
        let gone = active[usize::from(proxy) % active.len()];
        let others: Vec<NodeId> = active.into_iter().filter(|&p| p != gone).collect();
        if die {
            self.sim.kill(gone);
        }
        let moving: Vec<NodeId> = self
            .leaves
            .iter()
            .copied()
            .filter(|&l| self.upstream_of(l) == gone)
            .collect();
        for (i, leaf) in moving.into_iter().enumerate() {
            let to = others[i % others.len()];
            self.set_upstream(leaf, to);
        }
        match self.mode {
            RegistryMode::Scripted => {
                let f = self.fanout();
                self.sim.registry_delete_topology_with(gone, f);
                let f = self.fanout();
                self.sim.registry_delete_discovery_with(gone, f);
            }
            // Leaving says `Bye` (the registry removes it at once); a dead proxy's entry ends
            // with its disconnect protection.
            RegistryMode::Machines => self.sim.deregister(gone),
        }
        self.sim.kill(gone);
        self.retired.insert(gone);
    }

    /// The chaos phase: generated ops until `CHAOS_TIME` of virtual time has passed.
    pub fn chaos(&mut self) {
        let end = self.sim.now() + CHAOS_TIME;
        while self.sim.now() < end {
            let op = Op::generate(&mut self.rng, &self.faults);
            self.apply(op);
        }
    }

    /// Heals every fault, settles, probes every leaf pair and runs the quiescence checks.
    pub fn finish(&mut self) {
        self.sim.heal();
        self.sim.heal_paths();
        if self.mode == RegistryMode::Machines && !self.sim.registry_running() {
            self.sim.start_registry_server();
        }
        for id in self.members.clone() {
            if !self.retired.contains(&id) && !self.sim.is_alive(id) {
                self.restart(id);
            }
        }
        self.sim.check_invariants();
        self.sim.advance(SETTLE_TIME);
        self.sim.check_invariants();
        // Probes: one message from every leaf to every other leaf, each `Delivered` at the
        // first try. (A target that restarted behind a proxy refuses the sender's stale
        // stream with a reset; the probe was its only copy, so it moves to a fresh stream.)
        let pairs: Vec<(NodeId, NodeId)> = self
            .leaves
            .iter()
            .flat_map(|&a| self.leaves.iter().map(move |&b| (a, b)))
            .filter(|(a, b)| a != b)
            .collect();
        for (tag, from, to, r) in self.probe(&pairs) {
            let outcome = self.sim.tag_outcome(tag);
            if outcome != Some(Outcome::Delivered) {
                self.sim.record_violation(&format!(
                    "after quiescence the probe {from} -> {to} (tag {tag}) ended {outcome:?} \
                     within 5 s (send: {r:?})"
                ));
            }
        }
        self.sim.check_quiescent();
        self.rpc_final_check();
    }

    /// Sends one tagged probe per pair, runs 5 s and checks the invariants.
    fn probe(
        &mut self,
        pairs: &[(NodeId, NodeId)],
    ) -> Vec<(
        u64,
        NodeId,
        NodeId,
        Result<crate::ids::MsgId, crate::node::SendError>,
    )> {
        let sent = pairs
            .iter()
            .map(|&(from, to)| {
                let (tag, r) = self.sim.send_tagged(from, Select::Node(to), 99, 0);
                (tag, from, to, r)
            })
            .collect();
        self.sim.advance(Duration::from_secs(5));
        self.sim.check_invariants();
        sent
    }

    /// The report of this run so far.
    #[must_use]
    pub fn report(&self, seed: u64) -> SeedReport {
        SeedReport {
            seed,
            totals: self.sim.ledger_totals(),
            events: self.sim.steps_taken(),
            violations: self.sim.violations().to_vec(),
            rpc: self.rpc_totals(),
        }
    }
}

/// Runs the whole scenario of `seed` with `faults` on the registry machines (no trace) and
/// reports.
#[must_use]
pub fn run_seed(seed: u64, faults: Faults) -> SeedReport {
    run_seed_with(seed, faults, RegistryMode::Machines, false).report(seed)
}

/// Runs the scenario of `seed` with the simulator trace on and the registry machines, and
/// returns the finished run, for replaying a failing seed ([`Sim::trace`] has every call and
/// output).
#[must_use]
pub fn run_seed_traced(seed: u64, faults: Faults) -> Chaos {
    run_seed_with(seed, faults, RegistryMode::Machines, true)
}

/// Runs the whole scenario of `seed` with `faults` and the registry `mode`, the trace kept if
/// `trace`, and returns the finished run.
#[must_use]
pub fn run_seed_with(seed: u64, faults: Faults, mode: RegistryMode, trace: bool) -> Chaos {
    let mut chaos = Chaos::new(seed, faults, mode, None, trace);
    chaos.chaos();
    chaos.finish();
    chaos
}

/// Applies `ops` to a small cluster (hub, two proxies, four leaves; every fault kind allowed)
/// and finishes like a seeded run: the `node_ops` fuzz target.
#[must_use]
pub fn run_ops(ops: &[Op]) -> SeedReport {
    let mut chaos = Chaos::new(0, Faults::all(), RegistryMode::Machines, Some(4), false);
    for &op in ops.iter().take(512) {
        chaos.apply(op);
    }
    chaos.finish();
    chaos.report(0)
}
