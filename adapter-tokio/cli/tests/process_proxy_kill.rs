//! A proxy SIGKILLed under traffic and replaced: real `switchboard` processes on 127.0.0.1.
//!
//! Registry, proxy P1 (id 10), echo leaves A (101) and B (102) under it; a load run sends to
//! A through the proxy, and A's echoes come back through it. P1 is killed with SIGKILL once A
//! has received a quarter of the run, and P2 starts with the same id on a new port. Every
//! message of that run must end in exactly one named outcome, honestly (A holds every
//! delivered message and no failed one), with no duplicate echo; a second run through P2
//! delivers and echoes all.

mod process_support;

use process_support::{
    cluster::start_node,
    load::{finish_load, run_load, spawn_load},
    scenario::{COUNT, KNOWN_NODES, PROXY_ID, ProxyCluster, RATE, RUN_START_TIMEOUT, proxy_spec},
};

#[test]
fn process_proxy_kill() {
    let mut cluster = ProxyCluster::start();
    let first_life = cluster.proxy.status().incarnation;

    let spec = cluster.load_to_a(900, COUNT, RATE);
    let run = spawn_load(&spec);
    let received_at_kill = cluster
        .leaf_a
        .wait_received_at_least(COUNT / 4, RUN_START_TIMEOUT);
    cluster.proxy.proc.sigkill();
    cluster.proxy = start_node(proxy_spec(&cluster.registry));
    let first = finish_load(run, &spec);
    eprintln!("run across the proxy kill: {first:?}");
    assert!(
        received_at_kill < COUNT,
        "the proxy died mid-run: A had {received_at_kill} of {COUNT} at the kill"
    );

    first.assert_accounted(COUNT);
    // Honest outcomes: A has every delivered message once, no message reported failed (never
    // transmitted), and of the unknown ones (transmitted, not acknowledged) at most all.
    let received_first = cluster.leaf_a.received_total();
    assert!(
        received_first >= first.delivered
            && received_first <= first.delivered + first.unknown_total(),
        "A received {received_first}, load says {first:?}"
    );
    assert!(
        first.echoed <= received_first,
        "A echoes what it receives, once: {first:?}, A received {received_first}"
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
