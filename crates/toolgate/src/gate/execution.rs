//! The second half of a call: from the moment its intent is recorded, running the
//! tool, checking and sanitizing what it returned, and recording the completion
//! with the state writes.
//!
//! An [`Execution`] owns everything it needs, so it can run where the call was made
//! or, for a background call, on a task of its own that outlives the call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use toolgate_core::spec::template;
use toolgate_core::{
    AuditEntry, DynTool, RecordKind, SanitizeOptions, ToolCtx, ToolError, sanitize_output,
    sanitize_value,
};
use tracing::Instrument;

use super::once::{Keyed, may_repeat, millis, settle, settled};
use super::run::{RunEnd, RunLimits, run};
use super::{Clock, Entry, Outcome, audit_message, tool_error};
use crate::flow::Admitted;
use crate::store::GateStore;

/// A call admitted, authorized and recorded, ready to run.
pub(super) struct Execution {
    /// The call's `execute_tool` span, where its end is recorded.
    pub span: tracing::Span,
    pub tool: Arc<dyn DynTool>,
    pub entry: Arc<Entry>,
    pub store: Arc<dyn GateStore>,
    pub clock: Clock,
    pub fail_on_output_mismatch: bool,
    pub session: String,
    pub arguments: Value,
    pub state: Map<String, Value>,
    pub ctx: ToolCtx,
    pub limits: RunLimits,
    pub timeout: Duration,
    /// The audit entry, as the intent was recorded.
    pub audit: AuditEntry,
    /// A read's intent, committed with its completion.
    pub intent: Option<AuditEntry>,
    /// The flow's admission, holding the conversation's turn when governed.
    pub admitted: Admitted,
    pub started: Instant,
    /// The tool's slot, held while it runs.
    pub slot: OwnedSemaphorePermit,
    /// Its places among the calls in flight the rate limits count, given back
    /// when the execution ends or is dropped.
    pub limited: super::limiter::RatePermit,
    /// The idempotency key it holds, which keeps its outcome.
    pub keyed: Option<Keyed>,
}

impl Execution {
    /// The run id of the call in the audit log.
    pub(super) fn run_id(&self) -> &str {
        &self.audit.run_id
    }

    /// Runs the tool until it ends or `cancel` fires, applies the state effects of a
    /// call that succeeded and records its completion. Returns the outcome and the
    /// audit status it was recorded with (`ok`, `error`, `timeout`, `cancelled`).
    pub(super) async fn run(self, cancel: &CancellationToken) -> (Outcome, &'static str) {
        let name = self.audit.tool.clone();
        // Detail spans are `debug`: exported only with `TOOLGATE_OTEL_SPANS=all`.
        let executing = tracing::debug_span!(parent: &self.span, "toolgate.execute");
        let (end, attempts) = run(
            self.tool.as_ref(),
            &self.ctx,
            &self.arguments,
            self.limits,
            cancel,
        )
        .instrument(executing)
        .await;
        // A call with effects whose answer was lost may have happened. (One its
        // caller cancelled stays `cancelled`: the caller chose to stop it.)
        if !may_repeat(self.tool.as_ref(), &self.ctx) {
            let lost = match &end {
                RunEnd::Done(Err(ToolError::Unknown { message })) => Some(message.clone()),
                RunEnd::TimedOut => Some(format!(
                    "`{name}` did not finish within {}",
                    humantime::format_duration(self.timeout)
                )),
                _ => None,
            };
            if let Some(message) = lost {
                let run_id = self.run_id().to_owned();
                return self.record("unknown", Outcome::Unknown { message, run_id }, attempts);
            }
        }
        let (status, outcome) = match end {
            RunEnd::Done(Ok(value)) => ("ok", self.finish_ok(value)),
            RunEnd::Done(Err(error)) => ("error", tool_error(&name, error)),
            RunEnd::TimedOut => {
                let limit = humantime::format_duration(self.timeout);
                (
                    "timeout",
                    Outcome::error(format!("`{name}` did not finish within {limit}"), true),
                )
            }
            RunEnd::Cancelled => (
                "cancelled",
                Outcome::error(format!("the call to `{name}` was cancelled"), false),
            ),
            RunEnd::Panicked(message) => {
                let message = format!(
                    "`{name}` failed unexpectedly (it panicked: {message}); tell the operator"
                );
                ("error", Outcome::error(message, false))
            }
        };
        self.record(status, outcome, attempts)
    }

    /// Records the completion of the call with `outcome` (the state effects with it,
    /// when it succeeded), releasing the conversation's turn.
    pub(super) fn record(
        mut self,
        status: &'static str,
        outcome: Outcome,
        attempts: u32,
    ) -> (Outcome, &'static str) {
        // An untrusted result leaves its fingerprints before the model can see
        // it; one that cannot is withheld, so no later call escapes `tainted:`.
        let (status, outcome) = match &outcome {
            Outcome::Ok { value, .. } if self.entry.fingerprints => {
                let prints = toolgate_core::Fingerprints::of_result(value, &self.arguments);
                match self
                    .store
                    .record_untrusted_text(&self.session, &self.audit.run_id, &prints)
                {
                    Ok(()) => (status, outcome),
                    Err(e) => (
                        "error",
                        Outcome::error(
                            format!(
                                "`{}` ran, but its untrusted result could not be recorded for the information-flow policy ({}), so it is withheld; try again",
                                self.audit.tool,
                                e.reported()
                            ),
                            true,
                        ),
                    ),
                }
            }
            _ => (status, outcome),
        };
        // State effects apply only to a call that succeeded (and whose output passed).
        let writes = match &outcome {
            Outcome::Ok { value, .. } => {
                state_writes(&self.entry, &self.arguments, &self.state, value)
            }
            _ => Vec::new(),
        };
        let name = self.audit.tool.clone();
        let mut entry = self.audit;
        entry.kind = RecordKind::Completion;
        entry.time = humantime::format_rfc3339_millis((self.clock)()).to_string();
        entry.arguments = Value::Null;
        entry.outcome = Some(if outcome.is_ok() { "ok" } else { status }.to_owned());
        entry.message = (!outcome.is_ok()).then(|| audit_message(&outcome));
        entry.duration_ms =
            Some(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX));
        entry.attempts = Some(attempts);
        super::trace_end(
            &self.span,
            &entry,
            if outcome.is_ok() { "ok" } else { status },
            Some(attempts),
        );
        // A read's intent goes with its completion; kept aside, it can still be
        // written alone if they cannot, so the read is seen pending, not lost.
        let read_intent = self.intent.clone();
        let now = millis((self.clock)());
        // A call outside a flow settles its key with its completion; a governed
        // one's turn is released with it, and its key settled apart.
        let governed = self.admitted.governed();
        let apart = if governed { self.keyed.as_ref() } else { None };
        if let Err(e) = settle(self.store.as_ref(), apart, &entry, &outcome, now) {
            tracing::warn!(tool = %name, error = %e, "the call ledger could not record an outcome");
        }
        let recorded = match (&self.keyed, governed) {
            (_, true) => self.store.complete_turn(&self.session, &writes, entry),
            (Some(keyed), false) => self.store.complete_settling(
                &self.session,
                &writes,
                self.intent.take(),
                entry,
                &settled(keyed, &outcome, now),
            ),
            (None, false) => self
                .store
                .complete(&self.session, &writes, self.intent.take(), entry),
        };
        let recorded = recorded.map_err(|e| {
            let pending = read_intent.is_none_or(|intent| self.store.append(intent).is_ok());
            (e, pending)
        });
        drop(self.slot);
        drop(self.limited);
        let counted = if outcome.is_ok() { "ok" } else { status };
        crate::telemetry::call_ran(
            &name,
            counted,
            &self.ctx.principal().id,
            self.started.elapsed(),
        );
        match recorded {
            Ok(_) => (outcome, status),
            Err((e, true)) => (
                Outcome::error(
                    format!(
                        "`{name}` ran, but its result could not be recorded ({}); the operator must check `toolgate audit pending`",
                        e.reported()
                    ),
                    false,
                ),
                "error",
            ),
            Err((e, false)) => (
                Outcome::error(
                    format!(
                        "`{name}` ran, but neither it nor its result could be recorded ({}); the operator must check the store and the server's log",
                        e.reported()
                    ),
                    false,
                ),
                "error",
            ),
        }
    }

    /// Output check and sanitizing for a value the tool returned.
    fn finish_ok(&self, value: Value) -> Outcome {
        let tool = self.tool.as_ref();
        let mut notes = Vec::new();
        if let Some(validator) = &self.entry.output {
            let problems: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("at `{}`: {e}", e.instance_path().as_str()))
                .collect();
            if !problems.is_empty() {
                let message = format!(
                    "`{}` returned a value that does not match its `returns`: {}",
                    tool.name(),
                    problems.join("; ")
                );
                tracing::warn!(tool = tool.name(), "{message}");
                if self.fail_on_output_mismatch {
                    return Outcome::error(message, false);
                }
                notes.push(message);
            }
        }
        let raw = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = if tool.trusted() {
            raw
        } else {
            sanitize_output(&raw, tool.name(), &SanitizeOptions::for_output()).text
        };
        let structured = tool.output_schema().is_some().then(|| {
            if tool.trusted() {
                value.clone()
            } else {
                sanitize_value(&value)
            }
        });
        Outcome::Ok {
            value,
            structured,
            text,
            notes,
        }
    }
}

/// What a successful call writes to state: `set_state`, then `save_response_as`.
fn state_writes(
    entry: &Entry,
    arguments: &Value,
    state: &Map<String, Value>,
    value: &Value,
) -> Vec<(String, Value)> {
    let mut writes: Vec<(String, Value)> = entry
        .set_state
        .iter()
        .map(|(key, template)| (key.clone(), template::render(template, arguments, state)))
        .collect();
    if let Some(key) = &entry.save_response_as {
        writes.push((key.clone(), value.clone()));
    }
    writes
}
