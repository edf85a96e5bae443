//! `switchboard ls --etcd` is read-only (issue 22): it lists and watches the prefix and writes
//! nothing — no lease keys, no name claim, no delete. Against a private etcd and two real
//! nodes on 127.0.0.1: the whole key space (every key, value and revision, and the store's
//! revision, which any write raises) reads the same before and after repeated `ls` runs and
//! an `ls --watch` session, and every run lists exactly the two nodes.
//!
//! Needs the `etcd` feature and the `etcd` binary on `PATH`.

#![cfg(feature = "etcd")]

mod process_support;

use std::{process::Command, time::Duration};

use process_support::{
    Proc,
    cluster::{NodeSpec, RegistryAddr, start_node},
    etcd::EtcdProc,
    switchboard_bin,
};

/// Sequential `ls` runs.
const RUNS: usize = 5;
/// Bound on the watcher's listing.
const LISTING_TIMEOUT: Duration = Duration::from_secs(10);

/// The ids `ls -o json` printed, in order.
fn listed_ids(listing: &serde_json::Value) -> Vec<u64> {
    listing
        .as_array()
        .unwrap_or_else(|| panic!("ls prints an array: {listing}"))
        .iter()
        .map(|row| row["id"].as_u64().expect("a row's id"))
        .collect()
}

#[test]
fn ls_on_etcd_writes_no_key() {
    let etcd = EtcdProc::start();
    let endpoint = etcd.endpoint();
    let registry = RegistryAddr::Etcd(endpoint.clone());
    let a = start_node(NodeSpec::new(421, "ea", registry.clone()));
    let b = start_node(NodeSpec::new(422, "eb", registry));
    assert!(a.ready_registered(), "{}", a.ready);
    assert!(b.ready_registered(), "{}", b.ready);
    a.wait_known(2);
    b.wait_known(2);
    let before = etcd.read_all();
    assert!(
        before["kvs"].as_array().is_some_and(|kvs| !kvs.is_empty()),
        "the nodes' keys are in etcd: {before}"
    );

    for i in 0..RUNS {
        let ls = Command::new(switchboard_bin())
            .args(["ls", "--etcd", &endpoint, "-o", "json"])
            .output()
            .expect("run ls");
        assert!(
            ls.status.success(),
            "ls run {i}: exit {:?}\n{}",
            ls.status.code(),
            String::from_utf8_lossy(&ls.stderr)
        );
        let listing: serde_json::Value = serde_json::from_slice(&ls.stdout).expect("ls json");
        assert_eq!(listed_ids(&listing), [421, 422], "ls run {i}: {listing}");
    }

    let mut watcher = Proc::spawn(
        "ls-watch",
        &["ls", "--etcd", &endpoint, "-o", "json", "--watch"].map(str::to_owned),
    );
    let listing = watcher.next_json_line(LISTING_TIMEOUT);
    assert_eq!(listed_ids(&listing), [421, 422], "{listing}");
    watcher.sigint();
    let status = watcher.wait_exit(Duration::from_secs(5));
    assert_eq!(status.code(), Some(0), "{}", watcher.diagnostics());

    assert_eq!(etcd.read_all(), before, "ls wrote to etcd");
    assert_eq!(a.status().known_nodes, 2, "ls was no member");
    assert_eq!(b.status().known_nodes, 2, "ls was no member");
}
