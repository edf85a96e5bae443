//! `switchboard node --serve`, `call`, `load --method` and `broadcast` as real processes
//! against a registry on 127.0.0.1: exact reply lines, outcome classes and reasons, counts
//! and exit codes.

mod cli_support;

use std::{net::SocketAddr, time::Duration};

use cli_support::{Running, http_get, lines, run_to_end, start_node, start_registry, str_field};
use serde_json::{Value, json};

/// Bound on one client run.
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The `server` of a `call` line whose request went to the cluster's one server: its id and
/// name. (Since issue 24 a call line names its server, so these exact lines gained it; a
/// call that never had a request out, `not_available`, still has none.)
fn server() -> Value {
    json!({"id": 301, "name": "server"})
}

/// A registry and one node (id 301, `server`, with admin endpoints) serving the three
/// built-in methods; returns the processes, the registry address and the server's admin
/// address.
fn serving_cluster_with_admin() -> (Vec<Running>, String, SocketAddr) {
    let (registry, addr) = start_registry();
    let (server, ready) = start_node(&[
        "node",
        "--id",
        "301",
        "--name",
        "server",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &addr,
        "--serve",
        "echo,sleep",
        "--serve",
        "silent",
        "--admin",
        "127.0.0.1:0",
    ]);
    assert_eq!(ready["registered"], true, "{ready}");
    assert_eq!(
        ready["serves"],
        json!(["echo", "sleep", "silent"]),
        "{ready}"
    );
    let admin = str_field(&ready, "admin")
        .parse()
        .expect("an admin address");
    (vec![registry, server], addr, admin)
}

/// [`serving_cluster_with_admin`] without the admin address.
fn serving_cluster() -> (Vec<Running>, String) {
    let (procs, registry, _) = serving_cluster_with_admin();
    (procs, registry)
}

/// The value of the sample named exactly `series` in the node's `/metrics`.
fn metric(admin: SocketAddr, series: &str) -> Option<u64> {
    let (status, _, body) = http_get(admin, "/metrics");
    assert_eq!(status, 200);
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Runs `switchboard args...`; returns (exit code, stdout lines, stderr lines, time taken).
fn run(args: &[&str]) -> (Option<i32>, Vec<String>, Vec<String>, Duration) {
    let (output, elapsed) = run_to_end(args, RUN_LIMIT);
    (
        output.status.code(),
        lines(&output.stdout),
        lines(&output.stderr),
        elapsed,
    )
}

/// The one JSON line of `stdout`, with its `latency_us` taken out and returned.
fn one_line_without_latency(stdout: &[String]) -> (Value, u64) {
    assert_eq!(stdout.len(), 1, "exactly one line: {stdout:?}");
    let mut line: Value = serde_json::from_str(&stdout[0]).expect("a JSON line");
    let latency = line
        .as_object_mut()
        .and_then(|o| o.remove("latency_us"))
        .and_then(|l| l.as_u64())
        .unwrap_or_else(|| panic!("no latency_us in {}", stdout[0]));
    (line, latency)
}

#[test]
fn call_gets_the_exact_reply_of_echo_and_sleep() {
    let (_procs, registry) = serving_cluster();
    let (code, stdout, stderr, _) = run(&[
        "call",
        "--registry",
        &registry,
        "--method",
        "echo",
        "--payload",
        "hello, switchboard",
    ]);
    assert_eq!(code, Some(0), "{stderr:?}");
    let (line, _) = one_line_without_latency(&stdout);
    assert_eq!(
        line,
        json!({"outcome": "reply", "payload": "hello, switchboard", "server": server()})
    );
    // The key order is the contract's.
    assert!(
        stdout[0].starts_with(
            r#"{"outcome":"reply","payload":"hello, switchboard","server":{"id":301,"name":"server"},"latency_us":"#
        ),
        "{}",
        stdout[0]
    );

    let (code, stdout, stderr, _) = run(&[
        "call",
        "--registry",
        &registry,
        "--method",
        "sleep",
        "--payload",
        "400",
        "--key",
        "user-7",
    ]);
    assert_eq!(code, Some(0), "{stderr:?}");
    let (line, latency_us) = one_line_without_latency(&stdout);
    assert_eq!(
        line,
        json!({"outcome": "reply", "payload": "400", "server": server()})
    );
    assert!(latency_us >= 400_000, "slept 400 ms, took {latency_us} µs");

    // Every --select mode reaches the server and gets its exact reply.
    for mode in ["round-robin", "random", "least-outstanding"] {
        let (code, stdout, stderr, _) = run(&[
            "call",
            "--registry",
            &registry,
            "--method",
            "echo",
            "--payload",
            mode,
            "--select",
            mode,
        ]);
        assert_eq!(code, Some(0), "{mode}: {stderr:?}");
        let (line, _) = one_line_without_latency(&stdout);
        assert_eq!(
            line,
            json!({"outcome": "reply", "payload": mode, "server": server()})
        );
    }
    let (code, stdout, stderr, _) = run(&[
        "call",
        "--registry",
        &registry,
        "--method",
        "echo",
        "--payload",
        "k",
        "--select",
        "hash",
        "--key",
        "user-7",
    ]);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(
        one_line_without_latency(&stdout).0,
        json!({"outcome": "reply", "payload": "k", "server": server()})
    );
}

#[test]
fn a_method_nobody_serves_fails_not_available_at_the_grace() {
    let (_procs, registry) = serving_cluster();
    let (code, stdout, stderr, _) = run(&[
        "call",
        "--registry",
        &registry,
        "--method",
        "nobody",
        "--grace",
        "300ms",
    ]);
    assert_eq!(code, Some(1), "{stdout:?} {stderr:?}");
    let (line, latency_us) = one_line_without_latency(&stdout);
    assert_eq!(
        line,
        json!({"outcome": "failed", "reason": "not_available"})
    );
    assert!(
        (300_000..5_000_000).contains(&latency_us),
        "the grace is 300 ms, the call took {latency_us} µs"
    );
    let said = stderr.iter().filter(|l| l.starts_with("error: ")).count();
    assert_eq!(said, 1, "one line says why: {stderr:?}");
    assert!(
        stderr
            .iter()
            .any(|l| l.starts_with("error: call nobody: failed not_available")),
        "{stderr:?}"
    );
}

#[test]
fn silent_and_overlong_sleep_handlers_end_the_call_unknown_timeout_at_its_deadline() {
    let (_procs, registry) = serving_cluster();
    let (code, stdout, stderr, _) = run(&[
        "call",
        "--registry",
        &registry,
        "--method",
        "silent",
        "--timeout",
        "500ms",
    ]);
    assert_eq!(code, Some(1), "{stdout:?} {stderr:?}");
    let (line, latency_us) = one_line_without_latency(&stdout);
    assert_eq!(
        line,
        json!({"outcome": "unknown", "reason": "timeout", "server": server()})
    );
    assert!(latency_us >= 500_000, "{latency_us} µs");

    // A sleep longer than the call's budget ends the same way, at the budget.
    let (code, stdout, stderr, _) = run(&[
        "call",
        "--registry",
        &registry,
        "--method",
        "sleep",
        "--payload",
        "5000",
        "--timeout",
        "300ms",
    ]);
    assert_eq!(code, Some(1), "{stdout:?} {stderr:?}");
    let (line, latency_us) = one_line_without_latency(&stdout);
    assert_eq!(
        line,
        json!({"outcome": "unknown", "reason": "timeout", "server": server()})
    );
    assert!(
        (300_000..5_000_000).contains(&latency_us),
        "{latency_us} µs"
    );
}

#[test]
fn bad_rpc_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (
            &[
                "call",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "echo",
                "--timeout",
                "5",
            ][..],
            "--timeout",
        ),
        (
            &[
                "call",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "echo",
                "--grace",
                // Changed expectation: `1h` is a duration now (compound durations with hours,
                // issue 24); a day unit is not.
                "1d",
            ],
            "--grace",
        ),
        (
            &["call", "--registry", "127.0.0.1:1", "--method", "bad name"],
            "method",
        ),
        (
            &[
                "call",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "echo",
                "--timeout",
                "0s",
            ],
            "timeout",
        ),
        (&["call", "--method", "echo"], "registry"),
        (
            &[
                "call",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "echo",
                "--meta",
                "traceparent",
            ],
            "meta",
        ),
        (
            &["broadcast", "--registry", "127.0.0.1:1", "--label", "role"],
            "--label",
        ),
        (
            &[
                "broadcast",
                "--registry",
                "127.0.0.1:1",
                "--payload",
                "x",
                "--timeout",
                "0s",
            ],
            "timeout",
        ),
        (
            &[
                "broadcast",
                "--registry",
                "127.0.0.1:1",
                "--payload",
                "x",
                "--timeout",
                "soon",
            ],
            "--timeout",
        ),
        (
            &[
                "load",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "echo",
                "--count",
                "1",
                "--concurrency",
                "0",
            ],
            "concurrency",
        ),
        (
            &[
                "load",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "echo",
                "--to",
                "a",
                "--count",
                "1",
            ],
            "--method",
        ),
        (
            &[
                "node",
                "--id",
                "1",
                "--name",
                "n",
                "--listen",
                "127.0.0.1:0",
                "--serve",
                "shout",
            ],
            "--serve",
        ),
    ] {
        let (code, stdout, stderr, _) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr:?}");
        assert!(stdout.is_empty(), "{args:?}: {stdout:?}");
        assert!(
            stderr.first().is_some_and(|l| l.contains(flag)),
            "{args:?} names {flag}: {stderr:?}"
        );
    }
}

#[test]
fn a_call_load_replies_every_call_and_logs_each_one() {
    let (_procs, registry, server_admin) = serving_cluster_with_admin();
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("outcomes.txt");
    let log_arg = log.to_str().expect("a UTF-8 path");
    let (code, stdout, stderr, _) = run(&[
        "load",
        "--registry",
        &registry,
        "--method",
        "echo",
        "--concurrency",
        "8",
        "--count",
        "200",
        "--payload",
        "ping",
        "--outcomes-log",
        log_arg,
    ]);
    assert_eq!(code, Some(0), "{stdout:?} {stderr:?}");
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let summary: Value = serde_json::from_str(&stdout[0]).expect("a JSON line");
    assert_eq!(
        (
            &summary["calls"],
            &summary["replies"],
            &summary["failed"],
            &summary["unknown"]
        ),
        (&json!(200), &json!(200), &json!({}), &json!({})),
        "{summary}"
    );
    assert_eq!(
        metric(
            server_admin,
            "switchboard_rpc_served_total{method=\"echo\"}"
        ),
        Some(200),
        "every call ran the server's handler once"
    );
    assert_eq!(metric(server_admin, "switchboard_rpc_in_flight"), Some(0));
    let p50 = summary["p50_us"].as_u64().expect("p50_us");
    let p99 = summary["p99_us"].as_u64().expect("p99_us");
    assert!(0 < p50 && p50 <= p99, "{summary}");

    let text = std::fs::read_to_string(&log).expect("the outcomes log");
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(rows.len(), 200, "{text}");
    for (seq, row) in rows.iter().enumerate() {
        assert_eq!((row.len(), row[0], row[3]), (4, &*seq.to_string(), "reply"));
        let sent: u64 = row[1].parse().expect("SENT_US");
        let ended: u64 = row[2].parse().expect("OUTCOME_US");
        assert!(sent > 0 && ended >= sent, "{row:?}");
    }
}

#[test]
fn a_call_load_of_an_unserved_method_counts_not_available_and_exits_1() {
    let (_procs, registry) = serving_cluster();
    let (code, stdout, stderr, _) = run(&[
        "load",
        "--registry",
        &registry,
        "--method",
        "nobody",
        "--concurrency",
        "3",
        "--count",
        "3",
        "--grace",
        "200ms",
    ]);
    assert_eq!(code, Some(1), "{stdout:?} {stderr:?}");
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let summary: Value = serde_json::from_str(&stdout[0]).expect("a JSON line");
    assert_eq!(
        (
            &summary["calls"],
            &summary["replies"],
            &summary["failed"],
            &summary["unknown"]
        ),
        (
            &json!(3),
            &json!(0),
            &json!({"not_available": 3}),
            &json!({})
        ),
        "{summary}"
    );
    assert!(
        stderr.contains(
            &"error: load: 3 of 3 calls of nobody did not reply: 3 failed not_available".to_owned()
        ),
        "{stderr:?}"
    );
}

#[test]
fn ls_lists_the_methods_a_node_serves() {
    let (_procs, registry) = serving_cluster();
    let (code, stdout, stderr, _) = run(&["ls", "--registry", &registry, "-o", "json"]);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let listed: Value = serde_json::from_str(&stdout[0]).expect("a JSON array");
    assert_eq!(listed[0]["name"], "server", "{listed}");
    assert_eq!(
        (&listed[0]["methods"], &listed[0]["labels"]),
        (&json!(["echo", "silent", "sleep"]), &json!({})),
        "{listed}"
    );
    let (code, table, _, _) = run(&["ls", "--registry", &registry]);
    assert_eq!(code, Some(0));
    let cells: Vec<Vec<&str>> = table
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // METHODS is the sixth column since STATE follows NAME (issue 22).
    assert_eq!(cells[0][5], "METHODS", "{table:?}");
    assert_eq!(cells[1][5], "echo,silent,sleep", "{table:?}");
}

#[test]
fn a_broadcast_reaches_exactly_the_labelled_nodes() {
    let (registry, addr) = start_registry();
    let mut procs = vec![registry];
    for (id, role) in [
        ("401", "leaf"),
        ("402", "leaf"),
        ("403", "leaf"),
        ("404", "hub"),
    ] {
        let (node, ready) = start_node(&[
            "node",
            "--id",
            id,
            "--name",
            &format!("n{id}"),
            "--listen",
            "127.0.0.1:0",
            "--registry",
            &addr,
            "--label",
            &format!("role={role}"),
        ]);
        assert_eq!(ready["registered"], true, "{ready}");
        procs.push(node);
    }
    let (code, stdout, stderr, _) = run(&[
        "broadcast",
        "--registry",
        &addr,
        "--label",
        "role=leaf",
        "--type",
        "7",
        "--payload",
        "reload",
    ]);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(
        stdout,
        [r#"{"delivered":[401,402,403],"failed":{},"unknown":{}}"#],
        "{stderr:?}"
    );

    // Without a label every node gets it (the broadcasting node skips itself).
    let (code, stdout, stderr, _) = run(&["broadcast", "--registry", &addr, "--payload", "all"]);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(
        stdout,
        [r#"{"delivered":[401,402,403,404],"failed":{},"unknown":{}}"#]
    );
    drop(procs);
}
