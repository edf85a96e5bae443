//! Reconnect delays as plain numbers: exponential, capped, jittered.
//!
//! When a link to a peer drops, the connection manager waits before it tries again. Attempt `k`
//! (counting from 0) waits `min(start · 2^k, max)` — the *base delay* — spread by [`Jitter`] so
//! that thousands of clients that lost the same server at the same moment do not all come back
//! in the same second. After `max_tries` attempts the record is given up (`0` = never). This
//! module only computes numbers: it reads no clock and owns no timer; the caller adds the delay
//! to its `now` and arms its `timer::TimerQueue`.
//!
//! libatapp uses the same formula without jitter (its test E.3: start 2 s, max 8 s gives
//! 2, 4, 8, 8, 8 s). The defaults here are ARCHITECTURE §14: 1 s / 60 s / 8 tries / ±20 %.
//!
//! All arithmetic saturates at `u64::MAX` nanoseconds (≈ 584 years), the range of
//! [`crate::time::Instant`]: a longer delay could not be turned into a deadline anyway.

use crate::{
    rng::Rng,
    time::{Duration, duration_nanos},
};

/// How a base delay is spread at random.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Jitter {
    /// No jitter: every client waits exactly the base delay (libatapp's behaviour).
    None,
    /// Uniform in `[base · (1 − p), min(base · (1 + p), max)]` with `p = percent / 100`.
    ///
    /// The upper end is clamped to the configured `max` *before* drawing, so a client at the
    /// cap draws uniformly from `[max · (1 − p), max]` rather than piling up on exactly `max`
    /// (which would re-synchronise every capped client).
    Proportional {
        /// Half-width of the window, in percent of the base delay (0..=100).
        percent: u8,
    },
    /// "Full jitter" (AWS): uniform in `[0, base]`.
    Full,
}

/// What is wrong with a [`BackoffConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackoffConfigError {
    /// `start` is zero, so every attempt would be immediate.
    #[error("backoff start delay must be greater than zero")]
    ZeroStart,
    /// `max` is smaller than `start`.
    #[error("backoff max delay {max:?} is smaller than the start delay {start:?}")]
    MaxBelowStart {
        /// The configured start delay.
        start: Duration,
        /// The configured max delay.
        max: Duration,
    },
    /// A proportional jitter wider than ±100 % would produce negative delays.
    #[error("proportional jitter of {percent} % exceeds 100 %")]
    JitterPercentTooLarge {
        /// The configured percentage.
        percent: u8,
    },
}

/// Reconnect backoff parameters.
///
/// Build one from config, call [`BackoffConfig::validate`] once, then ask it for delays with
/// [`BackoffConfig::delay`] (or keep a per-record [`Backoff`] counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackoffConfig {
    /// Base delay of attempt 0.
    pub start: Duration,
    /// Cap on the base delay.
    pub max: Duration,
    /// Attempts allowed before giving up; `0` = unlimited.
    pub max_tries: u32,
    /// How the base delay is spread.
    pub jitter: Jitter,
}

impl Default for BackoffConfig {
    /// 1 s start, 60 s cap, 8 tries, ±20 % jitter (ARCHITECTURE §14).
    fn default() -> Self {
        BackoffConfig {
            start: Duration::from_secs(1),
            max: Duration::from_secs(60),
            max_tries: 8,
            jitter: Jitter::Proportional { percent: 20 },
        }
    }
}

impl BackoffConfig {
    /// libatapp's schedule: no jitter, the given start, cap and tries.
    #[must_use]
    pub const fn without_jitter(start: Duration, max: Duration, max_tries: u32) -> Self {
        BackoffConfig {
            start,
            max,
            max_tries,
            jitter: Jitter::None,
        }
    }

    /// Checks the parameters; call once when loading config.
    ///
    /// The delay functions never panic on an invalid config (a zero `start` gives zero delays,
    /// `max < start` gives `max`), but such a config is almost certainly a mistake.
    ///
    /// # Errors
    /// [`BackoffConfigError`] naming the first problem found.
    pub fn validate(&self) -> Result<(), BackoffConfigError> {
        if self.start.is_zero() {
            return Err(BackoffConfigError::ZeroStart);
        }
        if self.max < self.start {
            return Err(BackoffConfigError::MaxBelowStart {
                start: self.start,
                max: self.max,
            });
        }
        if let Jitter::Proportional { percent } = self.jitter
            && percent > 100
        {
            return Err(BackoffConfigError::JitterPercentTooLarge { percent });
        }
        Ok(())
    }

    /// The un-jittered delay of attempt `attempt` (0-based): `min(start · 2^attempt, max)`.
    ///
    /// Never overflows, for any `attempt` up to `u32::MAX` and any durations (saturating at
    /// `u64::MAX` ns).
    #[must_use]
    pub fn base_delay(&self, attempt: u32) -> Duration {
        Duration::from_nanos(self.base_nanos(attempt))
    }

    fn base_nanos(&self, attempt: u32) -> u64 {
        let start = duration_nanos(self.start);
        let max = duration_nanos(self.max);
        if start == 0 {
            return 0;
        }
        // start · 2^attempt ≤ max  ⇔  start ≤ max >> attempt (for attempt < 64).
        if attempt >= 64 || start > (max >> attempt) {
            max
        } else {
            start << attempt
        }
    }

    /// The jittered delay of attempt `attempt` (0-based), drawing from `rng` as the
    /// [`Jitter`] mode requires (one draw for `Proportional` and `Full`, none for `None`).
    ///
    /// The result is never above `max` (nor above `u64::MAX` ns).
    #[must_use]
    pub fn delay(&self, attempt: u32, rng: &mut Rng) -> Duration {
        let base = self.base_nanos(attempt);
        let nanos = match self.jitter {
            Jitter::None => base,
            Jitter::Proportional { percent } => {
                let percent = u128::from(percent.min(100));
                let spread = u64::try_from(u128::from(base) * percent / 100)
                    .expect("spread ≤ base because percent ≤ 100");
                let lo = base - spread;
                let hi = base.saturating_add(spread).min(duration_nanos(self.max));
                // An invalid config (max < start) can put hi below lo; fall back to the cap.
                if hi < lo { hi } else { rng.in_range(lo, hi) }
            }
            Jitter::Full => rng.in_range(0, base),
        };
        Duration::from_nanos(nanos)
    }

    /// Whether `tries` attempts use up the budget: `max_tries > 0 && tries >= max_tries`.
    #[must_use]
    pub const fn exhausted(&self, tries: u32) -> bool {
        self.max_tries > 0 && tries >= self.max_tries
    }
}

/// A per-record attempt counter.
///
/// Holds only the count, so a connection manager with many records shares one
/// [`BackoffConfig`]. Call [`Backoff::next_delay`] when a connect attempt is to be scheduled and
/// [`Backoff::reset`] when the link becomes ready (or the target is rediscovered, or its
/// upstream switches — ARCHITECTURE §8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Backoff {
    tries: u32,
}

impl Backoff {
    /// A fresh counter: the next delay is that of attempt 0.
    #[must_use]
    pub const fn new() -> Self {
        Backoff { tries: 0 }
    }

    /// Attempts scheduled since the last reset.
    #[must_use]
    pub const fn tries(&self) -> u32 {
        self.tries
    }

    /// Forgets every attempt: the next delay starts again at `start`.
    pub fn reset(&mut self) {
        self.tries = 0;
    }

    /// Whether the budget of `config` is used up.
    #[must_use]
    pub const fn is_exhausted(&self, config: &BackoffConfig) -> bool {
        config.exhausted(self.tries)
    }

    /// The delay before the next attempt, counting it; `None` (and no change) once
    /// `config.max_tries` attempts have been scheduled — the caller gives the record up.
    pub fn next_delay(&mut self, config: &BackoffConfig, rng: &mut Rng) -> Option<Duration> {
        if config.exhausted(self.tries) {
            return None;
        }
        let delay = config.delay(self.tries, rng);
        self.tries = self.tries.saturating_add(1);
        Some(delay)
    }
}

#[cfg(test)]
mod tests {
    use alloc::{boxed::Box, vec, vec::Vec};

    use proptest::{
        prelude::*,
        test_runner::{Config as ProptestConfig, FileFailurePersistence},
    };

    use super::*;
    use crate::{rng::Rng, time::Instant};

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn default_is_1s_start_60s_cap_8_tries_20_percent_jitter() {
        let config = BackoffConfig::default();
        assert_eq!(config.start, secs(1));
        assert_eq!(config.max, secs(60));
        assert_eq!(config.max_tries, 8);
        assert_eq!(config.jitter, Jitter::Proportional { percent: 20 });
        assert_eq!(config.validate(), Ok(()));
    }

    #[test]
    fn base_delays_double_until_the_cap() {
        let config = BackoffConfig::without_jitter(secs(1), secs(60), 0);
        let delays: Vec<u64> = (0..9).map(|k| config.base_delay(k).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn libatapp_e3_schedule_is_2_4_8_8_8() {
        let config = BackoffConfig::without_jitter(secs(2), secs(8), 0);
        let mut rng = Rng::new(0);
        let mut backoff = Backoff::new();
        let delays: Vec<Duration> = (0..5)
            .map(|_| {
                backoff
                    .next_delay(&config, &mut rng)
                    .expect("unlimited tries")
            })
            .collect();
        assert_eq!(delays, vec![secs(2), secs(4), secs(8), secs(8), secs(8)]);
        assert_eq!(backoff.tries(), 5);
        // Jitter::None draws nothing from the generator.
        assert_eq!(rng, Rng::new(0));
    }

    #[test]
    fn huge_attempts_and_durations_saturate_at_the_cap() {
        let config = BackoffConfig::without_jitter(secs(1), secs(60), 0);
        assert_eq!(config.base_delay(63), secs(60));
        assert_eq!(config.base_delay(64), secs(60));
        assert_eq!(config.base_delay(u32::MAX), secs(60));

        let nanos = BackoffConfig::without_jitter(Duration::from_nanos(1), Duration::MAX, 0);
        assert_eq!(nanos.base_delay(62), Duration::from_nanos(1 << 62));
        assert_eq!(nanos.base_delay(63), Duration::from_nanos(1 << 63));
        // 2^64 ns does not fit: saturates at u64::MAX ns, the range of an Instant.
        assert_eq!(nanos.base_delay(64), Duration::from_nanos(u64::MAX));
        assert_eq!(nanos.base_delay(u32::MAX), Duration::from_nanos(u64::MAX));

        let huge = BackoffConfig {
            start: Duration::MAX,
            max: Duration::MAX,
            max_tries: 0,
            jitter: Jitter::Proportional { percent: 100 },
        };
        let mut rng = Rng::new(9);
        assert_eq!(huge.base_delay(0), Duration::from_nanos(u64::MAX));
        assert_eq!(Instant::ZERO + huge.base_delay(0), Instant::MAX);
        // ±100 % of u64::MAX ns: the whole range [0, u64::MAX] ns, one 64-bit draw.
        let drawn = duration_nanos(huge.delay(u32::MAX, &mut rng));
        assert_eq!(drawn, 47_656_050_712_223_840);
    }

    #[test]
    fn validate_names_the_problem() {
        let mut config = BackoffConfig {
            start: Duration::ZERO,
            ..BackoffConfig::default()
        };
        assert_eq!(config.validate(), Err(BackoffConfigError::ZeroStart));
        config.start = secs(10);
        config.max = secs(5);
        assert_eq!(
            config.validate(),
            Err(BackoffConfigError::MaxBelowStart {
                start: secs(10),
                max: secs(5)
            })
        );
        config.max = secs(10);
        config.jitter = Jitter::Proportional { percent: 101 };
        assert_eq!(
            config.validate(),
            Err(BackoffConfigError::JitterPercentTooLarge { percent: 101 })
        );
        config.jitter = Jitter::Proportional { percent: 100 };
        assert_eq!(config.validate(), Ok(()));
    }

    #[test]
    fn invalid_configs_never_panic() {
        let mut rng = Rng::new(3);
        let zero = BackoffConfig {
            start: Duration::ZERO,
            ..BackoffConfig::default()
        };
        assert_eq!(zero.delay(5, &mut rng), Duration::ZERO);
        let inverted = BackoffConfig {
            start: secs(10),
            max: secs(5),
            max_tries: 0,
            jitter: Jitter::Proportional { percent: 250 },
        };
        // max < start: the base is the cap; the ±100 % (clamped) window is [0, 5 s].
        assert_eq!(inverted.base_delay(0), secs(5));
        let d = inverted.delay(0, &mut rng);
        assert!(d <= secs(5), "{d:?}");
    }

    #[test]
    fn jittered_delays_for_a_fixed_seed() {
        let config = BackoffConfig::default();
        let mut rng = Rng::new(2024);
        let proportional: Vec<u64> = (0..8)
            .map(|k| duration_nanos(config.delay(k, &mut rng)))
            .collect();
        // Windows: [0.8, 1.2] s, [1.6, 2.4] s, ... then [48, 60] s at the cap.
        assert_eq!(
            proportional,
            vec![
                822_317_155,
                2_225_683_019,
                3_315_287_904,
                6_911_090_784,
                17_751_362_494,
                28_734_363_193,
                52_732_029_468,
                51_084_087_127,
            ]
        );

        let full = BackoffConfig {
            jitter: Jitter::Full,
            ..config
        };
        let mut rng = Rng::new(2024);
        let full: Vec<u64> = (0..8)
            .map(|k| duration_nanos(full.delay(k, &mut rng)))
            .collect();
        // Windows: [0, 1] s, [0, 2] s, [0, 4] s, ... [0, 60] s.
        assert_eq!(
            full,
            vec![
                55_792_889,
                1_564_207_546,
                288_219_760,
                1_277_726_960,
                12_378_406_236,
                7_835_907_982,
                23_660_147_340,
                15_420_435_637,
            ]
        );
    }

    #[test]
    fn backoff_counter_gives_up_after_max_tries_and_resets() {
        let config = BackoffConfig::without_jitter(secs(1), secs(60), 3);
        let mut rng = Rng::new(1);
        let mut backoff = Backoff::new();
        assert_eq!(backoff.next_delay(&config, &mut rng), Some(secs(1)));
        assert_eq!(backoff.next_delay(&config, &mut rng), Some(secs(2)));
        assert!(!backoff.is_exhausted(&config));
        assert_eq!(backoff.next_delay(&config, &mut rng), Some(secs(4)));
        assert!(backoff.is_exhausted(&config));
        assert_eq!(backoff.next_delay(&config, &mut rng), None);
        assert_eq!(backoff.tries(), 3);
        backoff.reset();
        assert_eq!(backoff.tries(), 0);
        assert_eq!(backoff.next_delay(&config, &mut rng), Some(secs(1)));

        assert!(!config.exhausted(2));
        assert!(config.exhausted(3));
        assert!(config.exhausted(u32::MAX));
        let unlimited = BackoffConfig::without_jitter(secs(1), secs(60), 0);
        assert!(!unlimited.exhausted(u32::MAX));
        let mut saturated = Backoff { tries: u32::MAX };
        assert_eq!(saturated.next_delay(&unlimited, &mut rng), Some(secs(60)));
        assert_eq!(saturated.tries(), u32::MAX);
    }

    /// Outcome of the reconnect-storm simulation of perf-anchors §6/§8.
    #[derive(Debug, PartialEq, Eq)]
    struct Storm {
        /// Attempts per 1 s window after recovery, until the last client is back.
        per_second: Vec<u32>,
        /// Clients that exhausted `max_tries` before the server came back.
        gave_up: u32,
        /// Attempts (failed and successful) over all clients.
        attempts: u64,
    }

    /// 10 000 clients lose the server at t = 0; it is back at t = 30 s; every attempt before
    /// that fails at once and schedules the next one.
    fn storm(config: &BackoffConfig, seed: u64) -> Storm {
        const CLIENTS: u32 = 10_000;
        let recovery = Instant::from_secs(30);
        let mut rng = Rng::new(seed);
        let mut per_second: Vec<u32> = Vec::new();
        let mut gave_up = 0;
        let mut attempts = 0;
        for _ in 0..CLIENTS {
            let mut backoff = Backoff::new();
            let mut at = Instant::ZERO;
            loop {
                let Some(delay) = backoff.next_delay(config, &mut rng) else {
                    gave_up += 1;
                    break;
                };
                at += delay;
                attempts += 1;
                if at >= recovery {
                    let window = usize::try_from((at - recovery).as_secs()).expect("small");
                    if per_second.len() <= window {
                        per_second.resize(window + 1, 0);
                    }
                    per_second[window] += 1;
                    break;
                }
            }
        }
        Storm {
            per_second,
            gave_up,
            attempts,
        }
    }

    #[test]
    fn reconnect_storm_without_jitter_is_fully_synchronised() {
        let config = BackoffConfig {
            jitter: Jitter::None,
            ..BackoffConfig::default()
        };
        let storm = storm(&config, 1);
        // Attempts at 1, 3, 7, 15, 31 s: every client hits the server in the same second.
        assert_eq!(storm.per_second, vec![0, 10_000]);
        assert_eq!(storm.gave_up, 0);
        assert_eq!(storm.attempts, 50_000);
    }

    #[test]
    fn reconnect_storm_with_default_jitter_peaks_below_twenty_percent() {
        let storm = storm(&BackoffConfig::default(), 1);
        let peak = storm
            .per_second
            .iter()
            .copied()
            .max()
            .expect("someone came back");
        assert_eq!(storm.gave_up, 0);
        assert_eq!(storm.per_second.iter().sum::<u32>(), 10_000);
        assert!(peak <= 2_000, "peak {peak}");
        assert_eq!(peak, 1_582);
        // 5.34 attempts per client; about a third of the clients tried just before 30 s and
        // come back on their sixth attempt (32 s ± 20 % later), the rest on their fifth.
        assert_eq!(storm.attempts, 53_408);
        assert_eq!(
            storm.per_second,
            vec![
                1577, 1582, 1493, 1078, 631, 217, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                18, 62, 159, 246, 238, 289, 290, 263, 255, 263, 277, 275, 246, 238, 170, 107, 12,
            ]
        );
    }

    fn proptest_config(suite: &'static str, cases: u32) -> ProptestConfig {
        ProptestConfig {
            cases,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(suite))),
            ..ProptestConfig::default()
        }
    }

    fn any_config() -> impl Strategy<Value = BackoffConfig> {
        let duration = prop_oneof![
            (1u64..=120_000).prop_map(Duration::from_millis),
            (1u64..=u64::MAX).prop_map(Duration::from_nanos),
            Just(Duration::MAX),
        ];
        let jitter = prop_oneof![
            Just(Jitter::None),
            (0u8..=100).prop_map(|percent| Jitter::Proportional { percent }),
            Just(Jitter::Full),
        ];
        (duration.clone(), duration, jitter).prop_map(|(a, b, jitter)| BackoffConfig {
            start: a.min(b),
            max: a.max(b),
            max_tries: 0,
            jitter,
        })
    }

    proptest! {
        #![proptest_config(proptest_config("../proptest-regressions/backoff.txt", 512))]

        #[test]
        fn delay_respects_cap_and_jitter_window(
            config in any_config(),
            attempt in prop_oneof![0u32..80, Just(u32::MAX), any::<u32>()],
            seed in any::<u64>(),
        ) {
            prop_assert_eq!(config.validate(), Ok(()));
            let base = duration_nanos(config.base_delay(attempt));
            let max = duration_nanos(config.max);
            let start = duration_nanos(config.start);
            prop_assert!(base <= max);
            // Exact base: min(start · 2^attempt, max) in 128-bit arithmetic.
            let exact = if attempt >= 64 { u128::from(max) } else {
                (u128::from(start) << attempt).min(u128::from(max))
            };
            prop_assert_eq!(u128::from(base), exact);

            let delay = duration_nanos(config.delay(attempt, &mut Rng::new(seed)));
            prop_assert!(delay <= max);
            match config.jitter {
                Jitter::None => prop_assert_eq!(delay, base),
                Jitter::Proportional { percent } => {
                    let spread = u128::from(base) * u128::from(percent) / 100;
                    prop_assert!(u128::from(delay) >= u128::from(base) - spread);
                    let hi = (u128::from(base) + spread).min(u128::from(max));
                    prop_assert!(u128::from(delay) <= hi);
                }
                Jitter::Full => prop_assert!(delay <= base),
            }
        }

        #[test]
        fn jitter_is_not_degenerate_across_seeds(
            start_ms in 1u64..=10_000,
            attempt in 0u32..12,
            jitter in prop_oneof![
                (10u8..=100).prop_map(|percent| Jitter::Proportional { percent }),
                Just(Jitter::Full),
            ],
        ) {
            let config = BackoffConfig {
                start: Duration::from_millis(start_ms),
                max: Duration::from_secs(3_600),
                max_tries: 0,
                jitter,
            };
            let mut distinct: Vec<Duration> =
                (0..64).map(|seed| config.delay(attempt, &mut Rng::new(seed))).collect();
            distinct.sort_unstable();
            distinct.dedup();
            // 64 draws from a window of ≥ 0.2 ms at ns resolution: collisions are ~impossible.
            prop_assert!(distinct.len() >= 60, "{} distinct", distinct.len());
        }
    }
}
