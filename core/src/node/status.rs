//! [`Node::status`] and the counts it reads; the snapshot's types are [`crate::status`].

use alloc::borrow::ToOwned;

use super::Node;
use crate::{
    ids::NodeId,
    status::{EndpointStatus, FLAG_NAMES, RouteStatus, Status, link_status},
};

impl Node {
    /// The node's upstream now, as its applied topology says (`NodeId::NONE`: none).
    #[must_use]
    pub fn upstream(&self) -> NodeId {
        self.connector.upstream()
    }

    /// Messages queued (not yet transmitted) for every target together.
    #[must_use]
    pub fn pending_total(&self) -> usize {
        self.endpoints.iter().map(|(_, e)| e.queue().len()).sum()
    }

    /// A snapshot of the node now: what adapters serve as its status. `registered` is
    /// `false` (the driver knows its registry backend; see [`Status::registered`]). Reads
    /// only; call it whenever a status is asked for.
    #[must_use]
    pub fn status(&self) -> Status {
        let endpoints = self
            .endpoints
            .iter()
            .map(|(_, e)| EndpointStatus {
                id: e.id().0,
                name: self.discovery.get_by_id(e.id()).map(|i| i.name.clone()),
                pending: e.queue().len(),
                unacked: self.unacked(e.id()),
            })
            .collect();
        let routes = self
            .connector
            .targets()
            .filter_map(|target| self.connector.view(target))
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
            id: self.id.0,
            name: self.config.name.clone(),
            incarnation: self.incarnation,
            listen: self.config.listen.first().cloned().unwrap_or_default(),
            upstream: self.upstream().0,
            registered: false,
            known_nodes: self.discovery.len(),
            endpoints,
            routes,
            links: self.links.views().map(link_status).collect(),
            perimeter: self.perimeter(),
        }
    }
}
