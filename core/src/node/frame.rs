//! Minimal link framing, v1: length-prefixed `Hello` and `Data` frames.
//!
//! This is a stand-in until the bus issue brings `core::wire` (versioned header, acks,
//! heartbeats, `Unreachable`); it carries exactly what the connection manager needs: the
//! handshake by id and addressed payloads.
//!
//! ```text
//! frame  = len:u32be body            (len = body length, 1 ..= MAX_FRAME_LEN)
//! body   = 0x01 id:u64be                                   Hello
//!        | 0x02 src:u64be dst:u64be msg_type:u32be hops:u8 payload   Data
//! ```
//!
//! The node's frame reader reassembles frames from arbitrary splits of the byte stream; any byte
//! string yields frames or a typed [`FrameError`], never a panic.

use alloc::vec::Vec;

use bytes::Bytes;

use crate::ids::NodeId;

/// Largest accepted frame body: a 16 MiB payload plus the `Data` header.
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024 + DATA_HEADER_LEN;

const KIND_HELLO: u8 = 0x01;
const KIND_DATA: u8 = 0x02;
const HELLO_LEN: usize = 1 + 8;
const DATA_HEADER_LEN: usize = 1 + 8 + 8 + 4 + 1;

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Handshake: the sender's node id.
    Hello { id: NodeId },
    /// An addressed message; `hops` counts relays so far.
    Data {
        src: NodeId,
        dst: NodeId,
        msg_type: u32,
        hops: u8,
        payload: Bytes,
    },
}

/// Why the byte stream of a link could not be decoded. The link is closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A length prefix above [`MAX_FRAME_LEN`].
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// The announced body length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A zero length prefix (a frame needs at least its kind byte).
    #[error("empty frame")]
    Empty,
    /// A kind byte this version does not know.
    #[error("unknown frame kind {0:#04x}")]
    UnknownKind(u8),
    /// A known kind whose body is too short (or, for `Hello`, not exactly its size).
    #[error("frame kind {kind:#04x} has a malformed body of {len} bytes")]
    BadBody {
        /// The kind byte.
        kind: u8,
        /// The body length.
        len: usize,
    },
}

/// Encodes a `Hello` frame.
pub(crate) fn encode_hello(id: NodeId) -> Bytes {
    let mut out = Vec::with_capacity(4 + HELLO_LEN);
    out.extend_from_slice(&(HELLO_LEN as u32).to_be_bytes());
    out.push(KIND_HELLO);
    out.extend_from_slice(&id.0.to_be_bytes());
    Bytes::from(out)
}

/// Encodes a `Data` frame. The caller keeps payloads within the limit (checked at `send`).
pub(crate) fn encode_data(
    src: NodeId,
    dst: NodeId,
    msg_type: u32,
    hops: u8,
    payload: &[u8],
) -> Bytes {
    let body = DATA_HEADER_LEN + payload.len();
    let len = u32::try_from(body).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(4 + body);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(KIND_DATA);
    out.extend_from_slice(&src.0.to_be_bytes());
    out.extend_from_slice(&dst.0.to_be_bytes());
    out.extend_from_slice(&msg_type.to_be_bytes());
    out.push(hops);
    out.extend_from_slice(payload);
    Bytes::from(out)
}

/// Largest payload a `Data` frame can carry.
pub(crate) const MAX_PAYLOAD_LEN: usize = MAX_FRAME_LEN - DATA_HEADER_LEN;

/// Reassembles frames from a link's byte stream.
#[derive(Clone, Debug, Default)]
pub(crate) struct FrameReader {
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed.
    start: usize,
}

impl FrameReader {
    /// Appends received bytes.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held but not yet decoded.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete frame, `Ok(None)` when more bytes are needed.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        let rest = &self.buf[self.start..];
        let Some(prefix) = rest.get(..4) else {
            self.compact();
            return Ok(None);
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        if len == 0 {
            return Err(FrameError::Empty);
        }
        if len > MAX_FRAME_LEN {
            return Err(FrameError::TooLong {
                len,
                max: MAX_FRAME_LEN,
            });
        }
        let Some(body) = rest.get(4..4 + len) else {
            self.compact();
            return Ok(None);
        };
        let frame = decode_body(body)?;
        self.start += 4 + len;
        Ok(Some(frame))
    }

    /// Drops consumed bytes once they dominate the buffer, so a long-lived link does not grow
    /// its buffer without bound.
    fn compact(&mut self) {
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }
}

fn be_u64(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    u64::from_be_bytes(b)
}

fn decode_body(body: &[u8]) -> Result<Frame, FrameError> {
    let kind = body[0];
    match kind {
        KIND_HELLO => {
            if body.len() != HELLO_LEN {
                return Err(FrameError::BadBody {
                    kind,
                    len: body.len(),
                });
            }
            Ok(Frame::Hello {
                id: NodeId(be_u64(&body[1..])),
            })
        }
        KIND_DATA => {
            if body.len() < DATA_HEADER_LEN {
                return Err(FrameError::BadBody {
                    kind,
                    len: body.len(),
                });
            }
            let msg_type = u32::from_be_bytes([body[17], body[18], body[19], body[20]]);
            Ok(Frame::Data {
                src: NodeId(be_u64(&body[1..9])),
                dst: NodeId(be_u64(&body[9..17])),
                msg_type,
                hops: body[21],
                payload: Bytes::copy_from_slice(&body[DATA_HEADER_LEN..]),
            })
        }
        other => Err(FrameError::UnknownKind(other)),
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec;

    use super::*;

    fn read_all(reader: &mut FrameReader) -> Result<Vec<Frame>, FrameError> {
        let mut out = Vec::new();
        while let Some(f) = reader.next_frame()? {
            out.push(f);
        }
        Ok(out)
    }

    #[test]
    fn hello_and_data_have_exact_bytes() {
        assert_eq!(
            &encode_hello(NodeId(0x101))[..],
            &[0, 0, 0, 9, 1, 0, 0, 0, 0, 0, 0, 1, 1][..]
        );
        let data = encode_data(NodeId(1), NodeId(2), 100, 3, b"hi");
        assert_eq!(
            &data[..],
            &[
                0, 0, 0, 24, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 100, 3,
                b'h', b'i'
            ][..]
        );
    }

    #[test]
    fn frames_reassemble_from_every_split() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&encode_hello(NodeId(7)));
        stream.extend_from_slice(&encode_data(NodeId(7), NodeId(9), 5, 0, b"payload"));
        stream.extend_from_slice(&encode_data(NodeId(7), NodeId(9), 6, 1, b""));
        let expected = vec![
            Frame::Hello { id: NodeId(7) },
            Frame::Data {
                src: NodeId(7),
                dst: NodeId(9),
                msg_type: 5,
                hops: 0,
                payload: Bytes::from_static(b"payload"),
            },
            Frame::Data {
                src: NodeId(7),
                dst: NodeId(9),
                msg_type: 6,
                hops: 1,
                payload: Bytes::new(),
            },
        ];
        for split in 0..=stream.len() {
            let mut reader = FrameReader::default();
            reader.push(&stream[..split]);
            let mut got = read_all(&mut reader).unwrap();
            reader.push(&stream[split..]);
            got.extend(read_all(&mut reader).unwrap());
            assert_eq!(got, expected, "split at {split}");
            assert_eq!(reader.buffered(), 0);
        }
        // One byte at a time.
        let mut reader = FrameReader::default();
        let mut got = Vec::new();
        for b in &stream {
            reader.push(core::slice::from_ref(b));
            got.extend(read_all(&mut reader).unwrap());
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn malformed_frames_are_typed_errors() {
        let cases: [(&[u8], FrameError); 5] = [
            (&[0, 0, 0, 0], FrameError::Empty),
            (&[0, 0, 0, 1, 9], FrameError::UnknownKind(9)),
            (&[0, 0, 0, 2, 1, 0], FrameError::BadBody { kind: 1, len: 2 }),
            (
                &[0, 0, 0, 3, 2, 0, 0],
                FrameError::BadBody { kind: 2, len: 3 },
            ),
            (
                &[0xff, 0xff, 0xff, 0xff],
                FrameError::TooLong {
                    len: 0xffff_ffff,
                    max: MAX_FRAME_LEN,
                },
            ),
        ];
        for (bytes, err) in cases {
            let mut reader = FrameReader::default();
            reader.push(bytes);
            assert_eq!(reader.next_frame(), Err(err), "{bytes:?}");
        }
    }
}
