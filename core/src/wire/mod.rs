//! Wire: the frame codec every link speaks — node to node (the bus) and node to the embedded
//! registry.
//!
//! A frame is a fixed 8-byte header and a kind-specific body. [`encode`] appends a [`Frame`] to
//! a caller's reused buffer; [`decode`] reads one from the front of a byte slice and is total:
//! any byte string gives a frame, [`Decoded::NeedMore`] or a typed [`DecodeError`], never a
//! panic, and a length field larger than the receiver's maximum is refused from its first 4
//! bytes, before anything is buffered or allocated. [`FrameReader`] does the reassembly for a
//! stream cut at arbitrary points. The bus and the registry decide what frames mean; this
//! module only says what they are.
//!
//! # Byte layout
//!
//! All integers are little-endian, fixed width. `str`/`bytes` fields are a `u32` length then
//! that many bytes (`str` must be UTF-8). `node` is a [`NodeId`](crate::ids::NodeId) as `u64`.
//!
//! Header (every frame):
//!
//! | offset | size | field | notes |
//! |---|---|---|---|
//! | 0 | 4 | `len` | whole frame, header included; `8 ..= max_frame` |
//! | 4 | 1 | `version` | [`WIRE_VERSION`] (format of these bytes, not the bus protocol) |
//! | 5 | 1 | `kind` | [`FrameKind`] code |
//! | 6 | 2 | `flags` | bit 0 on `Hello`/`HelloAck`: nonce present; bit 1 on `HelloAck`: proof present; bit 0 on `Data`: retransmission; bit 0 on `Ack`: reset; bit 0 on `Register`: identity proof present; bit 0 on `Snapshot`: more parts follow; every other bit 0 |
//!
//! Bodies (after the header, in order; a frame's `len` must end exactly at its last field):
//!
//! | kind (code) | body |
//! |---|---|
//! | `Hello` (1) | node `u64`, incarnation `u64`, version_min `u16`, version_max `u16`, challenge (only if flag bit 0: nonce 32 bytes, key_id `u8`), name `str` |
//! | `HelloAck` (2) | node, incarnation, version_min, version_max, status `u8` (0 accepted, else [`RefuseReason`] code), nonce (32 bytes, if flag bit 0), proof (key_id `u8`, MAC 32 bytes; if flag bit 1), name `str` |
//! | `Data` (3) | src `u64`, dst `u64`, seq `u64`, dst_incarnation `u64` (0 = unknown), msg_type `u32`, hop_count `u8`, payload = the rest of the frame |
//! | `Ack` (4) | src `u64`, dst `u64`, seq `u64` (cumulative; with the reset flag the refused seq), dst_incarnation `u64` (the acker's), age `u64` (ns the acker has run; only with the reset flag) |
//! | `Unreachable` (5) | src, dst, seq, reason `u8` ([`UnreachableReason`]) |
//! | `Ping` (6) / `Pong` (7) | nonce `u64` |
//! | `Probe` (10) | target `u64`, incarnation `u64` |
//! | `ProbeAck` (11) | target `u64`, incarnation `u64`, verdict `u8` (0 unknown, 1 alive, 2 dead) |
//! | `Bye` (8) | reason `u8` ([`ByeReason`]) |
//! | `Auth` (9) | key_id `u8`, MAC (32 bytes): the dialler's proof ([`crate::bus::handshake`]) |
//! | `Register` (16) | incarnation `u64`, discovery `bytes` (JSON), topology `bytes` (JSON, empty = none), identity proof (32 bytes, only if flag bit 0; [`IdentityProof`](crate::discovery::IdentityProof)) |
//! | `Update` (17) | incarnation `u64`, discovery `bytes` (empty = unchanged), topology `bytes` (empty = unchanged) |
//! | `Snapshot` (18) | epoch `u64`, revision `u64`, count `u32`, `count` × entry; flag bit 0: more parts of this snapshot (same epoch and revision) follow |
//! | `Put` (19) | epoch `u64`, revision `u64`, entry |
//! | `Delete` (20) | epoch `u64`, revision `u64`, id `u64`, name `str` |
//! | `Heartbeat` (21) | epoch `u64`, sequence `u64` |
//!
//! A registry entry is: incarnation `u64`, discovery revision `u64`, topology revision `u64`,
//! entry flags `u8` (bit 0 suspect; other bits 0), only if suspect how long ago its session was
//! lost `u64` (milliseconds, as of sending), discovery `bytes` (JSON), topology `bytes`
//! (JSON, empty = none). JSON records are libatapp's `atapp_discovery` / `atapp_topology_info`
//! as [`discovery`](crate::discovery) writes and reads them.
//!
//! An RPC message (request, reply, refusal, cancel) is the payload of a `Data` frame of the
//! reserved type [`RPC_MSG_TYPE`]; its layout, including the optional metadata block a
//! request or reply carries (trace context: at most [`MAX_METADATA_ENTRIES`] entries, keys
//! up to [`MAX_METADATA_KEY_LEN`] bytes, values up to [`MAX_METADATA_VALUE_LEN`], the block
//! up to [`MAX_METADATA_LEN`]), is in [`RpcMessage`]'s module docs and [`metadata`].
//!
//! The `Data` retransmission flag says an earlier copy of the message may have reached `dst`;
//! the `Ack` reset flag says `dst` (in `dst_incarnation`) refused the frame `seq` and does not
//! hold its stream (`bus::stream` has the rules).
//!
//! A `Data` frame is 45 bytes plus its payload; `Ack` 40 (a reset 48), `Ping`/`Pong` 16, `Probe` 24, `ProbeAck` 25, `Bye` 9.
//! A `Register` is its records' JSON plus at most [`REGISTER_OVERHEAD`] (56) bytes, an entry its
//! records' JSON plus at most [`ENTRY_OVERHEAD`] (41), a `Put` an entry plus [`PUT_OVERHEAD`] (24), a
//! `Snapshot` part its entries plus [`SNAPSHOT_OVERHEAD`] (28).
//!
//! A `HelloAck` refusing a registration for its size ([`RefuseReason::RecordTooLarge`]) carries
//! the limit's name in `name`, the size found in `node` and the limit in `incarnation`.
//!
//! # Example
//!
//! ```
//! use switchboard_core::{ids::NodeId, wire::{self, Data, Decoded, Frame}};
//!
//! let data = Data {
//!     src: NodeId(1),
//!     dst: NodeId(2),
//!     seq: 7,
//!     dst_incarnation: 0,
//!     retransmit: false,
//!     msg_type: 100,
//!     hop_count: 0,
//!     payload: b"hi",
//! };
//! let mut out = Vec::with_capacity(64); // keep it: encode appends, clear after each flush
//! assert_eq!(wire::encode(&Frame::Data(data), &mut out), Ok(47));
//!
//! let max = wire::DEFAULT_MAX_FRAME;
//! assert_eq!(wire::decode(&out, max), Ok(Decoded::Frame(Frame::Data(data), 47)));
//! assert_eq!(wire::decode(&out[..10], max), Ok(Decoded::NeedMore(37)));
//! ```

mod decode;
mod encode;
mod frame;
mod limits;
pub mod metadata;
mod reader;
mod record_cache;
mod registry;
mod rpc;

#[cfg(test)]
mod tests;

pub use decode::{DecodeError, Decoded, decode, decode_limited, frame_len};
pub(crate) use encode::encode_data;
pub use encode::{EncodeError, MAX_ENCODABLE, encode, encode_owned, encoded_len};
pub use frame::{
    Ack, Auth, Bye, ByeReason, Challenge, Data, Delete, Frame, FrameKind, Heartbeat, Hello,
    HelloAck, MAC_LEN, NONCE_LEN, Nonce, PROOF_LEN, Ping, Pong, Probe, ProbeAck, ProbeVerdict,
    Proof, Put, RefuseReason, Register, RegistryEntry, Snapshot, Unreachable, UnreachableReason,
    Update, VersionRange,
};
pub use limits::{
    AUTH_LEN, BYE_LEN, FrameLimits, HEARTBEAT_LEN, MAX_HELLO_ACK_LEN, MAX_HELLO_LEN, MAX_NAME_LEN,
};
pub use metadata::{
    MAX_METADATA_ENTRIES, MAX_METADATA_KEY_LEN, MAX_METADATA_LEN, MAX_METADATA_VALUE_LEN,
    MetadataIter, MetadataRef, TRACEPARENT, TRACESTATE,
};
pub use reader::FrameReader;
pub use record_cache::RecordCache;
pub use registry::{
    ENTRY_OVERHEAD, EncodedRecords, PUT_OVERHEAD, REGISTER_OVERHEAD, SNAPSHOT_OVERHEAD,
    UPDATE_OVERHEAD, encode_snapshot_parts, encode_snapshot_parts_of, entry_len,
};
pub use rpc::{
    METADATA_FLAG, RPC_MSG_TYPE, RefuseCall, RpcMessage, decode_rpc, encode_rpc, reply_len,
    request_len, rpc_len,
};

/// Format version written in every header and the only one [`decode`] accepts.
pub const WIRE_VERSION: u8 = 1;

/// Length of the frame header.
pub const HEADER_LEN: usize = 8;

/// A receiver's frame limit when its configuration names none: 16 MiB, room for a registry
/// snapshot of some ten thousand nodes.
pub const DEFAULT_MAX_FRAME: usize = 16 << 20;

/// Largest payload a `Data` frame can carry within [`DEFAULT_MAX_FRAME`]: the frame limit less
/// the header and the data frame's fixed fields. A node refuses a larger message
/// (`SendError::PayloadTooLarge`).
pub const MAX_DATA_PAYLOAD: usize = DEFAULT_MAX_FRAME - HEADER_LEN - decode::DATA_FIXED_LEN;
