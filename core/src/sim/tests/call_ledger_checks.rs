//! Every check of the call ledger (`sim/scenario/call_ledger.rs`) shown to fire: each test
//! feeds it by hand outputs that break one rule and asserts the exact violation it names, and
//! beside it the nearest history that keeps the rule, which yields none.

use alloc::{string::String, vec, vec::Vec};

use bytes::Bytes;

use crate::sim::scenario::call_ledger::{BROADCAST_MAGIC, CALL_MAGIC, CallKey, CallLedger, tagged};
use crate::{
    ids::NodeId,
    outcome::FailReason,
    rpc::{BroadcastDone, BroadcastId, CallId, CallOutcome},
    time::{Duration, Instant},
};

const CALLER: NodeId = NodeId(1);
const SERVER: NodeId = NodeId(2);
const OTHER: NodeId = NodeId(3);

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn none() -> Vec<String> {
    Vec::new()
}

fn key(call: u64) -> CallKey {
    (CALLER, 0, CallId(call))
}

/// Call `n` (tag `n`) made at 0 with deadline 1,000 ms and grace deadline 250 ms.
fn call(ledger: &mut CallLedger, n: u64) -> Bytes {
    let payload = tagged(n, CALL_MAGIC, 3);
    ledger.on_call(key(n), n, payload.clone(), at(1_000), at(250), 1);
    payload
}

/// Asserts exactly one violation, containing `needle`.
fn one(ledger: &mut CallLedger, needle: &str) {
    let v = ledger.take_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains(needle), "{needle:?} not in {v:?}");
}

#[test]
fn a_reply_needs_exactly_one_handler_run_with_the_handlers_bytes() {
    let mut ledger = CallLedger::default();
    let p1 = call(&mut ledger, 1);
    let p2 = call(&mut ledger, 2);
    let _ = call(&mut ledger, 3);
    assert_eq!(ledger.on_request(SERVER, 0, at(5), &p1), Some(1));
    ledger.on_done(CALLER, 0, at(6), CallId(1), CallOutcome::Reply(p1));
    assert_eq!(ledger.take_violations(), none());
    // Bytes the handler never sent.
    assert_eq!(ledger.on_request(SERVER, 0, at(5), &p2), Some(2));
    let forged = Bytes::from_static(b"not the handler's answer");
    ledger.on_done(CALLER, 0, at(6), CallId(2), CallOutcome::Reply(forged));
    one(&mut ledger, "replied with bytes its handler never sent");
    // A reply with no handler run.
    ledger.on_done(
        CALLER,
        0,
        at(6),
        CallId(3),
        CallOutcome::Reply(tagged(3, CALL_MAGIC, 3)),
    );
    one(&mut ledger, "replied but its handler ran 0 times");
    assert_eq!(ledger.totals().replies, 3);
}

#[test]
fn a_reply_is_flagged_when_the_handler_ran_twice() {
    let mut ledger = CallLedger::default();
    let p = call(&mut ledger, 1);
    ledger.on_request(SERVER, 0, at(5), &p);
    ledger.on_request(OTHER, 1, at(7), &p);
    one(
        &mut ledger,
        "the handler of call tag 1 ran more than once: [(NodeId(2), 0), (NodeId(3), 1)]",
    );
    ledger.on_done(CALLER, 0, at(8), CallId(1), CallOutcome::Reply(p));
    one(&mut ledger, "replied but its handler ran 2 times");
}

#[test]
fn failed_means_the_handler_never_ran_before_or_after() {
    let mut ledger = CallLedger::default();
    let p1 = call(&mut ledger, 1);
    let p2 = call(&mut ledger, 2);
    // Ran, then reported Failed.
    ledger.on_request(SERVER, 0, at(5), &p1);
    ledger.on_done(
        CALLER,
        0,
        at(6),
        CallId(1),
        CallOutcome::Failed(FailReason::TargetGone),
    );
    one(&mut ledger, "failed but its handler ran 1 times");
    // Reported Failed, then ran.
    ledger.on_done(
        CALLER,
        0,
        at(6),
        CallId(2),
        CallOutcome::Failed(FailReason::NoRoute),
    );
    assert_eq!(ledger.take_violations(), none());
    ledger.on_request(SERVER, 0, at(9), &p2);
    one(
        &mut ledger,
        "call tag 2 ended Failed(NoRoute) but its handler ran at 0x2",
    );
}

#[test]
fn an_outcome_after_the_deadline_is_a_violation_and_at_it_is_not() {
    let mut ledger = CallLedger::default();
    let _ = call(&mut ledger, 1);
    let _ = call(&mut ledger, 2);
    let unknown = CallOutcome::Unknown(FailReason::Timeout);
    ledger.on_done(CALLER, 0, at(1_000), CallId(1), unknown.clone());
    assert_eq!(ledger.take_violations(), none());
    ledger.on_done(CALLER, 0, at(1_001), CallId(2), unknown);
    one(&mut ledger, "ended after its deadline");
}

#[test]
fn an_open_call_of_a_live_caller_past_its_deadline_is_a_violation_once() {
    let mut ledger = CallLedger::default();
    let _ = call(&mut ledger, 1);
    let _ = call(&mut ledger, 2);
    ledger.on_call(
        (OTHER, 0, CallId(1)),
        3,
        tagged(3, CALL_MAGIC, 0),
        at(1_000),
        at(1_000),
        1,
    );
    ledger.check_deadlines(at(1_000), |_, _| true);
    assert_eq!(ledger.take_violations(), none());
    ledger.on_done(
        CALLER,
        0,
        at(1_000),
        CallId(1),
        CallOutcome::Unknown(FailReason::Timeout),
    );
    // OTHER's life 0 is over: its call has no outcome by design.
    ledger.check_deadlines(at(1_001), |node, _| node == CALLER);
    let v = ledger.take_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with("0x1 call CallId(2) (tag 2) has no outcome at"),
        "{v:?}"
    );
    assert!(v[0].contains("after its deadline"), "{v:?}");
    ledger.check_deadlines(at(5_000), |_, _| true);
    assert_eq!(ledger.take_violations(), none());
}

#[test]
fn not_available_only_exactly_at_the_grace_deadline() {
    let mut ledger = CallLedger::default();
    let _ = call(&mut ledger, 1);
    let _ = call(&mut ledger, 2);
    let na = CallOutcome::Failed(FailReason::NotAvailable);
    ledger.on_done(CALLER, 0, at(250), CallId(1), na.clone());
    assert_eq!(ledger.take_violations(), none());
    ledger.on_done(CALLER, 0, at(249), CallId(2), na);
    one(
        &mut ledger,
        "not available at another instant than its grace deadline",
    );
}

#[test]
fn a_second_outcome_an_unknown_call_and_a_foreign_request_are_violations() {
    let mut ledger = CallLedger::default();
    let _ = call(&mut ledger, 1);
    let failed = CallOutcome::Failed(FailReason::NoRoute);
    ledger.on_done(CALLER, 0, at(3), CallId(1), failed.clone());
    ledger.on_done(
        CALLER,
        0,
        at(4),
        CallId(1),
        CallOutcome::Unknown(FailReason::Timeout),
    );
    one(&mut ledger, "0x1 ended call CallId(1) twice");
    ledger.on_done(CALLER, 1, at(4), CallId(1), failed);
    one(&mut ledger, "0x1 ended call CallId(1), which it never made");
    assert_eq!(ledger.on_request(SERVER, 0, at(5), b"no tag here"), None);
    one(&mut ledger, "0x2 got a request no call made");
}

#[test]
fn every_call_and_broadcast_of_a_live_life_has_its_outcome_at_the_end() {
    let mut ledger = CallLedger::default();
    let _ = call(&mut ledger, 1);
    ledger.on_call(
        (OTHER, 0, CallId(1)),
        2,
        tagged(2, CALL_MAGIC, 0),
        at(1_000),
        at(1_000),
        1,
    );
    ledger.on_broadcast(
        (CALLER, 0, BroadcastId(1)),
        tagged(3, BROADCAST_MAGIC, 4),
        CALLER,
        false,
    );
    ledger.final_check(|node, _| node == CALLER, |_, _| 0);
    let v = ledger.take_violations();
    assert_eq!(
        v,
        vec![
            String::from("0x1 call CallId(1) (tag 1) has no outcome at the end"),
            String::from("0x1 broadcast BroadcastId(1) has no report at the end"),
        ]
    );
}

/// A report of broadcast 1 of CALLER: delivered to SERVER, failed at OTHER, unknown at 4.
fn report() -> BroadcastDone {
    BroadcastDone {
        broadcast: BroadcastId(1),
        delivered: vec![SERVER],
        failed: vec![(OTHER, FailReason::TargetGone)],
        unknown: vec![(NodeId(4), FailReason::Timeout)],
    }
}

#[test]
fn a_broadcast_report_must_match_what_each_recipient_received() {
    let payload = tagged(7, BROADCAST_MAGIC, 4);
    let bkey = (CALLER, 0, BroadcastId(1));
    let mut ledger = CallLedger::default();
    ledger.on_broadcast(bkey, payload.clone(), CALLER, true);
    // SERVER once, OTHER never, 4 once: as reported.
    let good = |node: NodeId, _: &Bytes| usize::from(node == SERVER || node == NodeId(4));
    ledger.on_broadcast_done(CALLER, 0, &report(), good);
    assert_eq!(ledger.take_violations(), none());
    ledger.on_broadcast_done(CALLER, 0, &report(), good);
    one(&mut ledger, "0x1 reported BroadcastId(1) twice");
    ledger.on_broadcast_done(CALLER, 1, &report(), good);
    one(
        &mut ledger,
        "0x1 reported broadcast BroadcastId(1), which it never made",
    );

    for (received, needle) in [
        ([0, 0, 1], "0x2 received it 0 times"),
        ([2, 0, 1], "0x2 received it 2 times"),
        ([1, 1, 1], "0x3 received it 1 times"),
        ([1, 0, 2], "0x4 received it 2 times"),
    ] {
        let mut ledger = CallLedger::default();
        ledger.on_broadcast(bkey, payload.clone(), CALLER, true);
        let counts = |node: NodeId, p: &Bytes| {
            assert_eq!(*p, payload);
            match node.0 {
                2 => received[0],
                3 => received[1],
                4 => received[2],
                _ => 0,
            }
        };
        ledger.on_broadcast_done(CALLER, 0, &report(), counts);
        one(&mut ledger, needle);
    }
}

#[test]
fn a_broadcast_report_names_each_recipient_once_and_skips_the_sender_when_asked() {
    let payload = tagged(7, BROADCAST_MAGIC, 4);
    let mut ledger = CallLedger::default();
    ledger.on_broadcast((CALLER, 0, BroadcastId(1)), payload.clone(), CALLER, true);
    let mut done = report();
    done.delivered = vec![SERVER, CALLER];
    done.unknown = vec![(SERVER, FailReason::Timeout)];
    let counts = |node: NodeId, _: &Bytes| usize::from(node == SERVER || node == CALLER);
    ledger.on_broadcast_done(CALLER, 0, &done, counts);
    let v = ledger.take_violations();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v[0].contains("the sender was not skipped"), "{v:?}");
    assert!(v[1].contains("0x2 named twice"), "{v:?}");
}

#[test]
fn a_delivery_after_the_report_is_caught_by_the_check_at_the_end() {
    let payload = tagged(7, BROADCAST_MAGIC, 4);
    let mut ledger = CallLedger::default();
    ledger.on_broadcast((CALLER, 0, BroadcastId(1)), payload, CALLER, false);
    let at_report = |node: NodeId, _: &Bytes| usize::from(node == SERVER);
    ledger.on_broadcast_done(CALLER, 0, &report(), at_report);
    assert_eq!(ledger.take_violations(), none());
    // Unchanged at the end: nothing more to say.
    ledger.final_check(|_, _| true, at_report);
    assert_eq!(ledger.take_violations(), none());
    // OTHER (reported failed) and SERVER (again) received it after the report.
    let later = |node: NodeId, _: &Bytes| match node.0 {
        2 => 2,
        3 => 1,
        _ => 0,
    };
    ledger.final_check(|_, _| true, later);
    let v = ledger.take_violations();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v[0].starts_with(
            "broadcast BroadcastId(1) of 0x1, at the end of the run: 0x2 received it 2 times"
        ),
        "{v:?}"
    );
    assert!(v[1].contains("0x3 received it 1 times"), "{v:?}");
}

/// An idempotent call may run as often as it has attempts (retries, hedges), no more; a
/// call that is not runs once.
#[test]
fn an_idempotent_call_may_run_once_per_attempt() {
    let mut ledger = CallLedger::default();
    let payload = tagged(7, CALL_MAGIC, 3);
    ledger.on_call(key(7), 7, payload.clone(), at(1_000), at(250), 2);
    assert_eq!(ledger.on_request(SERVER, 0, at(5), &payload), Some(7));
    assert_eq!(ledger.on_request(OTHER, 0, at(6), &payload), Some(7));
    ledger.on_done(
        CALLER,
        0,
        at(7),
        CallId(7),
        CallOutcome::Reply(payload.clone()),
    );
    assert_eq!(ledger.take_violations(), none());
    assert_eq!(ledger.on_request(SERVER, 0, at(8), &payload), Some(7));
    one(&mut ledger, "ran more than its 2 allowed");
}
