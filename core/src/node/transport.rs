//! Transport input: the driver's reports about links and their bytes, handed to the link
//! machine ([`crate::bus::links`]); what it hands back is composed here with the connector
//! (link states, relay hops) and the outboxes (acks, refusals, incarnations).

use bytes::Bytes;

use super::{Event, Node, OffRouteFrame, Output};
use crate::{
    bus::links::{Down, Inbound},
    connector::{LinkState, World},
    endpoint::{Refusal, Reset},
    ids::{LinkId, NodeId},
    outcome::FailReason,
    perimeter::Standing,
    time::{Duration, Instant},
    wire::{self, UnreachableReason},
};

impl Node {
    /// An inbound connection was accepted. Returns its link id; report its bytes with
    /// `handle_received(link, ..)`. The peer is unknown until its `Hello` arrives (the node
    /// answers with a `HelloAck`); a link still handshaking `handshake_timeout` later is
    /// closed ([`Event::HandshakeTimedOut`]). While `max_pending_handshakes` accepted links
    /// are handshaking, and after shutdown, the link is closed at once ([`Output::Close`];
    /// [`Event::HandshakeLimit`] for the former).
    pub fn handle_accepted(&mut self, now: Instant) -> LinkId {
        let now = self.advance(now);
        if self.shut_down {
            let link = self.links.refuse();
            self.out.push_back(Output::Close { link });
            return link;
        }
        self.links.accept(now, &mut self.out)
    }

    /// The transport proved that `link`'s peer may only be one of `ids` (its TLS
    /// certificate names them, e.g. `urn:switchboard:node:7`): a `Hello` (accepted link) or
    /// `HelloAck` (dialled link) claiming another id is refused before anything of the link
    /// is acted on ([`Event::LinkRejected`] with
    /// [`LinkError::NotCertified`](crate::bus::links::LinkError::NotCertified),
    /// [`Output::Close`]). Call right after [`handle_accepted`](Self::handle_accepted) or
    /// before [`handle_connected`](Self::handle_connected), before the link's first bytes;
    /// an empty `ids` refuses every id. Unknown links are ignored; without a call the link
    /// takes any id its handshake proves.
    pub fn bind_link_identity(&mut self, link: LinkId, ids: &[NodeId]) {
        self.links.bind_identity(link, ids);
    }

    /// The dial of `link` (from an [`Output::Connect`]) succeeded: the node sends its
    /// `Hello`. A link whose peer has not answered with its `HelloAck` `handshake_timeout`
    /// later is closed ([`Event::HandshakeTimedOut`]) and counts as a failed dial. Unknown
    /// links and repeated reports are ignored.
    pub fn handle_connected(&mut self, now: Instant, link: LinkId) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        self.links.connected(now, link, &mut self.out);
    }

    /// The dial of `link` failed. The connector counts the attempt (its reconnect timer is
    /// already armed). Unknown links are ignored; a link that was connected is treated as
    /// closed.
    pub fn handle_connect_failed(&mut self, now: Instant, link: LinkId) {
        self.handle_closed(now, link);
    }

    /// `link` is gone (closed by the peer or the network). Its peer's routes lose `READY`
    /// at once if it was their last link. Unknown links are ignored.
    pub fn handle_closed(&mut self, now: Instant, link: LinkId) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        if let Some(down) = self.links.closed(link, &mut self.out) {
            self.link_down(now, down);
        }
        self.settle_rpc();
    }

    /// Bytes arrived on `link`, in any split; the node keeps them (payloads of delivered
    /// messages are handed on as slices of them, never copied). Complete frames are handled
    /// in order: the handshake, messages for this node ([`Output::Received`], each stream's
    /// next message exactly once), acks, messages to forward, heartbeats. After the whole
    /// batch one cumulative `Ack` per stream that received data goes back (acks are coalesced
    /// per `handle_received` call). A malformed frame, an oversized length, a refused or
    /// lying handshake or data before it closes the link ([`Event::LinkRejected`],
    /// [`Output::Close`]). Unknown links are ignored.
    pub fn handle_received(&mut self, now: Instant, link: LinkId, bytes: Bytes) {
        let now = self.advance(now);
        if self.shut_down {
            return;
        }
        if let Some(down) = self.links.receive(link, bytes, &mut self.out) {
            self.link_down(now, down);
            self.settle_rpc();
            return;
        }
        loop {
            let standing = Standing {
                topology: &self.topology,
                connector: &self.connector,
            };
            let Some(inbound) = self.links.next_inbound(now, link, &mut self.out, &standing) else {
                break;
            };
            self.on_inbound(now, inbound);
        }
        self.links.finish_receive(&mut self.out);
        // The RPC messages of the batch, after its acks (as a driver would see them).
        self.settle_rpc();
    }

    fn on_inbound(&mut self, now: Instant, inbound: Inbound) {
        match inbound {
            Inbound::Up {
                link,
                peer,
                incarnation,
                restarted,
            } => {
                self.evidence.link_up(peer);
                self.note_refusal(peer, None);
                self.endpoints
                    .on_incarnation(peer, incarnation, &mut self.out);
                if restarted {
                    self.out
                        .push_back(Output::Event(Event::PeerRestarted { peer, incarnation }));
                }
                self.out
                    .push_back(Output::Event(Event::LinkUp { link, peer }));
                self.update_peer_state(now, peer);
                self.tell_sources(peer, incarnation, UnreachableReason::Reachable);
            }
            Inbound::Down(down) => self.link_down(now, down),
            Inbound::Ack { ack, via } if !self.standing().on_route(self.id, ack.dst, via) => {
                self.off_route(OffRouteFrame::Ack, ack.dst, via);
            }
            Inbound::Ack { ack, .. } => self.on_ack(&ack),
            Inbound::Unreachable { notice, via }
                if !self.standing().on_route(self.id, notice.dst, via) =>
            {
                self.off_route(OffRouteFrame::Unreachable, notice.dst, via);
            }
            Inbound::Unreachable { notice, via } => match notice.reason {
                UnreachableReason::TargetGone => self.relay_says_gone(&notice, via),
                UnreachableReason::Reachable => {
                    self.relay_says_reachable(now, &notice, via);
                }
                _ => self.on_unreachable(now, &notice, via),
            },
            Inbound::Relay(relay) => {
                if let Some(src) = relay.message_src() {
                    self.evidence.note_relayed(self.id, src, relay.dst());
                }
                let hop = relay.needs_hop().then(|| {
                    let world = World::new(&self.topology, &self.discovery);
                    self.connector.relay_hop(&world, relay.dst(), relay.from())
                });
                self.links.relay(relay, hop.flatten(), &mut self.out);
            }
        }
    }

    /// An `Ack` of one of our streams: an acknowledgement (messages end `Delivered`) or a
    /// reset (the stream is void: the messages no previous incarnation can have received
    /// move to a fresh stream and go out again, the ones before them end
    /// `Unknown(TargetRestarted)`; see [`EndpointTable::on_reset`]).
    ///
    /// [`EndpointTable::on_reset`]: crate::endpoint::EndpointTable::on_reset
    fn on_ack(&mut self, ack: &wire::Ack) {
        let now = self.now;
        let Some(age) = ack.reset else {
            let probing = self.endpoints.probing(ack.dst);
            self.endpoints
                .on_ack(ack.dst, ack.seq, ack.dst_incarnation, &mut self.out);
            if probing && !self.endpoints.probing(ack.dst) {
                // The probe got through: the rest of the window and the queue follow now.
                self.connector.path_proven(ack.dst);
                self.flush_target(ack.dst);
            }
            return;
        };
        let refusal = Refusal {
            seq: ack.seq,
            incarnation: ack.dst_incarnation,
            age: Duration::from_nanos(age),
        };
        let reset = self
            .endpoints
            .on_reset(ack.dst, refusal, now, &mut self.out);
        if reset != Reset::Ignored {
            self.flush_target(ack.dst);
        }
    }

    /// A relay could not route our message `u.seq` to `u.dst`; `via` is the hop it came
    /// back from. Ignored unless the message is in flight on the current stream.
    ///
    /// A refusal for lack of a route right now (`NoRoute`, `UnknownTarget`, `Overloaded`) is
    /// transient: the messages stay in flight (that copy of the refused one provably did not
    /// arrive — [`EndpointTable::on_refused`]). If the route still goes
    /// through `via` it is marked unready and its retry scheduled by the connector's backoff;
    /// a route that is already unready, or moved to another hop, is left alone (a window of
    /// frames brings one `Unreachable` each: only the first acts). When the route is ready
    /// again the stream goes out again, in order. The messages end by the usual means: an
    /// ack, their deadline (`NoRoute` instead of `Timeout` if the last thing that happened to
    /// the stream was a refusal), the route's removal, shutdown.
    ///
    /// `HopLimit` (a routing loop) is not transient: the route is marked unready and, if no
    /// other hop is ready at once, the in-flight messages end now — `Failed(NoRoute)` from
    /// the first one every copy of which was refused, `Unknown(NoRoute)` before it.
    ///
    /// [`EndpointTable::on_refused`]: crate::endpoint::EndpointTable::on_refused
    fn on_unreachable(&mut self, now: Instant, u: &wire::Unreachable, via: NodeId) {
        let dst = u.dst;
        if !self.endpoints.holds(dst, u.seq) {
            return;
        }
        self.endpoints.on_refused(dst, u.seq);
        let loop_detected = u.reason == UnreachableReason::HopLimit;
        if !loop_detected && self.connector.ready_hop(dst) != Some(via) {
            return;
        }
        let world = World::new(&self.topology, &self.discovery);
        self.connector.on_send_failed(now, &world, dst);
        self.apply_effects();
        if self.connector.ready_hop(dst).is_some_and(|hop| hop != via) {
            self.flush_target(dst);
            return;
        }
        if loop_detected {
            self.endpoints
                .give_up_unacked(dst, FailReason::NoRoute, &mut self.out);
        }
    }

    /// Link deadlines due at `now`: pings, and links dead or past their handshake deadline
    /// closed and re-evaluated.
    pub(super) fn beat(&mut self, now: Instant) {
        for link in self.links.due(now) {
            if let Some(down) = self.links.expire(now, link, &mut self.out) {
                // A heartbeat verdict (the peer was up) or a handshake deadline (a dial
                // that never finished, which the failed-dial rule covers).
                self.link_down_by(now, down, true);
            }
        }
    }

    /// A link went away: the connector hears what is left towards its peer (and towards the
    /// node it was dialled for).
    pub(super) fn link_down(&mut self, now: Instant, down: Down) {
        self.link_down_by(now, down, false);
    }

    /// [`link_down`](Self::link_down), saying whether the link's heartbeats stopped: the
    /// evidence rules apply first ([`Node::link_gone`]), then the connector hears of it, then
    /// a peer left without links is probed.
    fn link_down_by(&mut self, now: Instant, down: Down, heartbeats_stopped: bool) {
        if let (Some(refusal), Some(peer)) = (down.refused, down.dialed) {
            self.note_refusal(peer, FailReason::from_refusal(refusal));
        }
        self.link_gone(down, heartbeats_stopped);
        if let Some(peer) = down.peer {
            self.update_peer_state(now, peer);
            self.probe(peer);
        }
        if let Some(dialed) = down.dialed {
            self.update_peer_state(now, dialed);
        }
    }

    /// The link to `peer` was refused for `reason` (`None`: a link to it is up again):
    /// messages to it, and to the targets routed through it, that reach their deadlines end
    /// with that reason instead of `Timeout`.
    fn note_refusal(&mut self, peer: NodeId, reason: Option<FailReason>) {
        self.endpoints.set_deadline_reason(peer, reason);
        if let Some(view) = self.connector.view(peer) {
            for dependent in view.proxy_for {
                self.endpoints.set_deadline_reason(dependent, reason);
            }
        }
    }

    /// Reports to the connector whether `peer` has an up link, only dials in flight, or
    /// nothing.
    pub(super) fn update_peer_state(&mut self, now: Instant, peer: NodeId) {
        let state = if self.links.is_up(peer) {
            Some(LinkState::Up)
        } else if self.links.is_connecting(peer) {
            Some(LinkState::Connecting)
        } else {
            None
        };
        let world = World::new(&self.topology, &self.discovery);
        self.connector.set_link_state(now, &world, peer, state);
        self.apply_effects();
    }

    /// What the topology and the routes say a peer may send ([`crate::perimeter`]).
    fn standing(&self) -> Standing<'_> {
        Standing {
            topology: &self.topology,
            connector: &self.connector,
        }
    }

    /// Counts and reports a `frame` about our stream to `dst` that arrived off its route
    /// from `via`; nothing else happens to it.
    fn off_route(&mut self, frame: OffRouteFrame, dst: NodeId, via: NodeId) {
        self.perimeter.count_off_route(frame);
        self.out
            .push_back(Output::Event(Event::OffRoute { frame, dst, via }));
    }
}
