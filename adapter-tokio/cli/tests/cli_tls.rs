//! Mutual TLS (`--tls-cert`, `--tls-key`, `--tls-ca`; feature `tls`) as real processes, with
//! a throwaway CA made in the test: the demo passes over mTLS (nothing lost or duplicated); a
//! TLS registry registers a TLS node, and `send`, `load` and `ls` reach it over TLS, while a node
//! without TLS or with a certificate of another CA is never registered; partial or bad TLS
//! flags exit 2 naming the flag.

#![cfg(feature = "tls")]

mod cli_support;
#[path = "../../tests/tls_certs/mod.rs"]
#[allow(unreachable_pub, reason = "shared by path with other crates")]
mod tls_certs;

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use cli_support::{Running, assert_demo_accounted, run_to_end, str_field, u64_field};
use serde_json::Value;
use tls_certs::{Ca, Leaf};

fn flags(leaf: &Leaf) -> Vec<String> {
    vec![
        "--tls-cert".into(),
        leaf.cert.display().to_string(),
        "--tls-key".into(),
        leaf.key.display().to_string(),
        "--tls-ca".into(),
        leaf.ca.display().to_string(),
    ]
}

fn start(args: &[&str], leaf: Option<&Leaf>) -> Running {
    let tls = leaf.map(flags).unwrap_or_default();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(tls.iter().map(String::as_str));
    Running::start(&all)
}

#[test]
fn the_demo_passes_over_mutual_tls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let leaf = Ca::new("demo").leaf(dir.path(), "demo");
    let mut args = vec![
        "demo".to_owned(),
        "--seconds".into(),
        "4".into(),
        "--json".into(),
    ];
    args.extend(flags(&leaf));
    let output = Command::new(cli_support::BIN)
        .args(&args)
        .env_remove("SWITCHBOARD_ETCD")
        .stdin(Stdio::null())
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr:\n{stderr}"
    );
    let summary: Value = serde_json::from_str(stdout.trim_end()).expect("one JSON line");
    // Lost, duplicates, `sent == delivered + Σ failed` and the failures' reasons, exact.
    assert_demo_accounted(&summary, 4000);
}

#[test]
fn a_tls_registry_serves_tls_nodes_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Ca::new("cluster");
    let rogue = Ca::new("rogue");
    let mut registry = start(
        &["registry", "--listen", "127.0.0.1:0"],
        Some(&ca.leaf(dir.path(), "registry")),
    );
    let ready = registry.next_json("registry ready");
    let addr = str_field(&ready, "listen").to_owned();
    let node = |id: &str, name: &str, leaf: Option<&Leaf>| {
        let mut node = start(
            &[
                "node",
                "--id",
                id,
                "--name",
                name,
                "--listen",
                "127.0.0.1:0",
                "--registry",
                &addr,
                "--echo",
            ],
            leaf,
        );
        let ready = node.next_json("node ready");
        (node, ready)
    };
    let (_good, ready) = node("1", "good", Some(&ca.leaf(dir.path(), "good")));
    assert_eq!(ready["registered"], true, "{ready}");
    let (_plain, ready) = node("2", "plain", None);
    assert_eq!(ready["registered"], false, "a node without TLS: {ready}");
    let (_rogue, ready) = node("3", "rogue", Some(&rogue.leaf(dir.path(), "rogue")));
    assert_eq!(ready["registered"], false, "a node of another CA: {ready}");

    let sender = flags(&ca.leaf(dir.path(), "sender"));
    let mut args = vec![
        "send",
        "--registry",
        &addr,
        "--to",
        "good",
        "--payload",
        "hi",
        "--timeout",
        "10000ms",
    ];
    args.extend(sender.iter().map(String::as_str));
    let (output, _) = run_to_end(&args, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(r#""outcome":"delivered""#), "{stdout}");

    let mut args = vec![
        "load",
        "--registry",
        &addr,
        "--to",
        "good",
        "--count",
        "2000",
        "--rate",
        "0",
        "--size",
        "64",
    ];
    args.extend(sender.iter().map(String::as_str));
    let (output, _) = run_to_end(&args, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let summary: Value =
        serde_json::from_str(stdout.lines().last().expect("the load summary")).expect("JSON");
    assert_eq!(u64_field(&summary, "delivered"), 2000, "{summary}");

    let mut args = vec!["ls", "--registry", &addr, "-o", "json"];
    args.extend(sender.iter().map(String::as_str));
    let (output, _) = run_to_end(&args, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(r#""good""#)
            && !stdout.contains(r#""plain""#)
            && !stdout.contains(r#""rogue""#),
        "{stdout}"
    );
}

#[test]
fn partial_or_bad_tls_flags_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    let leaf = Ca::new("cluster").leaf(dir.path(), "n");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not PEM").expect("write");
    let cert = leaf.cert.display().to_string();
    let key = leaf.key.display().to_string();
    let ca = leaf.ca.display().to_string();
    let bad = garbage.display().to_string();
    let base = ["registry", "--listen", "127.0.0.1:0"];
    for (tls, flag) in [
        (vec!["--tls-cert", &cert, "--tls-key", &key], "tls_ca"),
        (
            vec!["--tls-cert", &bad, "--tls-key", &key, "--tls-ca", &ca],
            "tls_cert",
        ),
        (
            vec!["--tls-cert", &cert, "--tls-key", &bad, "--tls-ca", &ca],
            "tls_key",
        ),
        (
            vec![
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
                "--tls-ca",
                "/no/such/ca.pem",
            ],
            "tls_ca",
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(tls);
        let (output, _) = run_to_end(&args, Duration::from_secs(30));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("error: {flag}: ")),
            "{args:?}: {stderr}"
        );
    }
}
