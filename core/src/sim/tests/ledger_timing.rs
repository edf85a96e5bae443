//! The ledger's timing invariants, fed by hand: no `Timeout` before a message's own deadline,
//! and nothing a dead incarnation delivered left open after the evidence of its death.

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
