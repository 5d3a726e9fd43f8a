//! The names of the gate's metrics and the label sets of the per-call ones, so
//! that every name and label set is declared in one place (recorded by
//! `record.rs`, kept by `call_handles.rs`, described in `metrics.rs`).
//!
//! Labels are bounded: tools are catalog names (a call to a name no tool has is
//! counted as `(unknown)`), principals are declared ids, outcomes are the audit
//! log's statuses. No session or call id is ever a label.

pub(crate) const CALLS: &str = "toolgate_calls_total";
pub(crate) const CALL_DURATION: &str = "toolgate_call_duration_seconds";
pub(crate) const COMMIT_DURATION: &str = "toolgate_store_commit_duration_seconds";
pub(crate) const AUDIT_RECORDS: &str = "toolgate_audit_records_total";
pub(crate) const RATE_LIMITED: &str = "toolgate_rate_limited_total";
pub(crate) const SHADOW_DISAGREEMENTS: &str = "toolgate_shadow_disagreements_total";
pub(crate) const OVER_BUDGET: &str = "toolgate_over_budget_total";
#[cfg(feature = "mcp")]
pub(crate) use served::*;

/// What only a served gateway has: upstream servers, and the gauges `/metrics`
/// samples.
#[cfg(feature = "mcp")]
mod served {
    pub(crate) const UPSTREAM_RESTARTS: &str = "toolgate_upstream_restarts_total";
    pub(crate) const SPEC_RELOADS: &str = "toolgate_spec_reloads_total";
    pub(crate) const UPSTREAM_CALLS: &str = "toolgate_upstream_calls_total";
    pub(crate) const APPROVALS_PENDING: &str = "toolgate_approvals_pending";
    pub(crate) const APPROVAL_OLDEST_AGE: &str = "toolgate_approval_oldest_age_seconds";
    pub(crate) const UPSTREAM_UP: &str = "toolgate_upstream_up";
    pub(crate) const UPSTREAM_STATE: &str = "toolgate_upstream_state";
    pub(crate) const QUARANTINED_TOOLS: &str = "toolgate_quarantined_tools";
    pub(crate) const QUARANTINED_SKILLS: &str = "toolgate_quarantined_skills";
    pub(crate) const BUDGET_SPENT: &str = "toolgate_budget_spent";
    pub(crate) const BUDGET_LIMIT: &str = "toolgate_budget_limit";
}

/// The tool label of a call to a name that is not in the catalog.
pub(crate) const UNKNOWN_TOOL: &str = "(unknown)";

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
