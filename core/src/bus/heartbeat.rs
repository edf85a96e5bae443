//! Link liveness: pings on links that have been silent, and the verdict that a link is dead.
//!
//! Every up link has a [`Heartbeat`]. Anything received on the link counts as life
//! ([`Heartbeat::on_receive`]). When nothing arrived for `interval` the node sends a `Ping`;
//! each further silent `interval` sends another; once `dead_after` intervals passed in
//! silence the link is declared dead (half-open: the peer vanished without a FIN) and closed.
//! So a link last heard at `t` is closed at exactly `t + interval × dead_after`, with pings at
//! `t + interval × k` for `k = 1..dead_after` (`dead_after - 1` pings, each answered within
//! the intervals left; with `dead_after` = 1 no ping goes out and the link must be kept busy
//! by the peer's own pings, so configurations keep it at 2 or more).

use crate::time::{Duration, Instant};

/// What the heartbeat wants at a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beat {
    /// Nothing is due yet.
    Idle,
    /// Send a `Ping` with this nonce.
    Ping(u64),
    /// Too many pings went unanswered: close the link.
    Dead,
}

/// Liveness state of one link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    last_rx: Instant,
    unanswered: u32,
    nonce: u64,
}

impl Heartbeat {
    /// A link that came up (or last heard from its peer) at `now`.
    #[must_use]
    pub const fn new(now: Instant) -> Heartbeat {
        Heartbeat {
            last_rx: now,
            unanswered: 0,
            nonce: 0,
        }
    }

    /// Something arrived on the link at `now`.
    pub fn on_receive(&mut self, now: Instant) {
        self.last_rx = now;
        self.unanswered = 0;
    }

    /// Pings sent since the peer was last heard.
    #[must_use]
    pub const fn unanswered(&self) -> u32 {
        self.unanswered
    }

    /// When [`poll`](Self::poll) must run next: the next ping, or the verdict
    /// (`last heard + interval × dead_after`) once every ping went out.
    #[must_use]
    pub fn deadline(&self, interval: Duration) -> Instant {
        self.last_rx
            .saturating_add(interval.saturating_mul(self.unanswered.saturating_add(1)))
    }

    /// The instant the link is declared dead unless the peer is heard before.
    #[must_use]
    pub fn dead_at(&self, interval: Duration, dead_after: u32) -> Instant {
        self.last_rx
            .saturating_add(interval.saturating_mul(dead_after))
    }

    /// What is due at `now`; a returned `Ping` is counted as sent.
    pub fn poll(&mut self, now: Instant, interval: Duration, dead_after: u32) -> Beat {
        if now < self.deadline(interval) {
            return Beat::Idle;
        }
        if self.unanswered.saturating_add(1) >= dead_after {
            return Beat::Dead;
        }
        self.unanswered += 1;
        self.nonce += 1;
        Beat::Ping(self.nonce)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_link_pings_then_dies_at_the_exact_instant() {
        let i = Duration::from_millis(1_500);
        let mut hb = Heartbeat::new(Instant::from_millis(1_000));
        assert_eq!(hb.dead_at(i, 3), Instant::from_millis(5_500));
        assert_eq!(hb.deadline(i), Instant::from_millis(2_500));
        assert_eq!(hb.poll(Instant::from_millis(2_499), i, 3), Beat::Idle);
        assert_eq!(hb.poll(Instant::from_millis(2_500), i, 3), Beat::Ping(1));
        assert_eq!(hb.deadline(i), Instant::from_millis(4_000));
        assert_eq!(hb.poll(Instant::from_millis(4_000), i, 3), Beat::Ping(2));
        assert_eq!(hb.deadline(i), Instant::from_millis(5_500));
        assert_eq!(hb.poll(Instant::from_millis(5_499), i, 3), Beat::Idle);
        assert_eq!(hb.poll(Instant::from_millis(5_500), i, 3), Beat::Dead);
        assert_eq!(hb.dead_at(i, 3), Instant::from_millis(5_500));
    }

    #[test]
    fn one_silent_interval_is_fatal_when_dead_after_is_one() {
        let i = Duration::from_secs(1);
        let mut hb = Heartbeat::new(Instant::ZERO);
        assert_eq!(hb.poll(Instant::from_millis(999), i, 1), Beat::Idle);
        assert_eq!(hb.poll(Instant::from_secs(1), i, 1), Beat::Dead);
    }

    #[test]
    fn anything_received_resets_the_count() {
        let i = Duration::from_secs(2);
        let mut hb = Heartbeat::new(Instant::ZERO);
        assert_eq!(hb.poll(Instant::from_millis(2_000), i, 3), Beat::Ping(1));
        hb.on_receive(Instant::from_millis(2_010));
        assert_eq!(hb.unanswered(), 0);
        assert_eq!(hb.deadline(i), Instant::from_millis(4_010));
        assert_eq!(hb.dead_at(i, 3), Instant::from_millis(8_010));
        assert_eq!(hb.poll(Instant::from_millis(4_010), i, 3), Beat::Ping(2));
        assert_eq!(hb.poll(Instant::from_millis(6_010), i, 3), Beat::Ping(3));
        assert_eq!(hb.poll(Instant::from_millis(8_010), i, 3), Beat::Dead);
    }
}
