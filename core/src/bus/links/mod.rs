//! The link table: every connection of a node, from dial or accept through the handshake to
//! close, with its heartbeat, its frame reader and the acknowledgements it owes.
//!
//! [`Links`] is the bus machine between the transport and the node. The node creates a link
//! when the connector wants a dial ([`Links::dial`]) or the driver accepted one
//! ([`Links::accept`]); the driver's reports (`connected`, `closed`) and bytes
//! ([`Links::receive`] then [`Links::next_inbound`] until `None`, then
//! [`Links::finish_receive`]) come here. This machine does, on its own, everything that
//! concerns one link: the `Hello`/`HelloAck` exchange ([`super::handshake`]) and the
//! duplicate-id rule, `Ping`/`Pong`, the heartbeat verdict ([`super::heartbeat`]), delivery
//! of `Data` frames for this node in stream order with one coalesced `Ack` per stream and
//! batch ([`super::stream::RecvStreams`]), and closing a link whose peer misbehaves
//! ([`LinkError`]). What needs the rest of the node comes back as an [`Inbound`], one at a
//! time and in frame order: a link up or down (the connector's link state, the outbox's
//! incarnation), an `Ack` or `Unreachable` for one of this node's streams, and a frame to
//! relay — the node asks the connector for the hop ([`Connector::relay_hop`]) and hands the
//! frame back with it ([`Links::relay`]).
//!
//! Effects go to a [`LinkSink`] (the node's output queue), in order.
//!
//! # Handshake
//!
//! The dialler sends `Hello` (id, name, incarnation, protocol versions, and with cluster keys
//! a challenge); the acceptor judges it and answers `HelloAck` — accepted, or refused with a
//! reason and closed: no common version, no challenge or a replayed one (`WrongCluster`), an
//! invalid id, or an id already live on another link with a *different* incarnation (the same
//! incarnation is a parallel or redialled link; the lowest link id carries traffic). With
//! keys, the accepting `HelloAck` carries the acceptor's nonce and proof; the dialler checks
//! it, sends its own proof (`Auth`) and is up; the acceptor is up only once that proof checks
//! ([`super::handshake`]). A failed proof, or any other frame before it, closes the link
//! ([`LinkError::Unauthenticated`], counted by kind in [`Links::auth_refusals`]). A dialled peer whose `HelloAck` names
//! another id than dialled is closed. Bytes before the dial was reported connected, a second
//! `Hello`, anything but a handshake frame before the handshake, and a frame that does not
//! decode each close the link with a [`LinkError`]. With keys, a refusing `HelloAck` is
//! believed only when proven ([`LinkError::UnprovenRefusal`] otherwise: a failed dial).
//!
//! Until a link is up its reader accepts only the handshake kinds, each up to its largest
//! valid encoding ([`FrameLimits::handshake`]): a peer announcing a larger frame, or another
//! kind, is refused from the frame's header, before its body is buffered. Once up, every kind
//! up to `max_frame`.
//!
//! # After the handshake
//!
//! The handshake proves the peer's id, not the sources of the frames it carries: a `Data`
//! frame whose `src` is not the peer is taken only when the node's [`Relays`] says the peer
//! may relay for it (otherwise dropped and counted: [`LinkEvent::ForgedSource`]). Acks and
//! notices for this node's streams go to the node with the peer they came from
//! ([`Inbound::Ack`], [`Inbound::Unreachable`]), which takes them only from the stream's
//! route.
//!
//! # Deadlines
//!
//! Every link past its dial has one deadline, in one keyed timer queue
//! ([`collect_due`](Links::collect_due) / [`next_due`](Links::next_due) / [`expire`](Links::expire)):
//!
//! - **Handshake.** A link accepted, or dialled and reported connected, at `t` that has not
//!   finished the `Hello`/`HelloAck` exchange at exactly `t + handshake_timeout` is closed
//!   ([`LinkEvent::HandshakeTimeout`]; a dialled one comes back as a [`Down`], like a failed
//!   dial). Bytes do not extend it: a peer that sends nothing, or a frame it never finishes,
//!   is closed all the same. At most `max_pending_handshakes` accepted links handshake at
//!   once; a connection accepted beyond that is closed at once ([`LinkEvent::HandshakeLimit`]).
//! - **Heartbeat.** A link silent for `heartbeat_interval` gets a `Ping`, and another after
//!   each further silent interval; a link last heard at `t` is closed at exactly
//!   `t + heartbeat_interval × heartbeat_dead_after` ([`LinkError::HeartbeatTimeout`]).
//!
//! An up link's entry is at or before its heartbeat deadline: received traffic leaves the
//! queue alone and only the earliest entry is made exact after a batch, so
//! [`next_deadline`](Links::next_deadline) is exact and O(1) and receiving costs no timer
//! update.
//!
//! [`Connector::relay_hop`]: crate::connector::Connector::relay_hop

mod probe;
mod receive;
#[cfg(test)]
mod tests;
mod view;

use alloc::{
    collections::{BTreeMap, BTreeSet},
    string::String,
    vec::Vec,
};

use bytes::Bytes;
use foldhash::fast::FixedState;
use hashbrown::HashMap;
pub use receive::{AnyRelay, Inbound, Relay, Relays};
pub use view::LinkView;

use super::{
    handshake::PROTOCOL_VERSIONS,
    heartbeat::{Beat, Heartbeat},
    stream::RecvStreams,
};
use crate::{
    auth::{
        AuthFailure, AuthRefusals, ClusterKeys, NonceEntropy, NonceSource, ReplayGuard, Transcript,
    },
    ids::{IdSource, LinkId, NodeId},
    rng::Rng,
    time::{Duration, Instant},
    timer::TimerQueue,
    wire::{
        self, ByeReason, DecodeError, Frame, FrameKind, FrameLimits, FrameReader, Nonce,
        RefuseReason,
    },
};

/// Relays a `Data` frame may take before it is dropped (a routing loop guard).
pub const MAX_HOPS: u8 = 16;

/// Where the effects of the link machine go, in order.
pub trait LinkSink {
    /// Dial `addr` for `link`, the peer being `peer`.
    fn connect(&mut self, link: LinkId, peer: NodeId, addr: String);
    /// Write `bytes` on `link`.
    fn transmit(&mut self, link: LinkId, bytes: Bytes);
    /// Write the `Data` frame `data` on `link` (a relayed message). A sink that batches
    /// frames per link appends it to the link's open buffer; by default it is encoded into
    /// bytes of its own and handed to [`transmit`](LinkSink::transmit).
    fn transmit_data(&mut self, link: LinkId, data: &wire::Data<'_>) {
        let mut bytes = Vec::with_capacity(wire::encoded_len(&Frame::Data(*data)));
        wire::encode(&Frame::Data(*data), &mut bytes)
            .expect("relayed frames were decoded within the limit");
        self.transmit(link, Bytes::from(bytes));
    }
    /// Close `link` (the machine already forgot it).
    fn close(&mut self, link: LinkId);
    /// A message for this node, its payload a slice of the received bytes.
    fn received(&mut self, from: NodeId, via: NodeId, msg_type: u32, payload: Bytes);
    /// Something observable happened to a link.
    fn event(&mut self, event: LinkEvent);
}

/// What the link machine reports for observability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// A link is gone (closed by either side, or its dial failed).
    Closed {
        /// The link.
        link: LinkId,
        /// Its peer, if known (or the node it dialled).
        peer: Option<NodeId>,
    },
    /// This node closed a link because of what the peer sent (or did not send).
    Rejected {
        /// The link.
        link: LinkId,
        /// What was wrong.
        reason: LinkError,
    },
    /// A link was still handshaking at its `handshake_timeout` and was closed (a
    /// [`Closed`](Self::Closed) follows).
    HandshakeTimeout {
        /// The link.
        link: LinkId,
        /// The node it was dialled for (`None`: an accepted link).
        dialed: Option<NodeId>,
    },
    /// An accepted link still handshaking was closed to make room for a new connection:
    /// `max_pending_handshakes` accepted links were handshaking ([`Links::accept`] says which
    /// one is chosen).
    HandshakeLimit {
        /// The link closed.
        link: LinkId,
    },
    /// A `Data` frame claimed a source its link's peer may not relay for ([`Relays`]); it
    /// was dropped (not delivered, relayed or acknowledged) and counted
    /// ([`Links::forged_sources`]). The link stays up.
    ForgedSource {
        /// The link.
        link: LinkId,
        /// The link's proven peer.
        via: NodeId,
        /// The source the frame claimed.
        src: NodeId,
        /// Its destination.
        dst: NodeId,
    },
    /// A frame for another node could not be relayed; an `Unreachable` went back.
    ForwardDropped {
        /// Original sender.
        src: NodeId,
        /// Intended target.
        dst: NodeId,
        /// Application message type.
        msg_type: u32,
    },
}

/// Why a link was closed by this node.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The byte stream did not decode.
    #[error("malformed frame: {0}")]
    Frame(#[from] DecodeError),
    /// This node refused the peer's handshake (a `HelloAck` with the reason went back to an
    /// accepted link before it was closed).
    #[error("handshake refused: {0:?}")]
    Refused(RefuseReason),
    /// The peer refused our handshake (with cluster keys: a refusal it proved).
    #[error("the peer refused the handshake: {0:?}")]
    RefusedByPeer(RefuseReason),
    /// With cluster keys, the peer's `HelloAck` refused our handshake without proving it
    /// (no nonce or no proof, or one that does not check): not believed — the link is closed
    /// as a failed dial, retried with the usual backoff, and counted
    /// ([`Links::unproven_refusals`]).
    #[error("unproven refusal ({0:?}): treated as a failed dial")]
    UnprovenRefusal(RefuseReason),
    /// The peer stayed silent for `heartbeat_dead_after` heartbeat intervals (a half-open
    /// link); the value is that count.
    #[error("silent for {0} heartbeat intervals")]
    HeartbeatTimeout(u32),
    /// A frame this side of the link never expects (a `HelloAck` on an accepted link, a
    /// registry frame on a bus link).
    #[error("unexpected {0:?} frame")]
    UnexpectedFrame(FrameKind),
    /// The peer we dialled introduced itself as another node.
    #[error("dialled {expected} but the peer says it is {claimed}")]
    PeerIdMismatch {
        /// The node we dialled.
        expected: NodeId,
        /// The id its `Hello` claimed.
        claimed: NodeId,
    },
    /// The peer claimed id 0 or this node's own id.
    #[error("peer claims invalid id {0}")]
    InvalidPeerId(NodeId),
    /// A second `Hello` on an established link.
    #[error("unexpected hello on an established link")]
    UnexpectedHello,
    /// `Data` before the handshake finished.
    #[error("data before the handshake")]
    DataBeforeHello,
    /// Bytes on a link whose dial was not reported connected yet.
    #[error("bytes received before the link was connected")]
    NotConnected,
    /// The peer failed the cluster-key challenge ([`super::handshake`]); counted by kind in
    /// [`Links::auth_refusals`].
    #[error("authentication failed: {0:?}")]
    Unauthenticated(AuthFailure),
    /// The peer's handshake claimed an id its transport credentials do not name (its TLS
    /// certificate names other node ids; [`Links::bind_identity`]).
    #[error(
        "the peer says it is {claimed} but its certificate names [{}]",
        IdList(certified)
    )]
    NotCertified {
        /// The id its `Hello` (or `HelloAck`) claimed.
        claimed: NodeId,
        /// The ids its credentials name.
        certified: Vec<NodeId>,
    },
}

/// Ids as `0x7, 0x9` (for [`LinkError::NotCertified`]).
struct IdList<'a>(&'a [NodeId]);

impl core::fmt::Display for IdList<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{id}")?;
        }
        Ok(())
    }
}

/// What a node tells its links about itself.
#[derive(Clone, Debug)]
pub struct LinkSettings {
    /// This node's id.
    pub own: NodeId,
    /// This node's name (sent in the handshake).
    pub name: String,
    /// This node's incarnation.
    pub incarnation: u64,
    /// The cluster keys (none: no authentication).
    pub keys: ClusterKeys,
    /// Silence before a `Ping`.
    pub heartbeat_interval: Duration,
    /// Silent intervals after which a link is dead.
    pub heartbeat_dead_after: u32,
    /// Time from accept (or a dial's connect) to a finished handshake.
    pub handshake_timeout: Duration,
    /// Accepted links that may be handshaking at once.
    pub max_pending_handshakes: usize,
    /// The largest frame an up link accepts (before its handshake a link accepts only the
    /// handshake kinds, each up to its largest valid encoding: [`FrameLimits::handshake`]).
    pub max_frame: usize,
    /// The driver's randomness for handshake nonces (zeros: the seeded generator alone).
    pub nonce_entropy: NonceEntropy,
}

impl LinkSettings {
    /// The settings a node with `config` runs its links with, as this life (`incarnation`).
    #[must_use]
    pub fn from_config(config: &crate::config::Config, incarnation: u64) -> LinkSettings {
        LinkSettings {
            own: config.id,
            name: config.name.clone(),
            incarnation,
            keys: config.auth_keys(),
            heartbeat_interval: config.heartbeat_interval,
            heartbeat_dead_after: config.heartbeat_dead_after,
            handshake_timeout: config.handshake_timeout,
            max_pending_handshakes: config.max_pending_handshakes,
            max_frame: wire::DEFAULT_MAX_FRAME,
            nonce_entropy: config.nonce_entropy,
        }
    }
}

/// Where a link is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// `Connect` emitted, `connected` not yet reported.
    Dialing,
    /// Connected (or accepted); waiting for the peer's `Hello`.
    Handshaking,
    /// Handshake done; the peer is known.
    Up,
}

#[derive(Clone, Debug)]
struct Link {
    phase: Phase,
    /// The node we dialled (`None` for an accepted link).
    dialed: Option<NodeId>,
    /// The peer, once its `Hello` arrived.
    peer: Option<NodeId>,
    /// The peer's incarnation, once its `Hello` arrived.
    incarnation: u64,
    reader: FrameReader,
    /// When the handshake must be done by, once the link is accepted or connected.
    handshake_deadline: Option<Instant>,
    /// Liveness, once the link is up.
    heartbeat: Option<Heartbeat>,
    /// Dialled with keys: the nonce our `Hello` carried.
    nonce: Option<Nonce>,
    /// Accepted with keys, `HelloAck` sent: what the dialler's `Auth` must prove.
    awaiting_auth: Option<AwaitingAuth>,
    /// The ids the transport proved the peer may claim ([`Links::bind_identity`]); `None`:
    /// not bound, any id.
    certified: Option<Vec<NodeId>>,
}

/// An accepted link whose dialler still owes its proof.
#[derive(Clone, Copy, Debug)]
struct AwaitingAuth {
    peer: NodeId,
    incarnation: u64,
    transcript: Transcript,
}

/// A link that went away: what the node must re-evaluate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Down {
    /// The peer of its handshake, if it got that far.
    pub peer: Option<NodeId>,
    /// The node it was dialled for, if it was dialled.
    pub dialed: Option<NodeId>,
    /// The peer's incarnation, if its handshake got that far (else 0).
    pub incarnation: u64,
    /// The handshake was refused with this reason, by the peer or by us (either way the peer
    /// answered: it is alive).
    pub refused: Option<RefuseReason>,
    /// The peer closed the link on purpose, saying `Bye` with this reason.
    pub bye: Option<ByeReason>,
}

/// Every link of one node; see the [module docs](self).
#[derive(Debug)]
pub struct Links {
    settings: LinkSettings,
    /// Nonces.
    nonces: NonceSource,
    /// Dialler nonces seen lately.
    replay: ReplayGuard,
    /// Handshakes refused for authentication, by kind.
    refusals: AuthRefusals,
    /// `Data` frames dropped for a source their link's peer may not relay for.
    forged_sources: u64,
    /// `HelloAck` refusals not proven (with keys), not believed.
    unproven_refusals: u64,
    ids: IdSource,
    /// Every link by id: a hash map (the ids are the core's own, so a fixed hasher is safe),
    /// looked up on every frame; the few walks that need an order sort the ids they collect.
    table: HashMap<LinkId, Link, FixedState>,
    /// Up links per peer, ascending: the lowest carries traffic.
    peer_links: BTreeMap<NodeId, BTreeSet<LinkId>>,
    /// The last incarnation seen in each peer's handshake (restart detection).
    peer_incarnations: BTreeMap<NodeId, u64>,
    /// Delivered sequence numbers per source.
    recv: RecvStreams,
    /// When this incarnation started (its age goes out in reset acks).
    started: Instant,
    /// Acks owed after the frames of one received batch: (stream source, link).
    acks_due: Vec<(NodeId, LinkId)>,
    /// Sources whose receive stream the batch created (the node schedules their departure,
    /// so a stream of a source it never hears die is bounded too).
    new_sources: Vec<NodeId>,
    /// The deadline of every link past its dial: the handshake's, then the heartbeat's.
    deadlines: TimerQueue<LinkId>,
    /// The links [`collect_due`](Self::collect_due) found due, highest id first (kept, so a
    /// heartbeat allocates nothing).
    expired: Vec<(LinkId, Instant)>,
    /// Accepted links still handshaking (capped by `max_pending_handshakes`).
    pending_accepts: usize,
    /// Reused encode buffer.
    wbuf: Vec<u8>,
}

impl Links {
    /// No links, for a node started at `now`; handshake nonces draw from `rng`.
    #[must_use]
    pub fn new(settings: LinkSettings, now: Instant, mut rng: Rng) -> Links {
        let nonces = NonceSource::new(&settings.nonce_entropy, &mut rng);
        Links {
            recv: RecvStreams::new(settings.incarnation),
            settings,
            nonces,
            replay: ReplayGuard::default(),
            refusals: AuthRefusals::default(),
            forged_sources: 0,
            unproven_refusals: 0,
            ids: IdSource::new(),
            table: HashMap::default(),
            peer_links: BTreeMap::new(),
            peer_incarnations: BTreeMap::new(),
            started: now,
            acks_due: Vec::new(),
            new_sources: Vec::new(),
            deadlines: TimerQueue::new(),
            expired: Vec::new(),
            pending_accepts: 0,
            wbuf: Vec::new(),
        }
    }

    /// Handshakes refused for authentication so far, by kind.
    #[must_use]
    pub fn auth_refusals(&self) -> AuthRefusals {
        self.refusals
    }

    /// `Data` frames dropped so far because their link's peer may not relay for the source
    /// they claimed ([`LinkEvent::ForgedSource`]).
    #[must_use]
    pub fn forged_sources(&self) -> u64 {
        self.forged_sources
    }

    /// `HelloAck` refusals so far that a keyed dialler did not believe for lack of a proof
    /// ([`LinkError::UnprovenRefusal`]).
    #[must_use]
    pub fn unproven_refusals(&self) -> u64 {
        self.unproven_refusals
    }

    /// The incarnation `peer` had in its last handshake with this node (0 = none seen).
    #[must_use]
    pub fn peer_incarnation(&self, peer: NodeId) -> u64 {
        self.peer_incarnations.get(&peer).copied().unwrap_or(0)
    }

    /// Closes every link to `peer` whose handshake showed another incarnation than
    /// `incarnation` (a half-open link to a life the registry says is over), reporting each
    /// like a closed link. Returns what went down.
    pub fn close_stale<S: LinkSink + ?Sized>(
        &mut self,
        peer: NodeId,
        incarnation: u64,
        sink: &mut S,
    ) -> Vec<Down> {
        self.close_where(peer, |l| l.incarnation != incarnation, sink)
    }

    /// Closes every link to `peer` whose handshake showed `incarnation` (a life found dead:
    /// a parallel link whose close has not been reported yet is a zombie), reporting each
    /// like a closed link. Returns what went down.
    pub fn close_incarnation<S: LinkSink + ?Sized>(
        &mut self,
        peer: NodeId,
        incarnation: u64,
        sink: &mut S,
    ) -> Vec<Down> {
        self.close_where(peer, |l| l.incarnation == incarnation, sink)
    }

    fn close_where<S: LinkSink + ?Sized>(
        &mut self,
        peer: NodeId,
        pick: impl Fn(&Link) -> bool,
        sink: &mut S,
    ) -> Vec<Down> {
        let mut stale: Vec<LinkId> = self
            .table
            .iter()
            .filter(|(_, l)| l.peer == Some(peer) && pick(l))
            .map(|(&id, _)| id)
            .collect();
        stale.sort_unstable();
        let mut downs = Vec::new();
        for link in stale {
            sink.close(link);
            downs.extend(self.close_link(link, sink));
        }
        downs
    }

    /// Tells each of `sources` (the nodes this one relayed for toward `peer`) that `peer`'s
    /// incarnation `incarnation` is `reason` (gone, or reachable again): an `Unreachable` this
    /// node originates, sent on the up link to the hop `hop_to` names for the source; dropped
    /// without one.
    pub fn tell_sources<S: LinkSink + ?Sized>(
        &mut self,
        sources: &[NodeId],
        (peer, incarnation): (NodeId, u64),
        reason: wire::UnreachableReason,
        hop_to: impl Fn(NodeId) -> Option<NodeId>,
        sink: &mut S,
    ) {
        for &src in sources {
            let Some(link) = hop_to(src).and_then(|hop| self.link_to(hop)) else {
                continue;
            };
            let notice = wire::Unreachable {
                src,
                dst: peer,
                seq: 0,
                reason,
                dst_incarnation: incarnation,
            };
            self.transmit(link, &Frame::Unreachable(notice), sink);
        }
    }

    /// Links held (dialling, handshaking or up).
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no link is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The next source whose receive stream the last batch created.
    pub(crate) fn pop_new_source(&mut self) -> Option<NodeId> {
        self.new_sources.pop()
    }

    /// Forgets what the links remember of `peer` — its receive stream, its handshake
    /// incarnation — once it departed a grace ago with no link left, unless a frame of its
    /// stream was heard within `grace` before `now` ([`RecvStreams::forget`]; `false`: kept,
    /// docs/ARCHITECTURE.md §9.4).
    pub(crate) fn forget_peer(&mut self, peer: NodeId, now: Instant, grace: Duration) -> bool {
        let forgotten = self.recv.forget(peer, now, grace);
        if forgotten {
            self.peer_incarnations.remove(&peer);
        }
        forgotten
    }

    /// Whether the links remember `peer` (its handshake incarnation or its receive stream).
    pub(crate) fn remembers(&self, peer: NodeId) -> bool {
        self.peer_incarnations.contains_key(&peer) || self.recv.holds(peer)
    }

    /// Entries of the per-peer tables: peers with an up link, peers whose handshake
    /// incarnation is remembered, receive streams.
    pub(crate) fn peer_table_sizes(&self) -> (usize, usize, usize) {
        (
            self.peer_links.len(),
            self.peer_incarnations.len(),
            self.recv.len(),
        )
    }

    /// The peer of `link` once its handshake is done.
    #[must_use]
    pub fn peer(&self, link: LinkId) -> Option<NodeId> {
        self.table.get(&link).and_then(|l| l.peer)
    }

    /// The up link that carries traffic to `peer` (the lowest link id among its up links).
    #[must_use]
    pub fn link_to(&self, peer: NodeId) -> Option<LinkId> {
        self.peer_links
            .get(&peer)
            .and_then(|links| links.first().copied())
    }

    /// Every up link to `peer`, ascending (the first carries traffic).
    pub fn up_links(&self, peer: NodeId) -> impl Iterator<Item = LinkId> + '_ {
        self.peer_links.get(&peer).into_iter().flatten().copied()
    }

    /// Whether `peer` has an up link.
    #[must_use]
    pub fn is_up(&self, peer: NodeId) -> bool {
        self.peer_links.contains_key(&peer)
    }

    /// Whether a dial to `peer` is still in progress (dialling or handshaking).
    #[must_use]
    pub fn is_connecting(&self, peer: NodeId) -> bool {
        self.table
            .values()
            .any(|l| l.dialed == Some(peer) && l.phase != Phase::Up)
    }

    /// Accepted links still handshaking (at most `max_pending_handshakes`).
    #[must_use]
    pub fn pending_handshakes(&self) -> usize {
        self.pending_accepts
    }

    /// The earliest handshake or heartbeat deadline, exact (O(1)).
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.deadlines.next_deadline()
    }

    /// `link`'s real deadline: its handshake's while handshaking, its heartbeat's once up,
    /// none while dialling.
    fn deadline_of(&self, link: LinkId) -> Option<Instant> {
        let l = self.table.get(&link)?;
        match l.phase {
            Phase::Dialing => None,
            Phase::Handshaking => l.handshake_deadline,
            Phase::Up => l
                .heartbeat
                .map(|hb| hb.deadline(self.settings.heartbeat_interval)),
        }
    }

    /// Makes the earliest armed deadline exact again after traffic.
    ///
    /// Traffic only moves a link's heartbeat deadline later, so a link's armed deadline may
    /// be early, never late; receiving does not touch the queue (a batch costs nothing here).
    /// Only the root matters for [`next_deadline`](Self::next_deadline): while the earliest
    /// armed entry is early it moves to its link's real deadline. Once the root is exact it is
    /// the true minimum, since every other link's real deadline is at or after its armed
    /// one. An early entry that fires later is polled, finds nothing due, and moves on too.
    fn settle_deadlines(&mut self) {
        while let Some((link, armed)) = self.deadlines.peek() {
            match self.deadline_of(link) {
                Some(actual) if actual > armed => {
                    self.deadlines.replace(link, actual);
                }
                Some(_) => return,
                None => {
                    self.deadlines.cancel(link);
                }
            }
        }
    }

    /// Removes `link` from the table and its deadline from the queue.
    fn forget(&mut self, link: LinkId) -> Option<Link> {
        let l = self.table.remove(&link)?;
        self.deadlines.cancel(link);
        if l.phase == Phase::Handshaking && l.dialed.is_none() {
            self.pending_accepts -= 1;
        }
        Some(l)
    }

    /// A new link dialling `peer` at `addr` ([`LinkSink::connect`]).
    pub fn dial<S: LinkSink + ?Sized>(&mut self, peer: NodeId, addr: String, sink: &mut S) {
        let link = self.ids.next_link();
        self.table
            .insert(link, Link::new(Phase::Dialing, Some(peer)));
        sink.connect(link, peer, addr);
    }

    /// A connection accepted at `now`: a new link waiting for the peer's `Hello` until
    /// `now + handshake_timeout`. While `max_pending_handshakes` accepted links are
    /// handshaking, the oldest of them that has not sent a whole `Hello` yet (else the oldest
    /// of them all) is closed to make room ([`LinkEvent::HandshakeLimit`] naming it,
    /// [`LinkSink::close`], [`LinkEvent::Closed`]): strangers that connect and stay silent, or
    /// trickle a frame, can delay a real peer's handshake by at most the time it takes them
    /// to open `max_pending_handshakes` new connections — not lock it out until their
    /// deadlines. A real dialler's `Hello` follows its connect at once, so its handshake is
    /// the last to be chosen.
    pub fn accept<S: LinkSink + ?Sized>(&mut self, now: Instant, sink: &mut S) -> LinkId {
        let link = self.ids.next_link();
        if self.pending_accepts >= self.settings.max_pending_handshakes {
            let Some(victim) = self.oldest_pending_accept() else {
                sink.event(LinkEvent::HandshakeLimit { link });
                sink.close(link);
                return link;
            };
            sink.event(LinkEvent::HandshakeLimit { link: victim });
            sink.close(victim);
            // An accepted link is up once its peer is known: nothing to re-evaluate.
            let down = self.close_link(victim, sink);
            debug_assert!(down.is_some_and(|d| d.peer.is_none() && d.dialed.is_none()));
        }
        let deadline = now.saturating_add(self.settings.handshake_timeout);
        let mut l = Link::new(Phase::Handshaking, None);
        l.handshake_deadline = Some(deadline);
        self.table.insert(link, l);
        self.pending_accepts += 1;
        self.deadlines.replace(link, deadline);
        link
    }

    /// The accepted link to close when the pending handshakes are full: the oldest (lowest
    /// id) that has not sent a whole `Hello`, else the oldest still handshaking.
    fn oldest_pending_accept(&self) -> Option<LinkId> {
        let (mut oldest_silent, mut oldest_awaiting_auth) = (None::<LinkId>, None::<LinkId>);
        for (&id, l) in &self.table {
            if l.phase != Phase::Handshaking || l.dialed.is_some() {
                continue;
            }
            let oldest = if l.awaiting_auth.is_none() {
                &mut oldest_silent
            } else {
                &mut oldest_awaiting_auth
            };
            *oldest = Some(oldest.map_or(id, |o| o.min(id)));
        }
        oldest_silent.or(oldest_awaiting_auth)
    }

    /// Binds `link`'s peer to `ids`: the ids its transport credentials name (a TLS
    /// certificate's `urn:switchboard:node:<id>` SANs). Its handshake is then refused with
    /// [`LinkError::NotCertified`] unless the id it claims is among them (an empty list
    /// refuses every id). Call before the link's first bytes; unknown links are ignored, and
    /// a link already up keeps the id it proved.
    pub fn bind_identity(&mut self, link: LinkId, ids: &[NodeId]) {
        if let Some(l) = self.table.get_mut(&link)
            && l.phase != Phase::Up
        {
            l.certified = Some(ids.to_vec());
        }
    }

    /// A link id for a connection that is refused at once (the node is shut down).
    pub fn refuse(&mut self) -> LinkId {
        self.ids.next_link()
    }

    /// The dial of `link` succeeded at `now`: our `Hello` goes out, and the peer's
    /// `HelloAck` is due by `now + handshake_timeout`. Unknown links and repeated reports
    /// are ignored.
    pub fn connected<S: LinkSink + ?Sized>(&mut self, now: Instant, link: LinkId, sink: &mut S) {
        let Some(l) = self.table.get_mut(&link) else {
            return;
        };
        if l.phase != Phase::Dialing {
            return;
        }
        l.phase = Phase::Handshaking;
        let deadline = now.saturating_add(self.settings.handshake_timeout);
        l.handshake_deadline = Some(deadline);
        self.deadlines.replace(link, deadline);
        let challenge = self
            .settings
            .keys
            .current_id()
            .map(|key_id| wire::Challenge {
                nonce: self.nonces.next_nonce(),
                key_id,
            });
        l.nonce = challenge.map(|c| c.nonce);
        let name = core::mem::take(&mut self.settings.name);
        let hello = wire::Hello {
            node: self.settings.own,
            incarnation: self.settings.incarnation,
            versions: PROTOCOL_VERSIONS,
            name: &name,
            challenge,
        };
        self.transmit(link, &Frame::Hello(hello), sink);
        self.settings.name = name;
    }

    /// Forgets `link` (closed by the peer or the network, or its dial failed) and reports
    /// [`LinkEvent::Closed`]. `None` for unknown links. An accepted link closed after our
    /// `HelloAck` proved our key and before the dialler proved its own (a peer holding only a
    /// retired key hangs up there) is a refused handshake: counted as
    /// [`AuthFailure::Aborted`] in [`Links::auth_refusals`].
    pub fn closed<S: LinkSink + ?Sized>(&mut self, link: LinkId, sink: &mut S) -> Option<Down> {
        if self
            .table
            .get(&link)
            .is_some_and(|l| l.awaiting_auth.is_some())
        {
            self.refusals.count(AuthFailure::Aborted);
        }
        self.close_link(link, sink)
    }

    /// [`closed`](Self::closed) for a link this side closes itself (counted, if at all, by
    /// its caller).
    fn close_link<S: LinkSink + ?Sized>(&mut self, link: LinkId, sink: &mut S) -> Option<Down> {
        let l = self.forget(link)?;
        self.settle_deadlines();
        sink.event(LinkEvent::Closed {
            link,
            peer: l.peer.or(l.dialed),
        });
        if let Some(peer) = l.peer
            && let Some(set) = self.peer_links.get_mut(&peer)
        {
            set.remove(&link);
            if set.is_empty() {
                self.peer_links.remove(&peer);
            }
        }
        Some(Down {
            peer: l.peer,
            dialed: l.dialed.filter(|&d| Some(d) != l.peer),
            incarnation: l.incarnation,
            refused: None,
            bye: None,
        })
    }

    /// Closes `link` because of what its peer sent (or did not send).
    pub fn reject<S: LinkSink + ?Sized>(
        &mut self,
        link: LinkId,
        reason: LinkError,
        sink: &mut S,
    ) -> Option<Down> {
        let refused = match &reason {
            LinkError::RefusedByPeer(why) | LinkError::Refused(why) => Some(*why),
            // The peer answered but could not prove our key: another cluster.
            LinkError::Unauthenticated(_) => Some(RefuseReason::WrongCluster),
            _ => None,
        };
        sink.event(LinkEvent::Rejected { link, reason });
        sink.close(link);
        let mut down = self.close_link(link, sink)?;
        down.refused = refused;
        Some(down)
    }

    /// Closes every link to `peer` on the connector's request, without reporting anything
    /// back (the connector already forgot the peer's links); an up link says `Bye`
    /// ([`ByeReason::Unneeded`]) first, so the peer neither suspects us nor dials back.
    pub fn close_peer<S: LinkSink + ?Sized>(&mut self, peer: NodeId, sink: &mut S) {
        let mut links: Vec<LinkId> = self
            .table
            .iter()
            .filter(|(_, l)| l.peer == Some(peer) || (l.peer.is_none() && l.dialed == Some(peer)))
            .map(|(&id, _)| id)
            .collect();
        links.sort_unstable();
        for link in links {
            if self.table.get(&link).is_some_and(|l| l.phase == Phase::Up) {
                let bye = wire::Bye {
                    reason: ByeReason::Unneeded,
                };
                self.transmit(link, &Frame::Bye(bye), sink);
            }
            self.forget(link);
            sink.close(link);
            sink.event(LinkEvent::Closed {
                link,
                peer: Some(peer),
            });
        }
        self.peer_links.remove(&peer);
        self.settle_deadlines();
    }

    /// Closes every link (shutdown), without events.
    pub fn close_all<S: LinkSink + ?Sized>(&mut self, sink: &mut S) {
        let mut links: Vec<LinkId> = core::mem::take(&mut self.table).into_keys().collect();
        links.sort_unstable();
        for link in links {
            sink.close(link);
        }
        self.peer_links.clear();
        self.deadlines.clear();
        self.pending_accepts = 0;
    }

    /// Collects the links whose deadline (handshake or heartbeat) is due at `now`; take them
    /// with [`next_due`](Self::next_due), in ascending id order, and pass each to
    /// [`expire`](Self::expire). The list is kept between calls, so a heartbeat allocates
    /// nothing; a collect replaces what was left of the previous one.
    pub fn collect_due(&mut self, now: Instant) {
        self.expired.clear();
        self.deadlines.expire(now, &mut self.expired);
        // Descending, so `next_due` pops the lowest id from the end.
        self.expired
            .sort_unstable_by_key(|&(link, _)| core::cmp::Reverse(link));
    }

    /// The next link [`collect_due`](Self::collect_due) found due, lowest id first.
    pub fn next_due(&mut self) -> Option<LinkId> {
        self.expired.pop().map(|(link, _)| link)
    }

    /// `link`'s deadline at `now` ([`next_due`](Self::next_due) named it).
    ///
    /// Handshaking: at or past its handshake deadline the link is closed
    /// ([`LinkEvent::HandshakeTimeout`], [`LinkSink::close`], [`LinkEvent::Closed`]) and the
    /// returned [`Down`] names the node it was dialled for, if any. Up: a `Ping` for each
    /// silent interval (a late call catches up) or, at `heartbeat_interval ×
    /// heartbeat_dead_after` after it was last heard, the link closed with
    /// [`LinkError::HeartbeatTimeout`] (the returned [`Down`]). Otherwise (early, unknown, or
    /// still dialling) the deadline is armed again if the link has one.
    pub fn expire<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        sink: &mut S,
    ) -> Option<Down> {
        let l = self.table.get(&link)?;
        match (l.phase, l.handshake_deadline) {
            (Phase::Up, _) => self.beat(now, link, sink),
            (Phase::Handshaking, Some(deadline)) if now >= deadline => {
                let dialed = l.dialed;
                // Our proof went out and the dialler's never came: a refused handshake.
                if l.awaiting_auth.is_some() {
                    self.refusals.count(AuthFailure::TimedOut);
                }
                sink.event(LinkEvent::HandshakeTimeout { link, dialed });
                sink.close(link);
                self.close_link(link, sink)
            }
            (Phase::Handshaking, Some(deadline)) => {
                self.deadlines.replace(link, deadline);
                self.settle_deadlines();
                None
            }
            (_, _) => None,
        }
    }

    /// `link`'s heartbeat at `now`: a `Ping` for each silent interval, or the link closed.
    fn beat<S: LinkSink + ?Sized>(
        &mut self,
        now: Instant,
        link: LinkId,
        sink: &mut S,
    ) -> Option<Down> {
        let interval = self.settings.heartbeat_interval;
        let dead_after = self.settings.heartbeat_dead_after;
        loop {
            let hb = self.table.get_mut(&link)?.heartbeat.as_mut()?;
            match hb.poll(now, interval, dead_after) {
                Beat::Idle => {
                    let deadline = hb.deadline(interval);
                    self.deadlines.replace(link, deadline);
                    self.settle_deadlines();
                    return None;
                }
                Beat::Ping(nonce) => {
                    self.transmit(link, &Frame::Ping(wire::Ping { nonce }), sink);
                }
                Beat::Dead => {
                    let reason = LinkError::HeartbeatTimeout(dead_after);
                    return self.reject(link, reason, sink);
                }
            }
        }
    }

    /// Encodes `frame` into the reused buffer and hands its bytes to the sink for `link`.
    fn transmit<S: LinkSink + ?Sized>(&mut self, link: LinkId, frame: &Frame<'_>, sink: &mut S) {
        self.wbuf.clear();
        wire::encode(frame, &mut self.wbuf)
            .expect("link frames are small and relayed frames were decoded within the limit");
        sink.transmit(link, Bytes::copy_from_slice(&self.wbuf));
    }
}

impl Link {
    /// A link before its handshake: its reader accepts only the handshake kinds, each up to
    /// its largest valid encoding ([`FrameLimits::handshake`]); `max_frame` applies once up.
    fn new(phase: Phase, dialed: Option<NodeId>) -> Link {
        Link {
            phase,
            dialed,
            peer: None,
            incarnation: 0,
            reader: FrameReader::with_limits(FrameLimits::handshake()),
            handshake_deadline: None,
            heartbeat: None,
            nonce: None,
            awaiting_auth: None,
            certified: None,
        }
    }
}
