//! The frame types: one struct per kind, the reason codes they carry, and the [`Frame`] enum.
//!
//! Link-level frames borrow their variable parts (`name`, `payload`) from the buffer they were
//! decoded from, so decoding a `Data` frame copies nothing. Registry frames hold decoded
//! discovery and topology records, boxed inside [`Frame`] so the enum stays small for the data
//! path.

use alloc::{boxed::Box, vec::Vec};

use crate::{
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::NodeId,
    time::Duration,
};

/// Length of a handshake nonce (`Hello`, `HelloAck`).
pub const NONCE_LEN: usize = 32;

/// A handshake nonce: fresh random bytes (the handshake draws them; the codec carries them).
pub type Nonce = [u8; NONCE_LEN];

/// Length of the MAC of a [`Proof`].
pub const MAC_LEN: usize = 32;

/// Length of a [`Proof`] on the wire: key id, then the MAC.
pub const PROOF_LEN: usize = 1 + MAC_LEN;

/// A proof of the cluster key: which key (its 1-byte id) and the HMAC-SHA256 it computed
/// (the computation belongs to [`crate::bus::handshake`]; the codec only carries the bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Proof {
    /// The id of the key that made the MAC.
    pub key_id: u8,
    /// The MAC.
    pub mac: [u8; MAC_LEN],
}

/// The kind byte of a frame header. Codes are part of the wire format and never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
#[repr(u8)]
pub enum FrameKind {
    /// Link handshake, sent by the dialing side.
    Hello = 1,
    /// Handshake answer: accepted or refused with a reason.
    HelloAck = 2,
    /// An application message travelling from `src` to `dst`.
    Data = 3,
    /// Cumulative acknowledgement of one `src → dst` stream.
    Ack = 4,
    /// A relay could not route a `Data` frame.
    Unreachable = 5,
    /// Liveness probe.
    Ping = 6,
    /// Answer to a `Ping`, echoing its nonce.
    Pong = 7,
    /// The sender closes the link.
    Bye = 8,
    /// The dialler's proof of the cluster key, after the acceptor's `HelloAck`.
    Auth = 9,
    /// Indirect probe: how does the receiver see a suspect (docs/ARCHITECTURE.md §9.3)?
    Probe = 10,
    /// Answer to a `Probe`.
    ProbeAck = 11,
    /// Registry client → server: register a node.
    Register = 16,
    /// Registry client → server: change a registered node's records.
    Update = 17,
    /// Registry server → client: every known node.
    Snapshot = 18,
    /// Registry server → client: one node added or changed.
    Put = 19,
    /// Registry server → client: one node removed.
    Delete = 20,
    /// Registry liveness, either direction.
    Heartbeat = 21,
}

impl FrameKind {
    /// Every kind, in code order.
    pub const ALL: [FrameKind; 17] = [
        FrameKind::Hello,
        FrameKind::HelloAck,
        FrameKind::Data,
        FrameKind::Ack,
        FrameKind::Unreachable,
        FrameKind::Ping,
        FrameKind::Pong,
        FrameKind::Bye,
        FrameKind::Auth,
        FrameKind::Probe,
        FrameKind::ProbeAck,
        FrameKind::Register,
        FrameKind::Update,
        FrameKind::Snapshot,
        FrameKind::Put,
        FrameKind::Delete,
        FrameKind::Heartbeat,
    ];

    /// The kind with wire code `code`, if there is one.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<FrameKind> {
        Some(match code {
            1 => FrameKind::Hello,
            2 => FrameKind::HelloAck,
            3 => FrameKind::Data,
            4 => FrameKind::Ack,
            5 => FrameKind::Unreachable,
            6 => FrameKind::Ping,
            7 => FrameKind::Pong,
            8 => FrameKind::Bye,
            9 => FrameKind::Auth,
            10 => FrameKind::Probe,
            11 => FrameKind::ProbeAck,
            16 => FrameKind::Register,
            17 => FrameKind::Update,
            18 => FrameKind::Snapshot,
            19 => FrameKind::Put,
            20 => FrameKind::Delete,
            21 => FrameKind::Heartbeat,
            _ => return None,
        })
    }

    /// The wire code of this kind.
    #[must_use]
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// Whether this is a registry-protocol kind (`Register` … `Heartbeat`).
    #[must_use]
    pub const fn is_registry(self) -> bool {
        self.code() >= FrameKind::Register.code()
    }
}

/// Declares a `u8`-coded reason enum with `code`/`from_code` and an exhaustive `ALL` list.
macro_rules! reason_codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $code:literal, )+ }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum $name { $( $(#[$vmeta])* $variant, )+ }

        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$( $name::$variant, )+];

            /// The wire code of this value.
            #[must_use]
            pub const fn code(self) -> u8 {
                match self { $( $name::$variant => $code, )+ }
            }

            /// The value with wire code `code`, if there is one.
            #[must_use]
            pub const fn from_code(code: u8) -> Option<$name> {
                match code { $( $code => Some($name::$variant), )+ _ => None }
            }
        }
    };
}

reason_codes! {
    /// Why a `HelloAck` refuses a link.
    pub enum RefuseReason {
        /// The two protocol version ranges do not overlap.
        VersionMismatch = 1,
        /// The cluster-token proof is missing or wrong: the peer belongs to another cluster.
        WrongCluster = 2,
        /// Another live link already speaks for this node id (same or other incarnation).
        DuplicateId = 3,
        /// The hello names no valid node (id 0) or is otherwise unusable.
        InvalidHello = 4,
        /// The answering node is shutting down and takes no new links.
        ShuttingDown = 5,
        /// Registry only: another listed node (`HelloAck::node`) holds the registering node's
        /// name (`HelloAck::name`).
        NameTaken = 6,
        /// Registry only: the `Register` or `Update` breaks a size limit
        /// ([`crate::registry::limits`]): `HelloAck::name` names the limit (`record`, `labels`
        /// or `custom_data`), `HelloAck::node` carries the size found and
        /// `HelloAck::incarnation` the limit, both in bytes.
        RecordTooLarge = 7,
    }
}

reason_codes! {
    /// How a node sees a suspect it was asked about ([`ProbeAck`]).
    pub enum ProbeVerdict {
        /// Neither: no up link to that incarnation, no evidence of its death.
        Unknown = 0,
        /// An up link to that incarnation (its heartbeats hold): another path is up.
        Alive = 1,
        /// This node acted on evidence of that incarnation's death (or knows a newer one).
        Dead = 2,
    }
}

reason_codes! {
    /// Why a relay sends `Unreachable` back toward a `Data` frame's source.
    pub enum UnreachableReason {
        /// The relay has no route (no link, no next hop) toward the destination.
        NoRoute = 1,
        /// The frame's hop count reached the limit: a loop or a too-deep topology.
        HopLimit = 2,
        /// The relay does not know the destination node at all.
        UnknownTarget = 3,
        /// The relay's queue toward the destination is full.
        Overloaded = 4,
        /// The destination's incarnation `dst_incarnation` is gone (its redial was refused,
        /// its heartbeats stopped, or the registry deleted or replaced it): nothing sent to
        /// it will be acknowledged any more. A relay pushes this to every source it relayed
        /// for that destination, unasked (`seq` 0), as well as answering a frame with it.
        TargetGone = 5,
        /// Not a refusal: the destination (incarnation `dst_incarnation`) is linked to the
        /// relay again. A relay pushes this, unasked (`seq` 0), to every source it relayed
        /// for that destination when the destination's link comes up, so a source that was
        /// refused retries now instead of at the end of its backoff.
        Reachable = 6,
    }
}

reason_codes! {
    /// Why a peer closes a link with `Bye`.
    pub enum ByeReason {
        /// Orderly shutdown of the sending node.
        Shutdown = 1,
        /// The peer sent a malformed or unexpected frame.
        ProtocolError = 2,
        /// The peer missed too many heartbeats.
        HeartbeatTimeout = 3,
        /// Another link to the same node replaces this one.
        Replaced = 4,
        /// The sending node is about to restart (new incarnation).
        Restarting = 5,
        /// The sending node no longer needs the link (it moved in the topology): the peer
        /// must not take the close for a sign of death, nor dial back.
        Unneeded = 6,
    }
}

/// An inclusive range of bus protocol versions a node speaks (`min..=max`).
///
/// The codec carries any pair; whether `min <= max` and whether two ranges overlap is the
/// handshake's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VersionRange {
    /// Lowest version spoken.
    pub min: u16,
    /// Highest version spoken.
    pub max: u16,
}

/// Link handshake, sent first by the dialing side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello<'a> {
    /// The sender's node id.
    pub node: NodeId,
    /// The sender's incarnation (changes on every restart).
    pub incarnation: u64,
    /// Protocol versions the sender speaks.
    pub versions: VersionRange,
    /// The sender's node name.
    pub name: &'a str,
    /// The sender's challenge (header flag bit 0), sent when it has cluster keys.
    pub challenge: Option<Challenge>,
}

/// A dialler's challenge in its `Hello`: a fresh nonce and the id of the key it proves with
/// (the acceptor proves with the same key when it holds it, so nodes in the middle of a key
/// rotation still link).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Challenge {
    /// Fresh random bytes.
    pub nonce: Nonce,
    /// The id of the dialler's current key.
    pub key_id: u8,
}

/// Handshake answer from the accepting side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelloAck<'a> {
    /// The answering node's id.
    pub node: NodeId,
    /// The answering node's incarnation.
    pub incarnation: u64,
    /// Protocol versions the answering node speaks.
    pub versions: VersionRange,
    /// The answering node's name.
    pub name: &'a str,
    /// The answering node's fresh nonce (header flag bit 0).
    pub nonce: Option<Nonce>,
    /// The answering node's proof of the cluster key over both nonces and both identities
    /// (header flag bit 1).
    pub proof: Option<Proof>,
    /// `Ok(())` when the link is accepted, else why it is refused.
    pub result: Result<(), RefuseReason>,
}

/// An application message; forwarded hop by hop toward `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Data<'a> {
    /// Originating node.
    pub src: NodeId,
    /// Destination node.
    pub dst: NodeId,
    /// Sequence number in the `src → dst` stream.
    pub seq: u64,
    /// The incarnation of `dst` the sender expects (learned from `dst`'s acks or handshake);
    /// 0 when the sender does not know it yet. A receiver in another incarnation refuses the
    /// frame with a reset [`Ack`].
    pub dst_incarnation: u64,
    /// An earlier copy of this message may have reached `dst` (header flag bit 0). A receiver
    /// that does not hold the stream refuses a retransmitted first message stamped with
    /// `dst_incarnation` 0: a previous incarnation may have delivered it.
    pub retransmit: bool,
    /// Application message type.
    pub msg_type: u32,
    /// Relays passed so far; a relay increments it and drops the frame at the limit.
    pub hop_count: u8,
    /// The message bytes.
    pub payload: &'a [u8],
}

/// Cumulative acknowledgement: every `seq <= seq` of the `src → dst` stream arrived — or,
/// with `reset`, a refusal: `dst` in `dst_incarnation` does not hold the stream of `seq` and
/// did not deliver that frame.
///
/// `src`/`dst` name the acknowledged data stream (not the ack's own direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Source of the acknowledged stream.
    pub src: NodeId,
    /// Destination of the acknowledged stream (the node that acknowledges).
    pub dst: NodeId,
    /// Highest sequence number received in order; with `reset`, the refused frame's seq.
    pub seq: u64,
    /// The acknowledging node's incarnation.
    pub dst_incarnation: u64,
    /// `Some(age_ns)` (header flag bit 0): a reset, not an acknowledgement — the frame `seq`
    /// was refused (stamped for another incarnation, or a retransmitted first message of a
    /// stream this incarnation does not hold) and the sender's stream is void; `age_ns` is
    /// how long the refusing incarnation had been running, in nanoseconds (the sender uses it
    /// to tell whether a previous incarnation could have received its first copies).
    pub reset: Option<u64>,
}

/// A relay could not forward the `Data` frame `seq` of stream `src → dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreachable {
    /// Source of the undeliverable frame (where this notice travels).
    pub src: NodeId,
    /// Destination the relay could not reach.
    pub dst: NodeId,
    /// Sequence number of the undeliverable frame.
    pub seq: u64,
    /// Why it could not be forwarded.
    pub reason: UnreachableReason,
    /// The destination's incarnation as the relay knew it (0 = not known); with
    /// [`UnreachableReason::TargetGone`], the incarnation that is gone.
    pub dst_incarnation: u64,
}

/// Indirect probe (SWIM's ping-req): the sender's redial of `target` failed; how does the
/// receiver see `target`'s incarnation `incarnation`? Answered with a [`ProbeAck`] on the
/// same link (docs/ARCHITECTURE.md §9.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The suspect.
    pub target: NodeId,
    /// The suspect's incarnation as the sender knew it.
    pub incarnation: u64,
}

/// Answer to a [`Probe`]: how the receiver sees `target`'s incarnation `incarnation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeAck {
    /// The suspect.
    pub target: NodeId,
    /// The incarnation asked about.
    pub incarnation: u64,
    /// What the receiver knows of it.
    pub verdict: ProbeVerdict,
}

/// Liveness probe; the peer answers with a [`Pong`] echoing `nonce`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping {
    /// Opaque value (a counter or a send timestamp) echoed by the pong.
    pub nonce: u64,
}

/// Answer to a [`Ping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pong {
    /// The nonce of the ping being answered.
    pub nonce: u64,
}

/// The sender closes the link after this frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bye {
    /// Why the link is closed.
    pub reason: ByeReason,
}

/// The dialler's proof of the cluster key, sent after it checked the acceptor's `HelloAck`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Auth {
    /// The proof.
    pub proof: Proof,
}

/// One node as the registry holds it.
///
/// On the wire the records travel as libatapp JSON; their `revision` fields travel beside the
/// JSON (each record keeps its own).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryEntry {
    /// The node's incarnation as it registered.
    pub incarnation: u64,
    /// The node's discovery record.
    pub discovery: DiscoveryInfo,
    /// The node's topology record, if it published one.
    pub topology: Option<TopologyInfo>,
    /// The node's link to the registry is down and it is inside disconnect protection (still
    /// listed, but it may be gone): how long ago its session was lost, as of the moment the
    /// registry sent this entry (whole milliseconds on the wire). `None`: its session is live.
    pub lost_for: Option<Duration>,
}

/// Registry client → server: register this node.
///
/// The records' `revision` fields are not sent (the registry assigns revisions); decoded
/// records have revision 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Register {
    /// The registering node's incarnation.
    pub incarnation: u64,
    /// Its discovery record.
    pub discovery: DiscoveryInfo,
    /// Its topology record, if any.
    pub topology: Option<TopologyInfo>,
    /// The proof of the node's identity secret (header flag bit 0), sent when the node has an
    /// identity: what lets it take its id over from a live connection of another incarnation
    /// ([`crate::discovery::IdentityProof`]). Never echoed by the registry.
    pub proof: Option<crate::discovery::IdentityProof>,
    /// A watch (header flag bit 1), not a registration: the registry answers with the
    /// snapshot of every node and then every change, and lists nothing for the connection
    /// (`switchboard ls`). The records are sent but not read.
    pub watch: bool,
}

/// Registry client → server: replace one or both records of a registered node.
///
/// `None` leaves that record as it is (a topology-only update carries `discovery: None`).
/// Revisions are not sent, as for [`Register`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    /// The updating node's incarnation.
    pub incarnation: u64,
    /// New discovery record, if it changed.
    pub discovery: Option<DiscoveryInfo>,
    /// New topology record, if it changed.
    pub topology: Option<TopologyInfo>,
}

/// Registry server → client: the full node list as of `revision`, or one part of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Registry epoch (changes when the registry restarts).
    pub epoch: u64,
    /// Registry revision this snapshot is current as of.
    pub revision: u64,
    /// The nodes of this part, suspects included.
    pub entries: Vec<RegistryEntry>,
    /// More parts of this snapshot follow (header flag bit 0): a registry splits a large
    /// snapshot into bounded frames, every part with the same epoch and revision, the last
    /// one without this flag. The client applies the whole snapshot at its last part.
    pub more: bool,
}

/// Registry server → client: a node was added or changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Put {
    /// Registry epoch.
    pub epoch: u64,
    /// Registry revision of this change.
    pub revision: u64,
    /// The node as it is now.
    pub entry: RegistryEntry,
}

/// Registry server → client: a node was removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delete<'a> {
    /// Registry epoch.
    pub epoch: u64,
    /// Registry revision of this change.
    pub revision: u64,
    /// Id of the removed node.
    pub id: NodeId,
    /// Name of the removed node.
    pub name: &'a str,
}

/// Registry liveness, either direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    /// Registry epoch as the sender knows it.
    pub epoch: u64,
    /// Sender's heartbeat counter.
    pub sequence: u64,
}

/// One frame of any kind.
///
/// Borrowed fields point into the buffer the frame was decoded from (or that the caller built
/// it from); registry frames are boxed so the enum stays small for the data path.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Frame<'a> {
    /// See [`Hello`].
    Hello(Hello<'a>),
    /// See [`HelloAck`].
    HelloAck(HelloAck<'a>),
    /// See [`Data`].
    Data(Data<'a>),
    /// See [`Ack`].
    Ack(Ack),
    /// See [`Unreachable`].
    Unreachable(Unreachable),
    /// See [`Ping`].
    Ping(Ping),
    /// See [`Pong`].
    Pong(Pong),
    /// See [`Bye`].
    Bye(Bye),
    /// See [`Auth`].
    Auth(Auth),
    /// See [`Probe`].
    Probe(Probe),
    /// See [`ProbeAck`].
    ProbeAck(ProbeAck),
    /// See [`Register`].
    Register(Box<Register>),
    /// See [`Update`].
    Update(Box<Update>),
    /// See [`Snapshot`].
    Snapshot(Box<Snapshot>),
    /// See [`Put`].
    Put(Box<Put>),
    /// See [`Delete`].
    Delete(Delete<'a>),
    /// See [`Heartbeat`].
    Heartbeat(Heartbeat),
}

impl Frame<'_> {
    /// The kind of this frame.
    #[must_use]
    pub fn kind(&self) -> FrameKind {
        match self {
            Frame::Hello(_) => FrameKind::Hello,
            Frame::HelloAck(_) => FrameKind::HelloAck,
            Frame::Data(_) => FrameKind::Data,
            Frame::Ack(_) => FrameKind::Ack,
            Frame::Unreachable(_) => FrameKind::Unreachable,
            Frame::Ping(_) => FrameKind::Ping,
            Frame::Pong(_) => FrameKind::Pong,
            Frame::Bye(_) => FrameKind::Bye,
            Frame::Auth(_) => FrameKind::Auth,
            Frame::Probe(_) => FrameKind::Probe,
            Frame::ProbeAck(_) => FrameKind::ProbeAck,
            Frame::Register(_) => FrameKind::Register,
            Frame::Update(_) => FrameKind::Update,
            Frame::Snapshot(_) => FrameKind::Snapshot,
            Frame::Put(_) => FrameKind::Put,
            Frame::Delete(_) => FrameKind::Delete,
            Frame::Heartbeat(_) => FrameKind::Heartbeat,
        }
    }
}

/// `From<kind struct> for Frame` so `encode(&data.into(), ..)` reads naturally.
macro_rules! into_frame {
    ($($ty:ident $(<$lt:lifetime>)? => $variant:ident $(boxed $boxed:tt)?;)+) => {
        $(
            impl<'a> From<$ty $(<$lt>)?> for Frame<'a> {
                fn from(value: $ty $(<$lt>)?) -> Frame<'a> {
                    into_frame!(@wrap $variant value $($boxed)?)
                }
            }
        )+
    };
    (@wrap $variant:ident $value:ident) => { Frame::$variant($value) };
    (@wrap $variant:ident $value:ident $boxed:tt) => { Frame::$variant(Box::new($value)) };
}

into_frame! {
    Hello<'a> => Hello;
    HelloAck<'a> => HelloAck;
    Data<'a> => Data;
    Ack => Ack;
    Unreachable => Unreachable;
    Ping => Ping;
    Pong => Pong;
    Bye => Bye;
    Auth => Auth;
    Probe => Probe;
    ProbeAck => ProbeAck;
    Register => Register boxed yes;
    Update => Update boxed yes;
    Snapshot => Snapshot boxed yes;
    Put => Put boxed yes;
    Delete<'a> => Delete;
    Heartbeat => Heartbeat;
}
