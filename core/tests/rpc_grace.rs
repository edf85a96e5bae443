//! Rule 1 of calls (ARCHITECTURE §11), grace without polling: a call with no server waits,
//! woken only by a discovery record that serves its method, and ends `NotAvailable` exactly
//! at its grace deadline with no lookup in between; a server that appears mid-grace is
//! called on the tick its record arrives.

mod common;

use bytes::Bytes;
use common::rpc::{
    CALLER, SERVER, SERVER_2, answer, call, done, publish_own, reply, requests, rpc_cluster,
};
use switchboard_core::{
    ids::NodeId,
    outcome::FailReason,
    rpc::{CallOutcome, CallSpec},
    time::Duration,
};

fn echo_call(payload: &'static str) -> CallSpec {
    CallSpec::new("echo", Bytes::from_static(payload.as_bytes()))
        .timeout(Duration::from_secs(30))
        .grace(Duration::from_secs(15))
}

/// Nobody serves `echo`; another node serving `other` publishes mid-grace. The call makes
/// one lookup (its first pick), none while it waits, and ends `Failed(NotAvailable)` at
/// exactly start + 15 s — not later, not by a poll.
#[test]
fn grace_ends_not_available_exactly_at_its_deadline_with_no_lookups() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["other"])]);
    sim.advance(Duration::from_millis(100));
    let t0 = sim.now();
    let id = call(&mut sim, CALLER, echo_call("ping"));
    assert_eq!(sim.node(NodeId(CALLER)).inspect().rpc_stats().lookups, 1);
    assert_eq!(
        sim.node(NodeId(CALLER)).inspect().rpc_stats().grace_waits,
        1
    );

    sim.advance(Duration::from_secs(5));
    // A record serving another method, and a republish of one: not a reason to look.
    publish_own(&mut sim, SERVER);
    sim.advance(Duration::from_millis(9_999));
    assert_eq!(done(&sim, CALLER, id), []);
    assert_eq!(
        sim.deadline(NodeId(CALLER))
            .map(|d| d <= t0 + Duration::from_secs(15)),
        Some(true)
    );
    sim.advance(Duration::from_secs(20));

    assert_eq!(
        done(&sim, CALLER, id),
        [(
            t0 + Duration::from_secs(15),
            CallOutcome::Failed(FailReason::NotAvailable)
        )]
    );
    assert_eq!(
        sim.node(NodeId(CALLER)).inspect().rpc_stats().lookups,
        1,
        "no lookup while waiting"
    );
    assert_eq!(requests(&sim, SERVER), []);
}

/// The server of `echo` publishes 3 s into the grace: the request reaches its handler on
/// that very tick (zero link latency), and the handler's reply ends the call `Reply`.
#[test]
fn a_server_appearing_mid_grace_is_called_on_the_tick_its_record_arrives() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &[])]);
    sim.advance(Duration::from_millis(100));
    let t0 = sim.now();
    let id = call(&mut sim, CALLER, echo_call("ping"));
    sim.advance(Duration::from_secs(3));
    sim.act(NodeId(SERVER), |node, now| node.serve(now, "echo"))
        .expect("a valid method");
    let appeared = sim.now();
    publish_own(&mut sim, SERVER);
    sim.deliver_until_idle();

    let got = requests(&sim, SERVER);
    assert_eq!(got.len(), 1);
    let (at, request) = &got[0];
    assert_eq!(*at, appeared);
    assert_eq!(
        (request.from, request.method.as_str(), &request.payload[..]),
        (NodeId(CALLER), "echo", &b"ping"[..])
    );
    // The budget travelled: 30 s from the call, 3 s spent.
    assert_eq!(request.deadline, t0 + Duration::from_secs(30));
    assert_eq!(sim.node(NodeId(CALLER)).inspect().rpc_stats().lookups, 2);

    sim.advance(Duration::from_millis(20));
    let answered = sim.now();
    assert!(answer(&mut sim, SERVER, request.request, "pong"));
    sim.deliver_until_idle();
    assert_eq!(done(&sim, CALLER, id), [(answered, reply("pong"))]);
}

/// A record for a node serving `echo` wakes only the calls of `echo`; with two servers
/// known, round robin alternates between them.
#[test]
fn round_robin_alternates_between_the_servers_of_the_method() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"]), (SERVER_2, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let ids: Vec<_> = (0..4)
        .map(|_| call(&mut sim, CALLER, echo_call("rr")))
        .collect();
    sim.deliver_until_idle();
    assert_eq!(requests(&sim, SERVER).len(), 2);
    assert_eq!(requests(&sim, SERVER_2).len(), 2);
    for (_, request) in requests(&sim, SERVER) {
        assert!(answer(&mut sim, SERVER, request.request, "from-702"));
    }
    for (_, request) in requests(&sim, SERVER_2) {
        assert!(answer(&mut sim, SERVER_2, request.request, "from-704"));
    }
    sim.deliver_until_idle();
    let outcomes: Vec<_> = ids
        .iter()
        .map(|&id| done(&sim, CALLER, id)[0].1.clone())
        .collect();
    assert_eq!(
        outcomes,
        [
            reply("from-702"),
            reply("from-704"),
            reply("from-702"),
            reply("from-704")
        ]
    );
}
