//! Two and three nodes on the embedded registry over real TCP: exact payloads both ways,
//! outcomes, order, relaying through a proxy, hash and round-robin targets.

mod support;

use bytes::Bytes;
use switchboard_core::{
    discovery::{Filter, Metadata},
    ids::NodeId,
    outcome::Outcome,
    ring::{RingConfig, RingMember, RingSet},
};
use switchboard_tokio::{Received, TargetSpec};

use support::{
    STEP, builder, direct, init_logs, parse, payload, recv_n, start, start_registry, wait_known,
    wait_links_up, within,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_exchange_exact_payloads_in_order() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    wait_known(&b, &[1, 2]).await;

    let hello = Bytes::from_static(b"hello beta \x00\xff");
    let outcome = within(
        "a -> b",
        a.send(TargetSpec::Id(NodeId(2)), 7, hello.clone()),
    )
    .await
    .expect("accepted");
    assert_eq!(outcome, Outcome::Delivered);
    let got = recv_n(&mut b_inbox, 1).await;
    assert_eq!(got, vec![Received::new(NodeId(1), NodeId(1), 7, hello)]);

    let reply = Bytes::from(vec![0xab; 3000]);
    let outcome = within(
        "b -> a by name",
        b.send(TargetSpec::Name("alpha".into()), 8, reply.clone()),
    )
    .await
    .expect("accepted");
    assert_eq!(outcome, Outcome::Delivered);
    let got = recv_n(&mut a_inbox, 1).await;
    assert_eq!(got, vec![Received::new(NodeId(2), NodeId(2), 8, reply)]);

    // Many in flight at once: all delivered, received in send order.
    let mut pending = Vec::new();
    for seq in 0..500u64 {
        let p = within(
            "submit",
            a.submit(TargetSpec::Id(NodeId(2)), 9, payload(1, seq, 64)),
        )
        .await
        .expect("accepted");
        pending.push(p);
    }
    for p in pending {
        assert_eq!(within("outcome", p).await, Ok(Outcome::Delivered));
    }
    let got = recv_n(&mut b_inbox, 500).await;
    let seqs: Vec<u64> = got.iter().map(|r| parse(&r.payload).1).collect();
    assert_eq!(seqs, (0..500).collect::<Vec<_>>());
    assert!(
        got.iter()
            .all(|r| r.from == NodeId(1) && r.msg_type == 9 && r.payload.len() == 64)
    );

    let metrics = within("metrics", a.metrics()).await.expect("running");
    assert_eq!(metrics.sent, 501);
    assert_eq!(metrics.outcomes.get("delivered"), Some(&501));
    assert_eq!(metrics.received, 1);
    // Every delivery is timed once, from the accepted send to its outcome.
    let latency = &metrics.delivery_latency;
    assert_eq!(latency.count, 501);
    assert_eq!(latency.buckets.iter().sum::<u64>(), 501);
    assert!(latency.sum_nanos > 0);
    let b_metrics = within("metrics", b.metrics()).await.expect("running");
    assert_eq!(b_metrics.delivery_latency.count, 1);
    assert_eq!(b_metrics.delivery_latency.buckets.iter().sum::<u64>(), 1);
    within("shutdown a", a.shutdown()).await.expect("running");
    within("shutdown b", b.shutdown()).await.expect("running");
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaves_talk_through_their_proxy_and_follow_an_upstream_switch() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (p1, _p1_inbox) = start(direct(addr, 10, "proxy-1")).await;
    let (p2, _p2_inbox) = start(direct(addr, 20, "proxy-2")).await;
    let (l1, mut l1_inbox) = start(builder(addr, 11, "leaf-1").upstream(NodeId(10))).await;
    let (l2, mut l2_inbox) = start(builder(addr, 12, "leaf-2").upstream(NodeId(10))).await;
    for node in [&p1, &p2, &l1, &l2] {
        wait_known(node, &[10, 20, 11, 12]).await;
    }

    for seq in 0..20 {
        let outcome = within(
            "l1 -> l2",
            l1.send(TargetSpec::Id(NodeId(12)), 1, payload(11, seq, 32)),
        )
        .await;
        assert_eq!(outcome, Ok(Outcome::Delivered));
    }
    let outcome = within(
        "l2 -> l1",
        l2.send(TargetSpec::Id(NodeId(11)), 2, payload(12, 0, 32)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = recv_n(&mut l2_inbox, 20).await;
    for (seq, r) in got.iter().enumerate() {
        assert_eq!((r.from, r.via, r.msg_type), (NodeId(11), NodeId(10), 1));
        assert_eq!(r.payload, payload(11, seq as u64, 32));
    }
    let got = recv_n(&mut l1_inbox, 1).await;
    assert_eq!((got[0].from, got[0].via), (NodeId(12), NodeId(10)));
    let status = within("l1 status", l1.status()).await.expect("running");
    assert_eq!(status.upstream, 10);
    assert!(
        status.links.iter().all(|l| l.peer == Some(10)),
        "{status:?}"
    );

    // The switch goes through the registry: the core applies the echoed own record. Both
    // leaves move to proxy-2, which then carries their traffic.
    for leaf in [&l1, &l2] {
        within("set upstream", leaf.set_upstream(NodeId(20)))
            .await
            .expect("running");
        assert!(
            leaf.wait_for(STEP, |k| k.upstream == 20).await,
            "{:?}",
            leaf.known()
        );
    }
    wait_links_up(&p2, &[11, 12]).await;
    let outcome = within(
        "l1 -> l2 after the switch",
        l1.send(TargetSpec::Id(NodeId(12)), 3, payload(11, 100, 32)),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = recv_n(&mut l2_inbox, 1).await;
    assert_eq!(
        (got[0].from, got[0].via, got[0].msg_type),
        (NodeId(11), NodeId(20), 3)
    );

    for node in [&l1, &l2, &p1, &p2] {
        within("shutdown", node.shutdown()).await.expect("running");
    }
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_and_round_robin_targets_pick_what_the_core_rings_pick() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let worker_ids = [31u64, 32, 33];
    let mut workers = Vec::new();
    for id in worker_ids {
        let node = start(direct(addr, id, &format!("worker-{id}")).label("role", "worker")).await;
        workers.push(node);
    }
    let (client, _client_inbox) = start(direct(addr, 30, "client").label("role", "client")).await;
    wait_known(&client, &[30, 31, 32, 33]).await;

    let mut labels = std::collections::BTreeMap::new();
    labels.insert("role".to_owned(), "worker".to_owned());
    let worker_meta = Metadata {
        labels: labels.into(),
        ..Metadata::default()
    };
    let filter = Filter(worker_meta.clone());

    // Round robin: 30 sends hit each worker exactly 10 times, cycling in a fixed order.
    for seq in 0..30 {
        let target = TargetSpec::RoundRobin {
            filter: Some(filter.clone()),
        };
        let outcome = within("rr send", client.send(target, 5, payload(30, seq, 16))).await;
        assert_eq!(outcome, Ok(Outcome::Delivered));
    }
    let mut residues = Vec::new();
    for (_, inbox) in &mut workers {
        let got = recv_n(inbox, 10).await;
        let seqs: Vec<u64> = got.iter().map(|r| parse(&r.payload).1).collect();
        let residue = seqs[0] % 3;
        assert_eq!(
            seqs,
            (0..10).map(|k| residue + 3 * k).collect::<Vec<_>>(),
            "one worker's share of the round robin"
        );
        residues.push(residue);
    }
    residues.sort_unstable();
    assert_eq!(residues, vec![0, 1, 2]);

    // Hash: every key lands where the core's ring over the same members puts it.
    let mut rings = RingSet::new(RingConfig::default());
    let fid = rings.add_filter(filter.clone());
    for id in worker_ids {
        rings
            .insert(
                RingMember::new(NodeId(id), &format!("worker-{id}")),
                &worker_meta,
            )
            .expect("fits");
    }
    let mut expected: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for key in 0..40u64 {
        let key_bytes = key.to_le_bytes();
        let owner = rings
            .ring(Some(fid))
            .lookup(&key_bytes)
            .expect("non-empty ring");
        expected.entry(owner.0).or_default().push(key);
        let target = TargetSpec::Hash {
            filter: Some(filter.clone()),
            key: key_bytes.to_vec(),
        };
        let outcome = within("hash send", client.send(target, 6, payload(30, key, 16))).await;
        assert_eq!(outcome, Ok(Outcome::Delivered));
    }
    for (id, (_, inbox)) in worker_ids.iter().zip(&mut workers) {
        let want = expected.remove(id).unwrap_or_default();
        let got = recv_n(inbox, want.len()).await;
        let keys: Vec<u64> = got.iter().map(|r| parse(&r.payload).1).collect();
        assert_eq!(keys, want, "keys owned by worker {id}");
        assert!(got.iter().all(|r| r.msg_type == 6));
    }
    let metrics = within("metrics", client.metrics()).await.expect("running");
    assert_eq!(metrics.outcomes.get("delivered"), Some(&70));
    assert_eq!(metrics.received, 0);
    for ((node, _), id) in workers.iter().zip(worker_ids) {
        let m = within("metrics", node.metrics()).await.expect("running");
        let hashed = 40
            - (0..40u64)
                .filter(|k| rings.ring(Some(fid)).lookup(&k.to_le_bytes()) != Some(NodeId(id)))
                .count() as u64;
        assert_eq!(m.received, 10 + hashed, "worker {id}");
    }
    registry.kill();
}

/// A `submit` whose future is dropped before the node looked at the message withdraws it: it
/// is never sent (its outcome could reach no one). One thread: the driver cannot take the
/// command between its queueing and the drop.
#[tokio::test(flavor = "current_thread")]
async fn a_submit_dropped_before_the_node_looked_at_it_is_withdrawn() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (_b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;

    // Polled once: the command is queued, the answer is awaited; then the future is dropped.
    let mut withdrawn = Box::pin(a.submit(
        TargetSpec::Id(NodeId(2)),
        7,
        Bytes::from_static(b"withdrawn"),
    ));
    let first =
        std::future::poll_fn(|cx| std::task::Poll::Ready(withdrawn.as_mut().poll(cx))).await;
    assert!(
        first.is_pending(),
        "the submit was answered without the driver"
    );
    drop(withdrawn);
    let outcome = within(
        "send",
        a.send(TargetSpec::Id(NodeId(2)), 8, Bytes::from_static(b"kept")),
    )
    .await;
    assert_eq!(outcome, Ok(Outcome::Delivered));
    let got = recv_n(&mut b_inbox, 1).await;
    assert_eq!((got[0].msg_type, &got[0].payload[..]), (8, &b"kept"[..]));
    assert_eq!(a.metrics().await.expect("running").sent, 1);
}
