//! Evidence of a peer's death, one mechanism (ARCHITECTURE §9), and news that recovers as
//! fast as it kills.
//!
//! A peer incarnation is dead when the registry deletes its record or announces another
//! incarnation, when a dial after its last link closed fails (refused, timed out, or never
//! finishing its handshake) while the registry has nothing newer, when the relay its route
//! goes through says so (`Unreachable` with `TargetGone`), or when its link's heartbeats
//! stop. On that evidence, at once ([`Node::peer_dead`]):
//!
//! - the in-flight messages to it that may have reached it end `Unknown(TargetGone)` (or
//!   `Unknown(TargetRestarted)` when a new incarnation is known); the ones that provably did
//!   not (every copy refused) move to a fresh stream and wait, with the queue, for a live
//!   incarnation until their deadlines ([`EndpointTable::on_dead`]);
//! - every source whose messages this node relayed toward it is told, with an `Unreachable`
//!   (`TargetGone`, the dead incarnation, seq 0), so a sender behind a proxy learns it as fast
//!   as the proxy does;
//! - [`Event::PeerDead`] says what showed it.
//!
//! When the last up link to a peer closes, the peer becomes a *suspect* with the incarnation
//! that link ran, and unless a dial to it is already in flight it is dialled once at once
//! (a *probe*; a proxy probes its children too): a live peer answers (and the link is back
//! without waiting for a backoff), a dead one refuses — the evidence. A handshake refusal
//! proves the peer alive and clears nothing.
//!
//! News: a discovery record with a new incarnation ends what the old one may have received
//! (`TargetRestarted`), closes links still open to the old one, and the connector dials the
//! target at once with its backoff reset (`Connector::on_discovery_put`).
//!
//! [`EndpointTable::on_dead`]: crate::endpoint::EndpointTable::on_dead

use super::{Event, Evidence, Node, OutSink, Output};
use crate::{
    bus::links::Down,
    connector::World,
    ids::NodeId,
    outcome::FailReason,
    time::Instant,
    wire::{self, ByeReason, UnreachableReason},
};

impl Node {
    /// `peer`'s incarnation `incarnation` is dead, as `evidence` shows: see the
    /// [module docs](self).
    pub(super) fn peer_dead(&mut self, peer: NodeId, incarnation: u64, evidence: Evidence) {
        let suspected = self.suspects.remove(&peer).is_some();
        if !self.first_word_of_death(peer, incarnation) {
            return;
        }
        // When the links themselves showed the death (a refused redial, stopped heartbeats),
        // a parallel link to the dead life whose close is not reported yet is a zombie: close
        // it now, so nothing is sent into it (to end only at the next evidence, which the
        // dedupe above ignores). A registry's word does not close a link that still works.
        let link_evidence = matches!(
            evidence,
            Evidence::RedialFailed | Evidence::HeartbeatsStopped
        );
        let zombies = if incarnation == 0 || !link_evidence {
            alloc::vec::Vec::new()
        } else {
            self.links
                .close_incarnation(peer, incarnation, &mut self.out)
        };
        let mut sink = OutSink(&mut self.out);
        let ended = self
            .endpoints
            .on_dead(peer, incarnation, FailReason::TargetGone, &mut sink);
        let told = self.tell_sources(peer, incarnation);
        if !zombies.is_empty() {
            let now = self.now;
            self.update_peer_state(now, peer);
        }
        // What waits now probes for a live incarnation at once if the route is ready.
        self.flush_target(peer);
        if suspected || ended > 0 || told || incarnation != 0 {
            self.out.push_back(Output::Event(Event::PeerDead {
                peer,
                incarnation,
                evidence,
            }));
        }
    }

    /// Whether this is the first evidence of `peer`'s incarnation `incarnation` dying (0, an
    /// incarnation never seen, always counts); records it.
    fn first_word_of_death(&mut self, peer: NodeId, incarnation: u64) -> bool {
        if incarnation == 0 {
            return true;
        }
        self.dead.insert(peer, incarnation) != Some(incarnation)
    }

    /// Tells every source this node relayed messages from toward `peer` that its
    /// incarnation `incarnation` is gone.
    fn tell_sources(&mut self, peer: NodeId, incarnation: u64) -> bool {
        let Some(sources) = self.relayed.remove(&peer) else {
            return false;
        };
        for src in sources {
            let world = World {
                topology: &self.topology,
                discovery: &self.discovery,
            };
            let Some(hop) = self.connector.relay_hop(&world, src, peer) else {
                continue;
            };
            let notice = wire::Unreachable {
                src,
                dst: peer,
                seq: 0,
                reason: UnreachableReason::TargetGone,
                dst_incarnation: incarnation,
            };
            self.links.send_notice(notice, hop, &mut self.out);
        }
        true
    }

    /// `peer` (incarnation `incarnation`) linked to this node: every source this node relayed
    /// for it hears that it is reachable again (`Unreachable` with `Reachable`), so one that
    /// was refused retries now — news recovers as fast as it kills.
    pub(super) fn tell_reachable(&mut self, peer: NodeId, incarnation: u64) {
        let Some(sources) = self.relayed.get(&peer) else {
            return;
        };
        let sources: alloc::vec::Vec<NodeId> = sources.iter().copied().collect();
        for src in sources {
            let world = World {
                topology: &self.topology,
                discovery: &self.discovery,
            };
            let Some(hop) = self.connector.relay_hop(&world, src, peer) else {
                continue;
            };
            let notice = wire::Unreachable {
                src,
                dst: peer,
                seq: 0,
                reason: UnreachableReason::Reachable,
                dst_incarnation: incarnation,
            };
            self.links.send_notice(notice, hop, &mut self.out);
        }
    }

    /// The relay `via` says `notice.dst` is reachable again: if the target's route goes
    /// through it and messages wait, the route is retried now (its backoff reset) and they
    /// go (a probe first if the path was in doubt).
    pub(super) fn relay_says_reachable(
        &mut self,
        now: Instant,
        notice: &wire::Unreachable,
        via: NodeId,
    ) {
        let dst = notice.dst;
        let through_via = self.connector.ready_hop(dst) == Some(via)
            || self
                .connector
                .view(dst)
                .is_some_and(|r| r.proxy == Some(via));
        if !through_via || !self.endpoints.has_outgoing(dst) {
            return;
        }
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        self.connector.retry_now(now, &world, dst);
        self.apply_effects();
        self.flush_target(dst);
    }

    /// Remembers that this node relayed a message from `src` toward `dst`.
    pub(super) fn note_relayed(&mut self, src: NodeId, dst: NodeId) {
        if src != self.id {
            self.relayed.entry(dst).or_default().insert(src);
        }
    }

    /// A link went away. A link that was up and was the last one to its peer makes the peer
    /// a suspect and, with no dial in flight, probes it; a dial that failed (or never
    /// finished its handshake) to a suspect is evidence of its death — unless the registry
    /// already names a newer incarnation; a link closed by its heartbeats is evidence at
    /// once.
    pub(super) fn link_gone(&mut self, down: Down, heartbeats_stopped: bool) {
        if down.bye.is_some_and(|reason| reason != ByeReason::Shutdown) {
            // Closed on purpose by a live peer.
            return;
        }
        if let Some(peer) = down.peer {
            if heartbeats_stopped && down.incarnation != 0 {
                self.peer_dead(peer, down.incarnation, Evidence::HeartbeatsStopped);
            } else if !self.links.is_up(peer) && down.incarnation != 0 {
                self.suspects.insert(peer, down.incarnation);
            }
        }
        let failed_dial = down.peer.is_none() && down.refused.is_none();
        if let Some(dialed) = down.dialed.filter(|_| failed_dial)
            && let Some(&incarnation) = self.suspects.get(&dialed)
        {
            let announced = self
                .discovery
                .get_by_id(dialed)
                .map_or(0, |info| info.incarnation);
            if announced == 0 || announced == incarnation {
                self.peer_dead(dialed, incarnation, Evidence::RedialFailed);
            } else {
                self.suspects.remove(&dialed);
            }
        }
    }

    /// Dials a suspect once if nothing else is dialling it (after the connector reacted to
    /// the link loss) and its address is known.
    pub(super) fn probe(&mut self, peer: NodeId) {
        if !self.suspects.contains_key(&peer)
            || self.links.is_up(peer)
            || self.links.is_connecting(peer)
        {
            return;
        }
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        if !self.connector.may_link(&world, peer) {
            return;
        }
        if let Some(addr) = self.connector.address_of(&world, peer) {
            self.links.dial(peer, addr, &mut self.out);
        }
    }

    /// A discovery record for `id` arrived with `incarnation` (0 = not stated). Another
    /// incarnation than the one seen last (in a handshake, an ack or an earlier record)
    /// means the old one is dead: what it may have received ends
    /// `Unknown(TargetRestarted)`, what provably it did not moves to a fresh stream for the
    /// new one, the sources relaying to it are told, and links still open to the old one
    /// are closed (the caller then lets the connector dial the new one).
    pub(super) fn discovery_news(&mut self, now: Instant, id: NodeId, incarnation: u64) {
        if incarnation == 0 {
            return;
        }
        let seen = match self.endpoints.known_incarnation(id) {
            0 => self.links.peer_incarnation(id),
            known => known,
        };
        if seen == 0 || seen == incarnation {
            return;
        }
        self.suspects.remove(&id);
        if self.first_word_of_death(id, seen) {
            let mut sink = OutSink(&mut self.out);
            self.endpoints.on_incarnation(id, incarnation, &mut sink);
            self.tell_sources(id, seen);
            self.out.push_back(Output::Event(Event::PeerDead {
                peer: id,
                incarnation: seen,
                evidence: Evidence::NewIncarnation,
            }));
        }
        for down in self.links.close_stale(id, incarnation, &mut self.out) {
            self.link_down(now, down);
        }
    }

    /// The registry deleted `id`'s record (`incarnation` as it stated, 0 = not stated):
    /// the incarnation last seen is dead.
    pub(super) fn discovery_deleted(&mut self, id: NodeId, incarnation: u64) {
        let seen = match incarnation {
            0 => match self.endpoints.known_incarnation(id) {
                0 => self.links.peer_incarnation(id),
                known => known,
            },
            stated => stated,
        };
        self.peer_dead(id, seen, Evidence::RegistryDeleted);
    }

    /// A relay's notice that `notice.dst`'s incarnation `notice.dst_incarnation` is gone,
    /// arriving from `via`: believed only from the hop the target's route goes through.
    pub(super) fn relay_says_gone(&mut self, notice: &wire::Unreachable, via: NodeId) {
        if self.connector.ready_hop(notice.dst) != Some(via)
            && self
                .connector
                .view(notice.dst)
                .is_none_or(|r| r.proxy != Some(via))
        {
            return;
        }
        self.peer_dead(notice.dst, notice.dst_incarnation, Evidence::RelayNotice);
    }
}
