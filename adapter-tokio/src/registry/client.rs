//! The embedded registry client backend: a task that drives the core's `RegistryClient` over
//! one TCP connection to the registry and speaks the [`super::feed`] contract.

use std::net::SocketAddr;

use switchboard_core::registry::client::ClientConfig;

use super::feed::{Feed, Registration};

/// Starts the client task for `registration` against the registry at `addr`; `tune` may
/// change the client's defaults (backoff, grace, heartbeat) before it starts.
#[must_use]
pub fn spawn_client(
    addr: SocketAddr,
    registration: Registration,
    tune: impl FnOnce(&mut ClientConfig),
) -> Feed {
    let _ = (addr, registration, tune);
    unimplemented!("driver helper")
}
