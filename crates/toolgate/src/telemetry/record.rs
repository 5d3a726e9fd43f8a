//! The recording points of the gate's metrics: what the gate calls when a call
//! ends, a store commits, a rate limit refuses or an upstream server restarts.
//! The names and label sets they record under are declared in `names.rs`.

use std::time::Duration;

use super::names::*;

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

/// A shadow rule (`policy.rules[N]`), or a policy in shadow mode (`policy`),
/// would have decided a call of `tool` otherwise than the gate did.
#[inline]
pub(crate) fn shadow_disagreement(observer: &str, tool: &str) {
    metrics::counter!(
        SHADOW_DISAGREEMENTS,
        "rule" => observer.to_owned(),
        "tool" => tool.to_owned()
    )
    .increment(1);
}

/// A call would have gone past budget `budgets[index]` (and was asked about
/// or refused).
#[inline]
pub(crate) fn over_budget(index: usize) {
    metrics::counter!(OVER_BUDGET, "budget" => format!("budgets[{index}]")).increment(1);
}

/// A running server read its spec again: the new one serves (`ok`) or the
/// old one still does (`refused`).
#[cfg(feature = "mcp")]
#[inline]
pub(crate) fn spec_reload(ok: bool) {
    let outcome = if ok { "ok" } else { "refused" };
    metrics::counter!(SPEC_RELOADS, "outcome" => outcome).increment(1);
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
