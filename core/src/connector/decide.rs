//! The routing decision (`try_connect`) and the direct reconnect built on it.

use alloc::{string::String, vec::Vec};

use super::{Connector, Effect, LinkState, RouteError, RouteFlags, World};
use crate::{
    discovery::DiscoveryInfo,
    ids::NodeId,
    time::Instant,
    topology::{PeerData, Relation},
};

/// How a `try_connect` call may route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Mode {
    /// Relay through our own upstream (and skip policy-denied candidates) when no direct
    /// path works: first connects and topology recomputes of active records.
    pub(super) allow_proxy: bool,
    /// Called from the record's own timer, which already scheduled this attempt: dial the
    /// target even though its backoff window was just opened.
    pub(super) from_timer: bool,
}

/// Outcome of the peer-path step.
enum PeerPath {
    /// The record is bound (and dialled, or waiting).
    Done,
    /// No candidate could be used: fall through to the tree relations.
    TryNext,
}

impl Connector {
    /// Opens (or re-uses) the route record for `target` on behalf of a send: binds its
    /// endpoint, marks it `ACTIVE` and runs the routing decision if the record is new or was
    /// only a proxy hop until now. Effects (a dial, `Ready`) follow in
    /// [`pop_effect`](Self::pop_effect).
    ///
    /// # Errors
    ///
    /// [`RouteError::InvalidTarget`] for node 0 or this node; [`RouteError::NoRoute`] when the
    /// decision finds no way at all (no direct path, not in the tree, no upstream). On error
    /// no record is left behind that was not there before.
    pub fn open_route(
        &mut self,
        now: Instant,
        world: &World<'_>,
        target: NodeId,
    ) -> Result<(), RouteError> {
        if !target.is_valid() || target == self.own_id {
            return Err(RouteError::InvalidTarget);
        }
        let existed = self.records.contains_key(&target);
        let mut had_endpoint = false;
        if existed {
            let r = self.records.get_mut(&target).expect("checked above");
            had_endpoint = r.endpoint;
            r.endpoint = true;
            if r.has(RouteFlags::ACTIVE) {
                return Ok(());
            }
        }
        let mode = Mode {
            allow_proxy: true,
            from_timer: false,
        };
        match self.try_connect(now, world, target, mode) {
            Ok(()) => {
                let r = self.ensure_record(target);
                r.flags.set(RouteFlags::ACTIVE, true);
                r.endpoint = true;
                Ok(())
            }
            Err(e) => {
                if existed {
                    // A hop record that stays a hop: the refused send must not leave it
                    // claiming an endpoint the owner never bound.
                    if let Some(r) = self.records.get_mut(&target) {
                        r.endpoint = had_endpoint;
                    }
                } else {
                    self.discard_new(target);
                }
                Err(e)
            }
        }
    }

    /// Drops a record that a failed decision may have created, without reporting a removal
    /// of a route that never existed.
    fn discard_new(&mut self, target: NodeId) {
        let Some(r) = self.records.get(&target) else {
            return;
        };
        if !r.proxy_for.is_empty() {
            return;
        }
        self.unbind(target);
        self.records.remove(&target);
        self.timers.cancel(target);
    }

    /// The routing decision for `target` (libatapp's `try_connect_to`); see the module docs
    /// for the order. Creates and binds records as needed and may emit a dial.
    pub(super) fn try_connect(
        &mut self,
        now: Instant,
        world: &World<'_>,
        target: NodeId,
        mode: Mode,
    ) -> Result<(), RouteError> {
        if !target.is_valid() || target == self.own_id {
            return Err(RouteError::InvalidTarget);
        }
        // 0. An existing link: our upstream, or a link (connecting or up) to the target.
        if target == self.upstream.id || self.links.contains_key(&target) {
            self.ensure_record(target);
            self.unbind(target);
            if self.link_up(target) {
                self.set_ready(target);
            } else {
                self.set_unready(target);
            }
            return Ok(());
        }
        let route = world.topology.route(self.own_id, target);
        // 1. The peer path.
        if self.policy.direct_path_allowed(route.relation) {
            match self.peer_path(now, world, target, route.relation, mode)? {
                PeerPath::Done => return Ok(()),
                PeerPath::TryNext => {}
            }
        }
        // 2. Up or down the tree: through the next hop, whose link someone else keeps.
        if matches!(
            route.relation,
            Relation::ImmediateUpstream
                | Relation::TransitiveUpstream
                | Relation::ImmediateDownstream
                | Relation::TransitiveDownstream
        ) && let Some(hop) = route.next_hop
        {
            self.bind_through(target, hop);
            return Ok(());
        }
        // A target neither registry knows: wait for one of its records rather than relay
        // blindly (it may not exist at all). The record's timer bounds the wait.
        if route.relation == Relation::Invalid && world.discovery.get_by_id(target).is_none() {
            self.ensure_record(target);
            self.unbind(target);
            self.set_unready(target);
            self.set_waiting_discovery(world, target);
            self.schedule_reconnect_if_due(now, target);
            return Ok(());
        }
        if !mode.allow_proxy {
            return Err(RouteError::NoRoute);
        }
        // 3. Relay through our own upstream.
        let upstream = self.upstream.id;
        if !upstream.is_valid() {
            return Err(RouteError::NoRoute);
        }
        self.bind_through(target, upstream);
        Ok(())
    }

    /// Binds `target` to `hop` and sets its readiness from the hop's link.
    fn bind_through(&mut self, target: NodeId, hop: NodeId) {
        self.ensure_record(target);
        if hop == target {
            self.unbind(target);
        } else {
            self.ensure_record(hop);
            if self.link_up(hop) {
                self.set_ready(hop);
            }
            self.bind(target, hop);
        }
        if self.link_up(hop) {
            self.set_ready(target);
        } else {
            self.set_unready(target);
        }
    }

    /// Step 1 of the decision: the target, then each node up its chain, as direct-link
    /// candidates.
    fn peer_path(
        &mut self,
        now: Instant,
        world: &World<'_>,
        target: NodeId,
        relation: Relation,
        mode: Mode,
    ) -> Result<PeerPath, RouteError> {
        let mut candidates: Vec<NodeId> = Vec::new();
        candidates.push(target);
        if relation != Relation::Invalid {
            candidates.extend(world.topology.upstream_chain(target));
        }
        let default_data = PeerData::default();
        let mut chosen: Option<(NodeId, String)> = None;
        for candidate in candidates {
            if candidate == self.own_id {
                continue;
            }
            let data = world
                .topology
                .get(candidate)
                .map_or(&default_data, |p| p.data());
            if self.policy.check_policy(&self.local, data).is_err() {
                if mode.allow_proxy {
                    continue;
                }
                return Err(RouteError::TopologyDenied);
            }
            // A candidate with a link (connecting or up): use it.
            if self.links.contains_key(&candidate) {
                self.bind_candidate(now, target, candidate);
                return Ok(PeerPath::Done);
            }
            let Some(info) = world.discovery.get_by_id(candidate) else {
                // No address yet: bind and wait for its discovery record.
                self.bind_candidate(now, target, candidate);
                self.set_waiting_discovery(world, candidate);
                return Ok(PeerPath::Done);
            };
            if let Some(addr) = self.select_address(info) {
                chosen = Some((candidate, addr));
                break;
            }
        }
        let Some((candidate, addr)) = chosen else {
            return Ok(PeerPath::TryNext);
        };
        self.ensure_record(target);
        self.ensure_record(candidate);
        if candidate == target {
            self.unbind(target);
        } else {
            self.bind(target, candidate);
        }
        if self.path_ready(target, candidate) {
            self.set_ready(target);
            return Ok(PeerPath::Done);
        }
        self.set_unready(target);
        let scheduled_by_timer = mode.from_timer && candidate == target;
        if !scheduled_by_timer {
            if self
                .records
                .get(&candidate)
                .is_some_and(|r| r.in_backoff(now))
            {
                return Ok(PeerPath::Done);
            }
            if !self.schedule_reconnect(now, candidate) {
                return Ok(PeerPath::Done);
            }
        }
        self.dial(candidate, addr);
        Ok(PeerPath::Done)
    }

    /// Binds `target` to an existing `candidate` record (created if needed), copies its
    /// readiness and, if it is unready and outside its backoff window, schedules its
    /// reconnect.
    fn bind_candidate(&mut self, now: Instant, target: NodeId, candidate: NodeId) {
        self.ensure_record(target);
        self.ensure_record(candidate);
        if candidate == target {
            self.unbind(target);
        } else {
            self.bind(target, candidate);
        }
        if self.path_ready(target, candidate) {
            self.set_ready(target);
        } else {
            self.set_unready(target);
            self.schedule_reconnect_if_due(now, candidate);
        }
    }

    /// Whether `target` routed through `via` can carry data now: its own link when direct
    /// (a `READY` left over from a previous proxy does not count), else the hop's flag.
    fn path_ready(&self, target: NodeId, via: NodeId) -> bool {
        if via == target {
            self.link_up(target)
        } else {
            self.is_ready(via)
        }
    }

    /// Emits a dial and counts the peer as connecting.
    pub(super) fn dial(&mut self, peer: NodeId, addr: String) {
        self.links.insert(peer, LinkState::Connecting);
        self.effects.push_back(Effect::Dial { peer, addr });
    }

    /// The address to dial a node at: the first gateway whose host/label constraints match
    /// this node, else the first listen address. Empty addresses are skipped. (Namespace
    /// matching and address classes arrive with the adapters; a gateway constrained by
    /// namespace is skipped.)
    pub(super) fn select_address(&self, info: &DiscoveryInfo) -> Option<String> {
        let gateway = info.gateways.iter().find(|g| {
            !g.address.is_empty()
                && g.match_namespaces.is_empty()
                && (g.match_hosts.is_empty() || g.match_hosts.contains(&self.local.hostname))
                && g.match_labels
                    .iter()
                    .all(|(k, v)| self.local.labels.get(k) == Some(v))
        });
        if let Some(g) = gateway {
            return Some(g.address.clone());
        }
        info.listen.iter().find(|a| !a.is_empty()).cloned()
    }

    /// libatapp's `try_direct_reconnect`: re-dials a peer record. A no-op for a ready, lost,
    /// proxied or waiting record and for tree relations; a peer without discovery starts
    /// waiting. `from_timer` says the record's timer already scheduled this attempt.
    ///
    /// # Errors
    ///
    /// What [`try_connect`](Self::try_connect) returns without relaying: `NoRoute` when no
    /// direct address works (the timer keeps counting attempts), `TopologyDenied` when the
    /// policy forbids the direct link.
    pub(super) fn try_direct_reconnect(
        &mut self,
        now: Instant,
        world: &World<'_>,
        id: NodeId,
        from_timer: bool,
    ) -> Result<(), RouteError> {
        let Some(r) = self.records.get(&id) else {
            return Ok(());
        };
        if r.has(RouteFlags::READY)
            || r.has(RouteFlags::LOST_TOPOLOGY)
            || r.has(RouteFlags::WAIT_DISCOVERY)
            || r.proxy.is_valid()
        {
            return Ok(());
        }
        let relation = world.topology.relation(self.own_id, id);
        if matches!(
            relation,
            Relation::ImmediateUpstream
                | Relation::TransitiveUpstream
                | Relation::ImmediateDownstream
                | Relation::TransitiveDownstream
        ) || id == self.upstream.id
        {
            return Ok(());
        }
        if world.discovery.get_by_id(id).is_none() {
            self.set_waiting_discovery(world, id);
            return Ok(());
        }
        let mode = Mode {
            allow_proxy: false,
            from_timer,
        };
        self.try_connect(now, world, id, mode)
    }
}
