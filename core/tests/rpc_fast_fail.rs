//! Rule 2 of calls (ARCHITECTURE §11), fast-fail: a call whose request is at its server's
//! handler ends `Unknown` on the very tick evidence of that server incarnation's death
//! arrives — a registry delete, a new incarnation in the registry, a refused redial, a
//! relay's notice, stopped heartbeats — not at its 30 s deadline.

mod common;

use common::{
    GROUP_F,
    rpc::{CALLER, ROOT, SERVER, call_held_by, done, publish_own, rpc_cluster, rpc_cluster_in},
};
use switchboard_core::{
    ids::NodeId,
    node::{Event, Evidence},
    outcome::FailReason,
    rpc::CallOutcome,
    sim::Sim,
    time::{Duration, Instant},
};

fn held() -> (Sim, switchboard_core::rpc::CallId) {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (id, _) = call_held_by(&mut sim, SERVER, "slow");
    sim.advance(Duration::from_millis(100));
    assert_eq!(done(&sim, CALLER, id), []);
    (sim, id)
}

/// `node`'s `PeerDead` events: (instant, peer, evidence).
fn deaths(sim: &Sim, node: u64) -> Vec<(Instant, u64, Evidence)> {
    sim.events(NodeId(node))
        .iter()
        .filter_map(|(at, e)| match *e {
            Event::PeerDead { peer, evidence, .. } => Some((*at, peer.0, evidence)),
            _ => None,
        })
        .collect()
}

const GONE: CallOutcome = CallOutcome::Unknown(FailReason::TargetGone);

#[test]
fn a_registry_delete_ends_the_call_on_its_tick() {
    let (mut sim, id) = held();
    let deleted = sim.now();
    sim.registry_delete_discovery(NodeId(SERVER));
    sim.advance(Duration::from_secs(1));
    assert_eq!(done(&sim, CALLER, id), [(deleted, GONE)]);
    assert_eq!(
        deaths(&sim, CALLER),
        [(deleted, SERVER, Evidence::RegistryDeleted)]
    );
    assert_eq!(sim.node(NodeId(CALLER)).inspect().rpc_stats().fast_fails, 1);
}

#[test]
fn a_new_incarnation_in_the_registry_ends_the_call_target_restarted_on_its_tick() {
    let (mut sim, id) = held();
    let mut info = sim.node(NodeId(SERVER)).discovery_info();
    info.incarnation = info.incarnation.wrapping_add(1).max(1);
    let announced = sim.now();
    sim.registry_put_discovery(info);
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(announced, CallOutcome::Unknown(FailReason::TargetRestarted))]
    );
    assert_eq!(
        deaths(&sim, CALLER),
        [(announced, SERVER, Evidence::NewIncarnation)]
    );
}

#[test]
fn a_refused_redial_ends_the_call_at_the_kill() {
    let (mut sim, id) = held();
    let killed = sim.now();
    sim.kill(NodeId(SERVER));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(killed, GONE)],
        "{}",
        sim.trace_tail(30)
    );
    assert_eq!(
        deaths(&sim, CALLER),
        [(killed, SERVER, Evidence::RedialFailed)]
    );
}

/// The path goes silent right after the request was acknowledged (the last frame heard
/// from the server): the link's heartbeats declare it dead at last heard + 1.5 s × 3.
#[test]
fn stopped_heartbeats_end_the_call_at_last_heard_plus_four_and_a_half_seconds() {
    let (mut sim, id) = held();
    // The request and its ack crossed at 100 ms, the last frame heard; silence from 200 ms.
    let last_heard = sim.now() - Duration::from_millis(100);
    sim.set_latency(NodeId(CALLER), NodeId(SERVER), Duration::from_secs(3_600));
    sim.advance(Duration::from_secs(10));
    let dead = last_heard + Duration::from_millis(4_500);
    assert_eq!(
        done(&sim, CALLER, id),
        [(dead, GONE)],
        "{}",
        sim.trace_tail(40)
    );
    assert_eq!(
        deaths(&sim, CALLER),
        [(dead, SERVER, Evidence::HeartbeatsStopped)]
    );
}

/// Behind a proxy (no direct links, 10 ms per hop): the server dies, the proxy's probe of
/// it is refused at the kill and its notice reaches the caller one hop later — the call
/// ends then.
#[test]
fn a_relay_notice_ends_the_call_one_hop_after_the_kill() {
    let mut sim = rpc_cluster_in(GROUP_F, &[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    let (id, _) = call_held_by(&mut sim, SERVER, "slow");
    let hop = Duration::from_millis(10);
    sim.set_latency(NodeId(CALLER), NodeId(ROOT), hop);
    sim.set_latency(NodeId(ROOT), NodeId(SERVER), hop);
    sim.advance(Duration::from_millis(100));
    let killed = sim.now();
    sim.kill(NodeId(SERVER));
    sim.advance(Duration::from_secs(1));
    assert_eq!(
        done(&sim, CALLER, id),
        [(killed + hop, GONE)],
        "{}",
        sim.trace_tail(40)
    );
    assert_eq!(
        deaths(&sim, CALLER),
        [(killed + hop, SERVER, Evidence::RelayNotice)]
    );
}

/// A restarted server re-registers; a new call goes to the new incarnation and is
/// answered (the old call ended at the restart).
#[test]
fn after_a_restart_the_next_call_reaches_the_new_incarnation() {
    let (mut sim, id) = held();
    let restarted = sim.now();
    sim.restart(NodeId(SERVER));
    sim.act(NodeId(SERVER), |node, now| node.serve(now, "echo"))
        .expect("a valid method");
    publish_own(&mut sim, SERVER);
    sim.advance(Duration::from_millis(10));
    let ended = done(&sim, CALLER, id);
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].0, restarted);
    assert!(matches!(ended[0].1, CallOutcome::Unknown(_)), "{ended:?}");
    let (next, request) = call_held_by(&mut sim, SERVER, "again");
    let answered = sim.now();
    assert!(common::rpc::answer(&mut sim, SERVER, request, "back"));
    sim.deliver_until_idle();
    assert_eq!(
        done(&sim, CALLER, next),
        [(answered, common::rpc::reply("back"))]
    );
}

/// The path to 0x702 is down (the caller's connector redials it with backoff): a
/// round-robin call never waits on it while 0x704 is reachable — the request goes to 0x704
/// at once, whose handler answers; 0x702, alive, never sees it, even once its path is back.
/// (Until issue 24 the request was queued for 0x702 and moved only when the registry deleted
/// 0x702; a call then waited its whole grace on a server it had no route to. The move of a
/// queued request on a death is unit-tested in `rpc::machine_tests`.)
#[test]
fn a_call_never_waits_on_a_server_whose_route_fails_while_another_is_reachable() {
    let mut sim = rpc_cluster(&[
        (CALLER, &[]),
        (SERVER, &["echo"]),
        (common::rpc::SERVER_2, &["echo"]),
    ]);
    sim.advance(Duration::from_millis(100));
    sim.link_down(NodeId(CALLER), NodeId(SERVER));
    sim.advance(Duration::from_millis(10));
    for (round, payload) in ["round 0", "round 1", "round 2", "round 3"]
        .into_iter()
        .enumerate()
    {
        let called = sim.now();
        let id = common::rpc::call(&mut sim, CALLER, common::rpc::echo(payload));
        sim.deliver_until_idle();
        let got = common::rpc::requests(&sim, common::rpc::SERVER_2);
        assert_eq!(got.len(), round + 1, "{}", sim.trace_tail(30));
        let (at, request) = &got[round];
        assert_eq!((*at, &request.payload[..]), (called, payload.as_bytes()));
        assert_eq!(
            sim.node(NodeId(CALLER)).inspect().pending(NodeId(SERVER)),
            0
        );
        assert!(common::rpc::answer(
            &mut sim,
            common::rpc::SERVER_2,
            request.request,
            "ok"
        ));
        sim.deliver_until_idle();
        assert_eq!(
            done(&sim, CALLER, id),
            [(sim.now(), common::rpc::reply("ok"))]
        );
    }
    sim.link_up(NodeId(CALLER), NodeId(SERVER));
    sim.advance(Duration::from_secs(20));
    assert_eq!(common::rpc::requests(&sim, SERVER), []);
}

/// The only server is known but unreachable (its path down, the connector still redialling
/// with backoff): the queued request is taken back at the 5 s grace deadline and the call
/// ends `NotAvailable` then — not at its 30 s deadline; the server, reachable later, never
/// sees it.
#[test]
fn a_request_queued_through_the_whole_grace_ends_not_available_at_the_grace() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    sim.link_down(NodeId(CALLER), NodeId(SERVER));
    let t0 = sim.now();
    let spec = common::rpc::echo("nobody").grace(Duration::from_secs(5));
    let id = common::rpc::call(&mut sim, CALLER, spec);
    sim.advance(Duration::from_secs(6));
    sim.link_up(NodeId(CALLER), NodeId(SERVER));
    sim.advance(Duration::from_secs(20));
    assert_eq!(
        done(&sim, CALLER, id),
        [(
            t0 + Duration::from_secs(5),
            CallOutcome::Failed(FailReason::NotAvailable)
        )]
    );
    assert_eq!(common::rpc::requests(&sim, SERVER), []);
}

/// The server's path is down for 1.5 s when the call is made: the request waits in the
/// queue and goes as soon as the path is back (the connector's redial after its 2 s
/// backoff), and the reply arrives.
#[test]
fn a_request_made_during_a_brief_disconnect_is_answered_when_the_path_returns() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"])]);
    sim.advance(Duration::from_millis(100));
    sim.link_down(NodeId(CALLER), NodeId(SERVER));
    let t0 = sim.now();
    let id = common::rpc::call(&mut sim, CALLER, common::rpc::echo("gap"));
    sim.advance(Duration::from_millis(1_500));
    sim.link_up(NodeId(CALLER), NodeId(SERVER));
    sim.advance(Duration::from_secs(5));
    let got = common::rpc::requests(&sim, SERVER);
    assert_eq!(got.len(), 1, "{}", sim.trace_tail(30));
    // The dial refused at t0 is retried after the 2 s backoff: the request goes then.
    let arrived = t0 + Duration::from_secs(2);
    assert_eq!((got[0].0, &got[0].1.payload[..]), (arrived, &b"gap"[..]));
    let answered = sim.now();
    assert!(common::rpc::answer(
        &mut sim,
        SERVER,
        got[0].1.request,
        "back"
    ));
    sim.deliver_until_idle();
    assert_eq!(
        done(&sim, CALLER, id),
        [(answered, common::rpc::reply("back"))]
    );
}
