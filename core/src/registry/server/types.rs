//! The server's public vocabulary: connection ids, keys, configuration, outputs and events.

use alloc::{string::String, vec::Vec};

use super::ConcernTable;
use crate::{
    discovery::DiscoveryInfo,
    ids::NodeId,
    registry::limits::{
        DEFAULT_MAX_CUSTOM_DATA, DEFAULT_MAX_LABELS, DEFAULT_MAX_RECORD, RecordLimits,
        RecordTooLarge,
    },
    time::Duration,
    wire::{
        AUTH_LEN, BYE_LEN, DEFAULT_MAX_FRAME, DecodeError, ENTRY_OVERHEAD, FrameKind, FrameLimits,
        HEARTBEAT_LEN, MAX_HELLO_LEN, REGISTER_OVERHEAD, SNAPSHOT_OVERHEAD, UPDATE_OVERHEAD,
    },
};

/// Default largest snapshot part the registry sends: 1 MiB. A snapshot of 10,000 typical
/// nodes (~2 KiB each) is some 20 parts; a client's buffer holds one part at a time, and one
/// part never holds up the registry's writer for long.
pub const DEFAULT_MAX_SNAPSHOT_PART: usize = 1 << 20;

/// One accepted connection, as numbered by [`super::RegistryServer::handle_accepted`]. Never
/// reused during a server's lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// How the registry names a node: its id, or its name when it has no id (id 0) — the same
/// identity rule as [`crate::discovery::DiscoverySet`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryKey {
    /// A node with a valid id.
    Id(NodeId),
    /// A node published by name only.
    Name(String),
}

impl EntryKey {
    /// The key of a discovery record; `None` when it has neither id nor name.
    #[must_use]
    pub fn of(info: &DiscoveryInfo) -> Option<EntryKey> {
        if info.id.is_valid() {
            Some(EntryKey::Id(info.id))
        } else if info.name.is_empty() {
            None
        } else {
            Some(EntryKey::Name(info.name.clone()))
        }
    }
}

/// Server parameters (ARCHITECTURE §10 and §14 defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// A connection that has not registered within this is closed (Nexus `accessTimeout`,
    /// 10 s).
    pub access_timeout: Duration,
    /// How long a registered node whose connection closed stays listed (marked suspect)
    /// before its removal is pushed (Nexus `disconnectTimeout`, 30 s).
    pub disconnect_protection: Duration,
    /// A registered connection silent for this long is closed (`None`: never). Any frame
    /// counts; clients send `Heartbeat`s. Default 15 s (three 5 s client heartbeats).
    pub heartbeat_timeout: Option<Duration>,
    /// Who is pushed whose changes.
    pub concern: ConcernTable,
    /// Largest frame the registry sends (a snapshot part holding one entry at the record
    /// limit must fit). At most [`DEFAULT_MAX_FRAME`], the limit clients read with
    /// ([`ServerConfig::validate`]).
    pub max_frame: usize,
    /// Largest registration: discovery and topology JSON together (default
    /// [`DEFAULT_MAX_RECORD`], 64 KiB). A larger `Register` or `Update` is refused
    /// ([`ServerEvent::TooLarge`]); a client's frames are read with limits derived from it.
    pub max_record: usize,
    /// Largest label set of one record, keys and values summed (default
    /// [`DEFAULT_MAX_LABELS`], 8 KiB).
    pub max_labels: usize,
    /// Largest `custom_data` of a discovery record (default [`DEFAULT_MAX_CUSTOM_DATA`],
    /// 32 KiB).
    pub max_custom_data: usize,
    /// A snapshot is sent in parts of at most this many bytes (at least one entry each);
    /// default [`DEFAULT_MAX_SNAPSHOT_PART`], 1 MiB.
    pub max_snapshot_part: usize,
    /// The cluster keys (none: no authentication). With keys, a client must open with
    /// `Hello` and prove a key (`Auth`) before it registers or reads anything, and the
    /// registry proves the key to it ([`crate::bus::handshake`]).
    pub keys: crate::auth::ClusterKeys,
    /// The driver's randomness for handshake nonces (zeros: the server's seed alone).
    pub nonce_entropy: crate::auth::NonceEntropy,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            access_timeout: Duration::from_secs(10),
            disconnect_protection: Duration::from_secs(30),
            heartbeat_timeout: Some(Duration::from_secs(15)),
            concern: ConcernTable::all(),
            max_frame: DEFAULT_MAX_FRAME,
            max_record: DEFAULT_MAX_RECORD,
            max_labels: DEFAULT_MAX_LABELS,
            max_custom_data: DEFAULT_MAX_CUSTOM_DATA,
            max_snapshot_part: DEFAULT_MAX_SNAPSHOT_PART,
            keys: crate::auth::ClusterKeys::default(),
            nonce_entropy: crate::auth::NonceEntropy::default(),
        }
    }
}

impl ServerConfig {
    /// The size limits of one registration.
    #[must_use]
    pub fn record_limits(&self) -> RecordLimits {
        RecordLimits {
            max_record: self.max_record,
            max_labels: self.max_labels,
            max_custom_data: self.max_custom_data,
        }
    }

    /// What a connection may send before it registered: the handshake (`Hello`, `Auth`,
    /// `Bye`), `Heartbeat`, and a `Register` up to the record limit; anything else, or larger,
    /// is refused from its header.
    #[must_use]
    pub fn access_limits(&self) -> FrameLimits {
        FrameLimits::none()
            .allow(FrameKind::Hello, MAX_HELLO_LEN)
            .allow(FrameKind::Auth, AUTH_LEN)
            .allow(FrameKind::Bye, BYE_LEN)
            .allow(FrameKind::Heartbeat, HEARTBEAT_LEN)
            .allow(
                FrameKind::Register,
                self.max_record.saturating_add(REGISTER_OVERHEAD),
            )
    }

    /// What a registered connection may send: `Update` up to the record limit, `Heartbeat`,
    /// `Bye`; a second `Register`, a `Hello` or an `Auth` only to be refused as protocol
    /// errors.
    #[must_use]
    pub fn registered_limits(&self) -> FrameLimits {
        self.access_limits().allow(
            FrameKind::Update,
            self.max_record.saturating_add(UPDATE_OVERHEAD),
        )
    }

    /// Checks the sizes against each other and against what clients accept.
    ///
    /// # Errors
    /// The first inconsistency: `max_frame` 0 or above [`DEFAULT_MAX_FRAME`] (clients would
    /// refuse the registry's frames), `max_record` 0, a record at the limit that would not
    /// fit in one snapshot part of `max_frame` bytes, or `max_snapshot_part` 0 or above
    /// `max_frame`.
    pub fn validate(&self) -> Result<(), ServerConfigError> {
        if self.max_frame == 0 || self.max_frame > DEFAULT_MAX_FRAME {
            return Err(ServerConfigError::MaxFrame {
                max_frame: self.max_frame,
                clients: DEFAULT_MAX_FRAME,
            });
        }
        if self.max_record == 0 {
            return Err(ServerConfigError::ZeroRecord);
        }
        let needed = self
            .max_record
            .saturating_add(ENTRY_OVERHEAD + SNAPSHOT_OVERHEAD)
            .max(self.max_record.saturating_add(REGISTER_OVERHEAD));
        if needed > self.max_frame {
            return Err(ServerConfigError::RecordOverFrame {
                max_record: self.max_record,
                needed,
                max_frame: self.max_frame,
            });
        }
        if self.max_snapshot_part == 0 || self.max_snapshot_part > self.max_frame {
            return Err(ServerConfigError::SnapshotPart {
                max_snapshot_part: self.max_snapshot_part,
                max_frame: self.max_frame,
            });
        }
        Ok(())
    }
}

/// Why a [`ServerConfig`] was refused ([`ServerConfig::validate`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerConfigError {
    /// `max_frame` is 0, or larger than what clients accept.
    #[error("max_frame {max_frame} must be 1 ..= {clients} (the largest frame clients accept)")]
    MaxFrame {
        /// The configured value.
        max_frame: usize,
        /// The clients' limit ([`DEFAULT_MAX_FRAME`]).
        clients: usize,
    },
    /// `max_record` is 0.
    #[error("max_record must be at least 1")]
    ZeroRecord,
    /// A record at the limit does not fit in one frame with its overhead.
    #[error(
        "max_record {max_record} needs frames of {needed} bytes with its overhead, over max_frame {max_frame}"
    )]
    RecordOverFrame {
        /// The configured record limit.
        max_record: usize,
        /// The frame a record at the limit needs.
        needed: usize,
        /// The configured frame limit.
        max_frame: usize,
    },
    /// `max_snapshot_part` is 0 or larger than `max_frame`.
    #[error("max_snapshot_part {max_snapshot_part} must be 1 ..= max_frame {max_frame}")]
    SnapshotPart {
        /// The configured part size.
        max_snapshot_part: usize,
        /// The configured frame limit.
        max_frame: usize,
    },
}

/// What the driver must do, or may observe. Drained with
/// [`super::RegistryServer::poll_output`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerOutput {
    /// Write `bytes` on `conn`, after everything written on it before.
    Transmit {
        /// The connection.
        conn: ConnId,
        /// Whole encoded frames.
        bytes: Vec<u8>,
    },
    /// Flush what was transmitted on `conn`, then close it. The server has already forgotten
    /// it; a later `handle_closed(conn)` is ignored.
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Something happened (for logs and metrics).
    Event(ServerEvent),
}

/// What a server counted since it started (for logs and metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Registrations refused because another incarnation holds the id
    /// ([`ServerEvent::Refused`]).
    pub duplicate_ids: u64,
    /// Registrations refused, and updates rejected, because another node holds the name
    /// ([`ServerEvent::NameTaken`], [`ProtocolError::NameTaken`]).
    pub names_taken: u64,
    /// Live connections taken over by a new incarnation that proved the holder's identity
    /// ([`ServerEvent::TakenOver`]).
    pub takeovers: u64,
    /// Registrations and updates refused for their size, and frames refused from their
    /// header for theirs ([`ServerEvent::TooLarge`]).
    pub records_too_large: u64,
    /// Connections refused for authentication, by kind.
    pub auth_refusals: crate::auth::AuthRefusals,
}

/// Why the server closed a connection on a client's fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The bytes are not a valid frame.
    #[error("undecodable frame: {0}")]
    Decode(DecodeError),
    /// A frame a client never sends (a `Snapshot`, a bus frame, ...).
    #[error("unexpected {0:?} frame from a client")]
    Unexpected(FrameKind),
    /// An `Update` before the connection registered.
    #[error("update before register")]
    NotRegistered,
    /// A second `Register` on a connection that already registered (Nexus: repeat access).
    #[error("second register on one connection")]
    AlreadyRegistered,
    /// The topology record names another node than the discovery record.
    #[error("topology record of node {topology:?} in the register of node {discovery:?}")]
    TopologyMismatch {
        /// Id in the discovery record.
        discovery: NodeId,
        /// Id in the topology record.
        topology: NodeId,
    },
    /// An `Update` names another incarnation than the registration.
    #[error("update from incarnation {got}, registered {registered}")]
    WrongIncarnation {
        /// The registered incarnation.
        registered: u64,
        /// The incarnation in the update.
        got: u64,
    },
    /// An `Update` changes the node's identity (id, or name of a name-only node).
    #[error("update changes the node's identity")]
    IdentityChanged,
    /// A `Register` for an id the connection's certificate does not name
    /// ([`RegistryServer::bind_conn_identity`](super::RegistryServer::bind_conn_identity)).
    #[error("register of node {claimed:?}, but the certificate names {certified:?}")]
    NotCertified {
        /// The id the registration claims.
        claimed: NodeId,
        /// The ids the certificate names.
        certified: Vec<NodeId>,
    },
    /// An `Update` renames the node to a name another listed node holds.
    #[error("update renames the node to {name:?}, held by node {holder:?}")]
    NameTaken {
        /// The name.
        name: String,
        /// The node holding it.
        holder: NodeId,
    },
}

/// Observable server happenings, in the order they happened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A node registered on `conn`. `restored` when it was listed before (protected, or live
    /// on another connection of the same incarnation, which was closed).
    Registered {
        /// The connection.
        conn: ConnId,
        /// The node.
        key: EntryKey,
        /// Its incarnation.
        incarnation: u64,
        /// It replaced an entry the registry still held.
        restored: bool,
    },
    /// `conn` watches (a `Register` with the watch flag): it got the snapshot of every node
    /// and is pushed every change; nothing is listed for it.
    Watching {
        /// The connection.
        conn: ConnId,
    },
    /// A registration was refused: another incarnation of the node is connected.
    /// The server answered a `HelloAck` with `RefuseReason::DuplicateId` and closed `conn`.
    Refused {
        /// The connection.
        conn: ConnId,
        /// The node it claimed to be.
        key: EntryKey,
        /// The incarnation it claimed.
        incarnation: u64,
        /// The incarnation holding the id.
        holder: u64,
    },
    /// A registration was refused: another listed node (live or protected) holds the name.
    /// The server answered a `HelloAck` with `RefuseReason::NameTaken` (its `node` the
    /// holder's id, its `name` the name) and closed `conn`.
    NameTaken {
        /// The connection.
        conn: ConnId,
        /// The node it claimed to be.
        key: EntryKey,
        /// The contested name.
        name: String,
        /// The id of the node holding the name (0 for a node listed by name only).
        holder: NodeId,
    },
    /// A registration from another incarnation proving the holder's identity (its
    /// `Register` carried the proof whose hash the holder published) replaced the holder's
    /// still-live connection `replaced`, which got `Bye{Replaced}` and was
    /// closed without protection (a restart the registry had not noticed yet). Followed by
    /// the newcomer's [`ServerEvent::Registered`].
    TakenOver {
        /// The replaced connection.
        replaced: ConnId,
        /// The node.
        key: EntryKey,
        /// The replaced incarnation.
        incarnation: u64,
    },
    /// A `Register` or `Update` broke a size limit, or a frame was larger than the
    /// connection may send now: a `HelloAck` with `RefuseReason::RecordTooLarge` went back
    /// and `conn` was closed (a registered node keeps its previous records, protected).
    TooLarge {
        /// The connection.
        conn: ConnId,
        /// The limit, the size found.
        error: RecordTooLarge,
    },
    /// A registered node changed its records.
    Updated {
        /// The connection.
        conn: ConnId,
        /// The node.
        key: EntryKey,
    },
    /// A registered node's connection closed; it is protected until its removal is due.
    Protected {
        /// The node.
        key: EntryKey,
    },
    /// A node was removed and its `Delete` pushed (protection ran out, or it said `Bye`
    /// with `Shutdown`).
    Removed {
        /// The node.
        key: EntryKey,
    },
    /// A connection failed authentication: a `HelloAck` refusing it (`WrongCluster`, versions
    /// `0..=0`) went back and it was closed — or its handshake never completed: it closed
    /// after the server's proof ([`AuthFailure::Aborted`](crate::auth::AuthFailure::Aborted))
    /// or ran out of the access timeout
    /// ([`AuthFailure::TimedOut`](crate::auth::AuthFailure::TimedOut)).
    Unauthenticated {
        /// The connection.
        conn: ConnId,
        /// Why.
        failure: crate::auth::AuthFailure,
    },
    /// An unregistered connection was closed after `access_timeout`.
    AccessTimeout {
        /// The connection.
        conn: ConnId,
    },
    /// A registered connection was closed after `heartbeat_timeout` of silence.
    HeartbeatTimeout {
        /// The connection.
        conn: ConnId,
    },
    /// A connection was closed for a protocol error (after a `Bye` with `ProtocolError`).
    ProtocolError {
        /// The connection.
        conn: ConnId,
        /// What was wrong.
        error: ProtocolError,
    },
}
