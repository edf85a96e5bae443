//! Two copies of one node on etcd (same id, name and host: the same default identity). The
//! second copy takes the id over (a restart looks the same to etcd); the first sees its key
//! written under another lease within one watch event and *yields* — `/readyz` 503, not
//! taking it back, so the copies never flap. Stopping either copy never leaves the other
//! unregistered while its `/readyz` says ready:
//!
//! - the holder stops (SIGTERM: its lease is revoked, its keys deleted) → the yielded copy
//!   sees the delete and registers again at once, and traffic reaches it;
//! - the yielded copy stops → its revoke deletes nothing of the holder's (the keys are on the
//!   holder's lease), the holder stays registered and ready, and traffic reaches it.
//!
//! Real processes on 127.0.0.1 and a private etcd. Needs the `etcd` feature and the `etcd`
//! binary on `PATH`.

#![cfg(feature = "etcd")]

mod process_support;

use std::time::Duration;

use process_support::{
    cluster::{Node, NodeSpec, RegistryAddr, start_node},
    etcd::EtcdProc,
    http::http_get,
    load::{LoadSpec, run_load},
    wait_until,
};

const ID: u64 = 711;
const NAME: &str = "twin";
/// How soon a copy must see its key change and act on it.
const NOTICE: Duration = Duration::from_secs(3);

/// `/readyz`'s status code.
fn readyz(node: &Node) -> u16 {
    let admin = node.admin.expect("started with --admin");
    http_get(admin, "/readyz").map_or(0, |r| r.status)
}

fn wait_readyz(node: &Node, status: u16, what: &str) {
    wait_until(
        NOTICE,
        what,
        || (readyz(node) == status).then_some(()),
        || format!("/readyz {}; status {:?}", readyz(node), node.try_status()),
    );
}

/// 200 messages to the name reach `node` and only it.
fn traffic_reaches(registry: &RegistryAddr, node: &Node, load_id: u64) {
    let before = node.received_total();
    run_load(&LoadSpec::to_name(
        registry.clone(),
        NAME,
        load_id,
        200,
        1000,
    ))
    .assert_all_delivered(200);
    assert_eq!(
        node.received_total(),
        before + 200,
        "every message reached the live copy"
    );
}

#[test]
fn stopping_either_copy_never_leaves_the_other_unregistered_while_ready() {
    let etcd = EtcdProc::start();
    let registry = RegistryAddr::Etcd(etcd.endpoint());
    let spec = NodeSpec::new(ID, NAME, registry.clone()).echo();

    // The holder stops: the yielded copy registers again.
    let first = start_node(spec.clone());
    assert!(first.ready_registered(), "{}", first.ready);
    let mut second = start_node(spec.clone());
    assert!(
        second.ready_registered(),
        "the second copy took the id over: {}",
        second.ready
    );
    wait_readyz(&first, 503, "the first copy to yield to the second");
    assert_eq!(readyz(&second), 200, "exactly one copy is ready");
    assert!(!first.status().registered);
    traffic_reaches(&registry, &second, 971);
    second.proc.sigterm();
    let _ = second.proc.wait_exit(Duration::from_secs(10));
    wait_readyz(
        &first,
        200,
        "the first copy to register again once the holder's keys went",
    );
    assert!(first.status().registered);
    traffic_reaches(&registry, &first, 972);

    // The yielded copy stops: the holder stays registered and ready.
    let third = start_node(spec);
    assert!(third.ready_registered(), "{}", third.ready);
    wait_readyz(&first, 503, "the first copy to yield to the third");
    let mut first = first;
    first.proc.sigterm();
    let _ = first.proc.wait_exit(Duration::from_secs(10));
    // Give a wrong delete every chance to arrive before looking.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(readyz(&third), 200, "the holder stays ready");
    assert!(third.status().registered, "and registered");
    traffic_reaches(&registry, &third, 973);
}
