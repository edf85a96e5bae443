//! Load shedding on real TCP and the embedded registry: a method served with a concurrency
//! limit of 4 — a bounded stream ([`NodeHandle::serve_bounded`]) and a tower
//! `ConcurrencyLimit` of 4 ([`NodeHandle::serve_service`]) — under 64 concurrent calls whose
//! handlers hold until released: exactly the 60 calls beyond the limit end
//! `Failed(Overloaded)` at once (while the 4 are still held, so nothing queued), counted;
//! then exactly the 4 end with their exact replies.

mod support;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use futures_util::FutureExt;
use switchboard_tokio::{CallOutcome, CallSpec, FailReason, NodeHandle, ServiceRequest};
use tokio::sync::{Semaphore, mpsc, oneshot};

use support::{direct, init_logs, start, start_registry, wait_known, within};

const CALLS: usize = 64;
const LIMIT: usize = 4;

/// Starts `CALLS` concurrent calls of `method` (payload = the call's number) and returns
/// where their `(number, outcome)` arrive.
fn call_all(
    client: &NodeHandle,
    method: &'static str,
) -> mpsc::UnboundedReceiver<(u8, CallOutcome)> {
    let (tx, rx) = mpsc::unbounded_channel();
    for n in 0..CALLS as u8 {
        let (client, tx) = (client.clone(), tx.clone());
        tokio::spawn(async move {
            // One attempt: a shed call is provably unexecuted and would be retried after a
            // backoff (docs/ARCHITECTURE.md §11, retries); this test counts the sheds of one
            // burst, so each call makes exactly one attempt.
            let spec = CallSpec::new(method, Bytes::from(vec![n]))
                .timeout(Duration::from_secs(20))
                .grace(Duration::from_secs(5))
                .max_attempts(1);
            let outcome = client.call(spec).await.expect("accepted");
            let _ = tx.send((n, outcome));
        });
    }
    rx
}

/// Receives `count` outcomes.
async fn outcomes(
    rx: &mut mpsc::UnboundedReceiver<(u8, CallOutcome)>,
    count: usize,
) -> BTreeMap<u8, CallOutcome> {
    let mut got = BTreeMap::new();
    while got.len() < count {
        let (n, outcome) = within("an outcome", rx.recv())
            .await
            .expect("callers running");
        got.insert(n, outcome);
    }
    got
}

/// The 60 outcomes beyond the limit are `Failed(Overloaded)` while the 4 are held; then the
/// 4 released end with `done:<n>`, their numbers the ones the handler saw.
async fn sheds_exactly_beyond_the_limit(
    client: &NodeHandle,
    server: &NodeHandle,
    method: &'static str,
    release: impl FnOnce(),
    handled: impl FnOnce() -> Vec<u8>,
) {
    let mut rx = call_all(client, method);
    let shed = outcomes(&mut rx, CALLS - LIMIT).await;
    let overloaded = CallOutcome::Failed(FailReason::Overloaded);
    assert!(shed.values().all(|o| *o == overloaded), "{shed:?}");
    let metrics = within("metrics", server.metrics()).await.expect("running");
    assert_eq!(metrics.rpc_overloaded, (CALLS - LIMIT) as u64);
    release();
    let replied = outcomes(&mut rx, LIMIT).await;
    let mut seen = handled();
    seen.sort_unstable();
    assert_eq!(replied.keys().copied().collect::<Vec<_>>(), seen);
    for (n, outcome) in &replied {
        assert!(!shed.contains_key(n));
        assert_eq!(
            *outcome,
            CallOutcome::Reply(Bytes::from(vec![b'd', b'o', b'n', b'e', *n]))
        );
    }
    let metrics = within("metrics", server.metrics()).await.expect("running");
    assert_eq!(metrics.rpc_overloaded, (CALLS - LIMIT) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_stream_sheds_every_request_beyond_its_limit() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x51, "client")).await;
    let (server, _) = start(direct(addr, 0x52, "server")).await;
    let mut requests = within("serve", server.serve_bounded("work", LIMIT))
        .await
        .expect("served");
    wait_known(&client, &[0x51, 0x52]).await;
    // The handler takes the first 4 requests and holds them until released.
    let (release, released) = oneshot::channel::<()>();
    let handled = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&handled);
    let handler = tokio::spawn(async move {
        let mut held = Vec::new();
        while held.len() < LIMIT {
            held.push(requests.recv().await.expect("serving"));
        }
        released.await.expect("released");
        for request in held {
            let n = request.payload()[0];
            seen.lock().expect("not poisoned").push(n);
            let reply = Bytes::from(vec![b'd', b'o', b'n', b'e', n]);
            request.respond(reply).await.expect("taken");
        }
        requests
    });
    sheds_exactly_beyond_the_limit(
        &client,
        &server,
        "work",
        move || release.send(()).expect("the handler waits"),
        move || handled.lock().expect("not poisoned").clone(),
    )
    .await;
    // Nothing beyond the limit was ever queued on the stream.
    let mut requests = within("handler", handler).await.expect("no panic");
    assert!(requests.recv().now_or_never().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tower_concurrency_limit_of_4_sheds_the_rest_of_64_calls() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x61, "client")).await;
    let (server, _) = start(direct(addr, 0x62, "server")).await;
    let gate = Arc::new(Semaphore::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (handler_gate, handler_runs, handler_seen) =
        (Arc::clone(&gate), Arc::clone(&runs), Arc::clone(&seen));
    let handler = tower::service_fn(move |request: ServiceRequest| {
        let (gate, runs, seen) = (
            Arc::clone(&handler_gate),
            Arc::clone(&handler_runs),
            Arc::clone(&handler_seen),
        );
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            let n = request.payload[0];
            seen.lock().expect("not poisoned").push(n);
            let _released = gate.acquire().await.expect("open");
            Ok::<_, std::convert::Infallible>(Bytes::from(vec![b'd', b'o', b'n', b'e', n]))
        }
    });
    let limited = tower::limit::ConcurrencyLimit::new(handler, LIMIT);
    let serving = within("serve", server.serve_service("work", limited))
        .await
        .expect("served");
    assert_eq!(serving.method(), "work");
    wait_known(&client, &[0x61, 0x62]).await;
    sheds_exactly_beyond_the_limit(
        &client,
        &server,
        "work",
        || {
            assert_eq!(runs.load(Ordering::SeqCst), LIMIT, "only the limit ran");
            gate.add_permits(CALLS);
        },
        || seen.lock().expect("not poisoned").clone(),
    )
    .await;
    assert_eq!(runs.load(Ordering::SeqCst), LIMIT);
}
