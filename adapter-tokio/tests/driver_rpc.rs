//! Calls by method, serving and broadcast through `NodeHandle` on real TCP and the embedded
//! registry: exact replies, the grace ending `NotAvailable`, a method served mid-grace (the
//! record republished on the registry), a dropped stream unserving its method, a server
//! killed with the request, and a broadcast's exact recipients and report.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use switchboard_core::{
    BroadcastSpec, CallOutcome, CallSpec, FailReason, discovery::Filter, ids::NodeId,
};
use switchboard_tokio::{CallFailure, NodeHandle, Received, Requests};

use support::{direct, echo_call, init_logs, recv_n, start, start_registry, wait_known, within};

/// Answers every request of `requests` with `prefix` + its payload, until the stream ends.
fn answer_with_prefix(mut requests: Requests, prefix: &'static [u8]) {
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let mut answer = prefix.to_vec();
            answer.extend_from_slice(request.payload());
            let _ = request.respond(Bytes::from(answer)).await;
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reaches_the_server_and_its_exact_reply_comes_back() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x31, "client")).await;
    let (server, _) = start(direct(addr, 0x32, "server")).await;
    let requests = within("serve", server.serve("echo")).await.expect("served");
    assert_eq!(requests.method(), "echo");
    answer_with_prefix(requests, b"echo:");
    wait_known(&client, &[0x31, 0x32]).await;

    for payload in [&b"ping"[..], b"", b"\x00\xff binary"] {
        let outcome = within(
            "call",
            client.call(CallSpec::new("echo", Bytes::from_static(payload))),
        )
        .await
        .expect("accepted");
        let mut expected = b"echo:".to_vec();
        expected.extend_from_slice(payload);
        assert_eq!(outcome, CallOutcome::Reply(Bytes::from(expected)));
    }
    // A method name the core refuses is refused at once, nothing sent.
    let refused = within(
        "bad method",
        client.call(CallSpec::new("no spaces", Bytes::new())),
    )
    .await;
    assert!(
        matches!(refused, Err(CallFailure::Refused(_))),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_within_the_grace_ends_not_available_at_the_grace() {
    init_logs();
    let registry = start_registry().await;
    let (client, _) = start(direct(registry.local_addr(), 0x41, "client")).await;
    wait_known(&client, &[0x41]).await;
    let grace = Duration::from_millis(300);
    let started = Instant::now();
    let outcome = within(
        "call",
        client.call(CallSpec::new("nobody", Bytes::from_static(b"x")).grace(grace)),
    )
    .await
    .expect("accepted");
    let waited = started.elapsed();
    assert_eq!(outcome, CallOutcome::Failed(FailReason::NotAvailable));
    assert!(
        waited >= grace && waited < grace + Duration::from_millis(250),
        "ended after {waited:?} (grace {grace:?})"
    );
}

/// The server starts serving 300 ms into the caller's grace: its republished record reaches
/// the caller through the registry and the waiting call is sent at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_served_mid_grace_gets_the_waiting_call() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x51, "client")).await;
    let (server, _) = start(direct(addr, 0x52, "server")).await;
    wait_known(&client, &[0x51, 0x52]).await;

    let started = Instant::now();
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call(echo_call(b"late")).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let requests = within("serve", server.serve("echo")).await.expect("served");
    answer_with_prefix(requests, b"late:");
    let outcome = within("call", call)
        .await
        .expect("joined")
        .expect("accepted");
    let waited = started.elapsed();
    assert_eq!(
        outcome,
        CallOutcome::Reply(Bytes::from_static(b"late:late"))
    );
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(2),
        "replied after {waited:?}"
    );
}

/// A method served from the start (`NodeBuilder::serve`) is in the server's first record: a
/// call with no grace at all finds it, though the server never republished. Its request
/// waits for the stream taken 200 ms later, and is answered then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_served_from_the_start_is_in_the_first_record_and_its_requests_wait() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x55, "client")).await;
    let (server, _) = start(direct(addr, 0x56, "server").serve("echo")).await;
    wait_known(&client, &[0x55, 0x56]).await;

    let started = Instant::now();
    let call = {
        let client = client.clone();
        tokio::spawn(async move {
            let spec = CallSpec::new("echo", Bytes::from_static(b"early"))
                .timeout(Duration::from_secs(10))
                .grace(Duration::ZERO);
            client.call(spec).await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let requests = within("take the stream", server.serve("echo"))
        .await
        .expect("served");
    answer_with_prefix(requests, b"held:");
    let outcome = within("call", call)
        .await
        .expect("joined")
        .expect("accepted");
    assert_eq!(
        outcome,
        CallOutcome::Reply(Bytes::from_static(b"held:early"))
    );
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "answered before the stream was taken"
    );

    // A bad method name fails the start.
    let refused = direct(addr, 0x57, "bad").serve("no spaces").start().await;
    assert!(
        matches!(refused, Err(switchboard_tokio::StartError::Config(_))),
        "{refused:?}"
    );
}

/// Dropping the stream unserves the method: the record is republished without it and a new
/// call finds no server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_stops_serving() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x61, "client")).await;
    let (server, _) = start(direct(addr, 0x62, "server")).await;
    let requests = within("serve", server.serve("echo")).await.expect("served");
    answer_with_prefix(requests, b"");
    wait_known(&client, &[0x61, 0x62]).await;
    let outcome = within("call", client.call(echo_call(b"one"))).await;
    assert_eq!(outcome, Ok(CallOutcome::Reply(Bytes::from_static(b"one"))));

    // A second serve replaces the first stream (which ends); dropping the new one unserves.
    let again = within("serve again", server.serve("echo"))
        .await
        .expect("served");
    drop(again);
    let started = Instant::now();
    let outcome = within(
        "call after unserve",
        wait_for_not_available(&client, Duration::from_secs(5)),
    )
    .await;
    assert_eq!(
        outcome,
        CallOutcome::Failed(FailReason::NotAvailable),
        "after {:?}",
        started.elapsed()
    );
}

/// Calls with a 200 ms grace until one ends `NotAvailable` (the unserve has to travel through
/// the registry first); returns the last outcome.
async fn wait_for_not_available(client: &NodeHandle, bound: Duration) -> CallOutcome {
    let started = Instant::now();
    loop {
        let spec = echo_call(b"x").grace(Duration::from_millis(200));
        let outcome = client.call(spec).await.expect("accepted");
        if outcome == CallOutcome::Failed(FailReason::NotAvailable) || started.elapsed() > bound {
            return outcome;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The server holds the request and is killed: the call ends `Unknown(TargetGone)` on the
/// evidence (the closed link's refused redial), well before its 10 s deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_with_the_request_ends_the_call_unknown_target_gone() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x71, "client")).await;
    let (server, _) = start(direct(addr, 0x72, "server")).await;
    let mut requests = within("serve", server.serve("echo")).await.expect("served");
    wait_known(&client, &[0x71, 0x72]).await;
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call(echo_call(b"held")).await })
    };
    let request = within("the request", requests.recv())
        .await
        .expect("a request");
    assert_eq!(request.payload(), &Bytes::from_static(b"held"));
    assert_eq!(request.from(), NodeId(0x71));
    assert!(request.remaining() <= Duration::from_secs(10));
    let killed = Instant::now();
    server.kill();
    let outcome = within("call", call)
        .await
        .expect("joined")
        .expect("accepted");
    assert_eq!(outcome, CallOutcome::Unknown(FailReason::TargetGone));
    assert!(
        killed.elapsed() < Duration::from_secs(1),
        "ended {:?} after the kill",
        killed.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broadcast_reaches_every_matching_node_once_and_reports_them() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (a, mut a_inbox) = start(direct(addr, 0x81, "a")).await;
    let (_b, mut b_inbox) = start(direct(addr, 0x82, "b")).await;
    let (_c, mut c_inbox) = start(direct(addr, 0x83, "c")).await;
    wait_known(&a, &[0x81, 0x82, 0x83]).await;
    let payload = Bytes::from_static(b"to everyone");
    let report = within(
        "broadcast",
        a.broadcast(BroadcastSpec::new(None::<Filter>, 42, payload.clone())),
    )
    .await
    .expect("accepted");
    let mut delivered = report.delivered.clone();
    delivered.sort();
    assert_eq!(delivered, [NodeId(0x82), NodeId(0x83)]);
    assert!(
        report.failed.is_empty() && report.unknown.is_empty(),
        "{report:?}"
    );
    for inbox in [&mut b_inbox, &mut c_inbox] {
        let got = recv_n(inbox, 1).await;
        assert_eq!(
            got,
            vec![Received::new(
                NodeId(0x81),
                NodeId(0x81),
                42,
                payload.clone()
            )]
        );
    }
    // The sender skipped itself.
    let nothing = tokio::time::timeout(Duration::from_millis(200), a_inbox.recv()).await;
    assert!(nothing.is_err(), "the sender got {nothing:?}");
}
