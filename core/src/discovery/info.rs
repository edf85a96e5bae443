//! [`DiscoveryInfo`]: what a node publishes so others can find and reach it.
//!
//! The struct mirrors libatapp's `atapp_discovery` message field for field, so a record written
//! by a C++ libatapp node decodes here and a record written here decodes there. The registry
//! revision the record arrived with travels alongside (it is not part of the JSON) and is what
//! [`DiscoverySet`](super::DiscoverySet) gates on. Its usually-empty parts are
//! [`Sparse`] (see [`DiscoveryInfo`]'s layout).

use alloc::{string::String, vec::Vec};

use serde::{Deserialize, Serialize};

use super::{
    Metadata, Sparse, StaticDefault,
    json::{
        self, DecodeError, i32_field, is_default, message, message_list, node_id_field, or_default,
        u64_field, u64_string,
    },
};
use crate::ids::NodeId;

/// The label naming a node's role (`role=leaf`, `role=client`, ...).
pub const ROLE_LABEL: &str = "role";

/// The [`ROLE_LABEL`] value of a light client's record ([`DiscoveryInfo::is_client`]).
pub const CLIENT_ROLE: &str = "client";

/// The label a node adds to its record while it drains before a graceful exit
/// ([`DiscoveryInfo::is_leaving`]); its value says why (`restarting`, `stopping`).
pub const LEAVING_LABEL: &str = "leaving";

/// Where a node runs: region → district → zone (libatapp `atapp_area`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Area {
    /// Region name.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub region: String,
    /// District inside the region.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub district: String,
    /// Zone id (postal zone, zip code, ...).
    #[serde(
        alias = "zoneId",
        deserialize_with = "u64_field",
        skip_serializing_if = "is_default"
    )]
    pub zone_id: u64,
}

impl StaticDefault for Area {
    const EMPTY: &'static Area = &Area {
        region: String::new(),
        district: String::new(),
        zone_id: 0,
    };
}

/// An extra address a node can be reached at, for clients matching it (libatapp
/// `atapp_gateway`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Gateway {
    /// The address (same syntax as `listen`).
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub address: String,
    /// Client hostnames this gateway serves ("In" match).
    #[serde(
        alias = "matchHosts",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub match_hosts: Vec<String>,
    /// Client metadata namespaces this gateway serves ("In" match).
    #[serde(
        alias = "matchNamespaces",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub match_namespaces: Vec<String>,
    /// Client labels that must all match.
    #[serde(
        alias = "matchLabels",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub match_labels: super::Labels,
}

/// Runtime facts of a node (libatapp `atapp_discovery_runtime`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Runtime {
    /// Ordinal of a StatefulSet pod (`name-3` → 3); -1 or 0 when not a stateful pod. First key
    /// of the round-robin order.
    #[serde(
        alias = "statefulPodIndex",
        deserialize_with = "i32_field",
        skip_serializing_if = "is_default"
    )]
    pub stateful_pod_index: i32,
}

/// What a node publishes (libatapp `atapp_discovery`), plus the registry revision it came with.
///
/// Equality (`==`) compares every field *including* `revision`; [`same_content`] ignores it.
///
/// [`same_content`]: DiscoveryInfo::same_content
///
/// # Layout
///
/// A node keeps one decoded record per known node, so the parts most records leave empty —
/// `metadata`, `area`, `gateways`, and libatapp's `hash_code` and `custom_data` — are
/// [`Sparse`]: one pointer while empty, a box otherwise. They read as the plain value through
/// `Deref` (`info.metadata.labels`, `info.area.region`, `info.gateways.iter()`), a mutable
/// access boxes the part, and a record is built with `.into()` on those fields (or
/// `..DiscoveryInfo::default()` for empty ones). Equality and the JSON are the values', so
/// nothing observable depends on whether a default part is boxed.
///
/// ```
/// use switchboard_core::{
///     discovery::{DiscoveryInfo, Gateway, Metadata, Sparse},
///     ids::NodeId,
/// };
///
/// let mut info = DiscoveryInfo {
///     id: NodeId(7),
///     name: "game-7".into(),
///     metadata: Metadata { kind: "game".into(), ..Metadata::default() }.into(),
///     hash_code: "9F1C".into(),
///     gateways: vec![Gateway { address: "atcp://10.0.0.7:21437".into(), ..Gateway::default() }]
///         .into(),
///     ..DiscoveryInfo::default()
/// };
/// assert_eq!(info.metadata.kind, "game");
/// assert_eq!(info.gateways.len(), 1);
/// assert!(info.area.region.is_empty() && !Sparse::is_allocated(&info.area)); // no box
/// info.area.zone_id = 518_000; // a mutable access boxes the area
/// assert!(Sparse::is_allocated(&info.area));
/// let back = DiscoveryInfo::from_json(&info.to_json())?;
/// assert_eq!(back, info);
/// # Ok::<(), switchboard_core::discovery::DecodeError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiscoveryInfo {
    /// Bus id; 0 for a node published by name only.
    #[serde(deserialize_with = "node_id_field")]
    pub id: NodeId,
    /// Node name (unique in a cluster); empty for a node published by id only.
    #[serde(deserialize_with = "or_default")]
    pub name: String,
    /// Host the node runs on.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub hostname: String,
    /// Process id.
    #[serde(deserialize_with = "i32_field", skip_serializing_if = "is_default")]
    pub pid: i32,
    /// Listen addresses, e.g. `atcp://127.0.0.1:21437`, `unix:///tmp/a.sock`.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub listen: Vec<String>,
    /// libatapp's hash of the name (upper-case hex murmur3); carried, not checked here.
    #[serde(
        alias = "hashCode",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub hash_code: Sparse<String>,
    /// Service type id.
    #[serde(
        alias = "typeId",
        deserialize_with = "u64_field",
        skip_serializing_if = "is_default"
    )]
    pub type_id: u64,
    /// Service type name.
    #[serde(
        alias = "typeName",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub type_name: String,
    /// Where the node runs.
    #[serde(deserialize_with = "message", skip_serializing_if = "is_default")]
    pub area: Sparse<Area>,
    /// Application version string.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub version: String,
    /// Opaque application data.
    #[serde(
        alias = "customData",
        deserialize_with = "or_default",
        skip_serializing_if = "is_default"
    )]
    pub custom_data: Sparse<String>,
    /// Instance identity: equal identities mean the same running instance.
    #[serde(deserialize_with = "or_default", skip_serializing_if = "is_default")]
    pub identity: String,
    /// Extra addresses for matching clients.
    #[serde(deserialize_with = "message_list", skip_serializing_if = "is_default")]
    pub gateways: Sparse<Vec<Gateway>>,
    /// Runtime facts (stateful pod index).
    #[serde(deserialize_with = "message", skip_serializing_if = "is_default")]
    pub runtime: Runtime,
    /// Bus protocol version the node speaks.
    #[serde(
        alias = "atbusProtocolVersion",
        deserialize_with = "u64_field",
        skip_serializing_if = "is_default"
    )]
    pub atbus_protocol_version: u64,
    /// Oldest bus protocol version the node accepts.
    #[serde(
        alias = "atbusProtocolMinVersion",
        deserialize_with = "u64_field",
        skip_serializing_if = "is_default"
    )]
    pub atbus_protocol_min_version: u64,
    /// Service metadata the filters select on.
    #[serde(deserialize_with = "message", skip_serializing_if = "is_default")]
    pub metadata: Sparse<Metadata>,
    /// The bus incarnation of the process that published the record (switchboard's
    /// addition; 0 = not stated, e.g. a libatapp node, which ignores the field): a record
    /// with a new incarnation announces a restart before any link shows it, so senders end
    /// what the old incarnation may have received and dial the new one at once. Written as a
    /// decimal string (proto3 JSON's `uint64` form).
    #[serde(
        deserialize_with = "u64_field",
        serialize_with = "u64_string",
        skip_serializing_if = "is_default"
    )]
    pub incarnation: u64,
    /// Registry revision this record came with (etcd mod_revision, or the embedded registry's
    /// sequence); 0 when it did not come from a registry. Not part of the JSON.
    #[serde(skip)]
    pub revision: u64,
}

impl DiscoveryInfo {
    /// Decodes a record in libatapp's JSON form; `revision` is left 0 (see
    /// [`from_json_at`](DiscoveryInfo::from_json_at)).
    ///
    /// Accepts quoted and unquoted 64-bit integers, `null` for defaults, proto3 camelCase
    /// aliases, and ignores unknown fields. A record with id 0 and an empty name is
    /// [`DecodeError::NoIdentity`]. Never panics.
    pub fn from_json(bytes: &[u8]) -> Result<DiscoveryInfo, DecodeError> {
        let mut info: DiscoveryInfo = json::decode(bytes)?;
        if info.has_identity() {
            info.fit_capacity();
            Ok(info)
        } else {
            Err(DecodeError::NoIdentity)
        }
    }

    /// [`from_json`](DiscoveryInfo::from_json), stamping the registry `revision` it arrived
    /// with.
    pub fn from_json_at(bytes: &[u8], revision: u64) -> Result<DiscoveryInfo, DecodeError> {
        let mut info = DiscoveryInfo::from_json(bytes)?;
        info.revision = revision;
        Ok(info)
    }

    /// Drops the spare capacity decoding leaves in the record's lists: a vector grown element
    /// by element holds room for four, 72 spare bytes behind one listen address, and every
    /// node keeps every other node's record for as long as it lives.
    fn fit_capacity(&mut self) {
        self.listen.shrink_to_fit();
        if Sparse::is_allocated(&self.gateways) {
            self.gateways.shrink_to_fit();
            for gateway in self.gateways.iter_mut() {
                gateway.match_hosts.shrink_to_fit();
                gateway.match_namespaces.shrink_to_fit();
            }
        }
    }

    /// Encodes the record as compact JSON with libatapp's field names, 64-bit integers
    /// unquoted, fields holding their default omitted (`id` and `name` always written). The
    /// revision is not encoded.
    #[must_use]
    pub fn to_json(&self) -> Vec<u8> {
        json::encode(self)
    }

    /// Whether the record can be indexed: a valid id or a non-empty name.
    #[must_use]
    pub fn has_identity(&self) -> bool {
        self.id.is_valid() || !self.name.is_empty()
    }

    /// Whether the record is a light client's (`send`, `call`, `broadcast`, `load`): its
    /// label [`ROLE_LABEL`]`=`[`CLIENT_ROLE`]. A client is not a member: its leaving is no
    /// peer death and nothing dials it again (ARCHITECTURE §9.3).
    #[must_use]
    pub fn is_client(&self) -> bool {
        self.metadata.labels.get(ROLE_LABEL).map(String::as_str) == Some(CLIENT_ROLE)
    }

    /// Whether the node is draining before a graceful exit (label [`LEAVING_LABEL`]):
    /// senders hold new messages for it, and for nodes routed through it, until a record
    /// without the label — its next life — arrives; what is in flight is still acknowledged.
    #[must_use]
    pub fn is_leaving(&self) -> bool {
        self.metadata.labels.contains_key(LEAVING_LABEL)
    }

    /// The StatefulSet pod ordinal (`runtime.stateful_pod_index`).
    #[must_use]
    pub fn stateful_pod_index(&self) -> i32 {
        self.runtime.stateful_pod_index
    }

    /// The round-robin sort key: pod index, then id, then name (libatapp's order without its
    /// name-hash step, which only speeds up its comparisons).
    #[must_use]
    pub fn round_robin_key(&self) -> (i32, NodeId, &str) {
        (self.runtime.stateful_pod_index, self.id, &self.name)
    }

    /// Whether every published field equals `other`'s; the revision is ignored.
    #[must_use]
    pub fn same_content(&self, other: &DiscoveryInfo) -> bool {
        // Destructured so a new field cannot be forgotten here.
        let DiscoveryInfo {
            id,
            name,
            hostname,
            pid,
            listen,
            hash_code,
            type_id,
            type_name,
            area,
            version,
            custom_data,
            identity,
            gateways,
            runtime,
            atbus_protocol_version,
            atbus_protocol_min_version,
            metadata,
            incarnation,
            revision: _,
        } = self;
        *id == other.id
            && *name == other.name
            && *hostname == other.hostname
            && *pid == other.pid
            && *listen == other.listen
            && *hash_code == other.hash_code
            && *type_id == other.type_id
            && *type_name == other.type_name
            && *area == other.area
            && *version == other.version
            && *custom_data == other.custom_data
            && *identity == other.identity
            && *gateways == other.gateways
            && *runtime == other.runtime
            && *atbus_protocol_version == other.atbus_protocol_version
            && *atbus_protocol_min_version == other.atbus_protocol_min_version
            && *metadata == other.metadata
            && *incarnation == other.incarnation
    }
}
