//! Rule 4 of calls (ARCHITECTURE §11), deadlines travel: the remaining budget rides the
//! request and becomes the handler's deadline; a nested call inherits the smaller deadline;
//! an expired request never reaches a handler — queued at the caller past its deadline it is
//! never transmitted, lost on the wire it is not sent again after its deadline — and a reply
//! after the server's deadline is dropped there.

mod common;

use common::rpc::{
    CALLER, SERVER, SERVER_2, answer, call, call_held_by, cancelled, done, echo, requests,
    rpc_cluster,
};
use switchboard_core::{
    ids::NodeId,
    outcome::FailReason,
    rpc::{CallOutcome, CallSpec},
    time::Duration,
};

/// The path to the server is down: the request waits in the caller's queue and ends
/// `Failed(Timeout)` exactly at the call's 2 s deadline. When the path comes back, nothing
/// is sent: the handler never sees it.
#[test]
fn a_request_queued_past_its_deadline_fails_and_is_never_transmitted() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    sim.link_down(NodeId(CALLER), NodeId(SERVER));
    let t0 = sim.now();
    let id = call(
        &mut sim,
        CALLER,
        echo("late").timeout(Duration::from_secs(2)),
    );
    sim.advance(Duration::from_secs(3));
    sim.link_up(NodeId(CALLER), NodeId(SERVER));
    sim.advance(Duration::from_secs(30));
    assert_eq!(
        done(&sim, CALLER, id),
        [(
            t0 + Duration::from_secs(2),
            CallOutcome::Failed(FailReason::Timeout)
        )]
    );
    assert_eq!(requests(&sim, SERVER), []);
}

/// The request is taken off the wire (10 ms latency, link up): it would go again when the
/// oldest unacknowledged message waited 1.5 s — past the call's 1 s deadline, where the call
/// ends `Unknown(Timeout)` (it was transmitted) and its stream gives it up: the handler
/// never sees it.
#[test]
fn a_request_lost_on_the_wire_is_not_sent_again_after_its_deadline() {
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
        echo("lost").timeout(Duration::from_secs(1)),
    );
    let taken = sim.take_in_flight(NodeId(CALLER), NodeId(SERVER));
    assert_eq!(taken.len(), 1);
    sim.advance(Duration::from_secs(10));
    assert_eq!(
        done(&sim, CALLER, id),
        [(
            t0 + Duration::from_secs(1),
            CallOutcome::Unknown(FailReason::Timeout)
        )]
    );
    assert_eq!(requests(&sim, SERVER).len(), 1, "only the warm-up");
}

/// The caller gives 5 s; the server's handler calls a second server `within` the request
/// with a 30 s timeout: the inner request carries what is left of the 5 s. Nobody answers:
/// the inner call, the inner server's held request and the outer call all end at t0 + 5 s.
#[test]
fn a_nested_call_inherits_the_smaller_deadline() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"]), (SERVER_2, &["inner"])]);
    sim.advance(Duration::from_millis(100));
    let t0 = sim.now();
    let outer = call(
        &mut sim,
        CALLER,
        echo("outer").timeout(Duration::from_secs(5)),
    );
    sim.deliver_until_idle();
    let (_, request) = requests(&sim, SERVER)[0].clone();
    assert_eq!(request.deadline, t0 + Duration::from_secs(5));
    sim.advance(Duration::from_secs(1));
    let inner_spec = CallSpec::new("inner", bytes::Bytes::from_static(b"nested"))
        .timeout(Duration::from_secs(30))
        .within(request.request);
    let inner = call(&mut sim, SERVER, inner_spec);
    sim.deliver_until_idle();
    let (_, inner_request) = requests(&sim, SERVER_2)[0].clone();
    assert_eq!(inner_request.deadline, t0 + Duration::from_secs(5));
    sim.advance(Duration::from_secs(10));
    let timeout = CallOutcome::Unknown(FailReason::Timeout);
    let five = t0 + Duration::from_secs(5);
    assert_eq!(done(&sim, SERVER, inner), [(five, timeout.clone())]);
    assert_eq!(done(&sim, CALLER, outer), [(five, timeout)]);
    assert_eq!(cancelled(&sim, SERVER_2), [(five, inner_request.request)]);
    assert_eq!(cancelled(&sim, SERVER), [(five, request.request)]);
}

/// A handler that answers after the request's deadline: the reply is refused and counted
/// at the server, and nothing reaches the caller, whose call already ended.
#[test]
fn a_reply_after_the_deadline_is_dropped_at_the_server() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let t0 = sim.now();
    let id = call(
        &mut sim,
        CALLER,
        echo("slow").timeout(Duration::from_secs(1)),
    );
    sim.deliver_until_idle();
    let (_, request) = requests(&sim, SERVER)[0].clone();
    sim.advance(Duration::from_secs(2));
    assert!(!answer(&mut sim, SERVER, request.request, "too late"));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(
            t0 + Duration::from_secs(1),
            CallOutcome::Unknown(FailReason::Timeout)
        )]
    );
    assert_eq!(
        sim.node(NodeId(SERVER))
            .inspect()
            .rpc_stats()
            .dropped_replies,
        1
    );
    assert_eq!(
        sim.node(NodeId(CALLER)).inspect().rpc_stats().late_replies,
        0
    );
}
