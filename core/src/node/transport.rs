//! Transport input: the driver's reports about links and their bytes, handed to the link
//! machine ([`crate::bus::links`]); what it hands back is composed here with the connector
//! (link states, relay hops) and the outboxes (acks, refusals, incarnations).

use bytes::Bytes;

use super::{Event, Node, Output};
use crate::{
    bus::links::{Down, Inbound},
    connector::LinkState,
    endpoint::AckFollowup,
    evidence::EvidenceBook,
    ids::{LinkId, NodeId},
    outcome::FailReason,
    perimeter::Standing,
    time::Instant,
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
            self.link_down(now, down, false);
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
            self.link_down(now, down, false);
            self.settle_rpc();
            return;
        }
        loop {
            let standing = Standing {
                topology: &self.records.topology,
                connector: &self.connector,
            };
            let Some(inbound) = self.links.next_inbound(now, link, &mut self.out, &standing) else {
                break;
            };
            if (self.perimeter).admits(&standing, self.id, &inbound, &mut self.out) {
                self.on_inbound(now, inbound);
            }
        }
        self.links.finish_receive(&mut self.out);
        while let Some(src) = self.links.pop_new_source() {
            self.evidence.depart(src, now);
        }
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
                (self.endpoints).on_incarnation(peer, incarnation, &mut self.out);
                if restarted {
                    self.out.event(Event::PeerRestarted { peer, incarnation });
                }
                self.out.event(Event::LinkUp { link, peer });
                self.update_peer_state(now, peer);
                self.tell_sources(peer, incarnation, UnreachableReason::Reachable);
            }
            Inbound::Down(down) => self.link_down(now, down, false),
            Inbound::Ack { ack, .. } => self.on_ack(&ack),
            Inbound::Probe { probe, link } => {
                let announced = self.records.announced(probe.target);
                EvidenceBook::answer_probe(probe, link, announced, &mut self.links, &mut self.out);
            }
            Inbound::ProbeAck { ack, .. } => {
                let death = self
                    .evidence
                    .probe_answered(ack.target, ack.incarnation, ack.verdict);
                self.peer_dead(death);
            }
            Inbound::Unreachable { notice, via } => match notice.reason {
                UnreachableReason::TargetGone | UnreachableReason::Reachable => {
                    self.relay_says(now, &notice, via);
                }
                _ => self.on_unreachable(now, &notice, via),
            },
            Inbound::Relay(relay) => {
                if let Some(src) = relay.message_src() {
                    (self.evidence).relayed(now, self.id, src, relay.dst());
                }
                let hop = relay.needs_hop().then(|| {
                    let world = self.records.world();
                    self.connector.relay_hop(&world, relay.dst(), relay.from())
                });
                self.links.relay(relay, hop.flatten(), &mut self.out);
            }
        }
    }

    /// An `Ack` of one of our streams: the outbox's rules
    /// ([`EndpointTable::react_to_ack`]), then what they ask of the connector and the flush.
    ///
    /// [`EndpointTable::react_to_ack`]: crate::endpoint::EndpointTable::react_to_ack
    fn on_ack(&mut self, ack: &wire::Ack) {
        match self.endpoints.react_to_ack(ack, self.now, &mut self.out) {
            AckFollowup::Nothing => {}
            AckFollowup::Flush => self.flush_target(ack.dst),
            AckFollowup::PathProven => {
                self.connector.path_proven(ack.dst);
                self.flush_target(ack.dst);
            }
        }
    }

    /// A relay could not route our message `u.seq` to `u.dst`, says `via`: the outbox's
    /// rules ([`EndpointTable::react_to_refusal`]); a failed route is the connector's, and
    /// what follows on the hop it leaves the outbox's again.
    ///
    /// [`EndpointTable::react_to_refusal`]: crate::endpoint::EndpointTable::react_to_refusal
    fn on_unreachable(&mut self, now: Instant, u: &wire::Unreachable, via: NodeId) {
        if !(self.endpoints).react_to_refusal(u, via, self.connector.ready_hop(u.dst)) {
            return;
        }
        self.with_connector(|c, w| c.on_send_failed(now, w, u.dst));
        let hop = self.connector.ready_hop(u.dst);
        if (self.endpoints).after_route_failed(u, via, hop, &mut self.out) {
            self.flush_target(u.dst);
        }
    }

    /// Link deadlines due at `now`: pings, and links dead or past their handshake deadline
    /// closed and re-evaluated.
    pub(super) fn beat(&mut self, now: Instant) {
        self.links.collect_due(now);
        while let Some(link) = self.links.next_due() {
            if let Some(down) = self.links.expire(now, link, &mut self.out) {
                // A heartbeat verdict (the peer was up) or a handshake deadline (a dial
                // that never finished, which the failed-dial rule covers).
                self.link_down(now, down, true);
            }
        }
    }

    /// A link went away (`heartbeats_stopped`: its heartbeats stopped): the evidence rules
    /// first ([`EvidenceBook::link_lost`]), a death they show acted on, then the connector,
    /// then a peer left without links is probed ([`EvidenceBook::probe`]).
    pub(super) fn link_down(&mut self, now: Instant, down: Down, heartbeats_stopped: bool) {
        if let (Some(refusal), Some(peer)) = (down.refused, down.dialed) {
            self.note_refusal(peer, FailReason::from_refusal(refusal));
        }
        let announced = |id| self.records.announced(id);
        let (links, out) = (&mut self.links, &mut self.out);
        let death =
            (self.evidence).link_lost(now, &down, heartbeats_stopped, announced, links, out);
        self.peer_dead(death);
        if let Some(peer) = down.peer {
            self.update_peer_state(now, peer);
            let address = |p| self.connector.probe_address(&self.records.world(), p);
            (self.evidence).probe(peer, address, &mut self.links, &mut self.out);
        }
        if let Some(dialed) = down.dialed {
            self.update_peer_state(now, dialed);
        }
    }

    /// The link to `peer` was refused for `reason` (`None`: up again): the outboxes of it
    /// and of the targets routed through it hear it
    /// ([`EndpointTable::note_refusal`](crate::endpoint::EndpointTable::note_refusal)).
    fn note_refusal(&mut self, peer: NodeId, reason: Option<FailReason>) {
        (self.endpoints).note_refusal(peer, self.connector.proxied_by(peer), reason);
    }

    /// Tells the connector whether `peer` has an up link, only dials in flight, or nothing.
    /// A route that failed now (a dial or the link) moves the RPC requests still queued for
    /// it, and for the targets routed through it, to servers whose routes do not fail.
    pub(super) fn update_peer_state(&mut self, now: Instant, peer: NodeId) {
        let state = LinkState::of(self.links.is_up(peer), self.links.is_connecting(peer));
        self.with_connector(|c, w| c.set_link_state(now, w, peer, state));
        if self.rpc.is_some() && self.connector.is_failing(peer) {
            for target in [peer].into_iter().chain(self.connector.proxied_by(peer)) {
                (self.out.rpc).push_back(crate::rpc::RpcInput::RouteFailing { peer: target });
            }
        }
    }
}
