//! The recording points of the gate's metrics, by name, so that every name and
//! label set is declared in one place (and described in `metrics.rs`).
//!
//! Labels are bounded: tools are catalog names (a call to a name no tool has is
//! counted as `(unknown)`), principals are declared ids, outcomes are the audit
//! log's statuses. No session or call id is ever a label.

use std::time::Duration;

pub(crate) const CALLS: &str = "toolgate_calls_total";
pub(crate) const CALL_DURATION: &str = "toolgate_call_duration_seconds";
pub(crate) const COMMIT_DURATION: &str = "toolgate_store_commit_duration_seconds";
pub(crate) const AUDIT_RECORDS: &str = "toolgate_audit_records_total";
pub(crate) const RATE_LIMITED: &str = "toolgate_rate_limited_total";
#[cfg(feature = "mcp")]
pub(crate) use served::*;

/// What only a served gateway has: upstream servers, and the gauges `/metrics`
/// samples.
#[cfg(feature = "mcp")]
mod served {
    pub(crate) const UPSTREAM_RESTARTS: &str = "toolgate_upstream_restarts_total";
    pub(crate) const UPSTREAM_CALLS: &str = "toolgate_upstream_calls_total";
    pub(crate) const APPROVALS_PENDING: &str = "toolgate_approvals_pending";
    pub(crate) const APPROVAL_OLDEST_AGE: &str = "toolgate_approval_oldest_age_seconds";
    pub(crate) const UPSTREAM_UP: &str = "toolgate_upstream_up";
    pub(crate) const UPSTREAM_STATE: &str = "toolgate_upstream_state";
    pub(crate) const QUARANTINED_TOOLS: &str = "toolgate_quarantined_tools";
}

/// The tool label of a call to a name that is not in the catalog.
pub(crate) const UNKNOWN_TOOL: &str = "(unknown)";

/// A call came to `outcome` (an audit status: `ok`, `denied`, `invalid`, ...)
/// without running.
#[inline]
pub(crate) fn call_outcome(tool: &str, known: bool, outcome: &'static str, principal: &str) {
    let tool = if known { tool } else { UNKNOWN_TOOL };
    count_call(tool, outcome, principal, None);
}

/// A call that ran came to `outcome`, `elapsed` from its arrival to its
/// recorded completion.
#[inline]
pub(crate) fn call_ran(tool: &str, outcome: &'static str, principal: &str, elapsed: Duration) {
    count_call(tool, outcome, principal, Some(elapsed.as_secs_f64()));
}

fn count_call(tool: &str, outcome: &'static str, principal: &str, ran: Option<f64>) {
    #[cfg(feature = "mcp")]
    if let Some(handles) = super::call_handles::kept() {
        return handles.count(tool, outcome, principal, ran);
    }
    calls_counter(tool, outcome, principal).increment(1);
    if let Some(seconds) = ran {
        duration_histogram(tool, outcome).record(seconds);
    }
}

/// The counter of calls with these labels, registered with the recorder.
pub(super) fn calls_counter(
    tool: &str,
    outcome: &'static str,
    principal: &str,
) -> metrics::Counter {
    metrics::counter!(
        CALLS,
        "tool" => tool.to_owned(),
        "outcome" => outcome,
        "principal" => principal.to_owned()
    )
}

/// The latency histogram of calls with these labels that ran.
pub(super) fn duration_histogram(tool: &str, outcome: &'static str) -> metrics::Histogram {
    metrics::histogram!(CALL_DURATION, "tool" => tool.to_owned(), "outcome" => outcome)
}

/// One transaction of the store committed `records` audit records in `elapsed`.
#[inline]
pub(crate) fn store_commit(records: usize, elapsed: Duration) {
    metrics::histogram!(COMMIT_DURATION).record(elapsed.as_secs_f64());
    metrics::counter!(AUDIT_RECORDS).increment(records as u64);
}

/// A rate limit refused a call.
#[inline]
pub(crate) fn rate_limited(tool: &str, principal: &str) {
    metrics::counter!(RATE_LIMITED, "tool" => tool.to_owned(), "principal" => principal.to_owned())
        .increment(1);
}

/// An upstream MCP server failed and is being started again.
#[cfg(feature = "mcp")]
#[inline]
pub(crate) fn upstream_restart(server: &str) {
    metrics::counter!(UPSTREAM_RESTARTS, "server" => server.to_owned()).increment(1);
}

/// A call sent to an upstream MCP server was answered with a result
/// (`ok`), or ended in an error: the tool's, the server's, a timeout or a
/// lost connection (`error`).
#[cfg(feature = "mcp")]
#[inline]
pub(crate) fn upstream_call(server: &str, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    metrics::counter!(UPSTREAM_CALLS, "server" => server.to_owned(), "outcome" => outcome)
        .increment(1);
}
