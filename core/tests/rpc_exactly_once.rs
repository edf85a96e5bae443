//! Rule 5 of calls (ARCHITECTURE §11), exactly-once execution per incarnation: a request
//! sent again (its acknowledgement lost) reaches the handler once; replies are matched by
//! call id, and a late or duplicate one is dropped and counted.

mod common;

use common::rpc::{
    CALLER, SERVER, answer, call, call_held_by, done, echo, reply, requests, rpc_cluster,
};
use switchboard_core::{ids::NodeId, outcome::FailReason, rpc::CallOutcome, time::Duration};

/// The request arrives (10 ms), its acknowledgement is taken off the wire: the caller sends
/// the request again when it waited 1.5 s, the server's stream drops the copy and acks it —
/// the handler saw it once, and its reply ends the call once.
#[test]
fn a_retransmitted_request_is_never_executed_twice() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (warm, request) = call_held_by(&mut sim, SERVER, "warm");
    assert!(answer(&mut sim, SERVER, request, "warm"));
    sim.deliver_until_idle();
    assert_eq!(done(&sim, CALLER, warm).len(), 1);
    sim.set_latency(NodeId(CALLER), NodeId(SERVER), Duration::from_millis(10));
    let t0 = sim.now();
    let id = call(&mut sim, CALLER, echo("once"));
    sim.advance(Duration::from_millis(15));
    let acks = sim.take_in_flight(NodeId(SERVER), NodeId(CALLER));
    assert_eq!(acks.len(), 1, "the request's ack");
    sim.advance(Duration::from_millis(1_400));
    assert_eq!(
        sim.node(NodeId(CALLER)).inspect().unacked(NodeId(SERVER)),
        1
    );
    sim.advance(Duration::from_millis(200));
    // Sent again at t0 + 1.5 s, acknowledged at + 1.52 s.
    assert_eq!(
        sim.node(NodeId(CALLER)).inspect().unacked(NodeId(SERVER)),
        0
    );
    let got = requests(&sim, SERVER);
    assert_eq!(got.len(), 2, "the warm-up and the request, once");
    assert_eq!(got[1].0, t0 + Duration::from_millis(10));
    assert!(answer(&mut sim, SERVER, got[1].1.request, "done once"));
    let answered = sim.now();
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(answered + Duration::from_millis(10), reply("done once"))]
    );
    assert_eq!(requests(&sim, SERVER).len(), 2);
}

/// The server's deadline is later than the caller's (the budget left when the request was
/// sent, counted from its arrival 10 ms later): a reply sent in between reaches a caller
/// whose call already ended `Unknown(Timeout)`: dropped and counted, no second outcome.
#[test]
fn a_late_reply_is_dropped_and_counted() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (warm, request) = call_held_by(&mut sim, SERVER, "warm");
    assert!(answer(&mut sim, SERVER, request, "warm"));
    sim.deliver_until_idle();
    assert_eq!(done(&sim, CALLER, warm).len(), 1);
    sim.set_latency(NodeId(CALLER), NodeId(SERVER), Duration::from_millis(10));
    let t0 = sim.now();
    let id = call(
        &mut sim,
        CALLER,
        echo("slow").timeout(Duration::from_secs(1)),
    );
    sim.advance(Duration::from_millis(20));
    let (_, request) = requests(&sim, SERVER)[1].clone();
    assert_eq!(request.deadline, t0 + Duration::from_millis(1_010));
    sim.advance(Duration::from_millis(985));
    assert!(answer(&mut sim, SERVER, request.request, "late"));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(
            t0 + Duration::from_secs(1),
            CallOutcome::Unknown(FailReason::Timeout)
        )]
    );
    assert_eq!(
        sim.node(NodeId(CALLER)).inspect().rpc_stats().late_replies,
        1
    );
}

/// A handler answering twice: the second reply is refused at the server and counted; the
/// caller sees one outcome.
#[test]
fn a_duplicate_reply_is_dropped_and_counted() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (id, request) = call_held_by(&mut sim, SERVER, "twice");
    let answered = sim.now();
    assert!(answer(&mut sim, SERVER, request, "first"));
    assert!(!answer(&mut sim, SERVER, request, "second"));
    sim.advance(Duration::from_secs(1));
    assert_eq!(done(&sim, CALLER, id), [(answered, reply("first"))]);
    assert_eq!(
        sim.node(NodeId(SERVER))
            .inspect()
            .rpc_stats()
            .dropped_replies,
        1
    );
}

/// Two calls in flight to the same server are told apart by call id: answered in the
/// opposite order, each gets its own reply.
#[test]
fn replies_are_matched_by_call_id() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let first = call(&mut sim, CALLER, echo("a"));
    let second = call(&mut sim, CALLER, echo("b"));
    sim.deliver_until_idle();
    let got = requests(&sim, SERVER);
    assert_eq!(got.len(), 2);
    assert!(answer(&mut sim, SERVER, got[1].1.request, "for b"));
    assert!(answer(&mut sim, SERVER, got[0].1.request, "for a"));
    sim.deliver_until_idle();
    let now = sim.now();
    assert_eq!(done(&sim, CALLER, first), [(now, reply("for a"))]);
    assert_eq!(done(&sim, CALLER, second), [(now, reply("for b"))]);
}
