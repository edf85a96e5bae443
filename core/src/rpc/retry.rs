//! Retries of calls: which outcomes are retried, the backoff between attempts and the
//! node's retry budget (Finagle's `RetryBudget`, tower's `TpsBudget`).
//!
//! - **What is retried.** An attempt that ended with an outcome proving its request was
//!   never executed (`unexecuted`): refused at once, shed (`Overloaded`), a queue full,
//!   no route. A call marked idempotent ([`CallSpec::idempotent`](super::CallSpec::idempotent))
//!   is also retried after an attempt that may have run ([`CallOutcome::Unknown`]: its server
//!   died or restarted), at another server when there is one. Never after the caller's own
//!   `Cancelled`/`Shutdown`, an `Expired` budget or the call's deadline (`Timeout`).
//! - **Free re-picks.** The machine's immediate re-pick of a request that never left this
//!   node or that a server refused as `NotServed` is not a retry: it costs no budget and
//!   no backoff, each server is tried once per call (bounded by the method's servers), as
//!   before. Only when no server is left does the call's attempt end — that end is what a
//!   retry may follow.
//! - **Backoff.** Before retry `n` (1-based) the call waits `min(max, min × 2ⁿ⁻¹)` halved
//!   plus a uniform jitter of up to the other half ("equal jitter"), drawn from the
//!   machine's seeded generator: 25 ms → 250 ms by default. A retry that would fire at or
//!   after the call's deadline is not made: the call ends with its last outcome.
//! - **Budget.** Every call deposits `budget_percent` % of a retry; every retry and every
//!   hedge withdraws one. Deposits and withdrawals count over a sliding window of
//!   `budget_ttl_ms` (ten slots); on top of them a reserve of `budget_min_per_sec ×` the
//!   window's seconds. A retry without budget is not made (counted in
//!   `RpcStats::budget_exhausted`) and the call ends with its last outcome. Over a window
//!   a node thus makes at most `percent % × calls + min_per_sec × ttl` retries.

use crate::{
    rng::Rng,
    time::{Duration, Instant},
};

use super::CallOutcome;
use crate::outcome::FailReason;

/// Slots of the budget's sliding window.
const SLOTS: usize = 10;

/// One retry in the budget's units (a deposit of `p` % adds `p`).
const ONE_RETRY: i64 = 100;

/// The retry and hedging settings of a node (`Config::rpc_retry`, the config-file block
/// `rpc_retry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Most attempts of one call, its first included (1: never retried). Default 5.
    pub max_attempts: u32,
    /// What each call deposits in the retry budget, in percent of one retry. Default 20.
    pub budget_percent: u32,
    /// Retries per second always allowed on top of the deposits. Default 10.
    pub budget_min_per_sec: u32,
    /// The budget's window, in milliseconds. Default 10,000.
    pub budget_ttl_ms: u64,
    /// The first backoff's upper bound, in milliseconds. Default 25.
    pub backoff_min_ms: u64,
    /// The largest backoff, in milliseconds. Default 250.
    pub backoff_max_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> RetryConfig {
        RetryConfig {
            max_attempts: 5,
            budget_percent: 20,
            budget_min_per_sec: 10,
            budget_ttl_ms: 10_000,
            backoff_min_ms: 25,
            backoff_max_ms: 250,
        }
    }
}

impl RetryConfig {
    /// No retries at all (one attempt, no budget): the baseline of the experiments.
    #[must_use]
    pub const fn none() -> RetryConfig {
        RetryConfig {
            max_attempts: 1,
            budget_percent: 0,
            budget_min_per_sec: 0,
            budget_ttl_ms: 10_000,
            backoff_min_ms: 25,
            backoff_max_ms: 250,
        }
    }

    /// The backoff before retry `retry` (1 for the first), `jitter` drawing its random half.
    #[must_use]
    pub fn backoff(&self, retry: u32, jitter: &mut Rng) -> Duration {
        let shift = retry.saturating_sub(1).min(20);
        let ceiling = self
            .backoff_min_ms
            .saturating_mul(1 << shift)
            .min(self.backoff_max_ms);
        let ceiling = Duration::from_millis(ceiling).as_nanos();
        let ceiling = u64::try_from(ceiling).unwrap_or(u64::MAX);
        let half = ceiling / 2;
        Duration::from_nanos(half + jitter.below(ceiling - half + 1))
    }
}

/// The reasons an attempt's end may be retried for: as `Failed` they prove the request never
/// ran; as `Unknown` (it may have run) only an idempotent call is retried.
const fn retried_reason(reason: FailReason) -> bool {
    matches!(
        reason,
        FailReason::QueueFull
            | FailReason::NoRoute
            | FailReason::TargetGone
            | FailReason::TargetRestarted
            | FailReason::StreamAbandoned
            | FailReason::Overloaded
    )
}

/// Whether an attempt that ended `outcome` proves its request was never executed and may be
/// sent again (after a backoff): see the [module docs](self).
#[must_use]
pub(crate) const fn unexecuted(outcome: &CallOutcome) -> bool {
    matches!(outcome, CallOutcome::Failed(reason) if retried_reason(*reason))
}

/// Whether an attempt of a call (`idempotent` or not) that ended `outcome` may be retried.
#[must_use]
pub(crate) const fn retryable(outcome: &CallOutcome, idempotent: bool) -> bool {
    unexecuted(outcome)
        || (idempotent
            && matches!(outcome, CallOutcome::Unknown(reason) if retried_reason(*reason)))
}

/// The node's retry budget: see the [module docs](self).
#[derive(Clone, Debug)]
pub(crate) struct RetryBudget {
    /// Deposits minus withdrawals per slot, in [`ONE_RETRY`] units.
    slots: [i64; SLOTS],
    /// The slot number (time / slot length) each slot holds.
    epochs: [u64; SLOTS],
    /// A slot's length, in nanoseconds (never 0).
    slot_nanos: u64,
    /// What a call deposits.
    deposit: i64,
    /// The reserve, in [`ONE_RETRY`] units.
    reserve: i64,
}

impl RetryBudget {
    /// The budget `config` describes.
    pub(crate) fn new(config: &RetryConfig) -> RetryBudget {
        let ttl_nanos = config.budget_ttl_ms.max(1).saturating_mul(1_000_000);
        let slot_nanos = (ttl_nanos / SLOTS as u64).max(1);
        // min_per_sec × ttl seconds, exact in milli-units.
        let reserve = i64::from(config.budget_min_per_sec)
            .saturating_mul(i64::try_from(config.budget_ttl_ms).unwrap_or(i64::MAX))
            .saturating_mul(ONE_RETRY)
            / 1000;
        RetryBudget {
            slots: [0; SLOTS],
            epochs: [u64::MAX; SLOTS],
            slot_nanos,
            deposit: i64::from(config.budget_percent),
            reserve,
        }
    }

    /// The slot of `now`, emptied if it last held an older epoch.
    fn slot(&mut self, now: Instant) -> &mut i64 {
        let epoch = now.as_nanos() / self.slot_nanos;
        let i = usize::try_from(epoch % SLOTS as u64).unwrap_or(0);
        if self.epochs[i] != epoch {
            self.epochs[i] = epoch;
            self.slots[i] = 0;
        }
        &mut self.slots[i]
    }

    /// A call was made at `now`.
    pub(crate) fn deposit(&mut self, now: Instant) {
        let deposit = self.deposit;
        *self.slot(now) += deposit;
    }

    /// The budget at `now`, in [`ONE_RETRY`] units: the reserve plus the window's deposits
    /// minus its withdrawals.
    pub(crate) fn balance(&self, now: Instant) -> i64 {
        let epoch = now.as_nanos() / self.slot_nanos;
        let live = |e: u64| e != u64::MAX && e <= epoch && epoch - e < SLOTS as u64;
        self.reserve
            + (0..SLOTS)
                .filter(|&i| live(self.epochs[i]))
                .map(|i| self.slots[i])
                .sum::<i64>()
    }

    /// Takes one retry at `now`; whether there was one.
    pub(crate) fn withdraw(&mut self, now: Instant) -> bool {
        if self.balance(now) < ONE_RETRY {
            return false;
        }
        *self.slot(now) -= ONE_RETRY;
        true
    }
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::*;

    const MS: u64 = 1_000_000;

    /// A budget of deposits only (no reserve).
    fn deposits_only() -> RetryBudget {
        RetryBudget::new(&RetryConfig {
            budget_min_per_sec: 0,
            ..RetryConfig::default()
        })
    }

    #[test]
    fn the_reserve_alone_allows_min_per_sec_times_ttl_retries() {
        let mut budget = RetryBudget::new(&RetryConfig::default());
        let now = Instant::from_millis(5);
        assert_eq!(budget.balance(now), 100 * ONE_RETRY);
        assert_eq!((0..150).filter(|_| budget.withdraw(now)).count(), 100);
        assert_eq!(budget.balance(now), 0);
    }

    #[test]
    fn each_call_deposits_a_fifth_of_a_retry() {
        let mut budget = deposits_only();
        let now = Instant::from_millis(1);
        assert!(!budget.withdraw(now));
        for _ in 0..4 {
            budget.deposit(now);
        }
        assert_eq!(budget.balance(now), 80);
        assert!(!budget.withdraw(now));
        budget.deposit(now);
        assert!(budget.withdraw(now));
        assert!(!budget.withdraw(now));
        // 100 calls: 20 retries.
        for _ in 0..100 {
            budget.deposit(now);
        }
        assert_eq!((0..50).filter(|_| budget.withdraw(now)).count(), 20);
    }

    #[test]
    fn deposits_and_withdrawals_leave_the_window_after_the_ttl() {
        let mut budget = deposits_only();
        for _ in 0..10 {
            budget.deposit(Instant::from_millis(500));
        }
        assert_eq!(budget.balance(Instant::from_millis(9_999)), 200);
        // The slot [0 s, 1 s) leaves the window at 10 s.
        assert_eq!(budget.balance(Instant::from_millis(10_000)), 0);
        // A withdrawal made at 1.5 s is given back at 11 s.
        let mut budget = RetryBudget::new(&RetryConfig::default());
        assert!(budget.withdraw(Instant::from_millis(1_500)));
        assert_eq!(budget.balance(Instant::from_millis(10_999)), 99 * ONE_RETRY);
        assert_eq!(
            budget.balance(Instant::from_millis(11_000)),
            100 * ONE_RETRY
        );
    }

    #[test]
    fn the_backoff_doubles_from_25_ms_to_250_ms_with_equal_jitter() {
        let config = RetryConfig::default();
        let mut rng = Rng::new(7);
        let ceilings = [25, 50, 100, 200, 250, 250, 250];
        for (n, ceiling) in (1..).zip(ceilings) {
            for _ in 0..200 {
                let nanos = u64::try_from(config.backoff(n, &mut rng).as_nanos()).unwrap();
                assert!(
                    nanos >= ceiling * MS / 2 && nanos <= ceiling * MS,
                    "{n}: {nanos}"
                );
            }
        }
        // A fixed seed gives a fixed schedule.
        let mut rng = Rng::new(42);
        let schedule: Vec<u64> = (1..=4)
            .map(|n| u64::try_from(config.backoff(n, &mut rng).as_nanos()).unwrap())
            .collect();
        let mut again = Rng::new(42);
        let replay: Vec<u64> = (1..=4)
            .map(|n| u64::try_from(config.backoff(n, &mut again).as_nanos()).unwrap())
            .collect();
        assert_eq!(schedule, replay);
    }

    #[test]
    fn only_unexecuted_outcomes_are_retried_unless_idempotent() {
        let gone = CallOutcome::Unknown(FailReason::TargetGone);
        let shed = CallOutcome::Failed(FailReason::Overloaded);
        assert!(retryable(&shed, false));
        assert!(!retryable(&gone, false));
        assert!(retryable(&gone, true));
        for reason in [
            FailReason::Timeout,
            FailReason::Cancelled,
            FailReason::Shutdown,
            FailReason::Expired,
        ] {
            assert!(!retryable(&CallOutcome::Unknown(reason), true));
            assert!(!retryable(&CallOutcome::Failed(reason), true));
        }
    }
}
