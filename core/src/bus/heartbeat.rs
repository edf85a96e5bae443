//! Link liveness: pings on links that have been silent, and the verdict that a link is dead.
//!
//! Every up link has a [`Heartbeat`]. Anything received on the link counts as life
//! ([`Heartbeat::on_receive`]). When nothing arrived for `interval` the node sends a `Ping`;
//! each further silent `interval` sends another; once `dead_after` pings went unanswered
//! and one more interval passed in silence the link is declared dead (half-open: the peer
//! vanished without a FIN) and closed. So a link that goes silent at `t` is closed at exactly
//! `t + interval × (dead_after + 1)`, with pings at `t + interval × k` for `k = 1..=dead_after`.

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

    /// When [`poll`](Self::poll) must run next.
    #[must_use]
    pub fn deadline(&self, interval: Duration) -> Instant {
        self.last_rx
            .saturating_add(interval.saturating_mul(self.unanswered.saturating_add(1)))
    }

    /// What is due at `now`; a returned `Ping` is counted as sent.
    pub fn poll(&mut self, now: Instant, interval: Duration, dead_after: u32) -> Beat {
        if now < self.deadline(interval) {
            return Beat::Idle;
        }
        if self.unanswered >= dead_after {
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
        let i = Duration::from_secs(2);
        let mut hb = Heartbeat::new(Instant::from_millis(1_000));
        assert_eq!(hb.deadline(i), Instant::from_millis(3_000));
        assert_eq!(hb.poll(Instant::from_millis(2_999), i, 3), Beat::Idle);
        assert_eq!(hb.poll(Instant::from_millis(3_000), i, 3), Beat::Ping(1));
        assert_eq!(hb.deadline(i), Instant::from_millis(5_000));
        assert_eq!(hb.poll(Instant::from_millis(5_000), i, 3), Beat::Ping(2));
        assert_eq!(hb.poll(Instant::from_millis(7_000), i, 3), Beat::Ping(3));
        assert_eq!(hb.deadline(i), Instant::from_millis(9_000));
        assert_eq!(hb.poll(Instant::from_millis(8_999), i, 3), Beat::Idle);
        assert_eq!(hb.poll(Instant::from_millis(9_000), i, 3), Beat::Dead);
    }

    #[test]
    fn anything_received_resets_the_count() {
        let i = Duration::from_secs(2);
        let mut hb = Heartbeat::new(Instant::ZERO);
        assert_eq!(hb.poll(Instant::from_millis(2_000), i, 3), Beat::Ping(1));
        hb.on_receive(Instant::from_millis(2_010));
        assert_eq!(hb.unanswered(), 0);
        assert_eq!(hb.deadline(i), Instant::from_millis(4_010));
        assert_eq!(hb.poll(Instant::from_millis(4_010), i, 3), Beat::Ping(2));
    }
}
