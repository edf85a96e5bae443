//! The registry SIGKILLed under traffic and restarted on the same port: real `switchboard`
//! processes on 127.0.0.1.
//!
//! Nodes keep their view while the registry is away (routes do not depend on it), so every
//! message of a run that spans the restart is delivered; afterwards every node is registered
//! with the new registry and knows the whole cluster again.

mod process_support;

use std::{thread, time::Duration};

use process_support::{
    cluster::{SETTLE_TIMEOUT, start_registry},
    load::{finish_load, spawn_load},
    scenario::{COUNT, KNOWN_NODES, ProxyCluster, RATE, RUN_START_TIMEOUT},
};

/// How long a node keeps peers missing from a new registry's snapshot (the registry client's
/// default grace).
const REGISTRY_GRACE: Duration = Duration::from_secs(30);

#[test]
fn process_registry_restart() {
    let mut cluster = ProxyCluster::start();
    let registry_addr = cluster.registry.addr;

    let spec = cluster.load_to_a(920, COUNT, RATE);
    let run = spawn_load(&spec);
    let received_at_kill = cluster
        .leaf_a
        .wait_received_at_least(COUNT / 4, RUN_START_TIMEOUT);
    cluster.registry.proc.sigkill();
    // Away long enough for every node to notice the lost connection, well under the grace.
    thread::sleep(Duration::from_millis(500));
    cluster.registry = start_registry("registry-2", &registry_addr.to_string());
    assert_eq!(
        cluster.registry.addr, registry_addr,
        "restarted on the same port"
    );
    let summary = finish_load(run, &spec);
    eprintln!("run across the registry restart: {summary:?}");

    assert!(
        received_at_kill < COUNT,
        "the registry died mid-run: A had {received_at_kill} of {COUNT} at the kill"
    );
    summary.assert_all_delivered(COUNT);
    assert_eq!(
        cluster.leaf_a.received_total(),
        COUNT,
        "A received each once"
    );

    // Re-registered with the new registry, the whole cluster known again and the load's node
    // gone from every view. It left gracefully, but if it ended before it re-registered with
    // the new registry, the views keep it until the new-epoch grace ends (30 s): wait that.
    for node in [&cluster.proxy, &cluster.leaf_a, &cluster.leaf_b] {
        let status = node.wait_known_within(KNOWN_NODES, REGISTRY_GRACE + SETTLE_TIMEOUT);
        assert!(status.registered);
    }
}
