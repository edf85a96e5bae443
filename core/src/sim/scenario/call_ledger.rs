//! The *call ledger* of the RPC workload: what every call, handler run and broadcast report
//! must satisfy, checked from the outputs alone (the workload in `rpc.rs` feeds it what the
//! members' logs say; the negative tests in `sim/tests/call_ledger_checks.rs` feed it bad
//! outputs by hand and see each rule fire). Rules:
//!
//! - every call has at most one outcome, and (at the end) every call of a live incarnation
//!   has one;
//! - `Reply(bytes)` ⇒ the bytes are the handler's answer and the handler ran exactly once;
//! - `Failed` ⇒ the handler never ran (nor runs later);
//! - no handler runs twice for one call, in any incarnation;
//! - no outcome later than its deadline, and no call of a live caller still open once the
//!   clock is past its deadline; `NotAvailable` exactly at the grace deadline (the grace
//!   timer is its only source: no pick ever found a server);
//! - a broadcast's report names every recipient once, each delivered recipient received it
//!   exactly once, a failed one never, an unknown one at most once, and the sender was
//!   skipped when asked — checked when the report arrives and again at the end of the run
//!   (a second delivery after the report is a breach too).

use alloc::{
    collections::{BTreeMap, BTreeSet},
    format,
    string::String,
    vec::Vec,
};

use bytes::Bytes;

use crate::{
    ids::NodeId,
    outcome::FailReason,
    rpc::{BroadcastDone, BroadcastId, CallId, CallOutcome},
    time::Instant,
};

/// Bytes 8..12 of a call payload (so no other ledger mistakes it for its own).
pub(crate) const CALL_MAGIC: [u8; 4] = *b"RPC1";
/// Bytes 8..12 of a broadcast payload.
pub(crate) const BROADCAST_MAGIC: [u8; 4] = *b"BCS1";

/// A call: (caller, caller's life, call id).
pub(crate) type CallKey = (NodeId, u32, CallId);
/// A broadcast: (sender, sender's life, broadcast id).
pub(crate) type BroadcastKey = (NodeId, u32, BroadcastId);

/// A payload of `12 + filler` bytes: the tag (little endian), `magic`, then `0xab` filler.
pub(crate) fn tagged(tag: u64, magic: [u8; 4], filler: usize) -> Bytes {
    let mut payload = Vec::with_capacity(12 + filler);
    payload.extend_from_slice(&tag.to_le_bytes());
    payload.extend_from_slice(&magic);
    payload.resize(12 + filler, 0xab);
    Bytes::from(payload)
}

/// The tag of a payload made by [`tagged`] with `magic`.
pub(crate) fn tag_of(payload: &[u8], magic: [u8; 4]) -> Option<u64> {
    if payload.len() < 12 || payload[8..12] != magic {
        return None;
    }
    let mut tag = [0u8; 8];
    tag.copy_from_slice(&payload[..8]);
    Some(u64::from_le_bytes(tag))
}

/// One call the workload made.
#[derive(Clone, Debug)]
struct CallEntry {
    tag: u64,
    payload: Bytes,
    deadline: Instant,
    grace_deadline: Instant,
    outcome: Option<CallOutcome>,
    /// Most handler runs allowed: 1, or its attempts for an idempotent call (retries and
    /// hedges may run it again).
    max_runs: usize,
}

/// One broadcast the workload made, and its report once it came.
#[derive(Clone, Debug)]
struct BroadcastEntry {
    payload: Bytes,
    sender: NodeId,
    skip_self: bool,
    report: Option<BroadcastDone>,
}

/// Call and broadcast counts of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RpcTotals {
    /// Calls made.
    pub calls: u64,
    /// Calls ended `Reply`.
    pub replies: u64,
    /// Calls ended `Failed`.
    pub failed: u64,
    /// Calls ended `Unknown`.
    pub unknown: u64,
    /// Handler runs.
    pub executed: u64,
    /// Broadcasts made.
    pub broadcasts: u64,
    /// Call outcomes by label: `reply`, `failed_<reason>`, `unknown_<reason>`.
    pub outcomes: BTreeMap<String, u64>,
}

/// The call ledger; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct CallLedger {
    calls: BTreeMap<CallKey, CallEntry>,
    tags: BTreeMap<u64, CallKey>,
    /// Handler runs per call tag: (server, life).
    executed: BTreeMap<u64, Vec<(NodeId, u32)>>,
    /// Calls by deadline, popped once the clock is past it.
    deadlines: BTreeSet<(Instant, u64)>,
    broadcasts: BTreeMap<BroadcastKey, BroadcastEntry>,
    violations: Vec<String>,
    totals: RpcTotals,
}

impl CallLedger {
    /// A call was made: `tag` carried in `payload`, ending by `deadline`, `NotAvailable`
    /// only at `grace_deadline`.
    pub(crate) fn on_call(
        &mut self,
        key: CallKey,
        tag: u64,
        payload: Bytes,
        deadline: Instant,
        grace_deadline: Instant,
        max_runs: usize,
    ) {
        self.totals.calls += 1;
        self.calls.insert(
            key,
            CallEntry {
                tag,
                payload,
                deadline,
                grace_deadline,
                outcome: None,
                max_runs,
            },
        );
        self.tags.insert(tag, key);
        self.deadlines.insert((deadline, tag));
    }

    /// The oldest call of `(caller, life)` without an outcome.
    pub(crate) fn oldest_open(&self, caller: NodeId, life: u32) -> Option<CallId> {
        // The calls of one life are one key range, oldest first.
        self.calls
            .range((caller, life, CallId(0))..=(caller, life, CallId(u64::MAX)))
            .find(|(_, e)| e.outcome.is_none())
            .map(|((_, _, id), _)| *id)
    }

    /// `server` (life `life`) ran a handler at `at` for a request carrying `payload`.
    /// Returns the call's tag when the request is one a call made.
    pub(crate) fn on_request(
        &mut self,
        server: NodeId,
        life: u32,
        at: Instant,
        payload: &[u8],
    ) -> Option<u64> {
        let Some(tag) = tag_of(payload, CALL_MAGIC) else {
            self.violations
                .push(format!("{server} got a request no call made"));
            return None;
        };
        self.totals.executed += 1;
        let max_runs = (self.tags.get(&tag))
            .and_then(|key| self.calls.get(key))
            .map_or(1, |e| e.max_runs);
        let runs = self.executed.entry(tag).or_default();
        runs.push((server, life));
        if runs.len() > max_runs {
            let runs = format!("{runs:?}");
            let allowed = if max_runs == 1 {
                String::from("once")
            } else {
                format!("its {max_runs} allowed")
            };
            self.violations.push(format!(
                "the handler of call tag {tag} ran more than {allowed}: {runs}"
            ));
        }
        if let Some(key) = self.tags.get(&tag)
            && let Some(CallOutcome::Failed(reason)) =
                self.calls.get(key).and_then(|e| e.outcome.clone())
        {
            self.violations.push(format!(
                "call tag {tag} ended Failed({reason:?}) but its handler ran at {server} at {at:?}"
            ));
        }
        Some(tag)
    }

    /// `caller` (life `life`) reported `outcome` for `call` at `at`.
    pub(crate) fn on_done(
        &mut self,
        caller: NodeId,
        life: u32,
        at: Instant,
        call: CallId,
        outcome: CallOutcome,
    ) {
        let Some(entry) = self.calls.get_mut(&(caller, life, call)) else {
            self.violations
                .push(format!("{caller} ended call {call:?}, which it never made"));
            return;
        };
        if let Some(first) = &entry.outcome {
            let msg = format!("{caller} ended call {call:?} twice: {first:?}, then {outcome:?}");
            self.violations.push(msg);
            return;
        }
        entry.outcome = Some(outcome.clone());
        let entry = entry.clone();
        let label = match outcome.reason() {
            Some(reason) => format!("{}_{}", outcome.class(), reason.as_str()),
            None => String::from(outcome.class()),
        };
        *self.totals.outcomes.entry(label).or_insert(0) += 1;
        let runs = self.executed.get(&entry.tag).map_or(0, Vec::len);
        let mut problems = Vec::new();
        if at > entry.deadline {
            problems.push(format!("ended after its deadline {:?}", entry.deadline));
        }
        match &outcome {
            CallOutcome::Reply(bytes) => {
                self.totals.replies += 1;
                if *bytes != entry.payload {
                    problems.push(String::from("replied with bytes its handler never sent"));
                }
                if runs == 0 || runs > entry.max_runs {
                    problems.push(format!("replied but its handler ran {runs} times"));
                }
            }
            CallOutcome::Failed(reason) => {
                self.totals.failed += 1;
                if runs != 0 {
                    problems.push(format!("failed but its handler ran {runs} times"));
                }
                // Only the grace timer says `NotAvailable`: exactly at the grace deadline.
                if *reason == FailReason::NotAvailable && at != entry.grace_deadline {
                    problems.push(format!(
                        "not available at another instant than its grace deadline {:?}",
                        entry.grace_deadline
                    ));
                }
            }
            _ => self.totals.unknown += 1,
        }
        for problem in problems {
            self.violations.push(format!(
                "{caller} call {call:?} (tag {}) {outcome:?} at {at:?}: {problem}",
                entry.tag
            ));
        }
    }

    /// The clock reads `now`: a call of a live caller (`live(caller, life)`) whose deadline
    /// is before `now` must have its outcome. Each late call is reported once.
    pub(crate) fn check_deadlines(&mut self, now: Instant, live: impl Fn(NodeId, u32) -> bool) {
        while let Some(&(deadline, tag)) = self.deadlines.first() {
            if deadline >= now {
                break;
            }
            self.deadlines.pop_first();
            let Some(&(caller, life, call)) = self.tags.get(&tag) else {
                continue;
            };
            let open = self
                .calls
                .get(&(caller, life, call))
                .is_some_and(|e| e.outcome.is_none());
            if open && live(caller, life) {
                self.violations.push(format!(
                    "{caller} call {call:?} (tag {tag}) has no outcome at {now:?}, after its \
                     deadline {deadline:?}"
                ));
            }
        }
    }

    /// A broadcast was made.
    pub(crate) fn on_broadcast(
        &mut self,
        key: BroadcastKey,
        payload: Bytes,
        sender: NodeId,
        skip_self: bool,
    ) {
        self.totals.broadcasts += 1;
        self.broadcasts.insert(
            key,
            BroadcastEntry {
                payload,
                sender,
                skip_self,
                report: None,
            },
        );
    }

    /// `sender` (life `life`) reported `done`; `received(node, payload)` counts how many
    /// times `node` has delivered `payload` so far.
    pub(crate) fn on_broadcast_done(
        &mut self,
        sender: NodeId,
        life: u32,
        done: &BroadcastDone,
        received: impl Fn(NodeId, &Bytes) -> usize,
    ) {
        let Some(entry) = self.broadcasts.get_mut(&(sender, life, done.broadcast)) else {
            self.violations.push(format!(
                "{sender} reported broadcast {:?}, which it never made",
                done.broadcast
            ));
            return;
        };
        if entry.report.is_some() {
            self.violations
                .push(format!("{sender} reported {:?} twice", done.broadcast));
            return;
        }
        entry.report = Some(done.clone());
        let problems = report_problems(entry, done, &received, false);
        for problem in problems {
            self.violations.push(format!(
                "broadcast {:?} of {sender}: {problem} ({done:?})",
                done.broadcast
            ));
        }
    }

    /// At the end of a run: every call and broadcast of a live incarnation (`live(node,
    /// life)`) has its outcome, and every broadcast report is checked again against what the
    /// recipients received by now.
    pub(crate) fn final_check(
        &mut self,
        live: impl Fn(NodeId, u32) -> bool,
        received: impl Fn(NodeId, &Bytes) -> usize,
    ) {
        let mut problems = Vec::new();
        for ((caller, life, call), entry) in &self.calls {
            if live(*caller, *life) && entry.outcome.is_none() {
                problems.push(format!(
                    "{caller} call {call:?} (tag {}) has no outcome at the end",
                    entry.tag
                ));
            }
        }
        for ((sender, life, id), entry) in &self.broadcasts {
            match &entry.report {
                None if live(*sender, *life) => {
                    problems.push(format!(
                        "{sender} broadcast {id:?} has no report at the end"
                    ));
                }
                None => {}
                Some(done) => {
                    for problem in report_problems(entry, done, &received, true) {
                        problems.push(format!(
                            "broadcast {id:?} of {sender}, at the end of the run: {problem} \
                             ({done:?})"
                        ));
                    }
                }
            }
        }
        self.violations.extend(problems);
    }

    /// Breaches found since the last call.
    pub(crate) fn take_violations(&mut self) -> Vec<String> {
        core::mem::take(&mut self.violations)
    }

    /// The run's counts.
    pub(crate) fn totals(&self) -> &RpcTotals {
        &self.totals
    }
}

/// What is wrong with report `done` of `entry`, given what the recipients received
/// (`counts_only`: only the received counts, for the re-check at the end of a run — the
/// report's own shape was checked when it came).
fn report_problems(
    entry: &BroadcastEntry,
    done: &BroadcastDone,
    received: &impl Fn(NodeId, &Bytes) -> usize,
    counts_only: bool,
) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    let lists = done
        .delivered
        .iter()
        .map(|&n| (n, 1..=1))
        .chain(done.failed.iter().map(|&(n, _)| (n, 0..=0)))
        .chain(done.unknown.iter().map(|&(n, _)| (n, 0..=1)));
    for (node, allowed) in lists {
        if !seen.insert(node) && !counts_only {
            problems.push(format!("{node} named twice"));
        }
        if node == entry.sender && entry.skip_self && !counts_only {
            problems.push(String::from("the sender was not skipped"));
        }
        let got = received(node, &entry.payload);
        if !allowed.contains(&got) {
            problems.push(format!("{node} received it {got} times"));
        }
    }
    problems
}
