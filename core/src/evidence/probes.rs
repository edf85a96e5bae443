//! Indirect probes (docs/ARCHITECTURE.md §9.3, SWIM's ping-req): when a suspect's redial
//! fails and nothing corroborates it yet, the node asks up to [`PROBE_FANOUT`] other linked
//! members — its upstream first — how they see the suspect's incarnation; an answer `Alive`
//! (another path is up) ends the doubt, `Dead` corroborates it, `Unknown` changes nothing
//! (the bound still holds). Whom to ask and what to answer are decided here, on the links the
//! node has; what an answer means is [`EvidenceBook::probe_answered`].

use alloc::vec::Vec;

use super::EvidenceBook;
use crate::{
    bus::links::{LinkSink, Links},
    ids::{LinkId, NodeId},
    wire,
};

/// Members asked about one suspect (SWIM's k): three answers are enough to find another path
/// in a small cluster without a probe storm in a large one.
pub(crate) const PROBE_FANOUT: usize = 3;

impl EvidenceBook {
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
