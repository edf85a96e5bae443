//! Property test: one endpoint's pending queue and flush against a `VecDeque` model.
//!
//! Random pushes (with varying timeouts, so deadlines fall out of FIFO order), time steps,
//! flushes (random budget, route blocking at a random offer), expiries and drains. After each
//! step the queue holds exactly the model's messages, in order, with equal count and byte
//! accounting, limits are never exceeded, the next deadline is the model's minimum, and the
//! step emitted exactly the outcomes the model predicts. At the end every accepted message
//! has exactly one outcome and every rejected one none.

use alloc::{boxed::Box, collections::VecDeque, string::String, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::{ms, payload};
use crate::{
    endpoint::{
        Endpoint, FlushProgress, FlushStop, PendingMessage, QueueLimits, Rejected, TransmitResult,
    },
    ids::{MsgId, NodeId},
    outcome::{FailReason, MessageOutcome, Outcome},
    time::{Duration, Instant},
};

#[derive(Clone, Debug)]
enum Op {
    Push {
        len: usize,
        timeout_ms: u64,
    },
    Advance(u64),
    Flush {
        budget: usize,
        blocked_at: Option<usize>,
    },
    Expire,
    Drain(FailReason),
}

fn reason() -> impl Strategy<Value = FailReason> {
    prop_oneof![
        Just(FailReason::TargetGone),
        Just(FailReason::NoRoute),
        Just(FailReason::Shutdown),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..20usize, prop_oneof![Just(25u64), 1..40u64])
            .prop_map(|(len, timeout_ms)| Op::Push { len, timeout_ms }),
        3 => (0..30u64).prop_map(Op::Advance),
        3 => (0..5usize, prop::option::of(0..5usize))
            .prop_map(|(budget, blocked_at)| Op::Flush { budget, blocked_at }),
        2 => Just(Op::Expire),
        1 => reason().prop_map(Op::Drain),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ModelMessage {
    id: u64,
    len: usize,
    deadline: Instant,
}

/// Removes every model message due at `now`, in FIFO order, returning their ids.
fn model_expire(model: &mut VecDeque<ModelMessage>, now: Instant) -> Vec<u64> {
    let expired = model
        .iter()
        .filter(|m| m.deadline <= now)
        .map(|m| m.id)
        .collect();
    model.retain(|m| m.deadline > now);
    expired
}

fn outcome(id: u64, outcome: Outcome) -> MessageOutcome {
    MessageOutcome {
        msg: MsgId(id),
        outcome,
    }
}

fn check_state(endpoint: &Endpoint, model: &VecDeque<ModelMessage>, limits: QueueLimits) {
    let queue = endpoint.queue();
    let actual: Vec<ModelMessage> = queue
        .iter()
        .map(|m| ModelMessage {
            id: m.id.0,
            len: m.payload.len(),
            deadline: m.deadline,
        })
        .collect();
    let expected: Vec<ModelMessage> = model.iter().copied().collect();
    assert_eq!(actual, expected);
    let model_bytes: usize = model.iter().map(|m| m.len).sum();
    assert_eq!(queue.len(), model.len());
    assert_eq!(queue.bytes(), model_bytes);
    assert_eq!(
        queue.next_deadline(),
        model.iter().map(|m| m.deadline).min()
    );
    if limits.max_messages != 0 {
        assert!(queue.len() <= limits.max_messages);
    }
    if limits.max_bytes != 0 {
        assert!(queue.bytes() <= limits.max_bytes);
    }
}

fn run(limits: QueueLimits, ops: Vec<Op>) {
    let mut endpoint = Endpoint::new(
        NodeId(1),
        String::new(),
        limits,
        ms(0),
        Duration::from_secs(60),
    );
    let mut model: VecDeque<ModelMessage> = VecDeque::new();
    let mut now = ms(0);
    let mut next_id = 1u64;
    let mut accepted: Vec<u64> = Vec::new();
    let mut rejected: Vec<u64> = Vec::new();
    let mut all: Vec<MessageOutcome> = Vec::new();
    for op in ops {
        let mut out: Vec<MessageOutcome> = Vec::new();
        let mut expected: Vec<MessageOutcome> = Vec::new();
        match op {
            Op::Push { len, timeout_ms } => {
                let id = next_id;
                next_id += 1;
                let timeout = Duration::from_millis(timeout_ms);
                let bytes: usize = model.iter().map(|m| m.len).sum();
                let admits = (limits.max_messages == 0 || model.len() < limits.max_messages)
                    && (limits.max_bytes == 0 || bytes + len <= limits.max_bytes);
                let result = endpoint.push(MsgId(id), 3, payload(id, len), now, timeout);
                if admits {
                    assert_eq!(result, Ok(()));
                    model.push_back(ModelMessage {
                        id,
                        len,
                        deadline: now + timeout,
                    });
                    accepted.push(id);
                } else {
                    assert_eq!(
                        result,
                        Err(Rejected {
                            reason: FailReason::QueueFull,
                            message: PendingMessage {
                                id: MsgId(id),
                                msg_type: 3,
                                payload: payload(id, len),
                                deadline: now + timeout,
                            },
                        })
                    );
                    rejected.push(id);
                }
            }
            Op::Advance(step) => now += Duration::from_millis(step),
            Op::Expire => {
                let ids = model_expire(&mut model, now);
                expected.extend(
                    ids.iter()
                        .map(|&id| outcome(id, Outcome::Failed(FailReason::Timeout))),
                );
                assert_eq!(endpoint.expire(now, &mut out), ids.len());
            }
            Op::Flush { budget, blocked_at } => {
                let timed_out = model_expire(&mut model, now);
                expected.extend(
                    timed_out
                        .iter()
                        .map(|&id| outcome(id, Outcome::Failed(FailReason::Timeout))),
                );
                let mut expected_offers = Vec::new();
                let mut sent = 0;
                let stop = loop {
                    let Some(head) = model.front().copied() else {
                        break FlushStop::Drained;
                    };
                    if sent == budget {
                        break FlushStop::Budget;
                    }
                    expected_offers.push(head.id);
                    if blocked_at == Some(expected_offers.len() - 1) {
                        break FlushStop::Blocked;
                    }
                    model.pop_front();
                    expected.push(outcome(head.id, Outcome::Delivered));
                    sent += 1;
                };
                let mut offers = Vec::new();
                let progress = endpoint.flush(
                    now,
                    budget,
                    |m| {
                        offers.push(m.id.0);
                        if blocked_at == Some(offers.len() - 1) {
                            TransmitResult::Blocked
                        } else {
                            TransmitResult::Sent
                        }
                    },
                    &mut out,
                );
                assert_eq!(offers, expected_offers);
                assert_eq!(
                    progress,
                    FlushProgress {
                        sent,
                        expired: timed_out.len(),
                        stop,
                    }
                );
            }
            Op::Drain(reason) => {
                expected.extend(
                    model
                        .drain(..)
                        .map(|m| outcome(m.id, Outcome::Failed(reason))),
                );
                assert_eq!(endpoint.collect(reason, &mut out), expected.len());
            }
        }
        assert_eq!(out, expected);
        all.extend(out);
        check_state(&endpoint, &model, limits);
    }
    endpoint.collect(FailReason::Shutdown, &mut all);
    // Exactly one outcome per accepted message, none for rejected ones (their caller reports
    // QueueFull from the returned message).
    let mut ids: Vec<u64> = all.iter().map(|o| o.msg.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, accepted);
    assert!(rejected.iter().all(|id| !ids.contains(id)));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/endpoint_pending_queue_model.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn pending_queue_matches_a_vecdeque_model(
        max_messages in prop_oneof![Just(0usize), 1..8usize],
        max_bytes in prop_oneof![Just(0usize), 1..80usize],
        ops in prop::collection::vec(op(), 1..80),
    ) {
        run(QueueLimits { max_messages, max_bytes }, ops);
    }
}
