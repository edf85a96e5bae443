//! A read-only view of the link table for the node's status snapshot (`Node::status`).

use super::{Link, Links, Phase};
use crate::ids::{LinkId, NodeId};

/// One link as a status page shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkView {
    /// The link.
    pub link: LinkId,
    /// The peer of its handshake, or the node dialled until then (`None`: accepted, no
    /// `Hello` yet).
    pub peer: Option<NodeId>,
    /// `connecting` (dial not reported connected yet), `handshaking` or `up`.
    pub state: &'static str,
    /// Whether this node dialled it (else accepted).
    pub outbound: bool,
}

impl Links {
    /// Every link, by link id.
    pub fn views(&self) -> impl Iterator<Item = LinkView> + '_ {
        let mut links: alloc::vec::Vec<(&LinkId, &Link)> = self.table.iter().collect();
        links.sort_unstable_by_key(|&(&link, _)| link);
        links.into_iter().map(|(&link, l)| LinkView {
            link,
            peer: l.peer.or(l.dialed),
            state: match l.phase {
                Phase::Dialing => "connecting",
                Phase::Handshaking => "handshaking",
                Phase::Up => "up",
            },
            outbound: l.dialed.is_some(),
        })
    }
}
