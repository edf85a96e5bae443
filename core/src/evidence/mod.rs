//! The evidence book: what a node knows about its peers' deaths, and the rules that turn what
//! it sees into evidence (one mechanism for every kind, and news that recovers as fast as it
//! kills; docs/ARCHITECTURE.md §9.3).
//!
//! A peer incarnation is dead when the registry deletes its record or announces another
//! incarnation, when a dial after its last link closed fails (refused, timed out, or never
//! finishing its handshake) while the registry has nothing newer *and* something
//! corroborates it ([`suspicion`]: the registry's session with it is lost, an indirect probe,
//! or the doubt outlives `Config::suspicion_timeout`), when the relay its route goes through
//! says so (`Unreachable` with `TargetGone`), or when its link's heartbeats stop. The book
//! keeps three things:
//!
//! - **suspects** ([`suspicion::Suspicions`]): peers whose last up link closed, with the
//!   incarnation that link ran. A failed dial of a suspect before it links again puts it in
//!   doubt — a path failure is not a death — and corroborated, the doubt is that
//!   incarnation's death; a link up clears it, and so does a registry naming a newer
//!   incarnation (the dial failed against a life that is already replaced). A handshake
//!   refusal proves the peer alive and clears nothing.
//! - **dead**: the last incarnation of each peer found dead. Evidence is acted on once per
//!   incarnation — a second word of the same death must not end what was sent since, to a
//!   life that may be new. Incarnation 0 (not known) always counts.
//! - **relayed**: per target, the sources whose messages this node relayed toward it (as a
//!   proxy). When the target's incarnation dies they are told (and forgotten); when the
//!   target links again they hear it is reachable.
//! - **clients**: peers whose record says they are light clients
//!   ([`DiscoveryInfo::is_client`](crate::discovery::DiscoveryInfo::is_client)), from their
//!   record's arrival until its deletion was acted on. A client is not a member: its closed
//!   link makes it no suspect (nothing probes or redials it), and its death — it left — is
//!   acted on (what may have reached it ends) but never reported as a peer death.
//!
//! The [`Node`](crate::node::Node) applies what the book decides (one [`Death`] at a time,
//! the book working the links it is handed): on a death it ends what may have reached the
//! incarnation, tells the sources ([`EvidenceBook::tell_sources`]), closes zombie links when
//! the links themselves showed the death ([`EvidenceBook::close_zombies`]) and reports
//! [`Event::PeerDead`](crate::event::Event::PeerDead) when the death changed anything
//! ([`EvidenceBook::is_reported`]).

mod departed;
mod probes;
pub(crate) mod suspicion;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_suspicion;

pub(crate) use departed::departed_grace;

use alloc::{
    collections::{BTreeMap, BTreeSet},
    vec::Vec,
};

use crate::{
    bus::links::{Down, LinkSink, Links},
    config::Config,
    event::{Event, Evidence},
    ids::NodeId,
    time::{Duration, Instant, earliest},
    wire::{ByeReason, ProbeVerdict, UnreachableReason},
};
use suspicion::Suspicions;

/// A peer incarnation found dead, and what showed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Death {
    /// The peer.
    pub(crate) peer: NodeId,
    /// Its dead incarnation.
    pub(crate) incarnation: u64,
    /// What showed it.
    pub(crate) evidence: Evidence,
}

impl Death {
    /// `peer`'s incarnation `incarnation` is dead, as `evidence` shows.
    pub(crate) const fn new(peer: NodeId, incarnation: u64, evidence: Evidence) -> Death {
        Death {
            peer,
            incarnation,
            evidence,
        }
    }

    /// The event that reports it ([`Event::PeerDead`]).
    pub(crate) const fn event(self) -> Event {
        Event::PeerDead {
            peer: self.peer,
            incarnation: self.incarnation,
            evidence: self.evidence,
        }
    }
}

/// Suspects, deaths acted on, and the sources relayed for; see the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct EvidenceBook {
    /// Peers whose last up link closed, with the incarnation it ran, and their doubts.
    suspects: Suspicions,
    /// The last incarnation of each peer found dead.
    dead: BTreeMap<NodeId, u64>,
    /// Per target, the sources of the messages relayed toward it.
    relayed: BTreeMap<NodeId, BTreeSet<NodeId>>,
    /// Peers whose record says they are light clients.
    clients: BTreeSet<NodeId>,
    /// Peers to look at again a grace after their death or last link loss.
    departures: departed::Departures,
    /// How long after its death or last link loss a peer is looked at again
    /// ([`departed_grace`]).
    grace: Duration,
    /// This node's configured upstream: asked first about a suspect ([`probes`]).
    upstream: NodeId,
}

impl EvidenceBook {
    /// An empty book whose doubts last at most `suspicion_timeout`; a departed peer is looked
    /// at again at once (no grace: the book alone, in its tests).
    pub(crate) fn new(suspicion_timeout: Duration) -> EvidenceBook {
        EvidenceBook {
            suspects: Suspicions::new(suspicion_timeout),
            dead: BTreeMap::new(),
            relayed: BTreeMap::new(),
            clients: BTreeSet::new(),
            departures: departed::Departures::default(),
            grace: Duration::ZERO,
            upstream: NodeId::NONE,
        }
    }

    /// The node's book: doubts last at most `Config::suspicion_timeout`, a departed peer is
    /// looked at again [`departed_grace`] after its death or last link loss, the configured
    /// upstream is asked first about a suspect.
    pub(crate) fn for_config(config: &Config) -> EvidenceBook {
        EvidenceBook {
            grace: departed_grace(config),
            upstream: config.upstream,
            ..EvidenceBook::new(config.suspicion_timeout)
        }
    }

    /// `peer`'s record arrived or changed: whether it is a light client's.
    pub(crate) fn note_record(&mut self, peer: NodeId, client: bool) {
        if client {
            self.clients.insert(peer);
        } else {
            self.clients.remove(&peer);
        }
    }

    /// `peer`'s record was deleted (after its death was acted on): no longer a client.
    pub(crate) fn record_gone(&mut self, peer: NodeId) {
        self.clients.remove(&peer);
        self.suspects.forget_session(peer);
    }

    /// Entries of the book's tables into `tables`.
    pub(crate) fn count_into(&self, tables: &mut crate::inspect::PeerTables) {
        tables.suspects = self.suspects.len();
        tables.dead = self.dead.len();
        tables.relayed_targets = self.relayed.len();
        tables.relayed_sources = self.relayed.values().map(BTreeSet::len).sum();
        tables.clients = self.clients.len();
        tables.departures = self.departures.len();
    }

    /// Looks at `peer` again one grace after `now` (its death or last link loss, or news that
    /// may leave it without a record or link): it is then forgotten everywhere if it departed
    /// ([`departed`], [`forget_departed`](Self::forget_departed)).
    pub(crate) fn depart(&mut self, peer: NodeId, now: Instant) {
        self.departures
            .schedule(peer, now.saturating_add(self.grace));
    }

    /// Whether the book holds any entry naming `peer`.
    pub(crate) fn remembers(&self, peer: NodeId) -> bool {
        self.suspects.holds(peer)
            || self.dead.contains_key(&peer)
            || self.clients.contains(&peer)
            || self
                .relayed
                .iter()
                .any(|(&dst, sources)| dst == peer || sources.contains(&peer))
    }

    /// `peer` departed a grace ago: every entry of it goes — suspicion, death, the sources
    /// relayed for toward it, its place among the sources relayed for toward others, its
    /// client mark.
    pub(crate) fn forget(&mut self, peer: NodeId) {
        self.suspects.clear(peer);
        self.suspects.forget_session(peer);
        self.dead.remove(&peer);
        self.relayed.remove(&peer);
        self.relayed.retain(|_, sources| {
            sources.remove(&peer);
            !sources.is_empty()
        });
        self.clients.remove(&peer);
    }

    /// A link to `peer` is up: it is no longer a suspect.
    pub(crate) fn link_up(&mut self, peer: NodeId) {
        self.suspects.clear(peer);
    }

    /// A link went away. A `Bye` other than `Shutdown` is a live peer closing on purpose:
    /// nothing. A light client is never a suspect (it leaves; nothing probes it). Stopped
    /// heartbeats of a known incarnation are its death. The last up link to
    /// a peer (`is_up`: whether another one is) makes it a suspect with the incarnation the
    /// link ran. A dial that failed at `now` without a refusal (`down.peer` unknown) to a
    /// suspect puts it in doubt, and is its death when corroborated already (its registry
    /// session is lost) — unless the registry (`announced`, 0 = nothing) names a newer
    /// incarnation, which clears the suspicion instead.
    pub(crate) fn link_gone(
        &mut self,
        now: Instant,
        down: &Down,
        heartbeats_stopped: bool,
        is_up: impl Fn(NodeId) -> bool,
        announced: impl Fn(NodeId) -> u64,
    ) -> Option<Death> {
        if down.bye.is_some_and(|reason| reason != ByeReason::Shutdown) {
            return None;
        }
        if let Some(peer) = down.peer.filter(|_| down.incarnation != 0) {
            if heartbeats_stopped {
                return Some(Death {
                    peer,
                    incarnation: down.incarnation,
                    evidence: Evidence::HeartbeatsStopped,
                });
            }
            if !is_up(peer) && !self.clients.contains(&peer) {
                self.suspects.suspect(peer, down.incarnation);
            }
        }
        let failed_dial = down.peer.is_none() && down.refused.is_none();
        let dialed = down.dialed.filter(|_| failed_dial)?;
        let incarnation = self.suspects.incarnation(dialed)?;
        let announced = announced(dialed);
        if announced != 0 && announced != incarnation {
            self.suspects.clear(dialed);
            return None;
        }
        self.suspects
            .dial_failed(now, dialed)
            .then_some(redial_failed(dialed, incarnation))
    }

    /// The registry's session with `peer` (`incarnation`) is lost (`lost`) or back: the death
    /// of a suspect in doubt of that incarnation when it corroborates one.
    pub(crate) fn session(&mut self, peer: NodeId, incarnation: u64, lost: bool) -> Option<Death> {
        let corroborated = self.suspects.session(peer, incarnation, lost);
        let suspected = self.suspects.incarnation(peer)?;
        corroborated.then_some(redial_failed(peer, suspected))
    }

    /// How this node sees `peer`'s incarnation `incarnation` when another node asks (an
    /// indirect probe): alive when its up link runs that incarnation (`linked`: the
    /// incarnation of its up link, 0 = none), dead when another life is linked or announced
    /// (`announced`, 0 = nothing), else unknown. A death acted on here is no answer: it may
    /// have been a path's (a doubt that outlived the bound) and the same life be back.
    pub(crate) fn verdict(incarnation: u64, linked: u64, announced: u64) -> ProbeVerdict {
        let other_life = |known: u64| known != 0 && known != incarnation;
        if linked != 0 && linked == incarnation {
            ProbeVerdict::Alive
        } else if other_life(linked) || other_life(announced) {
            ProbeVerdict::Dead
        } else {
            ProbeVerdict::Unknown
        }
    }

    /// Another node answered an indirect probe about `peer`'s incarnation `incarnation`: a
    /// suspect in doubt of that incarnation is dead (`Dead`: corroborated) or out of doubt
    /// (`Alive`: another path to it is up); anything else changes nothing.
    pub(crate) fn probe_answered(
        &mut self,
        peer: NodeId,
        incarnation: u64,
        verdict: ProbeVerdict,
    ) -> Option<Death> {
        let doubted =
            self.suspects.in_doubt(peer) && self.suspects.incarnation(peer) == Some(incarnation);
        match verdict {
            _ if !doubted => None,
            ProbeVerdict::Dead => Some(redial_failed(peer, incarnation)),
            ProbeVerdict::Alive => {
                self.suspects.end_doubt(peer, incarnation);
                None
            }
            _ => None,
        }
    }

    /// Whether `peer`'s record says it is a light client (never asked about a suspect).
    pub(crate) fn is_client(&self, peer: NodeId) -> bool {
        self.clients.contains(&peer)
    }

    /// The incarnation suspected of `peer`, if it is a suspect.
    pub(crate) fn suspected(&self, peer: NodeId) -> Option<u64> {
        self.suspects.incarnation(peer)
    }

    /// The suspects whose doubt outlived the bound at `now`: each is due its last probe,
    /// whose failure is its death ([`suspicion`]).
    pub(crate) fn due(&mut self, now: Instant) -> Vec<NodeId> {
        self.suspects.expired(now)
    }

    /// Suspect `peer`'s doubt outlived the bound and it cannot be dialled a last time (no
    /// address, or the topology no longer lets this node link to it): the links can tell
    /// nothing more, so the suspicion ends — a relay's or the registry's word decides.
    pub(crate) fn no_last_probe(&mut self, peer: NodeId) {
        self.suspects.clear(peer);
    }

    /// When [`probe_due`](Self::probe_due) (a doubt's end) or
    /// [`forget_departed`](Self::forget_departed) (a departure) must be called next.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        earliest(
            self.suspects.next_deadline(),
            self.departures.next_deadline(),
        )
    }

    /// Whether `peer` is a suspect (a dial to it is a probe).
    pub(crate) fn is_suspect(&self, peer: NodeId) -> bool {
        self.suspects.incarnation(peer).is_some()
    }

    /// Whether `peer` is a suspect in doubt (a redial failed, nothing corroborated yet).
    pub(crate) fn in_doubt(&self, peer: NodeId) -> bool {
        self.suspects.in_doubt(peer)
    }

    /// Evidence that `peer`'s incarnation `incarnation` is dead: `peer` is no longer a
    /// suspect; `None` when this death was acted on already, else whether it was a suspect.
    pub(crate) fn record_death(&mut self, peer: NodeId, incarnation: u64) -> Option<bool> {
        let suspected = self.suspects.clear(peer);
        self.suspects.forget_session(peer);
        let first_word =
            incarnation == 0 || self.dead.insert(peer, incarnation) != Some(incarnation);
        first_word.then_some(suspected)
    }

    /// Evidence at `now` that `peer`'s incarnation `incarnation` is dead: the peer departs
    /// ([`depart`](Self::depart)), then [`record_death`](Self::record_death).
    pub(crate) fn note_death(
        &mut self,
        now: Instant,
        peer: NodeId,
        incarnation: u64,
    ) -> Option<bool> {
        self.depart(peer, now);
        self.record_death(peer, incarnation)
    }

    /// This node (`own`) relayed a message from `src` toward `dst`; whether that was a new
    /// entry (the node then schedules both peers' departures, so an entry of a peer this node
    /// never hears die — no record, no link — is bounded too, docs/ARCHITECTURE.md §9.4).
    pub(crate) fn note_relayed(&mut self, own: NodeId, src: NodeId, dst: NodeId) -> bool {
        src != own && self.relayed.entry(dst).or_default().insert(src)
    }

    /// [`note_relayed`](Self::note_relayed) at `now`; a new entry schedules both peers'
    /// departures.
    pub(crate) fn relayed(&mut self, now: Instant, own: NodeId, src: NodeId, dst: NodeId) {
        if self.note_relayed(own, src, dst) {
            self.depart(src, now);
            self.depart(dst, now);
        }
    }

    /// The sources relayed for toward `dst`, forgotten (its incarnation died); `None` when
    /// there were none.
    pub(crate) fn take_sources(&mut self, dst: NodeId) -> Option<Vec<NodeId>> {
        self.relayed
            .remove(&dst)
            .map(|sources| sources.into_iter().collect())
    }

    /// The sources relayed for toward `dst`, kept (it is reachable again).
    pub(crate) fn sources(&self, dst: NodeId) -> Vec<NodeId> {
        self.relayed
            .get(&dst)
            .map_or_else(Vec::new, |sources| sources.iter().copied().collect())
    }

    /// Tells the sources relayed for toward `peer` (incarnation `incarnation`) `reason`
    /// ([`sources_to_tell`](Self::sources_to_tell), [`Links::tell_sources`]) by the hop
    /// `hop_to` gives for each (the connector's relay hop); whether there were any.
    pub(crate) fn tell_sources<S: LinkSink + ?Sized>(
        &mut self,
        (peer, incarnation): (NodeId, u64),
        reason: UnreachableReason,
        hop_to: impl Fn(NodeId) -> Option<NodeId>,
        links: &mut Links,
        sink: &mut S,
    ) -> bool {
        let Some(sources) = self.sources_to_tell(peer, reason) else {
            return false;
        };
        links.tell_sources(&sources, (peer, incarnation), reason, hop_to, sink);
        true
    }

    /// The sources to tell `reason` about `dst` (`None`: none): `TargetGone` forgets them
    /// (whether there were any is the answer), `Reachable` keeps them — news recovers as fast
    /// as it kills: one that was refused retries now.
    pub(crate) fn sources_to_tell(
        &mut self,
        dst: NodeId,
        reason: UnreachableReason,
    ) -> Option<Vec<NodeId>> {
        if reason == UnreachableReason::TargetGone {
            self.take_sources(dst)
        } else {
            Some(self.sources(dst))
        }
    }

    /// Whether a death closes the links still open to the dead incarnation: when the links
    /// themselves showed it (a refused redial, stopped heartbeats), a parallel link to it
    /// whose close is not reported yet is a zombie. A registry's word does not close a link
    /// that still works.
    pub(crate) fn closes_links(evidence: Evidence, incarnation: u64) -> bool {
        incarnation != 0
            && matches!(
                evidence,
                Evidence::RedialFailed | Evidence::HeartbeatsStopped
            )
    }

    /// Closes the links still open to `death`'s incarnation when they are zombies
    /// ([`closes_links`](Self::closes_links)): nothing is sent into them, to end only at the
    /// next evidence, which the book ignores. Whether any was closed.
    pub(crate) fn close_zombies<S: LinkSink + ?Sized>(
        death: Death,
        links: &mut Links,
        sink: &mut S,
    ) -> bool {
        let (peer, incarnation) = (death.peer, death.incarnation);
        EvidenceBook::closes_links(death.evidence, incarnation)
            && !links.close_incarnation(peer, incarnation, sink).is_empty()
    }

    /// Whether `peer`'s death is reported: never a light client's (it left; a client is
    /// not a member); else when it was a suspect's, it ended messages, it told sources, or
    /// it names an incarnation.
    pub(crate) fn is_reported(
        &self,
        peer: NodeId,
        suspected: bool,
        ended: usize,
        told: bool,
        incarnation: u64,
    ) -> bool {
        !self.clients.contains(&peer) && (suspected || ended > 0 || told || incarnation != 0)
    }
}

/// A failed redial of `peer`'s incarnation `incarnation`, corroborated: its death.
fn redial_failed(peer: NodeId, incarnation: u64) -> Death {
    Death {
        peer,
        incarnation,
        evidence: Evidence::RedialFailed,
    }
}
