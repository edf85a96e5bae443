//! Discovery: what each node publishes so others can reach it, and the set of known nodes.
//!
//! A node publishes a [`DiscoveryInfo`] (addresses, metadata, ...) and, separately, a
//! [`TopologyInfo`] (its upstream proxy). Both use libatapp's JSON form, so a registry shared
//! with C++ libatapp nodes reads both ways; decoding never panics and reports a typed
//! [`DecodeError`]. Registry events for discovery records feed a [`DiscoverySet`], which gates
//! them by revision and reports each effect as an [`Applied`] so the hash rings built on top
//! of it can be maintained incrementally. [`Filter`]s select nodes by their [`Metadata`].
//!
//! A node keeps both records of every node it knows, so the parts of a record that are
//! usually empty are held [`Sparse`]ly: one pointer while empty, a box when present. They
//! read through `Deref` as the plain value (`info.metadata.labels`); building a record takes
//! `.into()` on them (see [`DiscoveryInfo`] and [`TopologyInfo`]).

pub mod address;
mod departed;
mod identity;
mod info;
mod json;
pub mod labels;
mod metadata;
mod set;
mod sparse;
mod topology_info;

#[cfg(test)]
mod tests;

pub(crate) use departed::Departed;
pub use identity::{IDENTITY_PROOF_LEN, IdentityProof, PUBLISHED_PREFIX, published_identity};
pub use info::{Area, CLIENT_ROLE, DiscoveryInfo, Gateway, LEAVING_LABEL, ROLE_LABEL, Runtime};
pub use json::DecodeError;
pub use labels::Labels;
pub use metadata::{Filter, Metadata};
pub use set::{Applied, DEFAULT_TOMBSTONE_LIMIT, DiscoverySet};
pub use sparse::{Sparse, StaticDefault};
pub use topology_info::{TopologyData, TopologyInfo};
