//! A node's life over real TCP: graceful shutdown (every outcome reported, the registry
//! removes the node at once), kill (no goodbye, outcome futures end `Stopped`, the port is
//! released), and a duplicate id refused by the registry without harming the holder.

mod support;

use std::{collections::BTreeSet, time::Duration};

use bytes::Bytes;
use switchboard_core::{
    ids::NodeId,
    outcome::{FailReason, Outcome},
};
use switchboard_tokio::{NotRegistered, SendFailure, TargetSpec, node::Stopped};

use support::{
    STEP, direct, drain_inbox, init_logs, outcomes, payload, recv_n, seqs_with, start,
    start_registry, submit_paced, wait_known, within,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_reports_every_outcome_and_unregisters_at_once() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    // Node 99 is unknown: its messages wait for its discovery record.
    let waiting = submit_paced(&a, 99, 0..20, Duration::ZERO).await;
    let to_b = submit_paced(&a, 2, 0..50, Duration::ZERO).await;
    within("shutdown", a.shutdown()).await.expect("running");

    let waiting = outcomes(waiting).await;
    assert_eq!(
        waiting,
        (0..20)
            .map(|s| (s, Ok(Outcome::Failed(FailReason::Shutdown))))
            .collect::<Vec<_>>()
    );
    let to_b = outcomes(to_b).await;
    assert!(to_b.iter().all(|(_, o)| o.is_ok()), "{to_b:?}");
    let delivered = seqs_with(&to_b, |o| *o == Outcome::Delivered);
    let failed = seqs_with(&to_b, |o| o.is_failed());
    let got = drain_inbox(&mut b_inbox, 1, &delivered, Duration::from_millis(200)).await;
    let received: BTreeSet<u64> = got.iter().copied().collect();
    assert_eq!(got.len(), received.len(), "no duplicates");
    assert_eq!(received.intersection(&failed).count(), 0);

    // The registry removed the node at once (its protection is 20 s) and told the others.
    assert!(
        b.wait_for(Duration::from_secs(5), |k| !k
            .discovery
            .contains_key(&NodeId(1)))
            .await,
        "{:?}",
        b.known()
    );
    let entries = within("entries", registry.entries()).await;
    assert_eq!(
        entries.iter().map(|e| e.discovery.id.0).collect::<Vec<_>>(),
        vec![2]
    );
    let m = within("metrics", b.metrics()).await.expect("running");
    assert_eq!(m.discovery_deletes, 1);

    // The stopped node refuses everything and its inbox ends.
    let refused = a
        .send(TargetSpec::Id(NodeId(2)), 1, Bytes::from_static(b"late"))
        .await;
    assert_eq!(refused, Err(SendFailure::Stopped));
    assert_eq!(within("status", a.status()).await, Err(Stopped));
    assert_eq!(within("shutdown twice", a.shutdown()).await, Err(Stopped));
    assert_eq!(within("inbox end", a_inbox.recv()).await, None);
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_drops_everything_without_unregistering() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, _b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&b, &[1, 2]).await;
    let listen = a.local_addr();

    let waiting = submit_paced(&a, 99, 0..5, Duration::ZERO).await;
    a.kill();
    let waiting = outcomes(waiting).await;
    assert_eq!(
        waiting,
        (0..5).map(|s| (s, Err(Stopped))).collect::<Vec<_>>()
    );
    assert_eq!(within("inbox end", a_inbox.recv()).await, None);
    assert_eq!(within("status", a.status()).await, Err(Stopped));

    // The port is free again.
    within("rebind the killed node's port", async {
        loop {
            if std::net::TcpListener::bind(listen).is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    // No goodbye: the registry keeps the node listed as suspect, and peers keep it.
    within("registry notices the close", async {
        loop {
            let entries = registry.entries().await;
            if entries
                .iter()
                .any(|e| e.discovery.id == NodeId(1) && e.lost_for.is_some())
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(b.known().discovery.contains_key(&NodeId(1)));
    let m = within("metrics", b.metrics()).await.expect("running");
    assert_eq!(m.discovery_deletes, 0);
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_id_is_refused_and_the_holder_is_unaffected() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, _b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    let (impostor, _i_inbox) = start(direct(addr, 1, "alpha")).await;
    assert_ne!(impostor.incarnation(), a.incarnation());
    within("conflict reported", async {
        loop {
            let m = impostor.metrics().await.expect("running");
            if m.registry_conflicts > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let status = within("status", impostor.status()).await.expect("running");
    assert!(!status.registered);
    assert!(!impostor.known().registered);
    // The refusal ends the wait at once, naming the holder.
    assert_eq!(
        within("refused", impostor.wait_registered(STEP)).await,
        Err(NotRegistered::Refused {
            reason: format!("id held by incarnation {}", a.incarnation())
        })
    );

    let entries = within("entries", registry.entries()).await;
    let holder: Vec<(u64, u64, Vec<String>)> = entries
        .iter()
        .filter(|e| e.discovery.id == NodeId(1))
        .map(|e| (e.discovery.id.0, e.incarnation, e.discovery.listen.clone()))
        .collect();
    let a_listen = format!("atcp://{}", a.local_addr());
    assert_eq!(holder, vec![(1, a.incarnation(), vec![a_listen.clone()])]);
    assert!(a.known().registered);
    assert_eq!(
        b.known().discovery.get(&NodeId(1)),
        Some(&vec![a_listen]),
        "peers still see the holder's address"
    );
    let outcome = within(
        "b -> holder",
        b.send(TargetSpec::Id(NodeId(1)), 4, payload(2, 0, 24)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = recv_n(&mut a_inbox, 1).await;
    assert_eq!(got[0].payload, payload(2, 0, 24));
    impostor.kill();
    assert_eq!(a.wait_registered(STEP).await, Ok(()));
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_shut_down_gracefully_leaves_the_views_and_a_new_one_takes_over() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    within("registry shutdown", registry.shutdown()).await;
    for node in [&a, &b] {
        assert!(node.wait_for(STEP, |k| !k.registered).await);
        assert!(
            node.known().knows_all(&[NodeId(1), NodeId(2)]),
            "the view is kept"
        );
    }
    let outcome = within(
        "a -> b without a registry",
        a.send(TargetSpec::Id(NodeId(2)), 1, payload(1, 0, 16)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    assert_eq!(recv_n(&mut b_inbox, 1).await[0].payload, payload(1, 0, 16));

    let registry = support::start_registry_at(addr).await;
    for node in [&a, &b] {
        assert_eq!(node.wait_registered(STEP).await, Ok(()));
    }
    within("both listed again", async {
        loop {
            let ids: Vec<u64> = registry
                .entries()
                .await
                .iter()
                .map(|e| e.discovery.id.0)
                .collect();
            if ids == [1, 2] {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for node in [&a, &b] {
        let m = within("metrics", node.metrics()).await.expect("running");
        assert_eq!(m.discovery_deletes, 0);
        assert_eq!(m.registrations, 2);
    }
    registry.kill();
}

/// A node with a registry listening on a wildcard address with nothing to publish instead is
/// refused at start, before anything is bound (issue 24 item 4: it published loopback, which
/// no other host reaches).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_listen_without_advertise_is_refused() {
    let registry = start_registry().await;
    let wildcard = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    let refused = switchboard_tokio::NodeBuilder::new(NodeId(71), "wild")
        .listen(wildcard)
        .registry(registry.local_addr())
        .start()
        .await;
    match refused {
        Err(e @ switchboard_tokio::StartError::WildcardWithoutAdvertise { addr }) => {
            assert_eq!(addr, wildcard);
            assert_eq!(
                e.to_string(),
                "listening on 0.0.0.0:0 (a wildcard address) would publish loopback to other \
                 hosts: give advertise, the address other hosts reach this node at"
            );
        }
        other => panic!("{other:?}"),
    }
}
