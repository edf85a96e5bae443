//! The RPC counters of `NodeHandle::metrics` and their Prometheus text on real TCP and the
//! embedded registry: calls by method, outcome and reason with their duration on the caller;
//! served requests on the server; grace waits, in-flight calls and broadcasts (the text
//! with the `admin` feature).

mod support;

use std::{collections::BTreeMap, time::Duration};

use bytes::Bytes;
use switchboard_core::{BroadcastSpec, CallOutcome, CallSpec, FailReason};

use support::{direct, init_logs, start, start_registry, wait_known, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_counted_by_method_outcome_and_reason() {
    init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x51, "client")).await;
    // Served from the start: the record the client learns already lists `echo`, so no
    // call below waits in a grace for its republication (exactly one grace wait: `nobody`).
    let (server, _) = start(direct(addr, 0x52, "server").serve("echo")).await;
    let mut requests = within("serve", server.serve("echo")).await.expect("served");
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let payload = request.payload().clone();
            let _ = request.respond(payload).await;
        }
    });
    wait_known(&client, &[0x51, 0x52]).await;

    for _ in 0..7 {
        let outcome = within(
            "call",
            client.call(
                CallSpec::new("echo", Bytes::from_static(b"x")).timeout(Duration::from_secs(10)),
            ),
        )
        .await
        .expect("accepted");
        assert_eq!(outcome, CallOutcome::Reply(Bytes::from_static(b"x")));
    }
    let nobody = within(
        "call nobody",
        client.call(CallSpec::new("nobody", Bytes::new()).grace(Duration::from_millis(100))),
    )
    .await
    .expect("accepted");
    assert_eq!(nobody, CallOutcome::Failed(FailReason::NotAvailable));
    let report = within(
        "broadcast",
        client.broadcast(BroadcastSpec::new(None, 9, Bytes::from_static(b"b"))),
    )
    .await
    .expect("broadcast");
    assert_eq!(report.delivered.len(), 1, "{report:?}");

    let metrics = within("metrics", client.metrics()).await.expect("running");
    assert_eq!(
        metrics.rpc_calls,
        BTreeMap::from([
            ("echo".to_owned(), BTreeMap::from([("reply".to_owned(), 7)])),
            (
                "nobody".to_owned(),
                BTreeMap::from([("failed_not_available".to_owned(), 1)])
            ),
        ])
    );
    let counts: BTreeMap<&str, u64> = (metrics.rpc_call_duration.iter())
        .map(|(method, histogram)| (method.as_str(), histogram.count))
        .collect();
    assert_eq!(counts, BTreeMap::from([("echo", 7), ("nobody", 1)]));
    // The client serves nothing: no `method` series of served requests.
    assert_eq!(
        (
            metrics.rpc_in_flight,
            metrics.rpc_grace_waits,
            metrics.rpc_broadcasts,
            metrics.rpc_served.len()
        ),
        (0, 1, 1, 0)
    );
    // The core's RpcStats, exported: each of the eight calls made one selection (the
    // broadcast makes none).
    assert_eq!(metrics.rpc_stats["lookups"], 8);
    #[cfg(feature = "admin")]
    for line in [
        "switchboard_rpc_calls_total{method=\"echo\",outcome=\"reply\",reason=\"\"} 7\n",
        "switchboard_rpc_calls_total{method=\"nobody\",outcome=\"failed\",reason=\"not_available\"} 1\n",
        "switchboard_rpc_call_duration_seconds_count{method=\"echo\"} 7\n",
        "switchboard_rpc_call_duration_seconds_count{method=\"nobody\"} 1\n",
        "switchboard_rpc_grace_waits_total 1\n",
        "switchboard_rpc_broadcasts_total 1\n",
    ] {
        let text = switchboard_tokio::admin::prometheus::render(&metrics);
        assert!(text.contains(line), "{line} in\n{text}");
    }

    let served = within("server metrics", server.metrics())
        .await
        .expect("running");
    // By method (issue 24): the seven echo requests.
    assert_eq!(
        (served.rpc_served.clone(), served.rpc_calls.len()),
        (BTreeMap::from([("echo".to_owned(), 7)]), 0)
    );
    #[cfg(feature = "admin")]
    {
        let text = switchboard_tokio::admin::prometheus::render(&served);
        let line = "switchboard_rpc_served_total{method=\"echo\"} 7\n";
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

/// The `method` label is bounded: past the first 32 distinct methods called, calls are
/// counted under `other` (their count and duration), so callers cannot grow the series.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn methods_past_the_first_32_are_counted_as_other() {
    init_logs();
    let registry = start_registry().await;
    let (client, _) = start(direct(registry.local_addr(), 0x53, "client")).await;
    wait_known(&client, &[0x53]).await;
    let max = switchboard_tokio::observe::MAX_METHOD_LABELS;
    for i in 0..max + 2 {
        let spec = CallSpec::new(format!("m{i:02}"), Bytes::new()).grace(Duration::from_millis(1));
        let outcome = within("call", client.call(spec)).await.expect("accepted");
        assert_eq!(outcome, CallOutcome::Failed(FailReason::NotAvailable));
    }
    let metrics = within("metrics", client.metrics()).await.expect("running");
    let mut expected: BTreeMap<String, BTreeMap<String, u64>> = (0..max)
        .map(|i| {
            let by_label = BTreeMap::from([("failed_not_available".to_owned(), 1)]);
            (format!("m{i:02}"), by_label)
        })
        .collect();
    expected.insert(
        "other".to_owned(),
        BTreeMap::from([("failed_not_available".to_owned(), 2)]),
    );
    assert_eq!(metrics.rpc_calls, expected);
    assert_eq!(metrics.rpc_call_duration.len(), max + 1);
    assert_eq!(metrics.rpc_call_duration["other"].count, 2);
}
