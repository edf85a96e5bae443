//! tokio driver for [`switchboard_core`].
//!
//! This crate binds the sans-IO core to tokio: one task drives a core `Node` ([`node`]) and
//! reads every link's socket itself (each read handed to the core as it is, without a copy),
//! per-link writer tasks take only what would block, and the embedded registry server and
//! client ([`registry`]) feed the core's registry input through one contract
//! ([`registry::feed`]) that the etcd backend (feature `etcd`) speaks too. The admin HTTP
//! endpoint (`admin`, feature `admin`) serves a node's metrics and status. The `switchboard`
//! binary is its own package (`adapter-tokio/cli/`).
//!
//! [`clock::Clock`] is the one place wall-clock time enters the core. No routing decision
//! lives here: the adapter waits, calls one `handle_*`, drains `poll_output` into I/O and
//! re-arms its timer.

#[cfg(feature = "admin")]
pub mod admin;
pub mod clock;
#[cfg(feature = "etcd")]
pub mod etcd;
mod net;
pub mod node;
pub mod observe;
pub mod registry;
pub mod target;

pub use node::{
    Inbox, NodeBuilder, NodeHandle, PendingOutcome, PostedOutcome, Received, RegistrySpec,
    SendFailure,
};
pub use observe::{Known, Metrics, Status};
pub use target::TargetSpec;
