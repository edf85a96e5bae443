//! [`PeerTables`]: how many entries each per-peer table of a node holds, for tests, soaks and
//! `/status` — every table keyed by a peer's id is bounded by the live set plus a grace
//! (docs/ARCHITECTURE.md §9.4 lists them with the rule that prunes each).

use serde::{Deserialize, Serialize};

/// Entries of each per-peer table of one node (from [`Inspect::peer_tables`]): each is
/// bounded by the live set plus a grace (docs/ARCHITECTURE.md §9.4 gives the rule of each).
///
/// [`Inspect::peer_tables`]: super::Inspect::peer_tables
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct PeerTables {
    /// Links held (dialling, handshaking or up).
    pub links: usize,
    /// Peers with an up link.
    pub up_peers: usize,
    /// Peers whose handshake incarnation is remembered.
    pub peer_incarnations: usize,
    /// Receive streams (duplicate memories), one per source.
    pub recv_streams: usize,
    /// Endpoints (outboxes).
    pub endpoints: usize,
    /// Target incarnations the sending side remembers.
    pub known_incarnations: usize,
    /// Route records.
    pub routes: usize,
    /// The connector's link states.
    pub route_links: usize,
    /// Peers whose record changed while a dial to them was in flight.
    pub news_while_dialing: usize,
    /// Suspects of the evidence book.
    pub suspects: usize,
    /// Deaths the evidence book remembers (acted on once per incarnation).
    pub dead: usize,
    /// Targets a proxy relayed for (the `relayed` map's keys).
    pub relayed_targets: usize,
    /// Sources relayed for, summed over the targets.
    pub relayed_sources: usize,
    /// Light clients the evidence book knows.
    pub clients: usize,
    /// Peers scheduled to be looked at again a grace after their death or last link loss
    /// (bounded by the deaths and link losses of one grace).
    pub departures: usize,
    /// Discovery records.
    pub discovery: usize,
    /// Discovery tombstones (bounded by their limit, §5).
    pub discovery_tombstones: usize,
    /// Topology records (this node's own included).
    pub topology: usize,
    /// Topology revisions held (records and deletes).
    pub topology_revisions: usize,
    /// Servers with calls of this node outstanding.
    pub rpc_servers: usize,
}
