//! A proxy SIGKILLed under traffic and replaced: real `switchboard` processes on 127.0.0.1.
//!
//! Registry, proxy P1 (id 10), echo leaves A (101) and B (102) under it; a load run sends to
//! A through the proxy, and A's echoes come back through it. P1 is killed with SIGKILL once A
//! has received a quarter of the run, and P2 starts with the same id on a new port. Every
//! message of that run must end in exactly one named outcome with no duplicate echo; a second
//! run through P2 delivers and echoes all.

mod process_support;

use process_support::{
    cluster::{LoadSummary, finish_load, run_load, spawn_load, start_node},
    scenario::{COUNT, KNOWN_NODES, PROXY_ID, ProxyCluster, RATE, RUN_START_TIMEOUT, proxy_spec},
};

/// The cluster after a run of [`COUNT`] messages from node `load_id` to A during which the
/// proxy was SIGKILLed and replaced; the run's summary; P1's incarnation.
fn run_across_proxy_kill(load_id: u64) -> (ProxyCluster, LoadSummary, u64) {
    let mut cluster = ProxyCluster::start();
    let first_life = cluster.proxy.status().incarnation;

    let spec = cluster.load_to_a(load_id, COUNT, RATE);
    let run = spawn_load(&spec);
    let received_at_kill = cluster
        .leaf_a
        .wait_received_at_least(COUNT / 4, RUN_START_TIMEOUT);
    cluster.proxy.proc.sigkill();
    cluster.proxy = start_node(proxy_spec(&cluster.registry));
    let summary = finish_load(run, &spec);
    eprintln!("run across the proxy kill: {summary:?}");
    assert!(
        received_at_kill < COUNT,
        "the proxy died mid-run: A had {received_at_kill} of {COUNT} at the kill"
    );
    (cluster, summary, first_life)
}

#[test]
fn process_proxy_kill() {
    let (cluster, first, first_life) = run_across_proxy_kill(900);

    first.assert_accounted(COUNT);
    // Honest outcomes: A has every delivered message once, no message reported failed (never
    // transmitted), and of the unknown ones (transmitted, not acknowledged) at most all.
    let received_first = cluster.leaf_a.received_total();
    assert!(
        received_first >= first.delivered
            && received_first <= first.delivered + first.unknown_total(),
        "A received {received_first}, load says {first:?}"
    );
    assert!(
        first.echoed <= received_first,
        "A echoes what it receives, once: {first:?}, A received {received_first}"
    );

    // P2 took over: a new life of id 10, both leaves under it again, nobody lost from view.
    cluster.wait_settled();
    let second_life = cluster.proxy.status();
    assert_eq!(second_life.id, PROXY_ID);
    assert_ne!(
        second_life.incarnation, first_life,
        "P2 is a new incarnation"
    );
    assert_eq!(second_life.known_nodes, KNOWN_NODES);

    let second = run_load(&cluster.load_to_a(901, COUNT, RATE));
    second.assert_all_delivered(COUNT);
    assert_eq!(
        cluster.leaf_a.received_total(),
        received_first + COUNT,
        "A received the second run exactly once"
    );
}

/// What the run across the kill should achieve once proxied routes recover: the outage (about
/// a second of reconnect backoff) is far inside the 8 s message deadline, and A stays alive,
/// so every message reaches A and every echo comes back.
#[test]
#[ignore = "core: a route through a ready proxy that an Unreachable marked unready is never \
            made ready again (Connector::try_direct_reconnect returns early for proxied \
            records); A's echoes stay queued behind P2"]
fn process_proxy_kill_every_message_and_echo_arrives() {
    let (cluster, first, _) = run_across_proxy_kill(902);

    first.assert_all_delivered(COUNT);
    assert_eq!(cluster.leaf_a.received_total(), COUNT);
}
