//! [`CallMetadata`]: the owned, bounded metadata map a call carries to its handler and a
//! reply carries back (wire layout and bounds: [`crate::wire::metadata`]).

use alloc::vec::Vec;
use core::fmt;

use bytes::Bytes;

use crate::wire::{
    self, MAX_METADATA_ENTRIES, MAX_METADATA_KEY_LEN, MAX_METADATA_LEN, MAX_METADATA_VALUE_LEN,
    MetadataIter, MetadataRef,
};

/// An ordered map of metadata entries (UTF-8 key, byte value) travelling with a request or
/// a reply, within the wire's bounds (at most [`MAX_METADATA_ENTRIES`] entries, keys 1 ..=
/// [`MAX_METADATA_KEY_LEN`] bytes, values up to [`MAX_METADATA_VALUE_LEN`] bytes, all of it
/// encoded in at most [`MAX_METADATA_LEN`] bytes). The core never adds an entry: what the
/// caller puts in is what the handler reads ([`IncomingRequest::metadata`](super::IncomingRequest::metadata)),
/// and what the handler answers with is what the caller's
/// [`RpcOutput::CallDone`](super::RpcOutput::CallDone) carries. Held as its encoded block,
/// so passing it on copies nothing.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CallMetadata {
    block: Bytes,
}

/// Why [`CallMetadata::insert`] refused an entry. The map is unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// The map already holds [`MAX_METADATA_ENTRIES`] entries.
    #[error("metadata holds at most {max} entries")]
    TooManyEntries {
        /// The bound.
        max: usize,
    },
    /// The key is empty or longer than [`MAX_METADATA_KEY_LEN`] bytes.
    #[error("metadata key of {len} bytes is outside 1..={max}")]
    KeyLength {
        /// The key's length.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The value is longer than [`MAX_METADATA_VALUE_LEN`] bytes.
    #[error("metadata value of {len} bytes exceeds {max}")]
    ValueTooLong {
        /// The value's length.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The map would encode in more than [`MAX_METADATA_LEN`] bytes.
    #[error("metadata of {len} encoded bytes exceeds {max}")]
    TooLarge {
        /// The encoded size it would have.
        len: usize,
        /// The bound.
        max: usize,
    },
}

impl CallMetadata {
    /// No entries.
    #[must_use]
    pub const fn new() -> CallMetadata {
        CallMetadata {
            block: Bytes::new(),
        }
    }

    /// The metadata decoded from `message` (`metadata` must borrow from it): shares its
    /// bytes.
    #[must_use]
    pub(crate) fn from_wire(message: &Bytes, metadata: MetadataRef<'_>) -> CallMetadata {
        if metadata.is_empty() {
            return CallMetadata::new();
        }
        CallMetadata {
            block: message.slice_ref(metadata.as_bytes()),
        }
    }

    /// Sets `key` to `value`: in place when the key is present (its first entry), else as a
    /// new last entry.
    ///
    /// # Errors
    ///
    /// [`MetadataError`] when a bound would be broken; the map is unchanged.
    pub fn insert(&mut self, key: &str, value: &[u8]) -> Result<(), MetadataError> {
        if key.is_empty() || key.len() > MAX_METADATA_KEY_LEN {
            return Err(MetadataError::KeyLength {
                len: key.len(),
                max: MAX_METADATA_KEY_LEN,
            });
        }
        if value.len() > MAX_METADATA_VALUE_LEN {
            return Err(MetadataError::ValueTooLong {
                len: value.len(),
                max: MAX_METADATA_VALUE_LEN,
            });
        }
        let present = self.get(key).is_some();
        if !present && self.len() >= MAX_METADATA_ENTRIES {
            return Err(MetadataError::TooManyEntries {
                max: MAX_METADATA_ENTRIES,
            });
        }
        let mut block = Vec::with_capacity(self.block.len() + key.len() + value.len() + 4);
        block.push(0);
        let mut count = 0u8;
        let mut replaced = false;
        for (k, v) in self.iter() {
            let v = if k == key && !replaced {
                replaced = true;
                value
            } else {
                v
            };
            wire::metadata::put_entry(&mut block, k, v);
            count += 1;
        }
        if !replaced {
            wire::metadata::put_entry(&mut block, key, value);
            count += 1;
        }
        if block.len() > MAX_METADATA_LEN {
            return Err(MetadataError::TooLarge {
                len: block.len(),
                max: MAX_METADATA_LEN,
            });
        }
        block[0] = count;
        self.block = Bytes::from(block);
        Ok(())
    }

    /// `self` with `key` set to `value` ([`CallMetadata::insert`]).
    ///
    /// # Errors
    ///
    /// As [`CallMetadata::insert`].
    pub fn with(mut self, key: &str, value: &[u8]) -> Result<CallMetadata, MetadataError> {
        self.insert(key, value)?;
        Ok(self)
    }

    /// The value of `key` (its first entry).
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.view().get(key)
    }

    /// The value of `key` when it is UTF-8.
    #[must_use]
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(|v| core::str::from_utf8(v).ok())
    }

    /// The W3C `traceparent` entry ([`wire::TRACEPARENT`]), when present and UTF-8.
    #[must_use]
    pub fn traceparent(&self) -> Option<&str> {
        self.get_str(wire::TRACEPARENT)
    }

    /// The entries, in order.
    #[must_use]
    pub fn iter(&self) -> MetadataIter<'_> {
        self.view().iter()
    }

    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.view().len()
    }

    /// Whether there are no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.block.is_empty()
    }

    /// The borrowed view the wire encodes.
    #[must_use]
    pub fn view(&self) -> MetadataRef<'_> {
        wire::metadata::trusted(&self.block)
    }

    /// Its encoded length on the wire (0 when empty).
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.block.len()
    }
}

impl fmt::Debug for CallMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.view(), f)
    }
}
