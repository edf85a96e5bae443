//! Ctrl-C and SIGTERM on a long `load` (issue 22): sending stops, the partial summary is
//! printed marked `"interrupted": true`, the outcomes log is written, the client deregisters
//! (gone from `ls` at once, no peer death, no trace in the target's `/status`) and the exit
//! code is 130 (SIGINT) or 143 (SIGTERM). Real `switchboard` processes on 127.0.0.1.

mod process_support;

use std::{
    process::Command,
    time::{Duration, Instant},
};

use process_support::{
    Proc,
    cluster::{ANY_PORT, NodeSpec, start_node, start_registry},
    http::counter_sum,
    load::{LoadSpec, spawn_load},
    scenario::RUN_START_TIMEOUT,
    switchboard_bin,
};

/// Messages asked for: far more than are sent before the signal.
const COUNT: u64 = 100_000;
const RATE: u64 = 1_000;
/// Bound on the exit after the signal: the 1 s wait for outcomes, deregistration, slack.
const EXIT_BOUND: Duration = Duration::from_secs(5);

fn interrupt_a_load(signal: fn(&Proc), expected_code: i32, id: u64) {
    let registry = start_registry("registry", ANY_PORT);
    let leaf = start_node(NodeSpec::new(601, "leaf", registry.addr).echo());
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.txt");
    let spec = LoadSpec::to_name(registry.addr, "leaf", id, COUNT, RATE).outcomes_log(&log_path);
    let mut load = spawn_load(&spec);
    leaf.wait_received_at_least(500, RUN_START_TIMEOUT);

    signal(&load);
    let signalled = Instant::now();
    let status = load.wait_exit(EXIT_BOUND);
    let exited_after = signalled.elapsed();
    assert_eq!(status.code(), Some(expected_code), "{}", load.diagnostics());
    assert!(
        exited_after < Duration::from_secs(3),
        "exit took {exited_after:?}"
    );

    let summary = load.last_json_line();
    assert_eq!(summary["interrupted"], true, "{summary}");
    let sent = summary["sent"].as_u64().expect("sent");
    let delivered = summary["delivered"].as_u64().expect("delivered");
    let failed: u64 = summary["failed"]
        .as_object()
        .expect("failed")
        .values()
        .map(|v| v.as_u64().expect("count"))
        .sum();
    assert!((500..COUNT).contains(&sent), "{summary}");
    assert_eq!(
        sent,
        delivered + failed,
        "every sent message is accounted: {summary}"
    );
    // On loopback every message in flight gets its outcome within the 1 s wait.
    assert_eq!(failed, 0, "{summary}");
    assert_eq!(
        leaf.received_total(),
        delivered,
        "the leaf got each delivered message"
    );

    // The outcomes log has one line per sent message, each with its outcome.
    let log = std::fs::read_to_string(&log_path).expect("outcomes log written");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len() as u64, sent);
    assert!(
        lines.iter().all(|l| l.ends_with(" delivered")),
        "{:?}",
        &lines[..3]
    );

    // Deregistered: `ls` lists the leaf alone, the leaf keeps no trace and counts no death.
    let ls = Command::new(switchboard_bin())
        .args(["ls", "--registry", &registry.addr.to_string(), "-o", "json"])
        .output()
        .expect("ls");
    let rows: serde_json::Value = serde_json::from_slice(&ls.stdout).expect("ls json");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows[0]["id"], 601);
    let status = leaf.status();
    assert!(status.endpoints.is_empty(), "{status:?}");
    assert!(status.routes.is_empty(), "{status:?}");
    assert_eq!(
        counter_sum(&leaf.metrics(), "switchboard_peer_deaths_total"),
        0
    );
}

#[test]
fn ctrl_c_on_a_load_keeps_the_results_and_exits_130() {
    interrupt_a_load(Proc::sigint, 130, 960);
}

#[test]
fn sigterm_on_a_load_keeps_the_results_and_exits_143() {
    interrupt_a_load(Proc::sigterm, 143, 961);
}
