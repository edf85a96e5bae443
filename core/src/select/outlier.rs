//! Outlier ejection (Envoy's outlier detection with its defaults, docs/ARCHITECTURE.md §11):
//! a caller stops picking a server whose calls keep failing, for a while.
//!
//! Each finished attempt at a server is one outcome, a success or a failure (which outcomes
//! count is the RPC machine's rule, `rpc/server_outcome.rs`). Per server:
//!
//! - **Consecutive failures.** [`OutlierConfig::consecutive_failures`] (5) failures in a row
//!   eject it. A success resets the count.
//! - **Success rate** (off by default). Within one [`interval`](OutlierConfig::interval)
//!   (10 s, a fixed window starting at the first outcome after the last one ended), once at
//!   least [`success_rate_min_requests`](OutlierConfig::success_rate_min_requests) (100)
//!   attempts ended, a share of successes below
//!   [`success_rate_percent`](OutlierConfig::success_rate_percent) ejects it. A per-server
//!   threshold, like Finagle's failure accrual and Envoy's failure-percentage rule, not
//!   Envoy's cluster-wide standard-deviation rule (which needs every server's rate at once
//!   and a sweep timer; this one is judged as each outcome arrives).
//! - **Ejection.** Its `n`-th ejection in a row lasts `n ×` the base time (30 s), at most the
//!   cap (300 s). Outcomes of attempts that end while it is ejected (made before) are
//!   ignored.
//! - **The cap.** An ejection happens only if the caller's `room` check says so: the node
//!   allows it while every filter ring the server is a member of keeps at most
//!   [`max_ejection_percent`](OutlierConfig::max_ejection_percent) (10 %) of its members
//!   ejected, rounded down, **but at least one** (Envoy since 1.20: with fewer than 10
//!   servers, one may be ejected). A refused ejection is counted
//!   ([`OutlierStats::ejections_refused`]) and the server keeps being picked; its next
//!   failure asks again.
//! - **Probing.** When the ejection ends the server is picked again; the next outcome decides.
//!   A success restores it (failures counted from zero); a failure ejects it again at once,
//!   for the next longer time. There is no timer: "ended" is `now` past its end.
//! - **Decay.** A restored server's ejection count drops by one per interval it stays
//!   un-ejected (Envoy decrements it on each interval sweep while the host is healthy), so a
//!   server ejected once long ago is ejected for 30 s again, not 60 s.
//!
//! Time is the caller's `now` (virtual in tests). Cost: one map entry per server with a
//! failure (or an ejection) on record — a server back to a clean state is forgotten (unless
//! the success-rate rule is on: then every server called has its window) — and an O(1)
//! check per pick while no server is ejected (a second map lookup while one is).

use alloc::collections::BTreeMap;

use crate::{
    config::OutlierConfig,
    ids::NodeId,
    ring::RingSet,
    time::{Duration, Instant},
};

/// Counters of outlier ejection, for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutlierStats {
    /// Ejections (a probe's failure included).
    pub ejections: u64,
    /// Ejections the cap refused (the filter had its share ejected already).
    pub ejections_refused: u64,
    /// Ejections that ended and whose probe succeeded: the server is restored.
    pub restored: u64,
    /// Ejections that ended and whose probe failed: the server is ejected again at once.
    pub probes_failed: u64,
    /// Servers ejected now.
    pub ejected: u64,
}

/// One server's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Server {
    /// Failures since its last success (or ejection).
    consecutive: u32,
    /// Ejections in a row (decays while restored).
    times_ejected: u32,
    /// Until when it is ejected; still set once that passed, until the probe's outcome.
    ejected_until: Option<Instant>,
    /// When `times_ejected` last dropped (or the server was restored).
    decayed_at: Instant,
    /// The success-rate window: when it started, its successes and attempts.
    window_start: Instant,
    window_ok: u32,
    window_total: u32,
}

impl Server {
    /// Whether nothing is on record (the entry can go).
    fn is_clean(&self) -> bool {
        self.consecutive == 0 && self.times_ejected == 0 && self.ejected_until.is_none()
    }

    /// Drops `times_ejected` by one per whole interval since `decayed_at`.
    fn decay(&mut self, now: Instant, interval: Duration) {
        if self.times_ejected == 0 {
            return;
        }
        let elapsed = now.saturating_duration_since(self.decayed_at).as_nanos();
        let steps = elapsed / interval.as_nanos().max(1);
        let drop = u32::try_from(steps).unwrap_or(u32::MAX);
        self.times_ejected = self.times_ejected.saturating_sub(drop);
        let step_nanos = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
        let advanced = u64::try_from(steps)
            .unwrap_or(u64::MAX)
            .saturating_mul(step_nanos);
        self.decayed_at = self
            .decayed_at
            .saturating_add(Duration::from_nanos(advanced));
    }

    /// Counts the outcome in the success-rate window (a new one when the last ended), and
    /// whether the window now judges the server below the rate.
    fn below_rate(&mut self, now: Instant, ok: bool, config: &OutlierConfig) -> bool {
        if config.success_rate_percent == 0 {
            return false;
        }
        if self.window_total == 0 || now >= self.window_start.saturating_add(config.interval) {
            (self.window_start, self.window_ok, self.window_total) = (now, 0, 0);
        }
        self.window_total += 1;
        self.window_ok += u32::from(ok);
        self.window_total >= config.success_rate_min_requests
            && u64::from(self.window_ok) * 100
                < u64::from(config.success_rate_percent) * u64::from(self.window_total)
    }
}

/// Per-server outlier state: see [`select`](crate::select) and `select/outlier.rs`.
///
/// ```
/// use switchboard_core::{Instant, NodeId, config::OutlierConfig, select::Outliers};
///
/// let mut outliers = Outliers::new(OutlierConfig::default());
/// let (server, t) = (NodeId(7), Instant::from_secs(1));
/// for _ in 0..5 {
///     outliers.record(t, server, false, |_| true);
/// }
/// assert!(outliers.is_ejected(t, server));
/// assert!(outliers.is_ejected(Instant::from_secs(30), server));
/// assert!(!outliers.is_ejected(Instant::from_secs(31), server)); // 30 s later: probing
/// ```
#[derive(Clone, Debug, Default)]
pub struct Outliers {
    config: OutlierConfig,
    pub(super) servers: BTreeMap<NodeId, Server>,
    /// The latest end of any ejection: no server is ejected from then on (the O(1) check).
    latest_end: Instant,
    stats: OutlierStats,
}

impl Outliers {
    /// No server on record, ejecting by `config`.
    #[must_use]
    pub fn new(config: OutlierConfig) -> Outliers {
        Outliers {
            config,
            ..Outliers::default()
        }
    }

    /// The settings.
    #[must_use]
    pub const fn config(&self) -> &OutlierConfig {
        &self.config
    }

    /// Whether `server` is ejected at `now` (its ejection not yet over).
    #[must_use]
    pub fn is_ejected(&self, now: Instant, server: NodeId) -> bool {
        now < self.latest_end
            && self
                .servers
                .get(&server)
                .and_then(|s| s.ejected_until)
                .is_some_and(|until| now < until)
    }

    /// How many of `servers` are ejected at `now`.
    pub fn ejected_among(&self, now: Instant, servers: impl Iterator<Item = NodeId>) -> usize {
        if now >= self.latest_end {
            return 0;
        }
        servers.filter(|&id| self.is_ejected(now, id)).count()
    }

    /// The counters, `ejected` counted at `now`.
    #[must_use]
    pub fn stats(&self, now: Instant) -> OutlierStats {
        let ejected = self.ejected_among(now, self.servers.keys().copied());
        OutlierStats {
            ejected: ejected as u64,
            ..self.stats
        }
    }

    /// An attempt at `server` ended at `now`: a success (`ok`) or a failure. `room` says
    /// whether the cap leaves room to eject it now (asked only when a rule would). Returns
    /// whether this outcome ejected it.
    pub fn record(
        &mut self,
        now: Instant,
        server: NodeId,
        ok: bool,
        room: impl FnOnce(&Outliers) -> bool,
    ) -> bool {
        if !self.config.enabled
            || (ok && self.config.success_rate_percent == 0 && !self.servers.contains_key(&server))
        {
            return false; // nothing on record and nothing to record: the common case
        }
        let config = self.config;
        let mut entry = self.servers.get(&server).copied().unwrap_or(Server {
            decayed_at: now,
            ..Server::default()
        });
        let eject = match entry.ejected_until {
            Some(until) if now < until => return false, // made before it was ejected
            Some(_) if ok => {
                // The probe succeeded: restored, its count decaying from now.
                self.stats.restored += 1;
                (entry.ejected_until, entry.consecutive, entry.decayed_at) = (None, 0, now);
                false
            }
            Some(_) => true, // the probe failed: ejected again at once
            None => {
                entry.decay(now, config.interval);
                entry.consecutive = if ok { 0 } else { entry.consecutive + 1 };
                let below = entry.below_rate(now, ok, &config);
                below || entry.consecutive >= config.consecutive_failures
            }
        };
        let ejected = eject && {
            let allowed = room(self);
            if !allowed {
                self.stats.ejections_refused += 1;
            }
            allowed
        };
        if ejected {
            if entry.ejected_until.is_some() {
                self.stats.probes_failed += 1;
            }
            entry.times_ejected = entry.times_ejected.saturating_add(1);
            let length = config
                .base_ejection_time
                .saturating_mul(entry.times_ejected)
                .min(config.max_ejection_time);
            let until = now.saturating_add(length);
            entry.ejected_until = Some(until);
            (entry.consecutive, entry.window_total, entry.window_ok) = (0, 0, 0);
            self.latest_end = self.latest_end.max(until);
            self.stats.ejections += 1;
        } else if eject && entry.ejected_until.is_some() {
            // A failed probe the cap did not allow to eject: picked as a normal server, its
            // failures counted again from this one.
            (entry.ejected_until, entry.consecutive, entry.decayed_at) = (None, 1, now);
        }
        if entry.is_clean() && config.success_rate_percent == 0 {
            self.servers.remove(&server);
        } else {
            self.servers.insert(server, entry);
        }
        ejected
    }

    /// The most servers of a filter with `members` members that may be ejected at once:
    /// [`max_ejection_percent`](OutlierConfig::max_ejection_percent) of them, rounded down,
    /// at least one.
    #[must_use]
    pub fn max_ejected(&self, members: usize) -> usize {
        (members * self.config.max_ejection_percent as usize / 100).max(1)
    }
}

impl super::Selector {
    /// The outlier state.
    #[must_use]
    pub const fn outliers(&self) -> &Outliers {
        &self.outliers
    }

    /// Ejects by `config` from now on (the record of each server is kept).
    pub const fn set_outlier_config(&mut self, config: OutlierConfig) {
        self.outliers.config = config;
    }

    /// An attempt at `server` ended at `now`, a success (`ok`) or a failure
    /// ([`Outliers::record`]); the cap is checked against every filter ring of `rings` that
    /// `server` is a member of (O(filters × members), only when a rule would eject). Returns
    /// whether it ejected the server.
    pub fn server_outcome(
        &mut self,
        now: Instant,
        server: NodeId,
        ok: bool,
        rings: &RingSet,
    ) -> bool {
        self.outliers.record(now, server, ok, |outliers| {
            rings.filter_ids().all(|filter| {
                let order = rings.round_robin_order(Some(filter));
                if !order.ids().any(|id| id == server) {
                    return true;
                }
                let ejected = outliers.ejected_among(now, order.ids());
                ejected < outliers.max_ejected(order.len())
            })
        })
    }
}
