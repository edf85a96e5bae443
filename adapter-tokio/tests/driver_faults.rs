//! Faults under traffic over real TCP: the registry killed and restarted, a proxy killed and
//! replaced, a leaf killed and restarted. Every accepted send gets exactly one outcome, no
//! message is received twice, and traffic resumes.

mod support;

use std::{collections::BTreeSet, time::Duration};

use switchboard_core::{ids::NodeId, outcome::Outcome};

use support::{
    STEP, builder, direct, drain_inbox, duplicates, init_logs, outcomes, seqs_with, start,
    start_registry, start_registry_at, submit_paced, wait_known, wait_links_up, within,
};

const PACE: Duration = Duration::from_millis(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_restart_under_traffic_loses_nothing_and_deletes_no_peer() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let first_epoch = registry.epoch().await;
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    let mut pending = submit_paced(&a, 2, 0..150, PACE).await;
    registry.kill();
    pending.extend(submit_paced(&a, 2, 150..300, PACE).await);
    let registry = start_registry_at(addr).await;
    assert_ne!(
        registry.epoch().await,
        first_epoch,
        "a restarted registry has a new epoch"
    );
    pending.extend(submit_paced(&a, 2, 300..450, PACE).await);
    for node in [&a, &b] {
        let reregistered = node
            .wait_for(STEP, |k| {
                k.registered && k.knows_all(&[NodeId(1), NodeId(2)])
            })
            .await;
        assert!(
            reregistered,
            "node {} re-registered: {:?}",
            node.id(),
            node.known()
        );
    }
    pending.extend(submit_paced(&a, 2, 450..600, PACE).await);

    let outcomes = outcomes(pending).await;
    let delivered = seqs_with(&outcomes, |o| *o == Outcome::Delivered);
    assert_eq!(delivered, (0..600).collect::<BTreeSet<_>>(), "{outcomes:?}");
    let got = drain_inbox(&mut b_inbox, 1, &delivered, Duration::from_millis(200)).await;
    assert_eq!(
        got,
        (0..600).collect::<Vec<_>>(),
        "received once each, in order"
    );

    let entries = within("entries", registry.entries()).await;
    let ids: Vec<u64> = entries.iter().map(|e| e.discovery.id.0).collect();
    assert_eq!(ids, vec![1, 2]);
    assert_eq!(entries[0].incarnation, a.incarnation());
    assert_eq!(entries[1].incarnation, b.incarnation());
    for node in [&a, &b] {
        let m = within("metrics", node.metrics()).await.expect("running");
        assert_eq!(
            m.discovery_deletes,
            0,
            "node {} saw a peer deleted",
            node.id()
        );
        assert_eq!(m.registrations, 2, "node {} registered twice", node.id());
    }
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_proxy_is_replaced_and_every_send_gets_one_outcome() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (proxy, _p_inbox) = start(builder(addr, 10, "proxy")).await;
    let (l1, _l1_inbox) = start(builder(addr, 11, "leaf-1").upstream(NodeId(10))).await;
    let (l2, mut l2_inbox) = start(builder(addr, 12, "leaf-2").upstream(NodeId(10))).await;
    for node in [&l1, &l2] {
        wait_known(node, &[10, 11, 12]).await;
    }
    wait_links_up(&proxy, &[11, 12]).await;

    let mut pending = submit_paced(&l1, 12, 0..150, PACE).await;
    proxy.kill();
    pending.extend(submit_paced(&l1, 12, 150..250, PACE).await);
    let (proxy2, _p2_inbox) = start(builder(addr, 10, "proxy")).await;
    assert_ne!(proxy2.incarnation(), proxy.incarnation());
    wait_links_up(&proxy2, &[11, 12]).await;
    pending.extend(submit_paced(&l1, 12, 250..400, PACE).await);

    let outcomes = outcomes(pending).await;
    assert_eq!(outcomes.len(), 400);
    assert!(
        outcomes.iter().all(|(_, o)| o.is_ok()),
        "every send of a live node gets an outcome: {outcomes:?}"
    );
    let delivered = seqs_with(&outcomes, |o| *o == Outcome::Delivered);
    let failed = seqs_with(&outcomes, |o| o.is_failed());
    assert!(
        (250..400).all(|s| delivered.contains(&s)),
        "sends after the new proxy is up are delivered: {outcomes:?}"
    );
    let got = drain_inbox(&mut l2_inbox, 11, &delivered, Duration::from_millis(300)).await;
    assert_eq!(
        duplicates(&got),
        Vec::<u64>::new(),
        "no message received twice"
    );
    let received: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(
        received.intersection(&failed).count(),
        0,
        "a message reported failed was received"
    );
    let m = within("metrics", l1.metrics()).await.expect("running");
    assert_eq!(m.outcomes.values().sum::<u64>(), 400);
    assert_eq!(m.sent, 400);
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_leaf_gets_traffic_again_without_duplicates() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (proxy, _p_inbox) = start(builder(addr, 10, "proxy")).await;
    let (l1, _l1_inbox) = start(builder(addr, 11, "leaf-1").upstream(NodeId(10))).await;
    let (l2, mut l2_inbox) = start(builder(addr, 12, "leaf-2").upstream(NodeId(10))).await;
    wait_known(&l1, &[10, 11, 12]).await;
    wait_links_up(&proxy, &[11, 12]).await;

    let mut pending = submit_paced(&l1, 12, 0..150, PACE).await;
    l2.kill();
    pending.extend(submit_paced(&l1, 12, 150..250, PACE).await);
    let (l2b, mut l2b_inbox) = start(builder(addr, 12, "leaf-2").upstream(NodeId(10))).await;
    assert_ne!(l2b.incarnation(), l2.incarnation());
    wait_links_up(&proxy, &[11, 12]).await;
    assert!(
        l1.wait_for(STEP, |k| k.discovery.get(&NodeId(12)).is_some_and(|a| {
            a.first().map(String::as_str) == Some(&format!("atcp://{}", l2b.local_addr()))
        }))
        .await
    );
    pending.extend(submit_paced(&l1, 12, 250..400, PACE).await);

    let outcomes = outcomes(pending).await;
    assert!(outcomes.iter().all(|(_, o)| o.is_ok()), "{outcomes:?}");
    let delivered = seqs_with(&outcomes, |o| *o == Outcome::Delivered);
    let failed = seqs_with(&outcomes, |o| o.is_failed());
    assert!(
        (250..400).all(|s| delivered.contains(&s)),
        "sends after the restart are delivered: {outcomes:?}"
    );
    // The old life's inbox ends (its driver is gone); the new one gets the rest.
    let mut old = Vec::new();
    while let Some(msg) = within("old inbox", l2_inbox.recv()).await {
        old.push(support::parse(&msg.payload).1);
    }
    let new_must: BTreeSet<u64> = delivered
        .iter()
        .filter(|s| !old.contains(s))
        .copied()
        .collect();
    let new = drain_inbox(&mut l2b_inbox, 11, &new_must, Duration::from_millis(300)).await;
    let all: Vec<u64> = old.iter().chain(&new).copied().collect();
    assert_eq!(
        duplicates(&all),
        Vec::<u64>::new(),
        "old {old:?} new {new:?}"
    );
    let received: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(received.intersection(&failed).count(), 0);
    assert_eq!(
        within("l2 status", l2.status()).await,
        Err(switchboard_tokio::node::Stopped)
    );
    registry.kill();
}
