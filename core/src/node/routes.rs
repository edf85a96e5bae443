//! Time and routes: `handle_timeout` (every due deadline of the outboxes, the connector and
//! the links in one call) and the connector's effects applied — dials, closes, a ready route
//! flushing its outbox, a removed route giving its messages up.

use super::{Event, Node, Output};
use crate::{
    connector::{Effect, RouteEvent, World},
    ids::{LinkId, NodeId},
    outcome::FailReason,
    time::Instant,
};

impl Node {
    /// The up link carrying data for `target` now, if its route is ready.
    pub(super) fn ready_link(&self, target: NodeId) -> Option<LinkId> {
        self.connector
            .ready_hop(target)
            .and_then(|hop| self.links.link_to(hop))
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
        let expired = self.endpoints.expire_unacked(now, &mut self.out);
        let world = World::new(&self.topology, &self.discovery);
        self.connector.handle_timeout(now, &world);
        self.apply_effects();
        // A stream that ended with messages queued behind it (a probe given up, say) hands
        // them to a ready route now.
        for dst in expired {
            self.flush_target(dst);
        }
        self.endpoints.handle_timeout(now, &mut self.out);
        for dst in self.endpoints.due_retransmits(now) {
            match self.ready_link(dst) {
                Some(link) => {
                    self.endpoints.retransmit(dst, link, now, &mut self.out);
                }
                None => self.endpoints.touch(dst, now),
            }
        }
        self.beat(now);
        for target in self.endpoints.due_flushes(now) {
            self.flush_target(target);
        }
        self.rpc_timeouts(now);
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
        self.endpoints.give_up(target, reason, &mut self.out);
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
        self.endpoints
            .flush_outbox(target, link, now, budget, &mut self.out);
    }
}
