//! Indirect probes (docs/ARCHITECTURE.md §9.3, SWIM's ping-req): when a suspect's redial
//! fails and nothing corroborates it yet, the node asks up to [`PROBE_FANOUT`] other linked
//! members — its upstream first — how they see the suspect's incarnation; an answer `Alive`
//! (another path is up) ends the doubt, `Dead` corroborates it, `Unknown` changes nothing
//! (the bound still holds). The book decides ([`EvidenceBook::verdict`],
//! [`EvidenceBook::probe_answered`]); this file asks and answers.
//!
//! [`EvidenceBook::verdict`]: crate::evidence::EvidenceBook::verdict
//! [`EvidenceBook::probe_answered`]: crate::evidence::EvidenceBook::probe_answered

use alloc::vec::Vec;

use super::Node;
use crate::evidence::EvidenceBook;
use crate::{
    ids::{LinkId, NodeId},
    wire,
};

/// Members asked about one suspect (SWIM's k): three answers are enough to find another path
/// in a small cluster without a probe storm in a large one.
pub(crate) const PROBE_FANOUT: usize = 3;

impl Node {
    /// Asks up to [`PROBE_FANOUT`] linked members (the upstream first, then by id; never the
    /// suspect or a light client) how they see suspect `peer`.
    pub(super) fn ask_others(&mut self, peer: NodeId) {
        let Some(incarnation) = self.evidence.suspected(peer) else {
            return;
        };
        let upstream = self.config.upstream;
        let mut asked: Vec<NodeId> = self.links.up_peers().collect();
        asked.retain(|&p| p != peer && !self.evidence.is_client(p));
        asked.sort_by_key(|&p| (p != upstream, p));
        asked.truncate(PROBE_FANOUT);
        let probe = wire::Probe {
            target: peer,
            incarnation,
        };
        for to in asked {
            self.links.send_probe(to, probe, &mut self.out);
        }
    }

    /// A member asks how this node sees `probe.target`: answered on the link it came on.
    pub(super) fn answer_probe(&mut self, probe: wire::Probe, link: LinkId) {
        let target = probe.target;
        let linked = if self.links.is_up(target) {
            self.links.peer_incarnation(target)
        } else {
            0
        };
        let announced = self.records.announced(target);
        let verdict = EvidenceBook::verdict(probe.incarnation, linked, announced);
        let ack = wire::ProbeAck {
            target,
            incarnation: probe.incarnation,
            verdict,
        };
        self.links.answer_probe(link, ack, &mut self.out);
    }

    /// A member answered one of this node's probes.
    pub(super) fn probe_answered(&mut self, ack: wire::ProbeAck) {
        let answer = (self.evidence).probe_answered(ack.target, ack.incarnation, ack.verdict);
        if let Some(death) = answer {
            self.peer_dead(death.peer, death.incarnation, death.evidence);
        }
    }
}
