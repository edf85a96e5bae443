//! Deterministic multi-node simulator (feature `sim`): several [`Node`]s, the links between
//! them and a registry, all on one virtual clock.
//!
//! The simulator is the driver every scenario test uses. It plays the part an adapter plays in
//! production — it calls `handle_*` with the current time, drains `poll_output` after every call
//! (the drain contract), re-arms each node's timer from `poll_timeout` — but instead of sockets
//! it moves bytes between nodes itself, after a configurable, deterministic latency. The
//! registry is one of two:
//!
//! - the **real registry machines** ([`Sim::start_registry`]): a
//!   [`RegistryServer`](crate::registry::server::RegistryServer) and one
//!   [`RegistryClient`](crate::registry::client::RegistryClient) per node on emulated links
//!   ([`RegistryNet`]); each node registers its own records and is handed what its client
//!   derives, so disconnect protection, registry restarts (new epochs, the clients' grace) and
//!   re-registration happen inside the run. The seeded chaos runs ([`scenario`]) use these;
//! - a **scripted registry** ([`SimRegistry`]) that assigns monotonic revisions and fans each
//!   change out to the nodes a test chooses, in the order and with the delays it chooses — for
//!   the scenario tests that need exact control of event order.
//!
//! Nothing is random: the same script gives the same [`Sim::trace`] and the same per-node
//! logs, line for line.
//!
//! # Model
//!
//! - **Address book.** Every node is reachable at one address, `sim://0x101` for node `0x101`
//!   by default ([`sim_addr`]); a `Connect { addr, .. }` output dials the node owning `addr`.
//!   Publish that address in the node's [`DiscoveryInfo`] (see [`discovery_info`]).
//! - **Links** are reliable, ordered byte streams. A dial resolves after the connect latency:
//!   the acceptor's `handle_accepted` then the dialer's `handle_connected`, or the dialer's
//!   `handle_connect_failed` (unknown address, dead target, pair down, scripted failure). Bytes
//!   from `Transmit` arrive after the link latency, in order, in one `handle_received` call per
//!   `Transmit`. `Close` from one side reaches the other side's `handle_closed` after the bytes
//!   already in flight; the closing side gets no callback. [`Sim::link_down`], [`Sim::cut`]
//!   and [`Sim::kill`] drop links abruptly: in-flight bytes are lost and each surviving side
//!   gets `handle_closed` during the call, like a registry change with no delay.
//!   [`Sim::take_in_flight`] takes bytes off a link before they arrive, the link staying up,
//!   for a test that answers a frame by hand.
//! - **Time** moves only when a test moves it ([`Sim::advance`], [`Sim::advance_to`],
//!   [`Sim::advance_to_next_deadline`]); [`Sim::step`] and [`Sim::run_until_idle`] process what
//!   is due at the current instant, [`Sim::deliver_until_idle`] only its deliveries (no
//!   timers). Among things due at the same instant, deliveries (link events, bytes, registry
//!   events) come first, in the order they were scheduled, then the registry machines (their
//!   deliveries, then their timers), then node timers, in node order — like an event loop that
//!   handles I/O before timers.
//! - **Logs.** Per node: messages received ([`Received`]), sends ([`Sent`]), outcomes
//!   ([`OutcomeRecord`]), events and dials ([`Dial`]), each with its virtual time; globally a
//!   human-readable [`Sim::trace`] of every call and output. Breaches of the node contract the
//!   simulator can see (a second outcome for one message, a transmit on a link the node does
//!   not own, …) are [`Sim::violations`]; in strict mode (the default) the first one panics
//!   with the trace tail.
//!
//! The simulator drives any [`SimNode`]; [`Node`] is the one that matters, and the default type
//! parameter of [`Sim`]. The simulator's own tests drive a scripted stand-in.

mod agenda;
pub mod check;
mod cluster;
mod drive;
mod faults;
pub mod ledger;
mod link;
mod log;
mod path_faults;
mod registry;
mod registry_machines;
mod registry_net;
pub mod scale;
pub mod scenario;

#[cfg(test)]
mod puppet;
#[cfg(test)]
mod tests;

use alloc::{format, string::String, vec};
use core::fmt;

use bytes::Bytes;

pub use self::{
    cluster::{Sim, SimSettings},
    ledger::{Ledger, LedgerTotals, TAG_LEN, TAG_MAGIC, payload_tag},
    log::{Dial, NodeLog, OutcomeRecord, Received, RpcRecord, Sent},
    registry::{Fanout, SimRegistry},
    registry_machines::RegistryMachines,
    registry_net::{NetOutput, NetSettings, RegistryNet, ServerTraffic},
};
// The simulator's one import of the registry event type; its submodules name it `super::`.
use crate::{
    config::{Config, ConfigError},
    discovery::{DiscoveryInfo, TopologyInfo},
    ids::{LinkId, MsgId, NodeId},
    node::{Node, Output, SendError},
    registry::RegistryEvent,
    select::Select,
    time::Instant,
};

/// What the simulator needs from a node: the [`Node`] facade's inputs and outputs.
///
/// Implemented for [`Node`]; the simulator's own tests implement it for a scripted stand-in so
/// the link and clock machinery is tested independently of the connection manager. Every method
/// has the meaning of the [`Node`] method of the same name.
pub trait SimNode: Sized {
    /// What a node is built from; kept by the simulator so [`Sim::restart`] can rebuild it.
    type Config: Clone;
    /// Why building failed.
    type Error: fmt::Debug;

    /// Builds a fresh node (a new incarnation) at `now`.
    ///
    /// # Errors
    ///
    /// Whatever the node rejects in its configuration.
    fn start(config: &Self::Config, now: Instant) -> Result<Self, Self::Error>;
    /// The node's id; constant for the node's lifetime.
    fn id(&self) -> NodeId;
    /// A registry event reached the node.
    fn handle_registry(&mut self, now: Instant, event: RegistryEvent);
    /// An inbound connection was accepted; returns the node's id for the new link.
    fn handle_accepted(&mut self, now: Instant) -> LinkId;
    /// A dial the node asked for (`Output::Connect`) succeeded.
    fn handle_connected(&mut self, now: Instant, link: LinkId);
    /// A dial the node asked for failed.
    fn handle_connect_failed(&mut self, now: Instant, link: LinkId);
    /// Bytes arrived on a link.
    fn handle_received(&mut self, now: Instant, link: LinkId, bytes: bytes::Bytes);
    /// The other side closed the link, or the link dropped.
    fn handle_closed(&mut self, now: Instant, link: LinkId);
    /// A deadline reported by `poll_timeout` is due.
    fn handle_timeout(&mut self, now: Instant);
    /// The application sends a message.
    ///
    /// # Errors
    ///
    /// The node's refusal to accept the message.
    fn send(
        &mut self,
        now: Instant,
        target: Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError>;
    /// Graceful shutdown.
    fn shutdown(&mut self, now: Instant);
    /// Next output, if any.
    fn poll_output(&mut self) -> Option<Output>;
    /// Earliest deadline at which `handle_timeout` must be called.
    fn poll_timeout(&self) -> Option<Instant>;
    /// How long an accepted message may live (the ledger checks that nothing ends `Timeout`
    /// before it); `None` when the node has no such bound.
    fn message_timeout(&self) -> Option<crate::time::Duration> {
        None
    }
    /// The node's bus incarnation (the ledger maps evidence of death to the simulator's
    /// incarnation count); 0 when it has none.
    fn incarnation(&self) -> u64 {
        0
    }
    /// How long a suspect's doubt may last before the node declares it dead without other
    /// evidence (the path-failure invariant's bound); zero when the node has none.
    fn suspicion_bound(&self) -> crate::time::Duration {
        crate::time::Duration::ZERO
    }
    /// Swaps `tables` with the node's shared Maglev tables (see
    /// [`Sim::share_maglev_tables`]); a node without Maglev picks ignores them.
    fn swap_shared_maglev(&mut self, tables: &mut Option<crate::select::SharedMaglev>) {
        let _ = tables;
    }
}

impl SimNode for Node {
    type Config = Config;
    type Error = ConfigError;

    /// The simulator opts in to replayable handshake nonces: a config with cluster keys and
    /// no entropy gets [`NonceEntropy::deterministic_for_tests`].
    ///
    /// [`NonceEntropy::deterministic_for_tests`]: crate::auth::NonceEntropy::deterministic_for_tests
    fn start(config: &Config, now: Instant) -> Result<Node, ConfigError> {
        let mut config = config.clone();
        if config.nonce_entropy.is_empty() {
            config.nonce_entropy = crate::auth::NonceEntropy::deterministic_for_tests();
        }
        Node::new(config, now)
    }
    fn id(&self) -> NodeId {
        Node::id(self)
    }
    fn swap_shared_maglev(&mut self, tables: &mut Option<crate::select::SharedMaglev>) {
        Node::swap_shared_maglev(self, tables);
    }
    fn handle_registry(&mut self, now: Instant, event: RegistryEvent) {
        Node::handle_registry(self, now, event);
    }
    fn handle_accepted(&mut self, now: Instant) -> LinkId {
        Node::handle_accepted(self, now)
    }
    fn handle_connected(&mut self, now: Instant, link: LinkId) {
        Node::handle_connected(self, now, link);
    }
    fn handle_connect_failed(&mut self, now: Instant, link: LinkId) {
        Node::handle_connect_failed(self, now, link);
    }
    fn handle_received(&mut self, now: Instant, link: LinkId, bytes: bytes::Bytes) {
        Node::handle_received(self, now, link, bytes);
    }
    fn handle_closed(&mut self, now: Instant, link: LinkId) {
        Node::handle_closed(self, now, link);
    }
    fn handle_timeout(&mut self, now: Instant) {
        Node::handle_timeout(self, now);
    }
    fn send(
        &mut self,
        now: Instant,
        target: Select,
        msg_type: u32,
        payload: Bytes,
    ) -> Result<MsgId, SendError> {
        Node::send(self, now, target, msg_type, payload)
    }
    fn shutdown(&mut self, now: Instant) {
        Node::shutdown(self, now);
    }
    fn poll_output(&mut self) -> Option<Output> {
        Node::poll_output(self)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Node::poll_timeout(self)
    }
    fn message_timeout(&self) -> Option<crate::time::Duration> {
        Some(self.inspect().config().message_timeout)
    }
    fn incarnation(&self) -> u64 {
        Node::incarnation(self)
    }
    fn suspicion_bound(&self) -> crate::time::Duration {
        self.inspect().config().suspicion_timeout
    }
}

/// The address the simulator registers for `id` unless told otherwise: `sim://0x101`.
#[must_use]
pub fn sim_addr(id: NodeId) -> String {
    format!("sim://{id}")
}

/// A discovery record for `id` named `name`, listening on [`sim_addr`]`(id)`; every other field
/// is empty. The registry assigns the revision when it is published.
#[must_use]
pub fn discovery_info(id: NodeId, name: &str) -> DiscoveryInfo {
    DiscoveryInfo {
        id,
        name: String::from(name),
        listen: vec![sim_addr(id)],
        ..DiscoveryInfo::default()
    }
}

/// A topology record: `id` (named `name`) sits under `upstream` ([`NodeId::NONE`] for a root).
#[must_use]
pub fn topology_info(id: NodeId, name: &str, upstream: NodeId) -> TopologyInfo {
    TopologyInfo {
        id,
        name: String::from(name),
        upstream_id: upstream,
        ..TopologyInfo::default()
    }
}

/// Formats an instant as seconds with nanosecond precision (`12.000000000s`), as in the trace.
#[must_use]
pub fn fmt_instant(t: Instant) -> String {
    let ns = t.as_nanos();
    format!("{}.{:09}s", ns / 1_000_000_000, ns % 1_000_000_000)
}
