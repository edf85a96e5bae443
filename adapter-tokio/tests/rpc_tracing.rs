//! Traceable calls on real TCP: the handler reads exactly the metadata the caller sent and
//! the caller exactly the handler's; the answering server is reported; with the
//! OpenTelemetry layer and the W3C hook the caller's `rpc.call` and the server's
//! `rpc.serve` spans share one trace id (the server span a child of the caller's, the
//! request's `traceparent` naming both exactly), and each side logs one line per outcome.

#[path = "../examples/support/otel_propagation.rs"]
mod otel_propagation;
mod support;

use std::{
    io::Write,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use switchboard_core::{CallMetadata, CallOutcome, ids::NodeId, wire::TRACEPARENT};
use tokio::sync::oneshot;
use tracing::Instrument;
use tracing_subscriber::{Layer, filter::LevelFilter, layer::SubscriberExt};

use otel_propagation::W3cPropagation;
use support::{direct, echo_call as echo, start, start_registry, wait_known, within};

const TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Held by each test for its whole run. Under `cargo test` both tests are threads of one
/// process. If the other test first uses a callsite (the `rpc.call` span, say) while the
/// traced test is setting its thread-local subscriber, the callsite can keep the interest it
/// computed without that subscriber, and the traced test sees no span (10 runs in 12 failed
/// so). One test at a time, a callsite registers either after the subscriber is set (and
/// counts it) or before (and `set_default` recomputes its interest). nextest runs each test
/// in its own process and does not need this.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handler_reads_exactly_the_callers_metadata_and_the_caller_the_handlers() {
    let _turn = ONE_AT_A_TIME.lock().await;
    support::init_logs();
    let registry = start_registry().await;
    let addr = registry.local_addr();
    let (client, _) = start(direct(addr, 0x51, "client")).await;
    let (server, _) = start(direct(addr, 0x52, "server")).await;
    let mut requests = within("serve", server.serve("echo")).await.expect("served");
    let (seen_tx, seen) = oneshot::channel();
    tokio::spawn(async move {
        let request = requests.recv().await.expect("one request");
        let _ = seen_tx.send((request.metadata().clone(), request.from()));
        let answer = CallMetadata::new()
            .with("x-served-by", b"server")
            .expect("within bounds");
        let payload = request.payload().clone();
        request.respond_with(payload, answer).await.expect("taken");
    });
    wait_known(&client, &[0x51, 0x52]).await;

    let sent = CallMetadata::new()
        .with(TRACEPARENT, TRACE.as_bytes())
        .and_then(|m| m.with("tracestate", b"a=1"))
        .expect("within bounds");
    let report = within(
        "call",
        client.call_report(echo(b"hi").metadata(sent.clone())),
    )
    .await
    .expect("accepted");
    let (metadata, from) = within("handler", seen).await.expect("the handler ran");
    assert_eq!(metadata, sent);
    assert_eq!(metadata.traceparent(), Some(TRACE));
    assert_eq!(from, NodeId(0x51));
    assert_eq!(
        report.outcome,
        CallOutcome::Reply(Bytes::from_static(b"hi"))
    );
    assert_eq!(report.server, Some(NodeId(0x52)));
    assert_eq!(
        report.metadata.iter().collect::<Vec<_>>(),
        [("x-served-by", &b"server"[..])]
    );
    assert!(report.latency > Duration::ZERO && report.latency < Duration::from_secs(10));
}

/// A `fmt` layer's output, shared.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    /// The lines whose message is `message`.
    fn with(&self, message: &str) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().expect("not poisoned").clone()).expect("UTF-8");
        text.lines()
            .filter(|line| line.contains(message))
            .map(str::to_owned)
            .collect()
    }
}

/// One thread: the subscriber set for this test reaches the driver tasks too.
#[tokio::test(flavor = "current_thread")]
async fn caller_and_server_spans_share_one_trace_and_each_side_logs_its_outcome() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
        .with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .without_time()
                .with_writer(move || writer.clone())
                .with_filter(LevelFilter::DEBUG),
        );
    let _guard = tracing::subscriber::set_default(subscriber);

    let registry = start_registry().await;
    let addr = registry.local_addr();
    let traced = |id, name| direct(addr, id, name).trace_context(W3cPropagation::default());
    let (client, _) = start(traced(0x61, "client")).await;
    let (server, _) = start(traced(0x62, "server")).await;
    let mut requests = within("serve", server.serve("echo")).await.expect("served");
    let (seen_tx, seen) = oneshot::channel();
    let served = tokio::spawn(async move {
        let request = requests.recv().await.expect("one request");
        let traceparent = request.metadata().traceparent().map(str::to_owned);
        let span = request.span().clone();
        let payload = request.payload().clone();
        request
            .respond(payload)
            .instrument(span)
            .await
            .expect("taken");
        let _ = seen_tx.send(traceparent);
    });
    wait_known(&client, &[0x61, 0x62]).await;

    let report = within("call", client.call_report(echo(b"traced")))
        .await
        .expect("accepted");
    assert_eq!(report.server, Some(NodeId(0x62)));
    let traceparent = within("handler", seen).await.expect("the handler ran");
    within("handler end", served).await.expect("no panic");
    provider.force_flush().expect("flushed");
    let spans = exporter.get_finished_spans().expect("spans");
    let named = |name: &str| {
        let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "one {name} span: {spans:#?}");
        found[0].clone()
    };
    let (call, serve) = (named("rpc.call"), named("rpc.serve"));
    let trace_id = call.span_context.trace_id();
    assert_eq!(serve.span_context.trace_id(), trace_id);
    assert_eq!(serve.parent_span_id, call.span_context.span_id());
    assert_eq!(
        traceparent,
        Some(format!("00-{trace_id}-{}-01", call.span_context.span_id()))
    );

    let called = lines.with("call ended");
    assert_eq!(called.len(), 1, "{called:?}");
    assert!(
        called[0].contains(
            "rpc.method=\"echo\" call=1 peer=98 outcome=\"reply\" reason=\"\" latency_us="
        ),
        "{called:?}"
    );
    let answered = lines.with("request answered");
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert!(
        answered[0]
            .contains("rpc.method=\"echo\" request=1 peer=97 outcome=\"replied\" latency_us="),
        "{answered:?}"
    );
}
