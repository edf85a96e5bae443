//! Flow over real TCP: a full inbox stops the receiver's reads without losing anything, and
//! batched submits keep many messages in flight from one task.

mod support;

use std::time::Duration;

use switchboard_core::{ids::NodeId, node::SendError, outcome::Outcome};
use switchboard_tokio::{NodeHandle, PendingOutcome, SendFailure, TargetSpec};

use support::{
    direct, init_logs, outcomes, parse, payload, recv_n, start, start_registry, wait_known, within,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_inbox_pauses_the_links_and_loses_nothing() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (b, mut b_inbox) = start(direct(addr, 2, "beta").inbox_capacity(4)).await;
    wait_known(&a, &[1, 2]).await;

    // 200 messages of 8 KiB: far more than one read, and the inbox holds 4.
    let batch = (0..200)
        .map(|seq| (TargetSpec::Id(NodeId(2)), 1, payload(1, seq, 8192)))
        .collect();
    let pending = submit_all(&a, batch).await;

    // Nobody reads beta's inbox: beta stops reading, so alpha keeps messages in flight.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = within("b metrics", b.metrics()).await.expect("running");
    assert!(held.received < 200, "beta kept reading: {held:?}");
    let status = within("a status", a.status()).await.expect("running");
    let to_b = status
        .endpoints
        .iter()
        .find(|e| e.id == 2)
        .expect("alpha has an endpoint for beta");
    assert!(to_b.pending + to_b.unacked > 0, "{status:?}");

    // Reading resumes the flow: everything arrives once, in order, and is delivered.
    let got = recv_n(&mut b_inbox, 200).await;
    let seqs: Vec<u64> = got.iter().map(|r| parse(&r.payload).1).collect();
    assert_eq!(seqs, (0..200).collect::<Vec<_>>());
    assert!(
        got.iter()
            .all(|r| r.payload == payload(1, parse(&r.payload).1, 8192))
    );
    let outcomes = outcomes(pending).await;
    assert!(
        outcomes.iter().all(|(_, o)| *o == Ok(Outcome::Delivered)),
        "{outcomes:?}"
    );
    let m = within("b metrics", b.metrics()).await.expect("running");
    assert_eq!(m.received, 200);
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_reports_refusals_in_place() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (_b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;
    let batch = vec![
        (TargetSpec::Id(NodeId(2)), 1, payload(1, 0, 16)),
        (TargetSpec::Name("nobody".into()), 1, payload(1, 1, 16)),
        (TargetSpec::Id(NodeId(0)), 1, payload(1, 2, 16)),
        (TargetSpec::Name("beta".into()), 1, payload(1, 3, 16)),
    ];
    let results = within("batch", a.submit_batch(batch))
        .await
        .expect("running");
    let mut refused = Vec::new();
    let mut pending = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(p) => pending.push((i as u64, p)),
            Err(e) => refused.push((i, e)),
        }
    }
    assert_eq!(
        refused,
        vec![(1, SendError::UnknownTarget), (2, SendError::InvalidTarget)]
    );
    let outcomes = outcomes(pending).await;
    assert_eq!(
        outcomes,
        vec![(0, Ok(Outcome::Delivered)), (3, Ok(Outcome::Delivered))]
    );
    let got = recv_n(&mut b_inbox, 2).await;
    assert_eq!(
        got.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(),
        vec![payload(1, 0, 16), payload(1, 3, 16)]
    );
    let m = within("metrics", a.metrics()).await.expect("running");
    assert_eq!(m.refused.get("unknown_target"), Some(&1));
    assert_eq!(m.refused.get("invalid_target"), Some(&1));
    assert_eq!(m.sent, 2);
    registry.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posted_messages_stream_in_order_and_report_refusals_in_their_futures() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (_b, mut b_inbox) = start(direct(addr, 2, "beta")).await;
    wait_known(&a, &[1, 2]).await;

    let mut posted = Vec::new();
    for seq in 0..2000u64 {
        let target = if seq == 1000 {
            TargetSpec::Name("nobody".into())
        } else {
            TargetSpec::Id(NodeId(2))
        };
        let p = within("post", a.post(target, 3, payload(1, seq, 40)))
            .await
            .expect("running");
        posted.push(p);
    }
    for (seq, p) in posted.into_iter().enumerate() {
        let want = if seq == 1000 {
            Err(SendFailure::Refused(SendError::UnknownTarget))
        } else {
            Ok(Outcome::Delivered)
        };
        assert_eq!(within("posted outcome", p).await, want, "message {seq}");
    }
    let got = recv_n(&mut b_inbox, 1999).await;
    let seqs: Vec<u64> = got.iter().map(|r| parse(&r.payload).1).collect();
    let want: Vec<u64> = (0..2000).filter(|s| *s != 1000).collect();
    assert_eq!(seqs, want);
    let m = within("metrics", a.metrics()).await.expect("running");
    assert_eq!((m.sent, m.refused.get("unknown_target")), (1999, Some(&1)));

    within("shutdown", a.shutdown()).await.expect("running");
    assert_eq!(
        a.post(TargetSpec::Id(NodeId(2)), 3, payload(1, 0, 16))
            .await
            .err(),
        Some(switchboard_tokio::node::Stopped)
    );
    registry.kill();
}

/// The driver hands its inbox over in batches, never more than the bound: an inbox of 3
/// read alternately with `recv` and `recv_many` (limits 1, 2, 5) gets 500 small messages, many
/// per socket read, each once, in order, with its exact bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_hand_over_keeps_order_and_bytes_through_a_small_inbox() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, _a_inbox) = start(direct(addr, 1, "alpha")).await;
    let (_b, mut b_inbox) = start(direct(addr, 2, "beta").inbox_capacity(3)).await;
    wait_known(&a, &[1, 2]).await;

    let batch = (0..500)
        .map(|seq| {
            (
                TargetSpec::Id(NodeId(2)),
                7,
                payload(1, seq, 24 + (seq % 5) as usize),
            )
        })
        .collect();
    let pending = submit_all(&a, batch).await;

    let mut got = Vec::new();
    let limits = [1, 2, 5];
    let mut turn = 0;
    while got.len() < 500 {
        if turn % 2 == 0 {
            got.push(within("recv", b_inbox.recv()).await.expect("running"));
        } else {
            let limit = limits[turn % limits.len()];
            let taken = within("recv_many", b_inbox.recv_many(&mut got, limit)).await;
            assert!(
                (1..=limit).contains(&taken),
                "took {taken} for a limit of {limit}"
            );
        }
        turn += 1;
    }
    assert_eq!(got.len(), 500);
    for (seq, msg) in (0..500u64).zip(&got) {
        assert_eq!(msg.from, NodeId(1));
        assert_eq!(msg.msg_type, 7);
        assert_eq!(
            msg.payload,
            payload(1, seq, 24 + (seq % 5) as usize),
            "message {seq}"
        );
    }
    let outcomes = outcomes(pending).await;
    assert!(
        outcomes.iter().all(|(_, o)| *o == Ok(Outcome::Delivered)),
        "{outcomes:?}"
    );
    registry.kill();
}

/// Submits `batch` as one batch; each message's outcome future with its sequence number.
async fn submit_all(
    node: &NodeHandle,
    batch: Vec<(TargetSpec, u32, bytes::Bytes)>,
) -> Vec<(u64, PendingOutcome)> {
    within("submit batch", node.submit_batch(batch))
        .await
        .expect("running")
        .into_iter()
        .enumerate()
        .map(|(seq, p)| (seq as u64, p.expect("accepted")))
        .collect()
}
