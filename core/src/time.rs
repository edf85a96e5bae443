//! Virtual time for the sans-IO core.
//!
//! The core never reads a clock: every `handle_*` call takes `now: Instant`. [`Instant`] is a
//! newtype over `u64` nanoseconds since an origin the adapter chooses (process start, a
//! simulator's zero). Durations are the standard [`Duration`]. Arithmetic saturates, so a
//! deadline far in the future never wraps into the past.

pub use core::time::Duration;

/// A point in time: nanoseconds since an arbitrary origin chosen by the driver.
///
/// Ordering is the ordering of time. [`Instant::ZERO`] is the origin; [`Instant::MAX`] is a
/// deadline that never comes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The origin of the clock.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant, used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the origin.
    #[must_use]
    pub const fn from_nanos(nanos: u64) -> Instant {
        Instant(nanos)
    }

    /// An instant `millis` milliseconds after the origin (saturating).
    #[must_use]
    pub const fn from_millis(millis: u64) -> Instant {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// An instant `secs` seconds after the origin (saturating).
    #[must_use]
    pub const fn from_secs(secs: u64) -> Instant {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the origin.
    #[must_use]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos(d)))
    }

    /// `self - d`, saturating at [`Instant::ZERO`].
    #[must_use]
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(duration_nanos(d)))
    }

    /// Time elapsed from `earlier` to `self`; zero if `earlier` is later (time never runs
    /// backwards in the core: a driver that goes back is clamped).
    #[must_use]
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl core::ops::Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl core::ops::AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = self.saturating_add(d);
    }
}

impl core::ops::Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        self.saturating_sub(d)
    }
}

impl core::ops::Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// A [`Duration`] in nanoseconds, saturating at `u64::MAX` (≈ 584 years).
#[must_use]
pub fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Folds an optional deadline into the earliest of two: `None` means "no deadline".
///
/// Used wherever several timers feed one `poll_timeout`.
#[must_use]
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        let near_end = Instant::from_nanos(u64::MAX - 5);
        assert_eq!(near_end + Duration::from_secs(1), Instant::MAX);
        assert_eq!(
            Instant::from_nanos(3) - Duration::from_nanos(10),
            Instant::ZERO
        );
        assert_eq!(Instant::from_secs(u64::MAX), Instant::MAX);
        assert_eq!(Instant::ZERO + Duration::MAX, Instant::MAX);
    }

    #[test]
    fn durations_between_instants_never_go_negative() {
        let a = Instant::from_millis(1_500);
        let b = Instant::from_secs(1);
        assert_eq!(a - b, Duration::from_millis(500));
        assert_eq!(b - a, Duration::ZERO);
        assert_eq!(a.as_nanos(), 1_500_000_000);
    }

    #[test]
    fn earliest_folds_optional_deadlines() {
        let t1 = Some(Instant::from_secs(1));
        let t2 = Some(Instant::from_secs(2));
        assert_eq!(earliest(t2, t1), t1);
        assert_eq!(earliest(None, t2), t2);
        assert_eq!(earliest(t1, None), t1);
        assert_eq!(earliest(None, None), None);
    }
}
