//! The `Node` facade: one node of the cluster as a sans-IO state machine, and a composition
//! root. It holds the machines — links (`bus::links`), outboxes (`endpoint`), routes
//! (`connector`), records (`records`), calls (`rpc`), the choice of a node (`select`),
//! evidence of death (`evidence`) — hands each input to the machine it concerns and applies
//! the effects one returns to the others; it decides nothing itself. How to drive it is in the
//! [crate docs](crate#driving-a-node); the rules are in docs/ARCHITECTURE.md §4 and §9. Nothing
//! from a peer can panic it: a malformed frame closes its link ([`Event::LinkRejected`]).

mod commands;
mod evidence;
mod registry;
mod routes;
mod rpc;
mod transport;

#[cfg(test)]
mod tests;

pub use crate::{
    event::{Event, Evidence, LinkError, RegistryIgnored},
    output::{Output, SendError},
    perimeter::{OffRouteFrame, PerimeterCounts},
    status::{EndpointStatus, LinkStatus, RouteStatus, Status},
};

use crate::{
    bus::links::{LinkSettings, Links},
    config::{Config, ConfigError},
    connector::{Connector, ConnectorConfig},
    endpoint::EndpointTable,
    ids::{IdSource, NodeId},
    inspect::Inspect,
    output::Outlets,
    records::Records,
    registry::RegistryEvent,
    rng::{Rng, node_rngs},
    time::{Instant, earliest},
};

/// One node; see the [module docs](self).
#[derive(Debug)]
pub struct Node {
    config: Config,
    id: NodeId,
    /// This life of the node: drawn at `Node::new`, sent in every handshake.
    incarnation: u64,
    rng: Rng,
    /// Every link: handshakes, heartbeats, delivery and acks of inbound messages.
    links: Links,
    msg_ids: IdSource,
    /// The discovery set, the topology registry and its revision gate ([`crate::records`]).
    records: Records,
    endpoints: EndpointTable,
    connector: Connector,
    /// The driver's outputs and the RPC machine's inputs.
    out: Outlets,
    /// The selection state of sends and calls (per filter ring; [`crate::select`]).
    selector: crate::select::Selector,
    now: Instant,
    shut_down: bool,
    /// Suspects, deaths acted on, sources relayed for ([`crate::evidence`]).
    evidence: crate::evidence::EvidenceBook,
    /// The RPC machine ([`crate::rpc`], composed in `node/rpc.rs`); boxed, so taking it out
    /// to run it with the node as its host is a pointer move; `None` only while it runs.
    rpc: Option<alloc::boxed::Box<crate::rpc::Rpc>>,
    /// Acks and notices dropped for arriving off their stream's route ([`crate::perimeter`]).
    perimeter: PerimeterCounts,
}

impl Node {
    /// A node with this configuration, started at `now`: its own topology record (id,
    /// configured upstream, host, pid, labels) is applied locally, and the upstream link is
    /// dialled at once if its address is known (config or, later, discovery).
    ///
    /// # Errors
    ///
    /// The first problem [`Config::validate`] finds; [`ConfigError::NoNonceEntropy`] for
    /// cluster keys without the driver's nonce entropy.
    pub fn new(config: Config, now: Instant) -> Result<Node, ConfigError> {
        config.validate()?;
        if config.auth_keys().is_enabled() && config.nonce_entropy.is_empty() {
            return Err(ConfigError::NoNonceEntropy);
        }
        let (mut rng, mut bus_rng) = node_rngs(config.rng_seed, config.id.0, now.as_nanos());
        let connector = Connector::new(ConnectorConfig::from_config(&config), rng.fork());
        // Never 0: a `Data` frame stamped 0 means "incarnation not known".
        let incarnation = bus_rng.next_u64().max(1);
        let endpoints = EndpointTable::for_config(&config, bus_rng.fork());
        let links = Links::new(
            LinkSettings::from_config(&config, incarnation),
            now,
            bus_rng.fork(),
        );
        // Drawn after the forks: no other sequence moves.
        let rpc = crate::rpc::Rpc::for_node(&config, incarnation, bus_rng.next_u64());
        let evidence = crate::evidence::EvidenceBook::for_config(&config);
        let mut selector = crate::select::Selector::with_config(config.select_config());
        selector.set_outlier_config(config.outlier());
        let mut node = Node {
            id: config.id,
            incarnation,
            links,
            endpoints,
            records: Records::for_node(&config),
            config,
            rng,
            msg_ids: IdSource::new(),
            connector,
            out: Outlets::default(),
            selector,
            now,
            shut_down: false,
            evidence,
            rpc: Some(rpc),
            perimeter: PerimeterCounts::default(),
        };
        node.with_connector(|c, w| c.start(now, w));
        Ok(node)
    }

    /// This node's id.
    #[must_use]
    pub const fn id(&self) -> NodeId {
        self.id
    }

    /// This node's incarnation: a random value drawn at [`Node::new`] (from the seed, the id
    /// and the start time), sent in every handshake so peers can tell a restart.
    #[must_use]
    pub const fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    #[must_use]
    pub const fn is_shut_down(&self) -> bool {
        self.shut_down
    }

    /// The next thing the driver must do or may observe, oldest first; `None` when there is
    /// nothing left. Drain it after every `handle_*` call and command, act on each [`Output`]
    /// (each variant says what it asks), then re-arm the timer from
    /// [`poll_timeout`](Self::poll_timeout). An output not acted on is lost. RPC traffic goes
    /// to the RPC machine where it arises and never reaches the driver as `Received` or
    /// `Outcome`.
    #[must_use]
    #[inline]
    pub fn poll_output(&mut self) -> Option<Output> {
        debug_assert!(
            self.out.rpc.is_empty(),
            "every way in hands the RPC machine its inputs before it returns"
        );
        self.out.queue.pop_front()
    }

    /// When `handle_timeout` must be called next: the earliest deadline of any machine, or
    /// the latest `now` while a flush is unfinished; `None` when nothing is scheduled (and
    /// after shutdown). Arm one timer at it, replacing the previous one.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.shut_down {
            return None;
        }
        let flush = self.endpoints.has_unfinished_flush().then_some(self.now);
        let rpc = self.rpc.as_ref().and_then(|rpc| rpc.next_deadline());
        let (connector, links) = (self.connector.next_deadline(), self.links.next_deadline());
        let (outboxes, departed) = (self.endpoints.next_deadline(), self.records.next_deadline());
        let evidence = self.evidence.next_deadline();
        [connector, outboxes, flush, links, rpc, departed, evidence]
            .into_iter()
            .fold(None, earliest)
    }

    /// A read-only view of the node's parts — queues, links, routes, applied records,
    /// counters ([`Inspect`]).
    #[must_use]
    pub fn inspect(&self) -> Inspect<'_> {
        Inspect {
            config: &self.config,
            topology: &self.records.topology,
            discovery: &self.records.discovery,
            endpoints: &self.endpoints,
            connector: &self.connector,
            links: &self.links,
            rpc: self.rpc.as_deref(),
            perimeter: self.perimeter,
            evidence: &self.evidence,
            topology_revisions: self.records.revision_count(),
            select: self.selector.stats(),
            outliers: (self.selector.outliers(), self.now),
        }
    }

    /// A snapshot of the node now: what adapters serve as its status. `registered` is
    /// `false` (the driver knows its registry backend; see [`Status::registered`]). Reads
    /// only; call it whenever a status is asked for.
    #[must_use]
    pub fn status(&self) -> Status {
        Status::of(&self.inspect(), self.incarnation)
    }

    /// Lends the node's selector shared Maglev tables, or takes them back
    /// ([`Selector::swap_shared_maglev`](crate::select::Selector::swap_shared_maglev)): the
    /// simulator lends its nodes one set of tables, call by call.
    #[cfg(feature = "sim")]
    pub(crate) fn swap_shared_maglev(&mut self, tables: &mut Option<crate::select::SharedMaglev>) {
        self.selector.swap_shared_maglev(tables);
    }

    /// Clamps `now` to the latest instant seen (time never runs backwards in the node).
    fn advance(&mut self, now: Instant) -> Instant {
        if now > self.now {
            self.now = now;
        }
        self.now
    }
}
