//! Issue 22 item 4 with two proxies: a registry, proxies P1 and P2, echo leaves A and B under
//! P1 and C and D under P2 (every leaf labelled `role=leaf`), and a load of 1,000 msg/s
//! round-robin over the leaves through the proxies. Every leaf and proxy is SIGTERMed and
//! restarted at once with the same id, name and port, one by one (A, B, C, D, P1, P2), twice —
//! real `switchboard` processes on 127.0.0.1. Every message must be delivered and echoed
//! exactly once (summary and outcomes log); figures are printed as `figure: …` lines.

mod process_support;

use process_support::{
    cluster::{ANY_PORT, Node, NodeSpec, start_node, start_registry},
    load::{LoadSpec, LoadTarget, finish_load, read_outcomes, spawn_load},
    rolling::{assert_nothing_failed, restart_node},
    scenario::{PROXY_LABEL, RATE, RUN_START_TIMEOUT, load_through_proxy_config},
};

/// Messages in the run: 60 s at [`RATE`], long enough for twelve restarts.
const COUNT: u64 = 60_000;
/// Messages each leaf must receive after a restart before the next one starts.
const BETWEEN: u64 = 250;
/// The proxies' ids.
const PROXIES: [u64; 2] = [10, 11];
/// The leaves: (id, name, proxy).
const LEAVES: [(u64, &str, u64); 4] = [
    (101, "leaf-a", 10),
    (102, "leaf-b", 10),
    (103, "leaf-c", 11),
    (104, "leaf-d", 11),
];

/// Waits until every leaf is linked to its proxy and received [`BETWEEN`] more messages.
fn settle(leaves: &[Node]) {
    let before: Vec<u64> = leaves.iter().map(Node::received_total).collect();
    for (leaf, &(_, _, proxy)) in leaves.iter().zip(&LEAVES) {
        leaf.wait_link_up(proxy);
    }
    for (leaf, received) in leaves.iter().zip(before) {
        leaf.wait_received_at_least(received + BETWEEN, RUN_START_TIMEOUT);
    }
}

#[test]
fn process_rolling_two_proxies() {
    let registry = start_registry("registry", ANY_PORT);
    let mut proxies: Vec<Node> = PROXIES
        .iter()
        .map(|&id| {
            let mut spec = NodeSpec::new(id, &format!("proxy-{id}"), registry.addr);
            spec.labels
                .push((PROXY_LABEL.0.to_owned(), PROXY_LABEL.1.to_owned()));
            start_node(spec)
        })
        .collect();
    let mut leaves: Vec<Node> = LEAVES
        .iter()
        .map(|&(id, name, proxy)| {
            let mut spec = NodeSpec::new(id, name, registry.addr)
                .upstream(proxy)
                .echo();
            spec.labels.push(("role".to_owned(), "leaf".to_owned()));
            start_node(spec)
        })
        .collect();
    for (leaf, &(_, _, proxy)) in leaves.iter().zip(&LEAVES) {
        leaf.wait_link_up(proxy);
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");
    let mut spec = LoadSpec::to_name(registry.addr, "", 970, COUNT, RATE).outcomes_log(&log_path);
    spec.target = LoadTarget::RoundRobin("role=leaf".to_owned());
    let config = load_through_proxy_config();
    spec.extra = vec!["--config".to_owned(), config.display().to_string()];
    let run = spawn_load(&spec);
    settle(&leaves);

    for round in 1..=2 {
        for i in 0..leaves.len() {
            restart_node(&mut leaves[i], None);
            settle(&leaves);
        }
        for proxy in &mut proxies {
            restart_node(proxy, None);
            settle(&leaves);
        }
        eprintln!("round {round}: four leaves and two proxies restarted");
    }
    let summary = finish_load(run, &spec);
    eprintln!("run across twelve rolling restarts, two proxies: {summary:?}");
    assert_nothing_failed("two_proxies", &summary, &read_outcomes(&log_path), COUNT);
}
