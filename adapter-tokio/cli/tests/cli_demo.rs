//! `switchboard demo --seconds 6 --json` as a real process: it ends by itself, its stdout is
//! exactly the JSON summary line (the table and the progress go to stderr, without carriage
//! returns when stderr is not a terminal), nothing is lost or duplicated, the counts add up,
//! and the exit code says so.

mod cli_support;

use std::process::{Command, Stdio};

use cli_support::{assert_demo_accounted, u64_field};
use serde_json::Value;

#[test]
fn a_short_demo_loses_and_duplicates_nothing() {
    // Bounded by the test runner's timeout; the demo ends by itself after ~6 s + drain.
    let output = Command::new(cli_support::BIN)
        .args(["demo", "--seconds", "6", "--json"])
        .stdin(Stdio::null())
        .output()
        .expect("run the demo");
    let exit = output.status;
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 stdout");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8 stderr");
    let stdout: Vec<String> = stdout.lines().map(str::to_owned).collect();
    assert_eq!(
        stdout.len(),
        1,
        "stdout is one JSON line: {stdout:#?}\nstderr:\n{stderr}"
    );
    assert!(
        !stderr.contains('\r'),
        "carriage returns on a non-terminal stderr:\n{stderr:?}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("[") && l.contains(" s] sent ")),
        "no progress lines on stderr:\n{stderr}"
    );
    let last = stdout.last().expect("the demo printed something");
    let summary: Value = serde_json::from_str(last).expect("the line is JSON");
    let keys = [
        "sent",
        "delivered",
        "failed",
        "duplicates",
        "lost",
        "p50_us",
        "p99_us",
        "conflicts",
    ];
    assert_eq!(
        summary.as_object().map(serde_json::Map::len),
        Some(keys.len()),
        "{last}"
    );
    let positions: Vec<usize> = keys
        .iter()
        .map(|k| {
            last.find(&format!("\"{k}\":"))
                .expect("every key is present")
        })
        .collect();
    assert!(positions.is_sorted(), "keys out of order: {last}");
    assert_eq!(u64_field(&summary, "conflicts"), 0, "{stderr}");
    // 1000 msg/s over 6 s from four paced senders; lost, duplicates and the sum exact.
    assert_demo_accounted(&summary, 6000);
    assert_eq!(exit.code(), Some(0), "{stderr}");
    let table = stderr;
    assert!(table.contains("  latency p99 "), "{table}");
    assert!(table.contains(" ms\n"), "{table}");
    assert!(!table.contains("µs"), "{table}");
    for event in [
        "traffic started",
        "scale-out: proxy 103 started",
        "proxy 101 killed abruptly",
        "leaf 204 killed abruptly",
        "leaf 204 restarted on",
        "registry killed abruptly",
        "registry restarted on",
        "traffic stopped",
        "every accepted message has its outcome",
    ] {
        assert!(table.contains(event), "missing event {event:?} in\n{table}");
    }
}
