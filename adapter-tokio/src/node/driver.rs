//! The driver task: one loop over the core `Node`.

use std::net::SocketAddr;

use switchboard_core::config::Config;

use super::{Inbox, NodeHandle, RegistrySpec, StartError};

/// Binds, builds the `Node`, starts the registry backend and spawns the loop.
pub(super) async fn start(
    config: Config,
    listen: SocketAddr,
    registry: RegistrySpec,
) -> Result<(NodeHandle, Inbox), StartError> {
    let _ = (config, listen, registry);
    unimplemented!("driver helper")
}
