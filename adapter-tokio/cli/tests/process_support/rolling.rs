//! Rolling restarts of a [`ProxyCluster`]: one process SIGTERMed (it drains, exits 0) and its
//! next life started at once with the same id, name and port — optionally with other flags
//! (a key rotation) — and the cluster settled again under the load.

use std::time::Duration;

use super::{
    cluster::{Node, start_node, start_registry_with},
    load::LoadSummary,
    scenario::{PROXY_ID, ProxyCluster, RUN_START_TIMEOUT},
};

/// Bound on a drained process's exit after SIGTERM (its drain is bounded by 2 s).
pub const EXIT_BOUND: Duration = Duration::from_secs(8);
/// Messages leaf A must receive after each restart before the next one starts.
pub const BETWEEN: u64 = 1_000;

/// Which process of the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// The embedded registry.
    Registry,
    /// The proxy.
    Proxy,
    /// Leaf A (the load's target).
    LeafA,
    /// Leaf B.
    LeafB,
}

fn node(cluster: &mut ProxyCluster, which: Which) -> &mut Node {
    match which {
        Which::LeafA => &mut cluster.leaf_a,
        Which::LeafB => &mut cluster.leaf_b,
        Which::Proxy | Which::Registry => &mut cluster.proxy,
    }
}

/// SIGTERMs `which`, waits for its exit (0 required), starts its next life on the same port
/// (with `flags` instead of its own when given) and waits until the cluster [`settle`]s.
///
/// # Panics
///
/// The process does not exit 0 within [`EXIT_BOUND`], its next life does not register, or
/// the cluster does not settle and carry traffic again within the bounds.
pub fn restart(cluster: &mut ProxyCluster, which: Which, flags: Option<&[String]>) {
    if which == Which::Registry {
        restart_registry(cluster, flags);
    } else {
        restart_node(node(cluster, which), flags);
    }
    settle(&cluster.leaf_a, &cluster.leaf_b);
}

/// SIGTERMs `old`, waits for its exit (0 required) and starts its next life in its place on
/// the same port (with `flags` instead of its own when given).
///
/// # Panics
///
/// The process does not exit 0 within [`EXIT_BOUND`], or its next life does not register.
pub fn restart_node(old: &mut Node, flags: Option<&[String]>) {
    let incarnation = old.status().incarnation;
    stop(&mut old.proc);
    let mut spec = old.restart_spec();
    if let Some(flags) = flags {
        spec.flags = flags.to_vec();
    }
    *old = start_node(spec);
    let label = old.proc.label().to_owned();
    assert_ne!(old.status().incarnation, incarnation, "{label}: a new life");
    assert!(old.ready_registered(), "{label} registered: {}", old.ready);
}

/// Waits until both leaves are linked to the proxy and `leaf_a` received [`BETWEEN`] more
/// messages. (`ProxyCluster::wait_settled` counts known nodes, and the load's client is one
/// more while it runs.)
///
/// # Panics
///
/// Not so within the bounds.
pub fn settle(leaf_a: &Node, leaf_b: &Node) {
    leaf_a.wait_link_up(PROXY_ID);
    leaf_b.wait_link_up(PROXY_ID);
    let now = leaf_a.received_total();
    leaf_a.wait_received_at_least(now + BETWEEN, RUN_START_TIMEOUT);
}

/// The registry's next life on the same address.
fn restart_registry(cluster: &mut ProxyCluster, flags: Option<&[String]>) {
    stop(&mut cluster.registry.proc);
    let flags: Vec<&str> = flags
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .collect();
    let addr = cluster.registry.addr.to_string();
    cluster.registry = start_registry_with("registry", &addr, &flags);
    for node in [&cluster.proxy, &cluster.leaf_a, &cluster.leaf_b] {
        super::wait_until(
            RUN_START_TIMEOUT,
            &format!("{} registered again", node.proc.label()),
            || node.try_status().ok().filter(|s| s.registered),
            || format!("{:?}", node.try_status()),
        );
    }
}

/// SIGTERM and a clean exit.
fn stop(proc: &mut super::Proc) {
    proc.sigterm();
    let status = proc.wait_exit(EXIT_BOUND);
    assert!(
        status.success(),
        "{} exits 0 after its drain: {status:?}\n{}",
        proc.label(),
        proc.diagnostics()
    );
}

/// Prints the run's figures (`figure: …` lines) and asserts it exact: every message delivered
/// and echoed once — no failure, no refusal, no `no_outcome`, no duplicate — in the summary
/// and in the outcomes log (`lines`, one per message).
///
/// # Panics
///
/// Not so.
pub fn assert_nothing_failed(
    what: &str,
    summary: &LoadSummary,
    lines: &[super::load::OutcomeLine],
    count: u64,
) {
    let counts = super::load::outcome_counts(lines);
    eprintln!("figure: {what}_outcomes={counts:?}");
    eprintln!(
        "figure: {what} failed={} lost={} duplicated={} delivered={} echoed={} sent={}",
        summary.failed_total(),
        summary.failed.get("no_outcome").copied().unwrap_or(0),
        summary.duplicates,
        summary.delivered,
        summary.echoed,
        summary.sent
    );
    assert_eq!(lines.len() as u64, count, "one outcomes line per message");
    assert_eq!(counts.get("delivered").copied(), Some(count), "{counts:?}");
    summary.assert_all_delivered(count);
}

/// The flags of a cluster-key rotation, with key files OLD and NEW written in `dir`: before
/// (`--cluster-key-file OLD`), during (`... OLD --next-cluster-key-file NEW`), after
/// (`--cluster-key-file NEW`).
///
/// # Panics
///
/// A key file cannot be written, or `dir` is not UTF-8.
#[must_use]
pub fn rotation_flags(dir: &std::path::Path) -> [Vec<String>; 3] {
    let (old, new) = (dir.join("old.key"), dir.join("new.key"));
    super::write_secret(&old, &format!("{}\n", "a1".repeat(32)));
    super::write_secret(&new, &format!("{}\n", "b2".repeat(32)));
    let path = |p: &std::path::Path| p.to_str().expect("a UTF-8 path").to_owned();
    let (old, new) = (path(&old), path(&new));
    let flags = |keys: &[&str]| -> Vec<String> { keys.iter().map(|s| (*s).to_owned()).collect() };
    [
        flags(&["--cluster-key-file", &old]),
        flags(&["--cluster-key-file", &old, "--next-cluster-key-file", &new]),
        flags(&["--cluster-key-file", &new]),
    ]
}
