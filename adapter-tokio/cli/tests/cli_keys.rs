//! A closed cluster from the command line: `switchboard keygen`, key file errors, and real
//! processes on 127.0.0.1 — a registry and a node with key A, a stranger node with key B
//! (refused: its ready line says why and it exits 1), a node without a key (refused the
//! same way), `send`/`ls` with the right key working and with the wrong key getting nothing.

mod cli_support;

use std::{path::Path, time::Duration};

use cli_support::{Running, run_to_end, str_field};
use serde_json::Value;

const RUN_LIMIT: Duration = Duration::from_secs(30);

fn keygen(path: &Path) -> std::process::Output {
    run_to_end(&["keygen", path.to_str().expect("utf-8 path")], RUN_LIMIT).0
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn keygen_writes_64_hex_characters_mode_0600_and_never_overwrites() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("cluster.key");
    let out = keygen(&path);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&path).expect("the key file");
    assert_eq!(text.len(), 65, "{text:?}");
    assert!(text.ends_with('\n'));
    assert!(
        text[..64].bytes().all(|b| b.is_ascii_hexdigit()),
        "{text:?}"
    );
    assert!(
        out.stdout.is_empty() && !stderr(&out).contains(&text[..64]),
        "never printed"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let again = keygen(&path);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("exists"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&path).expect("kept"), text);
}

#[test]
fn a_missing_or_malformed_key_file_exits_2_naming_the_flag_and_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("bad.key");
    cli_support::write_secret(&bad, "not a key\n");
    let bad = bad.to_str().expect("utf-8").to_owned();
    let missing = dir.path().join("missing.key");
    let missing = missing.to_str().expect("utf-8").to_owned();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![
                "registry",
                "--listen",
                "127.0.0.1:0",
                "--cluster-key-file",
                &missing,
            ],
            "cluster_key_file: cannot read",
            &missing,
        ),
        (
            vec![
                "node",
                "--id",
                "1",
                "--name",
                "n",
                "--listen",
                "127.0.0.1:0",
                "--registry",
                "127.0.0.1:9",
                "--cluster-key-file",
                &bad,
            ],
            "cluster_key_file: ",
            &bad,
        ),
        (
            vec![
                "ls",
                "--registry",
                "127.0.0.1:9",
                "--next-cluster-key-file",
                &bad,
            ],
            "next_cluster_key_file: needs --cluster-key-file",
            "",
        ),
        (
            vec![
                "send",
                "--registry",
                "127.0.0.1:9",
                "--to",
                "x",
                "--payload",
                "p",
                "--cluster-key-file",
                &missing,
            ],
            "cluster_key_file: cannot read",
            &missing,
        ),
        (
            vec!["demo", "--seconds", "1", "--cluster-key-file", &bad],
            "cluster_key_file: ",
            &bad,
        ),
    ];
    for (args, message, file) in cases {
        let (out, _) = run_to_end(&args, RUN_LIMIT);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("error: {message}")),
            "{args:?}: {err}"
        );
        assert!(err.contains(file), "{args:?}: {err}");
    }
}

/// Starts `node --id ID --name NAME` against `registry` with `extra` flags; returns it and
/// its ready line.
fn node(id: &str, name: &str, registry: &str, extra: &[&str]) -> (Running, Value) {
    let mut args = vec![
        "node",
        "--id",
        id,
        "--name",
        name,
        "--listen",
        "127.0.0.1:0",
        "--registry",
        registry,
        "--echo",
    ];
    args.extend_from_slice(extra);
    let mut node = Running::start(&args);
    let ready = node.next_json("node ready");
    (node, ready)
}

#[test]
fn a_stranger_with_another_key_neither_registers_nor_receives() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (a, b) = (dir.path().join("a.key"), dir.path().join("b.key"));
    assert!(keygen(&a).status.success() && keygen(&b).status.success());
    let (a, b) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));

    let mut registry = Running::start(&[
        "registry",
        "--listen",
        "127.0.0.1:0",
        "--cluster-key-file",
        a,
    ]);
    let ready = registry.next_json("registry ready");
    let addr = str_field(&ready, "listen").to_owned();

    let (_member, ready) = node("11", "member", &addr, &["--cluster-key-file", a]);
    assert_eq!(ready["registered"], true, "{ready}");

    // Another key: the registry proves A, which the stranger cannot check. Nothing an
    // unproven registry says is believed (a squatter could say it), so this is no conflict:
    // the stranger is not registered, leaves each connection and keeps retrying.
    let (mut stranger, ready) = node("12", "stranger", &addr, &["--cluster-key-file", b]);
    assert_eq!(ready["registered"], false, "{ready}");
    assert_eq!(ready["conflict"], Value::Null, "{ready}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        stranger.is_running(),
        "the stranger exited at an unproven refusal"
    );
    stranger.terminate();
    assert_eq!(stranger.wait("stranger exit").code(), Some(0));

    // No key at all: the registry refuses it.
    let (mut keyless, ready) = node("13", "keyless", &addr, &[]);
    assert_eq!(ready["registered"], false, "{ready}");
    assert_eq!(
        str_field(&ready, "conflict"),
        "the registry refused this node's cluster key"
    );
    assert_eq!(keyless.wait("keyless exit").code(), Some(1));

    // With the key, send and ls work; the stranger was never listed.
    let (out, _) = run_to_end(
        &[
            "send",
            "--registry",
            &addr,
            "--to",
            "member",
            "--payload",
            "hi",
            "--cluster-key-file",
            a,
        ],
        RUN_LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (out, _) = run_to_end(
        &[
            "ls",
            "--registry",
            &addr,
            "-o",
            "json",
            "--cluster-key-file",
            a,
        ],
        RUN_LIMIT,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("\"member\""), "{listed}");
    assert!(
        !listed.contains("stranger") && !listed.contains("keyless"),
        "{listed}"
    );

    // With another key, send reaches nobody and ls reads nothing.
    let (out, _) = run_to_end(
        &[
            "send",
            "--registry",
            &addr,
            "--to",
            "member",
            "--payload",
            "hi",
            "--timeout",
            "2000ms",
            "--cluster-key-file",
            b,
        ],
        RUN_LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let (out, _) = run_to_end(
        &[
            "ls",
            "--registry",
            &addr,
            "--timeout",
            "2000ms",
            "--cluster-key-file",
            b,
        ],
        RUN_LIMIT,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("member"));
}
