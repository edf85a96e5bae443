//! Property test: the endpoint table's deadline index, GC and outcome bookkeeping.
//!
//! Random creates, pushes, handle attach/detach, flushes, removals, time steps and timeouts
//! over a few nodes. After every step the table's `next_deadline` equals the minimum over its
//! endpoints; after `handle_timeout(now)` nothing due at `now` is left (no expired message,
//! no endpoint due for GC); timeouts only fail messages whose deadline passed; GC only
//! collects endpoints without handles. At the end every accepted message has exactly one
//! outcome.

use alloc::{boxed::Box, collections::BTreeMap, vec::Vec};

use proptest::{prelude::*, test_runner::FileFailurePersistence};

use super::{ms, payload};
use crate::{
    endpoint::{EndpointSettings, EndpointTable, QueueLimits, TransmitResult},
    ids::{MsgId, NodeId},
    outcome::{FailReason, MessageOutcome, Outcome},
    time::{Duration, Instant},
};

#[derive(Clone, Debug)]
enum Op {
    Create(u64),
    Push(u64, usize),
    Attach(u64),
    Detach(u64),
    Flush(u64, usize, bool),
    Remove(u64),
    Advance(u64),
    Timeout,
}

fn op() -> impl Strategy<Value = Op> {
    let node = 1..=4u64;
    prop_oneof![
        2 => node.clone().prop_map(Op::Create),
        5 => (node.clone(), 0..8usize).prop_map(|(n, len)| Op::Push(n, len)),
        2 => node.clone().prop_map(Op::Attach),
        2 => node.clone().prop_map(Op::Detach),
        2 => (node.clone(), 0..4usize, any::<bool>()).prop_map(|(n, b, blk)| Op::Flush(n, b, blk)),
        1 => node.prop_map(Op::Remove),
        3 => (0..25u64).prop_map(Op::Advance),
        3 => Just(Op::Timeout),
    ]
}

fn check_index(table: &EndpointTable) {
    let min = table
        .iter()
        .filter_map(|(_, endpoint)| endpoint.next_deadline())
        .min();
    assert_eq!(table.next_deadline(), min);
}

fn run(settings: EndpointSettings, ops: Vec<Op>) {
    let mut table = EndpointTable::new(settings);
    let mut now = ms(0);
    let mut next_id = 1u64;
    let mut deadlines: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut all: Vec<MessageOutcome> = Vec::new();
    for op in ops {
        let mut out: Vec<MessageOutcome> = Vec::new();
        match op {
            Op::Create(node) => {
                table.get_or_create(NodeId(node), "", now).unwrap();
            }
            Op::Push(node, len) => {
                if let Some(key) = table.find_by_id(NodeId(node)) {
                    let id = next_id;
                    next_id += 1;
                    if table.push(key, MsgId(id), 0, payload(id, len), now).is_ok() {
                        deadlines.insert(id, now + settings.message_timeout);
                    }
                }
            }
            Op::Attach(node) => {
                if let Some(key) = table.find_by_id(NodeId(node)) {
                    assert!(table.attach_handle(key));
                }
            }
            Op::Detach(node) => {
                if let Some(key) = table.find_by_id(NodeId(node)) {
                    assert!(table.detach_handle(key, now));
                }
            }
            Op::Flush(node, budget, blocked) => {
                if let Some(key) = table.find_by_id(NodeId(node)) {
                    let result = if blocked {
                        TransmitResult::Blocked
                    } else {
                        TransmitResult::Sent
                    };
                    table.flush(key, now, budget, |_| result, &mut out).unwrap();
                }
            }
            Op::Remove(node) => {
                if let Some(key) = table.find_by_id(NodeId(node)) {
                    table.remove(key, FailReason::TargetGone, &mut out).unwrap();
                    assert!(table.get(key).is_none());
                }
            }
            Op::Advance(step) => now += Duration::from_millis(step),
            Op::Timeout => {
                let gc_candidates: Vec<NodeId> = table
                    .iter()
                    .filter(|(_, e)| e.gc_due(now))
                    .map(|(_, e)| e.id())
                    .collect();
                let report = table.handle_timeout(now, &mut out);
                assert_eq!(report.collected, gc_candidates.len());
                for id in gc_candidates {
                    assert_eq!(table.find_by_id(id), None);
                }
                assert!(table.next_deadline().is_none_or(|d| d > now));
                for (_, endpoint) in table.iter() {
                    assert!(!endpoint.gc_due(now));
                    assert!(endpoint.queue().iter().all(|m| m.deadline > now));
                }
            }
        }
        // Outcomes are honest about time: a timeout only after the deadline, a delivery
        // only before it.
        for o in &out {
            let deadline = deadlines[&o.msg.0];
            match o.outcome {
                Outcome::Failed(FailReason::Timeout) => assert!(deadline <= now),
                Outcome::Delivered => assert!(deadline > now),
                _ => {}
            }
        }
        all.extend(out);
        check_index(&table);
    }
    table.remove_all(FailReason::Shutdown, &mut all);
    assert!(table.is_empty());
    assert_eq!(table.next_deadline(), None);
    let mut ids: Vec<u64> = all.iter().map(|o| o.msg.0).collect();
    ids.sort_unstable();
    let accepted: Vec<u64> = deadlines.keys().copied().collect();
    assert_eq!(ids, accepted);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "../proptest-regressions/endpoint_table_model.txt",
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn table_keeps_deadlines_exact_and_every_message_ends_once(
        message_timeout_ms in 1..60u64,
        gc_timeout_ms in 0..60u64,
        max_messages in 0..6usize,
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let settings = EndpointSettings {
            limits: QueueLimits { max_messages, max_bytes: 0 },
            message_timeout: Duration::from_millis(message_timeout_ms),
            gc_timeout: Duration::from_millis(gc_timeout_ms),
        };
        run(settings, ops);
    }
}
