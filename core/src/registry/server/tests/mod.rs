//! Unit tests of the registry server: one rule per scenario with exact instants and frames,
//! then bad input from clients.
//!
//! The test files name the module's items as `super::…`; the glob below hands them through.

use alloc::vec::Vec;

use super::*;
use crate::wire::Put;
pub(super) use crate::wire::Snapshot;
use crate::{registry::fixtures::disc, time::Duration};

mod auth;
mod bad_input;
mod cert_identity;
mod names;
mod perimeter;
mod rules;
mod watch;

pub(super) const SEED: u64 = 11;

pub(super) fn server() -> RegistryServer {
    RegistryServer::new(ServerConfig::default(), SEED)
}

/// A server whose connections never time out for silence (scenarios longer than 15 s).
pub(super) fn quiet_server() -> RegistryServer {
    let config = ServerConfig {
        heartbeat_timeout: None,
        ..ServerConfig::default()
    };
    RegistryServer::new(config, SEED)
}

pub(super) fn bytes(frame: Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    wire::encode(&frame, &mut out).expect("test: encodable");
    out
}

pub(super) fn register_bytes(id: u64, type_name: &str, incarnation: u64) -> Vec<u8> {
    bytes(
        Register {
            watch: false,
            incarnation,
            discovery: disc(id, type_name),
            topology: None,
            proof: None,
        }
        .into(),
    )
}

/// A protected entry's age of loss when the registry publishes the loss as it happens.
pub(super) const LOST_AT_ONCE: Option<Duration> = Some(Duration::ZERO);

/// The listed form of node `id` at `revision`.
pub(super) fn entry(
    id: u64,
    type_name: &str,
    incarnation: u64,
    revision: u64,
    lost_for: Option<Duration>,
) -> RegistryEntry {
    let mut discovery = disc(id, type_name);
    discovery.revision = revision;
    RegistryEntry {
        incarnation,
        discovery,
        topology: None,
        lost_for,
    }
}

pub(super) fn drain(s: &mut RegistryServer) -> Vec<ServerOutput> {
    core::iter::from_fn(|| s.poll_output()).collect()
}

pub(super) fn tx(conn: ConnId, frame: Frame<'_>) -> ServerOutput {
    ServerOutput::Transmit {
        conn,
        bytes: bytes(frame),
    }
}

pub(super) fn snapshot(
    s: &RegistryServer,
    revision: u64,
    entries: Vec<RegistryEntry>,
) -> Frame<'static> {
    Snapshot {
        epoch: s.epoch(),
        revision,
        entries,
        more: false,
    }
    .into()
}

pub(super) fn put(s: &RegistryServer, revision: u64, entry: RegistryEntry) -> Frame<'static> {
    Put {
        epoch: s.epoch(),
        revision,
        entry,
    }
    .into()
}

/// Accepts and registers node `id` at `now`, returning its connection; outputs drained.
pub(super) fn join(s: &mut RegistryServer, now: Instant, id: u64, type_name: &str) -> ConnId {
    let conn = s.handle_accepted(now);
    s.handle_received(now, conn, &register_bytes(id, type_name, 100 + id));
    drain(s);
    conn
}

pub(super) fn registered(conn: ConnId, id: u64, restored: bool) -> ServerOutput {
    ServerOutput::Event(ServerEvent::Registered {
        conn,
        key: EntryKey::Id(NodeId(id)),
        incarnation: 100 + id,
        restored,
    })
}
