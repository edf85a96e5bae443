//! Stable identity on etcd: a `switchboard node --etcd` SIGKILLed under traffic and started
//! again with the same id, name and flags (so the same default identity) takes its keys over
//! at once — its ready line says `"registered":true` with no conflict — and traffic reaches
//! it ≤ 1 s after that line (`figure: etcd_first_delivery_after_restart_ms=…`). A process with
//! the same id but another `--identity` is refused while the holder lives: its ready line
//! says `"registered":false` with a conflict naming the holder's identity, and the holder
//! keeps its traffic. Real processes on 127.0.0.1 and a private etcd.
//!
//! Needs the `etcd` feature (`cargo test -p switchboard --features etcd`) and the `etcd`
//! binary on `PATH`.

#![cfg(feature = "etcd")]

mod process_support;

use std::{thread, time::Duration};

use process_support::{
    cluster::{NodeSpec, RegistryAddr, start_node},
    etcd::EtcdProc,
    figures::{first_delivery_ms, report, timeline},
    load::{LoadSpec, finish_load, outcome_counts, read_outcomes, run_load, spawn_load},
    scenario::RUN_START_TIMEOUT,
    unix_micros_now,
};

/// Target: traffic reaches the restarted node this soon after its ready line.
const FIRST_DELIVERY_TARGET_MS: f64 = 1000.0;
const ID: u64 = 401;
const NAME: &str = "etcd-leaf";

#[test]
fn a_restart_takes_its_keys_over_and_another_identity_is_refused() {
    let etcd = EtcdProc::start();
    let registry = RegistryAddr::Etcd(etcd.endpoint());
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");

    let mut leaf = start_node(NodeSpec::new(ID, NAME, registry.clone()).echo());
    assert!(leaf.ready_registered(), "first life: {}", leaf.ready);
    let first_incarnation = leaf.status().incarnation;

    let (count, rate) = (6000, 2000);
    let spec = LoadSpec::to_name(registry.clone(), NAME, 950, count, rate).outcomes_log(&log_path);
    let run = spawn_load(&spec);
    leaf.wait_received_at_least(1000, RUN_START_TIMEOUT);
    let kill_us = unix_micros_now();
    leaf.proc.sigkill();
    thread::sleep(Duration::from_millis(300));
    leaf = start_node(leaf.restart_spec());
    eprintln!("second life's ready line: {}", leaf.ready);
    assert!(
        leaf.ready_registered(),
        "the same identity takes its keys over: {}",
        leaf.ready
    );
    assert_eq!(leaf.ready_conflict(), None, "{}", leaf.ready);
    assert_ne!(leaf.status().incarnation, first_incarnation);

    let summary = finish_load(run, &spec);
    eprintln!("run across the restart: {summary:?}");
    summary.assert_accounted(count);
    let lines = read_outcomes(&log_path);
    assert_eq!(lines.len() as u64, summary.sent, "one line per message");
    assert_eq!(
        outcome_counts(&lines)
            .get("delivered")
            .copied()
            .unwrap_or(0),
        summary.delivered
    );
    eprintln!(
        "outcomes ending after the kill (ms after it): {}",
        timeline(&lines, kill_us)
    );
    let first_ms = first_delivery_ms(&lines, kill_us, leaf.ready_at_us)
        .expect("a message sent after the kill was delivered to the second life");
    report("etcd_first_delivery_after_restart_ms", first_ms);

    // Same id, another identity: refused while the second life holds the keys.
    let impostor = start_node(
        NodeSpec::new(ID, NAME, registry.clone())
            .identity("another-deployment")
            .echo(),
    );
    eprintln!("impostor's ready line: {}", impostor.ready);
    assert!(!impostor.ready_registered(), "{}", impostor.ready);
    let conflict = impostor
        .ready_conflict()
        .unwrap_or_else(|| panic!("no conflict in {}", impostor.ready));
    assert!(
        conflict.contains("is held by lease") && conflict.contains("identity"),
        "the conflict names the holder: {conflict}"
    );
    // A refused node cannot serve: it stops and exits 1 (the ready line said why).
    let mut impostor = impostor;
    let exit = impostor.proc.wait_exit(Duration::from_secs(10));
    assert_eq!(exit.code(), Some(1), "the refused node's exit");
    let received_before = leaf.received_total();
    let second = run_load(&LoadSpec::to_name(registry, NAME, 951, 500, 1000));
    second.assert_all_delivered(500);
    assert_eq!(leaf.received_total(), received_before + 500);

    assert!(
        first_ms <= FIRST_DELIVERY_TARGET_MS,
        "first delivery {first_ms} ms after the second life's ready line (target \
         {FIRST_DELIVERY_TARGET_MS} ms)"
    );
}
