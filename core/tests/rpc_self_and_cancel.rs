//! Rules 6 and 7 of calls (ARCHITECTURE §11): a call that resolves to this node itself ends
//! `Failed(SelfCall)` at once (unless the config allows loopback calls, then its own handler
//! answers); a caller may cancel — before any request left it ends `Failed(Cancelled)`,
//! after, `Unknown(Cancelled)`, the server is told and the handler's late reply is dropped.

mod common;

use common::{
    GROUP_B, config,
    rpc::{
        CALLER, SERVER, answer, call, call_held_by, cancelled, done, echo, publish_own, reply,
        requests, rpc_cluster,
    },
};
use switchboard_core::{
    ids::NodeId, outcome::FailReason, rpc::CallOutcome, select::Select, sim::Sim, time::Duration,
};

#[test]
fn a_call_to_this_node_itself_fails_self_call_at_once() {
    let mut sim = rpc_cluster(&[(CALLER, &["echo"]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let t = sim.now();
    let named = call(
        &mut sim,
        CALLER,
        echo("me").select(Select::Node(NodeId(CALLER))),
    );
    assert_eq!(
        done(&sim, CALLER, named),
        [(t, CallOutcome::Failed(FailReason::SelfCall))]
    );
    // The other server is fine.
    let (other, request) = {
        let id = call(
            &mut sim,
            CALLER,
            echo("you").select(Select::Node(NodeId(SERVER))),
        );
        sim.deliver_until_idle();
        (id, requests(&sim, SERVER)[0].1.request)
    };
    assert!(answer(&mut sim, SERVER, request, "from 702"));
    sim.deliver_until_idle();
    assert_eq!(done(&sim, CALLER, other), [(t, reply("from 702"))]);
    assert_eq!(requests(&sim, CALLER), []);
}

#[test]
fn with_loopback_calls_allowed_the_own_handler_answers() {
    let mut sim = Sim::new();
    let mut c = config(GROUP_B, CALLER, 0);
    c.rpc_allow_self_calls = true;
    sim.add_node(c).expect("a valid config");
    sim.run_until_idle();
    sim.act(NodeId(CALLER), |node, now| node.serve(now, "echo"))
        .expect("a valid method");
    publish_own(&mut sim, CALLER);
    sim.run_until_idle();
    let t = sim.now();
    let id = call(&mut sim, CALLER, echo("loop"));
    let got = requests(&sim, CALLER);
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].1.from, &got[0].1.payload[..]),
        (NodeId(CALLER), &b"loop"[..])
    );
    assert!(answer(&mut sim, CALLER, got[0].1.request, "looped"));
    assert_eq!(done(&sim, CALLER, id), [(t, reply("looped"))]);
}

#[test]
fn cancelling_a_waiting_call_fails_it_cancelled_and_no_server_ever_sees_it() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &[])]);
    sim.advance(Duration::from_millis(100));
    let id = call(&mut sim, CALLER, echo("never"));
    sim.advance(Duration::from_secs(1));
    let t = sim.now();
    assert!(sim.act(NodeId(CALLER), |node, now| node.cancel(now, id)));
    assert!(!sim.act(NodeId(CALLER), |node, now| node.cancel(now, id)));
    sim.act(NodeId(SERVER), |node, now| node.serve(now, "echo"))
        .expect("a valid method");
    publish_own(&mut sim, SERVER);
    sim.advance(Duration::from_secs(20));
    assert_eq!(
        done(&sim, CALLER, id),
        [(t, CallOutcome::Failed(FailReason::Cancelled))]
    );
    assert_eq!(requests(&sim, SERVER), []);
}

/// Cancelled while the handler works (10 ms each way): `Unknown(Cancelled)` at once; the
/// server learns it 10 ms later and drops the handler's reply.
#[test]
fn cancelling_a_call_at_its_handler_tells_the_server_and_drops_the_reply() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (id, request) = call_held_by(&mut sim, SERVER, "work");
    sim.set_latency(NodeId(CALLER), NodeId(SERVER), Duration::from_millis(10));
    sim.advance(Duration::from_millis(50));
    let t = sim.now();
    assert!(sim.act(NodeId(CALLER), |node, now| node.cancel(now, id)));
    sim.advance(Duration::from_millis(100));
    assert!(!answer(&mut sim, SERVER, request, "unwanted"));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(t, CallOutcome::Unknown(FailReason::Cancelled))]
    );
    assert_eq!(
        cancelled(&sim, SERVER),
        [(t + Duration::from_millis(10), request)]
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
