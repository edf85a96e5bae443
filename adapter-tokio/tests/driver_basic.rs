//! Two and three nodes on the embedded registry over real TCP: exact payloads both ways,
//! outcomes, order, relaying through a proxy, hash and round-robin targets.

mod support;

use bytes::Bytes;
use switchboard_core::{ids::NodeId, outcome::Outcome};
use switchboard_tokio::{Received, TargetSpec};

use support::{direct, init_logs, recv_n, start, start_registry, wait_known, within};

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
    assert_eq!(
        got,
        vec![Received {
            from: NodeId(1),
            via: NodeId(1),
            msg_type: 7,
            payload: hello
        }]
    );

    let reply = Bytes::from(vec![0xab; 3000]);
    let outcome = within(
        "b -> a by name",
        b.send(TargetSpec::Name("alpha".into()), 8, reply.clone()),
    )
    .await
    .expect("accepted");
    assert_eq!(outcome, Outcome::Delivered);
    let got = recv_n(&mut a_inbox, 1).await;
    assert_eq!(
        got,
        vec![Received {
            from: NodeId(2),
            via: NodeId(2),
            msg_type: 8,
            payload: reply
        }]
    );

    // Many in flight at once: all delivered, received in send order.
    let mut pending = Vec::new();
    for seq in 0..500u64 {
        let p = within(
            "submit",
            a.submit(TargetSpec::Id(NodeId(2)), 9, support::payload(1, seq, 64)),
        )
        .await
        .expect("accepted");
        pending.push(p);
    }
    for p in pending {
        assert_eq!(within("outcome", p).await, Ok(Outcome::Delivered));
    }
    let got = recv_n(&mut b_inbox, 500).await;
    let seqs: Vec<u64> = got.iter().map(|r| support::parse(&r.payload).1).collect();
    assert_eq!(seqs, (0..500).collect::<Vec<_>>());
    assert!(
        got.iter()
            .all(|r| r.from == NodeId(1) && r.msg_type == 9 && r.payload.len() == 64)
    );

    let metrics = within("metrics", a.metrics()).await.expect("running");
    assert_eq!(metrics.sent, 501);
    assert_eq!(metrics.outcomes.get("delivered"), Some(&501));
    assert_eq!(metrics.received, 1);
    within("shutdown a", a.shutdown()).await.expect("running");
    within("shutdown b", b.shutdown()).await.expect("running");
    registry.kill();
}
