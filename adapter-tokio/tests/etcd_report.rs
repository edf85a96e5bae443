//! The etcd backend's figures on loopback, printed, with the targets asserted loosely (2x
//! slack: the machine may be loaded; exact figures are what the printout is for):
//!
//! - a topology change (an upstream switch) reaches every watching node's route decision:
//!   target p99 ≤ 50 ms (asserted ≤ 100 ms);
//! - 200 nodes registering at once: every one sees all 200 within 1 s of the last
//!   registration (asserted ≤ 2 s);
//! - topology-only changes cause zero ring updates (asserted exactly).
//!
//! `scripts/test` runs this binary on its own after the other tests, so that the figures
//! are not disturbed by them.

#![cfg(feature = "etcd")]

mod etcd_support;

use std::time::Duration;

use etcd_support::{
    EtcdServer,
    feed::{Backend, registration},
    node::{STEP, direct_on_etcd, on_etcd, start, wait_known, within},
};
use switchboard_core::ids::NodeId;
use switchboard_tokio::{NodeHandle, registry::FeedEvent};
use tokio::time::Instant;

const WATCHERS: u64 = 10;
const SWITCHES: usize = 50;
const REGISTERING: u64 = 200;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One node switches its upstream between two proxies 50 times; ten other nodes watch.
/// Each latency is from `set_upstream` to the moment the watcher's core applied the new
/// upstream (its route decisions use it from then on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_topology_change_latency_and_ring_updates() {
    let etcd = EtcdServer::start().await;
    let (p1, _i1) = start(direct_on_etcd(&etcd, "/sb/", 1, "proxy-1")).await;
    let (p2, _i2) = start(direct_on_etcd(&etcd, "/sb/", 2, "proxy-2")).await;
    let (mover, _im) = start(on_etcd(&etcd, "/sb/", 3, "mover").upstream(NodeId(1))).await;
    let mut watchers: Vec<NodeHandle> = Vec::new();
    let mut inboxes = Vec::new();
    for i in 0..WATCHERS {
        let id = 100 + i;
        let (node, inbox) =
            start(on_etcd(&etcd, "/sb/", id, &format!("watcher-{id}")).upstream(NodeId(1))).await;
        watchers.push(node);
        inboxes.push(inbox);
    }
    let mut everyone: Vec<u64> = vec![1, 2, 3];
    everyone.extend((0..WATCHERS).map(|i| 100 + i));
    for node in watchers.iter().chain([&p1, &p2, &mover]) {
        wait_known(node, &everyone).await;
    }
    let rings_before = ring_updates(&watchers).await;

    let mut latencies = Vec::new();
    for switch in 0..SWITCHES {
        let to = if switch % 2 == 0 { 2 } else { 1 };
        let waits: Vec<_> = watchers
            .iter()
            .map(|w| {
                let w = w.clone();
                tokio::spawn(async move {
                    let seen = w
                        .wait_for(STEP, |k| k.topology.get(&NodeId(3)) == Some(&NodeId(to)))
                        .await;
                    (seen, Instant::now())
                })
            })
            .collect();
        // Let every waiter subscribe before the switch starts.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        within("set upstream", mover.set_upstream(NodeId(to)))
            .await
            .expect("running");
        for wait in waits {
            let (seen, at) = within("watcher", wait).await.expect("the waiter");
            assert!(seen, "switch {switch} not seen");
            latencies.push(at.saturating_duration_since(started));
        }
    }
    latencies.sort_unstable();
    let rings_after = ring_updates(&watchers).await;
    let p50 = percentile(&latencies, 0.50);
    let p99 = percentile(&latencies, 0.99);
    let max = latencies[latencies.len() - 1];
    println!(
        "etcd report: topology change -> route decision over {} samples ({SWITCHES} switches x \
         {WATCHERS} watching nodes): p50 {p50:?}, p99 {p99:?}, max {max:?} (target p99 <= 50ms)",
        latencies.len()
    );
    let extra: Vec<u64> = rings_after
        .iter()
        .zip(&rings_before)
        .map(|(after, before)| after - before)
        .collect();
    println!(
        "etcd report: ring updates caused by {SWITCHES} topology-only changes, per watching node: \
         {extra:?} (target 0)"
    );
    assert_eq!(
        rings_after, rings_before,
        "topology-only changes touched a ring"
    );
    assert!(
        p99 <= Duration::from_millis(100),
        "p99 {p99:?} over twice the 50 ms target"
    );
    for node in watchers.iter().chain([&mover, &p1, &p2]) {
        within("shutdown", node.shutdown()).await.expect("running");
    }
}

async fn ring_updates(nodes: &[NodeHandle]) -> Vec<u64> {
    let mut out = Vec::new();
    for node in nodes {
        out.push(
            within("metrics", node.metrics())
                .await
                .expect("running")
                .ring_updates,
        );
    }
    out
}

/// 200 backends start at once (200 clients, 800 streams on one etcd). Each records when its
/// registration txn answered and when its view first held all 200 nodes; the figure is the
/// last view completed minus the last registration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_two_hundred_nodes_see_each_other() {
    let etcd = EtcdServer::start().await;
    let started = Instant::now();
    let tasks: Vec<_> = (0..REGISTERING)
        .map(|i| {
            let options = etcd.options("/sb/");
            tokio::spawn(async move {
                let id = 1000 + i;
                let mut backend =
                    Backend::spawn(options, registration(id, &format!("n{id}"), 0, 20_000, 1));
                let mut announced = false;
                while !announced || backend.view.discovered().len() < REGISTERING as usize {
                    announced |= backend.next().await == FeedEvent::Registered;
                }
                let all_seen = Instant::now();
                let registered = backend.stats.snapshot().registered_at.expect("registered");
                (backend, registered, all_seen)
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(
            tokio::time::timeout(Duration::from_secs(120), task)
                .await
                .expect("every node sees all 200 within 2 minutes")
                .expect("the node task"),
        );
    }
    let last_registered = results.iter().map(|(_, r, _)| *r).max().expect("200 nodes");
    let all_seen = results.iter().map(|(_, _, s)| *s).max().expect("200 nodes");
    let lag = all_seen.saturating_duration_since(last_registered);
    let mut lags: Vec<Duration> = results
        .iter()
        .map(|(_, _, s)| s.saturating_duration_since(last_registered))
        .collect();
    lags.sort_unstable();
    println!(
        "etcd report: {REGISTERING} nodes registering at once: last registered {:?} after the \
         start, every node saw all {REGISTERING} at most {lag:?} after the last registration \
         (p50 {:?}; target <= 1s)",
        last_registered.saturating_duration_since(started),
        percentile(&lags, 0.5)
    );
    for (backend, _, _) in &results {
        assert_eq!(backend.stats.snapshot().map_errors(), 0);
    }
    assert!(
        lag <= Duration::from_secs(2),
        "{lag:?} over twice the 1 s target"
    );
    let shutdowns: Vec<_> = results
        .into_iter()
        .map(|(backend, _, _)| tokio::spawn(backend.shutdown()))
        .collect();
    for shutdown in shutdowns {
        within("shutdown", shutdown)
            .await
            .expect("the shutdown task");
    }
}
