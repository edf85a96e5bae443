//! Issue 22 item 4 with a key rotation and the registry: a keyed proxy cluster (registry,
//! proxy, echo leaves A and B) under 1,000 msg/s to A through the proxy; every process,
//! the registry first, is SIGTERMed and restarted one by one with `--cluster-key-file OLD
//! --next-cluster-key-file NEW`, then again with `--cluster-key-file NEW` — real
//! `switchboard` processes on 127.0.0.1. The load holds both keys throughout. Every message
//! must be delivered and echoed exactly once (summary and outcomes log); figures are printed
//! as `figure: …` lines.

mod process_support;

use process_support::{
    cluster::{ANY_PORT, start_node, start_registry_with},
    load::{finish_load, read_outcomes, spawn_load},
    rolling::{BETWEEN, Which, assert_nothing_failed, restart, rotation_flags},
    scenario::{
        LEAF_A, LEAF_A_ID, LEAF_B, LEAF_B_ID, ProxyCluster, RATE, RUN_START_TIMEOUT, leaf_spec,
        proxy_spec,
    },
};

/// Messages in the run: 50 s at [`RATE`], long enough for eight restarts.
const COUNT: u64 = 50_000;

#[test]
fn process_rolling_key_rotation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let [before, both, after] = rotation_flags(dir.path());
    let before_refs: Vec<&str> = before.iter().map(String::as_str).collect();
    let registry = start_registry_with("registry", ANY_PORT, &before_refs);
    let proxy = start_node(proxy_spec(&registry).flags(&before_refs));
    let leaf_a = start_node(leaf_spec(&registry, LEAF_A_ID, LEAF_A).flags(&before_refs));
    let leaf_b = start_node(leaf_spec(&registry, LEAF_B_ID, LEAF_B).flags(&before_refs));
    let mut cluster = ProxyCluster {
        registry,
        proxy,
        leaf_a,
        leaf_b,
    };
    cluster.wait_settled();
    let log_path = dir.path().join("outcomes.log");
    let mut spec = cluster.load_to_a(950, COUNT, RATE).outcomes_log(&log_path);
    spec.extra.extend(both.iter().cloned());
    let run = spawn_load(&spec);
    cluster
        .leaf_a
        .wait_received_at_least(BETWEEN, RUN_START_TIMEOUT);

    let order = [Which::Registry, Which::Proxy, Which::LeafA, Which::LeafB];
    for (round, keys) in [(1, &both), (2, &after)] {
        for which in order {
            restart(&mut cluster, which, Some(keys));
            eprintln!(
                "round {round}: {which:?} restarted with {} key flags",
                keys.len() / 2
            );
        }
    }
    let summary = finish_load(run, &spec);
    eprintln!("run across eight rolling restarts with a key rotation: {summary:?}");
    assert_nothing_failed("key_rotation", &summary, &read_outcomes(&log_path), COUNT);
}
