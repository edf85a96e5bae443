//! Ring hashing: where nodes and keys land on the consistent-hash ring.
//!
//! Three modes share one ring layout ([`HashMode`]). **Fast** (the default) hashes each node
//! once with a strong hash and derives its points with the splitmix64 stream, so a node costs
//! one hash plus one integer mix per point; it does not interoperate with libatapp.
//! The two **libatapp** modes reproduce the placement of libatapp's `etcd_discovery_set`
//! (`src/atframe/etcdcli/etcd_discovery.cpp`) in the two layouts it has shipped:
//!
//! - [`HashMode::LibatappV012`] — released libatapp, tags v0.11.0 through v0.12.5: half the
//!   points are `murmur3_x64_128(id as 8 little-endian bytes, seed = i)` and, for a node with
//!   a name, the other half `murmur3_x64_128(name, seed = i)`, `i` in `0..points / 2` (an
//!   id-only node has only the id half);
//! - [`HashMode::LibatappMain`] — libatapp `main` since commit `45f5fda` (2024-12-26, in no tag
//!   yet): every point is `murmur3_x64_128(name, seed = i)`, `i` in `0..points` (an id-only
//!   node hashes its 8 little-endian id bytes instead).
//!
//! In both, keys are hashed with [`LIBATAPP_KEY_SEED`] and positions compare as the 128-bit
//! `(h1, h2)` pair, so a mixed C++/Rust cluster running the matching libatapp version places a
//! key on the same node. Both are checked against key → owner vectors produced by a C++
//! reproduction of upstream's placement and lookup (`benches/cpp/libatapp_ring.cpp`,
//! `core/tests/libatapp_vectors.rs`). Exact 128-bit ties between two nodes are broken by node
//! id (libatapp `main` compares the stateful pod index first; such a tie needs two nodes with
//! equal 128-bit point hashes, i.e. equal names, which a discovery set cannot hold).
//!
//! [`murmur3_x64_128`] is Austin Appleby's MurmurHash3 x64 128-bit variant, written here from
//! the algorithm in safe Rust; it returns `(h1, h2)` exactly as the reference `out[0], out[1]`.

use crate::{ids::NodeId, rng::mix64};

/// The seed libatapp uses to hash lookup keys (`LIBATAPP_MACRO_HASH_MAGIC_NUMBER`).
pub const LIBATAPP_KEY_SEED: u32 = 0x0100_0193;

/// The seed fast mode uses for its one strong hash per node.
pub const FAST_NODE_SEED: u32 = 0x5eed_0001;

/// Increment of the splitmix64 stream that turns a node hash into its points (the golden
/// ratio, odd, so the first 2^64 points of one node are all distinct).
const POINT_STREAM_STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// How ring positions are computed; chosen once per ring in its config.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HashMode {
    /// One murmur3 hash per node, then `mix64` of a splitmix64 stream per point; positions are
    /// 64-bit and ties (two points on the same 64-bit position) are broken by node id.
    #[default]
    Fast,
    /// libatapp `main` since commit `45f5fda` (2024-12-26, unreleased): every point is
    /// murmur3_x64_128 of the node name (of the 8 little-endian id bytes for an id-only node)
    /// with seed = point index, ordered by the 128-bit `(h1, h2)` pair, ties broken by node id.
    /// Costs one murmur3 per point. Config spelling `libatapp-main`.
    LibatappMain,
    /// libatapp releases v0.11.0 to v0.12.5: `points / 2` points hash the 8 little-endian id
    /// bytes and, when the node has a name, `points / 2` more hash the name, seeds
    /// `0..points / 2` each; otherwise as [`HashMode::LibatappMain`]. Config spelling
    /// `libatapp-v0.12`.
    LibatappV012,
}

impl HashMode {
    /// Every mode with its config spelling.
    pub const ALL: [(HashMode, &'static str); 3] = [
        (HashMode::Fast, "fast"),
        (HashMode::LibatappMain, "libatapp-main"),
        (HashMode::LibatappV012, "libatapp-v0.12"),
    ];

    /// The mode's config spelling (`fast`, `libatapp-main`, `libatapp-v0.12`).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            HashMode::Fast => "fast",
            HashMode::LibatappMain => "libatapp-main",
            HashMode::LibatappV012 => "libatapp-v0.12",
        }
    }

    /// Parses a config spelling; also accepts `libatapp-v0.11` (same layout as v0.12) and
    /// `libatapp-v0.12.5`.
    #[must_use]
    pub fn parse(s: &str) -> Option<HashMode> {
        match s {
            "fast" => Some(HashMode::Fast),
            "libatapp-main" => Some(HashMode::LibatappMain),
            "libatapp-v0.12" | "libatapp-v0.12.5" | "libatapp-v0.11" => {
                Some(HashMode::LibatappV012)
            }
            _ => None,
        }
    }

    /// Whether positions are libatapp's 128-bit murmur3 pairs (either layout).
    #[must_use]
    #[inline]
    pub const fn is_libatapp(self) -> bool {
        matches!(self, HashMode::LibatappMain | HashMode::LibatappV012)
    }

    /// Points a node gets from `points_per_node` in this mode: all of them, except in
    /// [`HashMode::LibatappV012`], where a node has `points_per_node / 2` per source (its id
    /// bytes, and its name when it has one).
    #[must_use]
    #[inline]
    pub const fn node_points(self, points_per_node: u32, name: &str) -> u32 {
        match self {
            HashMode::Fast | HashMode::LibatappMain => points_per_node,
            HashMode::LibatappV012 => {
                let half = points_per_node / 2;
                if name.is_empty() { half } else { 2 * half }
            }
        }
    }
}

impl core::fmt::Display for HashMode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Written as its config spelling ([`HashMode::as_str`]).
impl serde::Serialize for HashMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Read from a config spelling ([`HashMode::parse`]).
impl<'de> serde::Deserialize<'de> for HashMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HashMode, D::Error> {
        struct Spelling;
        impl serde::de::Visitor<'_> for Spelling {
            type Value = HashMode;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("\"fast\", \"libatapp-main\" or \"libatapp-v0.12\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HashMode, E> {
                HashMode::parse(v)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_str(Spelling)
    }
}

/// The murmur3 sources of a node's points in a libatapp mode: up to two `(bytes, count)`
/// pairs; point `i < count` of a source is `murmur3_x64_128(bytes, seed = i)`. Fast mode has
/// no murmur3 sources (empty).
#[must_use]
#[inline]
pub fn compat_sources<'a>(
    mode: HashMode,
    points_per_node: u32,
    name: &'a str,
    id_bytes: &'a [u8; 8],
) -> [(&'a [u8], u32); 2] {
    match mode {
        HashMode::Fast => [(&[], 0), (&[], 0)],
        HashMode::LibatappMain => [(node_bytes(name, id_bytes), points_per_node), (&[], 0)],
        HashMode::LibatappV012 => {
            let half = points_per_node / 2;
            let named = if name.is_empty() { 0 } else { half };
            [(id_bytes, half), (name.as_bytes(), named)]
        }
    }
}

/// A key's position on the ring: `hi` is what the ring stores and compares first (`h1`);
/// `lo` (`h2`) only breaks ties in the libatapp modes and is ignored in fast mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyHash {
    /// High 64 bits of the position (murmur3 `h1`).
    pub hi: u64,
    /// Low 64 bits of the position (murmur3 `h2`).
    pub lo: u64,
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

#[inline]
const fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

#[inline]
const fn mix_k1(k1: u64) -> u64 {
    k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

#[inline]
const fn mix_k2(k2: u64) -> u64 {
    k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

/// Little-endian value of up to 8 bytes (missing high bytes are zero), without a byte loop or
/// a variable-length copy: two overlapping loads for 4..=8 bytes, three byte loads below.
#[inline]
fn le_partial(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 8 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[..8]);
        u64::from_le_bytes(w)
    } else if n >= 4 {
        let lo = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let hi = u64::from(u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]));
        // The overlapping bytes are equal in both words, so OR puts each byte in place.
        lo | (hi << (8 * (n - 4)))
    } else if n > 0 {
        u64::from(b[0])
            | (u64::from(b[n / 2]) << (8 * (n / 2)))
            | (u64::from(b[n - 1]) << (8 * (n - 1)))
    } else {
        0
    }
}

/// The seed-independent part of murmur3_x64_128 of one input: its block and tail words,
/// already multiplied and rotated. Hashing the same bytes under many seeds (libatapp's 80
/// points per node) then costs only the per-seed rounds and finalisation.
#[derive(Clone, Debug)]
pub struct Murmur3Prepared<'a> {
    data: &'a [u8],
    tail_k1: u64,
    tail_k2: u64,
}

impl<'a> Murmur3Prepared<'a> {
    /// Prepares `data` for hashing under several seeds.
    #[must_use]
    #[inline]
    pub fn new(data: &'a [u8]) -> Murmur3Prepared<'a> {
        let tail = &data[data.len() / 16 * 16..];
        let tail_k1 = if tail.is_empty() {
            0
        } else {
            mix_k1(le_partial(&tail[..tail.len().min(8)]))
        };
        let tail_k2 = if tail.len() > 8 {
            mix_k2(le_partial(&tail[8..]))
        } else {
            0
        };
        Murmur3Prepared {
            data,
            tail_k1,
            tail_k2,
        }
    }

    /// `murmur3_x64_128(data, seed)`.
    #[must_use]
    #[inline]
    pub fn hash(&self, seed: u32) -> (u64, u64) {
        count_call();
        let mut h1 = u64::from(seed);
        let mut h2 = u64::from(seed);
        for block in self.data.chunks_exact(16) {
            let (lo, hi) = block.split_at(8);
            h1 ^= mix_k1(le_partial(lo));
            h1 = h1.rotate_left(27).wrapping_add(h2);
            h1 = h1.wrapping_mul(5).wrapping_add(0x52dc_e729);

            h2 ^= mix_k2(le_partial(hi));
            h2 = h2.rotate_left(31).wrapping_add(h1);
            h2 = h2.wrapping_mul(5).wrapping_add(0x3849_5ab5);
        }
        // Tail words of zero bytes mix to zero, so XOR-ing them in unconditionally is exact.
        h2 ^= self.tail_k2;
        h1 ^= self.tail_k1;

        // `usize` is at most 64 bits on every supported target.
        let len = self.data.len() as u64;
        h1 ^= len;
        h2 ^= len;
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        (h1, h2)
    }
}

/// MurmurHash3 x64 128-bit of `data` with `seed`; returns `(h1, h2)` as the reference
/// implementation's `out[0]` and `out[1]`.
#[must_use]
#[inline]
pub fn murmur3_x64_128(data: &[u8], seed: u32) -> (u64, u64) {
    Murmur3Prepared::new(data).hash(seed)
}

/// The position of a lookup key: murmur3_x64_128 with [`LIBATAPP_KEY_SEED`], as libatapp
/// hashes keys. Integers are hashed as their 8 little-endian bytes (see [`key_hash_u64`]).
#[must_use]
#[inline]
pub fn key_hash(key: &[u8]) -> KeyHash {
    let (hi, lo) = murmur3_x64_128(key, LIBATAPP_KEY_SEED);
    KeyHash {
        hi: test_hooks::mask(hi),
        lo,
    }
}

/// [`key_hash`] of an integer key: its 8 little-endian bytes (so `u64` 123 and `i64` 123 land
/// on the same position, as in libatapp).
#[must_use]
#[inline]
pub fn key_hash_u64(key: u64) -> KeyHash {
    key_hash(&key.to_le_bytes())
}

/// The bytes a node's points are hashed from: its name, or its 8 little-endian id bytes when
/// the name is empty (libatapp's id-only nodes).
pub(crate) fn node_bytes<'a>(name: &'a str, id_bytes: &'a [u8; 8]) -> &'a [u8] {
    if name.is_empty() {
        id_bytes
    } else {
        name.as_bytes()
    }
}

/// Fast mode's one strong hash per node.
#[must_use]
pub fn fast_node_hash(name: &str, id: NodeId) -> u64 {
    let id_bytes = id.0.to_le_bytes();
    murmur3_x64_128(node_bytes(name, &id_bytes), FAST_NODE_SEED).0
}

/// Fast mode's position of point `index` of a node whose [`fast_node_hash`] is `node_hash`:
/// element `index` of the splitmix64 stream seeded with the node hash.
#[must_use]
#[inline]
pub fn fast_point(node_hash: u64, index: u32) -> u64 {
    let step = u64::from(index)
        .wrapping_add(1)
        .wrapping_mul(POINT_STREAM_STEP);
    test_hooks::mask(mix64(node_hash.wrapping_add(step)))
}

/// Position (libatapp modes) of point `index` of the node hashed from `bytes`
/// (see `node_bytes`): `murmur3_x64_128(bytes, seed = index)`.
#[must_use]
#[inline]
pub fn compat_point(bytes: &[u8], index: u32) -> (u64, u64) {
    compat_point_prepared(&Murmur3Prepared::new(bytes), index)
}

/// [`compat_point`] of a node whose bytes were prepared once for all its points.
#[must_use]
#[inline]
pub fn compat_point_prepared(node: &Murmur3Prepared<'_>, index: u32) -> (u64, u64) {
    let (h1, h2) = node.hash(index);
    (test_hooks::mask(h1), h2)
}

#[cfg(not(test))]
#[inline(always)]
fn count_call() {}

#[cfg(test)]
fn count_call() {
    test_hooks::MURMUR_CALLS.with(|c| c.set(c.get() + 1));
}

/// Test-only hooks: a per-thread counter of murmur3 calls (to prove which operations hash) and
/// a per-thread mask on the compared 64-bit positions (to force ties and exercise the exact
/// tie-breaking paths, which real 64-bit hashes practically never reach).
pub(crate) mod test_hooks {
    #[cfg(test)]
    use core::cell::Cell;

    #[cfg(test)]
    std::thread_local! {
        pub(crate) static MURMUR_CALLS: Cell<u64> = const { Cell::new(0) };
        static POSITION_MASK: Cell<u64> = const { Cell::new(u64::MAX) };
    }

    /// Applies the test mask to a compared position (identity outside tests).
    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) const fn mask(h: u64) -> u64 {
        h
    }

    /// Applies the test mask to a compared position (identity outside tests).
    #[cfg(test)]
    pub(crate) fn mask(h: u64) -> u64 {
        h & POSITION_MASK.with(Cell::get)
    }

    #[cfg(test)]
    std::thread_local! {
        static POINT_SETS: Cell<u64> = const { Cell::new(0) };
    }

    /// Counts one computation of a node's point set (no-op outside tests).
    #[cfg(not(test))]
    #[inline(always)]
    pub(crate) fn count_point_set() {}

    /// Counts one computation of a node's point set (no-op outside tests).
    #[cfg(test)]
    pub(crate) fn count_point_set() {
        POINT_SETS.with(|c| c.set(c.get() + 1));
    }

    /// Node point sets computed by this thread so far.
    #[cfg(test)]
    pub(crate) fn point_sets() -> u64 {
        POINT_SETS.with(Cell::get)
    }

    /// Murmur3 calls made by this thread so far.
    #[cfg(test)]
    pub(crate) fn murmur_calls() -> u64 {
        MURMUR_CALLS.with(Cell::get)
    }

    /// Runs `f` with compared positions masked by `mask` on this thread.
    #[cfg(test)]
    pub(crate) fn with_position_mask<R>(mask: u64, f: impl FnOnce() -> R) -> R {
        let old = POSITION_MASK.with(|m| m.replace(mask));
        let out = f();
        POSITION_MASK.with(|m| m.set(old));
        out
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    // Expected values come from the reference C++ implementation (PyPI `mmh3`, which wraps
    // Appleby's MurmurHash3.cpp), read as the two little-endian words of the 16-byte digest.

    #[test]
    fn empty_input_seed_zero_is_zero() {
        assert_eq!(murmur3_x64_128(b"", 0), (0, 0));
    }

    #[test]
    fn published_vectors() {
        assert_eq!(
            murmur3_x64_128(b"hello", 0),
            (0xcbd8_a7b3_41bd_9b02, 0x5b1e_906a_48ae_1d19)
        );
        assert_eq!(
            murmur3_x64_128(b"The quick brown fox jumps over the lazy dog", 0),
            (0xe34b_bc7b_bc07_1b6c, 0x7a43_3ca9_c49a_9347)
        );
    }

    #[test]
    fn every_tail_length_and_multi_block_inputs() {
        const BASE: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let expected: [(usize, u64, u64); 20] = [
            (1, 0x8555_5565_f659_7889, 0xe6b5_3a48_510e_895a),
            (2, 0x938b_11ea_16ed_1b2e, 0xe65e_a701_9b52_d4ad),
            (3, 0xb496_3f3f_3fad_7867, 0x3ba2_7441_26ca_2d52),
            (4, 0xb87b_b7d6_4656_cd4f, 0xf200_3e88_6073_e875),
            (5, 0x2036_d091_f496_bbb8, 0xc5c7_eea0_4bcf_ec8c),
            (6, 0xe47d_86bf_aca3_bf55, 0xb071_0999_3321_845c),
            (7, 0xa6cd_2f9f_c09e_e499, 0x1c3a_a23a_b155_bbb6),
            (8, 0xcc8a_0ab0_37ef_8c02, 0x4889_0d60_eb69_40a1),
            (9, 0x0547_c0cf_f13c_7964, 0x79b5_3df5_b741_e033),
            (10, 0xb6c1_5b0d_772f_8c99, 0xa24d_85dc_8c65_1ac9),
            (11, 0xa895_d0b8_df78_9d02, 0xbb7c_31e2_455a_e771),
            (12, 0x8ef3_9bb1_e67a_e194, 0x1f9e_3032_72ff_621c),
            (13, 0x1648_288d_a7c0_fa73, 0x2e65_7bff_0de7_cc7f),
            (14, 0x91d0_94a7_f5c3_75e0, 0xee09_6027_d26a_3324),
            (15, 0x8abe_2451_890c_2ffb, 0x6a54_8c2d_9c96_2a61),
            (16, 0xc4ca_3ca3_224c_b723, 0x4333_d695_b331_eb1a),
            (17, 0x7564_747f_88bd_a657, 0xecda_499d_a111_0de4),
            (31, 0x4bf0_6228_6356_58a8, 0xbedb_d260_90f9_ef7a),
            (32, 0x16a1_27b5_39e2_0ae3, 0xedcb_0722_a1fe_bf68),
            (33, 0xeea5_f18b_80c9_6088, 0x23bd_1bc4_319c_6f3a),
        ];
        for (len, h1, h2) in expected {
            assert_eq!(murmur3_x64_128(&BASE[..len], 0), (h1, h2), "length {len}");
        }
    }

    #[test]
    fn prepared_hashing_equals_one_shot_hashing_for_every_length_and_seed() {
        let data: Vec<u8> = (0u8..70).map(|b| b.wrapping_mul(37) ^ 0xa5).collect();
        for len in 0..=data.len() {
            let p = Murmur3Prepared::new(&data[..len]);
            for seed in [0, 1, 79, LIBATAPP_KEY_SEED, u32::MAX] {
                assert_eq!(
                    p.hash(seed),
                    one_shot_reference(&data[..len], seed),
                    "len {len}"
                );
            }
        }
    }

    /// Straight transcription of the reference algorithm (byte-wise tail, no preparation).
    fn one_shot_reference(data: &[u8], seed: u32) -> (u64, u64) {
        let (mut h1, mut h2) = (u64::from(seed), u64::from(seed));
        let nblocks = data.len() / 16;
        for i in 0..nblocks {
            let b = &data[i * 16..];
            let k1 = u64::from_le_bytes(b[..8].try_into().unwrap());
            let k2 = u64::from_le_bytes(b[8..16].try_into().unwrap());
            h1 ^= k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
            h1 = h1
                .rotate_left(27)
                .wrapping_add(h2)
                .wrapping_mul(5)
                .wrapping_add(0x52dc_e729);
            h2 ^= k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
            h2 = h2
                .rotate_left(31)
                .wrapping_add(h1)
                .wrapping_mul(5)
                .wrapping_add(0x3849_5ab5);
        }
        let tail = &data[nblocks * 16..];
        let (mut k1, mut k2) = (0u64, 0u64);
        for (i, &b) in tail.iter().enumerate() {
            if i < 8 {
                k1 ^= u64::from(b) << (8 * i);
            } else {
                k2 ^= u64::from(b) << (8 * (i - 8));
            }
        }
        if tail.len() > 8 {
            h2 ^= k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        }
        if !tail.is_empty() {
            h1 ^= k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        }
        let len = data.len() as u64;
        h1 ^= len;
        h2 ^= len;
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        (h1, h2)
    }

    #[test]
    fn seeds_are_zero_extended_u32() {
        let expected: [(u32, u64, u64); 4] = [
            (1, 0xa78d_dff5_adae_8d10, 0x1289_00ef_2090_0135),
            (79, 0xa2ef_3d6e_8378_fae6, 0x4d7f_ac24_5614_4698),
            (
                LIBATAPP_KEY_SEED,
                0xba8f_a0be_bd38_175f,
                0xfd9c_7f98_57dc_316e,
            ),
            (u32::MAX, 0x347b_ad75_d757_5e14, 0xd940_b3d7_b5fb_075c),
        ];
        for (seed, h1, h2) in expected {
            assert_eq!(murmur3_x64_128(b"hello", seed), (h1, h2), "seed {seed:#x}");
        }
    }

    #[test]
    fn integer_keys_hash_as_their_le_bytes_with_the_libatapp_seed() {
        let expected: [(u64, u64, u64); 3] = [
            (123, 0x00ef_0976_2f4d_8e07, 0x2dcd_81f5_88dd_1852),
            (0x1234_5678, 0x3b37_e112_f779_2951, 0x9471_9659_b470_4adf),
            (u64::MAX, 0xdf7e_39a3_552c_c449, 0xf944_f6fb_6a95_3679),
        ];
        for (key, hi, lo) in expected {
            assert_eq!(key_hash_u64(key), KeyHash { hi, lo }, "key {key:#x}");
        }
        // i64 123 and u64 123 share their bytes, hence their position.
        assert_eq!(key_hash(&123i64.to_le_bytes()), key_hash_u64(123));
    }

    #[test]
    fn compat_points_hash_the_name_or_the_id_bytes_with_the_point_index_as_seed() {
        let id_bytes = 0x101u64.to_le_bytes();
        let by_id = node_bytes("", &id_bytes);
        assert_eq!(
            compat_point(by_id, 0),
            (0x2f8f_cca2_a0cd_fd0a, 0x8720_e38b_dcd9_111f)
        );
        assert_eq!(
            compat_point(by_id, 1),
            (0x8dda_1f32_4f4f_392d, 0x43b5_88ab_39db_8965)
        );
        assert_eq!(
            compat_point(by_id, 79),
            (0xa5e5_fdc7_34c0_dc27, 0xed66_10a1_b992_67cb)
        );
        let by_name = node_bytes("node-1", &id_bytes);
        assert_eq!(
            compat_point(by_name, 0),
            (0xd160_1808_ef72_60a1, 0x4fc8_6cbf_7a86_f347)
        );
        assert_eq!(
            compat_point(by_name, 1),
            (0x7347_47d0_9a65_4c04, 0xad4a_bf56_bb76_7e83)
        );
        assert_eq!(
            compat_point(by_name, 79),
            (0x9ea5_3811_18a6_c88c, 0xa80d_99f7_b3f3_c534)
        );
    }

    #[test]
    fn fast_points_are_the_splitmix_stream_of_the_node_hash() {
        let h = fast_node_hash("node-1", NodeId(7));
        assert_eq!(h, murmur3_x64_128(b"node-1", FAST_NODE_SEED).0);
        // An id-only node hashes its id bytes.
        assert_eq!(
            fast_node_hash("", NodeId(0x101)),
            murmur3_x64_128(&0x101u64.to_le_bytes(), FAST_NODE_SEED).0
        );
        let mut state = h;
        for i in 0..80 {
            assert_eq!(fast_point(h, i), crate::rng::splitmix64(&mut state));
        }
    }

    #[test]
    fn modes_parse_their_spellings_and_the_v0_11_alias() {
        for (mode, spelling) in HashMode::ALL {
            assert_eq!(mode.as_str(), spelling);
            assert_eq!(HashMode::parse(spelling), Some(mode));
        }
        assert_eq!(
            HashMode::parse("libatapp-v0.11"),
            Some(HashMode::LibatappV012)
        );
        assert_eq!(
            HashMode::parse("libatapp-v0.12.5"),
            Some(HashMode::LibatappV012)
        );
        assert_eq!(HashMode::parse("libatapp"), None);
        assert_eq!(
            serde_json::to_string(&HashMode::LibatappV012).unwrap(),
            "\"libatapp-v0.12\""
        );
        assert_eq!(
            serde_json::from_str::<HashMode>("\"libatapp-main\"").unwrap(),
            HashMode::LibatappMain
        );
        assert!(serde_json::from_str::<HashMode>("\"compat\"").is_err());
    }

    #[test]
    fn v012_nodes_have_half_the_points_per_source() {
        assert_eq!(HashMode::LibatappV012.node_points(80, "a"), 80);
        assert_eq!(HashMode::LibatappV012.node_points(80, ""), 40);
        assert_eq!(HashMode::LibatappV012.node_points(3, "a"), 2);
        assert_eq!(HashMode::LibatappMain.node_points(80, ""), 80);
        let id = 5u64.to_le_bytes();
        assert_eq!(
            compat_sources(HashMode::LibatappV012, 80, "n", &id),
            [(&id[..], 40), (&b"n"[..], 40)]
        );
        assert_eq!(
            compat_sources(HashMode::LibatappMain, 80, "", &id),
            [(&id[..], 80), (&[][..], 0)]
        );
    }

    #[test]
    fn call_counter_and_mask_hooks_work_per_thread() {
        let before = test_hooks::murmur_calls();
        let _ = murmur3_x64_128(b"x", 0);
        assert_eq!(test_hooks::murmur_calls(), before + 1);
        let masked = test_hooks::with_position_mask(0xff00_0000_0000_0000, || key_hash(b"hello"));
        assert_eq!(masked.hi, key_hash(b"hello").hi & 0xff00_0000_0000_0000);
    }
}
