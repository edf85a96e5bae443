//! The link handshake: what a node says in its `Hello`/`HelloAck` and how it judges the
//! peer's.
//!
//! The dialling side sends [`Hello`](crate::wire::Hello); the accepting side checks it with
//! [`check_peer`] and answers [`HelloAck`](crate::wire::HelloAck) — accepted, or refused with a
//! [`RefuseReason`] (then closes). The dialler checks the answer the same way (plus: the peer
//! must be the node it dialled). Both carry the sender's id, name, incarnation (a random value
//! drawn when the node starts, so a restarted node is told apart from its previous life),
//! the protocol versions it speaks, and a proof of the cluster token when one is configured.
//!
//! **The proof is not cryptographic.** It is a keyed 128-bit murmur3 hash of the token, the
//! sender's id and its incarnation (the nonce), doubled to 32 bytes: it keeps nodes of two
//! clusters that share a network from linking up by mistake, it does not stop an attacker who
//! can observe a handshake (the proof can be replayed for the same id and incarnation) or
//! brute-force a short token. Real authentication belongs to the transport (TLS).

use crate::{
    hash::murmur3_x64_128,
    ids::NodeId,
    wire::{PROOF_LEN, Proof, RefuseReason, VersionRange},
};

/// The bus protocol versions this build speaks.
pub const PROTOCOL_VERSIONS: VersionRange = VersionRange { min: 1, max: 1 };

/// The proof a node with `node` and `incarnation` sends for the cluster `token`; `None` when
/// no token is configured (empty).
///
/// Call when building a `Hello`/`HelloAck`, and to compute the proof a peer must have sent.
#[must_use]
pub fn proof(token: &[u8], node: NodeId, incarnation: u64) -> Option<Proof> {
    if token.is_empty() {
        return None;
    }
    let mut input = alloc::vec::Vec::with_capacity(token.len() + 16);
    input.extend_from_slice(token);
    input.extend_from_slice(&node.0.to_le_bytes());
    input.extend_from_slice(&incarnation.to_le_bytes());
    let (a, b) = murmur3_x64_128(&input, 0x5357_4231);
    let (c, d) = murmur3_x64_128(&input, 0x4255_5321);
    let mut out = [0u8; PROOF_LEN];
    for (chunk, word) in out.chunks_exact_mut(8).zip([a, b, c, d]) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    Some(out)
}

/// Whether two version ranges share a version (an empty range, `min > max`, shares none).
#[must_use]
pub const fn versions_overlap(a: VersionRange, b: VersionRange) -> bool {
    a.min <= a.max && b.min <= b.max && a.min <= b.max && b.min <= a.max
}

/// What the peer said about itself in its `Hello` or `HelloAck`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerHello<'a> {
    /// The id it claims.
    pub node: NodeId,
    /// Its incarnation.
    pub incarnation: u64,
    /// The versions it speaks.
    pub versions: VersionRange,
    /// Its cluster-token proof, if it sent one.
    pub proof: Option<&'a Proof>,
}

/// Judges a peer's hello against this node's own id and cluster token: `Ok` or why the link
/// is refused. Checks, in order: a usable id (not 0, not this node's), a shared protocol
/// version, the token proof (required and exact when `token` is set; ignored otherwise).
///
/// The duplicate-id rule needs the node's link table and is checked by the node.
///
/// # Errors
///
/// [`RefuseReason::InvalidHello`], [`RefuseReason::VersionMismatch`] or
/// [`RefuseReason::WrongCluster`].
pub fn check_peer(own: NodeId, token: &[u8], peer: &PeerHello<'_>) -> Result<(), RefuseReason> {
    if !peer.node.is_valid() || peer.node == own {
        return Err(RefuseReason::InvalidHello);
    }
    if !versions_overlap(PROTOCOL_VERSIONS, peer.versions) {
        return Err(RefuseReason::VersionMismatch);
    }
    let expected = proof(token, peer.node, peer.incarnation);
    if let Some(expected) = expected
        && peer.proof != Some(&expected)
    {
        return Err(RefuseReason::WrongCluster);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(node: u64, versions: VersionRange, proof: Option<&Proof>) -> PeerHello<'_> {
        PeerHello {
            node: NodeId(node),
            incarnation: 7,
            versions,
            proof,
        }
    }

    #[test]
    fn proofs_depend_on_token_id_and_incarnation() {
        assert_eq!(proof(b"", NodeId(1), 7), None);
        let p = proof(b"secret", NodeId(1), 7).expect("token set");
        assert_eq!(proof(b"secret", NodeId(1), 7), Some(p));
        assert_ne!(proof(b"secret", NodeId(2), 7), Some(p));
        assert_ne!(proof(b"secret", NodeId(1), 8), Some(p));
        assert_ne!(proof(b"secreT", NodeId(1), 7), Some(p));
    }

    #[test]
    fn checks_id_versions_and_cluster_in_order() {
        let v = PROTOCOL_VERSIONS;
        assert_eq!(check_peer(NodeId(1), b"", &hello(2, v, None)), Ok(()));
        assert_eq!(
            check_peer(NodeId(1), b"", &hello(0, v, None)),
            Err(RefuseReason::InvalidHello)
        );
        assert_eq!(
            check_peer(NodeId(1), b"", &hello(1, v, None)),
            Err(RefuseReason::InvalidHello)
        );
        let future = VersionRange { min: 2, max: 5 };
        assert_eq!(
            check_peer(NodeId(1), b"", &hello(2, future, None)),
            Err(RefuseReason::VersionMismatch)
        );
        let wide = VersionRange { min: 0, max: 9 };
        assert_eq!(check_peer(NodeId(1), b"", &hello(2, wide, None)), Ok(()));
        let empty = VersionRange { min: 1, max: 0 };
        assert_eq!(
            check_peer(NodeId(1), b"", &hello(2, empty, None)),
            Err(RefuseReason::VersionMismatch)
        );
        let good = proof(b"tok", NodeId(2), 7).expect("token set");
        let bad = proof(b"other", NodeId(2), 7).expect("token set");
        assert_eq!(
            check_peer(NodeId(1), b"tok", &hello(2, v, Some(&good))),
            Ok(())
        );
        assert_eq!(
            check_peer(NodeId(1), b"tok", &hello(2, v, Some(&bad))),
            Err(RefuseReason::WrongCluster)
        );
        assert_eq!(
            check_peer(NodeId(1), b"tok", &hello(2, v, None)),
            Err(RefuseReason::WrongCluster)
        );
        // Without a token of our own, a peer's proof is not checked.
        assert_eq!(check_peer(NodeId(1), b"", &hello(2, v, Some(&bad))), Ok(()));
    }
}
