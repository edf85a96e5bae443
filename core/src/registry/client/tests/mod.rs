//! Unit tests of the registry client: its rules (register on connect, backoff, refusal,
//! updates, bad input) and registry restarts while a cluster runs.
//!
//! Whole-cluster tests run one server and several clients on the simulator's
//! [`RegistryNet`] with zero latency and exact instants; the helpers below start clients
//! and read their views. The test files name the module's items as `super::…`; the glob
//! below hands them through.

use alloc::vec::Vec;

use super::*;
use crate::{
    registry::server::ServerConfig,
    sim::{NetSettings, RegistryNet},
    time::Instant,
};

mod auth;
mod perimeter;
mod restart;
mod rules;

/// A net at time zero with a default server running, or none (`server` false).
fn net(server: bool) -> RegistryNet {
    let mut net = RegistryNet::new(
        NetSettings::default(),
        ServerConfig::default(),
        Instant::ZERO,
    );
    if server {
        net.start_server();
    }
    net
}

/// Starts a client from `config` now and settles; returns its member index.
fn add(net: &mut RegistryNet, config: ClientConfig) -> usize {
    let member = net.add_member();
    net.start_client(member, config);
    net.settle();
    member
}

/// The node ids client `member` currently reports.
fn view(net: &RegistryNet, member: usize) -> Vec<u64> {
    net.client(member)
        .map(|c| c.peers().map(|(_, p)| p.discovery.id.0).collect())
        .unwrap_or_default()
}
