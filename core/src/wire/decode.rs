//! The total decoder: any byte string gives a frame, "need more bytes", or a typed error.
//!
//! The header is checked as soon as its bytes are present (length against the maximum, then
//! version, then kind), so a bad stream is refused after at most 6 bytes instead of after
//! waiting for a lying length's worth of data. Nothing is allocated for link-level frames;
//! registry frames allocate only for the records they actually contain (counts are checked
//! against the bytes present before anything is reserved).

use alloc::boxed::Box;

use super::{
    FrameLimits, HEADER_LEN, RecordCache, WIRE_VERSION,
    frame::{
        Ack, Auth, Bye, ByeReason, Challenge, Data, Delete, Frame, FrameKind, Heartbeat, Hello,
        HelloAck, MAC_LEN, NONCE_LEN, Nonce, Ping, Pong, Probe, ProbeAck, ProbeVerdict, Proof,
        RefuseReason, Unreachable, UnreachableReason, VersionRange,
    },
    registry,
};
use crate::{discovery, ids::NodeId};

/// Header flag of `Hello`/`HelloAck`: a nonce follows the version range (and status).
pub(super) const FLAG_NONCE: u16 = 1;

/// Header flag of `HelloAck`: a proof (key id, MAC) follows the nonce.
pub(super) const FLAG_PROOF: u16 = 2;

/// Header flag of `Data`: a retransmission (an earlier copy may have arrived).
pub(super) const FLAG_RETRANSMIT: u16 = 1;

/// Header flag of `Ack`: a reset (the frame was refused), not an acknowledgement.
pub(super) const FLAG_RESET: u16 = 1;

/// Header flag of `Register`: an identity proof follows the topology record.
pub(super) const FLAG_IDENTITY_PROOF: u16 = 1;

/// Header flag of `Register`: a watch, not a registration — the registry answers with its
/// snapshot and then every change, and lists nothing for the connection.
pub(super) const FLAG_WATCH: u16 = 2;

/// Header flag of `Snapshot`: more parts of this snapshot follow.
pub(super) const FLAG_MORE: u16 = 1;

/// Fixed body length of a `Data` frame before its payload.
pub(super) const DATA_FIXED_LEN: usize = 8 + 8 + 8 + 8 + 4 + 1;

/// Why a byte string is not a valid frame.
///
/// Every variant means the stream is unusable from this point (frame boundaries can no longer
/// be trusted): count it and close the link.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The length field announces a frame larger than the receiver accepts. Detected from the
    /// first 4 bytes, before anything is buffered or allocated for it.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    FrameTooLarge {
        /// Announced frame length.
        len: usize,
        /// The receiver's maximum.
        max: usize,
    },
    /// The length field is smaller than the header itself.
    #[error("frame length {len} is shorter than the {HEADER_LEN}-byte header")]
    BadLength {
        /// Announced frame length.
        len: usize,
    },
    /// The header's format version is not one this decoder reads.
    #[error("unsupported wire version {version}")]
    BadVersion {
        /// The version byte received.
        version: u8,
    },
    /// The header names a kind the receiver does not accept at this point of the link's life
    /// (e.g. anything but a handshake frame before the handshake finished; see
    /// [`FrameLimits`](super::FrameLimits)). Detected from the first 6 bytes.
    #[error("a {kind:?} frame is not accepted in this phase of the link")]
    KindNotAllowed {
        /// Kind of the frame.
        kind: FrameKind,
    },
    /// The header's kind byte names no frame kind.
    #[error("unknown frame kind {kind}")]
    UnknownKind {
        /// The kind byte received.
        kind: u8,
    },
    /// The header sets flag bits the kind does not define.
    #[error("frame kind {kind:?} does not define flags {flags:#06x}")]
    UnknownFlags {
        /// Kind of the frame.
        kind: FrameKind,
        /// The flags received.
        flags: u16,
    },
    /// A field runs past the end of the frame.
    #[error("frame ends inside field `{field}`")]
    Truncated {
        /// The field that did not fit.
        field: &'static str,
    },
    /// The frame is longer than its fields: bytes are left after the last one.
    #[error("{kind:?} frame is {len} bytes but its fields end at {used}")]
    LengthMismatch {
        /// Kind of the frame.
        kind: FrameKind,
        /// Announced frame length.
        len: usize,
        /// Bytes its fields use, header included.
        used: usize,
    },
    /// A text field is not UTF-8.
    #[error("field `{field}` is not valid UTF-8")]
    InvalidUtf8 {
        /// The field.
        field: &'static str,
    },
    /// A coded field (reason, status, boolean flags) holds a value that means nothing.
    #[error("field `{field}` has unknown code {code}")]
    UnknownCode {
        /// The field.
        field: &'static str,
        /// The code received.
        code: u8,
    },
    /// A count field promises more items than the remaining bytes could hold. Detected before
    /// anything is reserved for them.
    #[error("field `{field}` counts {count} items but only {remaining} bytes remain")]
    CountTooLarge {
        /// The field.
        field: &'static str,
        /// The count received.
        count: u32,
        /// Bytes left in the frame after the count.
        remaining: usize,
    },
    /// An RPC message's metadata block breaks a bound: its entry count, a key's or a
    /// value's length, or its whole size ([`MAX_METADATA_LEN`](super::MAX_METADATA_LEN) and
    /// its siblings).
    #[error("`{field}` is {len}, outside its bounds {min}..={max}")]
    MetadataBounds {
        /// `metadata_count`, `metadata_key`, `metadata_value` or `metadata` (the block).
        field: &'static str,
        /// The count or length received (for the block: its size so far).
        len: usize,
        /// The least allowed.
        min: usize,
        /// The most allowed.
        max: usize,
    },
    /// An embedded discovery or topology record is not valid libatapp JSON.
    #[error("record `{field}` is not a valid record: {error}")]
    Json {
        /// Which record (`discovery` or `topology`).
        field: &'static str,
        /// What the JSON decoder reported.
        #[source]
        error: discovery::DecodeError,
    },
}

/// What [`decode`] found at the start of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A complete frame and the number of bytes it used (drop them before decoding again).
    Frame(Frame<'a>, usize),
    /// The buffer holds the start of a frame (or nothing); at least this many more bytes are
    /// needed before decoding can make progress. Always at least 1.
    NeedMore(usize),
}

/// Decodes the frame at the start of `buf`, refusing frames longer than `max_frame` bytes.
///
/// Call with everything received so far; on [`Decoded::Frame`] drop the `consumed` bytes and
/// call again, on [`Decoded::NeedMore`] wait for more bytes. A streaming caller uses
/// [`FrameReader`](super::FrameReader), which does this bookkeeping. Never panics; bytes after
/// the first frame are not looked at. Frames borrow names and payloads from `buf`.
///
/// # Errors
/// A [`DecodeError`] when the bytes cannot start a valid frame; the header fields are checked
/// as soon as they are present, so a prefix that is already wrong is refused without waiting
/// for more.
pub fn decode(buf: &[u8], max_frame: usize) -> Result<Decoded<'_>, DecodeError> {
    decode_checked(buf, Limit::Uniform(max_frame), None)
}

/// [`decode`] under per-kind limits: a kind `limits` does not accept is refused
/// ([`DecodeError::KindNotAllowed`]) and each kind has its own maximum.
///
/// # Errors
/// As [`decode`], plus [`DecodeError::KindNotAllowed`].
pub fn decode_limited<'a>(buf: &'a [u8], limits: &FrameLimits) -> Result<Decoded<'a>, DecodeError> {
    decode_checked(buf, Limit::Table(limits), None)
}

/// [`decode`]'s work; registry records come from `records` when it holds their bytes
/// ([`RecordCache`]).
pub(super) fn decode_checked<'a>(
    buf: &'a [u8],
    limit: Limit<'_>,
    records: Option<&mut RecordCache>,
) -> Result<Decoded<'a>, DecodeError> {
    let (len, kind) = match check_header(buf, limit)? {
        Header::Partial(need) => return Ok(Decoded::NeedMore(need)),
        Header::Complete(len, kind) => (len, kind),
    };
    let frame = &buf[..len];
    let flags = u16::from_le_bytes([frame[6], frame[7]]);
    let body = &frame[HEADER_LEN..];
    let frame = decode_body(kind, flags, body, records)?;
    Ok(Decoded::Frame(frame, len))
}

/// The length of the complete frame at the start of `buf` (its header checked, its body not
/// looked at), or `None` while more bytes are needed.
///
/// A streaming reader that hands out whole frames as owned slices
/// ([`FrameReader::next_frame_bytes`](super::FrameReader::next_frame_bytes)) uses it to cut the
/// stream, and its caller decodes each frame once with [`decode`].
///
/// # Errors
/// The same header errors as [`decode`], as soon as the header bytes are present.
pub fn frame_len(buf: &[u8], max_frame: usize) -> Result<Option<usize>, DecodeError> {
    frame_len_checked(buf, Limit::Uniform(max_frame))
}

/// The limit a header is checked against.
#[derive(Clone, Copy)]
pub(super) enum Limit<'a> {
    /// Every kind, up to this length.
    Uniform(usize),
    /// Per kind.
    Table(&'a FrameLimits),
}

pub(super) fn frame_len_checked(
    buf: &[u8],
    limit: Limit<'_>,
) -> Result<Option<usize>, DecodeError> {
    Ok(match check_header(buf, limit)? {
        Header::Partial(_) => None,
        Header::Complete(len, _) => Some(len),
    })
}

/// What the header check found.
enum Header {
    /// More bytes are needed (at least this many).
    Partial(usize),
    /// A whole frame of this length and kind is present.
    Complete(usize, FrameKind),
}

/// Checks the header fields present at the start of `buf`: length against the maximum, then
/// version, then kind (and, under per-kind limits, whether the kind is accepted and the
/// length within its own maximum).
fn check_header(buf: &[u8], limit: Limit<'_>) -> Result<Header, DecodeError> {
    let max_frame = match limit {
        Limit::Uniform(max) => max,
        Limit::Table(limits) => limits.max_len(),
    };
    let Some(len_bytes) = buf.first_chunk::<4>() else {
        return Ok(Header::Partial(HEADER_LEN - buf.len()));
    };
    // u32 → usize is lossless on every target with at least 32-bit pointers.
    let len = u32::from_le_bytes(*len_bytes) as usize;
    if len > max_frame {
        return Err(DecodeError::FrameTooLarge {
            len,
            max: max_frame,
        });
    }
    if len < HEADER_LEN {
        return Err(DecodeError::BadLength { len });
    }
    match buf.get(4) {
        Some(&version) if version != WIRE_VERSION => {
            return Err(DecodeError::BadVersion { version });
        }
        _ => {}
    }
    let kind = match buf.get(5) {
        Some(&code) => {
            Some(FrameKind::from_code(code).ok_or(DecodeError::UnknownKind { kind: code })?)
        }
        None => None,
    };
    if let (Limit::Table(limits), Some(kind)) = (limit, kind) {
        match limits.max_for(kind) {
            None => return Err(DecodeError::KindNotAllowed { kind }),
            Some(max) if len > max => return Err(DecodeError::FrameTooLarge { len, max }),
            Some(_) => {}
        }
    }
    match kind {
        Some(kind) if buf.len() >= len => Ok(Header::Complete(len, kind)),
        _ => Ok(Header::Partial(len - buf.len())),
    }
}

/// Decodes the body of a frame whose header said `kind` and `flags`.
fn decode_body<'a>(
    kind: FrameKind,
    flags: u16,
    body: &'a [u8],
    records: Option<&mut RecordCache>,
) -> Result<Frame<'a>, DecodeError> {
    let allowed = match kind {
        FrameKind::Hello => FLAG_NONCE,
        FrameKind::HelloAck => FLAG_NONCE | FLAG_PROOF,
        FrameKind::Data => FLAG_RETRANSMIT,
        FrameKind::Ack => FLAG_RESET,
        FrameKind::Register => FLAG_IDENTITY_PROOF | FLAG_WATCH,
        FrameKind::Snapshot => FLAG_MORE,
        _ => 0,
    };
    if flags & !allowed != 0 {
        return Err(DecodeError::UnknownFlags { kind, flags });
    }
    let mut cursor = Cursor { body, pos: 0 };
    let frame = match kind {
        FrameKind::Data => return decode_data(body, flags).map(Frame::Data),
        FrameKind::Hello => Frame::Hello(decode_hello(&mut cursor, flags)?),
        FrameKind::HelloAck => Frame::HelloAck(decode_hello_ack(&mut cursor, flags)?),
        FrameKind::Ack => Frame::Ack(Ack {
            src: cursor.node("src")?,
            dst: cursor.node("dst")?,
            seq: cursor.u64("seq")?,
            dst_incarnation: cursor.u64("dst_incarnation")?,
            reset: if flags & FLAG_RESET == 0 {
                None
            } else {
                Some(cursor.u64("age")?)
            },
        }),
        FrameKind::Unreachable => Frame::Unreachable(Unreachable {
            src: cursor.node("src")?,
            dst: cursor.node("dst")?,
            seq: cursor.u64("seq")?,
            reason: cursor.code("reason", UnreachableReason::from_code)?,
            dst_incarnation: cursor.u64("dst_incarnation")?,
        }),
        FrameKind::Probe => Frame::Probe(Probe {
            target: cursor.node("target")?,
            incarnation: cursor.u64("incarnation")?,
        }),
        FrameKind::ProbeAck => Frame::ProbeAck(ProbeAck {
            target: cursor.node("target")?,
            incarnation: cursor.u64("incarnation")?,
            verdict: cursor.code("verdict", ProbeVerdict::from_code)?,
        }),
        FrameKind::Ping => Frame::Ping(Ping {
            nonce: cursor.u64("nonce")?,
        }),
        FrameKind::Pong => Frame::Pong(Pong {
            nonce: cursor.u64("nonce")?,
        }),
        FrameKind::Auth => Frame::Auth(Auth {
            proof: cursor.proof()?,
        }),
        FrameKind::Bye => Frame::Bye(Bye {
            reason: cursor.code("reason", ByeReason::from_code)?,
        }),
        FrameKind::Delete => Frame::Delete(Delete {
            epoch: cursor.u64("epoch")?,
            revision: cursor.u64("revision")?,
            id: cursor.node("id")?,
            name: cursor.str("name")?,
        }),
        FrameKind::Heartbeat => Frame::Heartbeat(Heartbeat {
            epoch: cursor.u64("epoch")?,
            sequence: cursor.u64("sequence")?,
        }),
        FrameKind::Register => {
            Frame::Register(Box::new(registry::decode_register(&mut cursor, flags)?))
        }
        FrameKind::Update => Frame::Update(Box::new(registry::decode_update(&mut cursor)?)),
        FrameKind::Snapshot => Frame::Snapshot(Box::new(registry::decode_snapshot(
            &mut cursor,
            flags,
            records,
        )?)),
        FrameKind::Put => Frame::Put(Box::new(registry::decode_put(&mut cursor, records)?)),
    };
    if cursor.pos != body.len() {
        return Err(DecodeError::LengthMismatch {
            kind,
            len: HEADER_LEN + body.len(),
            used: HEADER_LEN + cursor.pos,
        });
    }
    Ok(frame)
}

/// The data path: fixed fields read from one bounds-checked array, the rest is payload.
fn decode_data(body: &[u8], flags: u16) -> Result<Data<'_>, DecodeError> {
    let Some((fixed, payload)) = body.split_first_chunk::<DATA_FIXED_LEN>() else {
        return Err(DecodeError::Truncated {
            field: data_field_at(body.len()),
        });
    };
    let u64_at = |at: usize| {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(&fixed[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    Ok(Data {
        src: NodeId(u64_at(0)),
        dst: NodeId(u64_at(8)),
        seq: u64_at(16),
        dst_incarnation: u64_at(24),
        retransmit: flags & FLAG_RETRANSMIT != 0,
        msg_type: u32::from_le_bytes([fixed[32], fixed[33], fixed[34], fixed[35]]),
        hop_count: fixed[36],
        payload,
    })
}

/// The `Data` field a body of `len` bytes ends in (for the `Truncated` error).
fn data_field_at(len: usize) -> &'static str {
    match len {
        0..8 => "src",
        8..16 => "dst",
        16..24 => "seq",
        24..32 => "dst_incarnation",
        32..36 => "msg_type",
        _ => "hop_count",
    }
}

fn decode_hello<'a>(cursor: &mut Cursor<'a>, flags: u16) -> Result<Hello<'a>, DecodeError> {
    let node = cursor.node("node")?;
    let incarnation = cursor.u64("incarnation")?;
    let versions = cursor.versions()?;
    let challenge = if flags & FLAG_NONCE == 0 {
        None
    } else {
        Some(Challenge {
            nonce: cursor.array::<NONCE_LEN>("nonce")?,
            key_id: cursor.u8("key_id")?,
        })
    };
    let name = cursor.str("name")?;
    Ok(Hello {
        node,
        incarnation,
        versions,
        name,
        challenge,
    })
}

fn decode_hello_ack<'a>(cursor: &mut Cursor<'a>, flags: u16) -> Result<HelloAck<'a>, DecodeError> {
    let node = cursor.node("node")?;
    let incarnation = cursor.u64("incarnation")?;
    let versions = cursor.versions()?;
    let result = match cursor.u8("status")? {
        0 => Ok(()),
        code => Err(
            RefuseReason::from_code(code).ok_or(DecodeError::UnknownCode {
                field: "status",
                code,
            })?,
        ),
    };
    let nonce = cursor.nonce(flags)?;
    let proof = if flags & FLAG_PROOF == 0 {
        None
    } else {
        Some(cursor.proof()?)
    };
    let name = cursor.str("name")?;
    Ok(HelloAck {
        node,
        incarnation,
        versions,
        name,
        nonce,
        proof,
        result,
    })
}

/// Reads fields front to back from a frame body; every read is bounds-checked and names the
/// field it failed on.
pub(super) struct Cursor<'a> {
    pub(super) body: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    /// Bytes not yet read.
    pub(super) fn remaining(&self) -> usize {
        self.body.len() - self.pos
    }

    pub(super) fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.body.len())
            .ok_or(DecodeError::Truncated { field })?;
        let bytes = &self.body[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    pub(super) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], DecodeError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    pub(super) fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(field)?[0])
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.array(field).map(u16::from_le_bytes)
    }

    pub(super) fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.array(field).map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        self.array(field).map(u64::from_le_bytes)
    }

    fn node(&mut self, field: &'static str) -> Result<NodeId, DecodeError> {
        self.u64(field).map(NodeId)
    }

    /// A `u32` length followed by that many bytes.
    pub(super) fn bytes(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.u32(field)?;
        // A length beyond usize cannot fit the frame either.
        let len = usize::try_from(len).map_err(|_| DecodeError::Truncated { field })?;
        self.take(len, field)
    }

    pub(super) fn str(&mut self, field: &'static str) -> Result<&'a str, DecodeError> {
        core::str::from_utf8(self.bytes(field)?).map_err(|_| DecodeError::InvalidUtf8 { field })
    }

    fn code<T>(
        &mut self,
        field: &'static str,
        from: fn(u8) -> Option<T>,
    ) -> Result<T, DecodeError> {
        let code = self.u8(field)?;
        from(code).ok_or(DecodeError::UnknownCode { field, code })
    }

    fn versions(&mut self) -> Result<VersionRange, DecodeError> {
        Ok(VersionRange {
            min: self.u16("version_min")?,
            max: self.u16("version_max")?,
        })
    }

    fn nonce(&mut self, flags: u16) -> Result<Option<Nonce>, DecodeError> {
        if flags & FLAG_NONCE == 0 {
            return Ok(None);
        }
        self.array::<NONCE_LEN>("nonce").map(Some)
    }

    fn proof(&mut self) -> Result<Proof, DecodeError> {
        Ok(Proof {
            key_id: self.u8("key_id")?,
            mac: self.array::<MAC_LEN>("proof")?,
        })
    }
}
