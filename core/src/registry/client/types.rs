//! The client's public vocabulary: configuration, outputs, events and errors.

use crate::{
    backoff::BackoffConfig,
    config::Config,
    discovery::{DiscoveryInfo, IdentityProof, TopologyInfo},
    ids::NodeId,
    registry::{
        RegistryEvent,
        limits::{RecordLimits, RecordTooLarge},
    },
    time::{Duration, Instant},
    wire::{DEFAULT_MAX_FRAME, DecodeError, FrameKind},
};
use alloc::{string::String, vec::Vec};

/// Default of [`ClientConfig::max_snapshot_parts`].
pub const DEFAULT_MAX_SNAPSHOT_PARTS: u32 = 256;

/// A node's redial backoff toward the embedded registry (`Config::registry_reconnect_max`):
/// from 100 ms (or `max` if lower) up to `max`, ±20 %, never giving up. A lost registry is
/// the one thing a node cannot work around, and a refused dial costs nothing: it is tried
/// often, so a registry that is back is rejoined within `max` (+20 %).
#[must_use]
pub fn registry_backoff(max: Duration) -> BackoffConfig {
    BackoffConfig {
        start: max.min(Duration::from_millis(100)),
        max,
        max_tries: 0,
        jitter: crate::backoff::Jitter::Proportional { percent: 20 },
    }
}

/// Client parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientConfig {
    /// This node's discovery record (must have an id or a name).
    pub discovery: DiscoveryInfo,
    /// This node's topology record, if it publishes one (same id as `discovery`).
    pub topology: Option<TopologyInfo>,
    /// This node's incarnation (new at every start).
    pub incarnation: u64,
    /// Delays between connection attempts. The registry client never gives up: once
    /// `max_tries` is reached it keeps trying at the capped delay.
    pub backoff: BackoffConfig,
    /// After a snapshot from a *new* registry epoch, how long a peer missing from it stays in
    /// the view (waiting for it to register with the new registry) before it is deleted.
    pub grace: Duration,
    /// Period of the client's `Heartbeat`s on a connected link.
    pub heartbeat_interval: Duration,
    /// A connected link on which nothing arrived for this long is closed and redialled.
    pub silence_timeout: Duration,
    /// Largest frame accepted from the registry once it proved itself (before that, only a
    /// `HelloAck` or a `Bye`, each no larger than its largest valid encoding).
    pub max_frame: usize,
    /// Most parts one snapshot may come in (default 256: 256 MiB of the registry's default
    /// 1 MiB parts). More is a protocol error.
    pub max_snapshot_parts: u32,
    /// The limits this node's records must keep (default: the registry's defaults). A
    /// record over them is not sent ([`ClientEvent::RecordTooLarge`] with `local`).
    pub limits: RecordLimits,
    /// The proof of this node's identity secret, sent with every `Register` (`None`: no
    /// identity, so no takeover of a live registration).
    pub identity_proof: Option<IdentityProof>,
    /// Seed of the jitter drawn for reconnect delays.
    pub seed: u64,
    /// The cluster keys (none: no authentication). With keys the client opens every
    /// connection with `Hello`, checks the registry's proof, proves a key (`Auth`), and only
    /// then registers ([`crate::bus::handshake`]).
    pub keys: crate::auth::ClusterKeys,
    /// Seed of the handshake nonces: secret (a node derives it from its entropy-mixed
    /// `rng_seed`), unlike `seed`.
    pub nonce_seed: u64,
    /// The driver's randomness for handshake nonces (zeros: `nonce_seed` alone).
    pub nonce_entropy: crate::auth::NonceEntropy,
    /// Watch, do not register (`switchboard ls`): the `Register` carries the watch flag, the
    /// registry answers with every node and every change and lists nothing for this client.
    /// `discovery` then only names the client in its handshake.
    pub watch: bool,
}

impl ClientConfig {
    /// A config for a node with these records and the defaults: backoff 1 s → 60 s ±20 %,
    /// grace 30 s (the server's disconnect protection), heartbeat 5 s, silence 15 s.
    #[must_use]
    pub fn new(
        discovery: DiscoveryInfo,
        topology: Option<TopologyInfo>,
        incarnation: u64,
    ) -> ClientConfig {
        ClientConfig {
            discovery,
            topology,
            incarnation,
            backoff: BackoffConfig::default(),
            grace: Duration::from_secs(30),
            heartbeat_interval: Duration::from_secs(5),
            silence_timeout: Duration::from_secs(15),
            max_frame: DEFAULT_MAX_FRAME,
            max_snapshot_parts: DEFAULT_MAX_SNAPSHOT_PARTS,
            limits: RecordLimits::default(),
            identity_proof: None,
            seed: 0,
            keys: crate::auth::ClusterKeys::default(),
            nonce_seed: 0,
            nonce_entropy: crate::auth::NonceEntropy::default(),
            watch: false,
        }
    }

    /// The config of a node's embedded client, with the defaults of [`new`](Self::new):
    /// `discovery` (the node's record) and the topology record of `config` (its configured
    /// upstream), the node's `incarnation`, and the incarnation as the jitter seed (so
    /// restarts do not retry in step); the keys, the nonce seed (secret, unlike the
    /// incarnation: mixed from the entropy-mixed `rng_seed`), the nonce entropy and the
    /// identity proof from `config`.
    #[must_use]
    pub fn for_node(config: &Config, discovery: DiscoveryInfo, incarnation: u64) -> ClientConfig {
        let mut client = ClientConfig::new(
            discovery,
            Some(config.topology_info(config.upstream)),
            incarnation,
        );
        client.seed = incarnation;
        client.backoff = registry_backoff(config.registry_reconnect_max);
        client.keys = config.auth_keys();
        client.nonce_seed = crate::rng::mix64(config.rng_seed ^ 0x006e_6f6e_6365) ^ incarnation;
        client.nonce_entropy = config.nonce_entropy;
        client.identity_proof = IdentityProof::of(&config.identity);
        client
    }
}

/// What the driver must do, or pass on. Drained with
/// [`super::RegistryClient::poll_output`]; a node's driver hands each one to
/// `Node::handle_client_output`, which applies the registry changes and gives back the rest.
///
/// Deliberately exhaustive: a driver acts on every output, and a new one must reach every
/// driver as a compile error rather than fall into a catch-all.
#[derive(Clone, Debug, PartialEq, Eq)]
// Most outputs are registry events carrying a discovery record; boxing them would add an
// allocation to the common case to shrink the rare one.
#[allow(clippy::large_enum_variant)]
pub enum ClientOutput {
    /// Dial the registry; report `handle_connected` or `handle_connect_failed`.
    Connect,
    /// Write `bytes` on the registry connection.
    Transmit {
        /// Whole encoded frames.
        bytes: Vec<u8>,
    },
    /// Flush and close the registry connection; the client has already scheduled the next
    /// attempt (no `handle_closed` needed, one is ignored).
    Close,
    /// Pass to the node (`Node::handle_registry`).
    Registry(RegistryEvent),
    /// Something happened (for logs and metrics).
    Event(ClientEvent),
}

/// Why the client dropped a registry connection on the registry's fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The bytes are not a valid frame.
    #[error("undecodable frame: {0}")]
    Decode(DecodeError),
    /// A frame a registry never sends.
    #[error("unexpected {0:?} frame from the registry")]
    Unexpected(FrameKind),
    /// A `Put` or `Delete` before the connection's `Snapshot`.
    #[error("{0:?} before the snapshot")]
    BeforeSnapshot(FrameKind),
    /// A snapshot part of another epoch or revision than the parts before it.
    #[error(
        "snapshot part of epoch {got_epoch} revision {got_revision}, the snapshot began with epoch {epoch} revision {revision}"
    )]
    SnapshotPartMismatch {
        /// The first part's epoch.
        epoch: u64,
        /// The first part's revision.
        revision: u64,
        /// This part's epoch.
        got_epoch: u64,
        /// This part's revision.
        got_revision: u64,
    },
    /// Another frame between the parts of a snapshot.
    #[error("{0:?} between the parts of a snapshot")]
    SnapshotInterrupted(FrameKind),
    /// A snapshot in more parts than [`ClientConfig::max_snapshot_parts`].
    #[error("snapshot in more than {max} parts")]
    SnapshotTooManyParts {
        /// The limit.
        max: u32,
    },
    /// A `Put` or `Delete` from another epoch than the connection's snapshot.
    #[error("frame of epoch {got}, snapshot had {expected}")]
    WrongEpoch {
        /// The snapshot's epoch.
        expected: u64,
        /// The frame's epoch.
        got: u64,
    },
}

/// Observable client happenings.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientEvent {
    /// The registry answered the registration with a snapshot.
    Registered {
        /// Its epoch.
        epoch: u64,
        /// The epoch differs from the previous snapshot's (a restarted registry, or the
        /// first snapshot).
        new_epoch: bool,
        /// Peers of the view missing from a new-epoch snapshot, now inside the grace.
        in_grace: usize,
    },
    /// The registry refused the registration: another incarnation holds the id.
    Refused {
        /// The incarnation holding it.
        holder: u64,
    },
    /// The registry refused the registration: another listed node holds this node's name.
    /// The client retries on its backoff (the holder may leave).
    NameTaken {
        /// The contested name.
        name: String,
        /// The id of the node holding it (0 for a node listed by name only).
        holder: NodeId,
    },
    /// This node's records break a size limit: the registry refused them (`local` false:
    /// the figures are the registry's), or the client did not send them (`local` true: they
    /// break [`ClientConfig::limits`]). The client retries on its backoff, like any refusal;
    /// an update that is not sent leaves the previous records registered.
    RecordTooLarge {
        /// The limit, the size found.
        error: RecordTooLarge,
        /// Refused by this client before sending.
        local: bool,
    },
    /// The registry refused this node's proof of the cluster key after proving its own (this
    /// node has a key the registry does not), or refused a node without keys. The client
    /// retries on its backoff.
    AuthRefused,
    /// With cluster keys: a `HelloAck` refused the connection (`reason`) before the registry
    /// proved the key. Anyone who answers the dial can say that (a squatter on the
    /// registry's address), so it is not believed: the client closed the connection and
    /// retries on its backoff, like after a failed dial.
    UnprovenRefusal(crate::wire::RefuseReason),
    /// The registry failed to prove the cluster key (a stranger, or a registry without
    /// keys): the client closed the connection without registering, and retries on its
    /// backoff. Not believed either: the tokio adapter reports it as a disconnect, never as a
    /// conflict.
    Unauthenticated(crate::auth::AuthFailure),
    /// The connection is gone (failed dial, close, silence, refusal or error); the next
    /// attempt is at `retry_at`.
    Disconnected {
        /// When the client dials again.
        retry_at: Instant,
    },
    /// The connection was dropped because the registry misbehaved.
    ProtocolError(ClientError),
}
