//! Indirect probes on the links (docs/ARCHITECTURE.md §9.3): the peers a node may ask about a
//! suspect, a `Probe` sent to one, and the `ProbeAck` answered on the link a probe came on.

use super::{LinkId, LinkSink, Links};
use crate::{
    ids::NodeId,
    wire::{self, Frame},
};

impl Links {
    /// Every peer with an up link, ascending.
    pub fn up_peers(&self) -> impl Iterator<Item = NodeId> + '_ {
        (self.peer_links.iter())
            .filter(|(_, links)| !links.is_empty())
            .map(|(&peer, _)| peer)
    }

    /// Sends `probe` to `to` on its up link; whether there was one.
    pub fn send_probe<S: LinkSink + ?Sized>(
        &mut self,
        to: NodeId,
        probe: wire::Probe,
        sink: &mut S,
    ) -> bool {
        let Some(link) = self.link_to(to) else {
            return false;
        };
        self.transmit(link, &Frame::Probe(probe), sink);
        true
    }

    /// Answers a probe that came on `link` with `ack` (dropped if the link is gone).
    pub fn answer_probe<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        ack: wire::ProbeAck,
        sink: &mut S,
    ) {
        if self.peer(link).is_some() {
            self.transmit(link, &Frame::ProbeAck(ack), sink);
        }
    }
}
