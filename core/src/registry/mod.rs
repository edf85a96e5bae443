//! Registries: where nodes learn who is in the cluster.
//!
//! Both backends end in the same [`RegistryEvent`]s, so the connection manager
//! cannot tell them apart:
//!
//! - the **embedded registry** (the default, one machine): a sans-IO [`server`] machine with
//!   Nexus semantics (concern table, access timeout, disconnect protection, epochs) and the
//!   [`client`] machine a node runs against it, both speaking the `core::wire` registry
//!   frames;
//! - **etcd** (a cluster): the pure parts of the etcd backend in [`etcd`] — key layout and
//!   parsing, libatapp JSON mapping, revision bookkeeping of the watchers and snapshot
//!   diffing after a compaction. The adapter performs the RPCs.

pub mod client;
pub mod etcd;
mod event;
pub mod limits;
pub mod server;

pub use event::RegistryEvent;
#[cfg(test)]
pub(crate) mod fixtures;
