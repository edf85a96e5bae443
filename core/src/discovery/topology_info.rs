//! [`TopologyInfo`]: the small, fast-changing record of who a node's upstream proxy is.
//!
//! Mirrors libatapp's `atapp_topology_info`. It is published and watched separately from
//! [`DiscoveryInfo`](super::DiscoveryInfo) so that a proxy change never touches a hash ring; the
//! topology registry (`core::topology`) consumes it.

use alloc::{string::String, vec::Vec};

use serde::{Deserialize, Serialize};

use super::json::{self, DecodeError, i32_field, is_default, message, node_id_field, or_default};
use super::{Labels, Sparse, StaticDefault};
use crate::ids::NodeId;

/// Labels a node publishes for topology policies (libatapp `atbus_topology_data`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct TopologyData {
    /// Labels matched by direct-connection policies (`match_label`).
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub label: Labels,
}

impl StaticDefault for TopologyData {
    const EMPTY: &'static TopologyData = &TopologyData {
        label: Labels::new(),
    };
}

/// A node's place in the proxy tree (libatapp `atapp_topology_info`), plus the registry
/// revision it came with.
///
/// A node keeps one per known node, so its usually-empty parts, `version` and `data` (the
/// policy labels), are [`Sparse`]: one pointer while empty, a box otherwise. They read as the
/// plain value (`info.data.label`); a record is built with `.into()` on them
/// (`data: TopologyData { label }.into()`) or leaves them to `..TopologyInfo::default()`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TopologyInfo {
    /// Bus id; never 0 in a decoded record.
    #[serde(deserialize_with = "node_id_field")]
    pub id: NodeId,
    /// Node name.
    #[serde(deserialize_with = "or_default")]
    pub name: String,
    /// Host the node runs on (same-host policies).
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub hostname: String,
    /// Process id (same-process policies).
    #[serde(deserialize_with = "i32_field", skip_serializing_if = "is_default")]
    pub pid: i32,
    /// Instance identity.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub identity: String,
    /// Application version string (libatapp's; a switchboard node leaves it empty).
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub version: Sparse<String>,
    /// The upstream proxy; [`NodeId::NONE`] for a root.
    #[serde(
        alias = "upstreamId",
        deserialize_with = "node_id_field",
        skip_serializing_if = "is_default"
    )]
    pub upstream_id: NodeId,
    /// Policy labels.
    #[serde(deserialize_with = "message", skip_serializing_if = "is_default")]
    pub data: Sparse<TopologyData>,
    /// Registry revision this record came with; 0 when it did not come from a registry. Not
    /// part of the JSON.
    #[serde(skip)]
    pub revision: u64,
}

impl TopologyInfo {
    /// Decodes a record in libatapp's JSON form (same conventions as
    /// [`DiscoveryInfo::from_json`](super::DiscoveryInfo::from_json)); `revision` is left 0.
    /// A record with id 0 is [`DecodeError::NoIdentity`]: topology relations are by id.
    pub fn from_json(bytes: &[u8]) -> Result<TopologyInfo, DecodeError> {
        let info: TopologyInfo = json::decode(bytes)?;
        if info.id.is_valid() {
            Ok(info)
        } else {
            Err(DecodeError::NoIdentity)
        }
    }

    /// [`from_json`](TopologyInfo::from_json), stamping the registry `revision`.
    pub fn from_json_at(bytes: &[u8], revision: u64) -> Result<TopologyInfo, DecodeError> {
        let mut info = TopologyInfo::from_json(bytes)?;
        info.revision = revision;
        Ok(info)
    }

    /// Whether `other` holds the same record, its `revision` aside (no copy is made).
    #[must_use]
    pub fn same_content(&self, other: &TopologyInfo) -> bool {
        // Destructured so a new field cannot be forgotten here.
        let TopologyInfo {
            id,
            name,
            hostname,
            pid,
            identity,
            version,
            upstream_id,
            data,
            revision: _,
        } = self;
        *id == other.id
            && *upstream_id == other.upstream_id
            && *pid == other.pid
            && *name == other.name
            && *hostname == other.hostname
            && *identity == other.identity
            && *version == other.version
            && *data == other.data
    }

    /// Encodes the record as compact JSON with libatapp's field names, 64-bit integers
    /// unquoted, default fields omitted (`id` and `name` always written).
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        json::encode(self)
    }
}
