//! The embedded registry server: a sans-IO machine with Nexus semantics, corrected.
//!
//! Nodes connect, send `Register` (their discovery and topology records), and receive a
//! `Snapshot` of the nodes they concern themselves with, then a `Put` or `Delete` for every
//! later change of those nodes. The adapter owns the sockets and the clock: it reports accepted
//! connections, received bytes and closes, calls [`RegistryServer::handle_timeout`] at
//! [`RegistryServer::poll_timeout`], and performs the [`ServerOutput`]s.
//!
//! # Rules
//!
//! * **Concern table** ([`ConcernTable`]): a node is pushed changes of the types its own type
//!   follows (default: every type), and always its own record.
//! * **Access timeout**: a connection that has not registered within `access_timeout` (10 s)
//!   is closed ([`ServerEvent::AccessTimeout`]).
//! * **Disconnect protection**: when a registered node's connection closes, the node stays
//!   listed for `disconnect_protection` (30 s) and its `Put` marked `suspect` is pushed at
//!   once (session loss: evidence for the nodes' evidence books); its `Delete` is pushed
//!   only if it has not registered again by then. Snapshots list protected nodes with
//!   `suspect` set.
//! * **Epoch**: every `Snapshot`, `Put`, `Delete` and `Heartbeat` carries the server's epoch,
//!   drawn from the seed given to [`RegistryServer::new`] (never 0). A restarted registry has
//!   a new epoch, so clients know its revisions (which restart at 1) are a new series.
//! * **Revisions**: one counter, +1 per change (register, update, removal); a `Put` stamps
//!   the records it changed with it.
//! * **Re-registration replaces**: the new records replace the old ones and are pushed
//!   (Nexus kept the old info). A node registering while another connection of the *same*
//!   incarnation holds its id takes over (the old connection gets `Bye{Replaced}` and is
//!   closed without protection) — when the holder published an identity, only with the proof
//!   below (the incarnation is in every record); while another *incarnation* holds it
//!   connected, the
//!   registration is refused ([`ServerEvent::Refused`]) — unless the newcomer's `Register`
//!   carries the proof of the holder's identity secret (the
//!   [`IdentityProof`](crate::discovery::IdentityProof) whose hash the holder published as
//!   its `identity`; libatapp's rule that equal identities are the same deployment, with the
//!   secret kept out of the records): then the newcomer is a restart the registry has not
//!   noticed yet and takes over at once, like
//!   a same-incarnation registration ([`ServerEvent::TakenOver`]). A protected entry is
//!   replaced by any incarnation (a restarted node).
//! * **Sizes**: a registration's records are bounded (`max_record`, 64 KiB of discovery and
//!   topology JSON; `max_labels`, 8 KiB per label set; `max_custom_data`, 32 KiB; see
//!   [`crate::registry::limits`]). A `Register` or `Update` over a limit is refused
//!   ([`ServerEvent::TooLarge`]): a `HelloAck` with `RefuseReason::RecordTooLarge` (the limit's
//!   name in `name`, the size in `node`, the limit in `incarnation`), then close; a registered
//!   node keeps its previous records, protected as for any close.
//! * **Per-phase frame limits**: before it registered, a connection may send only `Hello`,
//!   `Auth`, `Bye`, `Heartbeat` (each no larger than its largest valid encoding) and a
//!   `Register` up to `max_record` plus its overhead
//!   ([`ServerConfig::access_limits`]); once registered also an `Update` of that size
//!   ([`ServerConfig::registered_limits`]). Another kind is a protocol error from its header;
//!   a larger frame is refused from its 4 length bytes, like an over-limit record
//!   (`RecordTooLarge`, limit `frame`), before anything is buffered.
//! * **Snapshot parts**: a snapshot goes out in frames of at most `max_snapshot_part` bytes
//!   (1 MiB; one entry at least), the same epoch and revision in each, every part but the last
//!   flagged "more parts follow"; the client applies it at its last part.
//! * **Unique names**: a registration whose name is held by another listed node (live, or
//!   protected: it is still in every snapshot) is refused ([`ServerEvent::NameTaken`]), and
//!   an `Update` renaming a node to such a name is a protocol error. The name is free again
//!   once its holder is removed (protection ran out, or `Bye{Shutdown}`). The name check
//!   comes first, so a refused newcomer never displaces anyone.
//! * **Refusal on the wire**: the wire has no dedicated "register refused" frame, so the
//!   server answers a `HelloAck` with versions `0..=0`, then closes. For a held id its
//!   `result` is `Err(RefuseReason::DuplicateId)`, `node` the claimed id, `incarnation` the
//!   holder's incarnation; for a held name `Err(RefuseReason::NameTaken)`, `node` the
//!   holder's id, `incarnation` the holder's incarnation, `name` the name.
//! * **Liveness**: a client `Heartbeat` is answered with a `Heartbeat` carrying the epoch and
//!   the same sequence. Any frame refreshes a registered connection; one silent for
//!   `heartbeat_timeout` (15 s) gets `Bye{HeartbeatTimeout}` and is closed (protection
//!   applies).
//! * **Goodbye**: `Bye{Shutdown}` from a registered node removes it at once (no protection);
//!   any other `Bye` is a plain close.
//! * **Bad input** (undecodable bytes, a lying length, a frame a client never sends, an
//!   `Update` before `Register`, ...): `Bye{ProtocolError}`, close, a
//!   [`ServerEvent::ProtocolError`]; nothing else changes (a registered node's entry goes into
//!   protection as for any close). Never a panic.

mod concern;
mod register;
mod types;

#[cfg(test)]
mod tests;

use alloc::{boxed::Box, collections::BTreeMap, collections::VecDeque, vec::Vec};

pub use concern::ConcernTable;

/// A holder heard from within this is live, and no other incarnation takes its id over, even
/// with its identity's proof: that is a second copy of the node, refused (`DuplicateId`).
/// Only a holder whose session is gone — closed (then protected), or silent this long (more
/// than one 5 s client heartbeat) — is replaced by a restart that proves the identity.
pub const LIVE_HOLDER_SILENCE: crate::time::Duration = crate::time::Duration::from_secs(7);
pub use types::{
    ConnId, DEFAULT_MAX_SNAPSHOT_PART, EntryKey, ProtocolError, ServerConfig, ServerConfigError,
    ServerEvent, ServerOutput, ServerStats,
};

use crate::{
    auth::{self, AuthFailure, ROLE_ACCEPTOR, ROLE_DIALLER, ReplayGuard, Side, Transcript},
    bus::handshake::PROTOCOL_VERSIONS,
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    registry::limits::{RecordField, RecordTooLarge},
    rng::Rng,
    time::Instant,
    timer::TimerQueue,
    wire::{
        self, Bye, ByeReason, Challenge, DecodeError, Delete, EncodedRecords, Frame, FrameKind,
        FrameReader, Heartbeat, HelloAck, Proof, RefuseReason, Register, RegistryEntry, Update,
        VersionRange,
    },
};

/// A server deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Timer {
    /// Unregistered connection: close at `access_timeout`.
    Access(ConnId),
    /// Registered connection: close after `heartbeat_timeout` of silence.
    Silence(ConnId),
    /// The node whose connection `ConnId` closed: remove at the end of protection.
    Protection(ConnId),
}

/// One open connection.
#[derive(Debug)]
struct Conn {
    reader: FrameReader,
    /// Where its authentication is.
    auth: ConnAuth,
    /// The node it registered, and that node's type name.
    registered: Option<(EntryKey, alloc::string::String)>,
    /// It watches: pushed every change, listing nothing (`Register` with the watch flag).
    watching: bool,
    /// When its last bytes arrived: a holder heard within [`LIVE_HOLDER_SILENCE`] is live.
    heard: Instant,
    /// The node ids its transport credentials name ([`RegistryServer::bind_conn_identity`]);
    /// `None`: not bound, any id.
    certified: Option<Vec<NodeId>>,
}

/// A connection's authentication.
#[derive(Clone, Copy, Debug)]
enum ConnAuth {
    /// Authenticated, or the server has no keys.
    Open,
    /// Keys configured; the client's `Hello` is due.
    AwaitingHello,
    /// `HelloAck` sent; the client's `Auth` must prove this.
    AwaitingAuth(Transcript),
}

/// Where a listed node's connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Link {
    /// Connected on this connection.
    Live(ConnId),
    /// Its connection (this one) closed at `since`; protected until the `Protection` timer.
    Protected { conn: ConnId, since: Instant },
}

/// One listed node.
#[derive(Clone, Debug)]
struct Entry {
    incarnation: u64,
    discovery: DiscoveryInfo,
    topology: Option<TopologyInfo>,
    /// The records serialized once, at every change of them: every snapshot and `Put`
    /// copies them (`None`: not encodable — a snapshot holding it closes its connection, its
    /// `Put`s are not sent, as when each send serialized them).
    encoded: Option<EncodedRecords>,
    link: Link,
}

impl Entry {
    /// A listed node's entry, its records serialized.
    fn new(
        incarnation: u64,
        discovery: DiscoveryInfo,
        topology: Option<TopologyInfo>,
        link: Link,
    ) -> Entry {
        let mut entry = Entry {
            incarnation,
            discovery,
            topology,
            encoded: None,
            link,
        };
        entry.encode();
        entry
    }

    /// Serializes the records again (after they changed).
    fn encode(&mut self) {
        self.encoded = EncodedRecords::of(&self.discovery, self.topology.as_ref()).ok();
    }

    /// The session-loss age at `now` of a protected node.
    fn lost_for(&self, now: Instant) -> Option<crate::time::Duration> {
        match self.link {
            Link::Live(_) => None,
            Link::Protected { since, .. } => Some(now.saturating_duration_since(since)),
        }
    }

    /// The entry as it is sent at `now`: a protected node's age of loss is counted to `now`.
    fn wire(&self, now: Instant) -> RegistryEntry {
        RegistryEntry {
            incarnation: self.incarnation,
            discovery: self.discovery.clone(),
            topology: self.topology.clone(),
            lost_for: self.lost_for(now),
        }
    }
}

/// A frame received from a client, owned (the reader's borrow ends before it is handled).
enum Incoming {
    Register(Box<Register>),
    Update(Box<Update>),
    Heartbeat(Heartbeat),
    Bye(Bye),
    Hello {
        node: NodeId,
        incarnation: u64,
        versions: VersionRange,
        challenge: Option<Challenge>,
    },
    Auth(Proof),
    Other(FrameKind),
}

/// The embedded registry server machine. See the [module docs](self) for its rules.
#[derive(Debug)]
pub struct RegistryServer {
    config: ServerConfig,
    epoch: u64,
    revision: u64,
    next_conn: u64,
    conns: BTreeMap<ConnId, Conn>,
    entries: BTreeMap<EntryKey, Entry>,
    /// Name → the listed node holding it (every listed node with a name is here).
    names: BTreeMap<alloc::string::String, EntryKey>,
    stats: ServerStats,
    /// Closed connection → the protected node it carried.
    protected: BTreeMap<ConnId, EntryKey>,
    timers: TimerQueue<Timer>,
    out: VecDeque<ServerOutput>,
    /// Scratch buffer frames are encoded through ([`wire::encode_owned`]).
    wbuf: Vec<u8>,
    /// Handshake nonces.
    nonces: auth::NonceSource,
    /// Client nonces seen lately.
    replay: ReplayGuard,
    /// The latest instant a `handle_*` call gave: what [`RegistryServer::entries`] counts a
    /// protected node's age of loss to.
    clock: Instant,
}

impl RegistryServer {
    /// A server with no nodes. Its epoch is drawn from `seed` (the adapter seeds it from
    /// fresh randomness at every start, so a restarted registry gets a new epoch).
    #[must_use]
    pub fn new(config: ServerConfig, seed: u64) -> RegistryServer {
        let mut rng = Rng::new(seed);
        let epoch = rng.next_u64().max(1);
        let nonces = auth::NonceSource::new(&config.nonce_entropy, &mut rng);
        RegistryServer {
            config,
            epoch,
            revision: 0,
            next_conn: 1,
            conns: BTreeMap::new(),
            entries: BTreeMap::new(),
            names: BTreeMap::new(),
            stats: ServerStats::default(),
            protected: BTreeMap::new(),
            timers: TimerQueue::new(),
            out: VecDeque::new(),
            wbuf: Vec::new(),
            nonces,
            replay: ReplayGuard::default(),
            clock: Instant::ZERO,
        }
    }

    /// This server's epoch (never 0).
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The revision of the latest change (0 before any).
    #[must_use]
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// What the server counted since it started.
    #[must_use]
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    /// Open connections.
    #[must_use]
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Every listed node as a snapshot would carry it (suspects included, their age of loss
    /// counted to the latest instant a `handle_*` call gave), in key order.
    #[must_use]
    pub fn entries(&self) -> Vec<RegistryEntry> {
        (self.entries.values())
            .map(|e| e.wire(self.clock))
            .collect()
    }

    /// A connection was accepted; returns its id. Call before passing any of its bytes.
    /// It must register within `access_timeout`.
    pub fn handle_accepted(&mut self, now: Instant) -> ConnId {
        self.clock = self.clock.max(now);
        let conn = ConnId(self.next_conn);
        self.next_conn += 1;
        self.conns.insert(
            conn,
            Conn {
                reader: FrameReader::with_limits(self.config.access_limits()),
                auth: if self.config.keys.is_enabled() {
                    ConnAuth::AwaitingHello
                } else {
                    ConnAuth::Open
                },
                registered: None,
                watching: false,
                heard: now,
                certified: None,
            },
        );
        self.timers
            .arm(Timer::Access(conn), now + self.config.access_timeout);
        conn
    }

    /// Binds `conn` to the node ids its transport credentials name (a TLS certificate's
    /// `urn:switchboard:node:<id>` SANs): a `Register` for another id is then refused
    /// ([`ProtocolError::NotCertified`]: `Bye{ProtocolError}`, close). Call right after
    /// [`handle_accepted`](Self::handle_accepted), before its bytes; an empty `ids` refuses
    /// every registration. Unknown or registered connections are ignored.
    pub fn bind_conn_identity(&mut self, conn: ConnId, ids: &[NodeId]) {
        if let Some(c) = self.conns.get_mut(&conn)
            && c.registered.is_none()
        {
            c.certified = Some(ids.to_vec());
        }
    }

    /// Bytes arrived on `conn` (any chunking). Unknown connections are ignored.
    pub fn handle_received(&mut self, now: Instant, conn: ConnId, bytes: &[u8]) {
        self.clock = self.clock.max(now);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.reader.push(bytes);
        c.heard = now;
        if (c.registered.is_some() || c.watching)
            && let Some(timeout) = self.config.heartbeat_timeout
        {
            self.timers.replace(Timer::Silence(conn), now + timeout);
        }
        loop {
            let Some(c) = self.conns.get_mut(&conn) else {
                return; // closed by the previous frame
            };
            let incoming = match c.reader.next_frame() {
                Ok(None) => return,
                Ok(Some(frame)) => match frame {
                    Frame::Register(r) => Incoming::Register(r),
                    Frame::Update(u) => Incoming::Update(u),
                    Frame::Heartbeat(h) => Incoming::Heartbeat(h),
                    Frame::Bye(b) => Incoming::Bye(b),
                    Frame::Hello(h) => Incoming::Hello {
                        node: h.node,
                        incarnation: h.incarnation,
                        versions: h.versions,
                        challenge: h.challenge,
                    },
                    Frame::Auth(a) => Incoming::Auth(a.proof),
                    other => Incoming::Other(other.kind()),
                },
                Err(DecodeError::FrameTooLarge { len, max }) => {
                    let error = RecordTooLarge {
                        field: RecordField::Frame,
                        len,
                        max,
                    };
                    self.refuse_too_large(now, conn, error);
                    return;
                }
                Err(error) => {
                    self.fail(now, conn, ProtocolError::Decode(error));
                    return;
                }
            };
            let auth = c.auth;
            let open = matches!(auth, ConnAuth::Open);
            let keyless_fresh =
                !self.config.keys.is_enabled() && c.registered.is_none() && !c.watching;
            match incoming {
                Incoming::Hello {
                    node,
                    incarnation,
                    versions,
                    challenge,
                } => match auth {
                    ConnAuth::AwaitingHello => {
                        let dialler = |nonce| Side {
                            node,
                            incarnation,
                            versions,
                            nonce,
                        };
                        self.on_hello(now, conn, challenge, dialler);
                    }
                    // No keys: answered unproven, so a client with keys refuses this
                    // registry itself.
                    ConnAuth::Open if keyless_fresh => self.send_hello_ack(conn, None, None),
                    _ => self.fail(now, conn, ProtocolError::Unexpected(FrameKind::Hello)),
                },
                Incoming::Auth(proof) => match auth {
                    ConnAuth::AwaitingAuth(transcript) => {
                        match self.config.keys.check(&transcript, Some(&proof)) {
                            Ok(()) => {
                                if let Some(c) = self.conns.get_mut(&conn) {
                                    c.auth = ConnAuth::Open;
                                }
                            }
                            Err(failure) => self.refuse_auth(now, conn, failure),
                        }
                    }
                    _ => self.fail(now, conn, ProtocolError::Unexpected(FrameKind::Auth)),
                },
                Incoming::Bye(_) if !open => {
                    self.out.push_back(ServerOutput::Close { conn });
                    self.drop_conn(now, conn, true);
                }
                Incoming::Register(_) | Incoming::Update(_) | Incoming::Heartbeat(_) if !open => {
                    let failure = match auth {
                        ConnAuth::AwaitingHello => AuthFailure::NoProof,
                        _ => AuthFailure::BeforeAuth,
                    };
                    self.refuse_auth(now, conn, failure);
                }
                Incoming::Register(r) => self.register(now, conn, *r),
                Incoming::Update(u) => self.update(now, conn, *u),
                Incoming::Heartbeat(h) => {
                    let reply = Heartbeat {
                        epoch: self.epoch,
                        sequence: h.sequence,
                    };
                    self.send(conn, &reply.into());
                }
                Incoming::Bye(bye) => {
                    self.out.push_back(ServerOutput::Close { conn });
                    self.drop_conn(now, conn, bye.reason != ByeReason::Shutdown);
                }
                Incoming::Other(kind) => self.fail(now, conn, ProtocolError::Unexpected(kind)),
            }
        }
    }

    /// The transport closed `conn` (or the peer did). A registered node goes into
    /// protection. Unknown or already-closed connections are ignored. A connection that
    /// closes after the server's proof and before the client's (a client holding only a
    /// retired key aborts there) is a refused handshake: counted as
    /// [`AuthFailure::Aborted`] and reported as [`ServerEvent::Unauthenticated`].
    pub fn handle_closed(&mut self, now: Instant, conn: ConnId) {
        self.clock = self.clock.max(now);
        self.count_unfinished_handshake(conn, AuthFailure::Aborted, false);
        self.drop_conn(now, conn, true);
    }

    /// Counts `conn`'s handshake as refused with `failure` when it had begun and not
    /// completed: the server's proof sent and the client's still due, or (`before_hello`)
    /// the client's `Hello` still due on a keyed server.
    fn count_unfinished_handshake(
        &mut self,
        conn: ConnId,
        failure: AuthFailure,
        before_hello: bool,
    ) {
        let unfinished = self.conns.get(&conn).is_some_and(|c| match c.auth {
            ConnAuth::AwaitingAuth(_) => true,
            ConnAuth::AwaitingHello => before_hello,
            ConnAuth::Open => false,
        });
        if unfinished {
            self.stats.auth_refusals.count(failure);
            self.event(ServerEvent::Unauthenticated { conn, failure });
        }
    }

    /// Fires every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.clock = self.clock.max(now);
        while let Some((timer, _)) = self.timers.pop_expired(now) {
            match timer {
                Timer::Access(conn) => {
                    // A keyed handshake that never completed within the access timeout.
                    self.count_unfinished_handshake(conn, AuthFailure::TimedOut, true);
                    self.out.push_back(ServerOutput::Close { conn });
                    self.event(ServerEvent::AccessTimeout { conn });
                    self.drop_conn(now, conn, true);
                }
                Timer::Silence(conn) => {
                    self.send(
                        conn,
                        &Bye {
                            reason: ByeReason::HeartbeatTimeout,
                        }
                        .into(),
                    );
                    self.out.push_back(ServerOutput::Close { conn });
                    self.event(ServerEvent::HeartbeatTimeout { conn });
                    self.drop_conn(now, conn, true);
                }
                Timer::Protection(conn) => {
                    if let Some(key) = self.protected.remove(&conn) {
                        self.remove_entry(&key);
                    }
                }
            }
        }
    }

    /// The next deadline; call [`handle_timeout`](Self::handle_timeout) then.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// The next thing to do; drain after every `handle_*` call.
    pub fn poll_output(&mut self) -> Option<ServerOutput> {
        self.out.pop_front()
    }

    fn event(&mut self, event: ServerEvent) {
        self.out.push_back(ServerOutput::Event(event));
    }

    /// Encodes `frame` for `conn`; a frame too large for the length field closes `conn`.
    fn send(&mut self, conn: ConnId, frame: &Frame<'_>) {
        match wire::encode_owned(frame, &mut self.wbuf) {
            Ok(bytes) => self.out.push_back(ServerOutput::Transmit { conn, bytes }),
            Err(_) => self.out.push_back(ServerOutput::Close { conn }),
        }
    }

    /// A client's `Hello` on a connection that owes one (keys configured): a fresh client
    /// nonce, then the registry's nonce and proof; the client's `Auth` is due next.
    fn on_hello(
        &mut self,
        now: Instant,
        conn: ConnId,
        challenge: Option<Challenge>,
        dialler: impl Fn(wire::Nonce) -> Side,
    ) {
        let Some(challenge) = challenge else {
            return self.refuse_auth(now, conn, AuthFailure::NoProof);
        };
        if !self.replay.admit(challenge.nonce) {
            return self.refuse_auth(now, conn, AuthFailure::Replay);
        }
        let acceptor = Side {
            node: NodeId::NONE,
            incarnation: self.epoch,
            versions: PROTOCOL_VERSIONS,
            nonce: self.nonces.next_nonce(),
        };
        let transcript = |role| Transcript {
            context: auth::Context::Registry,
            role,
            hint: challenge.key_id,
            result: Ok(()),
            dialler: dialler(challenge.nonce),
            acceptor,
        };
        let proof = self
            .config
            .keys
            .prove_with(&transcript(ROLE_ACCEPTOR), Some(challenge.key_id));
        self.send_hello_ack(conn, Some(acceptor.nonce), proof);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.auth = ConnAuth::AwaitingAuth(transcript(ROLE_DIALLER));
        }
    }

    /// The registry's answer to a `Hello`: node 0, its epoch as incarnation, its nonce and
    /// proof when it has keys.
    fn send_hello_ack(&mut self, conn: ConnId, nonce: Option<wire::Nonce>, proof: Option<Proof>) {
        let ack = HelloAck {
            node: NodeId::NONE,
            incarnation: self.epoch,
            versions: PROTOCOL_VERSIONS,
            name: "",
            nonce,
            proof,
            result: Ok(()),
        };
        self.send(conn, &ack.into());
    }

    /// Refuses `conn` for failing authentication: a `WrongCluster` refusal (versions
    /// `0..=0`, as every registry refusal), close, counted.
    fn refuse_auth(&mut self, now: Instant, conn: ConnId, failure: AuthFailure) {
        let ack = HelloAck {
            node: NodeId::NONE,
            incarnation: self.epoch,
            versions: VersionRange { min: 0, max: 0 },
            name: "",
            nonce: None,
            proof: None,
            result: Err(RefuseReason::WrongCluster),
        };
        self.send(conn, &ack.into());
        self.out.push_back(ServerOutput::Close { conn });
        self.stats.auth_refusals.count(failure);
        self.event(ServerEvent::Unauthenticated { conn, failure });
        self.drop_conn(now, conn, true);
    }

    /// Closes `conn` for a client's fault.
    fn fail(&mut self, now: Instant, conn: ConnId, error: ProtocolError) {
        self.send(
            conn,
            &Bye {
                reason: ByeReason::ProtocolError,
            }
            .into(),
        );
        self.out.push_back(ServerOutput::Close { conn });
        self.event(ServerEvent::ProtocolError { conn, error });
        self.drop_conn(now, conn, true);
    }

    /// Forgets `conn`; its node is protected (`protect`) or removed at once.
    fn drop_conn(&mut self, now: Instant, conn: ConnId, protect: bool) {
        let Some(c) = self.forget_conn(conn) else {
            return;
        };
        let Some((key, _)) = c.registered else {
            return;
        };
        let Some(entry) = self.entries.get_mut(&key) else {
            return;
        };
        if entry.link != Link::Live(conn) {
            return;
        }
        if protect {
            entry.link = Link::Protected { conn, since: now };
            self.timers.arm(
                Timer::Protection(conn),
                now + self.config.disconnect_protection,
            );
            self.protected.insert(conn, key.clone());
            // Session loss is published at once (the `Put` marked suspect): evidence that
            // corroborates a peer's failed redial (docs/ARCHITECTURE.md §9.3).
            self.push_put(now, &key, None);
            self.event(ServerEvent::Protected { key });
        } else {
            self.remove_entry(&key);
        }
    }

    /// Forgets `conn` and its timers, leaving any entry it carried as it is.
    fn forget_conn(&mut self, conn: ConnId) -> Option<Conn> {
        let c = self.conns.remove(&conn)?;
        self.timers.cancel(Timer::Access(conn));
        self.timers.cancel(Timer::Silence(conn));
        Some(c)
    }

    /// Removes a listed node and pushes its `Delete`.
    fn remove_entry(&mut self, key: &EntryKey) {
        let Some(entry) = self.entries.remove(key) else {
            return;
        };
        self.release_name(key, &entry.discovery.name);
        if let Link::Protected { conn: old, .. } = entry.link {
            self.protected.remove(&old);
            self.timers.cancel(Timer::Protection(old));
        }
        self.revision += 1;
        let delete = Delete {
            epoch: self.epoch,
            revision: self.revision,
            id: entry.discovery.id,
            name: &entry.discovery.name,
        };
        let mut bytes = Vec::new();
        if wire::encode(&delete.into(), &mut bytes).is_ok() {
            self.push_to_concerned(key, &entry.discovery.type_name, &bytes);
        }
        self.event(ServerEvent::Removed { key: key.clone() });
    }

    /// Sends `bytes` to every registered connection concerned with a node of `type_name`
    /// (and to the node itself) and to every watcher, in connection order.
    fn push_to_concerned(&mut self, key: &EntryKey, type_name: &str, bytes: &[u8]) {
        let targets = self.concerned(key, type_name, None);
        for conn in targets {
            self.out.push_back(ServerOutput::Transmit {
                conn,
                bytes: bytes.to_vec(),
            });
        }
    }

    /// Pushes the current `Put` of `key` to everyone concerned except `skip`.
    fn push_put(&mut self, now: Instant, key: &EntryKey, skip: Option<ConnId>) {
        let Some(entry) = self.entries.get(key) else {
            return;
        };
        let type_name = entry.discovery.type_name.clone();
        let put = entry.encoded.as_ref().map(|records| {
            records.put_frame(
                self.epoch,
                self.revision,
                entry.incarnation,
                entry.lost_for(now),
            )
        });
        let Some(Ok(bytes)) = put else {
            return;
        };
        let targets = self.concerned(key, &type_name, skip);
        for conn in targets {
            self.out.push_back(ServerOutput::Transmit {
                conn,
                bytes: bytes.clone(),
            });
        }
    }

    /// The connections a change of node `key` (of `type_name`) is pushed to, but `skip`: the
    /// node itself, those concerned with its type, and the watchers, in connection order.
    fn concerned(&self, key: &EntryKey, type_name: &str, skip: Option<ConnId>) -> Vec<ConnId> {
        self.conns
            .iter()
            .filter_map(|(id, c)| {
                let wanted = c.watching
                    || c.registered.as_ref().is_some_and(|(own, own_type)| {
                        own == key || self.config.concern.concerns(own_type, type_name)
                    });
                (wanted && Some(*id) != skip).then_some(*id)
            })
            .collect()
    }
}
