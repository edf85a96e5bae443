//! The published form of a node's identity, and the proof that takes a registration over.
//!
//! A node's configured identity ([`Config::identity`](crate::Config::identity)) is a secret:
//! whoever proves it may replace a live registration of the node's id (a restart the registry
//! has not noticed yet). So records never carry it. Discovery and topology records carry
//! [`published_identity`] — `sha256:` and the hex of a hash of the [`IdentityProof`], itself
//! a hash of the secret under another label — and a `Register` carries the proof separately.
//! The registry hashes the proof and compares it with the holder's published value: knowing
//! everything a snapshot, `Put` or etcd value shows does not give the proof, and the secret
//! itself never leaves the node.
//!
//! ```
//! use switchboard_core::discovery::{IdentityProof, published_identity};
//!
//! let published = published_identity("deployment-7");
//! assert!(published.starts_with("sha256:"));
//! assert_eq!(published.len(), 7 + 64);
//! let proof = IdentityProof::of("deployment-7").unwrap();
//! assert!(proof.proves(&published));
//! assert!(!IdentityProof::of("other").unwrap().proves(&published));
//! assert_eq!(published_identity(""), ""); // no identity: nothing published, no proof
//! assert!(IdentityProof::of("").is_none());
//! ```

use alloc::string::String;

use sha2::{Digest, Sha256};

/// Domain label of the proof (the hash of the secret).
const PROOF_LABEL: &[u8] = b"switchboard/identity-proof/v1\0";

/// Domain label of the published value (the hash of the proof).
const PUBLISHED_LABEL: &[u8] = b"switchboard/identity-published/v1\0";

/// Prefix of a published identity.
pub const PUBLISHED_PREFIX: &str = "sha256:";

/// Length of an [`IdentityProof`] in bytes.
pub const IDENTITY_PROOF_LEN: usize = 32;

/// What a `Register` carries to prove it knows the node's identity secret: SHA-256 over a
/// domain label and the secret. Its `Debug` does not print it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct IdentityProof(pub [u8; IDENTITY_PROOF_LEN]);

impl IdentityProof {
    /// The proof of `secret`; `None` for an empty secret (no identity: nothing to prove).
    #[must_use]
    pub fn of(secret: &str) -> Option<IdentityProof> {
        if secret.is_empty() {
            return None;
        }
        let mut h = Sha256::new();
        h.update(PROOF_LABEL);
        h.update(secret.as_bytes());
        Some(IdentityProof(h.finalize().into()))
    }

    /// The identity records publish for this proof: `sha256:` and 64 lower-case hex digits.
    #[must_use]
    pub fn published(&self) -> String {
        let mut h = Sha256::new();
        h.update(PUBLISHED_LABEL);
        h.update(self.0);
        let digest: [u8; 32] = h.finalize().into();
        let mut out = String::with_capacity(PUBLISHED_PREFIX.len() + 64);
        out.push_str(PUBLISHED_PREFIX);
        for byte in digest {
            for nibble in [byte >> 4, byte & 0xf] {
                out.push(char::from(b"0123456789abcdef"[usize::from(nibble)]));
            }
        }
        out
    }

    /// Whether this proof is the one behind `published` (a non-empty published identity).
    /// Not constant-time: the published value is public, only the proof is secret, and an
    /// attacker learns nothing from how far a comparison of two hashes got.
    #[must_use]
    pub fn proves(&self, published: &str) -> bool {
        !published.is_empty() && self.published() == published
    }
}

impl core::fmt::Debug for IdentityProof {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("IdentityProof(..)")
    }
}

/// The identity a node with the secret `secret` publishes in its records (empty for an empty
/// secret): `sha256:` and 64 hex digits of a hash of [`IdentityProof::of`] the secret.
#[must_use]
pub fn published_identity(secret: &str) -> String {
    IdentityProof::of(secret).map_or_else(String::new, |proof| proof.published())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_value_is_fixed_and_hides_the_secret() {
        let published = published_identity("ident-victim");
        assert_eq!(published.len(), 71);
        assert!(!published.contains("ident-victim"));
        // Stable across releases: nodes of two versions must agree.
        assert_eq!(published, published_identity("ident-victim"));
        let proof = IdentityProof::of("ident-victim").unwrap();
        assert!(proof.proves(&published));
        // The published value used as a secret does not prove anything.
        assert!(!IdentityProof::of(&published).unwrap().proves(&published));
        assert!(!proof.proves(""));
        assert_eq!(alloc::format!("{proof:?}"), "IdentityProof(..)");
    }
}
