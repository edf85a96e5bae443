//! The baseline's wire format: a big-endian `u32` length, then that many payload bytes (what
//! tokio-util's `LengthDelimitedCodec` does by default), hand-rolled on `bytes` so the baseline
//! needs nothing beyond tokio.
//!
//! The baseline payload is 64 bytes: the send instant (nanoseconds since the client's epoch,
//! `u64` little-endian), the sequence number (`u64` LE), then a fixed filler pattern the
//! client checks on the way back.

use bytes::{Buf, BufMut, BytesMut};

/// Length prefix size.
pub const HEADER_BYTES: usize = 4;
/// Largest payload the baseline accepts; a longer length prefix is a protocol error.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;
/// Sequence number of the frame that ends a run (echoed like any other).
pub const END_OF_RUN: u64 = u64::MAX;

/// A length prefix above [`MAX_PAYLOAD_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("frame length {0} exceeds the {MAX_PAYLOAD_BYTES}-byte limit")]
pub struct FrameTooLong(pub usize);

/// Appends one frame carrying `payload` to `out`.
pub fn encode(out: &mut BytesMut, payload: &[u8]) {
    out.reserve(HEADER_BYTES + payload.len());
    // A payload over u32::MAX bytes cannot be framed; the baseline only sends 64 bytes.
    out.put_u32(u32::try_from(payload.len()).expect("baseline payloads are 64 bytes"));
    out.put_slice(payload);
}

/// Removes the first complete frame from `buf` and returns its payload; `Ok(None)` while the
/// frame is still incomplete.
///
/// # Errors
///
/// The length prefix exceeds [`MAX_PAYLOAD_BYTES`].
pub fn split(buf: &mut BytesMut) -> Result<Option<BytesMut>, FrameTooLong> {
    if buf.len() < HEADER_BYTES {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_PAYLOAD_BYTES {
        return Err(FrameTooLong(len));
    }
    if buf.len() < HEADER_BYTES + len {
        return Ok(None);
    }
    buf.advance(HEADER_BYTES);
    Ok(Some(buf.split_to(len)))
}

/// Fills a 64-byte baseline payload: send instant, sequence number, filler.
pub fn fill_payload(payload: &mut [u8; 64], sent_at_ns: u64, seq: u64) {
    payload[..8].copy_from_slice(&sent_at_ns.to_le_bytes());
    payload[8..16].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in payload[16..].iter_mut().enumerate() {
        *b = filler_byte(i);
    }
}

/// Reads a returned payload: `(sent_at_ns, seq)` when it is 64 bytes with the intact filler,
/// else `None`.
#[must_use]
pub fn parse_payload(payload: &[u8]) -> Option<(u64, u64)> {
    if payload.len() != 64
        || !payload[16..]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == filler_byte(i))
    {
        return None;
    }
    let sent_at_ns = u64::from_le_bytes(payload[..8].try_into().ok()?);
    let seq = u64::from_le_bytes(payload[8..16].try_into().ok()?);
    Some((sent_at_ns, seq))
}

fn filler_byte(i: usize) -> u8 {
    b'a' + (i % 26) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_across_partial_reads() {
        let mut wire = BytesMut::new();
        encode(&mut wire, b"hello");
        encode(&mut wire, b"");
        encode(&mut wire, b"xyz");
        assert_eq!(&wire[..9], &[0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o']);

        // Feed the bytes one at a time: frames appear exactly when complete.
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for &b in wire.iter() {
            buf.put_u8(b);
            while let Some(frame) = split(&mut buf).expect("valid lengths") {
                got.push(frame.to_vec());
            }
        }
        assert_eq!(got, vec![b"hello".to_vec(), Vec::new(), b"xyz".to_vec()]);
        assert!(buf.is_empty());
    }

    #[test]
    fn oversized_length_is_an_error_not_a_panic() {
        let mut buf = BytesMut::from(&[0x00, 0x01, 0x00, 0x01][..]);
        assert_eq!(split(&mut buf), Err(FrameTooLong(65_537)));
    }

    #[test]
    fn payload_carries_instant_and_sequence_and_checks_the_filler() {
        let mut p = [0u8; 64];
        fill_payload(&mut p, 123_456_789, 42);
        assert_eq!(parse_payload(&p), Some((123_456_789, 42)));
        assert_eq!(p[16], b'a');
        assert_eq!(p[63], b'a' + (47 % 26) as u8);
        p[40] ^= 1;
        assert_eq!(parse_payload(&p), None);
        assert_eq!(parse_payload(&p[..63]), None);
    }
}
