//! Indirect probes (docs/ARCHITECTURE.md §9.3, SWIM's ping-req): when a suspect's redial
//! fails and nothing corroborates it yet, the node asks up to [`PROBE_FANOUT`] other linked
//! members — its upstream first — how they see the suspect's incarnation; an answer `Alive`
//! (another path is up) ends the doubt, `Dead` corroborates it, `Unknown` changes nothing
//! (the bound still holds). Whom to ask and what to answer are decided here, on the links the
//! node has; what an answer means is [`EvidenceBook::probe_answered`]. So are the node's own
//! dials of a suspect ([`EvidenceBook::probe`], [`EvidenceBook::probe_due`]) and what a link's
//! loss starts ([`EvidenceBook::link_lost`]).

use alloc::{string::String, vec::Vec};

use super::{Death, EvidenceBook};
use crate::{
    bus::links::{Down, LinkSink, Links},
    ids::{LinkId, NodeId},
    time::Instant,
    wire,
};

/// Members asked about one suspect (SWIM's k): three answers are enough to find another path
/// in a small cluster without a probe storm in a large one.
pub(crate) const PROBE_FANOUT: usize = 3;

impl EvidenceBook {
    /// A link went away at `now` (`heartbeats_stopped`: its heartbeats stopped): the book's
    /// rules ([`link_gone`](Self::link_gone)) against the links still up and the incarnation
    /// the registry announces (`announced`, 0 = nothing). A doubt that starts now asks other
    /// members ([`ask_others`](Self::ask_others), the upstream first); a peer left with no up
    /// link departs ([`depart`](Self::depart)). The death it shows comes back for the node to
    /// act on (a new doubt and a death never come from one loss: the probes go first).
    pub(crate) fn link_lost<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        down: &Down,
        heartbeats_stopped: bool,
        announced: impl Fn(NodeId) -> u64,
        links: &mut Links,
        sink: &mut S,
    ) -> Option<Death> {
        let doubted = down.dialed.filter(|&p| !self.in_doubt(p));
        let is_up = |p| links.is_up(p);
        let death = self.link_gone(now, down, heartbeats_stopped, is_up, announced);
        if let Some(peer) = doubted.filter(|&p| self.in_doubt(p)) {
            self.ask_others(peer, self.upstream, links, sink);
        }
        if let Some(peer) = down.peer.filter(|&p| !links.is_up(p)) {
            self.depart(peer, now);
        }
        death
    }

    /// Dials suspect `peer` once if nothing else is dialling it (after the connector reacted
    /// to the link loss) at the address the connector allows (`address`:
    /// [`Connector::probe_address`](crate::connector::Connector::probe_address)). Whether a
    /// dial to it runs now (this one or another), or it is no suspect any more.
    pub(crate) fn probe<S: LinkSink + ?Sized>(
        &self,
        peer: NodeId,
        address: impl FnOnce(NodeId) -> Option<String>,
        links: &mut Links,
        sink: &mut S,
    ) -> bool {
        if !self.is_suspect(peer) || links.is_up(peer) || links.is_connecting(peer) {
            return true;
        }
        let Some(addr) = address(peer) else {
            return false;
        };
        links.dial(peer, addr, sink);
        true
    }

    /// Suspects whose doubt outlived `Config::suspicion_timeout` at `now` are probed a last
    /// time ([`probe`](Self::probe); its failure is the death); one this node may no longer
    /// dial is no suspect any more ([`due`](Self::due), [`no_last_probe`](Self::no_last_probe)).
    pub(crate) fn probe_due<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        address: impl Fn(NodeId) -> Option<String>,
        links: &mut Links,
        sink: &mut S,
    ) {
        for peer in self.due(now) {
            if !self.probe(peer, &address, links, sink) {
                self.no_last_probe(peer);
            }
        }
    }

    /// Asks up to [`PROBE_FANOUT`] linked members (`upstream` first, then by id; never the
    /// suspect or a light client) how they see suspect `peer`.
    pub(crate) fn ask_others<S: LinkSink + ?Sized>(
        &self,
        peer: NodeId,
        upstream: NodeId,
        links: &mut Links,
        sink: &mut S,
    ) {
        let Some(incarnation) = self.suspected(peer) else {
            return;
        };
        let mut asked: Vec<NodeId> = links.up_peers().collect();
        asked.retain(|&p| p != peer && !self.is_client(p));
        asked.sort_by_key(|&p| (p != upstream, p));
        asked.truncate(PROBE_FANOUT);
        let probe = wire::Probe {
            target: peer,
            incarnation,
        };
        for to in asked {
            links.send_probe(to, probe, sink);
        }
    }

    /// A member asks how this node sees `probe.target` (`announced`: the incarnation the
    /// registry announces for it, 0 = none): answered on the link it came on.
    pub(crate) fn answer_probe<S: LinkSink + ?Sized>(
        probe: wire::Probe,
        link: LinkId,
        announced: u64,
        links: &mut Links,
        sink: &mut S,
    ) {
        let target = probe.target;
        let linked = if links.is_up(target) {
            links.peer_incarnation(target)
        } else {
            0
        };
        let ack = wire::ProbeAck {
            target,
            incarnation: probe.incarnation,
            verdict: EvidenceBook::verdict(probe.incarnation, linked, announced),
        };
        links.answer_probe(link, ack, sink);
    }
}
