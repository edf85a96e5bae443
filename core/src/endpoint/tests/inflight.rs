//! In-flight tests: the sending half of each stream as the table runs it — seqs, acks,
//! deadlines and retransmissions, resets, relay refusals, incarnations and giving up.

use alloc::vec::Vec;

use bytes::Bytes;

use crate::{
    bus::stream::{make_seq, seq_counter, seq_tag},
    endpoint::{EndpointSettings, EndpointTable, OutboxSink, QueueLimits, Refusal, Reset},
    ids::{LinkId, MsgId, NodeId},
    outcome::{FailReason, MessageOutcome, Outcome, OutcomeSink},
    rng::Rng,
    time::{Duration, Instant},
};

/// Frames are not looked at here (the node tests decode them): only outcomes are kept.
impl OutboxSink for Vec<MessageOutcome> {
    fn transmit_data(&mut self, _link: LinkId, _data: &crate::wire::Data<'_>) {}
}

const LINK: LinkId = LinkId(1);

/// A node's table: 8 s message timeout, retransmission after 2 s, no limits.
fn streams() -> EndpointTable {
    let settings = EndpointSettings {
        limits: QueueLimits::UNLIMITED,
        message_timeout: Duration::from_secs(8),
        gc_timeout: Duration::from_secs(60),
    };
    EndpointTable::for_node(settings, NodeId(1), Rng::new(1), Duration::from_secs(2))
}

/// Sends message `msg` (3 bytes) to `dst` at `at_ms` over a ready link (it goes straight into
/// flight, deadline 8 s later) and returns its seq.
fn push(s: &mut EndpointTable, dst: u64, msg: u64, at_ms: u64) -> u64 {
    let now = Instant::from_millis(at_ms);
    let key = s.get_or_create(NodeId(dst), "", now).unwrap();
    s.attach_handle(key);
    let mut out: Vec<MessageOutcome> = Vec::new();
    s.send(
        key,
        MsgId(msg),
        1,
        Bytes::from_static(b"abc"),
        now,
        || Some(LINK),
        &mut out,
    );
    assert_eq!(out, []);
    s.unacked(NodeId(dst)).last().unwrap().seq
}

/// In-flight messages to `dst` and their payload bytes.
fn inflight(s: &EndpointTable, dst: NodeId) -> (usize, usize) {
    let bytes = s
        .find_by_id(dst)
        .and_then(|key| s.get(key))
        .map_or(0, |e| e.outbox().unacked_bytes());
    (s.unacked(dst).len(), bytes)
}

/// Writes everything in flight to `dst` out again at `now`.
fn mark_retransmitted(s: &mut EndpointTable, dst: NodeId, now: Instant) {
    let mut out: Vec<MessageOutcome> = Vec::new();
    s.retransmit(dst, LINK, now, &mut out);
    assert_eq!(out, []);
}

/// Whether the oldest in-flight message to `dst` is `seq`, transmitted exactly once.
fn head_sent_once(s: &EndpointTable, dst: NodeId, seq: u64) -> bool {
    s.unacked(dst)
        .next()
        .is_some_and(|m| m.seq == seq && m.transmissions == 1)
}

#[test]
fn seqs_count_from_one_under_one_tag_and_acks_are_cumulative() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 0);
    let b = push(&mut s, 2, 2, 0);
    let c = push(&mut s, 2, 3, 0);
    assert_eq!(seq_counter(a), 1);
    assert_eq!((seq_tag(a), seq_counter(b)), (seq_tag(b), 2));
    assert_eq!(seq_counter(c), 3);
    assert_ne!(seq_tag(a), 0);
    assert_eq!(inflight(&s, NodeId(2)), (3, 9));
    let mut out: Vec<MessageOutcome> = Vec::new();
    // Another tag, or a seq beyond what was sent, acknowledges nothing.
    assert_eq!(
        s.on_ack(NodeId(2), make_seq(seq_tag(a) ^ 1, 3), 5, &mut out),
        0
    );
    assert_eq!(s.on_ack(NodeId(2), make_seq(seq_tag(a), 4), 5, &mut out), 0);
    assert_eq!(s.on_ack(NodeId(2), b, 5, &mut out), 2);
    assert_eq!(s.on_ack(NodeId(2), b, 5, &mut out), 0);
    assert_eq!(
        out,
        [
            MessageOutcome {
                msg: MsgId(1),
                outcome: Outcome::Delivered
            },
            MessageOutcome {
                msg: MsgId(2),
                outcome: Outcome::Delivered
            },
        ]
    );
    assert_eq!(inflight(&s, NodeId(2)), (1, 3));
}

#[test]
fn deadlines_and_retransmissions_are_scheduled_from_the_oldest_message() {
    let mut s = streams();
    assert_eq!(s.next_deadline(), None);
    push(&mut s, 2, 1, 100);
    push(&mut s, 2, 2, 500);
    assert_eq!(s.next_deadline(), Some(Instant::from_millis(2_100)));
    assert_eq!(s.due_retransmits(Instant::from_millis(2_099)), []);
    assert_eq!(s.due_retransmits(Instant::from_millis(2_100)), [NodeId(2)]);
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(2_100));
    assert_eq!(
        s.unacked(NodeId(2))
            .map(|m| m.transmissions)
            .collect::<Vec<_>>(),
        [2, 2]
    );
    assert!(!head_sent_once(&s, NodeId(2), make_seq(0, 1)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    let unknown = Outcome::Unknown(FailReason::Timeout);
    assert_eq!(s.expire_unacked(Instant::from_millis(8_099), &mut out), []);
    assert_eq!(
        s.expire_unacked(Instant::from_millis(8_100), &mut out),
        [NodeId(2)]
    );
    // The whole stream ends with its oldest message, and the next one starts afresh; the
    // second, not due yet, ends because it is behind the first (never `Timeout` early).
    assert_eq!(
        out,
        [
            MessageOutcome {
                msg: MsgId(1),
                outcome: unknown
            },
            MessageOutcome {
                msg: MsgId(2),
                outcome: Outcome::Unknown(FailReason::StreamAbandoned)
            },
        ]
    );
    assert_eq!(seq_counter(push(&mut s, 2, 3, 9_000)), 1);
}

fn msgs(out: &[MessageOutcome]) -> Vec<(u64, Outcome)> {
    out.iter().map(|o| (o.msg.0, o.outcome)).collect()
}

#[test]
fn the_first_ack_stamps_the_stream_and_acks_from_other_incarnations_are_ignored() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 0);
    let b = push(&mut s, 2, 2, 0);
    assert_eq!((s.stamp(NodeId(2)), s.known_incarnation(NodeId(2))), (0, 0));
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(s.on_ack(NodeId(2), a, 77, &mut out), 1);
    assert_eq!(
        (s.stamp(NodeId(2)), s.known_incarnation(NodeId(2))),
        (77, 77)
    );
    assert_eq!(s.on_ack(NodeId(2), b, 78, &mut out), 0);
    assert_eq!(msgs(&out), [(1, Outcome::Delivered)]);
    // A stream started later is stamped from the start.
    s.give_up_unacked(NodeId(2), FailReason::Timeout, &mut out);
    push(&mut s, 2, 3, 0);
    assert_eq!(s.stamp(NodeId(2)), 77);
}

fn refusal(seq: u64, incarnation: u64, age_ms: u64) -> Refusal {
    Refusal {
        seq,
        incarnation,
        age: Duration::from_millis(age_ms),
    }
}

#[test]
fn a_reset_of_a_message_sent_once_moves_the_stream_to_a_fresh_tag() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 1_000);
    push(&mut s, 2, 2, 1_000);
    let mut out: Vec<MessageOutcome> = Vec::new();
    // Stale: another tag.
    let stale = make_seq(seq_tag(a) ^ 1, 1);
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(stale, 9, 0),
            Instant::from_millis(1_010),
            &mut out
        ),
        Reset::Ignored
    );
    // The target started 5 ms ago (after the first send) but the refused copy was the only
    // one: nothing can have been delivered.
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(a, 9, 5),
            Instant::from_millis(1_010),
            &mut out
        ),
        Reset::Restarted { ended: 0, moved: 2 }
    );
    assert_eq!(out, []);
    let moved: Vec<(u32, u32, u32)> = s
        .unacked(NodeId(2))
        .map(|m| (seq_tag(m.seq), seq_counter(m.seq), m.transmissions))
        .collect();
    let tag = moved[0].0;
    assert_ne!(tag, seq_tag(a));
    assert_eq!(moved, [(tag, 1, 0), (tag, 2, 0)]);
    assert_eq!((s.stamp(NodeId(2)), s.known_incarnation(NodeId(2))), (9, 9));
}

#[test]
fn a_reset_of_a_retransmitted_message_restarts_only_if_the_target_predates_it() {
    let mut out: Vec<MessageOutcome> = Vec::new();
    // Sent at 1 s, retransmitted at 3 s, reset at 3.01 s by an incarnation 2.5 s old (born
    // by 0.51 s + margin): it was running at the first send, nothing was delivered.
    let mut s = streams();
    let a = push(&mut s, 2, 1, 1_000);
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(3_000));
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(a, 9, 2_500),
            Instant::from_millis(3_010),
            &mut out
        ),
        Reset::Restarted { ended: 0, moved: 1 }
    );
    // The same reset from an incarnation 1 s old (born after the first send): the first
    // copy may have reached the previous incarnation.
    let mut s = streams();
    let a = push(&mut s, 2, 1, 1_000);
    push(&mut s, 2, 2, 1_500);
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(3_000));
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(a, 9, 1_000),
            Instant::from_millis(3_010),
            &mut out
        ),
        Reset::Abandoned(2)
    );
    let unknown = Outcome::Unknown(FailReason::TargetRestarted);
    assert_eq!(msgs(&out), [(1, unknown), (2, unknown)]);
    assert_eq!(inflight(&s, NodeId(2)), (0, 0));
    // The next message starts a stream stamped with the resetting incarnation.
    assert_eq!(seq_counter(push(&mut s, 2, 3, 3_020)), 1);
    assert_eq!(s.stamp(NodeId(2)), 9);
}

#[test]
fn a_handshake_with_another_incarnation_ends_a_stamped_stream() {
    let mut s = streams();
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(s.on_incarnation(NodeId(2), 40, &mut out), 0);
    push(&mut s, 2, 1, 0);
    assert_eq!(s.stamp(NodeId(2)), 40);
    assert_eq!(s.on_incarnation(NodeId(2), 40, &mut out), 0);
    assert_eq!(s.on_incarnation(NodeId(2), 41, &mut out), 1);
    assert_eq!(
        msgs(&out),
        [(1, Outcome::Unknown(FailReason::TargetRestarted))]
    );
}

#[test]
fn a_refused_only_copy_goes_out_again_as_a_first_transmission() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 0);
    s.on_refused(NodeId(2), a);
    assert_eq!(
        s.unacked(NodeId(2))
            .map(|m| m.transmissions)
            .collect::<Vec<_>>(),
        [0]
    );
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(10));
    assert!(head_sent_once(&s, NodeId(2), a));
    // Two copies out, one refused: the other may still arrive; both refused: neither did.
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(20));
    s.on_refused(NodeId(2), a);
    assert_eq!(
        s.unacked(NodeId(2))
            .map(|m| m.transmissions)
            .collect::<Vec<_>>(),
        [1]
    );
    s.on_refused(NodeId(2), a);
    assert_eq!(
        s.unacked(NodeId(2))
            .map(|m| m.transmissions)
            .collect::<Vec<_>>(),
        [0]
    );
}

#[test]
fn a_refused_head_at_its_deadline_ends_alone_failed_and_the_rest_keep_their_deadlines() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 0);
    push(&mut s, 2, 2, 500);
    push(&mut s, 2, 3, 3_000);
    // A relay refuses the head's only copy (and the others): the stream is marked refused.
    s.on_refused(NodeId(2), a);
    assert!(s.refused(NodeId(2)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(
        s.expire_unacked(Instant::from_millis(8_000), &mut out),
        [NodeId(2)]
    );
    assert_eq!(msgs(&out), [(1, Outcome::Failed(FailReason::NoRoute))]);
    // The others moved, in order, onto a fresh stream, as first transmissions.
    let moved: Vec<(u64, u32, u32)> = s
        .unacked(NodeId(2))
        .map(|m| (m.msg.0, seq_counter(m.seq), m.transmissions))
        .collect();
    assert_eq!(moved, [(2, 1, 0), (3, 2, 0)]);
    assert_ne!(
        s.unacked(NodeId(2)).map(|m| seq_tag(m.seq)).next(),
        Some(seq_tag(a))
    );
    assert_eq!(inflight(&s, NodeId(2)), (2, 6));
    let deadlines: Vec<Instant> = s.unacked(NodeId(2)).map(|m| m.deadline).collect();
    assert_eq!(
        deadlines,
        [Instant::from_millis(8_500), Instant::from_millis(11_000)]
    );
    // The stream still probes the refusing path: sent again, only its head goes out. At the
    // head's deadline it ends, delivery unknown, for `NoRoute` (why the path is in doubt);
    // the other, never sent on this stream, provably did not arrive: it moves on and keeps
    // its own deadline.
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(8_100));
    assert!(!s.refused(NodeId(2)));
    assert!(s.probing(NodeId(2)));
    let tx: Vec<u32> = s.unacked(NodeId(2)).map(|m| m.transmissions).collect();
    assert_eq!(tx, [1, 0]);
    out.clear();
    assert_eq!(
        s.expire_unacked(Instant::from_millis(8_500), &mut out),
        [NodeId(2)]
    );
    assert_eq!(msgs(&out), [(2, Outcome::Unknown(FailReason::NoRoute))]);
    let left: Vec<(u64, u32, Instant)> = s
        .unacked(NodeId(2))
        .map(|m| (m.msg.0, m.transmissions, m.deadline))
        .collect();
    assert_eq!(left, [(3, 0, Instant::from_millis(11_000))]);
}

#[test]
fn giving_up_ends_failed_from_the_first_message_that_provably_never_arrived() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 0);
    push(&mut s, 2, 2, 0);
    let b = push(&mut s, 3, 3, 0);
    push(&mut s, 3, 4, 0);
    push(&mut s, 3, 5, 0);
    s.on_refused(NodeId(2), a);
    // The only copy of message 4 was refused: it never arrived, nor did 5 after it; 3 may
    // have. A seq not in flight proves nothing.
    s.on_refused(NodeId(3), make_seq(seq_tag(b), 2));
    s.on_refused(NodeId(3), make_seq(seq_tag(b) ^ 1, 1));
    let mut out: Vec<MessageOutcome> = Vec::new();
    s.give_up_all(FailReason::Shutdown, &mut out);
    assert_eq!(
        msgs(&out),
        [
            (1, Outcome::Failed(FailReason::Shutdown)),
            (2, Outcome::Failed(FailReason::Shutdown)),
            (3, Outcome::Unknown(FailReason::Shutdown)),
            (4, Outcome::Failed(FailReason::Shutdown)),
            (5, Outcome::Failed(FailReason::Shutdown)),
        ]
    );
}

#[test]
fn a_due_head_that_may_have_arrived_ends_unknown_and_the_refused_rest_keeps_its_deadlines() {
    let mut s = streams();
    push(&mut s, 2, 1, 0);
    let b = push(&mut s, 2, 2, 0);
    push(&mut s, 2, 3, 3_000);
    s.on_refused(NodeId(2), b);
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(
        s.expire_unacked(Instant::from_millis(8_000), &mut out),
        [NodeId(2)]
    );
    assert_eq!(
        msgs(&out),
        [
            (1, Outcome::Unknown(FailReason::NoRoute)),
            (2, Outcome::Failed(FailReason::NoRoute)),
        ]
    );
    let moved: Vec<(u64, u32, u32, Instant)> = s
        .unacked(NodeId(2))
        .map(|m| (m.msg.0, seq_counter(m.seq), m.transmissions, m.deadline))
        .collect();
    assert_eq!(moved, [(3, 1, 0, Instant::from_millis(11_000))]);
    assert_ne!(
        s.unacked(NodeId(2)).map(|m| seq_tag(m.seq)).next(),
        Some(seq_tag(b))
    );
}

#[test]
fn a_reset_ends_unknown_only_what_an_earlier_incarnation_may_have_delivered() {
    let mut s = streams();
    let mut out: Vec<MessageOutcome> = Vec::new();
    // 1 and 2 go out at 0 s and 0.1 s and are not acknowledged (lost with the old target);
    // the only copies of 3 and 4 (sent at 0.2 s and 0.3 s) are refused by the relay, so the
    // stream probes: at 1 s only its head goes out again, and 5, accepted at 4 s (after the
    // new incarnation started at 3 s), waits in the queue behind the probe.
    push(&mut s, 2, 1, 0);
    push(&mut s, 2, 2, 100);
    let c = push(&mut s, 2, 3, 200);
    let d = push(&mut s, 2, 4, 300);
    s.on_refused(NodeId(2), c);
    s.on_refused(NodeId(2), d);
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(1_000));
    push(&mut s, 2, 5, 4_000);
    let tx: Vec<u32> = s.unacked(NodeId(2)).map(|m| m.transmissions).collect();
    assert_eq!(tx, [2, 1, 0, 0]);
    let key = s.find_by_id(NodeId(2)).unwrap();
    assert_eq!(s.get(key).unwrap().queue().len(), 1);
    // The new incarnation (1.01 s old at 4.01 s) refuses the retransmitted head.
    let head = s.unacked(NodeId(2)).next().unwrap().seq;
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(head, 9, 1_010),
            Instant::from_millis(4_010),
            &mut out
        ),
        Reset::Restarted { ended: 2, moved: 2 }
    );
    let unknown = Outcome::Unknown(FailReason::TargetRestarted);
    assert_eq!(msgs(&out), [(1, unknown), (2, unknown)]);
    let moved: Vec<(u64, u32, u32)> = s
        .unacked(NodeId(2))
        .map(|m| (m.msg.0, seq_counter(m.seq), m.transmissions))
        .collect();
    assert_eq!(moved, [(3, 1, 0), (4, 2, 0)]);
    assert_eq!(s.stamp(NodeId(2)), 9);
    assert_eq!(inflight(&s, NodeId(2)), (2, 6));
    // A reset comes from a live incarnation: no more probing, everything goes.
    assert!(!s.probing(NodeId(2)));
}

#[test]
fn a_reset_moves_messages_first_sent_after_the_new_incarnation_started() {
    let mut s = streams();
    let mut out: Vec<MessageOutcome> = Vec::new();
    // 1 may have reached the old incarnation; 2 and 3 were first sent at 2.5 s and 2.6 s,
    // after the resetting incarnation started (2 s old at 4 s: born by 2.002 s).
    let a = push(&mut s, 2, 1, 0);
    push(&mut s, 2, 2, 2_500);
    push(&mut s, 2, 3, 2_600);
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(make_seq(seq_tag(a), 2), 9, 2_000),
            Instant::from_millis(4_000),
            &mut out
        ),
        Reset::Restarted { ended: 1, moved: 2 }
    );
    assert_eq!(
        msgs(&out),
        [(1, Outcome::Unknown(FailReason::TargetRestarted))]
    );
    let moved: Vec<u64> = s.unacked(NodeId(2)).map(|m| m.msg.0).collect();
    assert_eq!(moved, [2, 3]);
    // A message first sent 1 ms after the start is still within the margin: not moved.
    let mut s = streams();
    out.clear();
    let a = push(&mut s, 2, 1, 2_001);
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(a, 9, 2_000),
            Instant::from_millis(4_000),
            &mut out
        ),
        Reset::Restarted { ended: 0, moved: 1 }
    );
    // (its only copy was the refused one) — the same with a second copy out:
    let mut s = streams();
    out.clear();
    let a = push(&mut s, 2, 1, 2_001);
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(3_000));
    assert_eq!(
        s.on_reset(
            NodeId(2),
            refusal(a, 9, 2_000),
            Instant::from_millis(4_000),
            &mut out
        ),
        Reset::Abandoned(1)
    );
}

#[test]
fn in_flight_deadlines_of_many_targets_come_from_the_timer_queues_and_fire_by_target_id() {
    let mut s = streams();
    // Target 5's oldest message is sent first, target 3's later: both due at 8.5 s.
    push(&mut s, 5, 1, 100);
    push(&mut s, 3, 2, 500);
    push(&mut s, 5, 3, 500);
    push(&mut s, 4, 4, 2_000);
    // Earliest of everything: target 5's retransmission (0.1 s + 2 s).
    assert_eq!(s.next_deadline(), Some(Instant::from_millis(2_100)));
    assert_eq!(
        s.due_retransmits(Instant::from_millis(2_500)),
        [NodeId(3), NodeId(5)]
    );
    mark_retransmitted(&mut s, NodeId(5), Instant::from_millis(2_500));
    s.touch(NodeId(3), Instant::from_millis(2_500));
    assert_eq!(s.next_deadline(), Some(Instant::from_millis(4_000)));
    assert_eq!(s.due_retransmits(Instant::from_millis(4_000)), [NodeId(4)]);
    s.touch(NodeId(4), Instant::from_millis(4_000));
    // Acknowledging target 5's first message moves its deadline to the next one's.
    let first = s.unacked(NodeId(5)).next().unwrap().seq;
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert_eq!(s.on_ack(NodeId(5), first, 9, &mut out), 1);
    let mut out: Vec<MessageOutcome> = Vec::new();
    for at in [4_500, 6_500] {
        s.touch(NodeId(3), Instant::from_millis(at));
        s.touch(NodeId(4), Instant::from_millis(at));
        s.touch(NodeId(5), Instant::from_millis(at));
    }
    assert_eq!(s.next_deadline(), Some(Instant::from_millis(8_500)));
    assert_eq!(s.expire_unacked(Instant::from_millis(8_499), &mut out), []);
    assert_eq!(
        s.expire_unacked(Instant::from_millis(8_500), &mut out),
        [NodeId(3), NodeId(5)]
    );
    let unknown = Outcome::Unknown(FailReason::Timeout);
    assert_eq!(msgs(&out), [(2, unknown), (3, unknown)]);
    assert_eq!(s.next_deadline(), Some(Instant::from_millis(8_500)));
    assert_eq!(s.due_retransmits(Instant::from_millis(8_500)), [NodeId(4)]);
}

#[test]
fn removing_an_endpoint_gives_up_what_it_has_in_flight_and_its_timers() {
    let mut s = streams();
    let a = push(&mut s, 2, 1, 0);
    push(&mut s, 2, 2, 0);
    s.on_refused(NodeId(2), make_seq(seq_tag(a), 2));
    let key = s.find_by_id(NodeId(2)).unwrap();
    let mut out: Vec<MessageOutcome> = Vec::new();
    assert!(s.remove(key, FailReason::TargetGone, &mut out).is_some());
    assert_eq!(
        msgs(&out),
        [
            (1, Outcome::Unknown(FailReason::TargetGone)),
            (2, Outcome::Failed(FailReason::TargetGone))
        ]
    );
    assert_eq!(s.next_deadline(), None);
    assert_eq!(s.unacked(NodeId(2)).len(), 0);
}

/// The node's flush through the outbox: at most `budget` queued messages per call go into
/// flight; the rest is an unfinished flush, due at once and continued by `due_flushes`.
#[test]
fn an_outbox_flush_stopped_by_its_budget_is_due_at_once_and_continues_in_order() {
    /// Frames counted, outcomes kept.
    #[derive(Default)]
    struct Sink(usize, Vec<MessageOutcome>);
    impl OutcomeSink for Sink {
        fn emit(&mut self, msg: MsgId, outcome: Outcome) {
            self.1.push(MessageOutcome { msg, outcome });
        }
    }
    impl OutboxSink for Sink {
        fn transmit_data(&mut self, _link: LinkId, _data: &crate::wire::Data<'_>) {
            self.0 += 1;
        }
    }
    let settings = EndpointSettings {
        limits: QueueLimits::UNLIMITED,
        message_timeout: Duration::from_secs(8),
        gc_timeout: Duration::from_secs(60),
    };
    let mut table =
        EndpointTable::for_node(settings, NodeId(1), Rng::new(1), Duration::from_secs(2));
    let key = table
        .get_or_create(NodeId(2), "", Instant::from_millis(0))
        .unwrap();
    table.attach_handle(key);
    let mut sink = Sink::default();
    for id in 1..=5 {
        table.send(
            key,
            MsgId(id),
            7,
            Bytes::from_static(b"abc"),
            Instant::from_millis(0),
            || None,
            &mut sink,
        );
    }
    assert_eq!(table.get(key).unwrap().queue().len(), 5);
    assert!(table.has_outgoing(NodeId(2)));
    table.flush_outbox(NodeId(2), LinkId(1), Instant::from_millis(10), 2, &mut sink);
    assert_eq!((sink.0, table.unacked(NodeId(2)).len()), (2, 2));
    assert!(table.has_unfinished_flush());
    assert_eq!(table.due_flushes(Instant::from_millis(10)), [NodeId(2)]);
    assert!(!table.has_unfinished_flush());
    // The flush again: the two in flight go out again, then two more from the queue.
    table.flush_outbox(NodeId(2), LinkId(1), Instant::from_millis(11), 2, &mut sink);
    assert_eq!((sink.0, table.unacked(NodeId(2)).len()), (6, 4));
    table.flush_outbox(NodeId(2), LinkId(1), Instant::from_millis(12), 2, &mut sink);
    assert!(!table.has_unfinished_flush());
    let order: Vec<u64> = table.unacked(NodeId(2)).map(|m| m.msg.0).collect();
    assert_eq!(order, [1, 2, 3, 4, 5]);
    assert_eq!(sink.1, []);
}

/// A message with an earlier deadline behind one with a later deadline (a call's own
/// deadline behind a plain message, as the simulator's seed 649 of 2,000 had it) ends
/// exactly at its own deadline: the table's timer follows the earliest deadline in flight,
/// not the oldest message's. It ends `Unknown(Timeout)` and the stream with it; nothing
/// ends before 4,000 ms and nothing is left open past it.
#[test]
fn an_earlier_deadline_behind_a_later_one_ends_exactly_at_its_own_deadline() {
    let mut s = streams();
    push(&mut s, 2, 1, 0); // deadline 8,000 ms
    let key = s.find_by_id(NodeId(2)).unwrap();
    let mut out: Vec<MessageOutcome> = Vec::new();
    s.send_until(
        key,
        MsgId(2),
        1,
        Bytes::from_static(b"xy"),
        Instant::from_millis(1_000),
        Instant::from_millis(4_000),
        || Some(LINK),
        &mut out,
    );
    assert_eq!(out, []);
    assert_eq!(inflight(&s, NodeId(2)), (2, 5));
    // Retransmitted at 3,000 ms (next retransmission 5,000 ms): the next timer is the
    // earlier deadline, 4,000 ms, not the oldest message's 8,000 ms.
    mark_retransmitted(&mut s, NodeId(2), Instant::from_millis(3_000));
    assert_eq!(s.next_deadline(), Some(Instant::from_millis(4_000)));
    assert_eq!(s.expire_unacked(Instant::from_millis(3_999), &mut out), []);
    assert_eq!(
        s.expire_unacked(Instant::from_millis(4_000), &mut out),
        [NodeId(2)]
    );
    // Both may have arrived: the due one ends for its deadline, the older one, not due, ends
    // because the stream it rides is given up.
    assert_eq!(
        msgs(&out),
        [
            (1, Outcome::Unknown(FailReason::StreamAbandoned)),
            (2, Outcome::Unknown(FailReason::Timeout)),
        ]
    );
    assert_eq!(inflight(&s, NodeId(2)), (0, 0));
    assert_eq!(s.next_deadline(), None);
}
