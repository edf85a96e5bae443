//! Refused strangers are counted and logged where they knock: a keyed `switchboard registry`
//! and a node holding only a retired key (the registry has moved on to a new one). The node
//! says `Hello`, the registry proves its key, the node cannot check that proof and hangs up —
//! before, nothing on the registry recorded it. Now each such handshake counts in
//! `switchboard_registry_refusals_total{kind="unauthenticated"}` and, by kind, in
//! `switchboard_registry_auth_refusals_total{kind="aborted"}`, and the registry logs a rate-limited warn line naming the peer's address. Real
//! processes on 127.0.0.1.

mod process_support;

use std::time::{Duration, Instant};

use process_support::{
    Proc,
    cluster::{NodeSpec, start_node},
    http::{counter, get_ok, parse_prometheus},
    wait_until,
};

/// The registry's warn line for a refused handshake.
const WARN_LINE: &str =
    "registry refused a connection: its handshake did not prove the cluster key";
/// At most one such line per this period (`REFUSAL_LOG_PERIOD`).
const LOG_PERIOD: Duration = Duration::from_secs(10);

fn keygen(dir: &std::path::Path, name: &str) -> String {
    let path = dir.join(name).to_str().expect("utf-8 path").to_owned();
    let mut proc = Proc::spawn(name, &["keygen".to_owned(), path.clone()]);
    let exit = proc.wait_exit(Duration::from_secs(30));
    assert!(exit.success(), "keygen {name}: {exit:?}");
    path
}

fn unauthenticated(admin: std::net::SocketAddr) -> u64 {
    let samples = parse_prometheus(&get_ok(admin, "/metrics"));
    counter(
        &samples,
        "switchboard_registry_refusals_total",
        &[("kind", "unauthenticated")],
    )
    .expect("the registry exports its refusals")
}

#[test]
fn a_retired_key_client_is_counted_and_logged_with_its_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (old, new) = (keygen(dir.path(), "old.key"), keygen(dir.path(), "new.key"));
    let mut registry = Proc::spawn(
        "registry",
        &[
            "registry",
            "--listen",
            "127.0.0.1:0",
            "--admin",
            "127.0.0.1:0",
            "--cluster-key-file",
            &new,
        ]
        .map(str::to_owned),
    );
    let ready = registry.next_json_line(Duration::from_secs(20));
    let addr: std::net::SocketAddr = ready["listen"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no listen address in {ready}"));
    let admin: std::net::SocketAddr = ready["admin"]
        .as_str()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no admin address in {ready}"));
    assert_eq!(unauthenticated(admin), 0, "nothing refused yet");

    let started = Instant::now();
    let stale = start_node(
        NodeSpec::new(31, "stale", addr)
            .flags(&["--cluster-key-file", &old])
            .echo(),
    );
    assert!(!stale.ready_registered(), "{}", stale.ready);
    let refused = wait_until(
        Duration::from_secs(20),
        "the registry to count the stale node's refused handshakes",
        || Some(unauthenticated(admin)).filter(|&n| n >= 2),
        || {
            format!(
                "{} refused; registry stderr:\n{}",
                unauthenticated(admin),
                registry.stderr_tail()
            )
        },
    );
    let elapsed = started.elapsed();
    // By kind: the stale node hung up after the registry's proof, every time.
    let samples = parse_prometheus(&get_ok(admin, "/metrics"));
    let aborted = counter(
        &samples,
        "switchboard_registry_auth_refusals_total",
        &[("kind", "aborted")],
    )
    .expect("the registry exports its refusals by kind");
    assert!(aborted >= refused, "aborted {aborted} of {refused} refused");
    let tail = registry.stderr_tail();
    let lines: Vec<&str> = tail.lines().filter(|l| l.contains(WARN_LINE)).collect();
    eprintln!("{refused} refused handshakes in {elapsed:?}; warn lines: {lines:#?}");
    assert!(!lines.is_empty(), "no warn line on the registry:\n{tail}");
    assert!(
        lines[0].contains("peer=127.0.0.1:") && lines[0].contains("aborted"),
        "the line names the peer's address and the kind: {}",
        lines[0]
    );
    #[expect(clippy::cast_possible_truncation, reason = "a test's seconds")]
    let allowed = 1 + (elapsed.as_secs_f64() / LOG_PERIOD.as_secs_f64()) as usize;
    assert!(
        lines.len() <= allowed,
        "{} warn lines for {refused} refusals in {elapsed:?}: rate-limited to one per \
         {LOG_PERIOD:?}",
        lines.len()
    );
}
