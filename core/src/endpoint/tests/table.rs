//! The endpoint table: lookup by id then name, stale keys, removal, the deadline index and
//! `handle_timeout`.

use alloc::vec::Vec;
use std::println;

use super::{NANO, SECOND, delivered, failed, limits, ms, payload};
use crate::{
    endpoint::{
        Endpoint, EndpointError, EndpointSettings, EndpointTable, FlushStop, PendingMessage,
        QueueLimits, Rejected, TimeoutReport, TransmitResult, table::slot_size,
    },
    ids::{MsgId, NodeId},
    outcome::{FailReason, MessageOutcome},
    time::{Duration, Instant},
};

fn settings(message_timeout: Duration, gc_timeout: Duration) -> EndpointSettings {
    EndpointSettings {
        limits: QueueLimits::UNLIMITED,
        message_timeout,
        gc_timeout,
    }
}

fn table() -> EndpointTable {
    EndpointTable::new(settings(8 * SECOND, 60 * SECOND))
}

fn push(table: &mut EndpointTable, key: crate::ids::Key, id: u64, now: Instant) {
    table.push(key, MsgId(id), 1, payload(id, 3), now).unwrap();
}

#[test]
fn lookup_goes_by_id_then_by_name() {
    let mut table = table();
    let key = table.get_or_create(NodeId(5), "echo", ms(0)).unwrap();
    assert_eq!(table.get_or_create(NodeId(5), "", ms(1)), Ok(key));
    assert_eq!(table.get_or_create(NodeId::NONE, "echo", ms(1)), Ok(key));
    assert_eq!(table.find(NodeId(5), "other"), Some(key));
    assert_eq!(table.find_by_id(NodeId(5)), Some(key));
    assert_eq!(table.find_by_name("echo"), Some(key));
    assert_eq!(table.find(NodeId(6), ""), None);
    assert_eq!(table.len(), 1);
    let endpoint = table.get(key).unwrap();
    assert_eq!((endpoint.id(), endpoint.name()), (NodeId(5), "echo"));
}

#[test]
fn an_endpoint_created_by_name_adopts_the_id_when_it_is_learnt() {
    let mut table = table();
    let key = table.get_or_create(NodeId::NONE, "echo", ms(0)).unwrap();
    assert_eq!(table.get(key).unwrap().id(), NodeId::NONE);
    assert_eq!(table.get_or_create(NodeId(9), "echo", ms(1)), Ok(key));
    assert_eq!(table.get(key).unwrap().id(), NodeId(9));
    assert_eq!(table.find_by_id(NodeId(9)), Some(key));
    assert_eq!(table.len(), 1);
}

#[test]
fn a_name_held_by_another_node_moves_to_the_newest_endpoint() {
    let mut table = table();
    let old = table.get_or_create(NodeId(7), "echo", ms(0)).unwrap();
    let new = table.get_or_create(NodeId(8), "echo", ms(0)).unwrap();
    assert_ne!(old, new);
    assert_eq!(table.find_by_name("echo"), Some(new));
    assert_eq!(table.find_by_id(NodeId(7)), Some(old));
    // Removing the old holder does not unindex the name from the new one.
    let mut out: Vec<MessageOutcome> = Vec::new();
    table.remove(old, FailReason::TargetGone, &mut out).unwrap();
    assert_eq!(table.find_by_name("echo"), Some(new));
}

#[test]
fn a_new_name_for_a_known_id_renames_the_endpoint() {
    let mut table = table();
    let key = table.get_or_create(NodeId(5), "echo", ms(0)).unwrap();
    assert_eq!(table.get_or_create(NodeId(5), "echo-v2", ms(1)), Ok(key));
    assert_eq!(table.get(key).unwrap().name(), "echo-v2");
    assert_eq!(table.find_by_name("echo"), None);
    assert_eq!(table.find_by_name("echo-v2"), Some(key));
}

#[test]
fn an_endpoint_needs_an_id_or_a_name() {
    let mut table = table();
    assert_eq!(
        table.get_or_create(NodeId::NONE, "", ms(0)),
        Err(EndpointError::Anonymous)
    );
    assert!(table.is_empty());
}

#[test]
fn stale_keys_return_none_even_after_the_slot_is_reused() {
    let mut table = table();
    let mut out: Vec<MessageOutcome> = Vec::new();
    let old = table.get_or_create(NodeId(1), "a", ms(0)).unwrap();
    table.remove(old, FailReason::TargetGone, &mut out).unwrap();
    let new = table.get_or_create(NodeId(2), "b", ms(0)).unwrap();
    assert_eq!(new.index(), old.index());
    assert_ne!(new, old);
    assert!(table.get(old).is_none());
    assert_eq!(
        table.push(old, MsgId(1), 4, payload(1, 2), ms(3)),
        Err(Rejected {
            reason: FailReason::TargetGone,
            message: PendingMessage {
                id: MsgId(1),
                msg_type: 4,
                payload: payload(1, 2),
                deadline: ms(3) + 8 * SECOND,
            },
        })
    );
    assert_eq!(
        table.flush(old, ms(3), 10, |_| TransmitResult::Sent, &mut out),
        None
    );
    assert!(!table.attach_handle(old));
    assert!(!table.detach_handle(old, ms(3)));
    assert!(
        table
            .remove(old, FailReason::TargetGone, &mut out)
            .is_none()
    );
    assert!(out.is_empty());
    // The new occupant is untouched by all of that.
    assert_eq!(table.get(new).unwrap().id(), NodeId(2));
    assert_eq!(table.get(new).unwrap().queue().len(), 0);
    assert_eq!(table.find_by_id(NodeId(1)), None);
    assert_eq!(table.find_by_name("a"), None);
}

#[test]
fn removing_an_endpoint_fails_its_queue_at_once_with_the_reason() {
    let mut table = table();
    let key = table.get_or_create(NodeId(3), "c", ms(0)).unwrap();
    table.attach_handle(key);
    for id in 1..=3 {
        push(&mut table, key, id, ms(1));
    }
    let mut out: Vec<MessageOutcome> = Vec::new();
    let removed: Endpoint = table.remove(key, FailReason::NoRoute, &mut out).unwrap();
    assert_eq!(out, failed(&[1, 2, 3], FailReason::NoRoute));
    assert_eq!(removed.id(), NodeId(3));
    assert!(removed.queue().is_empty());
    assert_eq!(table.next_deadline(), None);
    assert!(table.is_empty());
}

#[test]
fn handle_timeout_expires_messages_at_exactly_their_deadline() {
    let mut table = table();
    let key = table.get_or_create(NodeId(3), "c", ms(0)).unwrap();
    table.attach_handle(key);
    push(&mut table, key, 1, ms(0));
    push(&mut table, key, 2, ms(0));
    push(&mut table, key, 3, ms(500));
    assert_eq!(table.next_deadline(), Some(ms(8_000)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(
        table.handle_timeout(ms(8_000) - NANO, &mut out),
        TimeoutReport::default()
    );
    assert!(out.is_empty());
    assert_eq!(
        table.handle_timeout(ms(8_000), &mut out),
        TimeoutReport {
            timed_out: 2,
            collected: 0,
        }
    );
    assert_eq!(out, failed(&[1, 2], FailReason::Timeout));
    assert_eq!(table.next_deadline(), Some(ms(8_500)));
}

#[test]
fn gc_at_exactly_its_deadline_fails_queued_messages_with_target_gone() {
    let mut table = EndpointTable::new(settings(8 * SECOND, 5 * SECOND));
    let key = table.get_or_create(NodeId(4), "d", ms(0)).unwrap();
    push(&mut table, key, 1, ms(1_000));
    push(&mut table, key, 2, ms(2_000));
    assert_eq!(table.next_deadline(), Some(ms(5_000)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(
        table.handle_timeout(ms(5_000) - NANO, &mut out),
        TimeoutReport::default()
    );
    assert_eq!(
        table.handle_timeout(ms(5_000), &mut out),
        TimeoutReport {
            timed_out: 0,
            collected: 1,
        }
    );
    assert_eq!(out, failed(&[1, 2], FailReason::TargetGone));
    assert!(table.get(key).is_none());
    assert_eq!(table.find_by_id(NodeId(4)), None);
    assert_eq!(table.next_deadline(), None);
}

#[test]
fn expiry_and_gc_due_together_time_out_first_then_collect() {
    let mut table = EndpointTable::new(settings(2 * SECOND, 5 * SECOND));
    let key = table.get_or_create(NodeId(4), "d", ms(0)).unwrap();
    push(&mut table, key, 1, ms(0));
    push(&mut table, key, 2, ms(4_000));
    let mut out: Vec<MessageOutcome> = Vec::new();
    let report = table.handle_timeout(ms(10_000), &mut out);
    assert_eq!(
        report,
        TimeoutReport {
            timed_out: 2,
            collected: 1,
        }
    );
    assert_eq!(out, failed(&[1, 2], FailReason::Timeout));
}

#[test]
fn attach_and_detach_move_the_gc_deadline() {
    let mut table = EndpointTable::new(settings(8 * SECOND, 5 * SECOND));
    let key = table.get_or_create(NodeId(4), "d", ms(0)).unwrap();
    assert_eq!(table.next_deadline(), Some(ms(5_000)));
    assert!(table.attach_handle(key));
    assert_eq!(table.next_deadline(), None);
    assert!(table.detach_handle(key, ms(2_000)));
    assert_eq!(table.next_deadline(), Some(ms(7_000)));
    assert!(table.attach_handle(key));
    assert_eq!(table.next_deadline(), None);
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(
        table.handle_timeout(ms(7_000), &mut out),
        TimeoutReport::default()
    );
    assert!(table.get(key).is_some());
}

#[test]
fn one_handle_timeout_drains_every_due_endpoint_in_deadline_order() {
    let mut table = EndpointTable::new(settings(8 * SECOND, 60 * SECOND));
    let mut keys = Vec::new();
    for (node, pushed_at) in [(1, 300), (2, 100), (3, 200)] {
        let key = table.get_or_create(NodeId(node), "", ms(0)).unwrap();
        table.attach_handle(key);
        push(&mut table, key, node * 10, ms(pushed_at));
        keys.push(key);
    }
    assert_eq!(table.next_deadline(), Some(ms(8_100)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    let report = table.handle_timeout(ms(9_000), &mut out);
    assert_eq!(report.timed_out, 3);
    assert_eq!(out, failed(&[20, 30, 10], FailReason::Timeout));
    assert_eq!(table.next_deadline(), None);
    assert_eq!(table.len(), 3);
}

#[test]
fn flushing_through_the_table_keeps_the_deadline_index_exact() {
    let mut table = table();
    let key = table.get_or_create(NodeId(3), "c", ms(0)).unwrap();
    table.attach_handle(key);
    for (id, at) in [(1, 0), (2, 100), (3, 200)] {
        push(&mut table, key, id, ms(at));
    }
    let mut out: Vec<MessageOutcome> = Vec::new();
    let progress = table
        .flush(key, ms(300), 2, |_| TransmitResult::Sent, &mut out)
        .unwrap();
    assert_eq!(progress.stop, FlushStop::Budget);
    assert_eq!(out, delivered(&[1, 2]));
    assert_eq!(table.next_deadline(), Some(ms(8_200)));
    out.clear();
    table.flush(key, ms(300), 2, |_| TransmitResult::Sent, &mut out);
    assert_eq!(out, delivered(&[3]));
    assert_eq!(table.next_deadline(), None);
}

#[test]
fn a_shorter_timeout_at_runtime_makes_a_later_message_expire_first() {
    let mut table = table();
    let key = table.get_or_create(NodeId(3), "c", ms(0)).unwrap();
    table.attach_handle(key);
    push(&mut table, key, 1, ms(0));
    table.set_settings(settings(2 * SECOND, 60 * SECOND));
    push(&mut table, key, 2, ms(1_000));
    assert_eq!(table.next_deadline(), Some(ms(3_000)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    table.handle_timeout(ms(3_000), &mut out);
    assert_eq!(out, failed(&[2], FailReason::Timeout));
    assert_eq!(table.next_deadline(), Some(ms(8_000)));
}

#[test]
fn new_limits_apply_to_existing_endpoints() {
    let mut table = table();
    let key = table.get_or_create(NodeId(3), "c", ms(0)).unwrap();
    push(&mut table, key, 1, ms(0));
    table.set_settings(EndpointSettings {
        limits: limits(1, 0),
        ..table.settings()
    });
    let rejected = table
        .push(key, MsgId(2), 1, payload(2, 3), ms(0))
        .unwrap_err();
    assert_eq!(rejected.reason, FailReason::QueueFull);
    assert_eq!(table.get(key).unwrap().queue().limits(), limits(1, 0));
}

#[test]
fn remove_all_fails_every_queue_in_slot_order() {
    let mut table = table();
    let a = table.get_or_create(NodeId(1), "a", ms(0)).unwrap();
    let b = table.get_or_create(NodeId(2), "b", ms(0)).unwrap();
    push(&mut table, b, 20, ms(0));
    push(&mut table, a, 10, ms(0));
    push(&mut table, b, 21, ms(0));
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(table.remove_all(FailReason::Shutdown, &mut out), 2);
    assert_eq!(out, failed(&[10, 20, 21], FailReason::Shutdown));
    assert!(table.is_empty());
    assert_eq!(table.next_deadline(), None);
}

#[test]
fn default_settings_come_from_the_config_defaults() {
    let s = EndpointSettings::default();
    assert_eq!(s.limits, limits(4096, 8 * 1024 * 1024));
    assert_eq!(s.message_timeout, 8 * SECOND);
    assert_eq!(s.gc_timeout, 60 * SECOND);
}

/// Memory per endpoint; the target is ≤ 256 bytes.
#[test]
fn endpoint_memory_stays_within_budget() {
    let endpoint = core::mem::size_of::<Endpoint>();
    let message = core::mem::size_of::<PendingMessage>();
    println!(
        "size_of::<Endpoint>() = {endpoint}, table slot = {}, PendingMessage = {message}",
        slot_size()
    );
    assert!(endpoint <= 256, "Endpoint is {endpoint} bytes");
    assert_eq!(message, 56);
    // Heap: the name, plus nothing until something is queued.
    let mut table = table();
    let key = table.get_or_create(NodeId(1), "svc-00001", ms(0)).unwrap();
    assert_eq!(table.get(key).unwrap().heap_bytes(), 9);
    table.attach_handle(key);
    push(&mut table, key, 1, ms(0));
    let mut out: Vec<MessageOutcome> = Vec::new();
    table.flush(key, ms(0), 10, |_| TransmitResult::Sent, &mut out);
    println!(
        "heap after one queued message: {} bytes",
        table.get(key).unwrap().heap_bytes()
    );
    assert_eq!(table.get(key).unwrap().heap_bytes(), 9 + 4 * message);
    assert!(slot_size() <= 256, "slot is {} bytes", slot_size());
}
