//! A leaf SIGKILLed under traffic and restarted with the same id on the same port: real
//! `switchboard` processes on 127.0.0.1.
//!
//! The load sends to leaf A through the proxy; A is killed with SIGKILL once it has received
//! a quarter of the run and starts again at once. Every message of the run must end in exactly
//! one named outcome with no duplicate echo; a second run reaches the new A whole.

mod process_support;

use process_support::{
    cluster::{LoadSummary, finish_load, run_load, spawn_load, start_node},
    scenario::{COUNT, LEAF_A_ID, PROXY_ID, ProxyCluster, RATE, RUN_START_TIMEOUT},
};

/// The cluster after a run of [`COUNT`] messages from node `load_id` to A during which A was
/// SIGKILLed and restarted; the run's summary; A's first incarnation; what A had received
/// at the kill.
fn run_across_leaf_restart(load_id: u64) -> (ProxyCluster, LoadSummary, u64, u64) {
    let mut cluster = ProxyCluster::start();
    let first_life = cluster.leaf_a.status().incarnation;

    let spec = cluster.load_to_a(load_id, COUNT, RATE);
    let run = spawn_load(&spec);
    let received_at_kill = cluster
        .leaf_a
        .wait_received_at_least(COUNT / 4, RUN_START_TIMEOUT);
    cluster.leaf_a.proc.sigkill();
    let restart = cluster.leaf_a.restart_spec();
    cluster.leaf_a = start_node(restart);
    let summary = finish_load(run, &spec);
    eprintln!("run across the leaf restart: {summary:?}");
    assert!(
        received_at_kill < COUNT,
        "A died mid-run: it had {received_at_kill} of {COUNT} at the kill"
    );
    (cluster, summary, first_life, received_at_kill)
}

#[test]
fn process_leaf_restart() {
    let (cluster, first, first_life, _) = run_across_leaf_restart(910);

    first.assert_accounted(COUNT);
    assert!(
        first.delivered > 0,
        "the first life acknowledged part of what it received: {first:?}"
    );

    // The new life: same id and port, a new incarnation, under the proxy again.
    cluster.wait_settled();
    let second_life = cluster.leaf_a.status();
    assert_eq!(second_life.id, LEAF_A_ID);
    assert_eq!(second_life.upstream, PROXY_ID);
    assert_eq!(
        second_life.listen,
        format!("atcp://{}", cluster.leaf_a.listen)
    );
    assert_ne!(
        second_life.incarnation, first_life,
        "a restart is a new incarnation"
    );
    // What the new life got of the first run was delivered to it once (never more than sent).
    let received_first = cluster.leaf_a.received_total();
    assert!(
        received_first <= COUNT,
        "new A received {received_first} of {COUNT}"
    );

    let second = run_load(&cluster.load_to_a(911, COUNT, RATE));
    second.assert_all_delivered(COUNT);
    assert_eq!(
        cluster.leaf_a.received_total(),
        received_first + COUNT,
        "the new A received the second run exactly once"
    );
}

/// What the run across the restart should achieve once proxied routes recover: the new A is
/// up within about a second, far inside the 8 s message deadline, so no message times out —
/// each one is delivered (to one life or the other) or ended for the restart.
#[test]
#[ignore = "core: a route through a ready proxy that an Unreachable marked unready is never \
            made ready again (Connector::try_direct_reconnect returns early for proxied \
            records); the rest of the run waits for its deadline"]
fn process_leaf_restart_delivery_resumes() {
    let (cluster, first, _, _) = run_across_leaf_restart(912);

    first.assert_accounted(COUNT);
    assert_eq!(first.failed.get("timeout"), None, "{first:?}");
    let received_by_new_life = cluster.leaf_a.received_total();
    assert!(
        received_by_new_life > 0,
        "the new A got the rest of the run: it received {received_by_new_life}, {first:?}"
    );
}
