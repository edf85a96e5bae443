//! [`Sim`]: the cluster — nodes, address book, links, registry, clock — and the commands and
//! queries tests use. Driving (delivery, timers, output handling) lives in `drive.rs`.

use alloc::{boxed::Box, format, string::String, vec::Vec};

use bytes::Bytes;
use foldhash::fast::FixedState;
use hashbrown::{HashMap, HashSet};

use super::{
    RegistryEvent, SimNode,
    agenda::{Agenda, Due},
    fmt_instant,
    link::{EndState, LinkTable, PairControls, Side},
    log::{Dial, NodeLog, OutcomeRecord, Received, Sent},
    registry::{self, Fanout, SimRegistry},
    sim_addr,
};
use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::{MsgId, NodeId},
    node::{Event, Node, SendError},
    select::Select,
    time::{Duration, Instant},
};

/// Knobs of a simulation. All deterministic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimSettings {
    /// Time from a `Connect` output to its resolution, unless a pair overrides it. Default 0.
    pub connect_latency: Duration,
    /// Time from a `Transmit` (or `Close`) to its arrival, unless a pair overrides it.
    /// Default 0.
    pub link_latency: Duration,
    /// Steps [`Sim::run_until_idle`] takes before it declares a livelock and panics.
    /// Default 100 000.
    pub step_limit: usize,
    /// Panic at the first node-contract violation (default), or only record it.
    pub strict: bool,
    /// Keep the human-readable [`Sim::trace`] (default). Off, nothing is formatted — the
    /// seeds runner turns it off for speed and replays a failing seed with it on.
    pub trace: bool,
    /// Extra random latency per transmission on top of the link latency: uniform in
    /// `[0, jitter)`, drawn from the simulator's generator ([`SimSettings::seed`]). Bytes of
    /// one link still never overtake each other. Default 0 (no draw: every transmission takes exactly the link latency).
    pub jitter: Duration,
    /// Seed of the simulator's own generator (jitter, registry delay spread) and of the
    /// registry machines' (their link jitter, each server's epoch). Default 0.
    pub seed: u64,
}

impl Default for SimSettings {
    fn default() -> SimSettings {
        SimSettings {
            connect_latency: Duration::ZERO,
            link_latency: Duration::ZERO,
            step_limit: 100_000,
            strict: true,
            trace: true,
            jitter: Duration::ZERO,
            seed: 0,
        }
    }
}

/// One simulated node and its bookkeeping.
pub(super) struct Slot<N: SimNode> {
    pub(super) id: NodeId,
    pub(super) addr: String,
    pub(super) config: N::Config,
    /// `None` while killed.
    pub(super) node: Option<N>,
    /// Bumped by every restart; deliveries addressed to an older incarnation are dropped.
    pub(super) incarnation: u32,
    /// The node's `poll_timeout` after the last drain.
    pub(super) deadline: Option<Instant>,
    pub(super) log: NodeLog,
    /// Messages accepted by this incarnation that have no outcome yet.
    pub(super) open_msgs: HashSet<MsgId, FixedState>,
    /// Messages of this incarnation that have their outcome.
    pub(super) done_msgs: HashSet<MsgId, FixedState>,
    /// `handle_timeout` calls at one instant: (instant, count), to detect a stuck timer.
    pub(super) timeouts_at: (Instant, u32),
    /// What the node registers with the registry machines, once it did.
    pub(super) records: Option<super::registry_machines::Records>,
}

/// A deterministic cluster of [`SimNode`]s (by default [`Node`]s) on one virtual clock.
///
/// Build it with [`Sim::new`] (or [`Sim::with_settings`]), add nodes with [`Sim::add_node`],
/// script the registry ([`Sim::registry_put_discovery`], …), links ([`Sim::link_down`], …) and
/// sends ([`Sim::send`]), move time ([`Sim::advance`], …) and assert on the logs
/// ([`Sim::received`], [`Sim::outcomes`], …). See the [module docs](super) for the model.
pub struct Sim<N: SimNode = Node> {
    pub(super) now: Instant,
    pub(super) settings: SimSettings,
    pub(super) slots: Vec<Slot<N>>,
    pub(super) index: HashMap<NodeId, usize, FixedState>,
    pub(super) addrs: HashMap<String, NodeId, FixedState>,
    pub(super) links: LinkTable,
    pub(super) pairs: PairControls,
    pub(super) agenda: Agenda,
    pub(super) registry: SimRegistry,
    pub(super) trace: Vec<String>,
    pub(super) violations: Vec<String>,
    pub(super) dropped_bytes: u64,
    /// The simulator's own generator (jitter, registry spread, tags' filler).
    pub(super) rng: crate::rng::Rng,
    /// Deliveries and timer firings processed so far.
    pub(super) steps: u64,
    /// Per-message bookkeeping of tagged sends, once enabled.
    pub(super) ledger: Option<super::ledger::Ledger>,
    /// Each node life by (id, bus incarnation): the simulator's incarnation count.
    pub(super) lives: HashMap<(NodeId, u64), u32, FixedState>,
    /// Next tag [`Sim::send_tagged`] hands out.
    pub(super) next_tag: u64,
    /// Slots drained since the last invariant check.
    pub(super) dirty: Vec<bool>,
    /// The registry machines, once [`Sim::start_registry`] turned them on.
    pub(super) machines: Option<super::registry_machines::Machines>,
    /// The earliest node timer as (deadline, slot index), ties to the lowest index: what a
    /// scan of every slot's `deadline` would find, kept up to date by
    /// [`Sim::set_deadline`] so a step does not scan every slot.
    pub(super) earliest_timer: Option<(Instant, usize)>,
    /// The path failures injected ([`Sim::fail_path`]).
    pub(super) path_faults: super::path_faults::PathFaults,
    /// Maglev tables lent to each node for its calls, once [`Sim::share_maglev_tables`]
    /// turned them on.
    pub(super) shared_maglev: Option<crate::select::SharedMaglev>,
}

impl Sim<Node> {
    /// An empty cluster of [`Node`]s at time zero with default settings.
    #[must_use]
    pub fn new() -> Sim<Node> {
        Sim::with_settings(SimSettings::default())
    }

    /// An empty cluster of [`Node`]s at time zero whose violations are recorded in
    /// [`Sim::violations`] instead of panicking at the first (`strict` off): the harness for a
    /// test that asserts on that list — after a strict run the list is always empty, so an
    /// assertion on it could never fail.
    #[must_use]
    pub fn recording() -> Sim<Node> {
        Sim::with_settings(SimSettings {
            strict: false,
            ..SimSettings::default()
        })
    }
}

impl Default for Sim<Node> {
    fn default() -> Sim<Node> {
        Sim::new()
    }
}

impl<N: SimNode> Sim<N> {
    /// An empty cluster at time zero.
    #[must_use]
    pub fn with_settings(settings: SimSettings) -> Sim<N> {
        Sim {
            now: Instant::ZERO,
            settings: settings.clone(),
            slots: Vec::new(),
            index: HashMap::default(),
            addrs: HashMap::default(),
            links: LinkTable::default(),
            pairs: PairControls::default(),
            agenda: Agenda::default(),
            registry: SimRegistry::default(),
            trace: Vec::new(),
            violations: Vec::new(),
            dropped_bytes: 0,
            rng: crate::rng::Rng::new(settings.seed),
            steps: 0,
            ledger: None,
            lives: HashMap::default(),
            next_tag: 0,
            dirty: Vec::new(),
            machines: None,
            earliest_timer: None,
            path_faults: super::path_faults::PathFaults::default(),
            shared_maglev: None,
        }
    }

    /// From now on, lends every node one set of Maglev tables for the length of each call
    /// (see [`SharedMaglev`](crate::select::SharedMaglev)): nodes that see the same
    /// membership fill one table between them instead of one each. Their picks do not
    /// change — a table depends only on its size, fill and node ids — only the work: the
    /// seeded runs turn it on, most other tests keep each node's own tables.
    pub fn share_maglev_tables(&mut self) {
        self.shared_maglev
            .get_or_insert_with(crate::select::SharedMaglev::new);
    }

    /// The settings; changes apply to what is scheduled afterwards.
    pub fn settings_mut(&mut self) -> &mut SimSettings {
        &mut self.settings
    }

    // ---- nodes -------------------------------------------------------------------------

    /// Starts a node from `config` at the current time, reachable at [`sim_addr`] of its id.
    /// It receives the registry's current state as a snapshot, then its outputs are drained.
    ///
    /// # Errors
    ///
    /// The node's own refusal of `config`.
    ///
    /// # Panics
    ///
    /// If a node with the same id already exists.
    pub fn add_node(&mut self, config: N::Config) -> Result<NodeId, N::Error> {
        self.add_node_inner(config, None)
    }

    /// Like [`Sim::add_node`], reachable at `addr` instead.
    ///
    /// # Errors
    ///
    /// The node's own refusal of `config`.
    ///
    /// # Panics
    ///
    /// If a node with the same id or address already exists.
    pub fn add_node_at(&mut self, config: N::Config, addr: &str) -> Result<NodeId, N::Error> {
        self.add_node_inner(config, Some(String::from(addr)))
    }

    fn add_node_inner(
        &mut self,
        config: N::Config,
        addr: Option<String>,
    ) -> Result<NodeId, N::Error> {
        let node = N::start(&config, self.now)?;
        let id = node.id();
        self.lives.insert((id, node.incarnation()), 0);
        assert!(
            !self.index.contains_key(&id),
            "sim: a node with id {id} already exists"
        );
        let addr = addr.unwrap_or_else(|| sim_addr(id));
        assert!(
            !self.addrs.contains_key(&addr),
            "sim: address {addr} is already taken"
        );
        let idx = self.slots.len();
        if idx == self.slots.capacity() {
            // A slot holds its node inline (a `Node` is about 4 KB): room for 16 at the first
            // add, not four copies of the table on the way there.
            self.slots.reserve(idx.max(16));
        }
        self.slots.push(Slot {
            id,
            addr: addr.clone(),
            config,
            node: Some(node),
            incarnation: 0,
            deadline: None,
            log: NodeLog::default(),
            open_msgs: HashSet::default(),
            done_msgs: HashSet::default(),
            timeouts_at: (Instant::ZERO, 0),
            records: None,
        });
        self.machines_add_member();
        self.index.insert(id, idx);
        self.dirty.push(true);
        self.addrs.insert(addr.clone(), id);
        self.note_with(Some(id), || format!("started at {addr}"));
        self.drain(idx);
        self.deliver_snapshot(idx);
        Ok(id)
    }

    /// Kills `id` abruptly: its links drop (each peer gets `handle_closed` during this call,
    /// bytes in flight are lost), dials to it fail, deliveries addressed to it are discarded, its
    /// unfinished messages stay unresolved in its log. Its registry records are untouched —
    /// script their deletion if the scenario needs it. No-op if already dead.
    pub fn kill(&mut self, id: NodeId) {
        let idx = self.slot_index(id);
        if self.slots[idx].node.is_none() {
            return;
        }
        self.note(Some(id), "killed");
        let inc = self.slots[idx].incarnation;
        if let Some(ledger) = self.ledger.as_mut() {
            ledger.on_death(id, inc);
        }
        self.set_deadline(idx, None);
        let life = self.slots[idx]
            .node
            .as_ref()
            .map_or(0, SimNode::incarnation);
        let slot = &mut self.slots[idx];
        slot.node = None;
        slot.open_msgs.clear();
        slot.done_msgs.clear();
        for link in self.links.touching(id) {
            self.drop_link(link, Some(id));
        }
        self.links.forget_node(id);
        self.machines_node_killed(idx);
        self.publish_session_lost(id, life);
    }

    /// Restarts `id` (as [`Sim::restart`]) with `config` from now on: a rolling change of
    /// configuration, such as new cluster keys.
    pub fn restart_with(&mut self, id: NodeId, config: N::Config) {
        let idx = self.slot_index(id);
        self.slots[idx].config = config;
        self.restart(id);
    }

    /// Starts a new incarnation of `id` from its original config at the current time (killing
    /// the running one first, if any). It receives the registry snapshot like a new node.
    ///
    /// # Panics
    ///
    /// If the node rejects its config (it accepted the same config before).
    pub fn restart(&mut self, id: NodeId) {
        self.kill(id);
        let idx = self.slot_index(id);
        let node = match N::start(&self.slots[idx].config, self.now) {
            Ok(node) => node,
            Err(e) => panic!("sim: restarting {id} failed: {e:?}"),
        };
        let bus_incarnation = node.incarnation();
        let slot = &mut self.slots[idx];
        slot.node = Some(node);
        slot.incarnation += 1;
        let inc = slot.incarnation;
        self.lives.insert((id, bus_incarnation), inc);
        self.note_with(Some(id), || format!("restarted (incarnation {inc})"));
        self.drain(idx);
        self.deliver_snapshot(idx);
        self.machines_node_started(idx);
    }

    /// Graceful shutdown of `id` (`shutdown` on the node), outputs drained.
    pub fn shutdown(&mut self, id: NodeId) {
        self.note(Some(id), "<- shutdown");
        self.act(id, |node, now| node.shutdown(now));
        self.machines_node_shutdown(self.slot_index(id));
    }

    /// Calls `f` on the live node `id` with the current time, then drains its outputs (the
    /// way to issue a command the simulator has no method for).
    ///
    /// # Panics
    ///
    /// If `id` is unknown or dead.
    pub fn act<R>(&mut self, id: NodeId, f: impl FnOnce(&mut N, Instant) -> R) -> R {
        let idx = self.slot_index(id);
        let now = self.now;
        let Some(node) = self.slots[idx].node.as_mut() else {
            panic!("sim: node {id} is dead");
        };
        node.swap_shared_maglev(&mut self.shared_maglev);
        let r = f(node, now);
        node.swap_shared_maglev(&mut self.shared_maglev);
        self.drain(idx);
        r
    }

    /// The simulator's incarnation count of `id`: 0 for its first life, bumped by every
    /// restart (what [`RpcRecord::life`](super::RpcRecord::life) says).
    #[must_use]
    pub fn life(&self, id: NodeId) -> u32 {
        self.slots[self.slot_index(id)].incarnation
    }

    /// The live node `id`, for queries.
    ///
    /// # Panics
    ///
    /// If `id` is unknown or dead.
    #[must_use]
    pub fn node(&self, id: NodeId) -> &N {
        match self.slots[self.slot_index(id)].node.as_ref() {
            Some(node) => node,
            None => panic!("sim: node {id} is dead"),
        }
    }

    /// Whether `id` exists and is running.
    #[must_use]
    pub fn is_alive(&self, id: NodeId) -> bool {
        self.index
            .get(&id)
            .is_some_and(|&i| self.slots[i].node.is_some())
    }

    /// Ids of every node, in the order they were added.
    #[must_use]
    pub fn node_ids(&self) -> Vec<NodeId> {
        self.slots.iter().map(|s| s.id).collect()
    }

    /// The address `id` is reachable at.
    #[must_use]
    pub fn addr(&self, id: NodeId) -> &str {
        &self.slots[self.slot_index(id)].addr
    }

    // ---- links -------------------------------------------------------------------------

    /// Takes the path between `a` and `b` down: every link between them drops now — both
    /// sides get `handle_closed` during this call (dialer side first, links in creation
    /// order), bytes in flight are lost — and dials between them fail until [`Sim::link_up`].
    pub fn link_down(&mut self, a: NodeId, b: NodeId) {
        self.note_with(None, || format!("link down {a} <-> {b}"));
        self.pairs.set_down(a, b, true);
        for link in self.links.live_between(a, b) {
            self.drop_link(link, None);
        }
    }

    /// Brings the path between `a` and `b` back: dials succeed again. Nothing reconnects by
    /// itself — the nodes dial when they decide to.
    pub fn link_up(&mut self, a: NodeId, b: NodeId) {
        self.note_with(None, || format!("link up {a} <-> {b}"));
        if self.pairs.is_down(a, b) {
            self.path_faults.pair_up(a, b, self.now);
        }
        self.pairs.set_down(a, b, false);
    }

    /// Drops the links between `a` and `b` now (like [`Sim::link_down`]) without blocking
    /// later dials.
    pub fn cut(&mut self, a: NodeId, b: NodeId) {
        self.note_with(None, || format!("cut {a} <-> {b}"));
        for link in self.links.live_between(a, b) {
            self.drop_link(link, None);
        }
    }

    /// The next dial from `from` to `to` fails (cumulative: call twice, two dials fail).
    pub fn fail_next_connect(&mut self, from: NodeId, to: NodeId) {
        self.note_with(None, || format!("fail next connect {from} -> {to}"));
        self.pairs.add_fail_next(from, to);
    }

    /// Byte latency between `a` and `b` (both directions), for bytes sent from now on. Later
    /// bytes never overtake earlier ones on one link.
    pub fn set_latency(&mut self, a: NodeId, b: NodeId, latency: Duration) {
        self.pairs.set_latency(a, b, latency);
    }

    /// Connect latency between `a` and `b`, for dials started from now on.
    pub fn set_connect_latency(&mut self, a: NodeId, b: NodeId, latency: Duration) {
        self.pairs.set_connect_latency(a, b, latency);
    }

    /// Number of established links between `a` and `b` with both ends open.
    #[must_use]
    pub fn open_links(&self, a: NodeId, b: NodeId) -> usize {
        self.links.open_between(a, b)
    }

    /// Takes the bytes `from` sent to `to` that have not arrived yet off every link between
    /// them and returns them in sending order, one `Bytes` per `Transmit`: they never arrive,
    /// and the links stay up. A reliable stream does not lose bytes in the middle, so this is
    /// no network fault: it is for a test that captures a frame and answers it by hand (with
    /// [`Sim::act`] and `handle_received`). Later bytes keep the timing they would have had.
    pub fn take_in_flight(&mut self, from: NodeId, to: NodeId) -> Vec<Bytes> {
        let links = &self.links;
        let towards_to = |link: super::link::SimLinkId, side: Side| {
            links
                .get(link)
                .and_then(|l| l.end(side.other()))
                .is_some_and(|end| end.node == from)
                && links
                    .get(link)
                    .and_then(|l| l.end(side))
                    .is_some_and(|end| end.node == to)
        };
        let taken: Vec<Bytes> = self
            .agenda
            .take_where(|due| match due {
                Due::Bytes { link, to, .. } => towards_to(*link, *to),
                _ => false,
            })
            .into_iter()
            .filter_map(|(_, due)| match due {
                Due::Bytes { bytes, .. } => Some(bytes),
                _ => None,
            })
            .collect();
        self.note_with(None, || {
            let total: usize = taken.iter().map(Bytes::len).sum();
            format!(
                "took {} transmits ({total} bytes) in flight {from} -> {to}",
                taken.len()
            )
        });
        taken
    }

    /// Drops one link abruptly; `dead` is a node that died (its end is gone without notice).
    pub(super) fn drop_link(&mut self, id: super::link::SimLinkId, dead: Option<NodeId>) {
        let Some(link) = self.links.get_mut(id) else {
            return;
        };
        let mut notify = Vec::new();
        for side in [Side::Dialer, Side::Acceptor] {
            let Some(end) = link.end_mut(side) else {
                continue;
            };
            if Some(end.node) == dead {
                end.state = EndState::Gone;
                continue;
            }
            match end.state {
                EndState::Open => {
                    end.state = EndState::Reset;
                    notify.push(side);
                }
                // A pending dial fails when it resolves (pair down / target dead).
                EndState::Dialing | EndState::ClosedBySelf | EndState::Reset | EndState::Gone => {}
            }
        }
        // Every end is marked first, so nothing a notified node does can use the link.
        for side in notify {
            self.notify_closed(id, side, EndState::Reset);
        }
    }

    // ---- registry ----------------------------------------------------------------------

    /// The registry's current contents and revision.
    #[must_use]
    pub fn registry(&self) -> &SimRegistry {
        &self.registry
    }

    /// Publishes `info` (next revision) to every live node now. Returns the revision.
    pub fn registry_put_discovery(&mut self, info: DiscoveryInfo) -> u64 {
        self.registry_put_discovery_with(info, Fanout::all())
    }

    /// Publishes `info` (next revision) to `fanout`. Returns the revision.
    pub fn registry_put_discovery_with(&mut self, info: DiscoveryInfo, fanout: Fanout) -> u64 {
        let event = self.registry.put_discovery(info);
        self.publish(event, fanout)
    }

    /// Deletes `id`'s discovery record (next revision), announced to every live node now.
    pub fn registry_delete_discovery(&mut self, id: NodeId) -> u64 {
        self.registry_delete_discovery_with(id, Fanout::all())
    }

    /// Deletes `id`'s discovery record (next revision), announced to `fanout`.
    pub fn registry_delete_discovery_with(&mut self, id: NodeId, fanout: Fanout) -> u64 {
        let event = self.registry.delete_discovery(id);
        self.publish(event, fanout)
    }

    /// Publishes `info` (next revision) to every live node now. Returns the revision.
    pub fn registry_put_topology(&mut self, info: TopologyInfo) -> u64 {
        self.registry_put_topology_with(info, Fanout::all())
    }

    /// Publishes `info` (next revision) to `fanout`. Returns the revision.
    pub fn registry_put_topology_with(&mut self, info: TopologyInfo, fanout: Fanout) -> u64 {
        let event = self.registry.put_topology(info);
        self.publish(event, fanout)
    }

    /// Deletes `id`'s topology record (next revision), announced to every live node now.
    pub fn registry_delete_topology(&mut self, id: NodeId) -> u64 {
        self.registry_delete_topology_with(id, Fanout::all())
    }

    /// Deletes `id`'s topology record (next revision), announced to `fanout`.
    pub fn registry_delete_topology_with(&mut self, id: NodeId, fanout: Fanout) -> u64 {
        let event = self.registry.delete_topology(id);
        self.publish(event, fanout)
    }

    /// Hands `event` to node `id` now, bypassing the registry (no revision assigned, nothing
    /// stored): for stale, duplicate or malformed events.
    pub fn inject_registry(&mut self, id: NodeId, event: RegistryEvent) {
        let idx = self.slot_index(id);
        self.deliver_registry(idx, event);
    }

    /// A killed node's registry session ends: when the scripted registry holds its record
    /// (and no registry machines run, whose server says so itself) the loss is published to
    /// every live node at once, as the embedded registry does (docs/ARCHITECTURE.md §9.3).
    fn publish_session_lost(&mut self, id: NodeId, incarnation: u64) {
        if self.machines.is_none() && self.registry.discovery(id).is_some() {
            let lost = RegistryEvent::Session {
                id,
                incarnation,
                lost_for: Some(Duration::ZERO),
            };
            self.publish(lost, Fanout::all());
        }
    }

    fn publish(&mut self, event: RegistryEvent, fanout: Fanout) -> u64 {
        let revision = self.registry.revision();
        self.note_with(None, || format!("registry {}", registry::describe(&event)));
        let targets = fanout.to.unwrap_or_else(|| self.node_ids());
        if fanout.delay.is_zero() && fanout.spread.is_zero() {
            for id in targets {
                let idx = self.slot_index(id);
                if self.slots[idx].node.is_some() {
                    self.deliver_registry(idx, event.clone());
                }
            }
        } else {
            for id in targets {
                let spread = fanout.spread.as_nanos();
                let extra = if spread == 0 {
                    0
                } else {
                    self.rng.below(u64::try_from(spread).unwrap_or(u64::MAX))
                };
                let at = self.now + fanout.delay + Duration::from_nanos(extra);
                let idx = self.slot_index(id);
                let incarnation = self.slots[idx].incarnation;
                self.agenda.push(
                    at,
                    Due::Registry {
                        node: id,
                        incarnation,
                        event: Box::new(event.clone()),
                    },
                );
            }
        }
        revision
    }

    /// Hands the registry's current state to a node that just started, one event at a time.
    fn deliver_snapshot(&mut self, idx: usize) {
        for event in self.registry.snapshot() {
            self.deliver_registry(idx, event);
        }
    }

    // ---- application -------------------------------------------------------------------

    /// The application on `from` sends a message; outputs are drained. An accepted message is
    /// logged in [`Sim::sent`] and must end in exactly one outcome.
    ///
    /// # Errors
    ///
    /// The node's refusal.
    ///
    /// # Panics
    ///
    /// If `from` is unknown or dead.
    pub fn send(
        &mut self,
        from: NodeId,
        target: Select,
        msg_type: u32,
        payload: impl Into<Bytes>,
    ) -> Result<MsgId, SendError> {
        let payload: Bytes = payload.into();
        let idx = self.slot_index(from);
        let now = self.now;
        self.note_with(Some(from), || {
            format!(
                "<- send to {} type {msg_type} payload {:?}",
                describe_target(&target),
                payload
            )
        });
        let Some(node) = self.slots[idx].node.as_mut() else {
            panic!("sim: send from dead node {from}");
        };
        let deadline = node.message_timeout().map(|t| now + t);
        let target_id = match target {
            Select::Node(id) => Some(id),
            _ => None,
        };
        node.swap_shared_maglev(&mut self.shared_maglev);
        let result = node.send(now, target, msg_type, payload.clone());
        node.swap_shared_maglev(&mut self.shared_maglev);
        match &result {
            Ok(msg) => {
                let msg = *msg;
                self.note_with(Some(from), || format!("   accepted as msg#{}", msg.0));
                let slot = &mut self.slots[idx];
                if slot.open_msgs.contains(&msg) || slot.done_msgs.contains(&msg) {
                    self.violation(&format!("{from} returned msg#{} twice from send", msg.0));
                }
                let slot = &mut self.slots[idx];
                slot.open_msgs.insert(msg);
                let inc = slot.incarnation;
                let tag = super::ledger::payload_tag(&payload);
                if let (Some(ledger), Some(tag)) = (self.ledger.as_mut(), tag) {
                    ledger.on_accepted(from, inc, msg, tag, target_id, deadline);
                    self.collect_ledger_violations();
                }
                let slot = &mut self.slots[idx];
                slot.log.sent.push(Sent {
                    at: now,
                    msg,
                    msg_type,
                    payload,
                });
            }
            Err(e) => {
                self.note_with(Some(from), || format!("   refused: {e:?}"));
                if let (Some(ledger), Some(_)) =
                    (self.ledger.as_mut(), super::ledger::payload_tag(&payload))
                {
                    ledger.on_refused();
                }
            }
        }
        self.drain(idx);
        result
    }

    /// [`Sim::send`] to `Select::Node(to)`.
    ///
    /// # Errors
    ///
    /// The node's refusal.
    pub fn send_to(
        &mut self,
        from: NodeId,
        to: NodeId,
        msg_type: u32,
        payload: impl Into<Bytes>,
    ) -> Result<MsgId, SendError> {
        self.send(from, Select::Node(to), msg_type, payload)
    }

    // ---- logs and queries --------------------------------------------------------------

    /// Current virtual time.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Everything logged for `id`.
    #[must_use]
    pub fn log(&self, id: NodeId) -> &NodeLog {
        &self.slots[self.slot_index(id)].log
    }

    /// Messages `id` delivered to its application, in order.
    #[must_use]
    pub fn received(&self, id: NodeId) -> &[Received] {
        &self.log(id).received
    }

    /// Messages `id` accepted from its application, in order.
    #[must_use]
    pub fn sent(&self, id: NodeId) -> &[Sent] {
        &self.log(id).sent
    }

    /// Outcomes `id` reported, in order.
    #[must_use]
    pub fn outcomes(&self, id: NodeId) -> &[OutcomeRecord] {
        &self.log(id).outcomes
    }

    /// The outcome `id` reported for `msg`, if any.
    #[must_use]
    pub fn outcome_of(&self, id: NodeId, msg: MsgId) -> Option<OutcomeRecord> {
        self.log(id).outcome_of(msg)
    }

    /// Events `id` reported, with their time.
    #[must_use]
    pub fn events(&self, id: NodeId) -> &[(Instant, Event)] {
        &self.log(id).events
    }

    /// Dials `id` asked for, with their time and how they resolved.
    #[must_use]
    pub fn dials(&self, id: NodeId) -> &[Dial] {
        &self.log(id).dials
    }

    /// The trace: one line per call into a node, output, scripted action and drop.
    #[must_use]
    pub fn trace(&self) -> &[String] {
        &self.trace
    }

    /// The last `n` trace lines joined, for failure messages.
    #[must_use]
    pub fn trace_tail(&self, n: usize) -> String {
        let start = self.trace.len().saturating_sub(n);
        self.trace[start..].join("\n")
    }

    /// Node-contract violations seen so far (with `strict` off; strict mode panics at the first).
    #[must_use]
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// Bytes lost because their link dropped or the receiver had closed its end.
    #[must_use]
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }

    /// Deliveries scheduled and not yet made.
    #[must_use]
    pub fn scheduled(&self) -> usize {
        self.agenda.len()
    }

    /// The node's current timer deadline, as last read from `poll_timeout`.
    #[must_use]
    pub fn deadline(&self, id: NodeId) -> Option<Instant> {
        self.slots[self.slot_index(id)].deadline
    }

    // ---- internals ---------------------------------------------------------------------

    pub(super) fn slot_index(&self, id: NodeId) -> usize {
        match self.index.get(&id) {
            Some(&idx) => idx,
            None => panic!("sim: unknown node {id}"),
        }
    }

    /// Appends a trace line stamped with the current time.
    pub(super) fn note(&mut self, node: Option<NodeId>, text: &str) {
        if !self.settings.trace {
            return;
        }
        let who = node.map_or_else(|| String::from("sim"), |id| format!("{id}"));
        self.trace
            .push(format!("{} {who} {text}", fmt_instant(self.now)));
    }

    /// Appends a trace line built by `text` only if tracing is on (the hot path formats
    /// nothing with `trace` off).
    pub(super) fn note_with(&mut self, node: Option<NodeId>, text: impl FnOnce() -> String) {
        if self.settings.trace {
            let text = text();
            self.note(node, &text);
        }
    }

    /// Records a node-contract violation; panics in strict mode.
    pub(super) fn violation(&mut self, text: &str) {
        self.note_with(None, || format!("VIOLATION: {text}"));
        self.violations.push(String::from(text));
        assert!(
            !self.settings.strict,
            "sim: node contract violated: {text}\n--- trace tail ---\n{}",
            self.trace_tail(40)
        );
    }
}

/// A short text for a send target, as in the trace.
pub(super) fn describe_target(target: &Select) -> String {
    match target {
        Select::Node(id) => format!("{id}"),
        Select::Name(name) => format!("name {name:?}"),
        Select::Hash(key) => format!("hash key {key:?}"),
        Select::Maglev(key) => format!("maglev key {key:?}"),
        Select::Bounded(key) => format!("bounded key {key:?}"),
        other => String::from(other.mode().label()),
    }
}
