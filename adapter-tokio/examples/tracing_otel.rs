//! One call through a proxy, traced with OpenTelemetry: the caller's `rpc.call` span and the
//! server's `rpc.serve` span land in one trace (same trace id, the server span a child of
//! the caller's), printed by the stdout exporter.
//!
//! ```sh
//! cargo run -p switchboard-tokio --example tracing_otel
//! ```
//!
//! In this process: an embedded registry, a proxy (id 10) and two leaves behind it, the
//! server `echo-server` (11) and the client (12), each with the W3C propagation hook
//! (`support/otel_propagation.rs`). The client's request reaches the server through the
//! proxy carrying `traceparent`; the server's span continues that trace.

#[path = "support/otel_propagation.rs"]
mod otel_propagation;

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use switchboard_tokio::{
    NodeBuilder,
    registry::spawn_registry,
    switchboard_core::{CallOutcome, CallSpec, ids::NodeId, registry::server::ServerConfig},
};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

use otel_propagation::W3cPropagation;

/// A node on the registry at `registry`, behind `upstream` unless it is the proxy.
fn node(id: u64, name: &str, registry: SocketAddr, upstream: Option<u64>) -> NodeBuilder {
    let builder = NodeBuilder::new(NodeId(id), name)
        .registry(registry)
        .trace_context(W3cPropagation::default());
    match upstream {
        Some(proxy) => builder.upstream(NodeId(proxy)),
        None => builder,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("tracing_otel"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))?;

    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let registry = spawn_registry(loopback, ServerConfig::default(), 1).await?;
    let addr = registry.local_addr();
    let (_proxy, _) = node(10, "proxy", addr, None).start().await?;
    let (server, _) = node(11, "echo-server", addr, Some(10)).start().await?;
    let (client, _) = node(12, "client", addr, Some(10)).start().await?;
    let mut requests = server.serve("echo").await?;
    let served = tokio::spawn(async move {
        let request = requests.recv().await?;
        let span = request.span().clone();
        let payload = request.payload().clone();
        request.respond(payload).instrument(span).await.ok()
    });
    let ids = [NodeId(10), NodeId(11), NodeId(12)];
    if !client.wait_known(&ids, Duration::from_secs(10)).await {
        return Err("the nodes did not find each other within 10 s".into());
    }

    let spec = CallSpec::new("echo", Bytes::from_static(b"hello")).grace(Duration::from_secs(5));
    let report = client.call_report(spec).await?;
    served.await?;
    let CallOutcome::Reply(reply) = &report.outcome else {
        return Err(format!("the call ended {:?}", report.outcome).into());
    };
    println!(
        "reply {:?} from server {} in {} us",
        String::from_utf8_lossy(reply),
        report.server.map_or(0, |s| s.0),
        report.latency.as_micros()
    );
    // Flushes the two spans to stdout: `rpc.call` (client) and `rpc.serve` (server), one
    // trace id, the server span's parent the client span.
    provider.shutdown()?;
    Ok(())
}
