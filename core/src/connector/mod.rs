//! The connection manager's decision logic: route records, the routing decision, reactions to
//! topology, discovery and link events, reconnect timers and the ready/unready/removal
//! cascade (libatapp's `atapp_connector_atbus`, corrected where ARCHITECTURE §8 says so).
//!
//! The [`Connector`] is pure logic. It owns the route records, one timer per record, what it
//! knows of the links (per peer: connecting or up, as the node reports it) and the node's own
//! upstream link keeper. It reads the topology registry and the discovery set through a
//! borrowed [`World`], and it never touches an endpoint, a link or a byte: every consequence
//! is an [`Effect`] the owner ([`crate::node::Node`]) pops with
//! [`pop_effect`](Connector::pop_effect) and applies — dial this address, flush this target's
//! queue (its route became ready), fail this target's queue (its record was removed), report
//! this event.
//!
//! # Records
//!
//! One [`RouteRecord`](RouteView) per remote node the node routes to or through, keyed by
//! node id: its [`RouteFlags`] (`ACTIVE`, `WAIT_DISCOVERY`, `LOST_TOPOLOGY`, `READY`), the
//! `proxy` it routes through (none = direct), the records routing through it (`proxy_for`,
//! ascending), its retry count, backoff window (`next_reconnect`) and lost deadline. A record
//! opened by a send ([`open_route`](Connector::open_route)) is *active* and carries the
//! target's endpoint; records created as hops are *passive* and are dropped once nothing
//! routes through them. Cross references are node ids resolved through the record map on
//! every use, and cascades copy the id sets before walking them, so any removal order is
//! safe (libatapp F.5).
//!
//! # The routing decision
//!
//! [`open_route`](Connector::open_route) and every recompute run the decision of ARCHITECTURE
//! §8 (libatapp-spec §4), in order:
//! 0. **existing link**: the target is our upstream, or a link to it exists (connecting or
//!    up) → direct, ready iff the link is up;
//! 1. **peer path**, when the policy allows a direct link for the relation: candidates are
//!    the target, then each node up its upstream chain; a candidate failing the policy is
//!    skipped (or, on a direct reconnect, ends the attempt with `TopologyDenied`); a candidate
//!    with a link is bound to (its readiness copied); a candidate without discovery is bound
//!    to and marked `WAIT_DISCOVERY`; otherwise the first candidate with a dial-able address
//!    is bound to and dialled (unless inside its backoff window);
//! 2. **upstream / downstream relation** → through the next hop of the tree, ready iff that
//!    hop's link is up (no dial: the upstream keeper and the children keep those links);
//! 3. **relay through our own upstream** (first connects and topology recomputes of active
//!    records only) → ready iff the upstream link is up;
//! 4. otherwise [`RouteError::NoRoute`].
//!
//! A target the topology registry does not know (relation `Invalid`) is routed like a peer
//! when the policy allows direct links (waiting for its discovery record if need be); without
//! direct links it is relayed through our upstream if discovery knows it, and waits
//! (`WAIT_DISCOVERY`, bounded by its retries) if neither registry knows it — it may not exist,
//! and relaying blindly would report `Delivered` for a message the relay then drops. libatapp
//! refuses every topology-less target with `TOPOLOGY_UNKNOWN`; the seed's "watchers arrive in
//! any order" makes waiting the better answer.
//!
//! # Timers and reconnects
//!
//! Each record has at most one timer in a [`TimerQueue`] keyed by node id; arming keeps the
//! earlier deadline. A record needs its timer while it is `LOST_TOPOLOGY`, or unready without
//! a live link. When it fires ([`handle_timeout`](Connector::handle_timeout), which handles
//! every due record in one call): a lost record past its deadline is removed; a ready one
//! re-arms for its lost deadline; one inside its backoff window re-arms for the window's end;
//! otherwise the next attempt is scheduled — attempt `k` waits
//! [`BackoffConfig::delay`]`(k)` (`min(start · 2^k, max)`, jittered by the configured percent;
//! 0 % reproduces libatapp's exact times) — and a peer is re-dialled. When `max_tries`
//! attempts were scheduled without the route becoming ready the record is removed with
//! `NoRoute`. The retry count resets when the route becomes ready, on a discovery put for the
//! target and on an upstream switch.
//!
//! # Corrections over libatapp (each tested)
//!
//! - A dropped link clears `READY` at once (cascading to the records routed through it) and
//!   arms the reconnect timer; libatapp keeps `READY`, so a flapping link burns retries while
//!   "ready".
//! - The reconnect timer really re-dials a peer; libatapp's timer path re-enters its own
//!   backoff window and never dials.
//! - Removing a record reports `Removed { endpoint: true, .. }` so the owner fails its queue
//!   at once with the reason (libatapp leaves it to time out).
//! - A record whose direct link is up and `READY` survives its lost deadline; the deadline
//!   applies once the link goes down (libatapp removes working links, its D.7).
//! - A link coming up to a target routed through a proxy switches the record to the direct
//!   link (direct before proxied); among several links to one peer the owner uses the lowest
//!   link id.
//! - A direct (re)connect the policy refuses — the target's host, pid or labels changed in
//!   its topology record, which libatapp's topology equality ignores — re-routes an active
//!   record through the tree or our upstream at once, keeping its queue; only a passive
//!   record is removed (libatapp removes the handle).
//! - Records created before the target's topology is known do not start out `LOST_TOPOLOGY`
//!   (libatapp's spec §10 item 7); unready ones are bounded by their retries instead.
//! - When our **own** upstream switches, records routed through the old one are re-routed
//!   (their queues survive) instead of being removed with it; the old upstream's links are
//!   closed once nothing needs them ([`Effect::Disconnect`]). libatapp also disconnects any
//!   passive proxy nothing routes through any more; we keep such idle links open.
//! - The upstream link itself is kept by the connector (dialled at start, re-dialled with the
//!   reconnect backoff and no try limit); libatbus does this below libatapp.

mod decide;
mod react;
mod record;
mod relay;

#[cfg(test)]
mod tests;

use alloc::{
    collections::{BTreeMap, BTreeSet, VecDeque},
    string::String,
    vec::Vec,
};

use record::RouteRecord;
pub use record::{RouteFlags, RouteView};

use crate::{
    backoff::{Backoff, BackoffConfig, Jitter},
    config::Config,
    discovery::DiscoverySet,
    ids::NodeId,
    outcome::FailReason,
    rng::Rng,
    time::{Duration, Instant, earliest},
    timer::TimerQueue,
    topology::{PeerData, TopologyPolicy, TopologyRegistry},
};

/// Bytes one route record occupies inline (`size_of` of the private record type), for
/// memory reports and benches. The record map adds its key and B-tree overhead per entry; a
/// record's `proxy_for` set allocates on top only while records route through it.
pub const ROUTE_RECORD_SIZE: usize = core::mem::size_of::<RouteRecord>();

/// What the connector reads but does not own: the topology registry and the discovery set,
/// borrowed from the node for the duration of one call.
#[derive(Clone, Copy, Debug)]
pub struct World<'a> {
    /// The applied topology records.
    pub topology: &'a TopologyRegistry,
    /// The applied discovery records (addresses).
    pub discovery: &'a DiscoverySet,
}

impl<'a> World<'a> {
    /// The world of these records.
    #[must_use]
    pub const fn new(topology: &'a TopologyRegistry, discovery: &'a DiscoverySet) -> World<'a> {
        World {
            topology,
            discovery,
        }
    }

    /// Whether `peer`'s record is a light client's ([`DiscoveryInfo::is_client`]): nothing
    /// reconnects to it.
    ///
    /// [`DiscoveryInfo::is_client`]: crate::discovery::DiscoveryInfo::is_client
    #[must_use]
    pub fn is_client(&self, peer: NodeId) -> bool {
        self.discovery
            .get_by_id(peer)
            .is_some_and(crate::discovery::DiscoveryInfo::is_client)
    }
}

/// What the connector knows of the links to one peer, as the owner reports it with
/// [`Connector::set_link_state`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkState {
    /// A dial (or an accepted link whose peer we dialled) is in progress; nothing is up.
    Connecting,
    /// At least one link to the peer finished its handshake.
    Up,
}

impl LinkState {
    /// The state of a peer with an `up` link, with only dials in progress (`connecting`), or
    /// with nothing (`None`).
    #[must_use]
    pub const fn of(up: bool, connecting: bool) -> Option<LinkState> {
        if up {
            Some(LinkState::Up)
        } else if connecting {
            Some(LinkState::Connecting)
        } else {
            None
        }
    }
}

/// The connector's settings, taken from [`Config`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectorConfig {
    /// This node's id.
    pub own_id: NodeId,
    /// This node's topology data (host, pid, labels), for direct-link policies.
    pub local: PeerData,
    /// The direct-link policy.
    pub policy: TopologyPolicy,
    /// Reconnect schedule of route records (`max_tries` = removal).
    pub backoff: BackoffConfig,
    /// How long a record outlives its target's topology record.
    pub lost_topology_timeout: Duration,
    /// This node's upstream at start ([`NodeId::NONE`] for a root).
    pub upstream: NodeId,
    /// Dial address of the configured upstream; empty = from discovery.
    pub upstream_address: String,
}

impl ConnectorConfig {
    /// The connector part of a node config. Jitter 0 % means no jitter (libatapp's exact
    /// schedule).
    #[must_use]
    pub fn from_config(config: &Config) -> ConnectorConfig {
        let percent = u8::try_from(config.reconnect_jitter_percent.min(100))
            .expect("a percentage clamped to 100 fits in u8");
        let jitter = if percent == 0 {
            Jitter::None
        } else {
            Jitter::Proportional { percent }
        };
        ConnectorConfig {
            own_id: config.id,
            local: PeerData {
                hostname: config.hostname.clone(),
                pid: config.pid,
                labels: config.labels.clone(),
            },
            policy: config.topology_policy.clone(),
            backoff: BackoffConfig {
                start: config.reconnect_start,
                max: config.reconnect_max,
                max_tries: config.reconnect_max_tries,
                jitter,
            },
            lost_topology_timeout: config.lost_topology_timeout,
            upstream: config.upstream,
            upstream_address: config.upstream_address.clone(),
        }
    }
}

/// Why a route could not be opened. Nothing was created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The target is node 0 or this node itself (loopback is the owner's business).
    #[error("route target must be a remote node with a non-zero id")]
    InvalidTarget,
    /// No direct path is allowed or possible, the target is not up or down the tree, and this
    /// node has no upstream to relay through.
    #[error("no route to the target")]
    NoRoute,
    /// A direct reconnect was refused by the topology policy.
    #[error("the topology policy forbids a direct link to the target")]
    TopologyDenied,
}

/// Something that happened to a route record; reported as an [`Effect::Route`] and, by the
/// node, as an observability event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteEvent {
    /// The route became ready: flush the target's queue. `via` is the proxy (`None` =
    /// direct).
    Ready {
        /// The record's target.
        target: NodeId,
        /// The record it routes through, if any.
        via: Option<NodeId>,
    },
    /// The route stopped being ready: new messages queue.
    Unready {
        /// The record's target.
        target: NodeId,
    },
    /// The record was removed. When `endpoint` is set, fail the target's queue at once with
    /// `Failed(reason)`.
    Removed {
        /// The record's target.
        target: NodeId,
        /// Why.
        reason: FailReason,
        /// An endpoint was bound to the record.
        endpoint: bool,
    },
    /// A reconnect attempt was scheduled (`attempt` counts from 1).
    ReconnectScheduled {
        /// The record's target.
        target: NodeId,
        /// The retry count after scheduling.
        attempt: u32,
        /// When the attempt is due.
        at: Instant,
    },
    /// The record now waits for the target's discovery record.
    WaitingDiscovery {
        /// The record's target.
        target: NodeId,
    },
    /// The target's topology record was deleted; the record is given up at `deadline`.
    TopologyLost {
        /// The record's target.
        target: NodeId,
        /// Its lost deadline.
        deadline: Instant,
    },
}

impl RouteEvent {
    /// The route record's target (every route event is about one).
    #[must_use]
    pub const fn target(&self) -> NodeId {
        match *self {
            RouteEvent::Ready { target, .. }
            | RouteEvent::Unready { target }
            | RouteEvent::Removed { target, .. }
            | RouteEvent::ReconnectScheduled { target, .. }
            | RouteEvent::WaitingDiscovery { target }
            | RouteEvent::TopologyLost { target, .. } => target,
        }
    }
}

/// What the owner must do, in order. Popped with [`Connector::pop_effect`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Effect {
    /// Open a link to `peer` at `addr`; report its progress with
    /// [`Connector::set_link_state`]. The connector already counts the peer as connecting.
    Dial {
        /// The node to dial.
        peer: NodeId,
        /// Its address (from discovery, or the configured upstream address).
        addr: String,
    },
    /// Close every link to `peer`: it was our upstream, we moved to another one, and nothing
    /// routes to or through it (libatapp disconnects such a proxy). The connector already
    /// counts the peer as unlinked. Keeping the link would let the old upstream keep
    /// delivering to us over it, so traffic would not follow the topology change.
    Disconnect {
        /// The former upstream.
        peer: NodeId,
    },
    /// A record changed; see [`RouteEvent`].
    Route(RouteEvent),
}

/// The node's own upstream link: dialled and re-dialled by the connector itself (libatbus
/// keeps this link on its own), without a try limit.
#[derive(Clone, Debug)]
struct UpstreamKeeper {
    id: NodeId,
    /// The configured upstream and its configured address (used only while `id` is it).
    configured: NodeId,
    configured_address: String,
    backoff: Backoff,
    /// When the next dial is due; `None` while a dial is in flight, the link is up, or no
    /// address is known yet.
    redial_at: Option<Instant>,
}

/// Route records and their timers; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Connector {
    own_id: NodeId,
    local: PeerData,
    policy: TopologyPolicy,
    backoff: BackoffConfig,
    lost_topology_timeout: Duration,
    rng: Rng,
    records: BTreeMap<NodeId, RouteRecord>,
    timers: TimerQueue<NodeId>,
    links: BTreeMap<NodeId, LinkState>,
    /// Peers whose discovery record was put while a dial to them was in flight: that dial
    /// may have started before the news (a replacement not listening yet), so its refusal
    /// says nothing about the news and is answered by one redial at once, not a backoff.
    /// At most the peers being dialled; an entry goes when the dial ends either way.
    news_while_dialing: BTreeSet<NodeId>,
    upstream: UpstreamKeeper,
    effects: VecDeque<Effect>,
    /// Reused by `handle_timeout` for the due keys.
    due: Vec<(NodeId, Instant)>,
}

impl Connector {
    /// A connector with no records. `rng` draws the reconnect jitter (fork it from the
    /// node's seeded generator). Call [`start`](Self::start) once the world is readable.
    #[must_use]
    pub fn new(config: ConnectorConfig, rng: Rng) -> Connector {
        Connector {
            own_id: config.own_id,
            local: config.local,
            policy: config.policy,
            backoff: config.backoff,
            lost_topology_timeout: config.lost_topology_timeout,
            rng,
            records: BTreeMap::new(),
            timers: TimerQueue::new(),
            links: BTreeMap::new(),
            news_while_dialing: BTreeSet::new(),
            upstream: UpstreamKeeper {
                id: config.upstream,
                configured: config.upstream,
                configured_address: config.upstream_address,
                backoff: Backoff::new(),
                redial_at: Some(Instant::ZERO),
            },
            effects: VecDeque::new(),
            due: Vec::new(),
        }
    }

    /// Starts keeping the upstream link: dials it now if its address is known. Call once
    /// after construction (the node does, in `Node::new`).
    pub fn start(&mut self, now: Instant, world: &World<'_>) {
        self.keep_upstream(now, world);
    }

    /// This node's id.
    #[must_use]
    pub const fn own_id(&self) -> NodeId {
        self.own_id
    }

    /// This node's current upstream ([`NodeId::NONE`] for a root).
    #[must_use]
    pub const fn upstream(&self) -> NodeId {
        self.upstream.id
    }

    /// The reconnect schedule in force.
    #[must_use]
    pub const fn backoff(&self) -> &BackoffConfig {
        &self.backoff
    }

    /// The next effect to apply, oldest first. Call until `None` after every connector call.
    pub fn pop_effect(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// Number of route records.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Entries of the connector's per-peer link tables: link states, news while dialling.
    pub(crate) fn link_table_sizes(&self) -> (usize, usize) {
        (self.links.len(), self.news_while_dialing.len())
    }

    /// Whether there is no route record.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// A snapshot of the record for `target`; `None` if there is none.
    #[must_use]
    pub fn view(&self, target: NodeId) -> Option<RouteView> {
        self.view_of(target)
    }

    /// The record `target`'s route goes through ([`RouteView::proxy`] without building the
    /// view); `None` for a direct route or no record.
    #[must_use]
    pub fn proxy_of(&self, target: NodeId) -> Option<NodeId> {
        self.records
            .get(&target)
            .and_then(|r| r.proxy.is_valid().then_some(r.proxy))
    }

    /// The targets whose routes go through `hop` ([`RouteView::proxy_for`] without building
    /// the view).
    #[must_use]
    pub fn proxied_by(&self, hop: NodeId) -> Vec<NodeId> {
        (self.records.get(&hop)).map_or_else(Vec::new, |r| r.proxy_for.iter().copied().collect())
    }

    fn view_of(&self, target: NodeId) -> Option<RouteView> {
        let r = self.records.get(&target)?;
        Some(RouteView {
            target,
            flags: r.flags,
            proxy: r.proxy.is_valid().then_some(r.proxy),
            proxy_for: r.proxy_for.iter().copied().collect(),
            retry_count: r.retry_count,
            next_reconnect: r.next_reconnect,
            lost_deadline: r.lost_deadline,
            timer: self.timers.deadline(target),
            endpoint: r.endpoint,
        })
    }

    /// Targets of all records, ascending.
    pub fn targets(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.records.keys().copied()
    }

    /// Number of armed record timers (at most one per record).
    #[must_use]
    pub fn timer_count(&self) -> usize {
        self.timers.len()
    }

    /// What the connector believes of the links to `peer`.
    #[must_use]
    pub fn link_state(&self, peer: NodeId) -> Option<LinkState> {
        self.links.get(&peer).copied()
    }

    /// Whether an endpoint is bound to the record of `target`.
    #[must_use]
    pub fn has_endpoint(&self, target: NodeId) -> bool {
        self.records.get(&target).is_some_and(|r| r.endpoint)
    }

    /// What a send to `target` asks, with one lookup of its record: `None` when no endpoint
    /// is bound to it (the route must be opened first), else `Some(`[`ready_hop`]`(target))`.
    ///
    /// [`ready_hop`]: Self::ready_hop
    #[must_use]
    #[inline]
    pub(crate) fn endpoint_hop(&self, target: NodeId) -> Option<Option<NodeId>> {
        let r = self.records.get(&target).filter(|r| r.endpoint)?;
        Some(if !r.has(RouteFlags::READY) {
            None
        } else if !r.proxy.is_valid() {
            Some(target)
        } else {
            // A chain of distinct records is shorter than the bound either way; a cycle ends
            // `None` either way.
            self.ready_hop(r.proxy)
        })
    }

    /// Whether `dst`'s route goes through `via` (its ready hop or its proxy): the only relay
    /// whose word about `dst` (gone, reachable again) a node believes.
    #[must_use]
    pub fn routes_through(&self, dst: NodeId, via: NodeId) -> bool {
        self.ready_hop(dst) == Some(via) || self.view(dst).is_some_and(|r| r.proxy == Some(via))
    }

    /// The directly linked peer that carries data for `target` now: `None` unless the
    /// record is `READY`. Follows the proxy chain (bounded) to the first direct record. The
    /// owner transmits on its link to that peer; if it has none, it reports
    /// [`on_send_failed`](Self::on_send_failed).
    #[must_use]
    pub fn ready_hop(&self, target: NodeId) -> Option<NodeId> {
        let mut id = target;
        for _ in 0..=self.records.len() {
            let r = self.records.get(&id)?;
            if !r.has(RouteFlags::READY) {
                return None;
            }
            if !r.proxy.is_valid() {
                return Some(id);
            }
            id = r.proxy;
        }
        None
    }

    /// Whether `target`'s route is failing: not ready, and its record (or a record on its
    /// proxy chain) has had a dial or its link fail since it was last ready (a reconnect is
    /// scheduled). A pick among servers prefers one whose route is not failing.
    #[must_use]
    pub fn is_failing(&self, target: NodeId) -> bool {
        if self.ready_hop(target).is_some() {
            return false;
        }
        let mut id = target;
        for _ in 0..=self.records.len() {
            let Some(r) = self.records.get(&id) else {
                return false;
            };
            if r.failed {
                return true;
            }
            if !r.proxy.is_valid() {
                return false;
            }
            id = r.proxy;
        }
        false
    }

    /// The earliest record timer or upstream redial; feed into the node's `poll_timeout`.
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        let redial = if self.upstream.id.is_valid() && !self.links.contains_key(&self.upstream.id) {
            self.upstream.redial_at
        } else {
            None
        };
        earliest(self.timers.next_deadline(), redial)
    }

    /// Drops every record, timer and link belief without reporting anything (node shutdown;
    /// the owner fails the queues itself).
    pub fn clear(&mut self) {
        self.records.clear();
        self.timers.clear();
        self.links.clear();
        self.news_while_dialing.clear();
        self.effects.clear();
        self.upstream.redial_at = None;
    }

    // ----- internal helpers shared by decide.rs and react.rs -----

    fn emit(&mut self, event: RouteEvent) {
        self.effects.push_back(Effect::Route(event));
    }

    fn link_up(&self, peer: NodeId) -> bool {
        self.links.get(&peer) == Some(&LinkState::Up)
    }

    /// The record for `id`, created passive if missing. A new record for a peer whose link is
    /// up starts `READY` (an existing ready link needs no reconnect).
    fn ensure_record(&mut self, id: NodeId) -> &mut RouteRecord {
        let up = self.link_up(id);
        self.records.entry(id).or_insert_with(|| {
            let mut r = RouteRecord::default();
            r.flags.set(RouteFlags::READY, up);
            r
        })
    }

    fn is_ready(&self, id: NodeId) -> bool {
        self.records
            .get(&id)
            .is_some_and(|r| r.has(RouteFlags::READY))
    }

    /// libatapp's `need_keep_handle`: active, or something routes through it.
    fn needed(r: &RouteRecord) -> bool {
        r.has(RouteFlags::ACTIVE) || r.endpoint || !r.proxy_for.is_empty()
    }

    /// libatapp's `need_timer`: lost, or unready without a live link.
    fn need_timer(&self, id: NodeId) -> bool {
        self.records.get(&id).is_some_and(|r| {
            r.has(RouteFlags::LOST_TOPOLOGY) || (!r.has(RouteFlags::READY) && !self.link_up(id))
        })
    }

    fn drop_timer_if_unneeded(&mut self, id: NodeId) {
        if !self.need_timer(id) {
            self.timers.cancel(id);
        }
    }

    /// Routes `target` through `proxy` (no-op when already so, or when `target == proxy`).
    fn bind(&mut self, target: NodeId, proxy: NodeId) {
        if target == proxy {
            return;
        }
        let old = match self.records.get(&target) {
            Some(r) if r.proxy == proxy => return,
            Some(r) => r.proxy,
            None => return,
        };
        if old.is_valid() {
            self.unbind(target);
        }
        if let Some(r) = self.records.get_mut(&target) {
            r.proxy = proxy;
            // A proxied record does not need its own address.
            r.flags.set(RouteFlags::WAIT_DISCOVERY, false);
        }
        self.ensure_record(proxy).proxy_for.insert(target);
    }

    /// Makes `target` direct again, releasing its proxy; a passive proxy left with nothing
    /// routed through it is dropped.
    fn unbind(&mut self, target: NodeId) {
        let Some(r) = self.records.get_mut(&target) else {
            return;
        };
        let proxy = core::mem::replace(&mut r.proxy, NodeId::NONE);
        if !proxy.is_valid() {
            return;
        }
        let drop_proxy = match self.records.get_mut(&proxy) {
            Some(p) => {
                p.proxy_for.remove(&target);
                !Self::needed(p)
            }
            None => false,
        };
        if drop_proxy {
            self.remove(proxy, FailReason::NoRoute);
        }
    }

    /// Sets `READY` on `id` and, transitively, on every record routed through it. Resets the
    /// retry count and backoff window of each record that becomes ready.
    fn set_ready(&mut self, id: NodeId) {
        let mut stack: Vec<NodeId> = Vec::new();
        stack.push(id);
        while let Some(id) = stack.pop() {
            let Some(r) = self.records.get_mut(&id) else {
                continue;
            };
            if r.has(RouteFlags::READY) {
                continue;
            }
            r.flags.set(RouteFlags::READY, true);
            r.retry_count = 0;
            r.failed = false;
            r.next_reconnect = None;
            let via = r.proxy.is_valid().then_some(r.proxy);
            let dependents: Vec<NodeId> = r.proxy_for.iter().copied().collect();
            self.emit(RouteEvent::Ready { target: id, via });
            // Dependents are pushed in reverse so they are readied in ascending order.
            for d in dependents.into_iter().rev() {
                if self.records.get(&d).is_some_and(|dr| dr.proxy == id) {
                    stack.push(d);
                } else if let Some(r) = self.records.get_mut(&id) {
                    r.proxy_for.remove(&d);
                }
            }
            self.drop_timer_if_unneeded(id);
        }
    }

    /// Clears `READY` on `id` and, transitively, on every record routed through it.
    fn set_unready(&mut self, id: NodeId) {
        let mut stack: Vec<NodeId> = Vec::new();
        stack.push(id);
        while let Some(id) = stack.pop() {
            let Some(r) = self.records.get_mut(&id) else {
                continue;
            };
            if !r.has(RouteFlags::READY) {
                continue;
            }
            r.flags.set(RouteFlags::READY, false);
            let dependents: Vec<NodeId> = r.proxy_for.iter().copied().collect();
            self.emit(RouteEvent::Unready { target: id });
            for d in dependents.into_iter().rev() {
                if self.records.get(&d).is_some_and(|dr| dr.proxy == id) {
                    stack.push(d);
                } else if let Some(r) = self.records.get_mut(&id) {
                    r.proxy_for.remove(&d);
                }
            }
        }
    }

    /// Sets `READY` on `target` if `source` is ready, else clears it.
    fn copy_readiness(&mut self, target: NodeId, source: NodeId) {
        if self.is_ready(source) {
            self.set_ready(target);
        } else {
            self.set_unready(target);
        }
    }

    /// Removes `id` and, transitively, every record routed through it (those with `NoRoute`);
    /// a passive proxy left unneeded goes too. Each removal cancels the record's timer and is
    /// reported as [`RouteEvent::Removed`] (after an `Unready` if it was ready).
    fn remove(&mut self, id: NodeId, reason: FailReason) {
        let mut work: Vec<(NodeId, FailReason)> = Vec::new();
        work.push((id, reason));
        while let Some((id, reason)) = work.pop() {
            let Some(r) = self.records.remove(&id) else {
                continue;
            };
            self.timers.cancel(id);
            if r.has(RouteFlags::READY) {
                self.emit(RouteEvent::Unready { target: id });
            }
            if r.proxy.is_valid()
                && let Some(p) = self.records.get_mut(&r.proxy)
            {
                p.proxy_for.remove(&id);
                if !Self::needed(p) {
                    work.push((r.proxy, FailReason::NoRoute));
                }
            }
            for &d in r.proxy_for.iter().rev() {
                let Some(dr) = self.records.get_mut(&d) else {
                    continue;
                };
                if dr.proxy != id {
                    continue;
                }
                dr.proxy = NodeId::NONE;
                if dr.has(RouteFlags::READY) {
                    dr.flags.set(RouteFlags::READY, false);
                    self.emit(RouteEvent::Unready { target: d });
                }
                work.push((d, FailReason::NoRoute));
            }
            self.emit(RouteEvent::Removed {
                target: id,
                reason,
                endpoint: r.endpoint,
            });
        }
    }

    /// libatapp's `setup_reconnect_timer`: counts one attempt and arms the timer for it, or
    /// removes the record (`NoRoute`) once `max_tries` attempts were made. Returns whether the
    /// record still exists.
    fn schedule_reconnect(&mut self, now: Instant, id: NodeId) -> bool {
        let Some(r) = self.records.get(&id) else {
            return false;
        };
        if self.backoff.exhausted(r.retry_count) {
            self.remove(id, FailReason::NoRoute);
            return false;
        }
        let delay = self.backoff.delay(r.retry_count, &mut self.rng);
        let at = now + delay;
        let r = self.records.get_mut(&id).expect("looked up above");
        r.retry_count = r.retry_count.saturating_add(1);
        r.next_reconnect = Some(at);
        let attempt = r.retry_count;
        self.timers.arm(id, at);
        self.emit(RouteEvent::ReconnectScheduled {
            target: id,
            attempt,
            at,
        });
        true
    }

    /// Schedules a reconnect for `id` unless it is inside its backoff window.
    fn schedule_reconnect_if_due(&mut self, now: Instant, id: NodeId) -> bool {
        match self.records.get(&id) {
            Some(r) if r.in_backoff(now) => true,
            Some(_) => self.schedule_reconnect(now, id),
            None => false,
        }
    }

    /// Marks `id` as waiting for its discovery record — peers only: never an upstream or
    /// downstream (their links are kept by the upstream keeper and the children), never a
    /// proxied record, never one whose link is up.
    fn set_waiting_discovery(&mut self, world: &World<'_>, id: NodeId) {
        use crate::topology::Relation;
        let relation = world.topology.relation(self.own_id, id);
        if matches!(
            relation,
            Relation::ImmediateUpstream
                | Relation::TransitiveUpstream
                | Relation::ImmediateDownstream
                | Relation::TransitiveDownstream
        ) || id == self.upstream.id
        {
            return;
        }
        let up = self.link_up(id);
        let Some(r) = self.records.get_mut(&id) else {
            return;
        };
        if r.proxy.is_valid() || up || r.has(RouteFlags::WAIT_DISCOVERY) {
            return;
        }
        r.flags.set(RouteFlags::WAIT_DISCOVERY, true);
        self.emit(RouteEvent::WaitingDiscovery { target: id });
    }
}
