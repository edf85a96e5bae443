//! [`LeaseState`]: the one lease a node's three keys hang on.
//!
//! Grant a lease (TTL 31 s), register on it (the txn of [`super::register`]), renew it every
//! 10 s. The lease is **lost** when a keepalive answers with TTL ≤ 0, or when no keepalive
//! has succeeded for longer than the TTL and a `lease_time_to_live` check says it is gone
//! (the lease may outlive a broken stream: after an etcd restart its deadline is reset). A
//! lost lease is replaced by a new grant and the registration is replayed. A registration
//! conflict (another instance owns the id) is reported and retried later, never overwritten.
//! On graceful shutdown the lease is revoked, which deletes every key in one revision.
//!
//! Like [`super::WatchState`], the adapter calls [`LeaseState::poll`] with `now` until it
//! returns [`LeaseAction::Wait`] and feeds the RPC results back.

use crate::time::{Duration, Instant};

use super::register::RegisterOutcome;

/// Lease timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Lease TTL asked for at grant (whole seconds are sent).
    pub ttl: Duration,
    /// Interval between keepalives.
    pub keepalive_interval: Duration,
    /// Delay before retrying a failed grant, keepalive, time-to-live check or registration.
    pub retry: Duration,
}

impl Default for LeaseConfig {
    /// libatapp: TTL 31 s, keepalive every 10 s, retry after 3 s.
    fn default() -> Self {
        LeaseConfig {
            ttl: Duration::from_secs(31),
            keepalive_interval: Duration::from_secs(10),
            retry: Duration::from_secs(3),
        }
    }
}

/// What the adapter must do next for the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseAction {
    /// Grant a lease with this TTL (seconds); report with [`LeaseState::on_granted`] or
    /// [`LeaseState::on_grant_failed`].
    Grant {
        /// TTL in seconds.
        ttl_secs: i64,
    },
    /// Run the registration txn on `lease` (a replay after a new grant); report with
    /// [`LeaseState::on_registered`] or [`LeaseState::on_register_failed`].
    Register {
        /// The lease to attach.
        lease: i64,
    },
    /// Send one keepalive for `lease`, (re)opening the keepalive stream if needed; report
    /// each answer with [`LeaseState::on_keepalive`], a failure with
    /// [`LeaseState::on_keepalive_failed`].
    KeepAlive {
        /// The lease.
        lease: i64,
    },
    /// Ask `lease_time_to_live(lease)`; report with [`LeaseState::on_time_to_live`] or
    /// [`LeaseState::on_time_to_live_failed`].
    CheckTimeToLive {
        /// The lease.
        lease: i64,
    },
    /// Revoke `lease` (graceful shutdown); report with [`LeaseState::on_revoked`].
    Revoke {
        /// The lease.
        lease: i64,
    },
    /// Nothing to do until `until` (`None`: until a pending RPC reports back).
    Wait {
        /// When to poll again.
        until: Option<Instant>,
    },
}

/// Counters of the lease machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStats {
    /// Leases granted.
    pub grants: u64,
    /// Leases declared lost.
    pub lost: u64,
    /// Successful keepalive answers.
    pub keepalives: u64,
    /// Successful registrations.
    pub registrations: u64,
    /// Registration conflicts (the id is owned by another instance).
    pub conflicts: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Registration {
    Due(Instant),
    InFlight,
    Done,
    /// The node's `by_id` key was written under another lease (a live copy with this
    /// deployment's identity took it over): not registered, and not taking it back (that
    /// would flap between the copies) until the key is deleted.
    Yielded,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    GrantDue(Instant),
    Granting,
    Active,
    /// A time-to-live check: `Some(at)` = due at `at`, `None` = in flight.
    Checking(Option<Instant>),
    RevokeDue,
    Revoking,
    Closed,
}

/// The lease machine. See the module docs.
#[derive(Clone, Debug)]
pub struct LeaseState {
    config: LeaseConfig,
    phase: Phase,
    lease: i64,
    last_ok: Instant,
    next_keepalive: Instant,
    registration: Registration,
    stats: LeaseStats,
}

impl LeaseState {
    /// A machine that grants its first lease at the first poll.
    #[must_use]
    pub fn new(config: LeaseConfig) -> LeaseState {
        LeaseState {
            config,
            phase: Phase::GrantDue(Instant::ZERO),
            lease: 0,
            last_ok: Instant::ZERO,
            next_keepalive: Instant::ZERO,
            registration: Registration::Done,
            stats: LeaseStats::default(),
        }
    }

    /// The current lease id (0 when none).
    #[must_use]
    pub fn lease(&self) -> i64 {
        self.lease
    }

    /// Whether the node's keys are registered on a live lease.
    #[must_use]
    pub fn is_registered(&self) -> bool {
        matches!(self.phase, Phase::Active | Phase::Checking(_))
            && self.registration == Registration::Done
    }

    /// Whether shutdown finished (the lease is revoked or there was none).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// The counters.
    #[must_use]
    pub fn stats(&self) -> LeaseStats {
        self.stats
    }

    /// The next action at `now`; call until it returns [`LeaseAction::Wait`].
    pub fn poll(&mut self, now: Instant) -> LeaseAction {
        match self.phase {
            Phase::GrantDue(at) if now >= at => {
                self.phase = Phase::Granting;
                LeaseAction::Grant {
                    ttl_secs: i64::try_from(self.config.ttl.as_secs()).unwrap_or(i64::MAX),
                }
            }
            Phase::GrantDue(at) => LeaseAction::Wait { until: Some(at) },
            Phase::Granting | Phase::Revoking | Phase::Closed | Phase::Checking(None) => {
                LeaseAction::Wait { until: None }
            }
            Phase::Checking(Some(at)) if now >= at => {
                self.phase = Phase::Checking(None);
                LeaseAction::CheckTimeToLive { lease: self.lease }
            }
            Phase::Checking(Some(at)) => LeaseAction::Wait { until: Some(at) },
            Phase::Active => self.poll_active(now),
            Phase::RevokeDue => {
                self.phase = Phase::Revoking;
                LeaseAction::Revoke { lease: self.lease }
            }
        }
    }

    fn poll_active(&mut self, now: Instant) -> LeaseAction {
        let expires = self.last_ok.saturating_add(self.config.ttl);
        if now >= expires {
            self.phase = Phase::Checking(None);
            return LeaseAction::CheckTimeToLive { lease: self.lease };
        }
        if let Registration::Due(at) = self.registration
            && now >= at
        {
            self.registration = Registration::InFlight;
            return LeaseAction::Register { lease: self.lease };
        }
        if now >= self.next_keepalive {
            self.next_keepalive = now.saturating_add(self.config.keepalive_interval);
            return LeaseAction::KeepAlive { lease: self.lease };
        }
        let mut until = expires.min(self.next_keepalive);
        if let Registration::Due(at) = self.registration {
            until = until.min(at);
        }
        LeaseAction::Wait { until: Some(until) }
    }

    /// A lease was granted: register on it at the next poll; keepalives start after one
    /// interval.
    pub fn on_granted(&mut self, now: Instant, lease: i64) {
        if self.phase != Phase::Granting {
            return;
        }
        self.stats.grants += 1;
        self.lease = lease;
        self.last_ok = now;
        self.next_keepalive = now.saturating_add(self.config.keepalive_interval);
        self.registration = Registration::Due(now);
        self.phase = Phase::Active;
    }

    /// The grant failed: retry after `retry`.
    pub fn on_grant_failed(&mut self, now: Instant) {
        if self.phase == Phase::Granting {
            self.phase = Phase::GrantDue(now.saturating_add(self.config.retry));
        }
    }

    /// The registration txn finished. A conflict is retried after one keepalive interval
    /// (the owner's lease may expire); the caller reports it.
    pub fn on_registered(&mut self, now: Instant, outcome: &RegisterOutcome) {
        if self.registration != Registration::InFlight {
            return;
        }
        self.registration = match outcome {
            RegisterOutcome::Registered { .. } => {
                self.stats.registrations += 1;
                Registration::Done
            }
            RegisterOutcome::Conflict(_) | RegisterOutcome::NameTaken { .. } => {
                self.stats.conflicts += 1;
                Registration::Due(now.saturating_add(self.config.keepalive_interval))
            }
        };
    }

    /// The watcher saw the node's own `by_id` key change: `deleted`, or written under lease
    /// `key_lease`. A write under this machine's own lease is its own (nothing to do). A
    /// delete while registered or yielded means nobody holds the id any more (another copy
    /// that had taken it over stopped, or the key was removed by hand): register again now
    /// — not registered until that txn commits. A write under another lease while
    /// registered means another live process took the id over: yield (not registered) and
    /// wait for its delete.
    pub fn on_own_key(&mut self, now: Instant, deleted: bool, key_lease: i64) {
        if !matches!(self.phase, Phase::Active | Phase::Checking(_)) {
            return;
        }
        match (deleted, self.registration) {
            (true, Registration::Done | Registration::Yielded) => {
                self.registration = Registration::Due(now);
            }
            (false, Registration::Done) if key_lease != self.lease => {
                self.registration = Registration::Yielded;
            }
            _ => {}
        }
    }

    /// The registration RPC failed (no answer): retry after `retry`.
    pub fn on_register_failed(&mut self, now: Instant) {
        if self.registration == Registration::InFlight {
            self.registration = Registration::Due(now.saturating_add(self.config.retry));
        }
    }

    /// A keepalive answer for the current lease with the remaining `ttl_secs`. TTL ≤ 0: the
    /// lease is gone → grant a new one now and replay the registration.
    pub fn on_keepalive(&mut self, now: Instant, ttl_secs: i64) {
        if !matches!(self.phase, Phase::Active | Phase::Checking(_)) {
            return;
        }
        if ttl_secs <= 0 {
            self.lose(now);
            return;
        }
        self.stats.keepalives += 1;
        self.last_ok = now;
        self.phase = Phase::Active;
    }

    /// The keepalive stream failed: send the next keepalive (reopening the stream) after
    /// `retry`. Past the TTL without success, the next poll checks the lease's time to live.
    pub fn on_keepalive_failed(&mut self, now: Instant) {
        if self.phase == Phase::Active {
            self.next_keepalive = now.saturating_add(self.config.retry);
        }
    }

    /// The answer of a time-to-live check: `ttl_secs > 0` → the lease lives, reopen the
    /// keepalive now; otherwise it is lost → new grant, registration replayed.
    pub fn on_time_to_live(&mut self, now: Instant, ttl_secs: i64) {
        if self.phase != Phase::Checking(None) {
            return;
        }
        if ttl_secs <= 0 {
            self.lose(now);
        } else {
            self.last_ok = now;
            self.next_keepalive = now;
            self.phase = Phase::Active;
        }
    }

    /// The time-to-live check failed (etcd unreachable): check again after `retry`.
    pub fn on_time_to_live_failed(&mut self, now: Instant) {
        if self.phase == Phase::Checking(None) {
            self.phase = Phase::Checking(Some(now.saturating_add(self.config.retry)));
        }
    }

    /// Graceful shutdown: the next poll revokes the lease (or the machine closes at once when
    /// it holds none).
    pub fn shutdown(&mut self) {
        if self.lease != 0 && !matches!(self.phase, Phase::GrantDue(_) | Phase::Granting) {
            self.phase = Phase::RevokeDue;
        } else {
            self.phase = Phase::Closed;
        }
    }

    /// The revoke finished or failed; the machine is closed.
    pub fn on_revoked(&mut self) {
        if self.phase == Phase::Revoking {
            self.lease = 0;
            self.phase = Phase::Closed;
        }
    }

    fn lose(&mut self, now: Instant) {
        self.stats.lost += 1;
        self.lease = 0;
        self.registration = Registration::Done;
        self.phase = Phase::GrantDue(now);
    }
}
