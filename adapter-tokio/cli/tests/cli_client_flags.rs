//! The flags every client command shares (issue 24 item 3), on real processes against a
//! registry on 127.0.0.1: `--upstream` reaches a server no client can dial (it advertises a
//! closed port, so only its proxy, which it dialled, links to it), payloads from text, `@FILE`,
//! `-` (stdin), hex and base64 arrive byte for byte, replies that are not UTF-8 print as base64,
//! `-o text` prints one line for a person, `call --server` names the server, and two payload
//! sources or none where one is required exit 2 naming the flag.

mod cli_support;

use std::time::Duration;

use cli_support::{Running, closed_port, lines, run_to_end, run_with_input, start_registry};
use serde_json::{Value, json};

const RUN_LIMIT: Duration = Duration::from_secs(30);

/// A registry, a proxy (10) and under it a server (301, `role=srv`, serving `echo`) that
/// advertises a closed port: reachable only through the proxy it dialled.
fn cluster() -> (Vec<Running>, String) {
    let (registry, addr) = start_registry();
    let (proxy, _) = cli_support::start_registered_node(
        &[
            "node",
            "--id",
            "10",
            "--name",
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--registry",
            &addr,
        ],
        "listen",
    );
    let advertise = format!("127.0.0.1:{}", closed_port());
    let (server, _) = cli_support::start_registered_node(
        &[
            "node",
            "--id",
            "301",
            "--name",
            "server",
            "--listen",
            "0.0.0.0:0",
            "--advertise",
            &advertise,
            "--upstream",
            "10",
            "--registry",
            &addr,
            "--label",
            "role=srv",
            "--serve",
            "echo",
        ],
        "listen",
    );
    (vec![registry, proxy, server], addr)
}

/// Runs a client command; returns (exit code, stdout lines, stderr lines).
fn run(args: &[&str], input: Option<&[u8]>) -> (Option<i32>, Vec<String>, Vec<String>) {
    let (output, _) = run_with_input(args, input, RUN_LIMIT);
    (
        output.status.code(),
        lines(&output.stdout),
        lines(&output.stderr),
    )
}

/// The one JSON line of `stdout` without its `latency_us`.
fn json_line(stdout: &[String]) -> Value {
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let mut line: Value = serde_json::from_str(&stdout[0]).expect("a JSON line");
    let latency = (line.as_object_mut()).and_then(|o| o.remove("latency_us"));
    assert!(latency.is_some_and(|l| l.is_u64()), "{}", stdout[0]);
    line
}

#[test]
fn upstream_reaches_a_server_behind_its_proxy_with_every_payload_source() {
    let (_procs, registry) = cluster();
    let call = |extra: &[&str], input: Option<&[u8]>| {
        let mut args = vec![
            "call",
            "--registry",
            &registry,
            "--method",
            "echo",
            "--upstream",
            "10",
        ];
        args.extend(extra);
        run(&args, input)
    };
    let (code, stdout, stderr) = call(&["--payload", "hello"], None);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(
        json_line(&stdout),
        json!({"outcome": "reply", "payload": "hello"})
    );
    // Bytes that are not UTF-8 go out exactly and come back as their base64, said so.
    let (code, stdout, stderr) = call(&["--payload-hex", "00ff10"], None);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(
        json_line(&stdout),
        json!({"outcome": "reply", "payload": "AP8Q", "encoding": "base64"})
    );
    let (code, stdout, _) = call(&["--payload-base64", "aMOpbGxv"], None);
    assert_eq!(
        (code, json_line(&stdout)),
        (Some(0), json!({"outcome": "reply", "payload": "héllo"}))
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("payload.txt");
    std::fs::write(&file, "from a file\n").expect("write the payload file");
    let at = format!("@{}", file.display());
    let (code, stdout, _) = call(&["--payload", &at], None);
    assert_eq!(
        (code, json_line(&stdout)),
        (
            Some(0),
            json!({"outcome": "reply", "payload": "from a file\n"})
        )
    );
    let (code, stdout, _) = call(&["--payload", "-"], Some(b"from stdin"));
    assert_eq!(
        (code, json_line(&stdout)),
        (
            Some(0),
            json!({"outcome": "reply", "payload": "from stdin"})
        )
    );
    // The server by id, printed for a person.
    let (code, stdout, stderr) = call(&["--server", "301", "--payload", "hi", "-o", "text"], None);
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let (head, tail) = stdout[0].split_once(" us: ").expect("`reply in N us: hi`");
    assert_eq!(tail, "hi");
    assert!(
        head.strip_prefix("reply in ")
            .is_some_and(|n| n.parse::<u64>().is_ok()),
        "{head}"
    );

    // A load's summary for a person: one line of sorted key=value pairs.
    let (code, stdout, stderr) = run(
        &[
            "load",
            "--registry",
            &registry,
            "--upstream",
            "10",
            "--to",
            "server",
            "--count",
            "5",
            "--rate",
            "0",
            "--size",
            "8",
            "-o",
            "text",
        ],
        None,
    );
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(stdout.len(), 1, "{stdout:?}");
    let pairs: Vec<&str> = stdout[0].split(' ').collect();
    for pair in ["delivered=5", "sent=5", "failed={}", "duplicates=0"] {
        assert!(pairs.contains(&pair), "{pair} in {stdout:?}");
    }
    let keys: Vec<&str> = pairs
        .iter()
        .filter_map(|p| p.split_once('='))
        .map(|(k, _)| k)
        .collect();
    assert!(keys.is_sorted(), "{keys:?}");

    // The cluster from a config file, its upstream included (no flag but --config).
    let config = dir.path().join("client.toml");
    std::fs::write(
        &config,
        format!("registry = \"{registry}\"\nupstream = 10\n"),
    )
    .expect("write the config file");
    let config = config.display().to_string();
    let (code, stdout, stderr) = run(
        &[
            "call",
            "--config",
            &config,
            "--method",
            "echo",
            "--payload",
            "filed",
        ],
        None,
    );
    assert_eq!(code, Some(0), "{stderr:?}");
    assert_eq!(
        json_line(&stdout),
        json!({"outcome": "reply", "payload": "filed"})
    );

    // send and broadcast through the proxy, printed as text.
    let (code, stdout, stderr) = run(
        &[
            "send",
            "--registry",
            &registry,
            "--upstream",
            "10",
            "--to",
            "server",
            "--payload-base64",
            "aGk=",
            "-o",
            "text",
        ],
        None,
    );
    assert_eq!(code, Some(0), "{stderr:?}");
    assert!(
        stdout.len() == 1 && stdout[0].starts_with("delivered in ") && stdout[0].ends_with(" us"),
        "{stdout:?}"
    );
    let (code, stdout, stderr) = run(
        &[
            "broadcast",
            "--registry",
            &registry,
            "--upstream",
            "10",
            "--label",
            "role=srv",
            "--payload",
            "reload",
            "-o",
            "text",
        ],
        None,
    );
    assert_eq!(
        (code, stdout),
        (Some(0), vec!["delivered to 1 of 1: 301".to_owned()]),
        "{stderr:?}"
    );
}

/// The contrast: without `--upstream` the client dials the advertised (closed) port and
/// nothing reaches the server — the send has no outcome within its 2 s (the core's message
/// timeout is 8 s), the call ends `failed timeout` (never sent: provably not run).
#[test]
fn without_upstream_the_server_behind_the_proxy_cannot_be_dialled() {
    let (_procs, registry) = cluster();
    let (code, stdout, _) = run(
        &[
            "send",
            "--registry",
            &registry,
            "--to",
            "server",
            "--payload",
            "x",
            "--timeout",
            "2s",
        ],
        None,
    );
    assert_eq!(
        (code, stdout),
        (Some(1), vec![r#"{"outcome":"no_outcome"}"#.to_owned()])
    );
    let (code, stdout, _) = run(
        &[
            "call",
            "--registry",
            &registry,
            "--method",
            "echo",
            "--payload",
            "x",
            "--timeout",
            "1s",
        ],
        None,
    );
    assert_eq!(code, Some(1));
    assert_eq!(
        json_line(&stdout),
        json!({"outcome": "failed", "reason": "timeout"})
    );
}

#[test]
fn payload_sources_and_client_config_files_are_checked_at_the_door() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("node.toml");
    std::fs::write(&bad, "listen = \"127.0.0.1:0\"\n").expect("write the config file");
    let bad_config = bad.display().to_string();
    let (code, stdout, stderr) = run(
        &[
            "send",
            "--registry",
            "127.0.0.1:1",
            "--to",
            "a",
            "--payload",
            "x",
            "--payload-hex",
            "00",
        ],
        None,
    );
    assert_eq!((code, stdout.len()), (Some(2), 0));
    assert!(
        stderr[0].starts_with("error: the argument '--payload <TEXT|@FILE|->' cannot be used with '--payload-hex <HEX>'"),
        "{stderr:?}"
    );
    for (args, line) in [
        (
            &["send", "--registry", "127.0.0.1:1", "--to", "a"][..],
            "error: payload: required: give --payload TEXT|@FILE|-, --payload-hex or --payload-base64",
        ),
        (
            &[
                "broadcast",
                "--registry",
                "127.0.0.1:1",
                "--payload-hex",
                "0",
            ],
            "error: payload_hex: an odd number of hex digits (1)",
        ),
        (
            &[
                "call",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "m",
                "--payload",
                "@/nonexistent/p",
            ],
            "error: payload: reading /nonexistent/p: No such file or directory (os error 2)",
        ),
        (
            &[
                "call",
                "--registry",
                "127.0.0.1:1",
                "--method",
                "m",
                "--server",
                "0",
            ],
            "error: server: must be a node id, not 0",
        ),
        (
            &["ls", "--config", &bad_config],
            "error: listen: unknown key, expected one of `registry`, `etcd`, `etcd_prefix`, \
             `etcd_ca`, `etcd_cert`, `etcd_key`, `etcd_user`, `etcd_password_file`, \
             `etcd_insecure_password`, `cluster_key_file`, `next_cluster_key_file`, `tls_cert`, \
             `tls_key`, `tls_ca`, `tls_require_node_id`, `upstream`",
        ),
    ] {
        let (output, elapsed) = run_to_end(args, RUN_LIMIT);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(lines(&output.stderr), [line], "{args:?}");
        assert!(elapsed < Duration::from_secs(2), "{args:?}: {elapsed:?}");
    }
}

/// Calls never wait on a server they cannot reach while another one answers: with 301
/// (behind the proxy, advertising a closed port) and 302 (a root, reachable) serving `echo`,
/// every round-robin call from a client without `--upstream` gets its reply — a request
/// first queued for 301 moves to 302 when the dial fails — well within its 3 s budget.
#[test]
fn calls_go_to_the_server_they_can_reach() {
    let (mut procs, registry) = cluster();
    let (reachable, _) = cli_support::start_registered_node(
        &[
            "node",
            "--id",
            "302",
            "--name",
            "server-2",
            "--listen",
            "127.0.0.1:0",
            "--registry",
            &registry,
            "--serve",
            "echo",
        ],
        "listen",
    );
    procs.push(reachable);
    for i in 0..6 {
        let payload = format!("call {i}");
        let (code, stdout, stderr) = run(
            &[
                "call",
                "--registry",
                &registry,
                "--method",
                "echo",
                "--payload",
                &payload,
                "--timeout",
                "3s",
            ],
            None,
        );
        assert_eq!(code, Some(0), "call {i}: {stderr:?}");
        assert_eq!(
            json_line(&stdout),
            json!({"outcome": "reply", "payload": payload})
        );
    }
}

/// Host names wherever the registry's address goes: a node registers through
/// `--registry localhost:PORT`, `ls` lists it through the same name, a name that does not
/// resolve exits 2 naming the flag.
#[test]
fn the_registry_is_reached_by_its_host_name() {
    let (_registry, addr) = start_registry();
    let port = addr.rsplit_once(':').expect("HOST:PORT").1;
    let by_name = format!("localhost:{port}");
    let (_node, listen) = cli_support::start_registered_node(
        &[
            "node",
            "--id",
            "7",
            "--name",
            "named",
            "--listen",
            "127.0.0.1:0",
            "--registry",
            &by_name,
        ],
        "listen",
    );
    let (code, stdout, stderr) = run(&["ls", "--registry", &by_name, "-o", "json"], None);
    assert_eq!(code, Some(0), "{stderr:?}");
    let rows: Value = serde_json::from_str(&stdout[0]).expect("a JSON array");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(
        (rows[0]["id"].clone(), rows[0]["name"].clone()),
        (json!(7), json!("named"))
    );
    assert_eq!(
        rows[0]["addresses"],
        json!([format!("atcp://{listen}")]),
        "{rows}"
    );
    let (output, _) = run_to_end(
        &["ls", "--registry", "no-such-host.invalid:7000"],
        RUN_LIMIT,
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = lines(&output.stderr);
    assert!(
        stderr.len() == 1
            && stderr[0].starts_with("error: registry: cannot resolve no-such-host.invalid:7000: "),
        "{stderr:?}"
    );
}
