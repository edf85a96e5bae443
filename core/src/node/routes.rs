//! Time and routes: `handle_timeout` (every due deadline of the outboxes, the connector and
//! the links in one call) and the connector's effects applied — dials, closes, a ready route
//! flushing its outbox, a removed route giving its messages up.

use super::{Event, Node};
use crate::{
    connector::{Connector, Effect, RouteEvent, World},
    ids::NodeId,
    time::Instant,
};

impl Node {
    /// Handles everything due at `now` in one call, in the order docs/ARCHITECTURE.md §4
    /// states (in-flight deadlines first, [`EndpointTable::expire_unacked`], so a route
    /// readied now cannot send them again). Spurious calls do nothing.
    ///
    /// [`EndpointTable::expire_unacked`]: crate::endpoint::EndpointTable::expire_unacked
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        // In-flight messages due now end before a route readied now could send them again.
        let expired = self.endpoints.expire_unacked(now, &mut self.out);
        self.with_connector(|c, w| c.handle_timeout(now, w));
        // A stream that ended with messages queued behind it (a probe given up, say) hands
        // them to a ready route now.
        for dst in expired {
            self.flush_target(dst);
        }
        self.endpoints.handle_timeout(now, &mut self.out);
        // A departed member's send grace ended with no record back (ARCHITECTURE §7).
        for id in self.records.expire_departed(now) {
            (self.endpoints).give_up(id, crate::outcome::FailReason::TargetGone, &mut self.out);
        }
        let (connector, links) = (&self.connector, &self.links);
        let ready_link = |dst| connector.ready_hop(dst).and_then(|hop| links.link_to(hop));
        (self.endpoints).retransmit_due(now, ready_link, &mut self.out);
        self.beat(now);
        let address = |p| self.connector.probe_address(&self.records.world(), p);
        (self.evidence).probe_due(now, address, &mut self.links, &mut self.out);
        for target in self.endpoints.due_flushes(now) {
            self.flush_target(target);
        }
        self.with_rpc(|rpc, host| rpc.handle_timeout(now, host));
        let has_record = |p| self.records.discovery.get_by_id(p).is_some();
        (self.evidence).forget_departed(now, has_record, &mut self.links, &mut self.endpoints);
    }

    /// Hands the connector an input (`f`, with the records it routes by), then applies its
    /// effects.
    pub(super) fn with_connector(&mut self, f: impl FnOnce(&mut Connector, &World<'_>)) {
        f(&mut self.connector, &self.records.world());
        self.apply_effects();
    }

    /// Applies every pending connector effect, in order (applying one may produce more). A
    /// peer disconnected as unneeded lost its last link: it departs like one whose link died.
    pub(super) fn apply_effects(&mut self) {
        while let Some(effect) = self.connector.pop_effect() {
            match effect {
                Effect::Dial { peer, addr } => self.links.dial(peer, addr, &mut self.out),
                Effect::Disconnect { peer } => {
                    self.links.close_peer(peer, &mut self.out);
                    self.evidence.depart(peer, self.now);
                }
                Effect::Route(event) => {
                    self.out.event(Event::Route(event));
                    match event {
                        RouteEvent::Ready { target, .. } => self.flush_target(target),
                        RouteEvent::Removed {
                            target,
                            reason,
                            endpoint: true,
                        } => {
                            (self.endpoints).route_removed(target, reason, self.now, &mut self.out)
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// On a ready route, `target`'s outbox flushes
    /// ([`EndpointTable::flush_ready`](crate::endpoint::EndpointTable::flush_ready)) — unless
    /// the records hold its messages ([`Records::holds`](crate::records::Records::holds)).
    pub(super) fn flush_target(&mut self, target: NodeId) {
        let (connector, links, records) = (&self.connector, &self.links, &self.records);
        let ready_link = || {
            connector
                .ready_hop(target)
                .filter(|&hop| !records.holds(target, hop))
                .and_then(|hop| links.link_to(hop))
        };
        let timing = (self.now, self.config.flush_budget());
        (self.endpoints).flush_ready(target, ready_link, timing, &mut self.out);
    }
}
