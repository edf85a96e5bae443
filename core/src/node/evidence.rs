//! Evidence of a peer's death, applied (docs/ARCHITECTURE.md §9.3): the rules and the state
//! are the [`EvidenceBook`]'s; the node acts on what it decides — ends what may have reached
//! the dead incarnation ([`on_dead`](crate::endpoint::EndpointTable::on_dead)), tells the
//! sources it relayed for, closes zombie links, probes suspects, reports [`Event::PeerDead`] —
//! and believes a relay's word (gone, reachable again) only from the hop the target's route
//! goes through.

use super::{Event, Evidence, Node};
use crate::{
    bus::links::Down,
    evidence::{EvidenceBook, departed_grace},
    ids::NodeId,
    outcome::FailReason,
    time::Instant,
    wire::{self, UnreachableReason},
};

impl Node {
    /// `peer`'s incarnation `incarnation` is dead, as `evidence` shows: see the
    /// [module docs](self).
    pub(super) fn peer_dead(&mut self, peer: NodeId, incarnation: u64, evidence: Evidence) {
        self.depart(peer);
        let Some(suspected) = self.evidence.record_death(peer, incarnation) else {
            return;
        };
        // A zombie link to the dead life is closed now, so nothing is sent into it (to end
        // only at the next evidence, which the book ignores).
        let zombies = if EvidenceBook::closes_links(evidence, incarnation) {
            (self.links).close_incarnation(peer, incarnation, &mut self.out)
        } else {
            alloc::vec::Vec::new()
        };
        let ended =
            (self.endpoints).on_dead(peer, incarnation, FailReason::TargetGone, &mut self.out);
        let told = self.tell_sources(peer, incarnation, UnreachableReason::TargetGone);
        if !zombies.is_empty() {
            self.update_peer_state(self.now, peer);
        }
        // What waits now probes for a live incarnation at once if the route is ready.
        self.flush_target(peer);
        if self
            .evidence
            .is_reported(peer, suspected, ended, told, incarnation)
        {
            self.out.event(Event::PeerDead {
                peer,
                incarnation,
                evidence,
            });
        }
    }

    /// Tells the sources this node relayed for toward `peer` (incarnation `incarnation`)
    /// `reason` ([`EvidenceBook::sources_to_tell`], [`Links::tell_sources`]) by the hop the
    /// connector routes each one through; returns whether there were any.
    ///
    /// [`Links::tell_sources`]: crate::bus::links::Links::tell_sources
    pub(super) fn tell_sources(
        &mut self,
        peer: NodeId,
        incarnation: u64,
        reason: UnreachableReason,
    ) -> bool {
        let Some(sources) = self.evidence.sources_to_tell(peer, reason) else {
            return false;
        };
        let (world, connector) = (self.records.world(), &self.connector);
        let hop_to = |src| connector.relay_hop(&world, src, peer);
        (self.links).tell_sources(&sources, (peer, incarnation), reason, hop_to, &mut self.out);
        true
    }

    /// A relay's word about `notice.dst`, from `via`, believed only from the hop the target's
    /// route goes through: its incarnation `notice.dst_incarnation` is gone (a death), or it
    /// is reachable again — if messages wait, the route is retried now (its backoff reset)
    /// and they go (a probe first if the path was in doubt).
    pub(super) fn relay_says(&mut self, now: Instant, notice: &wire::Unreachable, via: NodeId) {
        let dst = notice.dst;
        if !self.connector.routes_through(dst, via) {
            return;
        }
        if notice.reason == UnreachableReason::TargetGone {
            self.peer_dead(dst, notice.dst_incarnation, Evidence::RelayNotice);
        } else if self.endpoints.has_outgoing(dst) {
            self.with_connector(|c, w| c.retry_now(now, w, dst));
            self.flush_target(dst);
        }
    }

    /// A link went away: the book's rules ([`EvidenceBook::link_gone`]) against the links
    /// still up and the incarnation the registry announces; a death they show is acted on.
    pub(super) fn link_gone(&mut self, down: Down, heartbeats_stopped: bool) {
        let doubted = down.dialed.filter(|&p| !self.evidence.in_doubt(p));
        let (links, records) = (&self.links, &self.records);
        let (is_up, announced) = (|p| links.is_up(p), |id| records.announced(id));
        let death =
            (self.evidence).link_gone(self.now, &down, heartbeats_stopped, is_up, announced);
        if let Some(death) = death {
            self.peer_dead(death.peer, death.incarnation, death.evidence);
        }
        // A doubt that starts now asks other nodes how they see the suspect.
        if let Some(peer) = doubted.filter(|&p| self.evidence.in_doubt(p)) {
            let upstream = self.config.upstream;
            (self.evidence).ask_others(peer, upstream, &mut self.links, &mut self.out);
        }
        if let Some(peer) = down.peer.filter(|&p| !self.links.is_up(p)) {
            self.depart(peer);
        }
    }

    /// A member answered one of this node's indirect probes ([`EvidenceBook::probe_answered`]).
    pub(super) fn probe_answered(&mut self, ack: wire::ProbeAck) {
        let answer = (self.evidence).probe_answered(ack.target, ack.incarnation, ack.verdict);
        if let Some(death) = answer {
            self.peer_dead(death.peer, death.incarnation, death.evidence);
        }
    }

    /// Looks at `peer` again one grace from now ([`departed_grace`]).
    pub(super) fn depart(&mut self, peer: NodeId) {
        let due = self.now.saturating_add(departed_grace(&self.config));
        self.evidence.depart(peer, due);
    }

    /// Forgets every peer due at `now` that departed: no discovery record, no link, no
    /// endpoint, nothing heard on its receive stream for a grace (docs/ARCHITECTURE.md §9.4).
    /// One with a record is in the live set (its deletion schedules it again); one with a
    /// link, an endpoint or a frame heard lately is looked at again one grace later.
    pub(super) fn forget_departed(&mut self, now: Instant) {
        while let Some(peer) = self.evidence.pop_departure(now) {
            if self.records.discovery.get_by_id(peer).is_some() {
                continue;
            }
            let (links, endpoints) = (&self.links, &self.endpoints);
            let grace = departed_grace(&self.config);
            if links.is_up(peer)
                || links.is_connecting(peer)
                || endpoints.find_by_id(peer).is_some()
                || !self.links.forget_peer(peer, now, grace)
            {
                self.depart(peer);
                continue;
            }
            self.evidence.forget(peer);
            self.endpoints.forget_known(peer);
        }
    }

    /// The registry's session with `id` (`incarnation`) is lost or back: a suspect in doubt
    /// of that incarnation is dead when it is lost ([`EvidenceBook::session`]).
    pub(super) fn session_news(&mut self, id: NodeId, incarnation: u64, lost: bool) {
        if let Some(death) = self.evidence.session(id, incarnation, lost) {
            self.peer_dead(death.peer, death.incarnation, death.evidence);
        }
    }

    /// Suspects whose doubt outlived `Config::suspicion_timeout` are probed a last time (its
    /// failure is the death); one this node may no longer dial is no suspect any more
    /// ([`EvidenceBook::due`], [`EvidenceBook::no_last_probe`]).
    pub(super) fn suspicions_due(&mut self, now: Instant) {
        for peer in self.evidence.due(now) {
            if !self.probe(peer) {
                self.evidence.no_last_probe(peer);
            }
        }
    }

    /// Dials a suspect once if nothing else is dialling it (after the connector reacted to
    /// the link loss) at the address the connector allows
    /// ([`Connector::probe_address`](crate::connector::Connector::probe_address)). Whether a
    /// dial to it runs now (this one or another), or it is no suspect any more.
    pub(super) fn probe(&mut self, peer: NodeId) -> bool {
        if !self.evidence.is_suspect(peer)
            || self.links.is_up(peer)
            || self.links.is_connecting(peer)
        {
            return true;
        }
        let world = self.records.world();
        let Some(addr) = self.connector.probe_address(&world, peer) else {
            return false;
        };
        self.links.dial(peer, addr, &mut self.out);
        true
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
        let seen = self.seen_incarnation(id);
        if seen == 0 || seen == incarnation {
            return;
        }
        self.depart(id);
        if self.evidence.record_death(id, seen).is_some() {
            (self.endpoints).on_incarnation(id, incarnation, &mut self.out);
            self.tell_sources(id, seen, UnreachableReason::TargetGone);
            self.out.event(Event::PeerDead {
                peer: id,
                incarnation: seen,
                evidence: Evidence::NewIncarnation,
            });
        }
        for down in self.links.close_stale(id, incarnation, &mut self.out) {
            self.link_down(now, down, false);
        }
    }

    /// The incarnation of `id` seen last: its stream's, else its link's (0 = none).
    pub(super) fn seen_incarnation(&self, id: NodeId) -> u64 {
        match self.endpoints.known_incarnation(id) {
            0 => self.links.peer_incarnation(id),
            known => known,
        }
    }

    /// The registry deleted `id`'s record (`incarnation` as it stated, 0 = not stated):
    /// the incarnation last seen is dead.
    pub(super) fn discovery_deleted(&mut self, id: NodeId, incarnation: u64) {
        let seen = match incarnation {
            0 => self.seen_incarnation(id),
            stated => stated,
        };
        self.peer_dead(id, seen, Evidence::RegistryDeleted);
    }
}
