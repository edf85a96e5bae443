//! Issue 11, "recover fast": a proxy SIGKILLed under traffic and replaced by a new process
//! with the same id — real `switchboard` processes on 127.0.0.1.
//!
//! The load sends to leaf A through the proxy with `--outcomes-log`; the proxy is killed once
//! A has received 1000 messages, and its replacement starts 300 ms later on a new port.
//! Traffic through it must resume — the first delivery of a message sent after the kill —
//! ≤ 200 ms after the replacement's ready line; the figure is printed as
//! `figure: traffic_resumed_after_proxy_ready_ms=…`. The run is accounted exactly.

mod process_support;

use std::{thread, time::Duration};

use process_support::{
    cluster::start_node,
    figures::{first_delivery_ms, report, timeline},
    load::{finish_load, outcome_counts, read_outcomes},
    scenario::{ProxyCluster, proxy_spec},
    unix_micros_now,
};

/// Target: traffic through the new proxy this soon after its ready line.
const RESUME_TARGET_MS: f64 = 200.0;

#[test]
fn proxy_replaced_resumes_traffic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");
    let count = 6000;
    let (mut cluster, spec, run) =
        ProxyCluster::start_logged_load(930, (count, 2000), &log_path, 1000);
    let kill_us = unix_micros_now();
    cluster.proxy.proc.sigkill();
    thread::sleep(Duration::from_millis(300));
    cluster.proxy = start_node(proxy_spec(&cluster.registry));
    let summary = finish_load(run, &spec);
    eprintln!("run across the proxy replacement: {summary:?}");
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
    summary.assert_accounted(count);
    assert!(
        cluster.proxy.ready_registered(),
        "the new proxy registered: {}",
        cluster.proxy.ready
    );
    for reason in ["no_outcome", "timeout", "unknown_timeout"] {
        assert_eq!(summary.failed.get(reason), None, "{summary:?}");
    }

    let resumed_ms = first_delivery_ms(&lines, kill_us, cluster.proxy.ready_at_us)
        .expect("a message sent after the kill was delivered through the new proxy");
    report("traffic_resumed_after_proxy_ready_ms", resumed_ms);
    assert!(
        resumed_ms <= RESUME_TARGET_MS,
        "traffic resumed {resumed_ms} ms after the new proxy's ready line (target \
         {RESUME_TARGET_MS} ms)"
    );
    cluster.wait_settled();
}
