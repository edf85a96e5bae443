//! [`Inspect`]: a read-only view of a [`Node`](crate::Node)'s parts, from
//! [`Node::inspect`](crate::Node::inspect) — queues, links, routes, applied records, counters.
//! Reads only: nothing here changes the node, so a driver, a test or a bench may look at any
//! time. The node's one snapshot for serving is [`Node::status`](crate::Node::status).

mod tables;

pub use tables::PeerTables;

use crate::{
    auth::AuthRefusals,
    bus::links::Links,
    config::Config,
    connector::{Connector, RouteView},
    discovery::DiscoverySet,
    endpoint::EndpointTable,
    evidence::EvidenceBook,
    ids::{LinkId, NodeId},
    perimeter::PerimeterCounts,
    rpc::{Rpc, RpcStats},
    topology::TopologyRegistry,
};

/// A read-only view of one node's parts; see the [module docs](self).
#[derive(Clone, Copy, Debug)]
pub struct Inspect<'a> {
    pub(crate) config: &'a Config,
    pub(crate) topology: &'a TopologyRegistry,
    pub(crate) discovery: &'a DiscoverySet,
    pub(crate) endpoints: &'a EndpointTable,
    pub(crate) connector: &'a Connector,
    pub(crate) links: &'a Links,
    pub(crate) rpc: Option<&'a Rpc>,
    /// The node's own perimeter counts (the links' are added on reading).
    pub(crate) perimeter: PerimeterCounts,
    pub(crate) evidence: &'a EvidenceBook,
    /// Topology revisions held.
    pub(crate) topology_revisions: usize,
    /// The selector's counters.
    pub(crate) select: crate::select::SelectStats,
    /// The selector's outlier state, and the node's latest instant (what "ejected now" means).
    pub(crate) outliers: (&'a crate::select::Outliers, crate::time::Instant),
}

impl<'a> Inspect<'a> {
    /// The configuration the node runs with.
    #[must_use]
    pub const fn config(&self) -> &'a Config {
        self.config
    }

    /// The applied topology records.
    #[must_use]
    pub const fn topology(&self) -> &'a TopologyRegistry {
        self.topology
    }

    /// The applied discovery records. Their rings' members, orders and metadata are exact;
    /// their points may wait for the node's next hash or bounded pick (burst deferral:
    /// [`RingSet::ring`](crate::ring::RingSet::ring) panics while
    /// [`RingSet::is_settled`](crate::ring::RingSet::is_settled) is false), so read points
    /// only from a settled set.
    #[must_use]
    pub const fn discovery(&self) -> &'a DiscoverySet {
        self.discovery
    }

    /// The connector (route records), read-only. An internal view for tests and benches; a
    /// driver reads [`Node::status`](crate::Node::status) or [`route`](Self::route).
    #[doc(hidden)]
    #[must_use]
    pub const fn connector(&self) -> &'a Connector {
        self.connector
    }

    /// The endpoint table (each target's outbox: queued and in-flight messages), read-only.
    /// An internal view for tests and benches; a driver reads
    /// [`Node::status`](crate::Node::status) or [`pending`](Self::pending).
    #[doc(hidden)]
    #[must_use]
    pub const fn endpoints(&self) -> &'a EndpointTable {
        self.endpoints
    }

    /// The route record for `target`, if any.
    #[must_use]
    pub fn route(&self, target: NodeId) -> Option<RouteView> {
        self.connector.view(target)
    }

    /// The node's upstream now, as its applied topology says (`NodeId::NONE`: none).
    #[must_use]
    pub fn upstream(&self) -> NodeId {
        self.connector.upstream()
    }

    /// Messages queued for `target` (0 if it has no endpoint).
    #[must_use]
    pub fn pending(&self, target: NodeId) -> usize {
        self.endpoints.queued(target)
    }

    /// Messages queued (not yet transmitted) for every target together.
    #[must_use]
    pub fn pending_total(&self) -> usize {
        self.endpoints.iter().map(|(_, e)| e.queue().len()).sum()
    }

    /// Messages to `target` transmitted and not yet acknowledged.
    #[must_use]
    pub fn unacked(&self, target: NodeId) -> usize {
        self.endpoints.unacked(target).len()
    }

    /// The peer of `link` once its handshake is done (`None` before, and for unknown links).
    #[must_use]
    pub fn link_peer(&self, link: LinkId) -> Option<NodeId> {
        self.links.peer(link)
    }

    /// Links the node holds (dialling, handshaking or up).
    #[must_use]
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// The up link that carries traffic to `peer` (the lowest link id among its up links).
    #[must_use]
    pub fn link_to(&self, peer: NodeId) -> Option<LinkId> {
        self.links.link_to(peer)
    }

    /// Handshakes this node refused for authentication (its cluster keys), by kind.
    #[must_use]
    pub fn auth_refusals(&self) -> AuthRefusals {
        self.links.auth_refusals()
    }

    /// Frames dropped at the perimeter so far (the rules: [`PerimeterCounts`]).
    #[must_use]
    pub fn perimeter(&self) -> PerimeterCounts {
        PerimeterCounts {
            forged_sources: self.links.forged_sources(),
            unproven_refusals: self.links.unproven_refusals(),
            ..self.perimeter
        }
    }

    /// The methods this node serves, in order.
    pub fn served_methods(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.rpc.into_iter().flat_map(|rpc| rpc.served_methods())
    }

    /// Entries of every per-peer table ([`PeerTables`]).
    #[must_use]
    pub fn peer_tables(&self) -> PeerTables {
        let (up_peers, peer_incarnations, recv_streams) = self.links.peer_table_sizes();
        let (route_links, news_while_dialing) = self.connector.link_table_sizes();
        let mut tables = PeerTables {
            links: self.links.len(),
            up_peers,
            peer_incarnations,
            recv_streams,
            endpoints: self.endpoints.len(),
            known_incarnations: self.endpoints.known_incarnations(),
            routes: self.connector.len(),
            route_links,
            news_while_dialing,
            discovery: self.discovery.len(),
            discovery_tombstones: self.discovery.tombstone_count(),
            topology: self.topology.len(),
            topology_revisions: self.topology_revisions,
            rpc_servers: self.rpc.map_or(0, crate::rpc::Rpc::server_count),
            ..PeerTables::default()
        };
        self.evidence.count_into(&mut tables);
        tables
    }

    /// Whether any per-peer table holds an entry naming `peer` (receive stream, handshake
    /// incarnation, suspicion, death, relayed map, client mark, sending-side incarnation):
    /// none once it departed a grace ago (docs/ARCHITECTURE.md §9.4).
    #[must_use]
    pub fn remembers(&self, peer: NodeId) -> bool {
        self.links.remembers(peer)
            || self.evidence.remembers(peer)
            || self.endpoints.remembers(peer)
    }

    /// Outlier ejection's counters (servers ejected counted at the node's latest instant).
    #[must_use]
    pub fn outlier_stats(&self) -> crate::select::OutlierStats {
        let (outliers, now) = self.outliers;
        outliers.stats(now)
    }

    /// The RPC layer's counters (in-flight calls counted now).
    #[must_use]
    pub fn rpc_stats(&self) -> RpcStats {
        self.rpc.map(Rpc::stats).unwrap_or_default()
    }

    /// The selector's counters: bounded-load spills, Maglev tables built.
    #[must_use]
    pub const fn select_stats(&self) -> crate::select::SelectStats {
        self.select
    }
}
