//! Cluster-key authentication: the keys a cluster shares, the proof both ends of a link or a
//! registry session compute, the entropy a driver hands in for nonces, and what a refused
//! proof is counted as.
//!
//! A driver puts the cluster's [`ClusterKey`]s (from [`ClusterKey::from_hex`] or
//! [`ClusterKey::from_token`]) in [`Config::cluster_keys`](crate::config::Config::cluster_keys)
//! and, as [`ClusterKeys`], in the registry server's and client's configurations, hands the
//! core 32 bytes of OS randomness as [`NonceEntropy`], and reads [`AuthRefusals`] (counted by [`AuthFailure`]) from
//! [`Inspect::auth_refusals`](crate::Inspect::auth_refusals) for its metrics. The exchange itself
//! runs inside the link machine ([`bus::links`](crate::bus::links)) and the registry
//! machines; [`Transcript`], [`ClusterKeys::prove`] and [`ClusterKeys::check`] are public so
//! that a peer implementation, a test or a fuzz target can compute and judge proofs exactly
//! as the core does.
//!
//! # The exchange (challenge-response)
//!
//! With cluster keys configured, the exchange is:
//!
//! 1. dialler → `Hello{.., challenge: {Nd, key id}}` (Nd: 32 fresh random bytes);
//! 2. acceptor → `HelloAck{.., nonce: Na, proof: Pa}` with
//!    `Pa = HMAC-SHA256(K, transcript(ROLE_ACCEPTOR))`;
//! 3. the dialler checks `Pa` against its keys, then → `Auth{proof: Pd}` with
//!    `Pd = HMAC-SHA256(K, transcript(ROLE_DIALLER))`, and its link is up;
//! 4. the acceptor checks `Pd`; its link is up only then.
//!
//! The transcript ([`Transcript::bytes`]) is the protocol's label ([`Context`]: bus links and
//! registry sessions each have their own, so a proof of one never checks as the other), the
//! role byte, the key id the dialler's `Hello` named, the acceptor's result, both nonces, both
//! node ids and incarnations and both version ranges (dialler's first): a proof is bound to
//! this one exchange, cannot be reflected (the role differs) and cannot be replayed (the other
//! side's nonce is fresh). A proof carries a 1-byte key id (derived from the key, see
//! [`ClusterKey::id`]) so the checker knows which of its (at most two) keys to try; the MAC
//! covers that id too. The `Hello` names the dialler's current key; the acceptor proves with
//! that key when it holds it (else with its current one), and the dialler proves with the key
//! the acceptor used when it holds it: so a node on `[new, old]` links with nodes on `[old]`
//! and on `[new]` — the rotation window — while checks accept either key. Since the named key
//! is in both transcripts, a man in the middle who rewrites it (to force the older key during
//! a rotation) makes the acceptor's proof fail at the dialler; since the result is in the
//! acceptor's transcript, a refusal can be proven ([`Transcript::result`]) and an accepting
//! answer cannot be turned into a refusal that checks.
//!
//! A refusal is believed only when proven: with keys, a `HelloAck` refusing the link counts
//! as the peer's word only when it carries the acceptor's nonce and a proof over a transcript
//! with that result. Anyone who can answer a dial can send an unproven one; the link machine
//! treats it as a failed dial ([`LinkError::UnprovenRefusal`](crate::bus::links::LinkError)).
//!
//! Nonces come from a [`NonceSource`] keyed from the driver's [`NonceEntropy`] (OS
//! randomness) and the node's seeded [`Rng`](crate::rng::Rng). A node with keys refuses to
//! start without entropy (its nonces would repeat after every restart); the simulator and
//! tests opt in to fixed nonces explicitly ([`NonceEntropy::deterministic_for_tests`]).
//! Without keys nothing is proved or checked (as before).
//!
//! Keys are wiped from memory when dropped ([`zeroize`]).

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

use crate::{
    ids::NodeId,
    wire::{MAC_LEN, NONCE_LEN, Nonce, Proof, RefuseReason, VersionRange},
};

/// Length of a cluster key.
pub const KEY_LEN: usize = 32;

/// The most keys a node holds at once (current + next).
pub const MAX_KEYS: usize = 2;

/// The role byte of the acceptor's proof (in `HelloAck`).
pub const ROLE_ACCEPTOR: u8 = b'a';
/// The role byte of the dialler's proof (in `Auth`).
pub const ROLE_DIALLER: u8 = b'd';

/// Length of a [`Context`] label.
const LABEL_LEN: usize = 14;

/// Which protocol a handshake belongs to; its label opens the transcript, so a proof made for
/// a bus link never checks for a registry session, nor the reverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    /// A bus link between two nodes: `"sb-bus-auth-v2"`.
    Bus,
    /// A registry session (client → registry server): `"sb-reg-auth-v2"`.
    Registry,
}

impl Context {
    /// The label the transcript starts with.
    #[must_use]
    pub const fn label(self) -> &'static [u8; LABEL_LEN] {
        match self {
            Context::Bus => b"sb-bus-auth-v2",
            Context::Registry => b"sb-reg-auth-v2",
        }
    }
}

type HmacSha256 = Hmac<Sha256>;

/// A 32-byte cluster key. Its `Debug` never shows the bytes; its bytes are overwritten with
/// zeros when it is dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterKey([u8; KEY_LEN]);

impl Drop for ClusterKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl core::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

impl ClusterKey {
    /// The key with these bytes.
    #[must_use]
    pub const fn new(bytes: [u8; KEY_LEN]) -> ClusterKey {
        ClusterKey(bytes)
    }

    /// The key derived from a legacy cluster token (`cluster_token` in a config file):
    /// SHA-256 of `"sb-token-v1"` and the token.
    #[must_use]
    pub fn from_token(token: &[u8]) -> ClusterKey {
        let mut h = Sha256::new();
        h.update(b"sb-token-v1");
        h.update(token);
        ClusterKey(h.finalize().into())
    }

    /// The key from 64 hex characters (either case); `None` for anything else.
    #[must_use]
    pub fn from_hex(text: &str) -> Option<ClusterKey> {
        let bytes = text.as_bytes();
        if bytes.len() != 2 * KEY_LEN {
            return None;
        }
        let mut key = ClusterKey([0u8; KEY_LEN]);
        for (o, pair) in key.0.iter_mut().zip(bytes.chunks_exact(2)) {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            *o = u8::try_from(hi * 16 + lo).ok()?;
        }
        Some(key)
    }

    /// The key's bytes (to write a key file; never log them).
    #[must_use]
    pub fn expose(&self) -> &[u8; KEY_LEN] {
        &self.0
    }

    /// The key's 1-byte id, sent with every proof: the first byte of SHA-256 of
    /// `"sb-key-id-v1"` and the key. Two keys may share an id (1 in 256); the checker then
    /// tries both.
    #[must_use]
    pub fn id(&self) -> u8 {
        let mut h = Sha256::new();
        h.update(b"sb-key-id-v1");
        h.update(self.0);
        h.finalize()[0]
    }
}

/// The keys a node proves and checks with: the first proves, any checks. Empty: no
/// authentication.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterKeys {
    keys: alloc::vec::Vec<(u8, ClusterKey)>,
}

impl ClusterKeys {
    /// The keys, current first; at most [`MAX_KEYS`] are kept.
    #[must_use]
    pub fn new(keys: &[ClusterKey]) -> ClusterKeys {
        ClusterKeys {
            keys: keys
                .iter()
                .take(MAX_KEYS)
                .map(|k| (k.id(), k.clone()))
                .collect(),
        }
    }

    /// Whether authentication is on.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The id of the current key (`None` without keys).
    #[must_use]
    pub fn current_id(&self) -> Option<u8> {
        self.keys.first().map(|(id, _)| *id)
    }

    /// This node's proof for `transcript` with its current key; `None` without keys.
    #[must_use]
    pub fn prove(&self, transcript: &Transcript) -> Option<Proof> {
        self.prove_with(transcript, None)
    }

    /// This node's proof for `transcript` with the key of id `preferred` (the one the peer
    /// proves with) when this node holds it, else with its current key; `None` without keys.
    /// So a node on `[new, old]` and a node still on `[old]` agree on `old`.
    #[must_use]
    pub fn prove_with(&self, transcript: &Transcript, preferred: Option<u8>) -> Option<Proof> {
        let (id, key) = preferred
            .and_then(|p| self.keys.iter().find(|(id, _)| *id == p))
            .or_else(|| self.keys.first())?;
        Some(Proof {
            key_id: *id,
            mac: mac(key, &transcript.bytes(), *id),
        })
    }

    /// Checks a peer's proof of `transcript` against every key with its key id (constant
    /// time per key).
    ///
    /// # Errors
    ///
    /// [`AuthFailure::NoProof`], [`AuthFailure::UnknownKey`] (no key has that id) or
    /// [`AuthFailure::BadProof`].
    pub fn check(&self, transcript: &Transcript, proof: Option<&Proof>) -> Result<(), AuthFailure> {
        let proof = proof.ok_or(AuthFailure::NoProof)?;
        let bytes = transcript.bytes();
        let mut known = false;
        for (id, key) in &self.keys {
            if *id != proof.key_id {
                continue;
            }
            known = true;
            let mut m =
                <HmacSha256 as Mac>::new_from_slice(&key.0).expect("HMAC takes keys of any length");
            m.update(&bytes);
            m.update(&[*id]);
            if m.verify_slice(&proof.mac).is_ok() {
                return Ok(());
            }
        }
        Err(if known {
            AuthFailure::BadProof
        } else {
            AuthFailure::UnknownKey
        })
    }
}

/// A proof's MAC: HMAC-SHA256 under `key` of the transcript bytes, then the key's id.
fn mac(key: &ClusterKey, transcript: &[u8], key_id: u8) -> [u8; MAC_LEN] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(&key.0).expect("HMAC takes keys of any length");
    m.update(transcript);
    m.update(&[key_id]);
    m.finalize().into_bytes().into()
}

/// One side of a handshake as the transcript names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// Its node id (the registry server: 0).
    pub node: NodeId,
    /// Its incarnation (the registry server: its epoch).
    pub incarnation: u64,
    /// The versions it announced.
    pub versions: VersionRange,
    /// Its nonce.
    pub nonce: Nonce,
}

/// Everything a proof covers: both sides of one handshake, which protocol it is, the key the
/// dialler named and the acceptor's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transcript {
    /// The protocol ([`Context::Bus`] or [`Context::Registry`]).
    pub context: Context,
    /// [`ROLE_ACCEPTOR`] or [`ROLE_DIALLER`]: whose proof this is.
    pub role: u8,
    /// The key id the dialler's `Hello` named (its current key).
    pub hint: u8,
    /// The acceptor's answer in its `HelloAck`: `Ok`, or the refusal it proves.
    pub result: Result<(), RefuseReason>,
    /// The side that dialled (sent `Hello`).
    pub dialler: Side,
    /// The side that accepted (sent `HelloAck`).
    pub acceptor: Side,
}

/// Length of [`Transcript::bytes`].
pub const TRANSCRIPT_LEN: usize = LABEL_LEN + 3 + 2 * (NONCE_LEN + 8 + 8 + 4);

impl Transcript {
    /// The bytes the HMAC covers: the context's label, role, the dialler's named key id, the
    /// result (0 = accepted, else the refusal's code), dialler nonce, acceptor nonce, then
    /// per side (dialler first) id, incarnation (little-endian `u64`) and version min/max
    /// (little-endian `u16`). The MAC then covers the prover's key id
    /// ([`ClusterKeys::prove_with`]).
    #[must_use]
    pub fn bytes(&self) -> [u8; TRANSCRIPT_LEN] {
        let mut out = [0u8; TRANSCRIPT_LEN];
        let mut at = 0;
        let mut put = |b: &[u8]| {
            out[at..at + b.len()].copy_from_slice(b);
            at += b.len();
        };
        put(self.context.label());
        put(&[
            self.role,
            self.hint,
            self.result.err().map_or(0, RefuseReason::code),
        ]);
        put(&self.dialler.nonce);
        put(&self.acceptor.nonce);
        for side in [&self.dialler, &self.acceptor] {
            put(&side.node.0.to_le_bytes());
            put(&side.incarnation.to_le_bytes());
            put(&side.versions.min.to_le_bytes());
            put(&side.versions.max.to_le_bytes());
        }
        out
    }
}

/// Why a peer failed authentication (each kind is counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AuthFailure {
    /// The peer sent no nonce or no proof while this node has keys (or the reverse: it proved
    /// nothing where a proof was due).
    NoProof,
    /// The proof names a key this node holds but does not check.
    BadProof,
    /// The dialler's nonce was seen recently: a recorded handshake replayed.
    Replay,
    /// The proof names a key this node does not hold.
    UnknownKey,
    /// A frame other than the handshake's arrived before the proof checked.
    BeforeAuth,
    /// The peer closed the connection after this side sent its proof and before proving
    /// itself: typically a peer holding only a retired key, which cannot check our proof.
    Aborted,
    /// The handshake did not complete within the bound this side allows it.
    TimedOut,
}

impl AuthFailure {
    /// Every kind.
    pub const ALL: [AuthFailure; 7] = [
        AuthFailure::NoProof,
        AuthFailure::BadProof,
        AuthFailure::Replay,
        AuthFailure::UnknownKey,
        AuthFailure::BeforeAuth,
        AuthFailure::Aborted,
        AuthFailure::TimedOut,
    ];

    /// Its name in metrics and logs: `no_proof`, `bad_proof`, `replay`, `unknown_key`,
    /// `before_auth`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            AuthFailure::NoProof => "no_proof",
            AuthFailure::BadProof => "bad_proof",
            AuthFailure::Replay => "replay",
            AuthFailure::UnknownKey => "unknown_key",
            AuthFailure::BeforeAuth => "before_auth",
            AuthFailure::Aborted => "aborted",
            AuthFailure::TimedOut => "timed_out",
        }
    }
}

/// Counts of refused handshakes by [`AuthFailure`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct AuthRefusals {
    /// [`AuthFailure::NoProof`].
    pub no_proof: u64,
    /// [`AuthFailure::BadProof`].
    pub bad_proof: u64,
    /// [`AuthFailure::Replay`].
    pub replay: u64,
    /// [`AuthFailure::UnknownKey`].
    pub unknown_key: u64,
    /// [`AuthFailure::BeforeAuth`].
    pub before_auth: u64,
    /// [`AuthFailure::Aborted`].
    pub aborted: u64,
    /// [`AuthFailure::TimedOut`].
    pub timed_out: u64,
}

impl AuthRefusals {
    /// Counts one refusal.
    pub fn count(&mut self, failure: AuthFailure) {
        let n = match failure {
            AuthFailure::NoProof => &mut self.no_proof,
            AuthFailure::BadProof => &mut self.bad_proof,
            AuthFailure::Replay => &mut self.replay,
            AuthFailure::UnknownKey => &mut self.unknown_key,
            AuthFailure::BeforeAuth => &mut self.before_auth,
            AuthFailure::Aborted => &mut self.aborted,
            AuthFailure::TimedOut => &mut self.timed_out,
        };
        *n += 1;
    }

    /// Every refusal.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.no_proof
            + self.bad_proof
            + self.replay
            + self.unknown_key
            + self.before_auth
            + self.aborted
            + self.timed_out
    }

    /// The count of one kind.
    #[must_use]
    pub const fn of(&self, failure: AuthFailure) -> u64 {
        match failure {
            AuthFailure::NoProof => self.no_proof,
            AuthFailure::BadProof => self.bad_proof,
            AuthFailure::Replay => self.replay,
            AuthFailure::UnknownKey => self.unknown_key,
            AuthFailure::BeforeAuth => self.before_auth,
            AuthFailure::Aborted => self.aborted,
            AuthFailure::TimedOut => self.timed_out,
        }
    }
}

/// Recently seen dialler nonces (the acceptor's replay guard), the last
/// [`ReplayGuard::CAPACITY`] of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplayGuard {
    order: alloc::collections::VecDeque<Nonce>,
    seen: alloc::collections::BTreeSet<Nonce>,
}

impl ReplayGuard {
    /// Nonces remembered.
    pub(crate) const CAPACITY: usize = 4096;

    /// Records `nonce`; `false` if it was already seen (a replay).
    pub(crate) fn admit(&mut self, nonce: Nonce) -> bool {
        if !self.seen.insert(nonce) {
            return false;
        }
        self.order.push_back(nonce);
        if self.order.len() > Self::CAPACITY
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        true
    }
}

/// 32 bytes of operating-system randomness a driver hands to the core for its handshake
/// nonces (the core reads no randomness itself). All zeros — the default — means none was
/// given: a node with cluster keys refuses to start so
/// ([`ConfigError::NoNonceEntropy`](crate::config::ConfigError::NoNonceEntropy)), since its
/// nonces would repeat after every restart. The simulator and tests that need a replayable
/// run opt in with [`deterministic_for_tests`](Self::deterministic_for_tests).
/// Its `Debug` never shows the bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct NonceEntropy(pub [u8; 32]);

impl NonceEntropy {
    /// Fixed, publicly known bytes: nonces then follow the node's seed alone, so a seeded
    /// run replays. For the simulator and tests only — a deployed node using it has
    /// predictable nonces (and an in-memory replay guard that forgets on restart).
    #[must_use]
    pub const fn deterministic_for_tests() -> NonceEntropy {
        NonceEntropy(*b"sb-deterministic-nonces-for-test")
    }

    /// Whether no entropy was given (all zeros).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 32]
    }
}

impl core::fmt::Debug for NonceEntropy {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(if self.is_empty() {
            "NonceEntropy(none)"
        } else {
            "NonceEntropy(..)"
        })
    }
}

/// Handshake nonces: SHA-256 of a 32-byte secret and a counter. The secret hashes the
/// driver's [`NonceEntropy`] (256 bits from the operating system) with 32 bytes drawn once
/// from a seeded [`Rng`](crate::rng::Rng), so it is as hard to guess as the OS randomness,
/// and two sources of one process (bus links, registry client) never share it. Without
/// entropy it is deterministic for a given seed (the simulator replays). A nonce seen on the
/// wire reveals neither the secret nor the next nonce.
#[derive(Clone)]
pub struct NonceSource {
    secret: [u8; 32],
    counter: u64,
}

impl Drop for NonceSource {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

impl core::fmt::Debug for NonceSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("NonceSource(..)")
    }
}

impl NonceSource {
    /// A source whose secret hashes `entropy` with 32 bytes drawn from `rng`.
    pub fn new(entropy: &NonceEntropy, rng: &mut crate::rng::Rng) -> NonceSource {
        let mut h = Sha256::new();
        h.update(b"sb-nonce-secret-v1");
        h.update(entropy.0);
        for _ in 0..4 {
            h.update(rng.next_u64().to_le_bytes());
        }
        NonceSource {
            secret: h.finalize().into(),
            counter: 0,
        }
    }

    /// A fresh nonce.
    pub fn next_nonce(&mut self) -> Nonce {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(b"sb-nonce-v1");
        h.update(self.secret);
        h.update(self.counter.to_le_bytes());
        h.finalize().into()
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::bus::handshake::PROTOCOL_VERSIONS;

    /// HMAC-SHA256 of `data` under `key` (the primitive the proofs use, checked against RFC 4231).
    fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; MAC_LEN] {
        let mut m =
            <HmacSha256 as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
        m.update(data);
        m.finalize().into_bytes().into()
    }

    fn hex(bytes: &[u8]) -> alloc::string::String {
        use core::fmt::Write;
        let mut s = alloc::string::String::new();
        for b in bytes {
            write!(s, "{b:02x}").expect("writes to a string");
        }
        s
    }

    fn transcript(role: u8) -> Transcript {
        let side = |node, incarnation, nonce| Side {
            node: NodeId(node),
            incarnation,
            versions: PROTOCOL_VERSIONS,
            nonce: [nonce; NONCE_LEN],
        };
        Transcript {
            context: Context::Bus,
            role,
            hint: 0x5a,
            result: Ok(()),
            dialler: side(1, 7, 0x11),
            acceptor: side(2, 9, 0x22),
        }
    }

    #[test]
    fn hmac_matches_rfc4231_test_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// The MACs of fixed transcripts, computed outside Rust (Python's `hmac`/`hashlib` over
    /// the same 121 bytes followed by the key id byte): label `sb-bus-auth-v2` or
    /// `sb-reg-auth-v2`, role `a`, named key 0x5a, result 0 (or 3, `DuplicateId`), nonces
    /// 0x11… and 0x22…, sides (1, 7, 1..=1) and (2, 9, 1..=1), key 0x42….
    #[test]
    fn proof_bytes_are_pinned() {
        let keys = ClusterKeys::new(&[ClusterKey::new([0x42; KEY_LEN])]);
        let t = transcript(ROLE_ACCEPTOR);
        let proof = keys.prove(&t).expect("a key");
        assert_eq!(proof.key_id, ClusterKey::new([0x42; KEY_LEN]).id());
        assert_eq!(hex(&[proof.key_id]), "d2");
        assert_eq!(
            hex(&proof.mac),
            "eb24be170d453ce22f55c997dc77a140fb58dc1f9e7a64c47a43d337666bb094"
        );
        assert_eq!(t.bytes().len(), 121);
        assert_eq!(&t.bytes()[..17], b"sb-bus-auth-v2a\x5a\x00");
        let registry = Transcript {
            context: Context::Registry,
            ..t
        };
        assert_eq!(
            hex(&keys.prove(&registry).expect("a key").mac),
            "101c0f4ef8858ac2e98549e95f69d92e4aa5960e5d2ab93ab6267384da35aa01"
        );
        let refusal = Transcript {
            result: Err(RefuseReason::DuplicateId),
            ..t
        };
        assert_eq!(
            hex(&keys.prove(&refusal).expect("a key").mac),
            "fb197861348569f2d435fc8c9bedbae82486511aad16df17bb065c3bc33542c8"
        );
    }

    /// Domain separation, the named key, the result and the prover's key id are all bound:
    /// changing any one makes a proof fail.
    #[test]
    fn context_named_key_result_and_key_id_are_bound() {
        let key = ClusterKey::new([1; KEY_LEN]);
        let keys = ClusterKeys::new(core::slice::from_ref(&key));
        let t = transcript(ROLE_ACCEPTOR);
        let proof = keys.prove(&t).expect("a key");
        assert_eq!(keys.check(&t, Some(&proof)), Ok(()));
        let variants = [
            Transcript {
                context: Context::Registry,
                ..t
            },
            Transcript { hint: 0x5b, ..t },
            Transcript {
                result: Err(RefuseReason::WrongCluster),
                ..t
            },
        ];
        for other in variants {
            assert_eq!(
                keys.check(&other, Some(&proof)),
                Err(AuthFailure::BadProof),
                "{other:?}"
            );
        }
        // The same MAC under another key id (a checker holding a second key of that id
        // would try it): the id is inside the MAC, so the MAC no longer checks even with
        // the right key.
        let mut relabelled = proof;
        relabelled.key_id ^= 1;
        let same_key_other_id = ClusterKeys {
            keys: alloc::vec![(relabelled.key_id, key.clone())],
        };
        assert_eq!(
            same_key_other_id.check(&t, Some(&relabelled)),
            Err(AuthFailure::BadProof)
        );
        assert_eq!(hex(&mac(&key, &t.bytes(), proof.key_id)), hex(&proof.mac));
    }

    #[test]
    fn the_test_entropy_is_not_empty_and_fixed() {
        let e = NonceEntropy::deterministic_for_tests();
        assert!(!e.is_empty());
        assert_eq!(e, NonceEntropy::deterministic_for_tests());
        assert_eq!(&e.0, b"sb-deterministic-nonces-for-test");
    }

    #[test]
    fn a_proof_checks_only_for_its_own_transcript_and_key() {
        let a = ClusterKey::new([1; KEY_LEN]);
        let b = ClusterKey::new([2; KEY_LEN]);
        let keys_a = ClusterKeys::new(core::slice::from_ref(&a));
        let keys_b = ClusterKeys::new(core::slice::from_ref(&b));
        let t = transcript(ROLE_DIALLER);
        let proof = keys_a.prove(&t).expect("a key");
        assert_eq!(keys_a.check(&t, Some(&proof)), Ok(()));
        assert_eq!(keys_a.check(&t, None), Err(AuthFailure::NoProof));
        assert_eq!(keys_b.check(&t, Some(&proof)), Err(AuthFailure::UnknownKey));
        // The other role (reflection), another nonce, a flipped bit: bad proof.
        assert_eq!(
            keys_a.check(&transcript(ROLE_ACCEPTOR), Some(&proof)),
            Err(AuthFailure::BadProof)
        );
        let mut other = t;
        other.acceptor.nonce[0] ^= 1;
        assert_eq!(
            keys_a.check(&other, Some(&proof)),
            Err(AuthFailure::BadProof)
        );
        let mut tampered = proof;
        tampered.mac[31] ^= 0x80;
        assert_eq!(
            keys_a.check(&t, Some(&tampered)),
            Err(AuthFailure::BadProof)
        );
        // Rotation: [b, a] proves with b and checks both.
        let both = ClusterKeys::new(&[b, a]);
        assert_eq!(both.check(&t, Some(&proof)), Ok(()));
        let by_both = both.prove(&t).expect("a key");
        assert_eq!(keys_b.check(&t, Some(&by_both)), Ok(()));
        assert_eq!(
            keys_a.check(&t, Some(&by_both)),
            Err(AuthFailure::UnknownKey)
        );
        assert!(!ClusterKeys::default().is_enabled());
        assert_eq!(ClusterKeys::default().prove(&t), None);
    }

    #[test]
    fn keys_parse_from_hex_and_never_print() {
        let text = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        let key = ClusterKey::from_hex(text).expect("64 hex characters");
        assert_eq!(key.expose()[1], 0x11);
        assert_eq!(alloc::format!("{key:?}"), "ClusterKey(..)");
        assert!(!alloc::format!("{:?}", ClusterKeys::new(&[key])).contains("11"));
        assert_eq!(ClusterKey::from_hex(&text[1..]), None);
        assert_eq!(ClusterKey::from_hex(&text.replace('0', "g")), None);
        assert_eq!(
            ClusterKey::from_hex(&alloc::format!("{}+", &text[1..])),
            None
        );
    }

    #[test]
    fn nonces_follow_the_drivers_entropy_and_replay_without_it() {
        use crate::rng::Rng;
        let first =
            |entropy: NonceEntropy| NonceSource::new(&entropy, &mut Rng::new(7)).next_nonce();
        let none = NonceEntropy::default();
        let os_a = NonceEntropy([0xa5; 32]);
        let os_b = NonceEntropy([0x5a; 32]);
        // Same seed, no entropy: the simulator's replay.
        assert_eq!(first(none), first(none));
        // Same seed, different OS bytes: different secrets, different nonces.
        assert_ne!(first(os_a), first(os_b));
        assert_ne!(first(os_a), first(none));
        // Two sources of one process (same entropy, the rng drawn on) never share a secret.
        let mut rng = Rng::new(7);
        let mut links = NonceSource::new(&os_a, &mut rng);
        let mut client = NonceSource::new(&os_a, &mut rng);
        assert_ne!(links.next_nonce(), client.next_nonce());
        // Successive nonces differ.
        let mut source = NonceSource::new(&os_a, &mut Rng::new(7));
        assert_ne!(source.next_nonce(), source.next_nonce());
        // The bytes never show.
        assert_eq!(alloc::format!("{os_a:?}"), "NonceEntropy(..)");
        assert_eq!(alloc::format!("{none:?}"), "NonceEntropy(none)");
        assert!(none.is_empty() && !os_a.is_empty());
    }

    #[test]
    fn the_replay_guard_refuses_a_repeated_nonce() {
        let mut guard = ReplayGuard::default();
        assert!(guard.admit([1; NONCE_LEN]));
        assert!(!guard.admit([1; NONCE_LEN]));
        assert!(guard.admit([2; NONCE_LEN]));
    }
}
