//! One endpoint: ordered, bounded flushing; blocked routes; expiry during flush; GC.

use alloc::{string::String, vec, vec::Vec};

use super::{NANO, delivered, failed, ms, payload};
use crate::{
    endpoint::{Endpoint, FlushProgress, FlushStop, QueueLimits, TransmitResult},
    ids::{MsgId, NodeId},
    outcome::{FailReason, MessageOutcome},
    time::{Duration, Instant},
};

const TIMEOUT: Duration = Duration::from_secs(8);
const GC: Duration = Duration::from_secs(60);

fn endpoint_with(ids: &[u64], now: Instant) -> Endpoint {
    let mut endpoint = Endpoint::new(
        NodeId(0x42),
        String::from("svc-42"),
        QueueLimits::UNLIMITED,
        now,
        GC,
    );
    endpoint.attach_handle();
    for &id in ids {
        endpoint
            .push(MsgId(id), 9, payload(id, 2), now, TIMEOUT)
            .unwrap();
    }
    endpoint
}

/// Flushes with a route that accepts everything, returning the ids it was offered.
fn flush_all_sent(
    endpoint: &mut Endpoint,
    now: Instant,
    budget: usize,
    out: &mut Vec<MessageOutcome>,
) -> (FlushProgress, Vec<u64>) {
    let mut offered = Vec::new();
    let progress = endpoint.flush(
        now,
        budget,
        |m| {
            offered.push(m.id.0);
            TransmitResult::Sent
        },
        out,
    );
    (progress, offered)
}

#[test]
fn flush_goes_in_order_a_budget_at_a_time() {
    let mut endpoint = endpoint_with(&[1, 2, 3, 4, 5], ms(0));
    let mut out = Vec::new();
    let expected = [
        (vec![1, 2], FlushStop::Budget),
        (vec![3, 4], FlushStop::Budget),
        (vec![5], FlushStop::Drained),
    ];
    for (call, (ids, stop)) in expected.into_iter().enumerate() {
        out.clear();
        let (progress, offered) = flush_all_sent(&mut endpoint, ms(10), 2, &mut out);
        assert_eq!(offered, ids, "call {call}");
        assert_eq!(out, delivered(&ids), "call {call}");
        assert_eq!(
            progress,
            FlushProgress {
                sent: ids.len(),
                expired: 0,
                stop,
            },
            "call {call}"
        );
        assert_eq!(progress.more_pending(), stop != FlushStop::Drained);
    }
    assert!(endpoint.queue().is_empty());
    assert_eq!(endpoint.next_deadline(), None);
}

#[test]
fn a_blocked_route_keeps_the_message_at_the_head() {
    let mut endpoint = endpoint_with(&[1, 2, 3], ms(0));
    let mut out = Vec::new();
    let mut offered = Vec::new();
    let progress = endpoint.flush(
        ms(1),
        10,
        |m| {
            offered.push(m.id.0);
            if m.id == MsgId(2) {
                TransmitResult::Blocked
            } else {
                TransmitResult::Sent
            }
        },
        &mut out,
    );
    assert_eq!(offered, [1, 2]);
    assert_eq!(out, delivered(&[1]));
    assert_eq!(
        progress,
        FlushProgress {
            sent: 1,
            expired: 0,
            stop: FlushStop::Blocked,
        }
    );
    assert_eq!(endpoint.queue().front().map(|m| m.id), Some(MsgId(2)));
    assert_eq!(endpoint.queue().len(), 2);
    assert_eq!(endpoint.queue().bytes(), 4);

    out.clear();
    let (progress, offered) = flush_all_sent(&mut endpoint, ms(2), 10, &mut out);
    assert_eq!(offered, [2, 3]);
    assert_eq!(out, delivered(&[2, 3]));
    assert_eq!(progress.stop, FlushStop::Drained);
}

#[test]
fn flush_at_the_deadline_fails_instead_of_sending() {
    let mut endpoint = endpoint_with(&[1, 2], ms(0));
    endpoint
        .push(MsgId(3), 9, payload(3, 2), ms(1), TIMEOUT)
        .unwrap();
    let mut out = Vec::new();
    // 1 ns before the deadline everything still goes out...
    let mut early = endpoint.clone();
    let (progress, offered) = flush_all_sent(&mut early, ms(0) + TIMEOUT - NANO, 10, &mut out);
    assert_eq!(offered, [1, 2, 3]);
    assert_eq!(progress.expired, 0);
    // ...at the deadline, 1 and 2 time out and only 3 is offered.
    out.clear();
    let (progress, offered) = flush_all_sent(&mut endpoint, ms(0) + TIMEOUT, 1, &mut out);
    assert_eq!(offered, [3]);
    let mut expected = failed(&[1, 2], FailReason::Timeout);
    expected.extend(delivered(&[3]));
    assert_eq!(out, expected);
    assert_eq!(
        progress,
        FlushProgress {
            sent: 1,
            expired: 2,
            stop: FlushStop::Drained,
        }
    );
}

#[test]
fn a_zero_budget_sends_nothing() {
    let mut endpoint = endpoint_with(&[1], ms(0));
    let mut out = Vec::new();
    let (progress, offered) = flush_all_sent(&mut endpoint, ms(1), 0, &mut out);
    assert!(offered.is_empty() && out.is_empty());
    assert_eq!(progress.stop, FlushStop::Budget);
    let mut empty = endpoint_with(&[], ms(0));
    let (progress, _) = flush_all_sent(&mut empty, ms(1), 0, &mut out);
    assert_eq!(progress.stop, FlushStop::Drained);
}

#[test]
fn a_new_endpoint_is_due_for_gc_until_a_handle_attaches() {
    let mut endpoint = Endpoint::new(
        NodeId(1),
        String::new(),
        QueueLimits::UNLIMITED,
        ms(500),
        GC,
    );
    assert_eq!(endpoint.handles(), 0);
    assert_eq!(endpoint.gc_deadline(), Some(ms(500) + GC));
    assert_eq!(endpoint.next_deadline(), Some(ms(500) + GC));
    endpoint.attach_handle();
    assert_eq!(endpoint.gc_deadline(), None);
    assert!(!endpoint.gc_due(Instant::MAX));
}

#[test]
fn gc_is_due_at_exactly_the_deadline_and_fails_the_queue_with_target_gone() {
    let mut endpoint = endpoint_with(&[1, 2], ms(0));
    assert!(endpoint.detach_handle(ms(10), GC));
    let gc_at = ms(10) + GC;
    assert_eq!(endpoint.gc_deadline(), Some(gc_at));
    // The messages expire first (8 s) unless GC comes earlier; here GC is 60 s.
    assert_eq!(endpoint.next_deadline(), Some(ms(0) + TIMEOUT));
    assert!(!endpoint.gc_due(gc_at - NANO));
    assert!(endpoint.gc_due(gc_at));
    let mut out = Vec::new();
    assert_eq!(endpoint.collect(FailReason::TargetGone, &mut out), 2);
    assert_eq!(out, failed(&[1, 2], FailReason::TargetGone));
    assert!(endpoint.queue().is_empty());
}

#[test]
fn attach_cancels_gc_and_only_the_last_detach_arms_it() {
    let mut endpoint = endpoint_with(&[], ms(0));
    endpoint.attach_handle();
    assert_eq!(endpoint.handles(), 2);
    assert!(!endpoint.detach_handle(ms(1), GC));
    assert_eq!(endpoint.gc_deadline(), None);
    assert!(endpoint.detach_handle(ms(2), GC));
    assert_eq!(endpoint.gc_deadline(), Some(ms(2) + GC));
    // A detach without a handle is ignored and does not move the deadline.
    assert!(!endpoint.detach_handle(ms(3), GC));
    assert_eq!(endpoint.gc_deadline(), Some(ms(2) + GC));
    endpoint.attach_handle();
    assert_eq!(endpoint.gc_deadline(), None);
    assert!(!endpoint.gc_due(ms(2) + GC));
}

#[test]
fn a_zero_gc_timeout_is_due_at_once() {
    let mut endpoint = endpoint_with(&[], ms(0));
    endpoint.detach_handle(ms(7), Duration::ZERO);
    assert!(endpoint.gc_due(ms(7)));
    assert!(!endpoint.gc_due(ms(7) - NANO));
    assert_eq!(endpoint.next_deadline(), Some(ms(7)));
}
