//! RPC messages: the request, reply, refusal and cancel that calls by method
//! ([`crate::rpc`]) exchange, as the payload of `Data` frames with a reserved message type
//! ([`RPC_MSG_TYPE`]) so they ride the acknowledged, deduplicated bus stream of each pair of
//! nodes: a retransmitted request reaches its server's application once.
//!
//! [`encode_rpc`] appends one message to a reused buffer; [`decode_rpc`] reads one and is
//! total: any byte string gives a message or a typed [`DecodeError`], never a panic, and
//! never allocates.
//!
//! # Byte layout
//!
//! Little-endian, fixed width; `str` is a `u32` length then UTF-8 bytes. Every message starts
//! with kind `u8`, call id `u64`, caller incarnation `u64` (the caller's life, with the call
//! id the call's identity on the server), then by kind:
//!
//! | kind (code) | rest |
//! |---|---|
//! | `Request` (1) | remaining budget in ns `u64`, method `str`, payload = the rest |
//! | `Reply` (2) | payload = the rest (an application error travels inside, as data) |
//! | `Refuse` (3) | reason `u8` ([`RefuseCall`]: 1 not served, 2 expired, 3 overloaded): the handler never saw the request |
//! | `Cancel` (4) | nothing |
//! | `Request` with metadata (`0x81`) | remaining budget `u64`, method `str`, metadata block, payload = the rest |
//! | `Reply` with metadata (`0x82`) | metadata block, payload = the rest |
//!
//! Bit 7 of the kind ([`METADATA_FLAG`]) says a metadata block follows
//! ([`MetadataRef`], layout and bounds in [`super::metadata`]: at most 16 entries, keys
//! 1 ..= 64 bytes of UTF-8, values at most 512 bytes, the block at most 4 KiB); only a
//! request or a reply sets it, and only with at least one entry. A message without
//! metadata has exactly the bytes it had before metadata existed, so a node that does not
//! use metadata speaks to an older one unchanged.

use super::{DecodeError, FrameKind, MetadataRef, decode::Cursor, metadata};

/// The `Data` message type every RPC message travels under. Reserved: `send` refuses it.
pub const RPC_MSG_TYPE: u32 = 0xFFFF_FF01;

/// Bit of the kind byte saying a metadata block follows (requests and replies only).
pub const METADATA_FLAG: u8 = 0x80;

/// Bytes before a request's method: kind, call, caller incarnation, budget.
const REQUEST_FIXED_LEN: usize = 1 + 8 + 8 + 8;

/// Why a server refused a request without running a handler (a [`RpcMessage::Refuse`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RefuseCall {
    /// The server does not serve the method (it stopped serving it, or never did).
    NotServed,
    /// The request's budget was spent when it arrived.
    Expired,
    /// The server is at its concurrency limit for the method and sheds the request at once
    /// (its handler never saw it).
    Overloaded,
}

impl RefuseCall {
    const fn code(self) -> u8 {
        match self {
            RefuseCall::NotServed => 1,
            RefuseCall::Expired => 2,
            RefuseCall::Overloaded => 3,
        }
    }

    const fn from_code(code: u8) -> Option<RefuseCall> {
        match code {
            1 => Some(RefuseCall::NotServed),
            2 => Some(RefuseCall::Expired),
            3 => Some(RefuseCall::Overloaded),
            _ => None,
        }
    }
}

/// One RPC message, borrowing its method and payload from the bytes it was decoded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RpcMessage<'a> {
    /// A call of `method`.
    Request {
        /// The caller's id for the call.
        call: u64,
        /// The caller's incarnation.
        caller_incarnation: u64,
        /// What is left of the call's deadline when the caller handed the request on, in ns.
        remaining_ns: u64,
        /// The method.
        method: &'a str,
        /// The caller's metadata (trace context, ...), for the handler.
        metadata: MetadataRef<'a>,
        /// The arguments.
        payload: &'a [u8],
    },
    /// The handler's answer.
    Reply {
        /// The call answered.
        call: u64,
        /// The caller's incarnation the request carried.
        caller_incarnation: u64,
        /// The handler's metadata, for the caller.
        metadata: MetadataRef<'a>,
        /// The answer.
        payload: &'a [u8],
    },
    /// The server did not run a handler for the request.
    Refuse {
        /// The call refused.
        call: u64,
        /// The caller's incarnation the request carried.
        caller_incarnation: u64,
        /// Why.
        reason: RefuseCall,
    },
    /// The caller gave the call up: its reply is no longer wanted.
    Cancel {
        /// The call cancelled.
        call: u64,
        /// The caller's incarnation.
        caller_incarnation: u64,
    },
}

/// Appends `message` to `out` (a `Vec<u8>`, a `BytesMut`, ...).
pub fn encode_rpc<B: bytes::BufMut + ?Sized>(message: &RpcMessage<'_>, out: &mut B) {
    let (kind, call, incarnation) = match *message {
        RpcMessage::Request {
            call,
            caller_incarnation,
            metadata,
            ..
        } => (1u8 | flag(metadata), call, caller_incarnation),
        RpcMessage::Reply {
            call,
            caller_incarnation,
            metadata,
            ..
        } => (2 | flag(metadata), call, caller_incarnation),
        RpcMessage::Refuse {
            call,
            caller_incarnation,
            ..
        } => (3, call, caller_incarnation),
        RpcMessage::Cancel {
            call,
            caller_incarnation,
        } => (4, call, caller_incarnation),
    };
    out.put_u8(kind);
    out.put_slice(&call.to_le_bytes());
    out.put_slice(&incarnation.to_le_bytes());
    match *message {
        RpcMessage::Request {
            remaining_ns,
            method,
            metadata,
            payload,
            ..
        } => {
            out.put_slice(&remaining_ns.to_le_bytes());
            let len = u32::try_from(method.len()).expect("a method name is at most 255 bytes");
            out.put_slice(&len.to_le_bytes());
            out.put_slice(method.as_bytes());
            metadata::put(metadata, out);
            out.put_slice(payload);
        }
        RpcMessage::Reply {
            metadata, payload, ..
        } => {
            metadata::put(metadata, out);
            out.put_slice(payload);
        }
        RpcMessage::Refuse { reason, .. } => out.put_u8(reason.code()),
        RpcMessage::Cancel { .. } => {}
    }
}

/// The kind bits saying whether a metadata block follows.
const fn flag(metadata: MetadataRef<'_>) -> u8 {
    if metadata.is_empty() {
        0
    } else {
        METADATA_FLAG
    }
}

/// The encoded length of a request with this method, metadata block
/// ([`MetadataRef::as_bytes`], 0 = none) and payload length.
#[must_use]
pub const fn request_len(method_len: usize, metadata_len: usize, payload_len: usize) -> usize {
    REQUEST_FIXED_LEN + 4 + method_len + metadata_len + payload_len
}

/// The encoded length of a reply with this metadata block (0 = none) and payload length.
#[must_use]
pub const fn reply_len(metadata_len: usize, payload_len: usize) -> usize {
    1 + 8 + 8 + metadata_len + payload_len
}

/// The encoded length of `message`.
#[must_use]
pub const fn rpc_len(message: &RpcMessage<'_>) -> usize {
    match *message {
        RpcMessage::Request {
            method,
            metadata,
            payload,
            ..
        } => request_len(method.len(), metadata.as_bytes().len(), payload.len()),
        RpcMessage::Reply {
            metadata, payload, ..
        } => reply_len(metadata.as_bytes().len(), payload.len()),
        RpcMessage::Refuse { .. } => 1 + 8 + 8 + 1,
        RpcMessage::Cancel { .. } => 1 + 8 + 8,
    }
}

/// Reads one RPC message that fills `bytes` exactly.
///
/// # Errors
///
/// [`DecodeError::Truncated`] when a field runs past the end, [`DecodeError::UnknownCode`]
/// for an unknown kind or refusal reason (or the metadata flag on a refusal or a cancel),
/// [`DecodeError::InvalidUtf8`] for a method or a metadata key that is not UTF-8,
/// [`DecodeError::MetadataBounds`] for metadata beyond its bounds (or flagged with no
/// entry), [`DecodeError::LengthMismatch`] (kind `Data`) for bytes after a refusal or a
/// cancel.
pub fn decode_rpc(bytes: &[u8]) -> Result<RpcMessage<'_>, DecodeError> {
    let mut cursor = Cursor {
        body: bytes,
        pos: 0,
    };
    let kind = cursor.u8("rpc_kind")?;
    let call = cursor.u64("call")?;
    let caller_incarnation = cursor.u64("caller_incarnation")?;
    let message = match kind {
        1 | 0x81 => {
            let remaining_ns = cursor.u64("remaining_ns")?;
            let method = cursor.str("method")?;
            let metadata = read_metadata(kind, &mut cursor)?;
            let payload = cursor.take(cursor.remaining(), "payload")?;
            RpcMessage::Request {
                call,
                caller_incarnation,
                remaining_ns,
                method,
                metadata,
                payload,
            }
        }
        2 | 0x82 => {
            let metadata = read_metadata(kind, &mut cursor)?;
            RpcMessage::Reply {
                call,
                caller_incarnation,
                metadata,
                payload: cursor.take(cursor.remaining(), "payload")?,
            }
        }
        3 => {
            let code = cursor.u8("refuse_reason")?;
            let reason = RefuseCall::from_code(code).ok_or(DecodeError::UnknownCode {
                field: "refuse_reason",
                code,
            })?;
            RpcMessage::Refuse {
                call,
                caller_incarnation,
                reason,
            }
        }
        4 => RpcMessage::Cancel {
            call,
            caller_incarnation,
        },
        code => {
            return Err(DecodeError::UnknownCode {
                field: "rpc_kind",
                code,
            });
        }
    };
    if cursor.remaining() != 0 {
        return Err(DecodeError::LengthMismatch {
            kind: FrameKind::Data,
            len: bytes.len(),
            used: cursor.pos,
        });
    }
    Ok(message)
}

/// The metadata block a flagged kind carries (none for an unflagged one).
fn read_metadata<'a>(kind: u8, cursor: &mut Cursor<'a>) -> Result<MetadataRef<'a>, DecodeError> {
    if kind & METADATA_FLAG == 0 {
        Ok(MetadataRef::EMPTY)
    } else {
        metadata::read(cursor)
    }
}
