//! Transport input: links opening, closing and carrying bytes; the handshake; delivery,
//! acknowledgement and forwarding of `Data` frames; heartbeats.

use bytes::Bytes;

use super::{Event, Link, LinkError, Node, OutSink, Output, Phase};
use crate::{
    bus::{
        handshake::{self, PROTOCOL_VERSIONS, PeerHello},
        heartbeat::{Beat, Heartbeat},
        stream::{Refusal, Reset, Verdict},
    },
    connector::{LinkState, World},
    ids::{LinkId, NodeId},
    outcome::FailReason,
    time::{Duration, Instant},
    wire::{self, Frame, FrameKind, Proof, RefuseReason, UnreachableReason, VersionRange},
};

/// Relays a `Data` frame may take before it is dropped (a routing loop guard).
pub(super) const MAX_HOPS: u8 = 16;

/// A decoded frame, copied out of the link's reader so the node can act on it.
enum In {
    Hello {
        node: NodeId,
        incarnation: u64,
        versions: VersionRange,
        proof: Option<Proof>,
        /// `Some` for a `HelloAck`: the peer's verdict.
        ack: Option<Result<(), RefuseReason>>,
    },
    Data {
        src: NodeId,
        dst: NodeId,
        seq: u64,
        dst_incarnation: u64,
        retransmit: bool,
        msg_type: u32,
        hops: u8,
        payload: Bytes,
    },
    Ack(wire::Ack),
    Unreachable(wire::Unreachable),
    Ping(u64),
    Pong,
    Bye,
    Other(FrameKind),
}

impl In {
    fn from_frame(frame: &Frame<'_>) -> In {
        match frame {
            Frame::Hello(h) => In::Hello {
                node: h.node,
                incarnation: h.incarnation,
                versions: h.versions,
                proof: h.proof,
                ack: None,
            },
            Frame::HelloAck(h) => In::Hello {
                node: h.node,
                incarnation: h.incarnation,
                versions: h.versions,
                proof: h.proof,
                ack: Some(h.result),
            },
            Frame::Data(d) => In::Data {
                src: d.src,
                dst: d.dst,
                seq: d.seq,
                dst_incarnation: d.dst_incarnation,
                retransmit: d.retransmit,
                msg_type: d.msg_type,
                hops: d.hop_count,
                payload: Bytes::copy_from_slice(d.payload),
            },
            Frame::Ack(a) => In::Ack(*a),
            Frame::Unreachable(u) => In::Unreachable(*u),
            Frame::Ping(p) => In::Ping(p.nonce),
            Frame::Pong(_) => In::Pong,
            Frame::Bye(_) => In::Bye,
            other => In::Other(other.kind()),
        }
    }
}

impl Node {
    /// Encodes `frame` into the reused buffer and returns its bytes.
    pub(super) fn encode(&mut self, frame: &Frame<'_>) -> Bytes {
        self.wbuf.clear();
        wire::encode(frame, &mut self.wbuf).expect(
            "frames the node builds are within the encodable size (payloads are checked at send)",
        );
        Bytes::copy_from_slice(&self.wbuf)
    }

    /// Queues `frame` for `link`.
    pub(super) fn transmit(&mut self, link: LinkId, frame: &Frame<'_>) {
        let bytes = self.encode(frame);
        self.out.push_back(Output::Transmit { link, bytes });
    }

    fn own_proof(&self) -> Option<Proof> {
        handshake::proof(
            self.config.cluster_token.as_bytes(),
            self.id,
            self.incarnation,
        )
    }

    /// An inbound connection was accepted. Returns its link id; report its bytes with
    /// `handle_received(link, ..)`. The peer is unknown until its `Hello` arrives (the node
    /// answers with a `HelloAck`). After shutdown the link is closed at once.
    pub fn handle_accepted(&mut self, now: Instant) -> LinkId {
        self.advance(now);
        let link = self.link_ids.next_link();
        if self.shut_down {
            self.out.push_back(Output::Close { link });
            return link;
        }
        self.links.insert(link, Link::new(Phase::Handshaking, None));
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
        let proof = self.own_proof();
        let name = core::mem::take(&mut self.config.name);
        let hello = wire::Hello {
            node: self.id,
            incarnation: self.incarnation,
            versions: PROTOCOL_VERSIONS,
            name: &name,
            proof,
        };
        self.transmit(link, &Frame::Hello(hello));
        self.config.name = name;
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
    /// handshake, messages for this node ([`Output::Received`], each stream's next message
    /// exactly once), acks, messages to forward, heartbeats. After the whole batch one
    /// cumulative `Ack` per stream that received data goes back (acks are coalesced per
    /// `handle_received` call). A malformed frame, an oversized length, a refused or lying
    /// handshake or data before it closes the link ([`Event::LinkRejected`],
    /// [`Output::Close`]). Unknown links are ignored.
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
        while let Some(l) = self.links.get_mut(&link) {
            let frame = match l.reader.next_frame() {
                Ok(None) => break,
                Ok(Some(frame)) => In::from_frame(&frame),
                Err(e) => {
                    self.reject_link(now, link, LinkError::Frame(e));
                    break;
                }
            };
            if let Some(hb) = l.heartbeat.as_mut() {
                hb.on_receive(now);
            }
            self.on_frame(now, link, frame);
        }
        self.send_acks();
    }

    fn on_frame(&mut self, now: Instant, link: LinkId, frame: In) {
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let (phase, dialed, peer) = (l.phase, l.dialed, l.peer);
        let up = peer.filter(|_| phase == Phase::Up);
        match frame {
            In::Hello {
                node,
                incarnation,
                versions,
                proof,
                ack,
            } => {
                if phase == Phase::Up {
                    self.reject_link(now, link, LinkError::UnexpectedHello);
                    return;
                }
                let hello = PeerHello {
                    node,
                    incarnation,
                    versions,
                    proof: proof.as_ref(),
                };
                self.on_hello(now, link, dialed, &hello, ack);
            }
            In::Other(kind) => self.reject_link(now, link, LinkError::UnexpectedFrame(kind)),
            _ if up.is_none() => self.reject_link(now, link, LinkError::DataBeforeHello),
            In::Data {
                src,
                dst,
                seq,
                dst_incarnation,
                retransmit,
                msg_type,
                hops,
                payload,
            } => {
                let via = up.expect("checked above");
                let data = wire::Data {
                    src,
                    dst,
                    seq,
                    dst_incarnation,
                    retransmit,
                    msg_type,
                    hop_count: hops,
                    payload: &payload,
                };
                if dst == self.id {
                    self.on_data(link, via, &data);
                } else {
                    self.forward(link, via, &data);
                }
            }
            In::Ack(ack) => {
                if ack.src == self.id {
                    self.on_ack(&ack);
                } else if let Some(next) = self.forward_link(ack.src, up.expect("checked above")) {
                    self.transmit(next, &Frame::Ack(ack));
                }
            }
            In::Unreachable(u) => {
                let via = up.expect("checked above");
                if u.src == self.id {
                    self.on_unreachable(now, &u, via);
                } else if let Some(next) = self.forward_link(u.src, via) {
                    self.transmit(next, &Frame::Unreachable(u));
                }
            }
            In::Ping(nonce) => self.transmit(link, &Frame::Pong(wire::Pong { nonce })),
            In::Pong => {}
            In::Bye => {
                self.out.push_back(Output::Close { link });
                self.drop_link(now, link);
            }
        }
    }

    /// A `Hello` (acceptor side, `ack` = `None`) or `HelloAck` (dialler side) arrived on a
    /// link still handshaking.
    fn on_hello(
        &mut self,
        now: Instant,
        link: LinkId,
        dialed: Option<NodeId>,
        hello: &PeerHello<'_>,
        ack: Option<Result<(), RefuseReason>>,
    ) {
        match (dialed, ack) {
            (None, Some(_)) => {
                self.reject_link(now, link, LinkError::UnexpectedFrame(FrameKind::HelloAck));
                return;
            }
            (Some(_), None) => {
                self.reject_link(now, link, LinkError::UnexpectedHello);
                return;
            }
            (Some(_), Some(Err(reason))) => {
                self.reject_link(now, link, LinkError::RefusedByPeer(reason));
                return;
            }
            _ => {}
        }
        let id = hello.node;
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
        let verdict = handshake::check_peer(self.id, self.config.cluster_token.as_bytes(), hello)
            .and_then(|()| self.check_duplicate(id, hello.incarnation));
        if let Err(reason) = verdict {
            if dialed.is_none() {
                self.send_hello_ack(link, Err(reason));
            }
            let error = if reason == RefuseReason::InvalidHello {
                LinkError::InvalidPeerId(id)
            } else {
                LinkError::Refused(reason)
            };
            self.reject_link(now, link, error);
            return;
        }
        if dialed.is_none() {
            self.send_hello_ack(link, Ok(()));
        }
        self.link_up(now, link, id, hello.incarnation);
    }

    /// The duplicate-id rule: a peer id already live on another link must come with the same
    /// incarnation (a parallel or redialled link of the same life); another incarnation while
    /// the old link is up is refused — the old link is closed by its heartbeat if it is dead.
    fn check_duplicate(&self, id: NodeId, incarnation: u64) -> Result<(), RefuseReason> {
        let live = self.peer_links.get(&id).into_iter().flatten();
        for other in live {
            if self
                .links
                .get(other)
                .is_some_and(|l| l.incarnation != incarnation)
            {
                return Err(RefuseReason::DuplicateId);
            }
        }
        Ok(())
    }

    fn send_hello_ack(&mut self, link: LinkId, result: Result<(), RefuseReason>) {
        let proof = self.own_proof();
        let name = core::mem::take(&mut self.config.name);
        let ack = wire::HelloAck {
            node: self.id,
            incarnation: self.incarnation,
            versions: PROTOCOL_VERSIONS,
            name: &name,
            proof,
            result,
        };
        self.transmit(link, &Frame::HelloAck(ack));
        self.config.name = name;
    }

    /// The handshake of `link` succeeded with `peer` in `incarnation`.
    fn link_up(&mut self, now: Instant, link: LinkId, peer: NodeId, incarnation: u64) {
        if let Some(l) = self.links.get_mut(&link) {
            l.phase = Phase::Up;
            l.peer = Some(peer);
            l.incarnation = incarnation;
            l.heartbeat = Some(Heartbeat::new(now));
        }
        let previous = self.peer_incarnations.insert(peer, incarnation);
        let mut sink = OutSink(&mut self.out);
        self.send_streams
            .on_incarnation(peer, incarnation, &mut sink);
        if previous.is_some_and(|p| p != incarnation) {
            self.out
                .push_back(Output::Event(Event::PeerRestarted { peer, incarnation }));
        }
        self.peer_links.entry(peer).or_default().insert(link);
        self.out
            .push_back(Output::Event(Event::LinkUp { link, peer }));
        self.update_peer_state(now, peer);
    }

    /// A `Data` frame for this node: delivered if it is its stream's next message, and an
    /// ack is owed either way (except for a stream this node cannot place); a frame this
    /// incarnation must refuse is answered at once with a reset `Ack` on the link it came in
    /// on ([`crate::bus::stream`] has the rules).
    fn on_data(&mut self, link: LinkId, via: NodeId, data: &wire::Data<'_>) {
        let src = data.src;
        let verdict =
            self.recv_streams
                .on_data(src, data.seq, data.dst_incarnation, data.retransmit);
        if verdict == Verdict::Deliver {
            self.out.push_back(Output::Received {
                from: src,
                via,
                msg_type: data.msg_type,
                payload: Bytes::copy_from_slice(data.payload),
            });
        }
        if verdict == Verdict::Reset {
            let reset = wire::Ack {
                src,
                dst: self.id,
                seq: data.seq,
                dst_incarnation: self.incarnation,
                reset: Some(self.now.as_nanos().saturating_sub(self.started.as_nanos())),
            };
            self.transmit(link, &Frame::Ack(reset));
            return;
        }
        if verdict != Verdict::Unknown {
            match self.acks_due.iter_mut().find(|(s, _)| *s == src) {
                Some(due) => due.1 = link,
                None => self.acks_due.push((src, link)),
            }
        }
    }

    /// Sends the acks owed after a batch of frames, one per stream, on the link its last
    /// data arrived on (relays carry it on toward the source).
    fn send_acks(&mut self) {
        let due = core::mem::take(&mut self.acks_due);
        for &(src, link) in &due {
            if !self.links.contains_key(&link) {
                continue;
            }
            if let Some(seq) = self.recv_streams.ack_seq(src) {
                let ack = wire::Ack {
                    src,
                    dst: self.id,
                    seq,
                    dst_incarnation: self.incarnation,
                    reset: None,
                };
                self.transmit(link, &Frame::Ack(ack));
            }
        }
        self.acks_due = due;
        self.acks_due.clear();
    }

    /// An `Ack` of one of our streams: an acknowledgement (messages end `Delivered`) or a
    /// reset (the stream is void: the messages no previous incarnation can have received
    /// move to a fresh stream and go out again, the ones before them end
    /// `Unknown(TargetRestarted)`; see [`SendStreams::on_reset`]).
    ///
    /// [`SendStreams::on_reset`]: crate::bus::stream::SendStreams::on_reset
    fn on_ack(&mut self, ack: &wire::Ack) {
        let now = self.now;
        let mut sink = OutSink(&mut self.out);
        let Some(age) = ack.reset else {
            self.send_streams
                .on_ack(ack.dst, ack.seq, ack.dst_incarnation, &mut sink);
            return;
        };
        let refusal = Refusal {
            seq: ack.seq,
            incarnation: ack.dst_incarnation,
            age: Duration::from_nanos(age),
        };
        let reset = self.send_streams.on_reset(ack.dst, refusal, now, &mut sink);
        if reset != Reset::Ignored {
            self.flush_target(ack.dst);
        }
    }

    /// A relay could not route our message `u.seq` to `u.dst`; `via` is the hop it came
    /// back from. Ignored unless the message is in flight on the current stream.
    ///
    /// A refusal for lack of a route right now (`NoRoute`, `UnknownTarget`, `Overloaded`) is
    /// transient: the messages stay in flight (that copy of the refused one provably did not
    /// arrive — [`SendStreams::on_refused`]). If the route still goes
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
    /// [`SendStreams::on_refused`]: crate::bus::stream::SendStreams::on_refused
    fn on_unreachable(&mut self, now: Instant, u: &wire::Unreachable, via: NodeId) {
        let dst = u.dst;
        if !self.send_streams.holds(dst, u.seq) {
            return;
        }
        self.send_streams.on_refused(dst, u.seq);
        let loop_detected = u.reason == UnreachableReason::HopLimit;
        if !loop_detected && self.connector.ready_hop(dst) != Some(via) {
            return;
        }
        let world = World {
            topology: &self.topology,
            discovery: &self.discovery,
        };
        self.connector.on_send_failed(now, &world, dst);
        self.apply_effects();
        if self.connector.ready_hop(dst).is_some_and(|hop| hop != via) {
            self.flush_target(dst);
            return;
        }
        if loop_detected {
            let mut sink = OutSink(&mut self.out);
            self.send_streams
                .give_up(dst, FailReason::NoRoute, &mut sink);
        }
    }

    /// Relays a `Data` frame for another node that arrived on `from_link` from `from`, by
    /// this node's own routing; one it cannot relay goes back as `Unreachable`.
    fn forward(&mut self, from_link: LinkId, from: NodeId, data: &wire::Data<'_>) {
        let (next, reason) = if data.hop_count >= MAX_HOPS {
            (None, UnreachableReason::HopLimit)
        } else {
            (
                self.forward_link(data.dst, from),
                UnreachableReason::NoRoute,
            )
        };
        if let Some(link) = next {
            let relayed = wire::Data {
                hop_count: data.hop_count + 1,
                ..*data
            };
            self.transmit(link, &Frame::Data(relayed));
            return;
        }
        self.out.push_back(Output::Event(Event::ForwardDropped {
            src: data.src,
            dst: data.dst,
            msg_type: data.msg_type,
        }));
        let notice = wire::Unreachable {
            src: data.src,
            dst: data.dst,
            seq: data.seq,
            reason,
        };
        self.transmit(from_link, &Frame::Unreachable(notice));
    }

    /// The link a relayed frame for `dst` goes out on: a direct link to it, else the hop
    /// of its ready route record, else the topology next hop, else our upstream — never back
    /// to the node it came from.
    pub(super) fn forward_link(&self, dst: NodeId, from: NodeId) -> Option<LinkId> {
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

    /// Heartbeats due at `now`: a `Ping` on each silent link, and links silent through
    /// `heartbeat_dead_after` pings closed with [`LinkError::HeartbeatTimeout`].
    pub(super) fn beat(&mut self, now: Instant) {
        let interval = self.config.heartbeat_interval;
        let dead_after = self.config.heartbeat_dead_after;
        let due: alloc::vec::Vec<LinkId> = self
            .links
            .iter()
            .filter(|(_, l)| l.heartbeat.is_some_and(|h| h.deadline(interval) <= now))
            .map(|(&id, _)| id)
            .collect();
        for link in due {
            // A late call catches up: every ping that was due, and the verdict.
            while let Some(hb) = self.links.get_mut(&link).and_then(|l| l.heartbeat.as_mut()) {
                match hb.poll(now, interval, dead_after) {
                    Beat::Idle => break,
                    Beat::Ping(nonce) => self.transmit(link, &Frame::Ping(wire::Ping { nonce })),
                    Beat::Dead => {
                        self.reject_link(now, link, LinkError::HeartbeatTimeout(dead_after));
                        break;
                    }
                }
            }
        }
    }

    /// Closes `link` because of what its peer sent (or did not send).
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
