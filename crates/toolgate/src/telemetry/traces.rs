//! W3C trace context in and out of the gate's spans: a `traceparent` arriving
//! with a request parents them, and requests the gate sends (HTTP bindings,
//! upstream MCP calls) carry theirs on.
//!
//! Both directions go through the span's OpenTelemetry context, which exists
//! only when an OpenTelemetry layer records spans ([`init`](super::init)): with
//! none, nothing is read and nothing is sent.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C Trace Context fields (`traceparent`, and `tracestate` when there is
/// one) that carry `span` on to a request it makes; empty when no trace is
/// being recorded.
pub(crate) fn trace_fields(span: &tracing::Span) -> Vec<(String, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut fields = Fields(Vec::new());
    TraceContextPropagator::new().inject_context(&context, &mut fields);
    fields.0
}

/// Makes the trace context that `field` reads (`traceparent`, `tracestate`)
/// the parent of `span`, when it holds a valid one. Call it before the span is
/// first entered.
pub(crate) fn follow_remote_parent(span: &tracing::Span, field: impl Fn(&str) -> Option<String>) {
    if span.is_disabled() {
        return;
    }
    let Some(traceparent) = field("traceparent") else {
        return;
    };
    let carrier = Carrier {
        traceparent,
        tracestate: field("tracestate"),
    };
    let context = TraceContextPropagator::new().extract(&carrier);
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}

struct Fields(Vec<(String, String)>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

struct Carrier {
    traceparent: String,
    tracestate: Option<String>,
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(&self.traceparent),
            "tracestate" => self.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        let mut keys = vec!["traceparent"];
        if self.tracestate.is_some() {
            keys.push("tracestate");
        }
        keys
    }
}
