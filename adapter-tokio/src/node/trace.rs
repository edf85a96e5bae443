//! Tracing of calls: one `rpc.call` span per call on the caller, one `rpc.serve` span per
//! request on the server, one `debug!` line per call outcome on each side, and the
//! [`TraceContext`] hook that carries a tracing system's context across in the call's
//! metadata ([`CallMetadata`], W3C `traceparent`/`tracestate` by convention).
//!
//! The spans follow the OpenTelemetry RPC conventions where they name things
//! (`rpc.system`, `rpc.method`, `otel.kind`), so `tracing-opentelemetry` exports them as
//! client and server spans; with a hook installed ([`NodeBuilder::trace_context`](super::NodeBuilder::trace_context))
//! the server span continues the caller's trace. `examples/tracing_otel.rs` shows the hook
//! for OpenTelemetry's W3C propagator.

use std::{sync::Arc, time::Duration};

use switchboard_core::{CallId, CallMetadata, CallOutcome, CallSpec, IncomingRequest, ids::NodeId};
use tracing::{Span, debug, field::Empty, info_span};

/// Carries a tracing system's context across a call: the caller writes the context of its
/// `rpc.call` span into the request's metadata, the server makes its `rpc.serve` span
/// continue it. Install one with [`NodeBuilder::trace_context`](super::NodeBuilder::trace_context);
/// without one, metadata travels only as the application sets it
/// ([`CallSpec::metadata`]).
pub trait TraceContext: Send + Sync + 'static {
    /// Caller side: writes the context of `span` (the call's `rpc.call` span, not yet
    /// entered) into `metadata` (an entry that does not fit the bounds is left out).
    fn inject(&self, span: &Span, metadata: &mut CallMetadata);

    /// Server side: makes `span` (the request's `rpc.serve` span, not yet entered)
    /// continue the context `metadata` carries, if it carries one.
    fn extract(&self, metadata: &CallMetadata, span: &Span);
}

/// An installed [`TraceContext`], shared by the node's handles and its driver.
#[derive(Clone)]
pub(crate) struct TraceHook(pub(crate) Arc<dyn TraceContext>);

impl std::fmt::Debug for TraceHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TraceHook(..)")
    }
}

/// The caller's span of a call of `spec`, its context injected into `spec`'s metadata when
/// a hook is installed. Its id, server and outcome are recorded as they become known.
pub(crate) fn call_span(spec: &mut CallSpec, hook: Option<&TraceHook>) -> Span {
    let span = info_span!(
        "rpc.call",
        otel.kind = "client",
        rpc.system = "switchboard",
        rpc.method = %spec.method,
        rpc.select = spec.select.mode().label(),
        rpc.call_id = Empty,
        rpc.server = Empty,
        rpc.outcome = Empty,
        rpc.reason = Empty,
    );
    if let Some(hook) = hook {
        hook.0.inject(&span, &mut spec.metadata);
    }
    span
}

/// Records how a call ended on its span.
pub(crate) fn record_call_end(span: &Span, server: Option<NodeId>, outcome: &CallOutcome) {
    if let Some(server) = server {
        span.record("rpc.server", server.0);
    }
    span.record("rpc.outcome", outcome.class());
    if let Some(reason) = outcome.reason() {
        span.record("rpc.reason", reason.as_str());
    }
}

/// The server's span of `request`: a root of its own unless the hook links it to the
/// caller's trace; the request's `traceparent`, when it has one, is a field.
pub(crate) fn serve_span(request: &IncomingRequest, hook: Option<&TraceHook>) -> Span {
    let span = info_span!(
        parent: None,
        "rpc.serve",
        otel.kind = "server",
        rpc.system = "switchboard",
        rpc.method = %request.method,
        rpc.caller = request.from.0,
        rpc.request_id = request.request.0,
        rpc.traceparent = Empty,
        rpc.handler_us = Empty,
        rpc.outcome = Empty,
    );
    if let Some(traceparent) = request.metadata.traceparent() {
        span.record("rpc.traceparent", traceparent);
    }
    if let Some(hook) = hook {
        hook.0.extract(&request.metadata, &span);
    }
    span
}

/// Microseconds, saturating.
fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The caller's line for a call's outcome: method, call id, server id (0 = none), outcome
/// class and reason, latency from acceptance.
pub(crate) fn log_call_done(
    method: &str,
    call: CallId,
    server: Option<NodeId>,
    outcome: &CallOutcome,
    latency: Duration,
) {
    debug!(
        rpc.method = method,
        call = call.0,
        peer = server.map_or(0, |s| s.0),
        outcome = outcome.class(),
        reason = outcome.reason().map_or("", |r| r.as_str()),
        latency_us = micros(latency),
        "call ended"
    );
}

/// The server's line for an answered request, recorded on its span too: method, request
/// id, caller id, outcome (`replied`, `refused`, `stopped`), handler time.
pub(crate) fn log_served(
    span: &Span,
    method: &str,
    request: u64,
    caller: NodeId,
    outcome: &'static str,
    handler: Duration,
) {
    span.record("rpc.handler_us", micros(handler));
    span.record("rpc.outcome", outcome);
    debug!(
        parent: span,
        rpc.method = method,
        request,
        peer = caller.0,
        outcome,
        latency_us = micros(handler),
        "request answered"
    );
}
