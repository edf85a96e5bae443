//! The streaming API over real loopback TCP and the embedded registry: a `Poster`'s
//! messages (one by one and in bursts) arrive byte for byte and each ticket gets exactly one
//! outcome, refusals come back on the stream with their ticket, the stream ends after the
//! poster is dropped (and when the node stops), `Inbox::recv_many` hands out what waits up
//! to its limit, and `serve_inline` answers calls on the driver task until it is dropped.

mod support;

use std::time::Duration;

use bytes::Bytes;
use switchboard_core::{
    CallOutcome, CallSpec, FailReason, ids::NodeId, node::SendError, outcome::Outcome,
};
use switchboard_tokio::{NodeHandle, PostReport, Received, TargetSpec};

use support::{direct, init_logs, start, start_registry, wait_known, within};

const MSG_TYPE: u32 = 0x51;

/// Reads `n` outcome reports (bounded), in the order they came.
async fn reports(outcomes: &mut switchboard_tokio::PostOutcomes, n: usize) -> Vec<PostReport> {
    let mut got = Vec::new();
    while got.len() < n {
        let before = got.len();
        let taken = within("outcomes", outcomes.recv_many(&mut got)).await;
        assert!(taken > 0, "the stream ended after {before} of {n} outcomes");
        assert_eq!(got.len(), before + taken);
    }
    got
}

fn body(i: u8) -> Bytes {
    Bytes::from(vec![i, 0xAB, i.wrapping_mul(7), 0x00, 0xFF])
}

/// Two nodes on one registry, `a` knowing `b`.
async fn pair(
    a: u64,
    b: u64,
) -> (
    switchboard_tokio::registry::RegistryHandle,
    NodeHandle,
    NodeHandle,
    switchboard_tokio::Inbox,
) {
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (sender, _) = start(direct(addr, a, "sender")).await;
    let (receiver, inbox) = start(direct(addr, b, "receiver")).await;
    wait_known(&sender, &[a, b]).await;
    (registry, sender, receiver, inbox)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posted_messages_arrive_exactly_and_every_ticket_has_one_outcome() {
    init_logs();
    let (_registry, sender, _receiver, mut inbox) = pair(0x61, 0x62).await;
    let (mut poster, mut outcomes) = within("poster", sender.poster()).await.expect("running");
    let to = || TargetSpec::Id(NodeId(0x62));
    for i in 0..3u8 {
        let ticket = within("post", poster.post(to(), MSG_TYPE, body(i)))
            .await
            .expect("queued");
        assert_eq!(ticket, u64::from(i));
    }
    let burst = (3..8u8).map(|i| (to(), MSG_TYPE, body(i)));
    let tickets = within("post_many", poster.post_many(burst))
        .await
        .expect("queued");
    assert_eq!(tickets, 3..8);
    assert_eq!(poster.next_ticket(), 8);
    // An empty burst takes no ticket.
    let none = within("post_many", poster.post_many(Vec::new()))
        .await
        .expect("queued");
    assert_eq!(none, 8..8);

    let mut got = reports(&mut outcomes, 8).await;
    got.sort_by_key(|r| r.ticket);
    let expected: Vec<PostReport> = (0..8)
        .map(|ticket| PostReport::new(ticket, Ok(Outcome::Delivered)))
        .collect();
    assert_eq!(got, expected);

    let mut received: Vec<Received> = Vec::new();
    while received.len() < 8 {
        let taken = within("inbox", inbox.recv_many(&mut received, 100)).await;
        assert!(taken > 0, "the inbox ended");
    }
    let expected: Vec<Received> = (0..8u8)
        .map(|i| Received::new(NodeId(0x61), NodeId(0x61), MSG_TYPE, body(i)))
        .collect();
    assert_eq!(received, expected, "in order, byte for byte, once each");

    // Dropped with nothing in flight: the stream ends at once.
    drop(poster);
    assert_eq!(within("stream end", outcomes.recv()).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_come_back_on_the_stream_with_their_ticket() {
    init_logs();
    let (_registry, sender, _receiver, mut inbox) = pair(0x63, 0x64).await;
    let (mut poster, mut outcomes) = within("poster", sender.poster()).await.expect("running");
    let burst = vec![
        (TargetSpec::Id(NodeId(0)), MSG_TYPE, body(1)),
        (TargetSpec::Id(NodeId(0x64)), MSG_TYPE, body(2)),
        (
            TargetSpec::Id(NodeId(0x64)),
            switchboard_core::wire::RPC_MSG_TYPE,
            body(3),
        ),
    ];
    within("post_many", poster.post_many(burst))
        .await
        .expect("queued");
    drop(poster);
    let mut got = Vec::new();
    while let Some(report) = within("outcome", outcomes.recv()).await {
        got.push(report);
    }
    got.sort_by_key(|r| r.ticket);
    assert_eq!(
        got,
        vec![
            PostReport::new(0, Err(SendError::InvalidTarget)),
            PostReport::new(1, Ok(Outcome::Delivered)),
            PostReport::new(2, Err(SendError::ReservedType)),
        ],
        "the stream ended after the last owed outcome"
    );
    let msg = within("inbox", inbox.recv()).await.expect("running");
    assert_eq!(
        msg,
        Received::new(NodeId(0x63), NodeId(0x63), MSG_TYPE, body(2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recv_many_takes_what_waits_up_to_its_limit() {
    init_logs();
    let (_registry, sender, _receiver, mut inbox) = pair(0x65, 0x66).await;
    let (mut poster, mut outcomes) = within("poster", sender.poster()).await.expect("running");
    let burst = (0..10u8).map(|i| (TargetSpec::Id(NodeId(0x66)), MSG_TYPE, body(i)));
    within("post_many", poster.post_many(burst))
        .await
        .expect("queued");
    // Every message is acknowledged, so every one waits in the receiver's inbox.
    let acked = reports(&mut outcomes, 10).await;
    assert!(acked.iter().all(|r| r.outcome == Ok(Outcome::Delivered)));
    let mut taken = Vec::new();
    assert_eq!(within("recv_many", inbox.recv_many(&mut taken, 4)).await, 4);
    assert_eq!(within("recv_many", inbox.recv_many(&mut taken, 4)).await, 4);
    assert_eq!(within("recv_many", inbox.recv_many(&mut taken, 4)).await, 2);
    let payloads: Vec<Bytes> = taken.into_iter().map(|m| m.payload).collect();
    assert_eq!(payloads, (0..10u8).map(body).collect::<Vec<_>>());
    assert_eq!(
        within("limit 0", inbox.recv_many(&mut Vec::new(), 0)).await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_node_refuses_posts_and_ends_the_stream() {
    init_logs();
    let (_registry, sender, _receiver, _inbox) = pair(0x67, 0x68).await;
    let (mut poster, mut outcomes) = within("poster", sender.poster()).await.expect("running");
    within("shutdown", sender.shutdown())
        .await
        .expect("running");
    assert!(
        within(
            "post",
            poster.post(TargetSpec::Id(NodeId(0x68)), MSG_TYPE, body(0))
        )
        .await
        .is_err(),
        "a stopped node takes no post"
    );
    assert_eq!(within("stream end", outcomes.recv()).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_inline_answers_on_the_driver_until_dropped() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x69, "client")).await;
    let (server, _) = start(direct(addr, 0x6a, "server")).await;
    let serving = within(
        "serve_inline",
        server.serve_inline("inline.echo", |request| {
            let mut answer = b"inline:".to_vec();
            answer.extend_from_slice(&request.from.0.to_le_bytes());
            answer.extend_from_slice(request.payload);
            Bytes::from(answer)
        }),
    )
    .await
    .expect("served");
    assert_eq!(serving.method(), "inline.echo");
    wait_known(&client, &[0x69, 0x6a]).await;
    let call = |payload: &'static [u8]| {
        CallSpec::new("inline.echo", Bytes::from_static(payload))
            .timeout(Duration::from_secs(10))
            .grace(Duration::from_secs(5))
    };
    for payload in [&b"ping"[..], b"", b"\x00\xff bytes"] {
        let outcome = within("call", client.call(call(payload)))
            .await
            .expect("accepted");
        let mut expected = b"inline:".to_vec();
        expected.extend_from_slice(&0x69u64.to_le_bytes());
        expected.extend_from_slice(payload);
        assert_eq!(outcome, CallOutcome::Reply(Bytes::from(expected)));
    }
    // A bad method name is refused, nothing served.
    assert!(
        within(
            "bad",
            server.serve_inline("bad name", |r| r.payload.clone())
        )
        .await
        .is_err()
    );
    // Dropped: the method is no longer served. Until the client sees the server's new
    // record its calls reach the server and are refused there (`NotServed`); then they wait
    // out their grace (`NotAvailable`). Never a reply.
    drop(serving);
    let gone = CallSpec::new("inline.echo", Bytes::from_static(b"late"))
        .timeout(Duration::from_secs(10))
        .grace(Duration::from_millis(300));
    within("call after unserve", async {
        loop {
            match client.call(gone.clone()).await.expect("accepted") {
                CallOutcome::Failed(FailReason::NotAvailable) => return,
                CallOutcome::Failed(FailReason::NotServed) => {}
                other => panic!("after unserve: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}
