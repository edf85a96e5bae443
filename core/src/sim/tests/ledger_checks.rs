//! Every check of the delivery ledger shown to fire: each test feeds the ledger by hand a
//! history that breaks one rule and asserts the exact violation it names — and, beside it,
//! the nearest history that keeps the rule, which yields none.

use alloc::vec::Vec;

use crate::sim::ledger::{Ledger, TAG_MAGIC};
use crate::{
    ids::{MsgId, NodeId},
    outcome::{FailReason, Outcome},
    time::{Duration, Instant},
};

const SENDER: NodeId = NodeId(1);
const TARGET: NodeId = NodeId(2);

fn payload(tag: u64) -> Vec<u8> {
    let mut p = tag.to_le_bytes().to_vec();
    p.extend_from_slice(&TAG_MAGIC);
    p
}

fn at(ms: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(ms)
}

fn none() -> Vec<alloc::string::String> {
    Vec::new()
}

/// A ledger with tags 1..=`n` accepted from SENDER (life 0) as msg#1..=n for TARGET, with
/// deadline 8 s.
fn accepted(n: u64) -> Ledger {
    let mut ledger = Ledger::default();
    for tag in 1..=n {
        ledger.on_accepted(SENDER, 0, MsgId(tag), tag, Some(TARGET), Some(at(8_000)));
    }
    ledger
}

/// Asserts exactly one violation, containing `needle`.
fn one(ledger: &mut Ledger, needle: &str) {
    let v = ledger.take_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains(needle), "{needle:?} not in {v:?}");
}

#[test]
fn a_delivery_of_a_tag_no_node_accepted_is_a_violation() {
    let mut ledger = accepted(1);
    ledger.on_received(TARGET, 0, SENDER, &payload(1));
    assert_eq!(ledger.take_violations(), none());
    ledger.on_received(TARGET, 0, SENDER, &payload(99));
    one(
        &mut ledger,
        "delivered tag 99 from 0x1, which no node accepted",
    );
}

#[test]
fn a_delivery_from_another_sender_or_to_another_node_is_a_violation() {
    let mut ledger = accepted(2);
    ledger.on_received(TARGET, 0, NodeId(3), &payload(1));
    one(
        &mut ledger,
        "tag 1 sent by 0x1 delivered at 0x2 as coming from 0x3",
    );
    ledger.on_received(NodeId(4), 0, SENDER, &payload(2));
    one(&mut ledger, "tag 2 sent by 0x1 to 0x2 delivered at 0x4");
}

#[test]
fn a_second_delivery_is_a_violation_in_any_incarnation() {
    let mut ledger = accepted(2);
    ledger.on_received(TARGET, 0, SENDER, &payload(1));
    ledger.on_received(TARGET, 0, SENDER, &payload(2));
    assert_eq!(ledger.take_violations(), none());
    ledger.on_received(TARGET, 0, SENDER, &payload(2));
    one(
        &mut ledger,
        "tag 2 (msg#2 of 0x1) delivered 2 times: first at 0x2 (incarnation 0), now at 0x2 \
         (incarnation 0)",
    );
    ledger.on_received(TARGET, 1, SENDER, &payload(1));
    one(
        &mut ledger,
        "its new incarnation took the retransmission as a new stream",
    );
    assert_eq!(ledger.totals().delivered, 2);
}

#[test]
fn failed_and_delivered_exclude_each_other_in_either_order() {
    let mut ledger = accepted(2);
    ledger.on_outcome(
        SENDER,
        0,
        MsgId(1),
        Outcome::Failed(FailReason::NoRoute),
        at(1),
    );
    assert_eq!(ledger.take_violations(), none());
    ledger.on_received(TARGET, 0, SENDER, &payload(1));
    one(
        &mut ledger,
        "delivered at 0x2 after it was reported Failed(NoRoute)",
    );
    ledger.on_received(TARGET, 0, SENDER, &payload(2));
    ledger.on_outcome(
        SENDER,
        0,
        MsgId(2),
        Outcome::Failed(FailReason::TargetGone),
        at(2),
    );
    one(
        &mut ledger,
        "tag 2 (msg#2 of 0x1) reported Failed(TargetGone) but was delivered",
    );
}

#[test]
fn delivered_before_any_delivery_is_a_violation_and_after_one_is_not() {
    let mut ledger = accepted(2);
    ledger.on_received(TARGET, 0, SENDER, &payload(1));
    ledger.on_outcome(SENDER, 0, MsgId(1), Outcome::Delivered, at(1));
    assert_eq!(ledger.take_violations(), none());
    ledger.on_outcome(SENDER, 0, MsgId(2), Outcome::Delivered, at(1));
    one(
        &mut ledger,
        "tag 2 (msg#2 of 0x1) reported Delivered but no node delivered it",
    );
}

#[test]
fn a_second_outcome_is_a_violation() {
    let mut ledger = accepted(1);
    ledger.on_received(TARGET, 0, SENDER, &payload(1));
    ledger.on_outcome(SENDER, 0, MsgId(1), Outcome::Delivered, at(1));
    assert_eq!(ledger.take_violations(), none());
    ledger.on_outcome(
        SENDER,
        0,
        MsgId(1),
        Outcome::Unknown(FailReason::Timeout),
        at(9_000),
    );
    one(&mut ledger, "tag 1 (msg#1 of 0x1) got a second outcome");
    assert_eq!(ledger.totals().acknowledged, 1);
}

#[test]
fn a_delivery_out_of_order_within_one_incarnation_pair_is_a_violation() {
    let mut ledger = accepted(3);
    ledger.on_received(TARGET, 0, SENDER, &payload(1));
    ledger.on_received(TARGET, 0, SENDER, &payload(3));
    assert_eq!(ledger.take_violations(), none());
    ledger.on_received(TARGET, 0, SENDER, &payload(2));
    one(
        &mut ledger,
        "out of order: 0x2 (incarnation 0) delivered tag 2 from 0x1 (incarnation 0) after tag 3",
    );
}

#[test]
fn a_message_without_an_outcome_past_its_deadline_is_a_violation_once() {
    let mut ledger = accepted(3);
    ledger.on_outcome(
        SENDER,
        0,
        MsgId(1),
        Outcome::Unknown(FailReason::Timeout),
        at(8_000),
    );
    // At the deadline itself the timer may still be due: no violation.
    ledger.check_deadlines(at(8_000));
    assert_eq!(ledger.take_violations(), none());
    // Tag 4's sender dies before its deadline: orphaned, nothing to report for it.
    ledger.on_accepted(NodeId(5), 0, MsgId(1), 4, Some(TARGET), Some(at(8_000)));
    ledger.on_death(NodeId(5), 0);
    ledger.check_deadlines(at(8_001));
    let v = ledger.take_violations();
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v[0].starts_with("tag 2 (msg#2 of 0x1, incarnation 0) has no outcome at"),
        "{v:?}"
    );
    assert!(v[0].contains("after its deadline"), "{v:?}");
    assert!(
        v[1].starts_with("tag 3 (msg#3 of 0x1, incarnation 0)"),
        "{v:?}"
    );
    // Reported once, not at every later check.
    ledger.check_deadlines(at(20_000));
    assert_eq!(ledger.take_violations(), none());
}

#[test]
fn an_open_message_at_quiescence_is_a_violation_unless_its_sender_died() {
    let mut ledger = accepted(1);
    ledger.on_accepted(NodeId(5), 0, MsgId(1), 2, Some(TARGET), None);
    ledger.on_death(NodeId(5), 0);
    let v = ledger.final_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("tag 1 (msg#1 of 0x1, incarnation 0) has no outcome after quiescence"),
        "{v:?}"
    );
    assert_eq!(ledger.totals().failed.get("sender_killed"), Some(&1));
}

#[test]
fn a_tag_accepted_twice_is_reported_as_a_checker_input_error() {
    let mut ledger = accepted(1);
    ledger.on_accepted(SENDER, 0, MsgId(2), 1, Some(TARGET), None);
    one(
        &mut ledger,
        "tag 1 was accepted twice (checker input error)",
    );
}

#[test]
fn a_timeout_before_the_deadline_is_a_violation_and_at_it_is_not() {
    let mut ledger = Ledger::default();
    ledger.on_accepted(SENDER, 0, MsgId(1), 11, Some(TARGET), Some(at(8_000)));
    ledger.on_accepted(SENDER, 0, MsgId(2), 12, Some(TARGET), Some(at(8_000)));
    ledger.on_accepted(SENDER, 0, MsgId(3), 13, Some(TARGET), Some(at(8_000)));
    let timeout = Outcome::Unknown(FailReason::Timeout);
    ledger.on_outcome(SENDER, 0, MsgId(1), timeout, at(8_000));
    ledger.on_outcome(
        SENDER,
        0,
        MsgId(2),
        Outcome::Failed(FailReason::NoRoute),
        at(10),
    );
    assert_eq!(
        ledger.take_violations(),
        Vec::<alloc::string::String>::new()
    );
    ledger.on_outcome(SENDER, 0, MsgId(3), timeout, at(7_999));
    let v = ledger.take_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("tag 13 (msg#3 of "), "{v:?}");
    assert!(v[0].contains("before its deadline"), "{v:?}");
}

#[test]
fn a_message_a_dead_incarnation_delivered_must_end_by_the_evidence() {
    let mut ledger = Ledger::default();
    ledger.on_accepted(SENDER, 0, MsgId(1), 21, Some(TARGET), None);
    ledger.on_accepted(SENDER, 0, MsgId(2), 22, Some(TARGET), None);
    // Target life 0 delivered tag 21; tag 22 never arrived.
    ledger.on_received(TARGET, 0, SENDER, &payload(21));
    // Evidence about another life (1) says nothing about what life 0 delivered.
    ledger.on_death_evidence(SENDER, 0, TARGET, Some(1), at(5));
    assert!(ledger.take_violations().is_empty());
    // Evidence about life 0 while tag 21 is still open: a violation; tag 22 may wait.
    ledger.on_death_evidence(SENDER, 0, TARGET, Some(0), at(5));
    let v = ledger.take_violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].starts_with("tag 21 (msg#1 of "), "{v:?}");
    // Ended first: no violation.
    ledger.on_outcome(
        SENDER,
        0,
        MsgId(1),
        Outcome::Unknown(FailReason::TargetGone),
        at(6),
    );
    ledger.on_death_evidence(SENDER, 0, TARGET, Some(0), at(6));
    assert!(ledger.take_violations().is_empty());
}
