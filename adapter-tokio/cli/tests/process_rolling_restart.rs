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
//! `figure: …` lines. (Against the binary before the drain and the send grace, the same run
//! ended 76 sends `refused_unknown_target` and 6 `unknown_target_gone`.)

mod process_support;

use process_support::{
    load::{finish_load, read_outcomes},
    rolling::{BETWEEN, Which, assert_nothing_failed, restart},
    scenario::{ProxyCluster, RATE},
};

/// Messages in the run: 40 s at [`RATE`], long enough for six restarts.
const COUNT: u64 = 40_000;

#[test]
fn process_rolling_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");
    let (mut cluster, spec, run) =
        ProxyCluster::start_logged_load(940, (COUNT, RATE), &log_path, BETWEEN);
    for round in 1..=2 {
        for which in [Which::LeafA, Which::LeafB, Which::Proxy] {
            restart(&mut cluster, which, None);
            eprintln!("round {round}: {which:?} restarted");
        }
    }
    let summary = finish_load(run, &spec);
    eprintln!("run across six rolling restarts: {summary:?}");
    assert_nothing_failed(
        "rolling_restart",
        &summary,
        &read_outcomes(&log_path),
        COUNT,
    );
}
