//! SIGTERM: a real `switchboard` node leaves gracefully and its peers stop listing it.
//!
//! A node that gets SIGTERM unregisters (the registry removes it at once, no disconnect
//! protection), exits 0, and every peer's discovery set shrinks by exactly one. The registry
//! exits 0 on SIGTERM too.

mod process_support;

use std::time::Duration;

use process_support::{
    scenario::{KNOWN_NODES, LEAF_B_ID, ProxyCluster},
    wait_until,
};

const EXIT_BOUND: Duration = Duration::from_secs(15);

#[test]
fn process_sigterm() {
    let mut cluster = ProxyCluster::start();

    cluster.leaf_b.proc.sigterm();
    let status = cluster.leaf_b.proc.wait_exit(EXIT_BOUND);
    assert_eq!(status.code(), Some(0), "leaf B exits 0 on SIGTERM");

    // Removal is pushed at once on a graceful leave: exactly one node fewer everywhere.
    for node in [&cluster.proxy, &cluster.leaf_a] {
        let view = node.wait_known(KNOWN_NODES - 1);
        assert!(view.registered);
    }
    // The proxy dropped its link to B.
    wait_until(
        process_support::cluster::SETTLE_TIMEOUT,
        "the proxy to have no link to B",
        || {
            let status = cluster.proxy.try_status().ok()?;
            (!status.links.iter().any(|l| l.peer == Some(LEAF_B_ID))).then_some(())
        },
        || format!("{:?}", cluster.proxy.try_status()),
    );

    cluster.registry.proc.sigterm();
    let status = cluster.registry.proc.wait_exit(EXIT_BOUND);
    assert_eq!(status.code(), Some(0), "the registry exits 0 on SIGTERM");
}
