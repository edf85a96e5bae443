//! The encoder: appends frames to a caller's reused buffer.
//!
//! Link-level frames are written with no allocation once the buffer has capacity (`Data` with
//! one `reserve`, one 45-byte header copy and one payload copy). Registry frames serialize
//! their records through [`DiscoveryInfo::to_json`](crate::discovery::DiscoveryInfo::to_json)
//! (one temporary buffer per record); they are control-plane traffic.

use alloc::vec::Vec;

use super::{
    HEADER_LEN, WIRE_VERSION,
    decode::{DATA_FIXED_LEN, FLAG_NONCE, FLAG_PROOF, FLAG_RESET, FLAG_RETRANSMIT},
    frame::{Data, Frame, FrameKind, NONCE_LEN, Nonce, PROOF_LEN, Proof, VersionRange},
    registry,
};

/// Why a frame cannot be encoded. The buffer is left exactly as it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The frame would exceed the largest length the header can state (`u32::MAX` bytes).
    #[error("frame of {len} bytes exceeds the {max}-byte limit of the length field")]
    FrameTooLarge {
        /// The frame's length.
        len: usize,
        /// The largest encodable frame.
        max: usize,
    },
    /// A registry record the receiver would refuse: a discovery record with id 0 and no name,
    /// or a topology record with id 0.
    #[error("record `{field}` has no identity and would not decode")]
    NoIdentity {
        /// Which record (`discovery` or `topology`).
        field: &'static str,
    },
}

/// Largest frame the 32-bit length field can state.
pub const MAX_ENCODABLE: usize = u32::MAX as usize;

/// Appends `frame` to `out` and returns the number of bytes written.
///
/// Appending (not overwriting) lets a writer batch several frames into one buffer; clear it
/// after each flush and keep it, so its capacity is reused. A link-level frame does not
/// allocate when `out` already has [`encoded_len`] bytes of spare capacity.
///
/// # Errors
/// [`EncodeError`] when the frame is not representable; `out` is then unchanged.
pub fn encode(frame: &Frame<'_>, out: &mut Vec<u8>) -> Result<usize, EncodeError> {
    if let Frame::Data(data) = frame {
        return encode_data(data, out);
    }
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    let flags = encode_body(frame, out).inspect_err(|_| out.truncate(start))?;
    let len = out.len() - start;
    let Ok(len32) = u32::try_from(len) else {
        out.truncate(start);
        return Err(EncodeError::FrameTooLarge {
            len,
            max: MAX_ENCODABLE,
        });
    };
    out[start..start + HEADER_LEN].copy_from_slice(&header(len32, frame.kind(), flags));
    Ok(len)
}

/// Frames up to this size are copied out of [`encode_owned`]'s scratch buffer; a larger one
/// takes the buffer itself.
const OWNED_COPY_MAX: usize = 4096;

/// Encodes `frame` into bytes of its own, through `scratch`: a buffer the caller keeps
/// between calls (its contents do not matter, it is cleared first).
///
/// Encoding into a fresh `Vec` allocates again each time it grows (three allocations of 8,
/// 16 and 32 bytes for a 24-byte heartbeat). Here a frame of up to 4 KiB is written into the
/// warm scratch buffer and copied out at its exact size, one allocation; a larger one (a
/// snapshot) takes the scratch buffer itself, so that buffer never keeps a large allocation
/// alive.
///
/// # Errors
/// [`EncodeError`], as [`encode`].
pub fn encode_owned(frame: &Frame<'_>, scratch: &mut Vec<u8>) -> Result<Vec<u8>, EncodeError> {
    scratch.clear();
    encode(frame, scratch)?;
    if scratch.len() > OWNED_COPY_MAX {
        return Ok(core::mem::take(scratch));
    }
    let owned = scratch.as_slice().to_vec();
    scratch.clear();
    Ok(owned)
}

/// The number of bytes [`encode`] writes for `frame`.
///
/// Link-level frames are sized arithmetically; registry frames serialize their records to
/// measure them (as costly as encoding). 0 for a frame `encode` refuses.
#[must_use]
pub fn encoded_len(frame: &Frame<'_>) -> usize {
    let body = match frame {
        Frame::Hello(hello) => {
            hello_len(false, false, hello.name) - 1 + hello.challenge.map_or(0, |_| NONCE_LEN + 1)
        }
        Frame::HelloAck(ack) => hello_len(ack.nonce.is_some(), ack.proof.is_some(), ack.name),
        Frame::Auth(_) => PROOF_LEN,
        Frame::Data(data) => DATA_FIXED_LEN + data.payload.len(),
        Frame::Ack(ack) => 32 + if ack.reset.is_some() { 8 } else { 0 },
        Frame::Unreachable(_) => 33,
        Frame::Ping(_) | Frame::Pong(_) => 8,
        Frame::Probe(_) => 16,
        Frame::ProbeAck(_) => 17,
        Frame::Bye(_) => 1,
        Frame::Delete(delete) => 8 + 8 + 8 + 4 + delete.name.len(),
        Frame::Heartbeat(_) => 16,
        Frame::Register(_) | Frame::Update(_) | Frame::Snapshot(_) | Frame::Put(_) => {
            let mut scratch = Vec::new();
            return encode(frame, &mut scratch).unwrap_or(0);
        }
    };
    HEADER_LEN + body
}

/// Body length of a `HelloAck` (a `Hello` is one status byte shorter).
fn hello_len(nonce: bool, proof: bool, name: &str) -> usize {
    8 + 8
        + 4
        + 1
        + if nonce { NONCE_LEN } else { 0 }
        + if proof { PROOF_LEN } else { 0 }
        + 4
        + name.len()
}

/// The 8-byte header: length, version, kind, flags.
pub(super) fn header(len: u32, kind: FrameKind, flags: u16) -> [u8; HEADER_LEN] {
    let [l0, l1, l2, l3] = len.to_le_bytes();
    let [f0, f1] = flags.to_le_bytes();
    [l0, l1, l2, l3, WIRE_VERSION, kind.code(), f0, f1]
}

/// Appends `data` as a `Data` frame to `out` and returns its length: what [`encode`] appends
/// for `Frame::Data(data)`, with no enum to match and no length to compute twice (the
/// sender's path: one reserve, one fixed-size copy, one payload copy).
///
/// # Errors
/// [`EncodeError::FrameTooLarge`] as [`encode`].
#[inline]
pub(crate) fn encode_data(data: &Data<'_>, out: &mut Vec<u8>) -> Result<usize, EncodeError> {
    let len = HEADER_LEN + DATA_FIXED_LEN + data.payload.len();
    let Ok(len32) = u32::try_from(len) else {
        return Err(EncodeError::FrameTooLarge {
            len,
            max: MAX_ENCODABLE,
        });
    };
    let mut fixed = [0u8; HEADER_LEN + DATA_FIXED_LEN];
    let flags = if data.retransmit { FLAG_RETRANSMIT } else { 0 };
    fixed[..HEADER_LEN].copy_from_slice(&header(len32, FrameKind::Data, flags));
    fixed[8..16].copy_from_slice(&data.src.0.to_le_bytes());
    fixed[16..24].copy_from_slice(&data.dst.0.to_le_bytes());
    fixed[24..32].copy_from_slice(&data.seq.to_le_bytes());
    fixed[32..40].copy_from_slice(&data.dst_incarnation.to_le_bytes());
    fixed[40..44].copy_from_slice(&data.msg_type.to_le_bytes());
    fixed[44] = data.hop_count;
    out.reserve(len);
    out.extend_from_slice(&fixed);
    out.extend_from_slice(data.payload);
    Ok(len)
}

/// Writes the body of a non-`Data` frame and returns the header flags it needs.
fn encode_body(frame: &Frame<'_>, out: &mut Vec<u8>) -> Result<u16, EncodeError> {
    let mut flags = 0;
    match frame {
        Frame::Hello(hello) => {
            put_u64(out, hello.node.0);
            put_u64(out, hello.incarnation);
            put_versions(out, hello.versions);
            if let Some(challenge) = &hello.challenge {
                out.extend_from_slice(&challenge.nonce);
                out.push(challenge.key_id);
                flags = FLAG_NONCE;
            }
            put_bytes(out, hello.name.as_bytes())?;
        }
        Frame::HelloAck(ack) => {
            put_u64(out, ack.node.0);
            put_u64(out, ack.incarnation);
            put_versions(out, ack.versions);
            out.push(match ack.result {
                Ok(()) => 0,
                Err(reason) => reason.code(),
            });
            flags = put_nonce(out, ack.nonce.as_ref());
            if let Some(proof) = &ack.proof {
                put_proof(out, proof);
                flags |= FLAG_PROOF;
            }
            put_bytes(out, ack.name.as_bytes())?;
        }
        Frame::Ack(ack) => {
            put_u64(out, ack.src.0);
            put_u64(out, ack.dst.0);
            put_u64(out, ack.seq);
            put_u64(out, ack.dst_incarnation);
            if let Some(age) = ack.reset {
                put_u64(out, age);
                flags = FLAG_RESET;
            }
        }
        Frame::Unreachable(unreachable) => {
            put_u64(out, unreachable.src.0);
            put_u64(out, unreachable.dst.0);
            put_u64(out, unreachable.seq);
            out.push(unreachable.reason.code());
            put_u64(out, unreachable.dst_incarnation);
        }
        Frame::Ping(ping) => put_u64(out, ping.nonce),
        Frame::Probe(probe) => {
            put_u64(out, probe.target.0);
            put_u64(out, probe.incarnation);
        }
        Frame::ProbeAck(ack) => {
            put_u64(out, ack.target.0);
            put_u64(out, ack.incarnation);
            out.push(ack.verdict.code());
        }
        Frame::Pong(pong) => put_u64(out, pong.nonce),
        Frame::Bye(bye) => out.push(bye.reason.code()),
        Frame::Auth(auth) => put_proof(out, &auth.proof),
        Frame::Delete(delete) => {
            put_u64(out, delete.epoch);
            put_u64(out, delete.revision);
            put_u64(out, delete.id.0);
            put_bytes(out, delete.name.as_bytes())?;
        }
        Frame::Heartbeat(heartbeat) => {
            put_u64(out, heartbeat.epoch);
            put_u64(out, heartbeat.sequence);
        }
        Frame::Register(register) => flags = registry::encode_register(register, out)?,
        Frame::Update(update) => registry::encode_update(update, out)?,
        Frame::Snapshot(snapshot) => flags = registry::encode_snapshot(snapshot, out)?,
        Frame::Put(put) => registry::encode_put(put, out)?,
        Frame::Data(data) => {
            // Handled by `encode_data`; kept total so this function stands on its own.
            if data.retransmit {
                flags = FLAG_RETRANSMIT;
            }
            put_u64(out, data.src.0);
            put_u64(out, data.dst.0);
            put_u64(out, data.seq);
            put_u64(out, data.dst_incarnation);
            put_u32(out, data.msg_type);
            out.push(data.hop_count);
            out.extend_from_slice(data.payload);
        }
    }
    Ok(flags)
}

pub(super) fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(super) fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// A `u32` length and the bytes.
pub(super) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), EncodeError> {
    let len = u32::try_from(bytes.len()).map_err(|_| EncodeError::FrameTooLarge {
        len: bytes.len(),
        max: MAX_ENCODABLE,
    })?;
    put_u32(out, len);
    out.extend_from_slice(bytes);
    Ok(())
}

fn put_versions(out: &mut Vec<u8>, versions: VersionRange) {
    out.extend_from_slice(&versions.min.to_le_bytes());
    out.extend_from_slice(&versions.max.to_le_bytes());
}

/// Writes the nonce if present and returns the header flags that announce it.
fn put_nonce(out: &mut Vec<u8>, nonce: Option<&Nonce>) -> u16 {
    match nonce {
        Some(nonce) => {
            out.extend_from_slice(nonce);
            FLAG_NONCE
        }
        None => 0,
    }
}

/// Writes a proof: key id, then the MAC.
fn put_proof(out: &mut Vec<u8>, proof: &Proof) {
    out.push(proof.key_id);
    out.extend_from_slice(&proof.mac);
}
