use alloc::vec::Vec;

use super::*;
use crate::{
    outcome::{FailReason, MessageOutcome},
    time::Duration,
};

fn streams() -> SendStreams {
    SendStreams::new(Rng::new(1), Duration::from_secs(2))
}

fn push(s: &mut SendStreams, dst: u64, msg: u64, at_ms: u64) -> u64 {
    s.push(
        NodeId(dst),
        MsgId(msg),
        1,
        Bytes::from_static(b"abc"),
        Instant::from_millis(at_ms + 8_000),
        Instant::from_millis(at_ms),
    )
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
    assert_eq!(s.inflight(NodeId(2)), (3, 9));
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
    assert_eq!(s.inflight(NodeId(2)), (1, 3));
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
    s.mark_retransmitted(NodeId(2), Instant::from_millis(2_100));
    assert_eq!(
        s.unacked(NodeId(2))
            .map(|m| m.transmissions)
            .collect::<Vec<_>>(),
        [2, 2]
    );
    assert!(!s.head_sent_once(NodeId(2), make_seq(0, 1)));
    let mut out: Vec<MessageOutcome> = Vec::new();
    let unknown = Outcome::Unknown(FailReason::Timeout);
    assert_eq!(s.expire(Instant::from_millis(8_099), unknown, &mut out), []);
    assert_eq!(
        s.expire(Instant::from_millis(8_100), unknown, &mut out),
        [NodeId(2)]
    );
    // The whole stream ends with its oldest message, and the next one starts afresh.
    assert_eq!(
        out,
        [
            MessageOutcome {
                msg: MsgId(1),
                outcome: unknown
            },
            MessageOutcome {
                msg: MsgId(2),
                outcome: unknown
            },
        ]
    );
    assert_eq!(seq_counter(push(&mut s, 2, 3, 9_000)), 1);
}

#[test]
fn receiver_delivers_in_order_once_and_follows_new_tags() {
    let mut r = RecvStreams::new(5);
    let src = NodeId(1);
    assert_eq!(r.ack_seq(src), None);
    assert_eq!(r.on_data(src, make_seq(7, 2), 0, false), Verdict::Unknown);
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Deliver);
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Duplicate);
    assert_eq!(r.on_data(src, make_seq(7, 3), 0, false), Verdict::Gap);
    assert_eq!(r.on_data(src, make_seq(7, 2), 0, false), Verdict::Deliver);
    assert_eq!(r.ack_seq(src), Some(make_seq(7, 2)));
    // A new stream replaces the old one; the old one cannot come back.
    assert_eq!(r.on_data(src, make_seq(9, 1), 0, false), Verdict::Deliver);
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Unknown);
    assert_eq!(r.on_data(src, make_seq(7, 3), 0, false), Verdict::Unknown);
    assert_eq!(r.ack_seq(src), Some(make_seq(9, 1)));
    assert_eq!(r.on_data(src, make_seq(0, 1), 0, false), Verdict::Unknown);
}
