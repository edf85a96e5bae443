//! Reactions: topology and discovery events, link state changes, send failures, timers and
//! the upstream keeper.

use alloc::string::String;

use super::{Connector, LinkState, RouteError, RouteEvent, RouteFlags, World, decide::Mode};
use crate::{
    backoff::BackoffConfig,
    ids::NodeId,
    outcome::FailReason,
    time::Instant,
    topology::{PeerChange, Relation},
};

impl Connector {
    /// Reacts to an applied topology put for `id` (call after
    /// [`TopologyRegistry::update_peer`](crate::topology::TopologyRegistry::update_peer)
    /// succeeded, with its report).
    ///
    /// For this node itself, an upstream change switches the upstream link and re-routes the
    /// records that went through the old one. For a target with a record: clears
    /// `LOST_TOPOLOGY` (and its timer if no longer needed); without an upstream switch it only
    /// retries a direct reconnect. On a switch the retry count resets and the record keeps a
    /// proxy that is still on the target's new path; otherwise it is re-bound: to its direct
    /// link if up, to the new upstream's record if one exists (seamless when that one is
    /// ready), to nothing while a peer that may link directly lacks its discovery record
    /// (`WAIT_DISCOVERY`), else by the
    /// routing decision (relaying only for active records), arming its reconnect timer if it
    /// stays unready.
    ///
    /// A node whose place in the tree changed (created, promoted from passive, or moved) may
    /// open a path to the nodes below it: every active, unready record of a node below `id`
    /// runs the routing decision again at once, instead of waiting for its reconnect timer
    /// (a leaf's records can arrive before its proxy's).
    pub fn on_topology_put(
        &mut self,
        now: Instant,
        world: &World<'_>,
        id: NodeId,
        change: &PeerChange,
    ) {
        if id == self.own_id {
            let new_up = world.topology.upstream_of(id).unwrap_or(NodeId::NONE);
            if new_up != self.upstream.id {
                self.switch_upstream(now, world, new_up);
            }
            return;
        }
        self.topology_put_record(now, world, id, change);
        if change.upstream_changed.is_some() || change.created || change.promoted {
            self.reroute_below(now, world, id);
        }
    }

    /// Runs the routing decision again for every active, unready record of a node below
    /// `id` in the tree (ascending id).
    fn reroute_below(&mut self, now: Instant, world: &World<'_>, id: NodeId) {
        let stuck: alloc::vec::Vec<NodeId> = self
            .records
            .iter()
            .filter(|&(&target, r)| {
                target != id
                    && r.has(RouteFlags::ACTIVE)
                    && !r.has(RouteFlags::READY)
                    && !r.has(RouteFlags::LOST_TOPOLOGY)
                    && world.topology.upstream_chain(target).any(|up| up == id)
            })
            .map(|(&target, _)| target)
            .collect();
        for target in stuck {
            if self.records.contains_key(&target) && !self.is_ready(target) {
                self.recompute(now, world, target);
            }
        }
    }

    /// [`on_topology_put`](Self::on_topology_put) for `id`'s own record.
    fn topology_put_record(
        &mut self,
        now: Instant,
        world: &World<'_>,
        id: NodeId,
        change: &PeerChange,
    ) {
        let Some(r) = self.records.get_mut(&id) else {
            return;
        };
        r.flags.set(RouteFlags::LOST_TOPOLOGY, false);
        r.lost_deadline = None;
        let proxy = r.proxy;
        self.drop_timer_if_unneeded(id);
        let new_up = world.topology.upstream_of(id).unwrap_or(NodeId::NONE);
        let switched = change.upstream_changed.is_some() || change.created || change.promoted;
        if !switched || (proxy.is_valid() && proxy == new_up) {
            // A data change (host, pid, labels) may make the policy refuse the direct path.
            if self.try_direct_reconnect(now, world, id, false) == Err(RouteError::TopologyDenied) {
                self.direct_denied(now, world, id);
            }
            return;
        }
        if let Some(r) = self.records.get_mut(&id) {
            r.retry_count = 0;
            r.failed = false;
            r.next_reconnect = None;
        }
        if proxy.is_valid()
            && (world.topology.upstream_chain(id).any(|up| up == proxy)
                || world.topology.next_hop(self.own_id, id) == Some(proxy))
        {
            return;
        }
        self.unbind(id);
        if self.link_up(id) {
            self.set_ready(id);
            return;
        }
        if !self.records.get(&id).is_some_and(Self::needed) {
            self.remove(id, FailReason::NoRoute);
            return;
        }
        if new_up.is_valid() && new_up != self.own_id && self.records.contains_key(&new_up) {
            self.bind(id, new_up);
            self.copy_readiness(id, new_up);
            return;
        }
        let relation = world.topology.relation(self.own_id, id);
        let direct_allowed = self.policy.direct_path_allowed(relation);
        if direct_allowed
            && self
                .records
                .get(&id)
                .is_some_and(|r| r.has(RouteFlags::WAIT_DISCOVERY))
        {
            self.set_unready(id);
            return;
        }
        if direct_allowed && world.discovery.get_by_id(id).is_none() {
            self.set_waiting_discovery(world, id);
            if self
                .records
                .get(&id)
                .is_some_and(|r| r.has(RouteFlags::WAIT_DISCOVERY))
            {
                self.set_unready(id);
                return;
            }
        }
        self.recompute(now, world, id);
    }

    /// Runs the routing decision again for `id` (relaying only if it is active) and arms its
    /// reconnect timer if it is still unready; removes it if no route is left.
    fn recompute(&mut self, now: Instant, world: &World<'_>, id: NodeId) {
        let active = self
            .records
            .get(&id)
            .is_some_and(|r| r.has(RouteFlags::ACTIVE));
        let mode = Mode {
            allow_proxy: active,
            from_timer: false,
        };
        match self.try_connect(now, world, id, mode) {
            Ok(()) => {}
            // No way for now: unready (a proxy it lost may have left READY behind); the timer
            // below keeps counting its attempts.
            Err(RouteError::NoRoute) => self.set_unready(id),
            Err(_) => {
                self.remove(id, FailReason::NoRoute);
                return;
            }
        }
        if self.records.contains_key(&id) && !self.is_ready(id) {
            self.schedule_reconnect_if_due(now, id);
        }
    }

    /// Our own upstream changed to `new_up`: keep the new link, re-route every record that
    /// went through the old upstream (libatapp removes them, failing their messages later;
    /// re-routing keeps their queues), and disconnect the old upstream if nothing needs it.
    fn switch_upstream(&mut self, now: Instant, world: &World<'_>, new_up: NodeId) {
        let old = self.upstream.id;
        self.upstream.id = new_up;
        self.upstream.backoff.reset();
        self.upstream.redial_at = Some(now);
        if let Some(old_record) = self.records.get(&old) {
            let dependents: alloc::vec::Vec<NodeId> =
                old_record.proxy_for.iter().copied().collect();
            for d in dependents {
                if self.records.get(&d).is_none_or(|r| r.proxy != old) {
                    continue;
                }
                if let Some(r) = self.records.get_mut(&d) {
                    r.retry_count = 0;
                    r.failed = false;
                    r.next_reconnect = None;
                }
                self.unbind(d);
                if self.records.contains_key(&d) {
                    self.recompute(now, world, d);
                }
            }
            if self.records.get(&old).is_some_and(Self::needed) {
                self.recompute(now, world, old);
            }
        }
        self.release_old_upstream(world, old, new_up);
        self.keep_upstream(now, world);
    }

    /// Disconnects the former upstream once nothing needs it: no record targets it or routes
    /// through it, and it is not (now) our child, whose link it would be.
    fn release_old_upstream(&mut self, world: &World<'_>, old: NodeId, new_up: NodeId) {
        if !old.is_valid() || old == new_up || !self.links.contains_key(&old) {
            return;
        }
        if self.records.get(&old).is_some_and(Self::needed) {
            return;
        }
        if matches!(
            world.topology.relation(self.own_id, old),
            Relation::ImmediateDownstream | Relation::TransitiveDownstream
        ) {
            return;
        }
        if self.records.contains_key(&old) {
            self.remove(old, FailReason::NoRoute);
        }
        self.links.remove(&old);
        self.effects
            .push_back(super::Effect::Disconnect { peer: old });
    }

    /// Reacts to an applied topology delete of `id`: its record becomes `LOST_TOPOLOGY` with
    /// deadline `now + lost_topology_timeout` (timer armed, earliest wins). A delete of this
    /// node itself is ignored (a node never removes itself).
    pub fn on_topology_delete(&mut self, now: Instant, _world: &World<'_>, id: NodeId) {
        if id == self.own_id {
            return;
        }
        let Some(r) = self.records.get_mut(&id) else {
            return;
        };
        if r.has(RouteFlags::LOST_TOPOLOGY) {
            return;
        }
        let deadline = now + self.lost_topology_timeout;
        r.flags.set(RouteFlags::LOST_TOPOLOGY, true);
        r.lost_deadline = Some(deadline);
        self.timers.arm(id, deadline);
        self.emit(RouteEvent::TopologyLost {
            target: id,
            deadline,
        });
    }

    /// Reacts to an applied discovery put for `id` — news: a (new) address or incarnation.
    /// Resets its record's retry count and backoff window and retries at once: a record
    /// waiting for discovery clears the wait and runs the routing decision again (dialling a
    /// peer; relaying an active record that may not link directly); an unready direct record
    /// with no link is dialled now; a proxied record left unready by a failed hand-off
    /// follows its ready proxy again — unless the record is lost. The upstream, when it has
    /// no link, is dialled now with its backoff reset.
    pub fn on_discovery_put(&mut self, now: Instant, world: &World<'_>, id: NodeId) {
        if self.links.get(&id) == Some(&LinkState::Connecting) {
            self.news_while_dialing.insert(id);
        }
        if id == self.upstream.id && !self.links.contains_key(&id) {
            self.upstream.backoff.reset();
            self.upstream.redial_at = Some(now);
            self.keep_upstream(now, world);
        }
        let Some(r) = self.records.get_mut(&id) else {
            return;
        };
        r.retry_count = 0;
        r.failed = false;
        r.next_reconnect = None;
        if !r.has(RouteFlags::WAIT_DISCOVERY) {
            self.retry_on_news(now, world, id);
            return;
        }
        r.flags.set(RouteFlags::WAIT_DISCOVERY, false);
        if r.has(RouteFlags::LOST_TOPOLOGY) || r.proxy.is_valid() {
            // Lost: its path may be wrong until topology returns (libatapp); proxied: its
            // readiness follows the proxy.
            return;
        }
        self.recompute(now, world, id);
    }

    /// [`on_discovery_put`](Self::on_discovery_put) for a record not waiting for discovery.
    fn retry_on_news(&mut self, now: Instant, world: &World<'_>, id: NodeId) {
        let Some(r) = self.records.get(&id) else {
            return;
        };
        if r.has(RouteFlags::READY) || r.has(RouteFlags::LOST_TOPOLOGY) {
            return;
        }
        if r.proxy.is_valid() {
            if self.is_ready(r.proxy) {
                self.set_ready(id);
            }
            return;
        }
        if self.links.contains_key(&id) {
            return;
        }
        if self.try_direct_reconnect(now, world, id, true) == Err(RouteError::TopologyDenied) {
            self.direct_denied(now, world, id);
        }
    }

    /// Whether this node may hold a link to `peer` of its own accord: its upstream, a child,
    /// or a peer the direct-link policy allows for their relation (a probe must not open a
    /// link the routing would refuse).
    #[must_use]
    pub fn may_link(&self, world: &World<'_>, peer: NodeId) -> bool {
        let relation = world.topology.relation(self.own_id, peer);
        if peer == self.upstream.id
            || matches!(
                relation,
                Relation::ImmediateUpstream | Relation::ImmediateDownstream
            )
        {
            return true;
        }
        let default_data = crate::topology::PeerData::default();
        let data = world.topology.get(peer).map_or(&default_data, |p| p.data());
        self.policy.direct_path_allowed(relation)
            && self.policy.check_policy(&self.local, data).is_ok()
    }

    /// Where to probe the suspect `peer` (a dial that is evidence if it fails): its address
    /// ([`address_of`](Self::address_of)) if this node [`may_link`](Self::may_link) to it.
    #[must_use]
    pub fn probe_address(&self, world: &World<'_>, peer: NodeId) -> Option<String> {
        self.may_link(world, peer)
            .then(|| self.address_of(world, peer))
            .flatten()
    }

    /// The address `peer` is dialled at: the configured upstream address for the configured
    /// upstream, else the one its discovery record offers this node (`None` without one).
    #[must_use]
    pub fn address_of(&self, world: &World<'_>, peer: NodeId) -> Option<String> {
        if peer == self.upstream.configured && !self.upstream.configured_address.is_empty() {
            return Some(self.upstream.configured_address.clone());
        }
        world
            .discovery
            .get_by_id(peer)
            .and_then(|info| self.select_address(info))
    }

    /// Reacts to an applied discovery delete of `id`: its record waits for discovery — only
    /// if it is a peer, not proxied and its link is not up.
    pub fn on_discovery_delete(&mut self, _now: Instant, world: &World<'_>, id: NodeId) {
        if self.records.contains_key(&id) {
            self.set_waiting_discovery(world, id);
        }
    }

    /// A light client's record was deleted (it left): its record goes at once
    /// ([`RouteEvent::Removed`] with `TargetGone`), nothing waits for it to come back.
    pub fn on_client_left(&mut self, id: NodeId) {
        if id != self.own_id && self.records.contains_key(&id) {
            self.remove(id, FailReason::TargetGone);
        }
    }

    /// Reports what the links to `peer` are now: `Some(Up)` once a link finished its
    /// handshake, `Some(Connecting)` while only dials are in flight, `None` when no link is
    /// left (closed, or the dial failed). Repeating the current state is a no-op.
    ///
    /// Up: the peer's record becomes direct and `READY` (cascading to everything routed
    /// through it); the upstream keeper resets its backoff. Down: a lost record past its
    /// deadline is removed (`TargetGone`); otherwise the record loses `READY` at once
    /// (cascading), a passive record nothing needs is dropped, and the reconnect timer is
    /// armed unless the record is inside its backoff window; the upstream keeper schedules a
    /// redial.
    pub fn set_link_state(
        &mut self,
        now: Instant,
        world: &World<'_>,
        peer: NodeId,
        state: Option<LinkState>,
    ) {
        if !peer.is_valid() || peer == self.own_id {
            return;
        }
        let old = self.links.get(&peer).copied();
        if old == state {
            return;
        }
        match state {
            Some(s) => {
                self.links.insert(peer, s);
            }
            None => {
                self.links.remove(&peer);
            }
        }
        let news_during_dial =
            state != Some(LinkState::Connecting) && self.news_while_dialing.remove(&peer);
        match (old, state) {
            (_, Some(LinkState::Up)) => self.on_link_up(peer),
            (Some(LinkState::Up), _) => self.on_link_lost(now, world, peer, true),
            (Some(LinkState::Connecting), None) => {
                self.on_link_lost(now, world, peer, false);
                if news_during_dial {
                    self.news_outlived_dial(now, world, peer);
                }
            }
            _ => {}
        }
    }

    /// A dial to `peer` failed that was in flight when its discovery record was put: it may
    /// have been refused before the news was true (a replacement under the same id that
    /// was not listening yet when the dial left), so the news still stands. The upstream
    /// keeper and `peer`'s record redial at once with their backoff reset, as on the news
    /// itself; a refusal of that redial backs off as usual.
    fn news_outlived_dial(&mut self, now: Instant, world: &World<'_>, peer: NodeId) {
        if peer == self.upstream.id && !self.links.contains_key(&peer) {
            self.upstream.backoff.reset();
            self.upstream.redial_at = Some(now);
            self.keep_upstream(now, world);
        }
        if self
            .records
            .get(&peer)
            .is_some_and(|r| !r.has(RouteFlags::WAIT_DISCOVERY))
        {
            self.retry_now(now, world, peer);
        }
    }

    fn on_link_up(&mut self, peer: NodeId) {
        if peer == self.upstream.id {
            self.upstream.backoff.reset();
            self.upstream.redial_at = None;
        }
        if !self.records.contains_key(&peer) {
            return;
        }
        // Direct before proxied: a link to the target replaces any proxy.
        self.unbind(peer);
        if let Some(r) = self.records.get_mut(&peer) {
            r.flags.set(RouteFlags::WAIT_DISCOVERY, false);
        }
        self.set_ready(peer);
        self.drop_timer_if_unneeded(peer);
    }

    fn on_link_lost(&mut self, now: Instant, world: &World<'_>, peer: NodeId, was_up: bool) {
        if peer == self.upstream.id && !self.links.contains_key(&peer) {
            let config = BackoffConfig {
                max_tries: 0,
                ..self.backoff
            };
            let delay = self
                .upstream
                .backoff
                .next_delay(&config, &mut self.rng)
                .expect("an unlimited backoff never runs out");
            self.upstream.redial_at = Some(now + delay);
        }
        let Some(r) = self.records.get_mut(&peer) else {
            return;
        };
        if r.proxy.is_valid() {
            // Its route is through a proxy; this link was not carrying it.
            return;
        }
        r.failed = true;
        if world.is_client(peer) {
            // A light client is not a member: nothing reconnects to it (it dials us).
            self.remove(peer, FailReason::TargetGone);
            return;
        }
        let lost = r.has(RouteFlags::LOST_TOPOLOGY);
        if lost && r.lost_deadline.is_some_and(|d| d <= now) {
            self.remove(peer, FailReason::TargetGone);
            return;
        }
        let waiting = r.has(RouteFlags::WAIT_DISCOVERY);
        self.set_unready(peer);
        if !self.records.get(&peer).is_some_and(Self::needed) {
            self.remove(peer, FailReason::NoRoute);
            return;
        }
        if !was_up && self.timers.contains(peer) {
            // A failed dial: its attempt is already scheduled.
            return;
        }
        if !self.schedule_reconnect_if_due(now, peer) {
            return;
        }
        if !self.timers.contains(peer) && self.need_timer(peer) {
            // Inside the backoff window with no timer (a dial the upstream keeper started):
            // wake at the window's end.
            if let Some(at) = self.records.get(&peer).and_then(|r| r.next_reconnect) {
                self.timers.arm(peer, at);
            }
        }
        let relation = world.topology.relation(self.own_id, peer);
        if matches!(
            relation,
            Relation::SameUpstreamPeer | Relation::OtherUpstreamPeer
        ) && !lost
            && !waiting
            && self.try_direct_reconnect(now, world, peer, false) == Err(RouteError::TopologyDenied)
        {
            self.direct_denied(now, world, peer);
        }
    }

    /// The policy refused a direct (re)connect to `id` — typically because its topology data
    /// changed (a host or process move, new labels). An active record is re-routed at once by
    /// the routing decision with relaying allowed (through the tree, or our upstream), keeping
    /// its queue; a passive one is removed (`NoRoute`). libatapp removes the handle in both
    /// cases (and, ignoring host and pid changes, rarely gets here at all).
    fn direct_denied(&mut self, now: Instant, world: &World<'_>, id: NodeId) {
        if self
            .records
            .get(&id)
            .is_some_and(|r| r.has(RouteFlags::ACTIVE))
        {
            self.recompute(now, world, id);
        } else {
            self.remove(id, FailReason::NoRoute);
        }
    }

    /// The relay `target`'s record routes through says the target is reachable again: the
    /// record's retry count and backoff window reset and, if it waits unready behind a ready
    /// proxy (a failed hand-off), it follows the proxy now.
    pub fn retry_now(&mut self, now: Instant, world: &World<'_>, target: NodeId) {
        let Some(r) = self.records.get_mut(&target) else {
            return;
        };
        r.retry_count = 0;
        r.failed = false;
        r.next_reconnect = None;
        self.retry_on_news(now, world, target);
    }

    /// A message to `target` was acknowledged after its route was in doubt (a probe got
    /// through): its retry count starts over.
    pub fn path_proven(&mut self, target: NodeId) {
        if let Some(r) = self.records.get_mut(&target) {
            r.retry_count = 0;
            r.failed = false;
        }
    }

    /// The owner could not hand a message to the link [`ready_hop`](Self::ready_hop) named
    /// (it is gone): the record loses `READY` (cascading) and its reconnect timer is armed
    /// (libatapp arms none).
    pub fn on_send_failed(&mut self, now: Instant, _world: &World<'_>, target: NodeId) {
        if !self.records.contains_key(&target) {
            return;
        }
        self.set_unready(target);
        self.schedule_reconnect_if_due(now, target);
    }

    /// Handles every record timer due at `now`, in deadline order, and the upstream redial.
    /// Timers armed while handling (at later instants) wait for a later call. Spurious calls
    /// do nothing.
    pub fn handle_timeout(&mut self, now: Instant, world: &World<'_>) {
        let mut due = core::mem::take(&mut self.due);
        due.clear();
        self.timers.expire(now, &mut due);
        for &(id, _) in &due {
            self.on_record_timer(now, world, id);
        }
        due.clear();
        self.due = due;
        if self.upstream.redial_at.is_some_and(|at| at <= now) {
            self.keep_upstream(now, world);
        }
    }

    /// libatapp's timer callback, corrected: a lost record whose direct link is up and ready
    /// survives its deadline; the reconnect really dials.
    fn on_record_timer(&mut self, now: Instant, world: &World<'_>, id: NodeId) {
        let Some(r) = self.records.get(&id) else {
            return;
        };
        let mut next = None;
        if r.has(RouteFlags::LOST_TOPOLOGY) {
            match r.lost_deadline {
                Some(deadline) if deadline > now => next = Some(deadline),
                _ => {
                    let working_direct =
                        r.has(RouteFlags::READY) && !r.proxy.is_valid() && self.link_up(id);
                    if !working_direct {
                        self.remove(id, FailReason::TargetGone);
                    }
                    return;
                }
            }
        }
        if r.has(RouteFlags::READY) {
            if let Some(at) = next {
                self.timers.arm(id, at);
            }
            return;
        }
        if let Some(at) = r.next_reconnect.filter(|&at| at > now) {
            self.timers.arm(id, next.map_or(at, |n| n.min(at)));
            return;
        }
        // A proxied record is unready while its proxy is ready only after a failed hand-off
        // through it (`on_send_failed`: the proxy answered `Unreachable`, e.g. the target had
        // just restarted behind it). Nothing else re-readies it — its readiness follows the
        // proxy's, which did not change — so at the end of its backoff window it follows the
        // proxy again and its queue is retried through it.
        if r.proxy.is_valid() && !r.has(RouteFlags::LOST_TOPOLOGY) && self.is_ready(r.proxy) {
            // Following the proxy again proves nothing yet: the count goes on, so a target
            // that stays unreachable behind it is retried (one probe each time) at growing
            // intervals, until a delivery proves the path ([`Self::path_proven`]).
            let tries = r.retry_count;
            self.set_ready(id);
            if let Some(r) = self.records.get_mut(&id) {
                r.retry_count = tries;
            }
            return;
        }
        if !self.schedule_reconnect(now, id) {
            return;
        }
        if let Some(at) = next {
            self.timers.arm(id, at);
        }
        if self.try_direct_reconnect(now, world, id, true) == Err(RouteError::TopologyDenied) {
            self.direct_denied(now, world, id);
        }
    }

    /// Dials the upstream if it has no link and its redial is due; without a known address it
    /// waits for the upstream's discovery put.
    pub(super) fn keep_upstream(&mut self, now: Instant, world: &World<'_>) {
        let id = self.upstream.id;
        if !id.is_valid() || self.links.contains_key(&id) {
            self.upstream.redial_at = None;
            return;
        }
        if self.upstream.redial_at.is_some_and(|at| at > now) {
            return;
        }
        self.upstream.redial_at = None;
        let addr = if id == self.upstream.configured && !self.upstream.configured_address.is_empty()
        {
            Some(self.upstream.configured_address.clone())
        } else {
            world
                .discovery
                .get_by_id(id)
                .and_then(|info| self.select_address(info))
        };
        if let Some(addr) = addr {
            self.dial(id, addr);
        }
    }
}
