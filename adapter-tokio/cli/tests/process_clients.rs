//! Clients are not members (issue 22): `ls` reads without registering, and `send` / `call`
//! run as light clients with random ids. Against a small cluster of real `switchboard`
//! processes on 127.0.0.1: no node counts a peer death, no endpoint or route is left in any
//! `/status`, and concurrent clients never collide.

mod process_support;

use std::{
    process::{Command, Output},
    time::{Duration, SystemTime},
};

use process_support::{
    cluster::{ANY_PORT, Node, NodeSpec, start_node, start_registry},
    http::counter_sum,
    switchboard_bin, wait_until,
};

/// Sequential runs of each client command.
const RUNS: usize = 5;
/// Concurrent `call`s.
const CONCURRENT: usize = 20;
/// Bound on the nodes forgetting a client that left.
const FORGET_TIMEOUT: Duration = Duration::from_secs(2);

fn run(args: &[&str]) -> Output {
    Command::new(switchboard_bin())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"))
}

fn assert_ok(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what}: exit {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every node knows exactly the members, has no endpoint and no route left, counts no death.
fn assert_no_trace(nodes: &[&Node], members: usize) {
    for node in nodes {
        let status = wait_until(
            FORGET_TIMEOUT,
            "the clients forgotten",
            || {
                let status = node.status();
                (status.endpoints.is_empty()
                    && status.routes.is_empty()
                    && status.known_nodes == members)
                    .then_some(status)
            },
            || format!("{}: {:?}", node.proc.label(), node.status()),
        );
        assert!(status.registered);
        assert_eq!(
            counter_sum(&node.metrics(), "switchboard_peer_deaths_total"),
            0,
            "{}: a client's leaving counted as a peer death",
            node.proc.label()
        );
    }
}

#[test]
fn ls_send_and_call_leave_no_trace_and_never_collide() {
    let registry = start_registry("registry", ANY_PORT);
    let reg = registry.addr.to_string();
    let a = start_node(NodeSpec::new(401, "a", registry.addr).flags(&["--serve", "echo"]));
    let b = start_node(NodeSpec::new(402, "b", registry.addr).flags(&["--serve", "echo"]));
    a.wait_known(2);
    b.wait_known(2);

    for i in 0..RUNS {
        let ls = run(&["ls", "--registry", &reg, "-o", "json"]);
        assert_ok("ls", &ls);
        let rows: serde_json::Value = serde_json::from_slice(&ls.stdout).expect("ls json");
        let ids: Vec<u64> = rows
            .as_array()
            .expect("ls rows")
            .iter()
            .map(|r| r["id"].as_u64().expect("id"))
            .collect();
        assert_eq!(
            ids,
            [401, 402],
            "ls run {i} lists the members and nothing else"
        );
        let send = run(&["send", "--registry", &reg, "--to", "a", "--payload", "hi"]);
        assert_ok("send", &send);
        let call = run(&[
            "call",
            "--registry",
            &reg,
            "--method",
            "echo",
            "--payload",
            "x",
        ]);
        assert_ok("call", &call);
        let line: serde_json::Value = serde_json::from_slice(&call.stdout).expect("call json");
        assert_eq!(line["outcome"], "reply", "call run {i}: {line}");
        assert_eq!(line["payload"], "x", "call run {i}: {line}");
    }
    assert_no_trace(&[&a, &b], 2);

    // Concurrent calls: distinct random ids, every one answered.
    let children: Vec<_> = (0..CONCURRENT)
        .map(|i| {
            Command::new(switchboard_bin())
                .args(["call", "--registry", &reg, "--method", "echo", "--payload"])
                .arg(format!("c{i}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn call")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().expect("call output");
        assert_ok(&format!("concurrent call {i}"), &output);
        let line: serde_json::Value = serde_json::from_slice(&output.stdout).expect("call json");
        assert_eq!(
            line["payload"],
            format!("c{i}"),
            "concurrent call {i}: {line}"
        );
    }
    assert_no_trace(&[&a, &b], 2);
}

/// `ls --watch -o json`: the listing, then one object per change — a node joining (its row,
/// with host, pid and incarnation as a string, state `live`), a SIGTERMed node draining
/// (state `leaving`) then gone, a SIGKILLed node kept through disconnect protection (state
/// `protected`, also in a fresh `ls`) — until SIGINT (exit 0). The watcher itself is listed
/// nowhere.
#[test]
fn ls_watch_prints_each_change_as_it_happens() {
    let registry = start_registry("registry", ANY_PORT);
    let a = start_node(NodeSpec::new(411, "wa", registry.addr));
    a.wait_known(1);
    let mut watcher = process_support::Proc::spawn(
        "ls-watch",
        &[
            "ls".to_owned(),
            "--registry".to_owned(),
            registry.addr.to_string(),
            "-o".to_owned(),
            "json".to_owned(),
            "--watch".to_owned(),
        ],
    );
    let listing = watcher.next_json_line(Duration::from_secs(10));
    assert_eq!(listing.as_array().map(Vec::len), Some(1), "{listing}");
    assert_eq!(listing[0]["id"], 411);
    assert_eq!(listing[0]["state"], "live", "{listing}");
    assert_eq!(a.status().known_nodes, 1, "the watcher is no member");

    let mut b = start_node(NodeSpec::new(412, "wb", registry.addr));
    let put = watcher.next_json_line(Duration::from_secs(10));
    assert_eq!(put["event"], "put", "{put}");
    assert_eq!(put["node"]["id"], 412, "{put}");
    assert_eq!(put["node"]["name"], "wb", "{put}");
    assert_eq!(put["node"]["state"], "live", "{put}");
    assert_eq!(put["node"]["pid"], b.proc.pid(), "{put}");
    assert_eq!(
        put["node"]["incarnation"],
        b.status().incarnation.to_string(),
        "{put}"
    );
    // The topology record may follow as a second put of the same node (still `live`); the
    // drain announces `leaving` before the record is deleted.
    b.proc.sigterm();
    b.proc.wait_exit(Duration::from_secs(10));
    let mut states: Vec<String> = Vec::new();
    let delete = loop {
        let line = watcher.next_json_line(Duration::from_secs(10));
        if line["event"] != "put" {
            break line;
        }
        assert_eq!(line["node"]["id"], 412, "{line}");
        let state = line["node"]["state"].as_str().unwrap_or("?").to_owned();
        if states.last() != Some(&state) {
            states.push(state);
        }
    };
    assert!(
        states == ["leaving"] || states == ["live", "leaving"],
        "{states:?}"
    );
    assert_eq!(
        delete,
        serde_json::json!({"event": "delete", "id": 412, "name": "wb"})
    );

    let mut c = start_node(NodeSpec::new(413, "wc", registry.addr));
    let put = watcher.next_json_line(Duration::from_secs(10));
    assert_eq!(
        (&put["node"]["id"], &put["node"]["state"]),
        (&serde_json::json!(413), &serde_json::json!("live")),
        "{put}"
    );
    let killed_at = SystemTime::now();
    c.proc.sigkill();
    let lost = loop {
        let line = watcher.next_json_line(Duration::from_secs(10));
        assert_eq!(line["event"], "put", "{line}");
        assert_eq!(line["node"]["id"], 413, "{line}");
        if line["node"]["state"] != "live" {
            break line;
        }
    };
    assert_eq!(lost["node"]["state"], "protected", "{lost}");
    // Since when: the registry saw the connection close at the kill (same host clock).
    let since = |value: &serde_json::Value| {
        let text = value["protected_since"].as_str().unwrap_or("?");
        humantime::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    };
    let watched_since = since(&lost["node"]);
    let after_kill = watched_since
        .duration_since(killed_at)
        .unwrap_or_else(|e| panic!("protected since {e:?} before the kill: {lost}"));
    assert!(
        after_kill < Duration::from_millis(500),
        "{after_kill:?}: {lost}"
    );
    // A later `ls` reads the registry's age of loss and counts back to the same instant,
    // not to when it ran.
    std::thread::sleep(Duration::from_millis(1_500));
    let ls = run(&["ls", "--registry", &registry.addr.to_string(), "-o", "json"]);
    assert_ok("ls", &ls);
    let rows: serde_json::Value = serde_json::from_slice(&ls.stdout).expect("ls json");
    let states: Vec<(u64, &str)> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["id"].as_u64().unwrap_or(0),
                r["state"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(states, [(411, "live"), (413, "protected")]);
    let listed_since = since(&rows[1]);
    let apart = listed_since
        .duration_since(watched_since)
        .unwrap_or_else(|e| e.duration());
    assert!(
        apart < Duration::from_millis(100),
        "watch said {watched_since:?}, ls said {listed_since:?}"
    );
    watcher.sigint();
    let status = watcher.wait_exit(Duration::from_secs(5));
    assert_eq!(status.code(), Some(0), "{}", watcher.diagnostics());
}
