//! A lost registry is seen and rejoined at once (issue 22): the registry SIGKILLed, every node
//! warns within 1 s and its session gauge drops to 0; restarted on the same port, every node is
//! registered again within 1 s of the new registry's ready line and warns that the session is
//! back. Real `switchboard` processes on 127.0.0.1.

mod process_support;

use std::{
    thread,
    time::{Duration, Instant},
};

use process_support::{
    cluster::{ANY_PORT, Node, NodeSpec, start_node, start_registry},
    http::counter,
    wait_until,
};

/// The bound the issue sets on both: the warning, and the rejoin.
const AT_ONCE: Duration = Duration::from_secs(1);

fn session_up(node: &Node) -> u64 {
    counter(&node.metrics(), "switchboard_registry_session_up", &[]).expect("session gauge")
}

/// Waits at most `bound` from `since` for `line` in `node`'s stderr; returns when it was seen.
fn wait_line(node: &Node, line: &str, since: Instant, bound: Duration) -> Duration {
    wait_until(
        bound + Duration::from_secs(5),
        line,
        || node.proc.stderr_tail().contains(line).then_some(()),
        || node.proc.diagnostics(),
    );
    let seen = since.elapsed();
    assert!(
        seen <= bound,
        "{}: {line:?} after {seen:?}",
        node.proc.label()
    );
    seen
}

#[test]
fn a_killed_registry_is_warned_about_and_rejoined_within_a_second() {
    let mut registry = start_registry("registry", ANY_PORT);
    let addr = registry.addr;
    let nodes = [
        start_node(NodeSpec::new(701, "r1", addr)),
        start_node(NodeSpec::new(702, "r2", addr)),
    ];
    for node in &nodes {
        node.wait_known(2);
        assert_eq!(session_up(node), 1);
    }

    registry.proc.sigkill();
    let killed = Instant::now();
    for node in &nodes {
        let seen = wait_line(node, "registry session lost", killed, AT_ONCE);
        eprintln!("{}: warned {seen:?} after the kill", node.proc.label());
        assert_eq!(session_up(node), 0);
        assert!(!node.status().registered);
    }
    // Away for a few of the nodes' redials.
    thread::sleep(Duration::from_millis(1_500));

    let registry = start_registry("registry-2", &addr.to_string());
    let ready = Instant::now();
    assert_eq!(registry.addr, addr, "restarted on the same port");
    for node in &nodes {
        wait_until(
            AT_ONCE + Duration::from_secs(5),
            "registered again",
            || node.status().registered.then_some(()),
            || node.proc.diagnostics(),
        );
        let rejoined = ready.elapsed();
        eprintln!(
            "{}: registered {rejoined:?} after the ready line",
            node.proc.label()
        );
        assert!(
            rejoined <= AT_ONCE,
            "{}: rejoined after {rejoined:?}",
            node.proc.label()
        );
        wait_line(node, "registry session back", ready, AT_ONCE);
        assert_eq!(session_up(node), 1);
    }
}
