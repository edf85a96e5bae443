//! Relations between two peers of the registry and the next hop from one to the other.

use super::TopologyRegistry;
use crate::ids::NodeId;

/// What `to` is as seen from `from`. Values match libatbus's `topology_relation_type`.
///
/// [`TopologyRegistry::route`] evaluates the rules in this order (which is not value order):
/// Invalid, Self_, ImmediateUpstream, ImmediateDownstream, SameUpstreamPeer,
/// TransitiveUpstream, TransitiveDownstream, OtherUpstreamPeer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum Relation {
    /// An id is 0, or a peer is not in the registry.
    Invalid = 0,
    /// `from == to`.
    Self_ = 1,
    /// `to` is `from`'s upstream.
    ImmediateUpstream = 2,
    /// `to` is further up `from`'s upstream chain.
    TransitiveUpstream = 3,
    /// `from` is `to`'s upstream.
    ImmediateDownstream = 4,
    /// `from` is further up `to`'s upstream chain.
    TransitiveDownstream = 5,
    /// Both have the same (existing) upstream.
    SameUpstreamPeer = 6,
    /// Anything else: different branches or different trees (two roots included).
    OtherUpstreamPeer = 7,
}

impl Relation {
    /// The libatbus numeric value.
    #[must_use]
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The relation with libatbus numeric value `value`, if there is one.
    #[must_use]
    pub const fn from_u8(value: u8) -> Option<Relation> {
        Some(match value {
            0 => Relation::Invalid,
            1 => Relation::Self_,
            2 => Relation::ImmediateUpstream,
            3 => Relation::TransitiveUpstream,
            4 => Relation::ImmediateDownstream,
            5 => Relation::TransitiveDownstream,
            6 => Relation::SameUpstreamPeer,
            7 => Relation::OtherUpstreamPeer,
            _ => return None,
        })
    }
}

/// A relation together with the node a message from `from` to `to` is handed to first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Route {
    /// What `to` is to `from`.
    pub relation: Relation,
    /// The first hop along the tree: `to` itself for Self_ (`from == to`) and the immediate
    /// relations, `from`'s upstream for TransitiveUpstream, `from`'s child on the way down for
    /// TransitiveDownstream, the shared upstream for SameUpstreamPeer, `from`'s upstream (or
    /// `to` when `from` is a root) for OtherUpstreamPeer, and `None` for Invalid. Whether a
    /// peer may instead be reached directly is the policy's call
    /// ([`super::TopologyPolicy::direct_path_allowed`]).
    pub next_hop: Option<NodeId>,
}

impl Route {
    const INVALID: Route = Route {
        relation: Relation::Invalid,
        next_hop: None,
    };

    const fn new(relation: Relation, next_hop: NodeId) -> Route {
        Route {
            relation,
            next_hop: Some(next_hop),
        }
    }
}

impl TopologyRegistry {
    /// The relation of `to` as seen from `from`, and the next hop towards it.
    ///
    /// Pure query; call whenever a route is (re)computed. Chain walks are bounded by the peer
    /// count: should they ever be exhausted (impossible while the registry forbids cycles) the
    /// walk counts as "not found" and the result falls through to OtherUpstreamPeer.
    #[must_use]
    pub fn route(&self, from: NodeId, to: NodeId) -> Route {
        if !from.is_valid() || !to.is_valid() || !self.contains(from) || !self.contains(to) {
            return Route::INVALID;
        }
        if from == to {
            return Route::new(Relation::Self_, to);
        }
        let from_up = self.raw_upstream(from);
        let to_up = self.raw_upstream(to);
        if from_up == to {
            return Route::new(Relation::ImmediateUpstream, to);
        }
        if to_up == from {
            return Route::new(Relation::ImmediateDownstream, to);
        }
        if from_up.is_valid() && from_up == to_up {
            return Route::new(Relation::SameUpstreamPeer, from_up);
        }
        if self.upstream_chain(from_up).any(|ancestor| ancestor == to) {
            return Route::new(Relation::TransitiveUpstream, from_up);
        }
        if let Some(child) = self.child_towards(from, to) {
            return Route::new(Relation::TransitiveDownstream, child);
        }
        let hop = if from_up.is_valid() { from_up } else { to };
        Route::new(Relation::OtherUpstreamPeer, hop)
    }

    /// Shorthand for `route(from, to).relation`.
    #[must_use]
    pub fn relation(&self, from: NodeId, to: NodeId) -> Relation {
        self.route(from, to).relation
    }

    /// Shorthand for `route(from, to).next_hop`.
    #[must_use]
    pub fn next_hop(&self, from: NodeId, to: NodeId) -> Option<NodeId> {
        self.route(from, to).next_hop
    }

    /// When `ancestor` is on `descendant`'s upstream chain, the node right below `ancestor` on
    /// that chain (the child of `ancestor` a message descends through).
    fn child_towards(&self, ancestor: NodeId, descendant: NodeId) -> Option<NodeId> {
        let mut child = descendant;
        for up in self.upstream_chain(descendant) {
            if up == ancestor {
                return Some(child);
            }
            child = up;
        }
        None
    }
}
