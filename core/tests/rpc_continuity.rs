//! Rule 3 of calls (ARCHITECTURE §11), continuity: a link blip with the same server
//! incarnation ends nothing. The acknowledged stream resumes on the new link, the request is
//! executed once, and the reply arrives (happy-server keys presence on the socket and
//! kills such calls).

mod common;

use common::rpc::{
    CALLER, SERVER, answer, call, call_held_by, done, echo, reply, requests, rpc_cluster,
};
use switchboard_core::{ids::NodeId, node::Event, time::Duration};

fn no_deaths(sim: &switchboard_core::sim::Sim, node: u64) -> bool {
    !sim.events(NodeId(node))
        .iter()
        .any(|(_, e)| matches!(e, Event::PeerDead { .. }))
}

/// The handler holds the request; the link drops (10 ms each way) and the handler answers
/// at that instant. Both ends probe at once: the caller's probe lands at + 10 ms, the server
/// accepts and sends the reply on the new link, which lands at + 20 ms.
#[test]
fn a_link_blip_while_the_handler_works_keeps_the_call_and_the_reply_arrives() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (id, request) = call_held_by(&mut sim, SERVER, "hold");
    sim.set_latency(NodeId(CALLER), NodeId(SERVER), Duration::from_millis(10));
    sim.advance(Duration::from_millis(100));
    let cut = sim.now();
    sim.cut(NodeId(CALLER), NodeId(SERVER));
    assert!(answer(&mut sim, SERVER, request, "after the blip"));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(cut + Duration::from_millis(20), reply("after the blip"))],
        "{}",
        sim.trace_tail(40)
    );
    assert_eq!(requests(&sim, SERVER).len(), 1);
    assert!(no_deaths(&sim, CALLER) && no_deaths(&sim, SERVER));
}

/// The request is on the wire when the link drops (lost with it): it goes out again on the
/// new link, reaches the handler once, and the reply ends the call.
#[test]
fn a_request_lost_with_the_link_is_sent_again_and_executed_once() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    // Warm the link so the request goes straight out.
    let (warm, warm_request) = call_held_by(&mut sim, SERVER, "warm");
    assert!(answer(&mut sim, SERVER, warm_request, "warm"));
    sim.deliver_until_idle();
    assert_eq!(done(&sim, CALLER, warm).len(), 1);
    sim.set_latency(NodeId(CALLER), NodeId(SERVER), Duration::from_millis(10));
    let id = call(&mut sim, CALLER, echo("lost once"));
    sim.advance(Duration::from_millis(5));
    let cut = sim.now();
    sim.cut(NodeId(CALLER), NodeId(SERVER));
    sim.advance(Duration::from_secs(1));
    let got = requests(&sim, SERVER);
    assert_eq!(got.len(), 2, "{}", sim.trace_tail(40));
    let (at, request) = &got[1];
    // The server's probe lands at + 10 ms; the caller accepts and sends again at once.
    assert_eq!(*at, cut + Duration::from_millis(20));
    assert_eq!(&request.payload[..], b"lost once");
    sim.advance(Duration::from_millis(100));
    let answered = sim.now();
    assert!(answer(&mut sim, SERVER, request.request, "once"));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(answered + Duration::from_millis(10), reply("once"))]
    );
    assert_eq!(requests(&sim, SERVER).len(), 2);
}
