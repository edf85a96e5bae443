//! `switchboard registry`, `node` and `load` as real processes on 127.0.0.1: ready lines,
//! the admin endpoint of a fresh node, echo and load accounting, graceful stop on SIGTERM.

mod cli_support;

use std::net::SocketAddr;

use cli_support::{Running, http_get, start_node, start_registry, str_field, u64_field};
use serde_json::Value;

/// The build-info sample of this build: the commit the build scripts read from git (the
/// library's and this package's agree; `unknown` outside a git checkout).
fn build_info() -> String {
    let features = if cfg!(feature = "etcd") {
        "admin,etcd"
    } else {
        "admin"
    };
    format!(
        "switchboard_build_info{{version=\"{}\",commit=\"{}\",features=\"{features}\"}} 1",
        env!("CARGO_PKG_VERSION"),
        env!("SWITCHBOARD_GIT_COMMIT"),
    )
}

/// Starts a node; returns it and its ready line as JSON.

#[test]
fn a_fresh_node_serves_metrics_and_status_and_stops_on_sigterm() {
    let (_registry, registry) = start_registry();
    let mut node = Running::start(&[
        "node",
        "--id",
        "7",
        "--name",
        "leaf-7",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry,
        "--label",
        "role=leaf",
        "--admin",
        "127.0.0.1:0",
    ]);
    let line = node.next_line("node ready");
    let ready: Value = serde_json::from_str(&line).expect("JSON ready line");
    let listen = str_field(&ready, "listen").to_owned();
    let admin = str_field(&ready, "admin").to_owned();
    assert_eq!(
        line,
        format!(
            r#"{{"ready":"node","id":7,"listen":"{listen}","admin":"{admin}","registered":true,"conflict":null,"serves":[]}}"#
        )
    );
    let admin: SocketAddr = admin.parse().expect("admin address");

    let (status, head, body) = http_get(admin, "/metrics");
    assert_eq!(status, 200);
    assert!(
        head.contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    // Every sample of a fresh, registered node that talked to nobody; registry events and
    // ring updates depend on how the registry batched its pushes and are only listed.
    let samples: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
    // The process's own figures (issue 24) move too: their six names are checked below.
    let (variable, fixed): (Vec<&str>, Vec<&str>) = samples.iter().partition(|l| {
        l.starts_with("switchboard_registry_events_total ")
            || l.starts_with("switchboard_ring_updates_total ")
            || l.starts_with("process_")
    });
    let names: Vec<&str> = variable
        .iter()
        .map(|l| l.split_once(' ').map_or(*l, |(name, _)| name))
        .collect();
    let mut expected_names = vec![
        "switchboard_ring_updates_total",
        "switchboard_registry_events_total",
    ];
    expected_names.extend(switchboard_tokio::admin::process::FAMILIES);
    assert_eq!(names, expected_names, "{body}");
    let mut expected = vec!["switchboard_sent_total 0".to_owned()];
    for reason in [
        "invalid_target",
        "no_route",
        "payload_too_large",
        "shutdown",
        "unknown_target",
    ] {
        expected.push(format!(
            "switchboard_refused_total{{reason=\"{reason}\"}} 0"
        ));
    }
    expected.push("switchboard_messages_total{outcome=\"delivered\",reason=\"\"} 0".to_owned());
    for kind in ["failed", "unknown"] {
        for reason in [
            "duplicate_id",
            "no_route",
            "queue_full",
            "shutdown",
            "stream_abandoned",
            "target_gone",
            "target_restarted",
            "timeout",
            "version_mismatch",
            "wrong_cluster",
        ] {
            expected.push(format!(
                "switchboard_messages_total{{outcome=\"{kind}\",reason=\"{reason}\"}} 0"
            ));
        }
    }
    for le in [
        "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
        "2.5", "5", "10", "+Inf",
    ] {
        expected.push(format!(
            "switchboard_delivery_latency_seconds_bucket{{le=\"{le}\"}} 0"
        ));
    }
    expected.push("switchboard_delivery_latency_seconds_sum 0".to_owned());
    expected.push("switchboard_delivery_latency_seconds_count 0".to_owned());
    expected.extend(
        [
            "switchboard_received_total 0",
            "switchboard_pending_messages 0",
            "switchboard_dials_total 0",
            "switchboard_dial_failures_total 0",
            // Added (issue 26): bounded-load picks past the key's owner.
            "switchboard_select_bounded_spills_total 0",
            "switchboard_links{state=\"connecting\"} 0",
            "switchboard_links{state=\"handshaking\"} 0",
            "switchboard_links{state=\"up\"} 0",
            "switchboard_peer_restarts_total 0",
            "switchboard_peer_deaths_total{evidence=\"heartbeats_stopped\"} 0",
            "switchboard_peer_deaths_total{evidence=\"new_incarnation\"} 0",
            "switchboard_peer_deaths_total{evidence=\"redial_failed\"} 0",
            "switchboard_peer_deaths_total{evidence=\"registry_deleted\"} 0",
            "switchboard_peer_deaths_total{evidence=\"relay_notice\"} 0",
            "switchboard_forward_dropped_total 0",
            // Added (issue 22): the registry session gauge, 1 while registered.
            "switchboard_registry_session_up 1",
            "switchboard_discovery_deletes_total 0",
            "switchboard_registrations_total 1",
            "switchboard_registry_disconnects_total 0",
            "switchboard_registry_conflicts_total 0",
            "switchboard_links_rejected_total 0",
            "switchboard_handshake_timeouts_total 0",
            "switchboard_handshakes_refused_total 0",
            "switchboard_inbox_dropped_total 0",
            "switchboard_auth_refusals_total{kind=\"aborted\"} 0",
            "switchboard_auth_refusals_total{kind=\"bad_proof\"} 0",
            "switchboard_auth_refusals_total{kind=\"before_auth\"} 0",
            "switchboard_auth_refusals_total{kind=\"no_proof\"} 0",
            "switchboard_auth_refusals_total{kind=\"replay\"} 0",
            "switchboard_auth_refusals_total{kind=\"timed_out\"} 0",
            "switchboard_auth_refusals_total{kind=\"unknown_key\"} 0",
        ]
        .map(str::to_owned),
    );
    // The call duration and the served requests are labelled by method since issue 24: a
    // node that called nothing and serves nothing shows no series of either (it showed one
    // unlabelled series each at 0).
    expected.extend(
        [
            "switchboard_rpc_in_flight 0",
            "switchboard_rpc_grace_waits_total 0",
            "switchboard_rpc_fast_fails_total 0",
            "switchboard_rpc_broadcasts_total 0",
            "switchboard_rpc_budgets_capped_total 0",
            "switchboard_rpc_overloaded_total 0",
            // Added (issue 26): outlier ejection's counters and gauge.
            "switchboard_outlier_ejections_total 0",
            "switchboard_outlier_ejections_refused_total 0",
            "switchboard_outlier_restored_total 0",
            "switchboard_outlier_probes_failed_total 0",
            "switchboard_outlier_ejected 0",
            // Added (issue 24): the core's RpcStats.
            "switchboard_rpc_lookups_total 0",
            "switchboard_rpc_moved_total 0",
            "switchboard_rpc_duplicate_requests_total 0",
            "switchboard_rpc_expired_requests_total 0",
            "switchboard_rpc_not_served_total 0",
            "switchboard_rpc_late_replies_total 0",
            "switchboard_rpc_dropped_replies_total 0",
            "switchboard_rpc_bad_messages_total 0",
            // Added (issue 26): retries, hedges and the retry budget.
            "switchboard_rpc_retries_total 0",
            "switchboard_rpc_hedges_total 0",
            "switchboard_rpc_budget_exhausted_total 0",
            "switchboard_rpc_hedge_cancels_total 0",
        ]
        .map(str::to_owned),
    );
    expected.push(build_info());
    assert_eq!(
        fixed,
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );

    let (status, head, body) = http_get(admin, "/status");
    assert_eq!(status, 200);
    assert!(
        head.contains("\r\ncontent-type: application/json"),
        "{head}"
    );
    let status: Value = serde_json::from_str(&body).expect("status JSON");
    assert_eq!(u64_field(&status, "id"), 7);
    assert_eq!(status["name"], "leaf-7");
    assert_eq!(status["registered"], true);
    assert_eq!(u64_field(&status, "upstream"), 0);
    assert_eq!(status["endpoints"], Value::Array(vec![]));
    assert_eq!(status["routes"], Value::Array(vec![]));
    assert_eq!(status["links"], Value::Array(vec![]));

    let (status, _, body) = http_get(admin, "/nothing");
    assert_eq!((status, body.as_str()), (404, "not found\n"));

    node.terminate();
    let exit = node.wait("node after SIGTERM");
    assert_eq!(exit.code(), Some(0), "graceful stop exits 0");
    assert_eq!(
        node.rest_of_stdout(),
        Vec::<String>::new(),
        "nothing after ready"
    );
}

#[test]
fn load_through_a_proxy_to_an_echoing_leaf_accounts_for_every_message() {
    let (_registry, registry) = start_registry();
    let (_proxy, _) = start_node(&[
        "node",
        "--id",
        "10",
        "--name",
        "proxy",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry,
    ]);
    let (_leaf, _) = start_node(&[
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
        "--label",
        "role=leaf",
        "--echo",
    ]);
    let mut load = Running::start(&[
        "load",
        "--registry",
        &registry,
        "--to",
        "a",
        "--count",
        "300",
        "--rate",
        "1000",
        "--size",
        "64",
    ]);
    let summary = load.next_json("load summary");
    assert_eq!(load.wait("load").code(), Some(0));
    assert_eq!(u64_field(&summary, "sent"), 300, "{summary}");
    assert_eq!(u64_field(&summary, "delivered"), 300, "{summary}");
    assert_eq!(summary["failed"], serde_json::json!({}), "{summary}");
    assert_eq!(u64_field(&summary, "duplicates"), 0, "{summary}");
    assert_eq!(u64_field(&summary, "echoed"), 300, "{summary}");
    assert!(u64_field(&summary, "p50_us") <= u64_field(&summary, "p99_us"));
    let keys: Vec<&str> = summary
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "delivered",
            "duplicates",
            "echoed",
            "elapsed_ms",
            "failed",
            "lost",
            "max_us",
            "p50_us",
            // Added (issue 24): p99.9 from the latency histogram.
            "p999_us",
            "p99_us",
            "rate_achieved",
            "sent",
            "spans_ms",
            "unknown"
        ],
        "the summary's fields, sorted"
    );
    assert!(u64_field(&summary, "p99_us") <= u64_field(&summary, "max_us"));
    assert_eq!(
        (u64_field(&summary, "unknown"), u64_field(&summary, "lost")),
        (0, 0)
    );
    assert_eq!(
        summary["spans_ms"]
            .as_object()
            .expect("spans")
            .keys()
            .collect::<Vec<_>>(),
        ["delivered"],
        "{summary}"
    );

    let mut by_hash = Running::start(&[
        "load",
        "--registry",
        &registry,
        "--hash-key",
        "user-1",
        "--filter",
        "role=leaf",
        "--count",
        "50",
        "--rate",
        "0",
        "--size",
        "8",
    ]);
    let summary = by_hash.next_json("load summary");
    assert_eq!(by_hash.wait("load").code(), Some(0));
    assert_eq!(
        (
            u64_field(&summary, "sent"),
            u64_field(&summary, "delivered"),
            u64_field(&summary, "echoed"),
            u64_field(&summary, "duplicates")
        ),
        (50, 50, 50, 0),
        "{summary}"
    );
}

#[test]
fn a_listen_address_in_use_is_a_run_time_failure() {
    let (_registry, registry) = start_registry();
    let mut node = Running::start(&[
        "node",
        "--id",
        "5",
        "--name",
        "clash",
        "--listen",
        &registry,
        "--registry",
        &registry,
    ]);
    let exit = node.wait("node with a taken port");
    assert_eq!(exit.code(), Some(1));
    assert_eq!(node.rest_of_stdout(), Vec::<String>::new(), "no ready line");
}

#[test]
fn a_registry_with_a_concern_file_announces_itself_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let concern = dir.path().join("concern.toml");
    std::fs::write(&concern, "[concern]\ngame = [\"gate\", \"chat\"]\n").expect("write");
    let mut registry = Running::start(&[
        "registry",
        "--listen",
        "127.0.0.1:0",
        "--concern",
        concern.to_str().expect("UTF-8 path"),
    ]);
    let line = registry.next_line("registry ready");
    let ready: Value = serde_json::from_str(&line).expect("JSON ready line");
    let listen = str_field(&ready, "listen");
    assert!(
        listen.starts_with("127.0.0.1:") && !listen.ends_with(":0"),
        "{line}"
    );
    assert_eq!(
        line,
        format!(r#"{{"ready":"registry","listen":"{listen}"}}"#)
    );
    registry.terminate();
    assert_eq!(registry.wait("registry after SIGTERM").code(), Some(0));
}

/// Asks `path` until its answer (status and body) is one `want` accepts, at most 20 s;
/// returns the body.
fn wait_for_answer(
    admin: SocketAddr,
    path: &str,
    what: &str,
    want: impl Fn(u16, &str) -> bool,
) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (status, _, body) = http_get(admin, path);
        if want(status, &body) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} still answers {status} {body:?}, not {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn readyz_is_ok_while_registered_and_503_with_a_reason_once_the_registry_is_gone() {
    let (mut registry, registry_addr) = start_registry();
    let (node, ready) = start_node(&[
        "node",
        "--id",
        "11",
        "--name",
        "ready-11",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry_addr,
        "--admin",
        "127.0.0.1:0",
    ]);
    assert_eq!(ready["registered"], true, "{ready}");
    let admin: SocketAddr = str_field(&ready, "admin").parse().expect("admin address");
    assert_eq!(http_get(admin, "/healthz").0, 200);
    assert_eq!(http_get(admin, "/healthz").2, "ok\n");
    let (status, _, body) = http_get(admin, "/readyz");
    assert_eq!((status, body.as_str()), (200, "ready\n"));

    registry.terminate();
    assert_eq!(registry.wait("registry after SIGTERM").code(), Some(0));
    // The reason is the registry client's last word: the refused dial and when it retries
    // (the delay is the client's jittered backoff, so only its form is fixed; the body was
    // the fixed "the registry is unreachable or has not answered yet" before `/readyz` said
    // why).
    const REFUSED: &str =
        "not registered: registry unavailable: Connection refused (os error 111); retrying in ";
    let body = wait_for_answer(
        admin,
        "/readyz",
        "503 naming the refused dial",
        |status, body| status == 503 && body.starts_with(REFUSED),
    );
    let retry_ms = body[REFUSED.len()..]
        .strip_suffix(" ms\n")
        .and_then(|ms| ms.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("/readyz body {body:?}"));
    // The redial backoff: at most `registry_reconnect_max` (500 ms by default) + 20 % jitter.
    assert!(retry_ms <= 600, "{body:?}");
    // Alive all the same.
    let (status, _, body) = http_get(admin, "/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    drop(node);
}

#[test]
fn a_registry_with_admin_serves_its_metrics() {
    let mut registry = Running::start(&[
        "registry",
        "--listen",
        "127.0.0.1:0",
        "--admin",
        "127.0.0.1:0",
    ]);
    let line = registry.next_line("registry ready");
    let ready: Value = serde_json::from_str(&line).expect("JSON ready line");
    let listen = str_field(&ready, "listen").to_owned();
    let admin = str_field(&ready, "admin").to_owned();
    assert_eq!(
        line,
        format!(r#"{{"ready":"registry","listen":"{listen}","admin":"{admin}"}}"#)
    );
    let admin: SocketAddr = admin.parse().expect("admin address");
    let (status, _, body) = http_get(admin, "/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    for path in ["/status", "/readyz"] {
        assert_eq!(http_get(admin, path).0, 404, "{path}");
    }

    // One node registers; a second one claims its name and is refused.
    let (_holder, ready) = start_node(&[
        "node",
        "--id",
        "21",
        "--name",
        "taken",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &listen,
    ]);
    assert_eq!(ready["registered"], true, "{ready}");
    let (_claimant, ready) = start_node(&[
        "node",
        "--id",
        "22",
        "--name",
        "taken",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &listen,
    ]);
    assert_eq!(ready["registered"], false, "{ready}");

    let (status, head, body) = http_get(admin, "/metrics");
    assert_eq!(status, 200);
    assert!(
        head.contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    let samples: Vec<&str> = body.lines().filter(|l| !l.starts_with('#')).collect();
    // The claimant retries, so its refusals and connections grow; the rest is exact.
    let value = |prefix: &str| -> u64 {
        samples
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in {body}"))
    };
    assert!(
        value("switchboard_registry_refusals_total{kind=\"name_taken\"}") >= 1,
        "{body}"
    );
    assert!(value("switchboard_registry_connections") >= 1, "{body}");
    let exact: Vec<&str> = samples
        .iter()
        .copied()
        .filter(|l| {
            !l.starts_with("switchboard_registry_connections ")
                && !l.starts_with("switchboard_registry_unregistered_connections ")
                && !l.starts_with("switchboard_registry_refusals_total{kind=\"name_taken\"}")
                && !l.starts_with("process_")
        })
        .collect();
    // Added (issue 24): the process's own figures, which move (names checked only).
    let process: Vec<&str> = samples
        .iter()
        .filter_map(|l| l.strip_prefix("process_").and(l.split(' ').next()))
        .collect();
    assert_eq!(
        process,
        switchboard_tokio::admin::process::FAMILIES,
        "{body}"
    );
    let build_info = build_info();
    assert_eq!(
        exact,
        [
            "switchboard_registry_nodes{state=\"live\"} 1",
            "switchboard_registry_nodes{state=\"protected\"} 0",
            "switchboard_registry_connections_refused_total{cap=\"max_connections\"} 0",
            "switchboard_registry_connections_refused_total{cap=\"max_unregistered\"} 0",
            "switchboard_registry_accept_errors_total 0",
            "switchboard_registry_snapshots_sent_total 1",
            "switchboard_registry_refusals_total{kind=\"duplicate_id\"} 0",
            "switchboard_registry_refusals_total{kind=\"record_too_large\"} 0",
            "switchboard_registry_refusals_total{kind=\"unauthenticated\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"aborted\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"bad_proof\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"before_auth\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"no_proof\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"replay\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"timed_out\"} 0",
            "switchboard_registry_auth_refusals_total{kind=\"unknown_key\"} 0",
            "switchboard_registry_takeovers_total 0",
            // Added (issue 24): registrations, removals, expiries, protocol errors and
            // sessions (the holder's; the refused claimant never opened one).
            "switchboard_registry_registrations_total 1",
            "switchboard_registry_removals_total 0",
            "switchboard_registry_expiries_total{timer=\"access\"} 0",
            "switchboard_registry_expiries_total{timer=\"heartbeat\"} 0",
            "switchboard_registry_protocol_errors_total 0",
            "switchboard_registry_sessions 1",
            "switchboard_registry_sessions_opened_total 1",
            build_info.as_str(),
        ],
        "{body}"
    );

    registry.terminate();
    assert_eq!(registry.wait("registry after SIGTERM").code(), Some(0));
}

/// Runs `switchboard args` with `env`, waits for its ready line, stops it with SIGTERM and
/// returns its exit status and its stderr lines.
fn run_until_ready_then_stop(args: &[&str], env: &[(&str, &str)]) -> (i32, Vec<String>) {
    use std::{
        io::{BufRead, BufReader},
        process::{Command, Stdio},
        sync::mpsc,
    };
    let mut child = Command::new(cli_support::BIN)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the switchboard binary");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, ready) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = ready.recv_timeout(cli_support::STEP);
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM failed");
    let output = child.wait_with_output().expect("collect the output");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let line = line.unwrap_or_else(|e| panic!("no ready line ({e}); stderr:\n{stderr}"));
    assert!(line.starts_with("{\"ready\":"), "{line}\nstderr:\n{stderr}");
    (
        output.status.code().unwrap_or(-1),
        stderr.lines().map(str::to_owned).collect(),
    )
}

#[test]
fn log_format_json_makes_every_stderr_line_a_json_object_with_decimal_ids() {
    let (_registry, registry) = start_registry();
    let (code, lines) = run_until_ready_then_stop(
        &[
            "node",
            "--log-format",
            "json",
            "--id",
            "101",
            "--name",
            "json-logs",
            "--listen",
            "127.0.0.1:0",
            "--registry",
            &registry,
        ],
        &[("RUST_LOG", "info")],
    );
    assert_eq!(code, 0, "{lines:#?}");
    assert!(!lines.is_empty(), "no log lines at info");
    let mut started = false;
    for line in &lines {
        let json: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(json["level"].is_string(), "{line}");
        if json["fields"]["message"] == "node started" {
            assert_eq!(json["fields"]["id"], 101, "{line}");
            started = true;
        }
    }
    assert!(started, "no `node started` line in {lines:#?}");
}

#[test]
fn an_invalid_rust_log_is_reported_in_one_line_and_the_default_used() {
    let (code, lines) = run_until_ready_then_stop(
        &["registry", "--listen", "127.0.0.1:0"],
        &[("RUST_LOG", "=[bad")],
    );
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(
        lines.first().map(String::as_str),
        Some(
            "warning: RUST_LOG=\"=[bad\" is not a valid filter (invalid filter directive); using \"warn\""
        ),
        "{lines:#?}"
    );
    // The default (`warn`) applies: the registry's info lines are not shown.
    assert_eq!(lines.len(), 1, "{lines:#?}");
}

/// A second node under an id a live node holds (another deployment: another name, so another
/// identity) is refused: its ready line says `"registered":false` with the conflict, it exits
/// 1 with the reason, and the holder stays registered.
#[test]
fn a_duplicate_id_prints_its_conflict_and_exits_1() {
    let (_registry, registry) = start_registry();
    let (_holder, ready) = start_node(&[
        "node",
        "--id",
        "31",
        "--name",
        "first",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry,
        "--admin",
        "127.0.0.1:0",
    ]);
    assert_eq!(ready["registered"], true, "{ready}");
    let holder_admin: SocketAddr = str_field(&ready, "admin").parse().expect("admin address");
    let (mut duplicate, ready) = start_node(&[
        "node",
        "--id",
        "31",
        "--name",
        "second",
        "--listen",
        "127.0.0.1:0",
        "--registry",
        &registry,
    ]);
    assert_eq!(ready["registered"], false, "{ready}");
    let conflict = str_field(&ready, "conflict").to_owned();
    assert!(
        conflict.starts_with("id held by incarnation "),
        "the conflict names the holder's life: {conflict}"
    );
    assert_eq!(duplicate.wait("refused node").code(), Some(1));
    let (status, _, body) = http_get(holder_admin, "/readyz");
    assert_eq!((status, body.as_str()), (200, "ready\n"));
}
