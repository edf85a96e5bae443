//! [`Node::status`](crate::Node::status): one point-in-time snapshot of a node — identity, endpoints with their
//! queues, route records with their flags, links — that every adapter serves as its status
//! (switchboard-tokio as the JSON of `/status`, switchboard-mio from `MioNode::status`).
//!
//! The JSON field names are part of what the adapters serve: tools and the process tests parse
//! them, so a rename here is a change of the served format.

use alloc::{borrow::ToOwned, string::String, vec::Vec};

use serde::{Deserialize, Serialize};

use crate::{bus::links::LinkView, connector::RouteFlags, inspect::Inspect};

/// A point-in-time view of one node; see [`Node::status`](crate::Node::status).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Status {
    /// Node id.
    pub id: u64,
    /// Node name.
    pub name: String,
    /// This life's incarnation. Served as a JSON string: it is usually above 2^53, where
    /// JSON numbers lose precision in most parsers; a number is accepted when parsing.
    #[serde(with = "u64_as_string")]
    pub incarnation: u64,
    /// The first listen address (empty when the node listens nowhere).
    pub listen: String,
    /// The upstream, 0 = none.
    pub upstream: u64,
    /// Whether the registry backend reports the node registered. The node does not know its
    /// backend: [`Node::status`](crate::Node::status) says `false` and the driver sets what its backend reports.
    pub registered: bool,
    /// Nodes in the discovery set.
    pub known_nodes: usize,
    /// Endpoints with their queues, by target id.
    pub endpoints: Vec<EndpointStatus>,
    /// Route records, by target id.
    pub routes: Vec<RouteStatus>,
    /// Links, by link id.
    pub links: Vec<LinkStatus>,
    /// Frames dropped at the perimeter: acks and notices off their stream's route, `Data`
    /// with a forged source ([`Inspect::perimeter`]).
    #[serde(default)]
    pub perimeter: crate::perimeter::PerimeterCounts,
    /// Entries of every per-peer table ([`Inspect::peer_tables`]): bounded by the live set
    /// plus one grace of departed peers (docs/ARCHITECTURE.md §9.4).
    #[serde(default)]
    pub peer_tables: crate::inspect::PeerTables,
}

impl Status {
    /// The snapshot of the node `node` shows (`incarnation`: its life); `registered` is
    /// `false` (the driver knows its registry backend).
    pub(crate) fn of(node: &Inspect<'_>, incarnation: u64) -> Status {
        let endpoints = node
            .endpoints
            .iter()
            .map(|(_, e)| EndpointStatus {
                id: e.id().0,
                name: node.discovery.get_by_id(e.id()).map(|i| i.name.clone()),
                pending: e.queue().len(),
                unacked: node.unacked(e.id()),
            })
            .collect();
        let routes = node
            .connector
            .targets()
            .filter_map(|target| node.connector.view(target))
            .map(|view| RouteStatus {
                target: view.target.0,
                flags: FLAG_NAMES
                    .iter()
                    .filter(|(flag, _)| view.flags.contains(*flag))
                    .map(|(_, name)| (*name).to_owned())
                    .collect(),
                proxy: view.proxy.map(|p| p.0),
                retry_count: view.retry_count,
            })
            .collect();
        Status {
            id: node.config.id.0,
            name: node.config.name.clone(),
            incarnation,
            listen: node.config.listen.first().cloned().unwrap_or_default(),
            upstream: node.upstream().0,
            registered: false,
            known_nodes: node.discovery.len(),
            endpoints,
            routes,
            links: node.links.views().map(link_status).collect(),
            perimeter: node.perimeter(),
            peer_tables: node.peer_tables(),
        }
    }
}

/// One endpoint (a known target with a pending queue) in a [`Status`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EndpointStatus {
    /// The target node.
    pub id: u64,
    /// Its name in discovery, if known.
    pub name: Option<String>,
    /// Messages queued for it.
    pub pending: usize,
    /// Messages transmitted to it and not acknowledged yet.
    pub unacked: usize,
}

/// One route record in a [`Status`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RouteStatus {
    /// The target node.
    pub target: u64,
    /// Set flags by name: `active`, `ready`, `waiting_discovery`, `lost_topology`.
    pub flags: Vec<String>,
    /// The record it routes through; `None` = direct.
    pub proxy: Option<u64>,
    /// Reconnect attempts since the last reset.
    pub retry_count: u32,
}

/// One link in a [`Status`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LinkStatus {
    /// The core's link id.
    pub link: u64,
    /// The peer once known (for a dialled link: the node dialled, until its handshake).
    pub peer: Option<u64>,
    /// `connecting` (dial reported neither connected nor failed), `handshaking` or `up`.
    pub state: String,
    /// Whether this node dialled it (else accepted).
    pub outbound: bool,
}

/// Route flags by the name [`RouteStatus::flags`] lists them under.
pub(crate) const FLAG_NAMES: [(RouteFlags, &str); 4] = [
    (RouteFlags::ACTIVE, "active"),
    (RouteFlags::READY, "ready"),
    (RouteFlags::WAIT_DISCOVERY, "waiting_discovery"),
    (RouteFlags::LOST_TOPOLOGY, "lost_topology"),
];

pub(crate) fn link_status(view: LinkView) -> LinkStatus {
    LinkStatus {
        link: view.link.0,
        peer: view.peer.map(|p| p.0),
        state: view.state.to_owned(),
        outbound: view.outbound,
    }
}

/// A `u64` written as a decimal string and read from a string or a number.
mod u64_as_string {
    use core::fmt;

    use serde::{Deserializer, Serializer, de};

    pub(super) fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        struct Visitor;

        impl de::Visitor<'_> for Visitor {
            type Value = u64;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an unsigned integer or a string holding one")
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<u64, E> {
                Ok(value)
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<u64, E> {
                value.parse().map_err(E::custom)
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}
