//! The glue between switchboard's [`TraceContext`] hook and OpenTelemetry: the W3C Trace
//! Context propagator reads and writes a call's metadata, and `tracing-opentelemetry` gives
//! each `tracing` span its OpenTelemetry context. Install it with
//! `NodeBuilder::trace_context(W3cPropagation::default())`.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use switchboard_tokio::{TraceContext, switchboard_core::CallMetadata};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Propagates `traceparent`/`tracestate` through call metadata.
#[derive(Debug, Default)]
pub(crate) struct W3cPropagation {
    propagator: TraceContextPropagator,
}

/// Writes entries into a call's metadata (an entry beyond its bounds is left out).
struct MetadataInjector<'a>(&'a mut CallMetadata);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        let _ = self.0.insert(key, value.as_bytes());
    }
}

/// Reads a call's UTF-8 entries.
struct MetadataExtractor<'a>(&'a CallMetadata);

impl Extractor for MetadataExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get_str(key)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(key, _)| key).collect()
    }
}

impl TraceContext for W3cPropagation {
    fn inject(&self, span: &Span, metadata: &mut CallMetadata) {
        self.propagator
            .inject_context(&span.context(), &mut MetadataInjector(metadata));
    }

    fn extract(&self, metadata: &CallMetadata, span: &Span) {
        let parent = self.propagator.extract(&MetadataExtractor(metadata));
        // Refused only when no OpenTelemetry layer is installed: nothing to link then.
        let _ = span.set_parent(parent);
    }
}
