//! `switchboard load` exit codes as real processes on 127.0.0.1: 1 with one stderr line when
//! any message was not delivered or the registry does not answer, 2 for a payload size no
//! frame carries; `--upstream` sends through the proxy.

mod cli_support;

use std::{net::SocketAddr, time::Duration};

use cli_support::{Running, closed_port, http_get, lines, run_to_end, start_registry, u64_field};
use serde_json::Value;

/// Bound on a load run in these tests.
const RUN_LIMIT: Duration = Duration::from_secs(30);
/// The largest payload a data frame carries: 16 MiB less the 8-byte header and the 37 bytes
/// of the data frame's fixed fields.
const MAX_PAYLOAD: usize = (16 << 20) - 8 - 37;

#[test]
fn a_load_to_an_unknown_name_exits_1_with_one_line_saying_why() {
    let (_registry, registry) = start_registry();
    let (output, _) = run_to_end(
        &[
            "load",
            "--registry",
            &registry,
            "--to",
            "nosuch",
            "--count",
            "20",
            "--rate",
            "0",
            "--size",
            "8",
            "--wait-known",
            "1s",
        ],
        RUN_LIMIT,
    );
    let stderr = lines(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr:?}");
    assert_eq!(
        stderr,
        [
            "error: load: 20 of 20 messages not delivered: refused unknown_target (no node named \"nosuch\")"
        ]
    );
    let stdout = lines(&output.stdout);
    let summary: Value = serde_json::from_str(stdout.last().expect("a summary")).expect("JSON");
    assert_eq!(
        summary["failed"],
        serde_json::json!({"refused_unknown_target": 20})
    );
    assert_eq!(u64_field(&summary, "delivered"), 0);
}

#[test]
fn a_size_above_the_frame_payload_limit_exits_2_naming_the_limit() {
    let too_big = (MAX_PAYLOAD + 1).to_string();
    let (output, _) = run_to_end(
        &[
            "load",
            "--registry",
            "127.0.0.1:1",
            "--to",
            "a",
            "--count",
            "1",
            "--rate",
            "0",
            "--size",
            &too_big,
        ],
        RUN_LIMIT,
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        lines(&output.stderr),
        [format!(
            "error: size: must be at most {MAX_PAYLOAD} bytes (the largest payload a frame \
             carries), got {too_big}"
        )]
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn an_unreachable_registry_fails_fast_with_one_line() {
    let registry = format!("127.0.0.1:{}", closed_port());
    let (output, elapsed) = run_to_end(
        &[
            "load",
            "--registry",
            &registry,
            "--to",
            "a",
            "--count",
            "10",
            "--rate",
            "0",
            "--size",
            "8",
            "--wait-known",
            "1s",
        ],
        RUN_LIMIT,
    );
    assert_eq!(output.status.code(), Some(1));
    // Was: "... did not answer within 1 s" alone; a refused connection is now said (issue 22).
    assert_eq!(
        lines(&output.stderr),
        [format!(
            "error: load: the registry at {registry} did not answer within 1 s (connection refused)"
        )]
    );
    assert!(output.stdout.is_empty(), "nothing was sent, no summary");
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
}

/// Starts a registered node with an admin endpoint; returns it and its admin address.
fn start_node(args: &[&str]) -> (Running, SocketAddr) {
    let (node, admin) = cli_support::start_registered_node(args, "admin");
    (node, admin.parse().expect("admin address"))
}

/// The peers of `node`'s links that are up, from its `/status`.
fn up_peers(admin: SocketAddr) -> Vec<u64> {
    let (status, _, body) = http_get(admin, "/status");
    assert_eq!(status, 200);
    let status: Value = serde_json::from_str(&body).expect("status JSON");
    status["links"]
        .as_array()
        .expect("links")
        .iter()
        .filter(|l| l["state"] == "up")
        .filter_map(|l| l["peer"].as_u64())
        .collect()
}

#[test]
fn a_load_with_an_upstream_sends_through_the_proxy() {
    let (_registry, registry) = start_registry();
    let (_proxy, proxy_admin) = start_node(&[
        "node",
        "--id",
        "10",
        "--name",
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry,
        "--admin",
        "127.0.0.1:0",
    ]);
    let (_leaf, leaf_admin) = start_node(&[
        "node",
        "--id",
        "101",
        "--name",
        "a",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        "10",
        "--registry",
        &registry,
        "--admin",
        "127.0.0.1:0",
        "--echo",
    ]);
    let mut load = Running::start(&[
        "load",
        "--registry",
        &registry,
        "--to",
        "a",
        "--upstream",
        "10",
        "--id",
        "5000",
        "--count",
        "300",
        "--rate",
        "100",
        "--size",
        "16",
    ]);
    // While the load runs (3 s) the proxy holds a link to the load node and the leaf never
    // does: every message and echo goes through the proxy.
    let mut seen_at_proxy = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        seen_at_proxy |= up_peers(proxy_admin).contains(&5000);
        assert!(
            !up_peers(leaf_admin).contains(&5000),
            "the leaf linked to the load node directly"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(seen_at_proxy, "the load node never linked to the proxy");
    let summary = load.next_json("load summary");
    assert_eq!(load.wait("load").code(), Some(0), "{summary}");
    assert_eq!(
        (
            u64_field(&summary, "sent"),
            u64_field(&summary, "delivered"),
            u64_field(&summary, "echoed")
        ),
        (300, 300, 300),
        "{summary}"
    );
}

/// `load --admin ADDR` serves the load node's endpoints while it runs: ready, and its sent
/// counter climbing toward the count.
#[test]
fn a_load_with_admin_serves_its_metrics_while_it_runs() {
    let (_registry, registry) = start_registry();
    let (_leaf, _leaf_admin) = start_node(&[
        "node",
        "--id",
        "102",
        "--name",
        "b",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry,
        "--admin",
        "127.0.0.1:0",
    ]);
    let admin = SocketAddr::from(([127, 0, 0, 1], closed_port()));
    let admin_arg = admin.to_string();
    let mut load = Running::start(&[
        "load",
        "--registry",
        &registry,
        "--to",
        "b",
        "--count",
        "300",
        "--rate",
        "100",
        "--size",
        "16",
        "--admin",
        &admin_arg,
    ]);
    // Within the 3 s run: ready, and some but not all of the 300 messages counted as sent.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let mut mid_run = None;
    while std::time::Instant::now() < deadline && mid_run.is_none() {
        std::thread::sleep(Duration::from_millis(200));
        let Ok(metrics) = std::panic::catch_unwind(|| http_get(admin, "/metrics")) else {
            continue;
        };
        let sent = metrics
            .2
            .lines()
            .find_map(|l| l.strip_prefix("switchboard_sent_total "))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        if (1..300).contains(&sent) {
            mid_run = Some(sent);
        }
    }
    assert!(mid_run.is_some(), "no mid-run /metrics on {admin}");
    let (status, _, body) = http_get(admin, "/readyz");
    assert_eq!((status, body.as_str()), (200, "ready\n"));
    let summary = load.next_json("load summary");
    assert_eq!(load.wait("load").code(), Some(0), "{summary}");
    assert_eq!(
        (
            u64_field(&summary, "sent"),
            u64_field(&summary, "delivered")
        ),
        (300, 300),
        "{summary}"
    );
}
