//! Transport input: links opening, closing and carrying bytes; the handshake; delivery and
//! forwarding of `Data` frames.

use bytes::Bytes;

use super::{
    Event, Link, LinkError, Node, Output, Phase,
    frame::{self, Frame, FrameReader},
};
use crate::{
    connector::{LinkState, World},
    ids::{LinkId, NodeId},
    time::Instant,
};

/// Relays a `Data` frame may take before it is dropped (a routing loop guard).
pub(super) const MAX_HOPS: u8 = 16;

impl Node {
    /// An inbound connection was accepted. Returns its link id; report its bytes with
    /// `handle_received(link, ..)`. The peer is unknown until its `Hello` arrives (the node
    /// replies with its own). After shutdown the link is closed at once.
    pub fn handle_accepted(&mut self, now: Instant) -> LinkId {
        self.advance(now);
        let link = self.link_ids.next_link();
        if self.shut_down {
            self.out.push_back(Output::Close { link });
            return link;
        }
        self.links.insert(
            link,
            Link {
                phase: Phase::Handshaking,
                dialed: None,
                peer: None,
                reader: FrameReader::default(),
            },
        );
        link
    }

    /// The dial of `link` (from an [`Output::Connect`]) succeeded: the node sends its
    /// `Hello`. Unknown links and repeated reports are ignored.
    pub fn handle_connected(&mut self, now: Instant, link: LinkId) {
        self.advance(now);
        if self.shut_down {
            return;
        }
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        if l.phase != Phase::Dialing {
            return;
        }
        l.phase = Phase::Handshaking;
        self.out.push_back(Output::Transmit {
            link,
            bytes: frame::encode_hello(self.id),
        });
    }

    /// The dial of `link` failed. The connector counts the attempt (its reconnect timer is
    /// already armed). Unknown links are ignored; a link that was connected is treated as
    /// closed.
    pub fn handle_connect_failed(&mut self, now: Instant, link: LinkId) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        self.drop_link(now, link);
    }

    /// `link` is gone (closed by the peer or the network). Its peer's routes lose `READY`
    /// at once if it was their last link. Unknown links are ignored.
    pub fn handle_closed(&mut self, now: Instant, link: LinkId) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        self.drop_link(now, link);
    }

    /// Bytes arrived on `link`, in any split. Complete frames are handled in order: the
    /// handshake, messages for this node ([`Output::Received`]) and messages to forward. A
    /// malformed frame, an oversized length, a lying `Hello` or data before the handshake
    /// closes the link ([`Event::LinkRejected`], [`Output::Close`]). Unknown links are
    /// ignored.
    pub fn handle_received(&mut self, now: Instant, link: LinkId, bytes: &[u8]) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        if l.phase == Phase::Dialing {
            self.reject_link(now, link, LinkError::NotConnected);
            return;
        }
        l.reader.push(bytes);
        loop {
            let Some(l) = self.links.get_mut(&link) else {
                return;
            };
            match l.reader.next_frame() {
                Ok(None) => return,
                Ok(Some(frame)) => self.on_frame(now, link, frame),
                Err(e) => {
                    self.reject_link(now, link, LinkError::Frame(e));
                    return;
                }
            }
        }
    }

    fn on_frame(&mut self, now: Instant, link: LinkId, frame: Frame) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let (phase, dialed, peer) = (l.phase, l.dialed, l.peer);
        match frame {
            Frame::Hello { id } => {
                if phase == Phase::Up {
                    self.reject_link(now, link, LinkError::UnexpectedHello);
                    return;
                }
                if !id.is_valid() || id == self.id {
                    self.reject_link(now, link, LinkError::InvalidPeerId(id));
                    return;
                }
                if let Some(expected) = dialed.filter(|&e| e != id) {
                    self.reject_link(
                        now,
                        link,
                        LinkError::PeerIdMismatch {
                            expected,
                            claimed: id,
                        },
                    );
                    return;
                }
                if dialed.is_none() {
                    self.out.push_back(Output::Transmit {
                        link,
                        bytes: frame::encode_hello(self.id),
                    });
                }
                if let Some(l) = self.links.get_mut(&link) {
                    l.phase = Phase::Up;
                    l.peer = Some(id);
                }
                self.peer_links.entry(id).or_default().insert(link);
                self.out
                    .push_back(Output::Event(Event::LinkUp { link, peer: id }));
                self.update_peer_state(now, id);
            }
            Frame::Data {
                src,
                dst,
                msg_type,
                hops,
                payload,
            } => {
                let Some(via) = peer.filter(|_| phase == Phase::Up) else {
                    self.reject_link(now, link, LinkError::DataBeforeHello);
                    return;
                };
                if dst == self.id {
                    self.out.push_back(Output::Received {
                        from: src,
                        via,
                        msg_type,
                        payload,
                    });
                } else {
                    self.forward(src, dst, msg_type, hops, &payload, via);
                }
            }
        }
    }

    /// Relays a message for `dst` that arrived from `from`, by this node's own routing.
    fn forward(
        &mut self,
        src: NodeId,
        dst: NodeId,
        msg_type: u32,
        hops: u8,
        payload: &Bytes,
        from: NodeId,
    ) {
        let next = if hops >= MAX_HOPS {
            None
        } else {
            self.forward_link(dst, from)
        };
        match next {
            Some(link) => self.out.push_back(Output::Transmit {
                link,
                bytes: frame::encode_data(src, dst, msg_type, hops + 1, payload),
            }),
            None => self
                .out
                .push_back(Output::Event(Event::ForwardDropped { src, dst, msg_type })),
        }
    }

    /// The link a relayed message for `dst` goes out on: a direct link to it, else the hop
    /// of its ready route record, else the topology next hop, else our upstream — never back
    /// to the node it came from.
    fn forward_link(&self, dst: NodeId, from: NodeId) -> Option<LinkId> {
        if let Some(link) = self.link_to(dst) {
            return Some(link);
        }
        let usable = |hop: NodeId| (hop != from && hop != self.id).then(|| self.link_to(hop));
        if let Some(Some(link)) = self.connector.ready_hop(dst).and_then(usable) {
            return Some(link);
        }
        if let Some(Some(link)) = self.topology.next_hop(self.id, dst).and_then(usable) {
            return Some(link);
        }
        let upstream = self.connector.upstream();
        if upstream.is_valid() {
            if let Some(link) = usable(upstream).flatten() {
                return Some(link);
            }
        }
        None
    }

    /// Closes `link` because of what its peer sent.
    pub(super) fn reject_link(&mut self, now: Instant, link: LinkId, reason: LinkError) {
        self.out
            .push_back(Output::Event(Event::LinkRejected { link, reason }));
        self.out.push_back(Output::Close { link });
        self.drop_link(now, link);
    }

    /// Forgets `link` and tells the connector what is left towards its peer.
    pub(super) fn drop_link(&mut self, now: Instant, link: LinkId) {
        let Some(l) = self.links.remove(&link) else {
            return;
        };
        self.out.push_back(Output::Event(Event::LinkClosed {
            link,
            peer: l.peer.or(l.dialed),
        }));
        if let Some(peer) = l.peer {
            if let Some(set) = self.peer_links.get_mut(&peer) {
                set.remove(&link);
                if set.is_empty() {
                    self.peer_links.remove(&peer);
                }
            }
            self.update_peer_state(now, peer);
        }
        if let Some(dialed) = l.dialed.filter(|&d| Some(d) != l.peer) {
            self.update_peer_state(now, dialed);
        }
    }

    /// Reports to the connector whether `peer` has an up link, only dials in flight, or
    /// nothing.
    pub(super) fn update_peer_state(&mut self, now: Instant, peer: NodeId) {
        let state = if self.peer_links.contains_key(&peer) {
            Some(LinkState::Up)
        } else if self
            .links
            .values()
            .any(|l| l.dialed == Some(peer) && l.phase != Phase::Up)
        {
            Some(LinkState::Connecting)
        } else {
            None
        };
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        self.connector.set_link_state(now, &world, peer, state);
        self.apply_effects();
    }
}
