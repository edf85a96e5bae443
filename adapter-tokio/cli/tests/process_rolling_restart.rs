//! Issue 22 item 4, "deploys fail nothing": every node of a proxy cluster SIGTERMed and
//! restarted at once with the same id, name and port, one by one, twice, under a load of
//! 1,000 msg/s through the proxy — real `switchboard` processes on 127.0.0.1.
//!
//! The cluster is the registry, the proxy and echo leaves A and B under it; the load sends
//! to leaf A by name (every message and every echo crosses the proxy). The order is A, B,
//! proxy, A, B, proxy: each process drains on SIGTERM (its record marked leaving, senders
//! hold new messages for it and for what is routed through it, what is in flight is
//! acknowledged), exits 0, and its next life starts at once. Every message must be delivered
//! and echoed exactly once: no failure, no refusal, no `no_outcome`, no duplicate — checked
//! against the load's JSON summary and its outcomes log. Figures are printed as
//! `figure: …` lines.

mod process_support;

use std::time::Duration;

use process_support::{
    cluster::{Node, start_node},
    load::{finish_load, outcome_counts, read_outcomes},
    scenario::{PROXY_ID, ProxyCluster, RATE, RUN_START_TIMEOUT},
};

/// Messages in the run: 40 s at [`RATE`], long enough for six restarts.
const COUNT: u64 = 40_000;
/// Bound on a drained process's exit after SIGTERM (its drain is bounded by 2 s).
const EXIT_BOUND: Duration = Duration::from_secs(8);
/// Messages leaf A must receive after each restart before the next one starts.
const BETWEEN: u64 = 1_000;

/// Which process of the cluster.
#[derive(Clone, Copy, Debug)]
enum Which {
    LeafA,
    LeafB,
    Proxy,
}

fn node(cluster: &mut ProxyCluster, which: Which) -> &mut Node {
    match which {
        Which::LeafA => &mut cluster.leaf_a,
        Which::LeafB => &mut cluster.leaf_b,
        Which::Proxy => &mut cluster.proxy,
    }
}

/// SIGTERMs `which`, waits for its exit (0 required), starts its next life on the same port
/// and waits for the cluster to settle and for A to receive [`BETWEEN`] more messages.
fn restart(cluster: &mut ProxyCluster, which: Which) {
    let old = node(cluster, which);
    let incarnation = old.status().incarnation;
    old.proc.sigterm();
    let status = old.proc.wait_exit(EXIT_BOUND);
    assert!(
        status.success(),
        "{which:?} exits 0 after its drain: {status:?}\n{}",
        old.proc.diagnostics()
    );
    let next = start_node(old.restart_spec());
    *old = next;
    assert_ne!(
        old.status().incarnation,
        incarnation,
        "{which:?}: a new life"
    );
    assert!(
        old.ready_registered(),
        "{which:?} registered: {}",
        old.ready
    );
    // Settled: both leaves linked to the (new) proxy. (`ProxyCluster::wait_settled` counts
    // known nodes, and the load's client is one more while it runs.)
    cluster.leaf_a.wait_link_up(PROXY_ID);
    cluster.leaf_b.wait_link_up(PROXY_ID);
    let now = cluster.leaf_a.received_total();
    cluster
        .leaf_a
        .wait_received_at_least(now + BETWEEN, RUN_START_TIMEOUT);
}

#[test]
fn process_rolling_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");
    let (mut cluster, spec, run) =
        ProxyCluster::start_logged_load(940, (COUNT, RATE), &log_path, BETWEEN);
    let order = [Which::LeafA, Which::LeafB, Which::Proxy];
    for round in 1..=2 {
        for which in order {
            restart(&mut cluster, which);
            eprintln!("round {round}: {which:?} restarted");
        }
    }
    let summary = finish_load(run, &spec);
    eprintln!("run across six rolling restarts: {summary:?}");
    let lines = read_outcomes(&log_path);
    assert_eq!(lines.len() as u64, COUNT, "one outcomes line per message");
    let counts = outcome_counts(&lines);
    eprintln!("figure: rolling_restart_outcomes={counts:?}");
    eprintln!(
        "figure: rolling_restart_failed={} lost={} duplicated={} delivered={} echoed={}",
        summary.failed_total(),
        summary.failed.get("no_outcome").copied().unwrap_or(0),
        summary.duplicates,
        summary.delivered,
        summary.echoed
    );
    assert_eq!(counts.get("delivered").copied(), Some(COUNT), "{counts:?}");
    summary.assert_all_delivered(COUNT);
}
