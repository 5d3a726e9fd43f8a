//! `--log-format json`: one JSON object a line on stderr, with the trace and
//! span ids of the span the event happened in, so that a log line and the trace
//! of the same call can be found from each other.

use std::fmt;
use std::io::Write as _;
use std::time::SystemTime;

use opentelemetry::trace::TraceContextExt;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Writes each event as one JSON object a line.
pub(super) struct JsonLines;

pub(super) fn layer() -> JsonLines {
    JsonLines
}

impl<S> Layer<S> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        let mut line = Map::new();
        let now = humantime::format_rfc3339_micros(SystemTime::now());
        line.insert("timestamp".into(), now.to_string().into());
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        if let Some(message) = fields.remove("message") {
            line.insert("message".into(), message);
        }
        if let Some(span) = ctx.event_span(event) {
            line.insert("span".into(), span.name().into());
        }
        // The ids of the nearest span that is traced: a detail span that is not
        // exported (see `span_detail`) takes its caller's.
        let traced = ctx
            .event_scope(event)
            .into_iter()
            .flatten()
            .find_map(|span| {
                let context = tracing::dispatcher::get_default(|dispatch| {
                    tracing_opentelemetry::get_otel_context(&span.id(), dispatch)
                })?;
                let ids = context.span().span_context().clone();
                ids.is_valid().then_some(ids)
            });
        if let Some(ids) = traced {
            line.insert("trace_id".into(), ids.trace_id().to_string().into());
            line.insert("span_id".into(), ids.span_id().to_string().into());
        }
        if !fields.is_empty() {
            line.insert("fields".into(), Value::Object(fields));
        }
        let mut text = Value::Object(line).to_string();
        text.push('\n');
        // One write per line, so lines from threads do not interleave.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), format!("{value:?}").into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().to_owned(), value.into());
    }
}
