//! Call metadata on the wire: the small ordered map of (key, value) pairs an RPC request or
//! reply may carry ([`crate::rpc::CallMetadata`] owns one), for trace context
//! ([`TRACEPARENT`], [`TRACESTATE`]) and whatever else the application passes along. The
//! core never writes an entry itself: it carries the caller's to the handler and the
//! handler's back to the caller, byte for byte.
//!
//! # Byte layout (a *metadata block*)
//!
//! count `u8` (1 ..= [`MAX_METADATA_ENTRIES`]), then `count` entries in order, each: key
//! length `u8` (1 ..= [`MAX_METADATA_KEY_LEN`]), key (UTF-8), value length `u16`
//! (0 ..= [`MAX_METADATA_VALUE_LEN`]), value (any bytes). The whole block, count and lengths
//! included, is at most [`MAX_METADATA_LEN`] bytes. A message with no metadata carries no
//! block at all (see [`RpcMessage`](super::RpcMessage)), so there is one encoding of every
//! map. Keys may repeat on the wire as the sender wrote them; [`MetadataRef::get`] answers
//! the first.

use core::fmt;

use super::{DecodeError, decode::Cursor};

/// Most entries a metadata block holds.
pub const MAX_METADATA_ENTRIES: usize = 16;

/// Longest metadata key, in bytes (keys are 1 or more bytes of UTF-8).
pub const MAX_METADATA_KEY_LEN: usize = 64;

/// Longest metadata value, in bytes.
pub const MAX_METADATA_VALUE_LEN: usize = 512;

/// Largest encoded metadata block, count and length prefixes included.
pub const MAX_METADATA_LEN: usize = 4096;

/// The W3C Trace Context key naming the caller's trace and span
/// (`00-<trace id>-<span id>-<flags>`).
pub const TRACEPARENT: &str = "traceparent";

/// The W3C Trace Context key carrying vendor-specific trace state.
pub const TRACESTATE: &str = "tracestate";

/// Encoded length of one entry with these key and value lengths.
#[must_use]
pub const fn metadata_entry_len(key_len: usize, value_len: usize) -> usize {
    1 + key_len + 2 + value_len
}

/// A validated metadata block borrowed from the bytes it was decoded from (or built in):
/// empty, or a block within every bound above.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MetadataRef<'a> {
    block: &'a [u8],
}

impl<'a> MetadataRef<'a> {
    /// No metadata.
    pub const EMPTY: MetadataRef<'static> = MetadataRef { block: &[] };

    /// Reads a block that fills `block` exactly; an empty slice is no metadata.
    ///
    /// # Errors
    ///
    /// As the RPC decoder: [`DecodeError::MetadataBounds`] for a count, key, value or total
    /// out of bounds, [`DecodeError::Truncated`], [`DecodeError::InvalidUtf8`] for a key,
    /// [`DecodeError::LengthMismatch`] for bytes after the last entry.
    pub fn parse(block: &'a [u8]) -> Result<MetadataRef<'a>, DecodeError> {
        if block.is_empty() {
            return Ok(MetadataRef::EMPTY);
        }
        let mut cursor = Cursor {
            body: block,
            pos: 0,
        };
        let metadata = read(&mut cursor)?;
        if cursor.remaining() != 0 {
            return Err(DecodeError::LengthMismatch {
                kind: super::FrameKind::Data,
                len: block.len(),
                used: cursor.pos,
            });
        }
        Ok(metadata)
    }

    /// Whether there are no entries.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.block.is_empty()
    }

    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.block.first().map_or(0, |&count| usize::from(count))
    }

    /// The encoded block (empty when there is no metadata).
    #[must_use]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.block
    }

    /// The entries, in order.
    #[must_use]
    pub fn iter(&self) -> MetadataIter<'a> {
        MetadataIter {
            rest: self.block.get(1..).unwrap_or(&[]),
        }
    }

    /// The value of the first entry named `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

impl fmt::Debug for MetadataRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (key, value) in self.iter() {
            match core::str::from_utf8(value) {
                Ok(text) => map.entry(&key, &text),
                Err(_) => map.entry(&key, &value),
            };
        }
        map.finish()
    }
}

impl<'a> IntoIterator for MetadataRef<'a> {
    type Item = (&'a str, &'a [u8]);
    type IntoIter = MetadataIter<'a>;

    fn into_iter(self) -> MetadataIter<'a> {
        self.iter()
    }
}

/// The entries of a [`MetadataRef`], in order.
#[derive(Clone, Debug)]
pub struct MetadataIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for MetadataIter<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<(&'a str, &'a [u8])> {
        // The block was validated: every length below is in range. A failure ends the walk
        // rather than panicking all the same.
        let (&key_len, rest) = self.rest.split_first()?;
        let (key, rest) = rest.split_at_checked(usize::from(key_len))?;
        let (len, rest) = rest.split_at_checked(2)?;
        let value_len = usize::from(u16::from_le_bytes([len[0], len[1]]));
        let (value, rest) = rest.split_at_checked(value_len)?;
        self.rest = rest;
        Some((core::str::from_utf8(key).ok()?, value))
    }
}

/// Appends `metadata`'s block (nothing when it is empty).
pub(super) fn put<B: bytes::BufMut + ?Sized>(metadata: MetadataRef<'_>, out: &mut B) {
    out.put_slice(metadata.block);
}

/// Appends one entry to a block being built. The caller checks the bounds.
pub(crate) fn put_entry(out: &mut alloc::vec::Vec<u8>, key: &str, value: &[u8]) {
    debug_assert!(key.len() <= MAX_METADATA_KEY_LEN && value.len() <= MAX_METADATA_VALUE_LEN);
    out.push(u8::try_from(key.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_le_bytes());
    out.extend_from_slice(value);
}

/// Reads one block at the cursor: total, never allocates, never reads past its bounds.
pub(super) fn read<'a>(cursor: &mut Cursor<'a>) -> Result<MetadataRef<'a>, DecodeError> {
    let start = cursor.pos;
    let count = usize::from(cursor.u8("metadata_count")?);
    check("metadata_count", count, 1, MAX_METADATA_ENTRIES)?;
    for _ in 0..count {
        let key_len = usize::from(cursor.u8("metadata_key")?);
        check("metadata_key", key_len, 1, MAX_METADATA_KEY_LEN)?;
        let key = cursor.take(key_len, "metadata_key")?;
        if core::str::from_utf8(key).is_err() {
            return Err(DecodeError::InvalidUtf8 {
                field: "metadata_key",
            });
        }
        let value_len = usize::from(u16::from_le_bytes(cursor.array("metadata_value")?));
        check("metadata_value", value_len, 0, MAX_METADATA_VALUE_LEN)?;
        cursor.take(value_len, "metadata_value")?;
        check("metadata", cursor.pos - start, 0, MAX_METADATA_LEN)?;
    }
    Ok(MetadataRef {
        block: &cursor.body[start..cursor.pos],
    })
}

/// `len` within `min ..= max`, else the bound error naming `field`.
pub(crate) fn check(
    field: &'static str,
    len: usize,
    min: usize,
    max: usize,
) -> Result<(), DecodeError> {
    if (min..=max).contains(&len) {
        Ok(())
    } else {
        Err(DecodeError::MetadataBounds {
            field,
            len,
            min,
            max,
        })
    }
}

/// A block built from already checked bytes (the owned map's).
pub(crate) const fn trusted(block: &[u8]) -> MetadataRef<'_> {
    MetadataRef { block }
}
