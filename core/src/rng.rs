//! The core's own pseudo-random generator.
//!
//! Jitter, random picks and incarnation ids draw from an [`Rng`] that the owner seeds from
//! config. There is no global generator and no `RandomState`: a run with the same seed and the
//! same inputs makes the same choices, which is what lets the simulator replay a seed.
//!
//! The generator is xoshiro256** (Blackman & Vigna), seeded through splitmix64 so that any
//! `u64` — including 0 — gives a well-mixed state.

/// One step of splitmix64: advances `state` and returns a well-mixed 64-bit value.
///
/// Also used as a cheap, high-quality integer mixer elsewhere in the core.
#[must_use]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix64(*state)
}

/// The splitmix64 finaliser: a bijective mixer of one `u64`.
#[must_use]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed from fresh process entropy a driver gathered (the core reads none itself): `random`
/// from the OS (e.g. a randomly keyed hasher's output), the wall clock in nanoseconds since
/// the Unix epoch and the process id, mixed into one well-spread `u64`. Drivers mix it into
/// `Config::rng_seed` so a restarted node is a new incarnation whatever seed it was given.
#[must_use]
pub const fn entropy_seed(random: u64, unix_nanos: u128, pid: u32) -> u64 {
    let mut state = random;
    state ^= mix64(state.wrapping_add(unix_nanos as u64));
    state ^= mix64(state.wrapping_add((unix_nanos >> 64) as u64));
    mix64(state ^ mix64(pid as u64))
}

/// The two generators of one node, from its `seed` (`Config::rng_seed`), its `id` and its
/// start time in nanoseconds: the node's own (the connector's jitter, random picks) and the
/// bus's (incarnations, the outboxes, the links, the RPC dedup seed). The bus draws from its
/// own generator, so incarnations and the connector's jitter and random target picks do not
/// disturb each other's sequences; the start time is mixed in so a node restarted with the
/// same seed is a new incarnation.
#[must_use]
pub(crate) fn node_rngs(seed: u64, id: u64, start_nanos: u64) -> (Rng, Rng) {
    let mut id_state = id;
    let node = Rng::new(seed ^ splitmix64(&mut id_state));
    let bus = Rng::new(seed ^ mix64(id ^ 0xb05) ^ mix64(start_nanos.wrapping_add(1)));
    (node, bus)
}

/// A seeded xoshiro256** generator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole future is fixed by `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Rng {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform value in `0..bound`; `0` when `bound` is 0.
    ///
    /// Lemire's multiply-and-reject method: unbiased, one multiplication in the common case.
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(bound);
            // Truncations are the method: low half decides rejection, high half is the value.
            let low = m as u64;
            if low >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform value in the inclusive range `lo..=hi` (returns `lo` if `hi < lo`).
    pub fn in_range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(),
        }
    }

    /// A new generator derived from this one, for a sub-component that needs its own stream.
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_different_seeds_differ() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let mut c = Rng::new(43);
        let xs: [u64; 4] = core::array::from_fn(|_| a.next_u64());
        let ys: [u64; 4] = core::array::from_fn(|_| b.next_u64());
        let zs: [u64; 4] = core::array::from_fn(|_| c.next_u64());
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn entropy_seeds_differ_in_every_input() {
        let base = entropy_seed(1, 2, 3);
        assert_eq!(base, entropy_seed(1, 2, 3));
        for other in [
            entropy_seed(2, 2, 3),
            entropy_seed(1, 3, 3),
            entropy_seed(1, 2 | (1 << 64), 3),
            entropy_seed(1, 2, 4),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn splitmix_known_answers() {
        // Reference values of splitmix64 seeded with 0 (Vigna's C reference implementation).
        let mut s = 0u64;
        assert_eq!(splitmix64(&mut s), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut s), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(splitmix64(&mut s), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn below_stays_in_bounds_and_covers_every_value() {
        let mut rng = Rng::new(7);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let v = rng.below(10);
            assert!(v < 10);
            seen[usize::try_from(v).expect("v < 10")] += 1;
        }
        // Each bucket expects 1000; a fair generator stays well inside ±20 %.
        for count in seen {
            assert!((800..=1200).contains(&count), "bucket count {count}");
        }
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn in_range_handles_degenerate_and_full_ranges() {
        let mut rng = Rng::new(1);
        assert_eq!(rng.in_range(5, 5), 5);
        assert_eq!(rng.in_range(9, 3), 9);
        for _ in 0..1000 {
            let v = rng.in_range(100, 110);
            assert!((100..=110).contains(&v));
        }
        // The full u64 range must not overflow.
        let _ = rng.in_range(0, u64::MAX);
    }
}
