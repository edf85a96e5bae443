//! Conversion between tokio's clock and the core's virtual time.
//!
//! The core measures time as nanoseconds since an origin the driver chooses. A [`Clock`] fixes
//! that origin at its creation; `now()` is then the only place the driver reads the clock, and
//! [`Clock::to_tokio`] turns the core's next deadline back into something `tokio::time::sleep_until`
//! accepts. Because it uses `tokio::time::Instant`, tests with a paused tokio clock drive the
//! core on exactly the virtual time they advance.

use switchboard_core::time::{Duration, Instant};

/// A fixed origin that maps tokio instants to core instants.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: tokio::time::Instant,
}

impl Clock {
    /// A clock whose origin (core `Instant::ZERO`) is the current tokio instant.
    #[must_use]
    pub fn start() -> Clock {
        Clock::with_origin(tokio::time::Instant::now())
    }

    /// A clock with an explicit origin.
    #[must_use]
    pub fn with_origin(origin: tokio::time::Instant) -> Clock {
        Clock { origin }
    }

    /// The current time as the core sees it.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.to_core(tokio::time::Instant::now())
    }

    /// A tokio instant as a core instant; instants before the origin clamp to `Instant::ZERO`.
    #[must_use]
    pub fn to_core(&self, t: tokio::time::Instant) -> Instant {
        let since = t.saturating_duration_since(self.origin);
        Instant::ZERO + since
    }

    /// A core deadline as a tokio instant, for `sleep_until`. Deadlines too far away to
    /// represent are capped a year out, which a driver re-arms long before it matters.
    #[must_use]
    pub fn to_tokio(&self, deadline: Instant) -> tokio::time::Instant {
        const FAR: Duration = Duration::from_secs(365 * 24 * 3600);
        let offset = deadline.saturating_duration_since(Instant::ZERO);
        self.origin
            .checked_add(offset)
            .unwrap_or_else(|| self.origin + FAR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn paused_tokio_time_maps_exactly_onto_core_time() {
        let clock = Clock::start();
        assert_eq!(clock.now(), Instant::ZERO);
        tokio::time::advance(Duration::from_millis(1_250)).await;
        assert_eq!(clock.now(), Instant::from_millis(1_250));
        let deadline = Instant::from_secs(3);
        assert_eq!(
            clock.to_tokio(deadline) - tokio::time::Instant::now(),
            Duration::from_millis(1_750)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn instants_before_the_origin_clamp_and_huge_deadlines_do_not_overflow() {
        let origin = tokio::time::Instant::now() + Duration::from_secs(10);
        let clock = Clock::with_origin(origin);
        assert_eq!(clock.now(), Instant::ZERO);
        let far = clock.to_tokio(Instant::MAX);
        assert!(far >= origin + Duration::from_secs(365 * 24 * 3600));
    }
}
