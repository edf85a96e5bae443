//! Issue 25 item 5: a three-member etcd under real `switchboard` processes given all three
//! client URLs. Two echo nodes A and B and a load of 1,000 msg/s to A, then:
//!
//! 1. **the etcd leader SIGKILLed**: a new leader is elected; no node registers again (every
//!    key in etcd is unchanged — same lease, same revisions — and no registration is counted,
//!    refused or lost), and a node C started after the kill registers, is seen by A and B and
//!    is reachable (a load to it delivered);
//! 2. **quorum lost** (a second member SIGKILLed): the load to A goes on, and `/readyz` of
//!    every node answers within [`READYZ_ANSWER_BOUND`] and soon says 503 with why (the
//!    registry is unavailable, and etcd's reason);
//! 3. **quorum back** (both members restarted on their data): `/readyz` is 200 again on every
//!    node, and every key of every node is still in etcd as it was (same lease, same
//!    revisions: kept, not written again).
//!
//! The load must end with every message delivered and echoed exactly once. Figures are
//! printed as `figure: …` lines.
//!
//! Needs the `etcd` feature (`cargo test -p switchboard --features etcd`) and the `etcd`
//! binary on `PATH`.

#![cfg(feature = "etcd")]

mod process_support;

use std::{
    net::SocketAddr,
    thread,
    time::{Duration, Instant},
};

use process_support::{
    cluster::{Node, NodeSpec, RegistryAddr, start_node},
    etcd::{EtcdCluster, START_BOUND},
    figures::report,
    http::http_get,
    load::{LoadSpec, finish_load, run_load, spawn_load},
    scenario::{RATE, RUN_START_TIMEOUT},
    wait_until,
};

/// Messages of the load to A: 40 s at [`RATE`], across all three phases.
const COUNT: u64 = 40_000;
/// Messages A receives before the leader is killed.
const WARM_UP: u64 = 1_000;
/// Messages of the load to C, the node started after the leader's kill.
const TO_C: u64 = 200;
/// Bound on one `/readyz` answer, whatever etcd's state.
const READYZ_ANSWER_BOUND: Duration = Duration::from_secs(1);
/// Bound on a new leader after the leader's kill (etcd's election timeout is 1 s).
const ELECTION_BOUND: Duration = Duration::from_secs(10);
/// Bound on `/readyz` saying why after the quorum's loss.
const NOT_READY_BOUND: Duration = Duration::from_secs(15);
/// How long the quorum stays lost once `/readyz` says so, the load going on.
const QUORUMLESS: Duration = Duration::from_secs(4);
/// Messages A must receive while the quorum is lost.
const DURING_LOSS: u64 = 2_000;

#[test]
fn an_etcd_leader_kill_and_a_lost_quorum_lose_nothing() {
    let mut etcd = EtcdCluster::start(3);
    let registry = RegistryAddr::Etcd(etcd.endpoints());
    let a = start_node(NodeSpec::new(311, "quorum-a", registry.clone()).echo());
    let b = start_node(NodeSpec::new(312, "quorum-b", registry.clone()).echo());
    assert!(a.ready_registered(), "{}", a.ready);
    assert!(b.ready_registered(), "{}", b.ready);
    a.wait_known(2);
    b.wait_known(2);
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = LoadSpec::to_name(registry.clone(), "quorum-a", 990, COUNT, RATE)
        .outcomes_log(&dir.path().join("outcomes.log"));
    let load = spawn_load(&spec);
    a.wait_received_at_least(WARM_UP, RUN_START_TIMEOUT);
    let nodes = [&a, &b];
    let known = a.status().known_nodes;
    let keys_before = etcd.read_all();
    let registered_before: Vec<u64> = nodes.iter().map(|n| registrations(n)).collect();
    let incarnations: Vec<u64> = nodes.iter().map(|n| n.status().incarnation).collect();

    // 1. The leader SIGKILLed under the load.
    let leader = etcd.leader().expect("a leader before the kill");
    let killed = Instant::now();
    etcd.kill(leader);
    let new_leader = wait_until(
        ELECTION_BOUND,
        "a new etcd leader",
        || etcd.leader(),
        String::new,
    );
    report("etcd_new_leader_ms", ms(killed.elapsed()));
    let c = start_node(NodeSpec::new(313, "quorum-c", registry.clone()).echo());
    assert!(c.ready_registered(), "{}", c.ready);
    report(
        "etcd_joiner_after_leader_kill_ready_ms",
        ms(killed.elapsed()),
    );
    a.wait_known(known + 1);
    b.wait_known(known + 1);
    report(
        "etcd_joiner_after_leader_kill_known_ms",
        ms(killed.elapsed()),
    );
    run_load(&LoadSpec::to_name(registry, "quorum-c", 991, TO_C, TO_C)).assert_all_delivered(TO_C);
    for (at, node) in nodes.iter().enumerate() {
        assert_eq!(
            registrations(node),
            registered_before[at],
            "{} registered again",
            node.proc.label()
        );
        assert_eq!(node.status().incarnation, incarnations[at]);
    }
    for node in [&a, &b, &c] {
        assert_eq!(node.counter("switchboard_registry_conflicts_total"), 0);
        assert!(node.status().registered, "{}", node.proc.label());
    }
    assert_kept(&keys_before, &etcd.read_all());

    // 2. Quorum lost: a second member SIGKILLed.
    let keys_before_loss = etcd.read_all();
    let second = (0..3)
        .find(|&m| m != leader && m != new_leader)
        .expect("a third member");
    let lost = Instant::now();
    etcd.kill(second);
    let received_at_loss = a.received_total();
    let mut slowest = Duration::ZERO;
    for node in [&a, &b, &c] {
        let why = wait_until(
            NOT_READY_BOUND,
            &format!("{} /readyz saying why it is not ready", node.proc.label()),
            || {
                let (status, body) = readyz(node, &mut slowest);
                (status == 503).then_some(body)
            },
            || format!("{:?}", readyz(node, &mut Duration::default())),
        );
        eprintln!("{}: /readyz 503 {why:?}", node.proc.label());
        assert!(
            why.starts_with("not registered: registry unavailable: "),
            "{why}"
        );
    }
    report("readyz_not_ready_after_quorum_loss_ms", ms(lost.elapsed()));
    thread::sleep(QUORUMLESS);
    for node in [&a, &b, &c] {
        assert_eq!(readyz(node, &mut slowest).0, 503, "{}", node.proc.label());
    }
    let during = a.received_total() - received_at_loss;
    report("received_by_a_while_quorumless", during as f64);
    assert!(
        during >= DURING_LOSS,
        "A received {during} while the quorum was lost"
    );

    // 3. Quorum back: both members restarted on their data.
    let back = Instant::now();
    etcd.restart(leader);
    etcd.restart(second);
    etcd.wait_healthy();
    report("etcd_quorum_back_healthy_ms", ms(back.elapsed()));
    for node in [&a, &b, &c] {
        wait_until(
            START_BOUND,
            &format!("{} /readyz 200 again", node.proc.label()),
            || (readyz(node, &mut slowest).0 == 200).then_some(()),
            || format!("{:?}", readyz(node, &mut Duration::default())),
        );
    }
    report("readyz_ready_after_quorum_back_ms", ms(back.elapsed()));
    report("readyz_slowest_answer_ms", ms(slowest));
    assert!(slowest < READYZ_ANSWER_BOUND, "a /readyz took {slowest:?}");
    assert_kept(&keys_before_loss, &etcd.read_all());
    for node in [&a, &b, &c] {
        assert_eq!(node.counter("switchboard_registry_conflicts_total"), 0);
    }

    let summary = finish_load(load, &spec);
    eprintln!("load to A across the leader's kill and the quorum's loss: {summary:?}");
    report("delivered", summary.delivered as f64);
    report("sent", summary.sent as f64);
    summary.assert_all_delivered(COUNT);
}

/// `switchboard_registrations_total` of `node`.
fn registrations(node: &Node) -> u64 {
    node.counter("switchboard_registrations_total")
}

/// `GET /readyz` of `node`: status and body; the slowest answer so far goes to `slowest`.
fn readyz(node: &Node, slowest: &mut Duration) -> (u16, String) {
    let addr: SocketAddr = node.admin.expect("an admin port");
    let asked = Instant::now();
    let response =
        http_get(addr, "/readyz").unwrap_or_else(|e| panic!("{} /readyz: {e}", node.proc.label()));
    *slowest = (*slowest).max(asked.elapsed());
    (response.status, response.body.trim_end().to_owned())
}

/// Every key-value of `before` is in `after` as it was: same value, lease and revisions.
fn assert_kept(before: &serde_json::Value, after: &serde_json::Value) {
    let after = after["kvs"].as_array().expect("kvs");
    for kv in before["kvs"].as_array().expect("kvs") {
        assert!(after.contains(kv), "{kv} changed or went: {after:?}");
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
