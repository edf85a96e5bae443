//! Broadcast (ARCHITECTURE §11): every node matching the filter at the moment of the call,
//! each exactly once, the sender skipped when asked; one `BroadcastDone` when every
//! recipient has an outcome.

mod common;

use bytes::Bytes;
use common::{
    got,
    rpc::{CALLER, ROOT, SERVER, SERVER_2, rpc_cluster, rpc_log},
};
use switchboard_core::{
    ids::NodeId,
    outcome::FailReason,
    rpc::{BroadcastDone, BroadcastSpec, RpcOutput},
    time::{Duration, Instant},
};

fn reports(sim: &switchboard_core::sim::Sim, id: u64) -> Vec<(Instant, BroadcastDone)> {
    rpc_log(sim, id)
        .into_iter()
        .filter_map(|(at, o)| match o {
            RpcOutput::BroadcastDone(done) => Some((at, done)),
            _ => None,
        })
        .collect()
}

fn sorted(mut ids: Vec<NodeId>) -> Vec<NodeId> {
    ids.sort();
    ids
}

#[test]
fn every_matching_node_gets_it_once_and_the_sender_is_skipped() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &["echo"]), (SERVER_2, &[])]);
    sim.advance(Duration::from_millis(100));
    let t = sim.now();
    let spec = BroadcastSpec::new(None, 9, Bytes::from_static(b"news"));
    let id = sim
        .act(NodeId(CALLER), |n, now| n.broadcast(now, spec))
        .expect("accepted");
    sim.advance(Duration::from_secs(1));
    for node in [ROOT, SERVER, SERVER_2] {
        assert_eq!(
            got(&sim, node),
            [(t, CALLER, CALLER, 9, "news".to_string())]
        );
    }
    assert_eq!(got(&sim, CALLER), []);
    let done = reports(&sim, CALLER);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, t);
    assert_eq!(done[0].1.broadcast, id);
    assert_eq!(
        sorted(done[0].1.delivered.clone()),
        [NodeId(SERVER), NodeId(ROOT), NodeId(SERVER_2)]
    );
    assert_eq!((done[0].1.failed.len(), done[0].1.unknown.len()), (0, 0));
}

#[test]
fn a_filter_picks_the_servers_of_a_method_and_not_skipping_self_includes_the_sender() {
    let mut sim = rpc_cluster(&[(CALLER, &["echo"]), (SERVER, &["echo"]), (SERVER_2, &[])]);
    sim.advance(Duration::from_millis(100));
    let t = sim.now();
    let mut spec = BroadcastSpec::new(
        Some(switchboard_core::rpc::servers_of("echo")),
        4,
        Bytes::from_static(b"to echo servers"),
    );
    spec.skip_self = false;
    sim.act(NodeId(CALLER), |n, now| n.broadcast(now, spec))
        .expect("accepted");
    sim.advance(Duration::from_secs(1));
    let text = "to echo servers".to_string();
    assert_eq!(got(&sim, CALLER), [(t, CALLER, CALLER, 4, text.clone())]);
    assert_eq!(got(&sim, SERVER), [(t, CALLER, CALLER, 4, text)]);
    assert_eq!(got(&sim, SERVER_2), []);
    let done = reports(&sim, CALLER);
    assert_eq!(
        sorted(done[0].1.delivered.clone()),
        [NodeId(CALLER), NodeId(SERVER)]
    );
}

/// A recipient killed just before (its record still published): its copy waits for a live
/// incarnation and ends at the message deadline, provably undelivered; the report comes
/// then, with the others delivered.
#[test]
fn a_dead_recipient_ends_in_the_failed_list_and_the_report_waits_for_it() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &[]), (SERVER_2, &[])]);
    sim.advance(Duration::from_millis(100));
    sim.kill(NodeId(SERVER_2));
    let t = sim.now();
    let spec = BroadcastSpec::new(None, 9, Bytes::from_static(b"news"));
    sim.act(NodeId(CALLER), |n, now| n.broadcast(now, spec))
        .expect("accepted");
    sim.advance(Duration::from_secs(10));
    let done = reports(&sim, CALLER);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, t + Duration::from_secs(8), "{done:?}");
    assert_eq!(
        sorted(done[0].1.delivered.clone()),
        [NodeId(SERVER), NodeId(ROOT)]
    );
    assert_eq!(done[0].1.failed, [(NodeId(SERVER_2), FailReason::Timeout)]);
    assert_eq!(
        got(&sim, SERVER),
        [(t, CALLER, CALLER, 9, "news".to_string())]
    );
}

/// The same dead recipient under a broadcast budget of 1 s: the report comes at exactly
/// t + 1 s (not the 8 s message timeout), the dead one failed with `Timeout`, the live ones
/// delivered once.
#[test]
fn a_broadcast_budget_ends_a_dead_recipients_wait_at_the_budget() {
    let mut sim = rpc_cluster(&[(CALLER, &[]), (SERVER, &[]), (SERVER_2, &[])]);
    sim.advance(Duration::from_millis(100));
    sim.kill(NodeId(SERVER_2));
    let t = sim.now();
    let spec =
        BroadcastSpec::new(None, 9, Bytes::from_static(b"news")).timeout(Duration::from_secs(1));
    sim.act(NodeId(CALLER), |n, now| n.broadcast(now, spec))
        .expect("accepted");
    sim.advance(Duration::from_secs(10));
    let done = reports(&sim, CALLER);
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0].0, t + Duration::from_secs(1), "{done:?}");
    assert_eq!(
        sorted(done[0].1.delivered.clone()),
        [NodeId(SERVER), NodeId(ROOT)]
    );
    assert_eq!(done[0].1.failed, [(NodeId(SERVER_2), FailReason::Timeout)]);
    assert_eq!(done[0].1.unknown, []);
    for node in [ROOT, SERVER] {
        assert_eq!(
            got(&sim, node),
            [(t, CALLER, CALLER, 9, "news".to_string())]
        );
    }
}
