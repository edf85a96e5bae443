//! etcd key-values and watch events → [`RegistryEvent`]s.
//!
//! A put of a `by_id` or `by_name` key decodes the libatapp `atapp_discovery` JSON into a
//! [`RegistryEvent::DiscoveryPut`] stamped with the key's `mod_revision`; both copies of one
//! registration are written in one txn, so they map to the *same* event (same revision, same
//! content) and the [`DiscoverySet`](crate::discovery::DiscoverySet) applies it once. A put of
//! a `topology` key becomes a [`RegistryEvent::TopologyPut`]. An empty value is libatapp's
//! key-only record: the identity is taken from the key. A delete maps from the key alone.
//! Anything that does not decode is a [`MapError`]; the caller counts it and goes on.

use crate::{
    discovery::{DecodeError, DiscoveryInfo, TopologyInfo},
    registry::RegistryEvent,
};

use super::{
    EventKind, KeyValue, WatchEvent,
    keys::{KeyError, KeyKind, KeyLayout},
};

/// Why a key-value could not be mapped to a registry event. Nothing is applied for that key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// The key does not parse.
    #[error("bad registry key: {0}")]
    Key(#[from] KeyError),
    /// The value is not a valid record of the key's family.
    #[error("bad {kind:?} record: {error}")]
    Value {
        /// The key's family.
        kind: KeyKind,
        /// The decode failure.
        error: DecodeError,
    },
    /// The key belongs to another family than the watcher it arrived on.
    #[error("key of family {found:?} on the {expected:?} watcher")]
    WrongFamily {
        /// The watcher's family.
        expected: KeyKind,
        /// The key's family.
        found: KeyKind,
    },
}

/// Maps a key-value that exists (a list entry or a put event) to a put event with
/// `revision = kv.mod_revision`.
///
/// # Errors
/// [`MapError`] when the key does not parse or the value does not decode.
pub fn map_put(layout: &KeyLayout, kv: &KeyValue) -> Result<RegistryEvent, MapError> {
    let parsed = layout.parse(&kv.key)?;
    let revision = kv.revision();
    if parsed.kind.is_discovery() {
        let info = if kv.value.is_empty() {
            DiscoveryInfo {
                id: parsed.id,
                name: parsed.name,
                revision,
                ..DiscoveryInfo::default()
            }
        } else {
            DiscoveryInfo::from_json_at(&kv.value, revision).map_err(|error| MapError::Value {
                kind: parsed.kind,
                error,
            })?
        };
        Ok(RegistryEvent::DiscoveryPut(info.into()))
    } else {
        let info = if kv.value.is_empty() {
            TopologyInfo {
                id: parsed.id,
                name: parsed.name,
                revision,
                ..TopologyInfo::default()
            }
        } else {
            TopologyInfo::from_json_at(&kv.value, revision).map_err(|error| MapError::Value {
                kind: parsed.kind,
                error,
            })?
        };
        Ok(RegistryEvent::TopologyPut(info.into()))
    }
}

/// Maps the deletion of `key` at `revision` to a delete event (the identity comes from the
/// key).
///
/// # Errors
/// [`MapError::Key`] when the key does not parse.
pub fn map_delete(
    layout: &KeyLayout,
    key: &[u8],
    revision: u64,
) -> Result<RegistryEvent, MapError> {
    let parsed = layout.parse(key)?;
    Ok(if parsed.kind.is_discovery() {
        RegistryEvent::DiscoveryDelete {
            id: parsed.id,
            name: parsed.name,
            revision,
        }
    } else {
        RegistryEvent::TopologyDelete {
            id: parsed.id,
            revision,
        }
    })
}

/// Maps one watch event. A delete's revision is its kv's `mod_revision` (the revision of the
/// delete); `header_revision` is the fallback when that is 0.
///
/// # Errors
/// [`MapError`] as for [`map_put`] / [`map_delete`].
pub fn map_event(
    layout: &KeyLayout,
    event: &WatchEvent,
    header_revision: i64,
) -> Result<RegistryEvent, MapError> {
    match event.kind {
        EventKind::Put => map_put(layout, &event.kv),
        EventKind::Delete => {
            let revision = match event.kv.revision() {
                0 => u64::try_from(header_revision).unwrap_or(0),
                r => r,
            };
            map_delete(layout, &event.kv.key, revision)
        }
    }
}
