//! A proxy SIGKILLed under traffic and replaced: real `switchboard` processes on 127.0.0.1.
//!
//! Registry, proxy P1 (id 10), echo leaves A (101) and B (102) under it; a load run sends to
//! A through the proxy. P1 is killed with SIGKILL once A has received a quarter of the run,
//! and P2 starts with the same id on a new port. Every message of the first run must end in
//! exactly one named outcome with no duplicate echo; a second run through P2 delivers all.

mod process_support;

use process_support::{
    cluster::{NodeSpec, finish_load, run_load, spawn_load, start_node},
    scenario::{COUNT, KNOWN_NODES, PROXY, PROXY_ID, ProxyCluster, RATE, RUN_START_TIMEOUT},
};

#[test]
fn process_proxy_kill() {
    let mut cluster = ProxyCluster::start();
    let first_life = cluster.proxy.status().incarnation;

    let first_spec = cluster.load_to_a(900, COUNT, RATE);
    let first_run = spawn_load(&first_spec);
    let received_at_kill = cluster
        .leaf_a
        .wait_received_at_least(COUNT / 4, RUN_START_TIMEOUT);
    cluster.proxy.proc.sigkill();
    cluster.proxy = start_node(NodeSpec::new(PROXY_ID, PROXY, cluster.registry.addr));
    let first = finish_load(first_run, &first_spec);

    assert!(
        received_at_kill < COUNT,
        "the proxy died mid-run: A had {received_at_kill} of {COUNT} at the kill"
    );
    first.assert_accounted(COUNT);
    // Honest outcomes: A has each message at most once, and has every delivered one.
    let received_first = cluster.leaf_a.received_total();
    assert!(
        received_first >= first.delivered && received_first <= COUNT,
        "A received {received_first}, load says {first:?}"
    );

    // P2 took over: a new life of id 10, both leaves under it again, nobody lost from view.
    cluster.wait_settled();
    let second_life = cluster.proxy.status();
    assert_eq!(second_life.id, PROXY_ID);
    assert_ne!(
        second_life.incarnation, first_life,
        "P2 is a new incarnation"
    );
    assert_eq!(second_life.known_nodes, KNOWN_NODES);

    let second = run_load(&cluster.load_to_a(901, COUNT, RATE));
    second.assert_all_delivered(COUNT);
    assert_eq!(
        cluster.leaf_a.received_total(),
        received_first + COUNT,
        "A received the second run exactly once"
    );
}
