//! `switchboard demo --seconds 6 --json` as a real process: it ends by itself, its last
//! stdout line is the JSON summary, nothing is lost or duplicated, the counts add up, and the
//! exit code says so.

mod cli_support;

use std::collections::BTreeMap;

use cli_support::{Running, u64_field};
use serde_json::Value;

#[test]
fn a_short_demo_loses_and_duplicates_nothing() {
    let mut demo = Running::start(&["demo", "--seconds", "6", "--json"]);
    let exit = demo.wait("demo");
    let stdout = demo.rest_of_stdout();
    let last = stdout.last().expect("the demo printed something");
    let summary: Value = serde_json::from_str(last).expect("the last line is JSON");
    let failed: BTreeMap<String, u64> =
        serde_json::from_value(summary["failed"].clone()).expect("failed is a map of counts");
    let keys = [
        "sent",
        "delivered",
        "failed",
        "duplicates",
        "lost",
        "p50_us",
        "p99_us",
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
    assert_eq!(u64_field(&summary, "lost"), 0, "{}", stdout.join("\n"));
    assert_eq!(
        u64_field(&summary, "duplicates"),
        0,
        "{}",
        stdout.join("\n")
    );
    assert_eq!(
        u64_field(&summary, "sent"),
        u64_field(&summary, "delivered") + failed.values().sum::<u64>(),
        "{summary}"
    );
    // 1000 msg/s over 6 s from four paced senders.
    assert_eq!(u64_field(&summary, "sent"), 6000, "{summary}");
    assert!(u64_field(&summary, "delivered") > 0, "{summary}");
    assert_eq!(exit.code(), Some(0), "{}", stdout.join("\n"));
    let table = stdout.join("\n");
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
