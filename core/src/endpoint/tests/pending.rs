//! The pending queue on its own: limits, exact expiry (in and out of FIFO order), draining.

use alloc::vec::Vec;

use super::{NANO, failed, limits, ms, msg};
use crate::{
    endpoint::{PendingQueue, QueueLimits, Rejected},
    ids::MsgId,
    outcome::{FailReason, MessageOutcome},
};

fn ids(queue: &PendingQueue) -> Vec<u64> {
    queue.iter().map(|m| m.id.0).collect()
}

#[test]
fn push_over_count_limit_is_rejected_with_the_message_back() {
    let mut queue = PendingQueue::new(limits(2, 0));
    queue.push(msg(1, 3, ms(100))).unwrap();
    queue.push(msg(2, 3, ms(100))).unwrap();
    assert_eq!(
        queue.push(msg(3, 3, ms(100))),
        Err(Rejected {
            reason: FailReason::QueueFull,
            message: msg(3, 3, ms(100)),
        })
    );
    assert_eq!(ids(&queue), [1, 2]);
    assert_eq!((queue.len(), queue.bytes()), (2, 6));
    queue.pop_front().unwrap();
    queue.push(msg(4, 3, ms(100))).unwrap();
    assert_eq!(ids(&queue), [2, 4]);
}

#[test]
fn push_over_byte_limit_is_rejected_but_exactly_full_is_accepted() {
    let mut queue = PendingQueue::new(limits(0, 10));
    queue.push(msg(1, 4, ms(100))).unwrap();
    queue.push(msg(2, 6, ms(100))).unwrap();
    assert_eq!(queue.bytes(), 10);
    let rejected = queue.push(msg(3, 1, ms(100))).unwrap_err();
    assert_eq!(rejected.reason, FailReason::QueueFull);
    assert_eq!(rejected.message, msg(3, 1, ms(100)));
    // A zero-byte message still fits a full byte budget.
    queue.push(msg(4, 0, ms(100))).unwrap();
    assert_eq!(queue.pop_front(), Some(msg(1, 4, ms(100))));
    assert_eq!(queue.bytes(), 6);
    queue.push(msg(5, 4, ms(100))).unwrap();
    assert_eq!(ids(&queue), [2, 4, 5]);
    assert_eq!((queue.len(), queue.bytes()), (3, 10));
}

#[test]
fn a_message_larger_than_the_byte_limit_never_fits() {
    let mut queue = PendingQueue::new(limits(0, 10));
    let rejected = queue.push(msg(1, 11, ms(100))).unwrap_err();
    assert_eq!(rejected.message.payload.len(), 11);
    assert!(queue.is_empty());
    assert_eq!(queue.bytes(), 0);
}

#[test]
fn zero_limits_mean_unlimited() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    for id in 0..10_000 {
        queue.push(msg(id, 1_000, ms(100))).unwrap();
    }
    assert_eq!(queue.len(), 10_000);
    assert_eq!(queue.bytes(), 10_000_000);
}

#[test]
fn lowering_limits_keeps_queued_messages_and_refuses_new_ones() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    for id in 1..=3 {
        queue.push(msg(id, 1, ms(100))).unwrap();
    }
    queue.set_limits(limits(2, 0));
    assert_eq!(ids(&queue), [1, 2, 3]);
    assert!(queue.push(msg(4, 1, ms(100))).is_err());
    queue.pop_front().unwrap();
    assert!(queue.push(msg(5, 1, ms(100))).is_err());
    queue.pop_front().unwrap();
    queue.push(msg(6, 1, ms(100))).unwrap();
    assert_eq!(ids(&queue), [3, 6]);
}

#[test]
fn expiry_happens_at_exactly_the_deadline_not_a_nanosecond_earlier() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    queue.push(msg(1, 1, ms(100))).unwrap();
    queue.push(msg(2, 2, ms(100))).unwrap();
    queue.push(msg(3, 4, ms(200))).unwrap();
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(queue.expire(ms(100) - NANO, &mut out), 0);
    assert!(out.is_empty());
    assert_eq!(queue.next_deadline(), Some(ms(100)));
    assert_eq!(queue.expire(ms(100), &mut out), 2);
    assert_eq!(out, failed(&[1, 2], FailReason::Timeout));
    assert_eq!(ids(&queue), [3]);
    assert_eq!(queue.bytes(), 4);
    assert_eq!(queue.next_deadline(), Some(ms(200)));
}

#[test]
fn out_of_order_deadlines_expire_from_the_middle_on_time() {
    // The message timeout was lowered at runtime: message 2 expires before message 1.
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    queue.push(msg(1, 1, ms(500))).unwrap();
    queue.push(msg(2, 2, ms(300))).unwrap();
    queue.push(msg(3, 3, ms(400))).unwrap();
    queue.push(msg(4, 4, ms(600))).unwrap();
    assert_eq!(queue.next_deadline(), Some(ms(300)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(queue.expire(ms(300) - NANO, &mut out), 0);
    assert_eq!(queue.expire(ms(300), &mut out), 1);
    assert_eq!(out, failed(&[2], FailReason::Timeout));
    assert_eq!(ids(&queue), [1, 3, 4]);
    assert_eq!(queue.bytes(), 8);
    assert_eq!(queue.next_deadline(), Some(ms(400)));
    out.clear();
    assert_eq!(queue.expire(ms(550), &mut out), 2);
    assert_eq!(out, failed(&[1, 3], FailReason::Timeout));
    assert_eq!(queue.next_deadline(), Some(ms(600)));
    assert_eq!(ids(&queue), [4]);
}

#[test]
fn popping_past_an_early_deadline_restores_the_head_deadline() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    queue.push(msg(1, 1, ms(500))).unwrap();
    queue.push(msg(2, 1, ms(300))).unwrap();
    queue.push(msg(3, 1, ms(450))).unwrap();
    assert_eq!(queue.next_deadline(), Some(ms(300)));
    assert_eq!(queue.pop_front().map(|m| m.id), Some(MsgId(1)));
    assert_eq!(queue.next_deadline(), Some(ms(300)));
    assert_eq!(queue.pop_front().map(|m| m.id), Some(MsgId(2)));
    assert_eq!(queue.next_deadline(), Some(ms(450)));
    // Back in order: later pushes with later deadlines keep the head as the minimum.
    queue.push(msg(4, 1, ms(900))).unwrap();
    assert_eq!(queue.next_deadline(), Some(ms(450)));
    assert_eq!(queue.pop_front().map(|m| m.id), Some(MsgId(3)));
    assert_eq!(queue.next_deadline(), Some(ms(900)));
    assert_eq!(queue.pop_front().map(|m| m.id), Some(MsgId(4)));
    assert_eq!(queue.next_deadline(), None);
}

#[test]
fn equal_deadlines_out_of_fifo_order_still_expire_together() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    queue.push(msg(1, 1, ms(500))).unwrap();
    queue.push(msg(2, 1, ms(300))).unwrap();
    queue.push(msg(3, 1, ms(300))).unwrap();
    queue.push(msg(4, 1, ms(500))).unwrap();
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(queue.expire(ms(300), &mut out), 2);
    assert_eq!(out, failed(&[2, 3], FailReason::Timeout));
    assert_eq!(queue.next_deadline(), Some(ms(500)));
    out.clear();
    assert_eq!(queue.expire(ms(500), &mut out), 2);
    assert_eq!(out, failed(&[1, 4], FailReason::Timeout));
    assert!(queue.is_empty());
}

#[test]
fn drain_fails_everything_in_fifo_order_with_the_reason() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    queue.push(msg(1, 5, ms(500))).unwrap();
    queue.push(msg(2, 5, ms(300))).unwrap();
    queue.push(msg(3, 5, ms(700))).unwrap();
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(queue.drain_with(FailReason::Shutdown, &mut out), 3);
    assert_eq!(out, failed(&[1, 2, 3], FailReason::Shutdown));
    assert_eq!(
        (queue.len(), queue.bytes(), queue.next_deadline()),
        (0, 0, None)
    );
    // The queue is usable afterwards.
    queue.push(msg(4, 5, ms(800))).unwrap();
    assert_eq!(queue.next_deadline(), Some(ms(800)));
}

#[test]
fn a_drained_queue_gives_back_its_burst_capacity() {
    let mut queue = PendingQueue::new(QueueLimits::UNLIMITED);
    assert_eq!(queue.heap_bytes(), 0);
    for id in 0..100 {
        queue.push(msg(id, 1, ms(100 - id))).unwrap();
    }
    assert!(queue.heap_bytes() >= 100 * 56);
    while queue.pop_front().is_some() {}
    // Four message slots stay (VecDeque's smallest buffer); the min-window is freed.
    assert_eq!(
        queue.heap_bytes(),
        4 * core::mem::size_of::<crate::endpoint::PendingMessage>()
    );
    let mut out: Vec<MessageOutcome> = Vec::new();
    for id in 0..100 {
        queue.push(msg(id, 1, ms(100))).unwrap();
    }
    queue.drain_with(FailReason::Shutdown, &mut out);
    assert_eq!(queue.heap_bytes(), 4 * 56);
}
