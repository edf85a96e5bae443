//! Received bytes: frames cut from each link's stream, the handshake, delivery of this node's
//! messages, and the frames handed to the node ([`Inbound`]) or relayed for others.

use bytes::Bytes;

use super::{AwaitingAuth, Down, LinkError, LinkEvent, LinkSink, Links, MAX_HOPS, Phase};
use crate::{
    auth::{AuthFailure, Context, ROLE_ACCEPTOR, ROLE_DIALLER, Side, Transcript},
    bus::{
        handshake::{self, PROTOCOL_VERSIONS, PeerHello},
        heartbeat::Heartbeat,
        stream::Verdict,
    },
    ids::{LinkId, NodeId},
    time::Instant,
    wire::{
        self, DecodeError, Decoded, Frame, FrameKind, FrameLimits, Nonce, Proof, RefuseReason,
        UnreachableReason,
    },
};

/// What a received frame needs from the rest of the node, in frame order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// `link`'s handshake succeeded with `peer` in `incarnation`; `restarted` when an earlier
    /// handshake showed another incarnation of it.
    Up {
        /// The link.
        link: LinkId,
        /// The peer.
        peer: NodeId,
        /// Its incarnation.
        incarnation: u64,
        /// Whether it restarted since its last handshake.
        restarted: bool,
    },
    /// A link went away (the peer said `Bye`, or the link was rejected).
    Down(Down),
    /// An `Ack` (or reset) of one of this node's streams; `via` is the peer it arrived from
    /// (it counts only from the stream's route: the node checks).
    Ack {
        /// The ack.
        ack: wire::Ack,
        /// The peer it arrived from.
        via: NodeId,
    },
    /// A relay could not route one of this node's messages; `via` is the hop it came back
    /// from.
    Unreachable {
        /// The relay's notice.
        notice: wire::Unreachable,
        /// The peer it arrived from.
        via: NodeId,
    },
    /// An indirect probe from `via` on `link`: answer how this node sees the suspect
    /// (docs/ARCHITECTURE.md §9.3).
    Probe {
        /// The question.
        probe: wire::Probe,
        /// The link it came on (the answer goes back on it).
        link: LinkId,
    },
    /// The answer to one of this node's indirect probes, from `via`.
    ProbeAck {
        /// The answer.
        ack: wire::ProbeAck,
        /// The peer it came from.
        via: NodeId,
    },
    /// A frame for another node: ask the connector for the hop
    /// ([`relay_hop`](crate::connector::Connector::relay_hop) of [`Relay::dst`] from
    /// [`Relay::from`]) and hand it back with [`Links::relay`].
    Relay(Relay),
}

/// Which peers may carry messages from other sources to this node (the node answers from its
/// topology: [`crate::node`]).
///
/// A link's handshake proves who its peer is, not who wrote the messages it carries: a proxy
/// relays for other nodes, a leaf has no one to relay for. A `Data` frame whose `src` is not
/// the link's peer is taken only when [`may_relay`](Self::may_relay) says so.
pub trait Relays {
    /// Whether `via` (a link's proven peer) may carry a message whose source is `src`
    /// (never asked when `src == via`).
    fn may_relay(&self, via: NodeId, src: NodeId) -> bool;
}

/// Every peer may relay for every source: a link machine used without a topology (tests,
/// benchmarks of the bus alone). A node never uses it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnyRelay;

impl Relays for AnyRelay {
    fn may_relay(&self, _via: NodeId, _src: NodeId) -> bool {
        true
    }
}

/// A frame this node relays toward another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relay {
    from_link: LinkId,
    from: NodeId,
    frame: Relayed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Relayed {
    /// A message; its payload a slice of the received bytes.
    Data {
        header: wire::Data<'static>,
        payload: Bytes,
    },
    Ack(wire::Ack),
    Unreachable(wire::Unreachable),
}

impl Relay {
    /// The node the frame goes toward (a message's target; the source of an ack or notice).
    #[must_use]
    pub fn dst(&self) -> NodeId {
        match &self.frame {
            Relayed::Data { header, .. } => header.dst,
            Relayed::Ack(ack) => ack.src,
            Relayed::Unreachable(notice) => notice.src,
        }
    }

    /// The node a relayed message comes from (its `src`); `None` for an ack or notice.
    #[must_use]
    pub fn message_src(&self) -> Option<NodeId> {
        match &self.frame {
            Relayed::Data { header, .. } => Some(header.src),
            Relayed::Ack(_) | Relayed::Unreachable(_) => None,
        }
    }

    /// The peer the frame arrived from (never the hop it goes on to).
    #[must_use]
    pub fn from(&self) -> NodeId {
        self.from
    }

    /// Whether a hop is worth asking for (a message past its hop limit is refused anyway).
    #[must_use]
    pub fn needs_hop(&self) -> bool {
        !matches!(&self.frame, Relayed::Data { header, .. } if header.hop_count >= MAX_HOPS)
    }
}

impl Links {
    /// Bytes arrived on `link`, in any split; the frames are handled by
    /// [`next_inbound`](Self::next_inbound). Bytes on a link whose dial was not reported
    /// connected close it (the returned [`Down`]). Unknown links are ignored.
    pub fn receive<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        bytes: Bytes,
        sink: &mut S,
    ) -> Option<Down> {
        let l = self.table.get_mut(&link)?;
        if l.phase == Phase::Dialing {
            return self.reject(link, LinkError::NotConnected, sink);
        }
        l.reader.push_bytes(bytes);
        None
    }

    /// Handles `link`'s next complete frames until one needs the node, and returns it;
    /// `None` when no complete frame is left (or the link is gone). Call until `None`, then
    /// [`finish_receive`](Self::finish_receive).
    ///
    /// Handled here: the handshake (answering `HelloAck`), `Ping`, `Pong`, messages for this
    /// node ([`LinkSink::received`] for each stream's next message, exactly once; a reset
    /// `Ack` at once for a frame this incarnation must refuse), `Data` from a source the peer
    /// may not relay for (`relays`; dropped and counted), and every reason to close the link.
    pub fn next_inbound<S: LinkSink + ?Sized, R: Relays + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        sink: &mut S,
        relays: &R,
    ) -> Option<Inbound> {
        loop {
            let l = self.table.get_mut(&link)?;
            let bytes = match l.reader.next_frame_bytes() {
                Ok(None) => return None,
                Ok(Some(bytes)) => bytes,
                Err(DecodeError::KindNotAllowed { kind }) if l.phase != Phase::Up => {
                    return self.before_handshake(link, kind, sink);
                }
                Err(e) => {
                    return self
                        .reject(link, LinkError::Frame(e), sink)
                        .map(Inbound::Down);
                }
            };
            if let Some(hb) = l.heartbeat.as_mut() {
                hb.on_receive(now);
            }
            let frame = match wire::decode(&bytes, self.settings.max_frame) {
                Ok(Decoded::Frame(frame, _)) => frame,
                Ok(Decoded::NeedMore(_)) => {
                    let error = DecodeError::Truncated { field: "frame" };
                    return self
                        .reject(link, LinkError::Frame(error), sink)
                        .map(Inbound::Down);
                }
                Err(e) => {
                    return self
                        .reject(link, LinkError::Frame(e), sink)
                        .map(Inbound::Down);
                }
            };
            if let Some(inbound) = self.on_frame(now, link, &bytes, frame, sink, relays) {
                return Some(inbound);
            }
        }
    }

    /// Ends a received batch: one cumulative `Ack` per stream that received data (on the
    /// link its last data arrived on; relays carry it on toward the source), and the earliest
    /// heartbeat deadline made exact again ([`next_deadline`](Self::next_deadline)).
    pub fn finish_receive<S: LinkSink + ?Sized>(&mut self, sink: &mut S) {
        let due = core::mem::take(&mut self.acks_due);
        for &(src, ack_link) in &due {
            if !self.table.contains_key(&ack_link) {
                continue;
            }
            if let Some(seq) = self.recv.ack_seq(src) {
                let ack = wire::Ack {
                    src,
                    dst: self.settings.own,
                    seq,
                    dst_incarnation: self.settings.incarnation,
                    reset: None,
                };
                self.transmit(ack_link, &Frame::Ack(ack), sink);
            }
        }
        self.acks_due = due;
        self.acks_due.clear();
        self.settle_deadlines();
    }

    /// Relays `relay` on the link to `hop` (the connector's answer); without one a message
    /// goes back as `Unreachable` toward its source ([`LinkEvent::ForwardDropped`]) and an
    /// ack or notice is dropped.
    pub fn relay<S: LinkSink + ?Sized>(&mut self, relay: Relay, hop: Option<NodeId>, sink: &mut S) {
        let next = hop.and_then(|hop| self.link_to(hop));
        match relay.frame {
            Relayed::Data { header, payload } => {
                let (next, reason) = if header.hop_count >= MAX_HOPS {
                    (None, UnreachableReason::HopLimit)
                } else {
                    (next, UnreachableReason::NoRoute)
                };
                if let Some(link) = next {
                    let relayed = wire::Data {
                        hop_count: header.hop_count + 1,
                        payload: &payload,
                        ..header
                    };
                    sink.transmit_data(link, &relayed);
                    return;
                }
                sink.event(LinkEvent::ForwardDropped {
                    src: header.src,
                    dst: header.dst,
                    msg_type: header.msg_type,
                });
                let notice = wire::Unreachable {
                    src: header.src,
                    dst: header.dst,
                    seq: header.seq,
                    reason,
                    dst_incarnation: header.dst_incarnation,
                };
                self.transmit(relay.from_link, &Frame::Unreachable(notice), sink);
            }
            Relayed::Ack(ack) => {
                if let Some(link) = next {
                    self.transmit(link, &Frame::Ack(ack), sink);
                }
            }
            Relayed::Unreachable(notice) => {
                if let Some(link) = next {
                    self.transmit(link, &Frame::Unreachable(notice), sink);
                }
            }
        }
    }

    fn on_frame<S: LinkSink + ?Sized, R: Relays + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        bytes: &Bytes,
        frame: Frame<'_>,
        sink: &mut S,
        relays: &R,
    ) -> Option<Inbound> {
        let l = self.table.get(&link)?;
        let (phase, dialed, peer) = (l.phase, l.dialed, l.peer);
        let awaiting_auth = l.awaiting_auth.is_some();
        let up = peer.filter(|_| phase == Phase::Up);
        let hello = |node, incarnation, versions| PeerHello {
            node,
            incarnation,
            versions,
        };
        let reject = |links: &mut Links, reason, sink: &mut S| {
            links.reject(link, reason, sink).map(Inbound::Down)
        };
        match frame {
            Frame::Hello(_) | Frame::HelloAck(_) if phase == Phase::Up || awaiting_auth => {
                reject(self, LinkError::UnexpectedHello, sink)
            }
            Frame::Hello(h) => {
                let peer = hello(h.node, h.incarnation, h.versions);
                let nonce = h.challenge.map(|c| c.nonce);
                let key = h.challenge.map(|c| c.key_id);
                self.on_hello(now, link, dialed, &peer, nonce, key, None, sink)
            }
            Frame::HelloAck(h) => {
                let peer = hello(h.node, h.incarnation, h.versions);
                let ack = Some((h.result, h.proof));
                let key = h.proof.map(|p| p.key_id);
                self.on_hello(now, link, dialed, &peer, h.nonce, key, ack, sink)
            }
            Frame::Auth(auth) if awaiting_auth => self.on_auth(now, link, &auth.proof, sink),
            Frame::Data(_)
            | Frame::Ack(_)
            | Frame::Unreachable(_)
            | Frame::Ping(_)
            | Frame::Pong(_)
            | Frame::Probe(_)
            | Frame::ProbeAck(_)
            | Frame::Bye(_) => {
                let Some(via) = up else {
                    return self.before_handshake(link, frame.kind(), sink);
                };
                self.on_up_frame(now, link, via, bytes, frame, sink, relays)
            }
            other => reject(self, LinkError::UnexpectedFrame(other.kind()), sink),
        }
    }

    /// A frame of `kind` before `link`'s handshake finished (refused by the reader's
    /// handshake limits from its header, or a `Bye` that decoded): a bus frame is refused as
    /// unauthenticated with keys ([`AuthFailure::BeforeAuth`], counted) and as
    /// [`LinkError::DataBeforeHello`] without; any other kind is unexpected on a bus link.
    fn before_handshake<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        kind: FrameKind,
        sink: &mut S,
    ) -> Option<Inbound> {
        let bus_frame = matches!(
            kind,
            FrameKind::Data
                | FrameKind::Ack
                | FrameKind::Unreachable
                | FrameKind::Ping
                | FrameKind::Pong
                | FrameKind::Probe
                | FrameKind::ProbeAck
                | FrameKind::Bye
        );
        let error = if !bus_frame {
            LinkError::UnexpectedFrame(kind)
        } else if self.settings.keys.is_enabled() {
            return self.refuse_auth(link, AuthFailure::BeforeAuth, sink);
        } else {
            LinkError::DataBeforeHello
        };
        self.reject(link, error, sink).map(Inbound::Down)
    }

    /// Counts an authentication failure and closes `link` for it.
    fn refuse_auth<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        failure: AuthFailure,
        sink: &mut S,
    ) -> Option<Inbound> {
        self.refusals.count(failure);
        self.reject(link, LinkError::Unauthenticated(failure), sink)
            .map(Inbound::Down)
    }

    /// The dialler's `Auth` on an accepted link awaiting it: up if it proves a key we hold.
    fn on_auth<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        proof: &Proof,
        sink: &mut S,
    ) -> Option<Inbound> {
        let pending = self.table.get_mut(&link)?.awaiting_auth.take()?;
        if let Err(failure) = self.settings.keys.check(&pending.transcript, Some(proof)) {
            let bye = wire::Bye {
                reason: wire::ByeReason::ProtocolError,
            };
            self.transmit(link, &Frame::Bye(bye), sink);
            return self.refuse_auth(link, failure, sink);
        }
        if let Err(reason) = self.check_duplicate(pending.peer, pending.incarnation) {
            return self
                .reject(link, LinkError::Refused(reason), sink)
                .map(Inbound::Down);
        }
        Some(self.link_up(now, link, pending.peer, pending.incarnation))
    }

    /// A frame on an up link from `via`. A `Data` frame whose `src` is not `via` is taken
    /// only when `relays` says `via` may carry messages from that source; otherwise it is
    /// dropped — not delivered, not relayed, not acknowledged — and counted
    /// ([`forged_sources`](Self::forged_sources), [`LinkEvent::ForgedSource`]).
    #[allow(clippy::too_many_arguments)]
    fn on_up_frame<S: LinkSink + ?Sized, R: Relays + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        via: NodeId,
        bytes: &Bytes,
        frame: Frame<'_>,
        sink: &mut S,
        relays: &R,
    ) -> Option<Inbound> {
        let own = self.settings.own;
        match frame {
            Frame::Data(d) if d.src != via && !relays.may_relay(via, d.src) => {
                self.forged_sources += 1;
                sink.event(LinkEvent::ForgedSource {
                    link,
                    via,
                    src: d.src,
                    dst: d.dst,
                });
                None
            }
            Frame::Data(d) if d.dst == own => {
                self.on_data(now, link, via, bytes, &d, sink);
                None
            }
            Frame::Data(d) => Some(Inbound::Relay(Relay {
                from_link: link,
                from: via,
                frame: Relayed::Data {
                    payload: bytes.slice_ref(d.payload),
                    header: wire::Data {
                        src: d.src,
                        dst: d.dst,
                        seq: d.seq,
                        dst_incarnation: d.dst_incarnation,
                        retransmit: d.retransmit,
                        msg_type: d.msg_type,
                        hop_count: d.hop_count,
                        payload: &[],
                    },
                },
            })),
            Frame::Ack(ack) if ack.src == own => Some(Inbound::Ack { ack, via }),
            Frame::Ack(ack) => Some(Inbound::Relay(Relay {
                from_link: link,
                from: via,
                frame: Relayed::Ack(ack),
            })),
            Frame::Unreachable(notice) if notice.src == own => {
                Some(Inbound::Unreachable { notice, via })
            }
            Frame::Unreachable(notice) => Some(Inbound::Relay(Relay {
                from_link: link,
                from: via,
                frame: Relayed::Unreachable(notice),
            })),
            Frame::Probe(probe) => Some(Inbound::Probe { probe, link }),
            Frame::ProbeAck(ack) => Some(Inbound::ProbeAck { ack, via }),
            Frame::Ping(p) => {
                let pong = wire::Pong { nonce: p.nonce };
                self.transmit(link, &Frame::Pong(pong), sink);
                None
            }
            Frame::Bye(bye) => {
                sink.close(link);
                let mut down = self.close_link(link, sink)?;
                down.bye = Some(bye.reason);
                Some(Inbound::Down(down))
            }
            _ => None,
        }
    }

    /// A `Hello` (acceptor side, `ack` = `None`) or `HelloAck` (dialler side, with its
    /// result and proof) arrived on a link still handshaking; `nonce` and `peer_key` are the
    /// peer's nonce and the id of the key it proves with.
    #[allow(clippy::too_many_arguments)]
    fn on_hello<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        dialed: Option<NodeId>,
        hello: &PeerHello,
        nonce: Option<Nonce>,
        peer_key: Option<u8>,
        ack: Option<(Result<(), RefuseReason>, Option<Proof>)>,
        sink: &mut S,
    ) -> Option<Inbound> {
        let keyed = self.settings.keys.is_enabled();
        let refused = match (dialed, ack) {
            (None, Some(_)) => Some(LinkError::UnexpectedFrame(FrameKind::HelloAck)),
            (Some(_), None) => Some(LinkError::UnexpectedHello),
            (Some(_), Some((Err(reason), _))) if !keyed => Some(LinkError::RefusedByPeer(reason)),
            (Some(_), Some((Err(reason), proof))) => {
                return self.on_refusal(link, hello, nonce, reason, proof.as_ref(), sink);
            }
            _ => None,
        };
        if let Some(error) = refused {
            return self.reject(link, error, sink).map(Inbound::Down);
        }
        let id = hello.node;
        if let Some(expected) = dialed.filter(|&e| e != id) {
            let error = LinkError::PeerIdMismatch {
                expected,
                claimed: id,
            };
            return self.reject(link, error, sink).map(Inbound::Down);
        }
        let certified = self.table.get(&link).and_then(|l| l.certified.as_ref());
        if let Some(certified) = certified.filter(|ids| !ids.contains(&id)) {
            let error = LinkError::NotCertified {
                claimed: id,
                certified: certified.clone(),
            };
            return self.reject(link, error, sink).map(Inbound::Down);
        }
        let verdict = handshake::check_peer(self.settings.own, hello)
            .and_then(|()| self.check_duplicate(id, hello.incarnation));
        if let Err(reason) = verdict {
            if dialed.is_none() {
                let (own_nonce, proof) = self.prove_refusal(hello, nonce, peer_key, reason);
                self.send_hello_ack(link, Err(reason), own_nonce, proof, sink);
            }
            let error = if reason == RefuseReason::InvalidHello {
                LinkError::InvalidPeerId(id)
            } else {
                LinkError::Refused(reason)
            };
            return self.reject(link, error, sink).map(Inbound::Down);
        }
        if !self.settings.keys.is_enabled() {
            if dialed.is_none() {
                self.send_hello_ack(link, Ok(()), None, None, sink);
            }
            return Some(self.link_up(now, link, id, hello.incarnation));
        }
        let peer_side = |nonce| Side {
            node: id,
            incarnation: hello.incarnation,
            versions: hello.versions,
            nonce,
        };
        let own_side = |nonce| Side {
            node: self.settings.own,
            incarnation: self.settings.incarnation,
            versions: PROTOCOL_VERSIONS,
            nonce,
        };
        match ack {
            // Acceptor: a fresh dialler nonce, then our nonce and proof; up on its `Auth`.
            None => {
                let failure = match nonce {
                    None => Some(AuthFailure::NoProof),
                    Some(n) if !self.replay.admit(n) => Some(AuthFailure::Replay),
                    Some(_) => None,
                };
                if let Some(failure) = failure {
                    self.send_hello_ack(link, Err(RefuseReason::WrongCluster), None, None, sink);
                    return self.refuse_auth(link, failure, sink);
                }
                let dialler_nonce = nonce.expect("checked above");
                let own_nonce = self.nonces.next_nonce();
                let transcript = |role| Transcript {
                    context: Context::Bus,
                    role,
                    hint: peer_key.unwrap_or_default(),
                    result: Ok(()),
                    dialler: peer_side(dialler_nonce),
                    acceptor: own_side(own_nonce),
                };
                let proof = self
                    .settings
                    .keys
                    .prove_with(&transcript(ROLE_ACCEPTOR), peer_key);
                let expect = transcript(ROLE_DIALLER);
                self.send_hello_ack(link, Ok(()), Some(own_nonce), proof, sink);
                if let Some(l) = self.table.get_mut(&link) {
                    l.awaiting_auth = Some(AwaitingAuth {
                        peer: id,
                        incarnation: hello.incarnation,
                        transcript: expect,
                    });
                }
                None
            }
            // Dialler: check the acceptor's proof, then prove ourselves; up.
            Some((_, proof)) => {
                let own_nonce = self.table.get(&link).and_then(|l| l.nonce);
                let (Some(own_nonce), Some(peer_nonce)) = (own_nonce, nonce) else {
                    return self.refuse_auth(link, AuthFailure::NoProof, sink);
                };
                let hint = self.settings.keys.current_id().unwrap_or_default();
                let transcript = |role| Transcript {
                    context: Context::Bus,
                    role,
                    hint,
                    result: Ok(()),
                    dialler: own_side(own_nonce),
                    acceptor: peer_side(peer_nonce),
                };
                let theirs = transcript(ROLE_ACCEPTOR);
                if let Err(failure) = self.settings.keys.check(&theirs, proof.as_ref()) {
                    return self.refuse_auth(link, failure, sink);
                }
                let ours = self
                    .settings
                    .keys
                    .prove_with(&transcript(ROLE_DIALLER), peer_key);
                if let Some(proof) = ours {
                    self.transmit(link, &Frame::Auth(wire::Auth { proof }), sink);
                }
                Some(self.link_up(now, link, id, hello.incarnation))
            }
        }
    }

    /// A keyed dialler's `HelloAck` refused the link for `reason`: believed — the link closed
    /// with [`LinkError::RefusedByPeer`] — only when the acceptor proved it (its nonce, and a
    /// proof over the exchange with that result checking with our keys). Otherwise anyone
    /// who could answer the dial may have said it: the link closes as
    /// [`LinkError::UnprovenRefusal`], counted ([`unproven_refusals`](Self::unproven_refusals)),
    /// and goes down as a failed dial (no refusal reason: the connector retries with its
    /// backoff, and nothing ends or gives up on the word of an unknown peer).
    fn on_refusal<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        hello: &PeerHello,
        nonce: Option<Nonce>,
        reason: RefuseReason,
        proof: Option<&Proof>,
        sink: &mut S,
    ) -> Option<Inbound> {
        let own_nonce = self.table.get(&link).and_then(|l| l.nonce);
        let proven = match (own_nonce, nonce) {
            (Some(own_nonce), Some(peer_nonce)) => {
                let transcript = Transcript {
                    context: Context::Bus,
                    role: ROLE_ACCEPTOR,
                    hint: self.settings.keys.current_id().unwrap_or_default(),
                    result: Err(reason),
                    dialler: Side {
                        node: self.settings.own,
                        incarnation: self.settings.incarnation,
                        versions: PROTOCOL_VERSIONS,
                        nonce: own_nonce,
                    },
                    acceptor: Side {
                        node: hello.node,
                        incarnation: hello.incarnation,
                        versions: hello.versions,
                        nonce: peer_nonce,
                    },
                };
                self.settings.keys.check(&transcript, proof).is_ok()
            }
            _ => false,
        };
        let error = if proven {
            LinkError::RefusedByPeer(reason)
        } else {
            self.unproven_refusals += 1;
            LinkError::UnprovenRefusal(reason)
        };
        self.reject(link, error, sink).map(Inbound::Down)
    }

    /// An acceptor with keys refusing a `Hello` that carried a challenge proves its refusal
    /// (a fresh nonce and a proof over the exchange with `Err(reason)`), so the dialler may
    /// believe it; `(None, None)` without keys or without the dialler's nonce.
    fn prove_refusal(
        &mut self,
        hello: &PeerHello,
        dialler_nonce: Option<Nonce>,
        hint: Option<u8>,
        reason: RefuseReason,
    ) -> (Option<Nonce>, Option<Proof>) {
        let Some(dialler_nonce) = dialler_nonce.filter(|_| self.settings.keys.is_enabled()) else {
            return (None, None);
        };
        let own_nonce = self.nonces.next_nonce();
        let transcript = Transcript {
            context: Context::Bus,
            role: ROLE_ACCEPTOR,
            hint: hint.unwrap_or_default(),
            result: Err(reason),
            dialler: Side {
                node: hello.node,
                incarnation: hello.incarnation,
                versions: hello.versions,
                nonce: dialler_nonce,
            },
            acceptor: Side {
                node: self.settings.own,
                incarnation: self.settings.incarnation,
                versions: PROTOCOL_VERSIONS,
                nonce: own_nonce,
            },
        };
        let proof = self.settings.keys.prove_with(&transcript, hint);
        (Some(own_nonce), proof)
    }

    /// The duplicate-id rule: a peer id already live on another link must come with the same
    /// incarnation (a parallel or redialled link of the same life); another incarnation while
    /// the old link is up is refused — the old link is closed by its heartbeat if it is dead.
    fn check_duplicate(&self, id: NodeId, incarnation: u64) -> Result<(), RefuseReason> {
        let live = self.peer_links.get(&id).into_iter().flatten();
        for other in live {
            if self
                .table
                .get(other)
                .is_some_and(|l| l.incarnation != incarnation)
            {
                return Err(RefuseReason::DuplicateId);
            }
        }
        Ok(())
    }

    fn send_hello_ack<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        result: Result<(), RefuseReason>,
        nonce: Option<Nonce>,
        proof: Option<Proof>,
        sink: &mut S,
    ) {
        let name = core::mem::take(&mut self.settings.name);
        let ack = wire::HelloAck {
            node: self.settings.own,
            incarnation: self.settings.incarnation,
            versions: PROTOCOL_VERSIONS,
            name: &name,
            nonce,
            proof,
            result,
        };
        self.transmit(link, &Frame::HelloAck(ack), sink);
        self.settings.name = name;
    }

    /// The handshake of `link` succeeded with `peer` in `incarnation`.
    fn link_up(&mut self, now: Instant, link: LinkId, peer: NodeId, incarnation: u64) -> Inbound {
        if let Some(l) = self.table.get_mut(&link) {
            if l.phase == Phase::Handshaking && l.dialed.is_none() {
                self.pending_accepts -= 1;
            }
            l.phase = Phase::Up;
            l.reader
                .set_limits(FrameLimits::up_to(self.settings.max_frame));
            l.peer = Some(peer);
            l.incarnation = incarnation;
            l.handshake_deadline = None;
            let hb = Heartbeat::new(now);
            l.heartbeat = Some(hb);
            self.deadlines
                .replace(link, hb.deadline(self.settings.heartbeat_interval));
        }
        let previous = self.peer_incarnations.insert(peer, incarnation);
        self.peer_links.entry(peer).or_default().insert(link);
        Inbound::Up {
            link,
            peer,
            incarnation,
            restarted: previous.is_some_and(|p| p != incarnation),
        }
    }

    /// A `Data` frame for this node: delivered if it is its stream's next message (its
    /// payload a slice of `bytes`), and an ack is owed either way (except for a stream this
    /// node cannot place); a frame this incarnation must refuse is answered at once with a
    /// reset `Ack` on the link it came in on ([`crate::bus::stream`] has the rules).
    fn on_data<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        via: NodeId,
        bytes: &Bytes,
        data: &wire::Data<'_>,
        sink: &mut S,
    ) {
        let src = data.src;
        if !self.recv.holds(src) {
            self.new_sources.push(src);
        }
        let verdict = self
            .recv
            .on_data(src, data.seq, data.dst_incarnation, data.retransmit);
        self.recv.heard(src, now);
        match verdict {
            Verdict::Deliver => {
                sink.received(src, via, data.msg_type, bytes.slice_ref(data.payload));
            }
            Verdict::Reset => {
                let reset = wire::Ack {
                    src,
                    dst: self.settings.own,
                    seq: data.seq,
                    dst_incarnation: self.settings.incarnation,
                    reset: Some(now.as_nanos().saturating_sub(self.started.as_nanos())),
                };
                self.transmit(link, &Frame::Ack(reset), sink);
                return;
            }
            _ => {}
        }
        if verdict != Verdict::Unknown {
            match self.acks_due.iter_mut().find(|(s, _)| *s == src) {
                Some(due) => due.1 = link,
                None => self.acks_due.push((src, link)),
            }
        }
    }
}
