//! A leaf SIGKILLed under traffic and restarted with the same id on the same port: real
//! `switchboard` processes on 127.0.0.1.
//!
//! The load sends to leaf A through the proxy; A is killed with SIGKILL once it has received
//! a quarter of the run and starts again at once. Every message of the run must end in exactly
//! one named outcome with no duplicate echo, the rest of the run must reach the new A (none
//! waits for its deadline), and a second run reaches the new A whole.

mod process_support;

use process_support::{
    cluster::start_node,
    load::{finish_load, run_load, spawn_load},
    scenario::{COUNT, LEAF_A_ID, PROXY_ID, ProxyCluster, RATE, RUN_START_TIMEOUT},
};

#[test]
fn process_leaf_restart() {
    let mut cluster = ProxyCluster::start();
    let first_life = cluster.leaf_a.status().incarnation;

    let spec = cluster.load_to_a(910, COUNT, RATE);
    let run = spawn_load(&spec);
    let received_at_kill = cluster
        .leaf_a
        .wait_received_at_least(COUNT / 4, RUN_START_TIMEOUT);
    cluster.leaf_a.proc.sigkill();
    let restart = cluster.leaf_a.restart_spec();
    cluster.leaf_a = start_node(restart);
    let first = finish_load(run, &spec);
    eprintln!("run across the leaf restart: {first:?}");
    assert!(
        received_at_kill < COUNT,
        "A died mid-run: it had {received_at_kill} of {COUNT} at the kill"
    );

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
    // The new life was up within about a second, far inside the 8 s message deadline: the
    // rest of the run reached it (once each, never more than was sent) and nothing waited
    // for its deadline — each message was delivered to one life or the other, or ended for
    // the restart.
    let received_first = cluster.leaf_a.received_total();
    assert!(
        received_first > 0 && received_first <= COUNT,
        "new A received {received_first} of {COUNT}: {first:?}"
    );
    assert_eq!(first.failed.get("timeout"), None, "{first:?}");

    let second = run_load(&cluster.load_to_a(911, COUNT, RATE));
    second.assert_all_delivered(COUNT);
    assert_eq!(
        cluster.leaf_a.received_total(),
        received_first + COUNT,
        "the new A received the second run exactly once"
    );
}
