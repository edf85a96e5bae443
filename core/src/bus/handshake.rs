//! The link handshake: what a node says in its `Hello`/`HelloAck`/`Auth` and how it judges
//! the peer's.
//!
//! The dialling side sends [`Hello`](crate::wire::Hello); the accepting side checks it with
//! [`check_peer`] and answers [`HelloAck`](crate::wire::HelloAck) — accepted, or refused with a
//! [`RefuseReason`] (then closes). The dialler checks the answer the same way (plus: the peer
//! must be the node it dialled). Both carry the sender's id, name, incarnation (a random value
//! drawn when the node starts, so a restarted node is told apart from its previous life) and
//! the protocol versions it speaks.
//!
//! With cluster keys, the `Hello`/`HelloAck`/`Auth` frames also carry a challenge, nonces and
//! proofs: the keys, the transcript and the proof rules are [`crate::auth`].

use crate::{
    ids::NodeId,
    wire::{RefuseReason, VersionRange},
};

/// The bus protocol versions this build speaks.
pub const PROTOCOL_VERSIONS: VersionRange = VersionRange { min: 1, max: 1 };

/// Whether two version ranges share a version (an empty range, `min > max`, shares none).
#[must_use]
pub const fn versions_overlap(a: VersionRange, b: VersionRange) -> bool {
    a.min <= a.max && b.min <= b.max && a.min <= b.max && b.min <= a.max
}

/// What the peer said about itself in its `Hello` or `HelloAck`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerHello {
    /// The id it claims.
    pub node: NodeId,
    /// Its incarnation.
    pub incarnation: u64,
    /// The versions it speaks.
    pub versions: VersionRange,
}

/// Judges a peer's hello against this node's own id: `Ok` or why the link is refused.
/// Checks, in order: a usable id (not 0, not this node's), a shared protocol version. The
/// proofs are checked by the link machine ([`ClusterKeys::check`](crate::auth::ClusterKeys::check)).
///
/// The duplicate-id rule needs the node's link table and is checked by the node.
///
/// # Errors
///
/// [`RefuseReason::InvalidHello`] or [`RefuseReason::VersionMismatch`].
pub fn check_peer(own: NodeId, peer: &PeerHello) -> Result<(), RefuseReason> {
    if !peer.node.is_valid() || peer.node == own {
        return Err(RefuseReason::InvalidHello);
    }
    if !versions_overlap(PROTOCOL_VERSIONS, peer.versions) {
        return Err(RefuseReason::VersionMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_id_and_versions_in_order() {
        let hello = |node, versions| PeerHello {
            node: NodeId(node),
            incarnation: 7,
            versions,
        };
        let v = PROTOCOL_VERSIONS;
        assert_eq!(check_peer(NodeId(1), &hello(2, v)), Ok(()));
        assert_eq!(
            check_peer(NodeId(1), &hello(0, v)),
            Err(RefuseReason::InvalidHello)
        );
        assert_eq!(
            check_peer(NodeId(1), &hello(1, v)),
            Err(RefuseReason::InvalidHello)
        );
        let future = VersionRange { min: 2, max: 5 };
        assert_eq!(
            check_peer(NodeId(1), &hello(2, future)),
            Err(RefuseReason::VersionMismatch)
        );
        let empty = VersionRange { min: 1, max: 0 };
        assert_eq!(
            check_peer(NodeId(1), &hello(2, empty)),
            Err(RefuseReason::VersionMismatch)
        );
    }
}
