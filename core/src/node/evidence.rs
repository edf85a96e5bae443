//! Evidence of a peer's death, applied (docs/ARCHITECTURE.md §9.3): the rules and the state
//! are the [`EvidenceBook`]'s; the node acts on the [`Death`] it decides — ends what may have
//! reached the dead incarnation ([`on_dead`](crate::endpoint::EndpointTable::on_dead)), tells
//! the sources it relayed for, closes zombie links, reports it ([`Death::event`]) — and
//! believes a relay's word (gone, reachable again) only from the hop the target's route goes
//! through.

use super::{Evidence, Node};
use crate::{
    evidence::{Death, EvidenceBook},
    ids::NodeId,
    outcome::FailReason,
    time::Instant,
    wire::{self, UnreachableReason},
};

impl Node {
    /// A peer incarnation is dead, as the death (if any) shows: see the [module docs](self).
    pub(super) fn peer_dead(&mut self, death: Option<Death>) {
        let Some(death) = death else {
            return;
        };
        let (peer, incarnation) = (death.peer, death.incarnation);
        let Some(suspected) = self.evidence.note_death(self.now, peer, incarnation) else {
            return;
        };
        let zombies = EvidenceBook::close_zombies(death, &mut self.links, &mut self.out);
        let ended =
            (self.endpoints).on_dead(peer, incarnation, FailReason::TargetGone, &mut self.out);
        let told = self.tell_sources(peer, incarnation, UnreachableReason::TargetGone);
        if zombies {
            self.update_peer_state(self.now, peer);
        }
        // What waits now probes for a live incarnation at once if the route is ready.
        self.flush_target(peer);
        if (self.evidence).is_reported(peer, suspected, ended, told, incarnation) {
            self.out.event(death.event());
        }
    }

    /// Tells the sources this node relayed for toward `peer` (incarnation `incarnation`)
    /// `reason` by the hop the connector routes each one through
    /// ([`EvidenceBook::tell_sources`]); returns whether there were any.
    pub(super) fn tell_sources(
        &mut self,
        peer: NodeId,
        incarnation: u64,
        reason: UnreachableReason,
    ) -> bool {
        let hop_to = |src| self.connector.relay_hop(&self.records.world(), src, peer);
        let (links, out) = (&mut self.links, &mut self.out);
        (self.evidence).tell_sources((peer, incarnation), reason, hop_to, links, out)
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
            let death = Death::new(dst, notice.dst_incarnation, Evidence::RelayNotice);
            self.peer_dead(Some(death));
        } else if self.endpoints.has_outgoing(dst) {
            self.with_connector(|c, w| c.retry_now(now, w, dst));
            self.flush_target(dst);
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
        let seen = self.seen_incarnation(id);
        if seen == 0 || seen == incarnation {
            return;
        }
        if self.evidence.note_death(now, id, seen).is_some() {
            (self.endpoints).on_incarnation(id, incarnation, &mut self.out);
            self.tell_sources(id, seen, UnreachableReason::TargetGone);
            self.out
                .event(Death::new(id, seen, Evidence::NewIncarnation).event());
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
        self.peer_dead(Some(Death::new(id, seen, Evidence::RegistryDeleted)));
    }
}
