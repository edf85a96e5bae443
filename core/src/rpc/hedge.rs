//! A call's attempts: retries after a backoff ([`super::retry`]) and one hedge.
//!
//! A call is one entry of the calls table; its hedge is a second entry (its own wire call
//! id, so a reply matches exactly one attempt: `awaiting(from, incarnation, call)` stays
//! exact) whose [`Attempts::head`] names the call. When an attempt ends:
//! - a reply wins: the call reports it, its other attempt is withdrawn if still queued here
//!   or else cancelled (a `Cancel` message to its server; counted in `hedge_cancels`), and a
//!   late reply from it counts `late_replies`;
//! - the caller's `Cancelled`/`Shutdown` ends the call and cancels its other attempt;
//! - any other end is absorbed while the other attempt is still out (the call waits for it,
//!   [`CallState::Idle`] if its own attempt ended); else the call is retried if its policy
//!   and the budget allow, or ends with that outcome — `Unknown` rather than `Failed` when an
//!   earlier attempt may have run.
//!
//! The hedge is sent `hedge_after` after the call's first request, if no reply came by
//! then, to another server than the first (none left: no hedge); only idempotent calls
//! hedge (`CallSpec::hedge_after` is refused otherwise); the hedge counts as an attempt and
//! withdraws from the retry budget like a retry. `hedge_after` is a fixed delay or the
//! method's p95 at the instant the request is sent (`latency.rs`: no p95 yet, no hedge).

use alloc::vec::Vec;

use super::{
    Call, CallId, CallMetadata, CallOutcome, CallState, HedgeAfter, Rpc, RpcHost, RpcOutput,
    latency::Latencies,
    retry::{RetryBudget, RetryConfig, retryable},
};
use crate::{outcome::FailReason, rng::Rng, time::Instant, timer::TimerQueue, wire::RpcMessage};

/// A call's retry and hedging state.
#[derive(Clone, Debug, Default)]
pub(crate) struct Attempts {
    /// Whether the call may run more than once (`CallSpec::idempotent`).
    pub(crate) idempotent: bool,
    /// When to hedge after the call's request (`CallSpec::hedge_after`).
    pub(crate) hedge_after: Option<HedgeAfter>,
    /// Most attempts (first, retries and hedge).
    pub(crate) max: u32,
    /// Attempts made so far.
    pub(crate) made: u32,
    /// For a hedge attempt: the call it hedges.
    pub(crate) head: Option<CallId>,
    /// For a call: its hedge attempt, while open.
    pub(crate) hedge: Option<CallId>,
    /// Whether the call was hedged already (once per call).
    pub(crate) hedged: bool,
    /// The outcome of the call's last ended attempt.
    pub(crate) last: Option<CallOutcome>,
    /// Whether an ended attempt may have run (the call never ends `Failed` then).
    pub(crate) maybe_executed: bool,
    /// The servers the call's own request (its wire id) may have run at: a retry never goes
    /// back to one, whose duplicate memory would drop it unanswered.
    pub(crate) ran_at: Vec<crate::ids::NodeId>,
    /// The server of the call's last ended attempt (what its `CallDone` names when the call
    /// ends between attempts).
    pub(crate) last_server: Option<crate::ids::NodeId>,
}

/// The machine's retry state: settings, budget, jitter, and the wake-ups of calls due a
/// retry or a hedge.
#[derive(Debug)]
pub(crate) struct Retrying {
    pub(crate) config: RetryConfig,
    pub(crate) budget: RetryBudget,
    rng: Rng,
    /// Per call: when its retry or its hedge is due.
    wakes: TimerQueue<CallId>,
    /// Hedge attempts open (they are calls table entries but not calls).
    pub(crate) hedges_open: u64,
    /// The recent latency of the methods hedged at their p95.
    pub(crate) latencies: Latencies,
}

impl Default for Retrying {
    fn default() -> Retrying {
        Retrying::new(RetryConfig::default(), 0)
    }
}

impl Retrying {
    /// The state for `config`, its jitter seeded from `seed`.
    pub(crate) fn new(config: RetryConfig, seed: u64) -> Retrying {
        Retrying {
            config,
            budget: RetryBudget::new(&config),
            rng: Rng::new(seed ^ 0x0072_6574_7279),
            wakes: TimerQueue::new(),
            hedges_open: 0,
            latencies: Latencies::default(),
        }
    }

    /// The earliest retry or hedge.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.wakes.next_deadline()
    }
}

/// Whether `outcome` ends the whole call whatever its other attempt does.
fn ends_the_call(outcome: &CallOutcome) -> bool {
    matches!(
        outcome,
        CallOutcome::Reply(_)
            | CallOutcome::Failed(FailReason::Cancelled | FailReason::Shutdown)
            | CallOutcome::Unknown(FailReason::Cancelled | FailReason::Shutdown)
    )
}

impl Rpc {
    /// A call was opened at `now`: it deposits in the budget.
    pub(super) fn call_opened(&mut self, now: Instant) {
        self.retrying.budget.deposit(now);
    }

    /// A call asks to be hedged at `hedge_after`: a method hedged at its p95 is tracked
    /// from now on (up to the cap: `latency.rs`).
    pub(super) fn hedge_asked(&mut self, method: &str, hedge_after: Option<HedgeAfter>) {
        if hedge_after == Some(HedgeAfter::MethodP95) {
            self.retrying.latencies.track(method);
        }
    }

    /// The open call `id` sent a request at `now`: its hedge is armed if it asks for one
    /// (at the method's p95: only once the method has one).
    pub(super) fn request_sent(&mut self, now: Instant, id: CallId) {
        let Some(call) = self.calls.get(id) else {
            return;
        };
        let a = &call.attempts;
        if a.head.is_some() || a.hedged || self.retrying.wakes.contains(id) {
            return;
        }
        let after = match a.hedge_after {
            Some(HedgeAfter::Delay(delay)) => delay,
            Some(HedgeAfter::MethodP95) => match self.retrying.latencies.p95(&call.method) {
                Some(p95) => p95,
                None => return,
            },
            None => return,
        };
        let at = now.saturating_add(after);
        if at < call.deadline {
            self.retrying.wakes.replace(id, at);
        }
    }

    /// The attempt `id` got its reply at `now`: one latency sample of its method, if
    /// tracked.
    pub(super) fn reply_arrived(&mut self, now: Instant, id: CallId) {
        if let Some(Call {
            method,
            state: CallState::Sent { sent_at, .. },
            ..
        }) = self.calls.get(id)
        {
            self.retrying.latencies.replied(method, *sent_at, now);
        }
    }

    /// The attempt `loser` lost at `now` to its call's other attempt's reply: it took at
    /// least this long, a lower bound of its latency that keeps the attempts a hedge cut
    /// short in the method's window (`latency.rs`).
    fn outlasted(&mut self, now: Instant, loser: CallId) {
        if let Some(Call {
            method,
            state: CallState::Sent { sent_at, .. },
            ..
        }) = self.calls.get(loser)
        {
            self.retrying.latencies.outlasted(method, *sent_at, now);
        }
    }

    /// The attempt `id` ended with `outcome` at `now`: reports the call's outcome (with the
    /// reply's `metadata`), or absorbs it (the call's other attempt is out, or a retry is
    /// scheduled). See the [module docs](self).
    pub(super) fn attempt_ended(
        &mut self,
        now: Instant,
        id: CallId,
        outcome: CallOutcome,
        metadata: CallMetadata,
        host: &mut impl RpcHost,
    ) {
        let Some(call) = self.calls.get(id) else {
            return;
        };
        let head = call.attempts.head.unwrap_or(id);
        if let CallState::Sent { server, .. } = call.state
            && let Some(call) = self.calls.get_mut(head)
        {
            call.attempts.last_server = Some(server);
            if id == head && matches!(outcome, CallOutcome::Unknown(_)) {
                call.attempts.ran_at.push(server);
            }
        }
        if !ends_the_call(&outcome) && self.absorbed(now, id, head, &outcome) {
            return;
        }
        self.report(now, id, head, outcome, metadata, host);
    }

    /// Whether the end of attempt `id` (of call `head`) with `outcome` leaves the call
    /// open: its other attempt is out, or a retry is scheduled.
    fn absorbed(&mut self, now: Instant, id: CallId, head: CallId, outcome: &CallOutcome) -> bool {
        let other = if id == head {
            self.calls.get(head).and_then(|c| c.attempts.hedge)
        } else {
            Some(head)
        };
        let other_out = other
            .and_then(|o| self.calls.get(o))
            .is_some_and(|c| c.state != CallState::Idle);
        let Some(call) = self.calls.get_mut(head) else {
            return false;
        };
        call.attempts.maybe_executed |= matches!(outcome, CallOutcome::Unknown(_));
        call.attempts.last = Some(outcome.clone());
        if other_out {
            self.drop_attempt(id, head);
            return true;
        }
        if !self.schedule_retry(now, head, outcome) {
            return false;
        }
        self.drop_attempt(id, head);
        true
    }

    /// The ended attempt `id` of call `head` is let go: a hedge entry is closed, the call
    /// itself goes idle (its server not to be picked again first).
    fn drop_attempt(&mut self, id: CallId, head: CallId) {
        if id == head {
            self.calls.idle(head, true);
        } else {
            self.close_hedge(id, head);
        }
    }

    /// Closes the hedge entry `id` of call `head`.
    fn close_hedge(&mut self, id: CallId, head: CallId) {
        if self.calls.close(id).is_some() {
            self.retrying.hedges_open -= 1;
        }
        if let Some(call) = self.calls.get_mut(head) {
            call.attempts.hedge = None;
        }
    }

    /// Schedules a retry of `head` after `outcome` if the policy, its attempts, its deadline
    /// and the budget allow; whether it did.
    fn schedule_retry(&mut self, now: Instant, head: CallId, outcome: &CallOutcome) -> bool {
        let Some(call) = self.calls.get(head) else {
            return false;
        };
        let a = &call.attempts;
        if !retryable(outcome, a.idempotent) || a.made >= a.max {
            return false;
        }
        let (retry, deadline) = (a.made, call.deadline);
        let delay = self.retrying.config.backoff(retry, &mut self.retrying.rng);
        let at = now.saturating_add(delay);
        if at >= deadline {
            return false;
        }
        if !self.retrying.budget.withdraw(now) {
            self.stats.budget_exhausted += 1;
            return false;
        }
        self.stats.retries += 1;
        if let Some(call) = self.calls.get_mut(head) {
            call.attempts.made += 1;
        }
        self.calls.idle(head, true);
        self.retrying.wakes.replace(head, at);
        true
    }

    /// Reports call `head`'s outcome (its attempt `id` ended with `outcome`) and ends its
    /// other attempt.
    fn report(
        &mut self,
        now: Instant,
        id: CallId,
        head: CallId,
        outcome: CallOutcome,
        metadata: CallMetadata,
        host: &mut impl RpcHost,
    ) {
        let server = match self.calls.get(id) {
            Some(Call {
                state: CallState::Sent { server, .. },
                ..
            }) => Some(*server),
            Some(call) => call.attempts.last_server,
            None => None,
        };
        let Some(call) = self.calls.get(head) else {
            return;
        };
        let mut maybe_executed = call.attempts.maybe_executed;
        let losers: Vec<CallId> = [Some(head), call.attempts.hedge]
            .into_iter()
            .flatten()
            .filter(|&other| other != id)
            .collect();
        let won = matches!(outcome, CallOutcome::Reply(_));
        for loser in losers {
            if won {
                self.outlasted(now, loser);
            }
            maybe_executed |= self.cancel_loser(now, loser, host);
            if loser != head {
                self.close_hedge(loser, head);
            }
        }
        if id != head {
            self.close_hedge(id, head);
        }
        self.retrying.wakes.cancel(head);
        if self.calls.close(head).is_none() {
            return;
        }
        let outcome = match outcome {
            CallOutcome::Failed(reason) if maybe_executed => CallOutcome::Unknown(reason),
            outcome => outcome,
        };
        host.output(RpcOutput::CallDone {
            call: head,
            outcome,
            server,
            metadata,
        });
    }

    /// The attempt `loser` lost: its request is withdrawn if still queued here, else its
    /// server is sent a `Cancel`; whether it may have run.
    fn cancel_loser(&mut self, now: Instant, loser: CallId, host: &mut impl RpcHost) -> bool {
        let Some(call) = self.calls.get(loser) else {
            return false;
        };
        let CallState::Sent {
            server,
            msg,
            delivered,
            ..
        } = call.state
        else {
            return false;
        };
        self.stats.hedge_cancels += 1;
        if !delivered && host.withdraw(server, msg) {
            return false;
        }
        let message = RpcMessage::Cancel {
            call: loser.0,
            caller_incarnation: self.settings.incarnation,
        };
        let deadline = now + self.settings.message_timeout;
        self.send(now, server, &message, deadline, host);
        true
    }

    /// The retries and hedges due at `now`.
    pub(super) fn wake_due(&mut self, now: Instant, host: &mut impl RpcHost) {
        while let Some((head, _)) = self.retrying.wakes.pop_expired(now) {
            let Some(call) = self.calls.get(head) else {
                continue;
            };
            match call.state {
                CallState::Idle if call.attempts.hedge.is_none() => self.retry_now(now, head, host),
                CallState::Sent { server, .. } if !call.attempts.hedged => {
                    self.hedge_now(now, head, server, host);
                }
                _ => {}
            }
        }
    }

    /// The idle call `head`'s retry is due: a server it did not try yet (else any it tried
    /// whose attempt provably did not run), or the call ends with its last outcome.
    fn retry_now(&mut self, now: Instant, head: CallId, host: &mut impl RpcHost) {
        let mut cleared = false;
        loop {
            let mut pick = self.pick_for(head, None, host);
            if pick.is_none() && !cleared {
                cleared = true;
                if let Some(call) = self.calls.get_mut(head) {
                    // Every server tried: again, but never one the request may have run at.
                    call.tried.clone_from(&call.attempts.ran_at);
                }
                pick = self.pick_for(head, None, host);
            }
            let usable = pick.filter(|&s| s != self.settings.own || self.settings.allow_self_calls);
            let Some(server) = usable else {
                let last = self.calls.get(head).and_then(|c| c.attempts.last.clone());
                let last = last.unwrap_or(CallOutcome::Failed(FailReason::NotAvailable));
                // Ends here: no server to retry at is not a failed attempt to retry again.
                self.report(now, head, head, last, CallMetadata::new(), host);
                return;
            };
            if self.send_request(now, head, server, host) {
                return;
            }
        }
    }

    /// The call `head` (its request at `first`) had no reply by its hedge delay: a second
    /// request to another server, if attempts and budget allow.
    fn hedge_now(
        &mut self,
        now: Instant,
        head: CallId,
        first: crate::ids::NodeId,
        host: &mut impl RpcHost,
    ) {
        let Some(call) = self.calls.get(head) else {
            return;
        };
        if call.attempts.made >= call.attempts.max {
            return;
        }
        let Some(server) = self.pick_for(head, Some(first), host) else {
            return;
        };
        if server == self.settings.own && !self.settings.allow_self_calls {
            return;
        }
        if !self.retrying.budget.withdraw(now) {
            self.stats.budget_exhausted += 1;
            return;
        }
        let Some(call) = self.calls.get_mut(head) else {
            return;
        };
        call.attempts.hedged = true;
        call.attempts.made += 1;
        let hedge = Call {
            state: CallState::Waiting,
            tried: Vec::new(),
            failure: None,
            attempts: Attempts {
                head: Some(head),
                ..Attempts::default()
            },
            ..call.clone()
        };
        let id = self.calls.next_id();
        self.calls.open(id, hedge);
        self.retrying.hedges_open += 1;
        if self.send_request(now, id, server, host) {
            self.stats.hedges += 1;
            if let Some(call) = self.calls.get_mut(head) {
                call.attempts.hedge = Some(id);
            }
        } else {
            self.close_hedge(id, head);
        }
    }
}
