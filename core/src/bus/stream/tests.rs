//! Receiver tests: delivery in order, duplicates, gaps, and the reset rules.

use super::*;

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

#[test]
fn receiver_rule_4_a_stream_stamped_for_another_incarnation_is_reset_for_good() {
    let mut r = RecvStreams::new(5);
    let src = NodeId(1);
    assert_eq!(r.incarnation(), 5);
    // Whatever the counter and flag: never delivered, refused from now on.
    assert_eq!(r.on_data(src, make_seq(7, 1), 4, false), Verdict::Reset);
    assert_eq!(r.on_data(src, make_seq(8, 3), 6, true), Verdict::Reset);
    assert_eq!(r.ack_seq(src), None);
    // Rule 3: even a first copy stamped 0 or stamped for us.
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Reset);
    assert_eq!(r.on_data(src, make_seq(8, 1), 5, false), Verdict::Reset);
    assert_eq!(r.ack_seq(src), None);
}

#[test]
fn receiver_rule_1_the_held_stream_ignores_stamps() {
    let mut r = RecvStreams::new(5);
    let src = NodeId(1);
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Deliver);
    assert_eq!(r.on_data(src, make_seq(7, 2), 4, false), Verdict::Deliver);
    assert_eq!(r.on_data(src, make_seq(7, 2), 4, true), Verdict::Duplicate);
    assert_eq!(r.on_data(src, make_seq(7, 4), 4, true), Verdict::Gap);
    assert_eq!(r.ack_seq(src), Some(make_seq(7, 2)));
}

#[test]
fn receiver_rule_4_a_retransmitted_first_message_stamped_0_of_an_unknown_stream_is_reset() {
    let mut r = RecvStreams::new(5);
    let src = NodeId(1);
    // Not counter 1: silently unknown.
    assert_eq!(r.on_data(src, make_seq(7, 2), 0, true), Verdict::Unknown);
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, true), Verdict::Reset);
    assert_eq!(r.ack_seq(src), None);
    // The delayed first copy of the refused stream is refused too (rule 3).
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Reset);
    // Stamped with our own incarnation: the sender knows it is talking to us.
    assert_eq!(r.on_data(src, make_seq(8, 1), 5, true), Verdict::Deliver);
    // Once held, a retransmission stamped 0 is a plain duplicate (acked again).
    assert_eq!(r.on_data(src, make_seq(8, 1), 0, true), Verdict::Duplicate);
    assert_eq!(r.on_data(src, make_seq(8, 2), 0, true), Verdict::Deliver);
    // A new stream's retransmitted first message stamped 0 is reset; the held stream stays.
    assert_eq!(r.on_data(src, make_seq(9, 1), 0, true), Verdict::Reset);
    assert_eq!(r.ack_seq(src), Some(make_seq(8, 2)));
}

#[test]
fn receiver_rule_5_first_transmissions_stamped_0_or_ours_start_a_stream() {
    let mut r = RecvStreams::new(5);
    let src = NodeId(1);
    assert_eq!(r.on_data(src, make_seq(7, 1), 0, false), Verdict::Deliver);
    assert_eq!(r.on_data(src, make_seq(8, 1), 5, false), Verdict::Deliver);
    assert_eq!(r.ack_seq(src), Some(make_seq(8, 1)));
    // The retired stream cannot come back, stamped or not.
    assert_eq!(r.on_data(src, make_seq(7, 1), 5, false), Verdict::Unknown);
}

#[test]
fn receiver_rule_6_a_retransmission_of_a_forgotten_stream_stamped_for_us_is_reset() {
    let mut r = RecvStreams::new(5);
    let src = NodeId(1);
    let t = |s| Instant::from_secs(s);
    let grace = Duration::from_secs(10);
    assert_eq!(r.on_data(src, make_seq(7, 1), 5, false), Verdict::Deliver);
    r.heard(src, t(1));
    assert_eq!(r.on_data(src, make_seq(7, 2), 5, false), Verdict::Deliver);
    r.heard(src, t(2));
    // Not quiet for a grace yet: kept.
    assert!(!r.forget(src, t(11), grace));
    assert!(r.holds(src));
    assert!(r.forget(src, t(12), grace));
    assert!(!r.holds(src));
    // A first copy of the next message: not placeable, dropped (the sender resends it).
    assert_eq!(r.on_data(src, make_seq(7, 3), 5, false), Verdict::Unknown);
    // Its retransmission: this incarnation acked 1 and 2 and forgot the stream — reset.
    assert_eq!(r.on_data(src, make_seq(7, 3), 5, true), Verdict::Reset);
    assert_eq!(r.on_data(src, make_seq(7, 3), 5, false), Verdict::Reset);
    // The fresh stream the sender moves to is delivered.
    assert_eq!(r.on_data(src, make_seq(9, 1), 5, false), Verdict::Deliver);
    // Nearest that is not rule 6: stamped 0, or a stream held, or a first message.
    let other = NodeId(2);
    assert_eq!(r.on_data(other, make_seq(3, 4), 0, true), Verdict::Unknown);
    assert_eq!(r.on_data(other, make_seq(3, 1), 5, true), Verdict::Deliver);
    assert_eq!(r.on_data(other, make_seq(3, 4), 5, true), Verdict::Gap);
}
