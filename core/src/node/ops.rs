//! Commands (`send`, `shutdown`), registry input, timeouts, and applying the connector's
//! effects (dials, flushes, failed queues).

use bytes::Bytes;

use super::{Event, Node, OutSink, Output, RegistryEvent, RegistryIgnored, SendError, Target};
use crate::{
    connector::{Effect, RouteError, RouteEvent, World},
    discovery::{Applied, DiscoveryInfo, Filter, TopologyInfo},
    ids::{LinkId, MsgId, NodeId},
    outcome::{FailReason, Outcome},
    ring::FilterId,
    select,
    time::Instant,
    topology::PeerData,
    wire,
};

/// Largest payload a `Data` frame can carry with the default frame limit.
pub(super) const MAX_PAYLOAD_LEN: usize = wire::DEFAULT_MAX_FRAME - wire::HEADER_LEN - 29;

impl Node {
    /// Accepts a message for `target` and returns its id; its [`Output::Outcome`] follows
    /// (at once if the route is ready, else when it is flushed, times out, or its route is
    /// removed). A target of this node itself is delivered at once as [`Output::Received`].
    ///
    /// A message the target's queue cannot take (count or byte limit) is accepted and ends
    /// at once with `Failed(QueueFull)`.
    ///
    /// # Errors
    ///
    /// [`SendError`]: an invalid target (id 0, empty name), a name or filter no discovery
    /// record matches, no route at all (no direct path allowed, not in the tree, no
    /// upstream), an oversized payload, or a node that was shut down. Nothing is accepted.
    pub fn send(
        &mut self,
        now: Instant,
        target: Target<'_>,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        let now = self.advance(now);
        if self.shut_down {
            return Err(SendError::Shutdown);
        }
        if payload.len() > MAX_PAYLOAD_LEN {
            return Err(SendError::PayloadTooLarge {
                len: payload.len(),
                max: MAX_PAYLOAD_LEN,
            });
        }
        let id = self.resolve_target(target)?;
        if id == self.id {
            let msg = self.msg_ids.next_msg();
            self.out.push_back(Output::Received {
                from: self.id,
                via: self.id,
                msg_type,
                payload,
            });
            self.out.push_back(Output::Outcome {
                msg,
                outcome: Outcome::Delivered,
            });
            return Ok(msg);
        }
        let (key, existed) = match self.endpoints.find_by_id(id) {
            Some(key) => (key, true),
            None => {
                let name = self
                    .discovery
                    .get_by_id(id)
                    .map_or("", |info| info.name.as_str());
                let key = self
                    .endpoints
                    .get_or_create(id, name, now)
                    .map_err(|_| SendError::InvalidTarget)?;
                (key, false)
            }
        };
        if !self.connector.has_endpoint(id) {
            let world = World {
                topology: &self.topology,
                discovery: &self.discovery,
            };
            match self.connector.open_route(now, &world, id) {
                Ok(()) => {
                    self.endpoints.attach_handle(key);
                }
                Err(e) => {
                    if !existed {
                        let mut sink = OutSink(&mut self.out);
                        self.endpoints.remove(key, FailReason::NoRoute, &mut sink);
                    }
                    self.apply_effects();
                    return Err(match e {
                        RouteError::InvalidTarget => SendError::InvalidTarget,
                        _ => SendError::NoRoute,
                    });
                }
            }
            self.apply_effects();
        }
        let msg = self.msg_ids.next_msg();
        let link = if self.endpoints.goes_straight_out(key, payload.len()) {
            self.ready_link(id)
        } else {
            None
        };
        let mut sink = OutSink(&mut self.out);
        self.endpoints
            .send(key, msg, msg_type, payload, now, link, &mut sink);
        Ok(msg)
    }

    /// Resolves a target to the id of one node (not necessarily known to any registry when
    /// given by id).
    ///
    /// `Hash`, `RoundRobin` and `Random` pick over the discovery set's consistent-hash rings
    /// ([`crate::select`]): the default ring, or the filter's own ring, registered on first use
    /// (one filter pass over the default ring) and kept up to date incrementally after that.
    pub(super) fn resolve_target(&mut self, target: Target<'_>) -> Result<NodeId, SendError> {
        let filter_id = |node: &mut Node, filter: Option<&Filter>| -> Option<FilterId> {
            let filter = filter?;
            Some(match node.discovery.rings().filter_id(filter) {
                Some(id) => id,
                None => node.discovery.add_filter(filter.clone()),
            })
        };
        let chosen = match target {
            Target::Id(id) if id.is_valid() => return Ok(id),
            Target::Id(_) | Target::Name("") => return Err(SendError::InvalidTarget),
            Target::Name(name) => self
                .discovery
                .get_by_name(name)
                .map(|info| info.id)
                .filter(|id| id.is_valid()),
            Target::Hash { filter, key } => {
                let filter = filter_id(self, filter);
                select::by_hash(self.discovery.rings(), filter, key)
            }
            Target::RoundRobin { filter } => {
                let filter = filter_id(self, filter);
                self.selector.round_robin(self.discovery.rings(), filter)
            }
            Target::Random { filter } => {
                let filter = filter_id(self, filter);
                select::random(self.discovery.rings(), filter, &mut self.rng)
            }
        };
        chosen.ok_or(SendError::UnknownTarget)
    }

    /// The up link carrying data for `target` now, if its route is ready.
    fn ready_link(&self, target: NodeId) -> Option<LinkId> {
        self.connector
            .ready_hop(target)
            .and_then(|hop| self.links.link_to(hop))
    }

    /// Shuts the node down: every queued message ends `Failed(Shutdown)` and every
    /// unacknowledged one `Unknown(Shutdown)` (`Failed` if it provably never arrived), every
    /// link is closed ([`Output::Close`]), every record and timer is dropped. Later calls are no-ops and `send` returns
    /// [`SendError::Shutdown`]. Leaving the registry is the driver's part: it shuts its
    /// registry client down (`RegistryClient::shutdown` says `Bye`) or revokes its etcd lease.
    pub fn shutdown(&mut self, now: Instant) {
        self.advance(now);
        if self.shut_down {
            return;
        }
        self.shut_down = true;
        let mut sink = OutSink(&mut self.out);
        self.endpoints.give_up_all(FailReason::Shutdown, &mut sink);
        self.links.close_all(&mut self.out);
        self.connector.clear();
    }

    /// Handles everything due at `now` in one call: deadlines of unacknowledged messages
    /// first (a stream whose oldest message is due ends `Unknown(Timeout)` with everything in
    /// flight behind it that may have arrived — `NoRoute` instead of `Timeout` if a relay
    /// refused it since its last (re)transmission; of the messages that provably never
    /// arrived only the due ones end, `Failed`: [`EndpointTable::expire_unacked`]), then
    /// record timers (reconnects, lost deadlines, the upstream redial; a route ready again
    /// now retransmits only what is still alive), then queued message deadlines
    /// (`Failed(Timeout)`) and endpoint GC (`Failed(TargetGone)` for anything left), then
    /// retransmissions of streams whose oldest message waited `heartbeat_interval` for its
    /// ack, heartbeats (pings, dead links closed), then unfinished flushes. Spurious calls do
    /// nothing.
    ///
    /// [`EndpointTable::expire_unacked`]: crate::endpoint::EndpointTable::expire_unacked
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        // In-flight messages due now end before a route readied now could send them again.
        let mut sink = OutSink(&mut self.out);
        self.endpoints.expire_unacked(now, &mut sink);
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        self.connector.handle_timeout(now, &world);
        self.apply_effects();
        let mut sink = OutSink(&mut self.out);
        self.endpoints.handle_timeout(now, &mut sink);
        for dst in self.endpoints.due_retransmits(now) {
            match self.ready_link(dst) {
                Some(link) => {
                    let mut sink = OutSink(&mut self.out);
                    self.endpoints.retransmit(dst, link, now, &mut sink);
                }
                None => self.endpoints.touch(dst, now),
            }
        }
        self.beat(now);
        for target in self.endpoints.due_flushes(now) {
            self.flush_target(target);
        }
    }

    /// Applies a registry event: discovery changes go to the discovery set (revision-gated),
    /// topology changes to the topology registry (revision-gated per node; cycles and other
    /// invalid records are rejected with the registry unchanged), and the connector reacts to
    /// what actually changed. Ignored events are reported as [`Event::RegistryIgnored`].
    pub fn handle_registry(&mut self, now: Instant, event: RegistryEvent) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        match event {
            RegistryEvent::DiscoveryPut(info) => self.discovery_put(now, info),
            RegistryEvent::DiscoveryDelete { id, name, revision } => {
                let applied = self.discovery.remove(id, &name, revision);
                match applied {
                    Applied::Removed(info) => self.discovery_gone(now, info.id),
                    _ => self.ignored(RegistryIgnored::Discovery { id }),
                }
            }
            RegistryEvent::TopologyPut(info) => self.topology_put(now, info),
            RegistryEvent::TopologyDelete { id, revision } => {
                self.topology_delete(now, id, revision);
            }
        }
    }

    fn ignored(&mut self, reason: RegistryIgnored) {
        self.out
            .push_back(Output::Event(Event::RegistryIgnored(reason)));
    }

    fn discovery_put(&mut self, now: Instant, info: DiscoveryInfo) {
        let id = info.id;
        match self.discovery.put(info) {
            Applied::Added { id, displaced, .. } => {
                if let Some(d) = displaced {
                    self.discovery_gone(now, d.id);
                }
                self.discovery_arrived(now, id);
            }
            Applied::Updated { id, displaced, .. } => {
                if let Some(d) = displaced {
                    self.discovery_gone(now, d.id);
                }
                self.discovery_arrived(now, id);
            }
            _ => self.ignored(RegistryIgnored::Discovery { id }),
        }
    }

    fn discovery_arrived(&mut self, now: Instant, id: NodeId) {
        if !id.is_valid() {
            return;
        }
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        self.connector.on_discovery_put(now, &world, id);
        self.apply_effects();
    }

    fn discovery_gone(&mut self, now: Instant, id: NodeId) {
        if !id.is_valid() {
            return;
        }
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        self.connector.on_discovery_delete(now, &world, id);
        self.apply_effects();
    }

    /// Whether a topology event at `revision` for `id` is older than what was applied
    /// (revision 0 means "not from a registry" and is never stale). Records the revision when
    /// it is not.
    fn topology_stale(&mut self, id: NodeId, revision: u64) -> bool {
        if revision == 0 {
            return false;
        }
        match self.topology_revisions.get(&id) {
            Some(&held) if held > revision => {
                self.ignored(RegistryIgnored::StaleTopology { id, revision, held });
                true
            }
            _ => {
                self.topology_revisions.insert(id, revision);
                false
            }
        }
    }

    fn topology_put(&mut self, now: Instant, info: TopologyInfo) {
        let id = info.id;
        if self.topology_stale(id, info.revision) {
            return;
        }
        let data = PeerData {
            hostname: info.hostname,
            pid: i64::from(info.pid),
            labels: info.data.label,
        };
        match self.topology.update_peer(id, info.upstream_id, data) {
            Ok(change) => {
                if change.is_noop() {
                    return;
                }
                let world = World {
                    topology: &self.topology,
                    discovery: &self.discovery,
                };
                self.connector.on_topology_put(now, &world, id, &change);
                self.apply_effects();
            }
            Err(e) => self.ignored(RegistryIgnored::Topology(e)),
        }
    }

    fn topology_delete(&mut self, now: Instant, id: NodeId, revision: u64) {
        if id == self.id {
            self.ignored(RegistryIgnored::OwnTopologyDelete);
            return;
        }
        if self.topology_stale(id, revision) {
            return;
        }
        match self.topology.remove_peer(id) {
            Ok(_) => {
                let world = World {
                    topology: &self.topology,
                    discovery: &self.discovery,
                };
                self.connector.on_topology_delete(now, &world, id);
                self.apply_effects();
            }
            Err(e) => self.ignored(RegistryIgnored::Topology(e)),
        }
    }

    /// Applies every pending connector effect, in order (applying one may produce more).
    pub(super) fn apply_effects(&mut self) {
        while let Some(effect) = self.connector.pop_effect() {
            match effect {
                Effect::Dial { peer, addr } => {
                    self.links.dial(peer, addr, &mut self.out);
                }
                Effect::Disconnect { peer } => self.links.close_peer(peer, &mut self.out),
                Effect::Route(event) => {
                    self.out.push_back(Output::Event(Event::Route(event)));
                    match event {
                        RouteEvent::Ready { target, .. } => self.flush_target(target),
                        RouteEvent::Removed {
                            target,
                            reason,
                            endpoint: true,
                        } => self.route_removed(target, reason),
                        _ => {}
                    }
                }
            }
        }
    }

    /// The route record serving `target`'s endpoint is gone: its outbox gives up (queued
    /// messages `Failed(reason)`, unacknowledged ones `Unknown(reason)` — `Failed(reason)`
    /// from the first that provably never arrived), and the endpoint releases its handle (it
    /// is collected after `endpoint_gc_timeout`).
    fn route_removed(&mut self, target: NodeId, reason: FailReason) {
        let mut sink = OutSink(&mut self.out);
        self.endpoints.give_up(target, reason, &mut sink);
        if let Some(key) = self.endpoints.find_by_id(target) {
            self.endpoints.detach_handle(key, self.now);
        }
    }

    /// On a ready route: retransmits `target`'s unacknowledged messages, then hands its
    /// queued messages to the route, in order, at most `flush_batch` of them (each stays in
    /// flight until acknowledged); the rest continue at the next `handle_timeout`.
    pub(super) fn flush_target(&mut self, target: NodeId) {
        let link = self
            .endpoints
            .has_outgoing(target)
            .then(|| self.ready_link(target))
            .flatten();
        let Some(link) = link else {
            self.endpoints.cancel_flush(target);
            return;
        };
        let (now, budget) = (self.now, self.config.flush_budget());
        let mut sink = OutSink(&mut self.out);
        self.endpoints
            .flush_outbox(target, link, now, budget, &mut sink);
    }
}
