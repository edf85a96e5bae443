//! The one place wall-clock time enters the core.
//!
//! The core measures time as nanoseconds since an origin the driver chooses. A [`Clock`] fixes
//! that origin (a `std::time::Instant`) when the driver starts; [`Clock::now`] is the only
//! clock read of the driver, and [`Clock::until`] turns a core deadline back into the
//! `Duration` a `mio::Poll` may block for.

use std::time::Instant as StdInstant;

use switchboard_core::time::{Duration, Instant};

/// A fixed origin mapping `std::time::Instant` onto core instants.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: StdInstant,
}

impl Clock {
    /// A clock whose origin (core [`Instant::ZERO`]) is now.
    #[must_use]
    pub fn start() -> Clock {
        Clock {
            origin: StdInstant::now(),
        }
    }

    /// The current time as the core sees it.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.to_core(StdInstant::now())
    }

    /// A std instant as a core instant; instants before the origin clamp to `Instant::ZERO`.
    #[must_use]
    pub fn to_core(&self, t: StdInstant) -> Instant {
        Instant::ZERO.saturating_add(t.saturating_duration_since(self.origin))
    }

    /// How long from now until `deadline` (zero if it passed).
    #[must_use]
    pub fn until(&self, deadline: Instant) -> Duration {
        deadline.saturating_duration_since(self.now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_map_onto_nanoseconds_since_the_origin() {
        let clock = Clock::start();
        let later = clock.origin + Duration::from_millis(1_250);
        assert_eq!(clock.to_core(later), Instant::from_millis(1_250));
        let before = clock.origin.checked_sub(Duration::from_millis(5));
        if let Some(before) = before {
            assert_eq!(clock.to_core(before), Instant::ZERO);
        }
        assert_eq!(clock.until(Instant::ZERO), Duration::ZERO);
        assert!(clock.until(Instant::from_secs(3_600)) > Duration::from_secs(3_500));
    }
}
