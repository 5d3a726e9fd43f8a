//! A call's span: `execute_tool {tool}`, named and attributed by the
//! OpenTelemetry GenAI conventions for tool execution, and how the call's end is
//! recorded on it. A server that made a span for the request carrying the call
//! hands it in ([`CallOptions::span`](super::CallOptions::span)), and the call is that one span.

use toolgate_core::{AuditEntry, MAX_NAME_LEN, Principal, clip_text};

use super::ToolCall;

/// A call's own span, `execute_tool {tool}`.
pub(super) fn call_span(session: &str, call: &ToolCall, principal: &Principal) -> tracing::Span {
    let name = clip_text(&call.name, MAX_NAME_LEN);
    // The name is given where the span is made (one visit of its fields, not a
    // later `record`), and strings as `&str`, joined rather than formatted, so
    // that a recorded span runs no formatting machinery.
    tracing::info_span!(
        "execute_tool",
        otel.name = ["execute_tool ", &name].concat().as_str(),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name.as_ref(),
        gen_ai.tool.call.id = clip_text(&call.id, MAX_NAME_LEN).as_ref(),
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = tracing::field::Empty,
        toolgate.principal = principal.id.as_str(),
        toolgate.session = session,
        toolgate.effect = tracing::field::Empty,
        toolgate.decision = tracing::field::Empty,
        toolgate.outcome = tracing::field::Empty,
        toolgate.attempts = tracing::field::Empty,
    )
}

/// Records how the call ended on its `execute_tool` span, in one pass over the
/// span (each `record` is a lookup of the span and a visit of its layers).
///
/// A call that failed gets the error status and `error.type`; one that
/// succeeded keeps the status unset, as the OpenTelemetry specification asks of
/// instrumentation.
pub(crate) fn trace_end(
    span: &tracing::Span,
    entry: &AuditEntry,
    status: &str,
    attempts: Option<u32>,
) {
    use tracing::field::Value;
    if span.is_disabled() {
        return;
    }
    let Some(fields) = span.metadata().map(|m| m.fields()) else {
        return;
    };
    let (
        Some(outcome),
        Some(effect),
        Some(decision),
        Some(tries),
        Some(status_code),
        Some(error_type),
    ) = (
        fields.field("toolgate.outcome"),
        fields.field("toolgate.effect"),
        fields.field("toolgate.decision"),
        fields.field("toolgate.attempts"),
        fields.field("otel.status_code"),
        fields.field("error.type"),
    )
    else {
        return;
    };
    let failed = !matches!(status, "ok" | "pending_approval" | "started");
    let effect_name = entry.effect.map(|e| e.as_str());
    let decision_name = entry.decision.map(|d| d.as_str());
    let attempts = attempts.map(i64::from);
    span.record_all(&fields.value_set(&[
        (&outcome, Some(&status as &dyn Value)),
        (&effect, effect_name.as_ref().map(|v| v as &dyn Value)),
        (&decision, decision_name.as_ref().map(|v| v as &dyn Value)),
        (&tries, attempts.as_ref().map(|v| v as &dyn Value)),
        (&status_code, failed.then_some(&"error" as &dyn Value)),
        (&error_type, failed.then_some(&status as &dyn Value)),
    ]));
}
