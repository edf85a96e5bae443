//! The payload `load` and `demo` send: the first 8 bytes are the sender's sequence number
//! (u64, little endian), the rest a filler derived from it, so a receiver can tell a
//! duplicate (a sequence number seen twice) and a corrupted payload (a filler that does not
//! match) from the bytes alone.

use bytes::Bytes;

/// Bytes taken by the sequence number; the smallest payload.
pub(crate) const SEQ_BYTES: usize = 8;

/// The payload of message `seq`, `size` bytes long (at least [`SEQ_BYTES`]; a smaller size
/// still carries the whole sequence number).
pub(crate) fn encode(seq: u64, size: usize) -> Bytes {
    let mut bytes = Vec::with_capacity(size.max(SEQ_BYTES));
    bytes.extend_from_slice(&seq.to_le_bytes());
    bytes.extend((SEQ_BYTES..size).map(|index| filler(seq, index)));
    Bytes::from(bytes)
}

/// The sequence number at the head of `payload`; `None` if it is shorter than 8 bytes.
pub(crate) fn decode_seq(payload: &[u8]) -> Option<u64> {
    let head: [u8; SEQ_BYTES] = payload.get(..SEQ_BYTES)?.try_into().ok()?;
    Some(u64::from_le_bytes(head))
}

/// Whether `payload` is exactly what [`encode`] makes for its sequence number and length.
pub(crate) fn is_intact(payload: &[u8]) -> bool {
    decode_seq(payload).is_some_and(|seq| {
        payload
            .iter()
            .enumerate()
            .skip(SEQ_BYTES)
            .all(|(index, &byte)| byte == filler(seq, index))
    })
}

/// Filler byte at `index` of message `seq`.
fn filler(seq: u64, index: usize) -> u8 {
    // Truncation is the point: a byte pattern that shifts with the sequence number.
    (seq.wrapping_mul(31).wrapping_add(index as u64) & 0xff) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_number_leads_in_little_endian_followed_by_the_filler() {
        let payload = encode(0x0102_0304_0506_0708, 12);
        // filler(seq, i) = (seq * 31 + i) & 0xff; seq * 31 ends in 0x08 * 31 = 0xf8.
        assert_eq!(
            payload.as_ref(),
            &[
                0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x00, 0x01, 0x02, 0x03
            ]
        );
        assert_eq!(decode_seq(&payload), Some(0x0102_0304_0506_0708));
        assert!(is_intact(&payload));
    }

    #[test]
    fn an_eight_byte_payload_is_the_sequence_number_alone() {
        assert_eq!(encode(5, 8).as_ref(), &[5, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            encode(5, 3).len(),
            SEQ_BYTES,
            "never shorter than the number"
        );
    }

    #[test]
    fn short_payloads_have_no_sequence_number() {
        assert_eq!(decode_seq(&[1, 2, 3]), None);
        assert!(!is_intact(&[1, 2, 3]));
    }

    #[test]
    fn a_changed_filler_byte_is_detected() {
        let mut payload = encode(77, 64).to_vec();
        assert!(is_intact(&payload));
        payload[40] ^= 0x10;
        assert!(!is_intact(&payload));
        assert_eq!(decode_seq(&payload), Some(77), "the head is still readable");
    }
}
