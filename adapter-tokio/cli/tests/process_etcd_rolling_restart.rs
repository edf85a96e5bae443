//! Issue 22 item 4 on etcd: a proxy cluster registered on a private etcd (proxy, echo leaves A
//! and B), a load of 1,000 msg/s to A through the proxy, and every node SIGTERMed and
//! restarted at once with the same id, name and port, one by one (A, B, proxy), twice — real
//! `switchboard` processes on 127.0.0.1. The leaving mark travels as a record update through
//! etcd's watch like any other. Every message must be delivered and echoed exactly once
//! (summary and outcomes log); figures are printed as `figure: …` lines. The second test does
//! the same with a cluster-key rotation: the nodes start on key OLD, round 1 restarts each with
//! `--cluster-key-file OLD --next-cluster-key-file NEW`, round 2 with `--cluster-key-file NEW`;
//! the load holds both keys throughout.
//!
//! Needs the `etcd` feature (`cargo test -p switchboard --features etcd`) and the `etcd`
//! binary on `PATH`.

#![cfg(feature = "etcd")]

mod process_support;

use process_support::{
    cluster::{NodeSpec, RegistryAddr, start_node},
    etcd::EtcdProc,
    load::{LoadSpec, finish_load, read_outcomes, spawn_load},
    rolling::{BETWEEN, assert_nothing_failed, restart_node, rotation_flags, settle},
    scenario::{
        LEAF_A, LEAF_A_ID, LEAF_B, LEAF_B_ID, PROXY, PROXY_ID, PROXY_LABEL, RATE,
        RUN_START_TIMEOUT, load_through_proxy_config,
    },
};

/// Messages in the run: 40 s at [`RATE`], long enough for six restarts.
const COUNT: u64 = 40_000;

#[test]
fn process_etcd_rolling_restart() {
    run("etcd_rolling_restart", &[], &[], [None, None]);
}

#[test]
fn process_etcd_rolling_key_rotation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let [before, both, after] = rotation_flags(dir.path());
    run(
        "etcd_rolling_key_rotation",
        &before,
        &both,
        [Some(&both), Some(&after)],
    );
}

/// The cluster on a private etcd, nodes started with `start_flags`, a logged load to A holding
/// `load_flags`; two rounds of restarts (A, B, proxy), round `i`'s next lives started with
/// `rounds[i]` when given (else their own flags); the run must be exact.
fn run(what: &str, start_flags: &[String], load_flags: &[String], rounds: [Option<&[String]>; 2]) {
    let etcd = EtcdProc::start();
    let registry = RegistryAddr::Etcd(etcd.endpoint());
    let start_refs: Vec<&str> = start_flags.iter().map(String::as_str).collect();
    let mut proxy_spec = NodeSpec::new(PROXY_ID, PROXY, registry.clone()).flags(&start_refs);
    proxy_spec
        .labels
        .push((PROXY_LABEL.0.to_owned(), PROXY_LABEL.1.to_owned()));
    let leaf = |id, name| {
        NodeSpec::new(id, name, registry.clone())
            .upstream(PROXY_ID)
            .echo()
            .flags(&start_refs)
    };
    let mut proxy = start_node(proxy_spec);
    let mut leaf_a = start_node(leaf(LEAF_A_ID, LEAF_A));
    let mut leaf_b = start_node(leaf(LEAF_B_ID, LEAF_B));
    leaf_a.wait_link_up(PROXY_ID);
    leaf_b.wait_link_up(PROXY_ID);

    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("outcomes.log");
    let mut spec =
        LoadSpec::to_name(registry.clone(), LEAF_A, 960, COUNT, RATE).outcomes_log(&log_path);
    let config = load_through_proxy_config();
    spec.extra = vec!["--config".to_owned(), config.display().to_string()];
    spec.extra.extend(load_flags.iter().cloned());
    let run = spawn_load(&spec);
    leaf_a.wait_received_at_least(BETWEEN, RUN_START_TIMEOUT);

    for (round, flags) in (1..).zip(rounds) {
        restart_node(&mut leaf_a, flags);
        settle(&leaf_a, &leaf_b);
        restart_node(&mut leaf_b, flags);
        settle(&leaf_a, &leaf_b);
        restart_node(&mut proxy, flags);
        settle(&leaf_a, &leaf_b);
        eprintln!("round {round}: A, B and the proxy restarted");
    }
    let summary = finish_load(run, &spec);
    eprintln!("{what}: run across six rolling restarts on etcd: {summary:?}");
    assert_nothing_failed(what, &summary, &read_outcomes(&log_path), COUNT);
}
