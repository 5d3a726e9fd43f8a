//! The gate: the one path every call takes, whoever makes it.
//!
//! resolve ▶ validate ▶ admit (flow) ▶ authorize (policy, approvals) ▶ record
//! intent ▶ execute (deadline, retries, cancellation) ▶ apply state ▶ check output
//! ▶ sanitize ▶ record completion. Each stage that refuses a call produces an
//! [`Outcome`] the model can act on; nothing panics and no call is dropped. A
//! read's intent is committed together with its completion (one transaction
//! instead of two; a read that dies half-way has nothing to reconcile). A call the
//! conversation's flow governs has its intent committed with its admission, in one
//! step of the store, so that admission holds across processes.

mod arguments;
mod authenticated;
mod builder;
mod call_span;
mod execution;
mod limiter;
mod policy_call;
mod run;
mod store_failure;
mod task;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    AuditEntry, Catalog, Decision, Effect, MAX_NAME_LEN, Policy, Principal, RecordKind, ToolCtx,
    ToolError, audit_arguments, clip_text, content_hash, json_len,
};
use tracing::Instrument;

pub use arguments::{ArgumentProblem, invalid_arguments_message};
pub use authenticated::Authenticated;
pub use builder::{DEFAULT_MAX_ARGUMENT_BYTES, GateBuilder, GateOptions};
pub use call_span::Launch;
use call_span::call_span;
pub(crate) use call_span::trace_end;
use store_failure::store_failure;
pub use task::{DEFAULT_TASK_TTL, TaskError, TaskFilter, TaskFuture, TaskScope};
pub use toolgate_core::{Outcome, ToolCall};

use crate::store::{ApprovalRequest, GateStore, Resolution, StoreError};
use arguments::ArgumentChecker;
use execution::Execution;
pub use limiter::{Limited, RateLimiter, RatePermit, RateRefused};
use run::RunLimits;

/// How much of an error message the audit log keeps (the caller gets it whole).
const AUDIT_MESSAGE_CHARS: usize = 4096;

/// What the gate knows about one tool beyond its descriptor.
struct Entry {
    arguments: ArgumentChecker,
    output: Option<jsonschema::Validator>,
    set_state: Vec<(String, Value)>,
    save_response_as: Option<String>,
    timeout: Option<Duration>,
    slots: Arc<Semaphore>,
    /// The arguments its span may record (`telemetry.span_arguments`).
    span_arguments: Option<Vec<String>>,
}

type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// Runs calls against a catalog, each through every stage of the gate.
pub struct Gate {
    catalog: Catalog,
    entries: HashMap<String, Arc<Entry>>,
    defaults: Map<String, Value>,
    policy: Policy,
    store: Arc<dyn GateStore>,
    options: GateOptions,
    clock: Clock,
    /// Run ids are this prefix (random per gate) and a counter: unique, and cheap.
    run_prefix: String,
    runs: AtomicU64,
    /// The conversation flow the admission stage enforces.
    pub(crate) flow: crate::flow::FlowGate,
    /// The background tasks running here (shared with the gates that succeed it).
    tasks: Arc<task::Tasks>,
    /// The spec's rate limits and what they counted (kept by a successor gate
    /// whose limits are the same).
    limiter: Arc<RateLimiter>,
}

impl Gate {
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The largest arguments a call may have, in bytes of compact JSON.
    pub fn max_argument_bytes(&self) -> usize {
        self.options.max_argument_bytes
    }

    pub fn store(&self) -> &Arc<dyn GateStore> {
        &self.store
    }

    /// A conversation's state: what was written, over the declared defaults.
    pub fn state(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        Ok(self.over_defaults(self.store.load(session)?))
    }

    /// `written` over the declared defaults.
    pub(crate) fn over_defaults(&self, written: Map<String, Value>) -> Map<String, Value> {
        let mut state = self.defaults.clone();
        state.extend(written);
        state
    }

    /// Runs one call in conversation `session` on behalf of `principal`.
    pub async fn call(&self, session: &str, call: ToolCall, principal: &Principal) -> Outcome {
        self.call_with(session, call, principal, &CancellationToken::new())
            .await
    }

    /// Runs a batch (a model's parallel calls) concurrently, at most
    /// `per_tool_concurrency` of one tool at a time; outcomes in call order.
    pub async fn call_all(
        &self,
        session: &str,
        calls: Vec<ToolCall>,
        principal: &Principal,
    ) -> Vec<Outcome> {
        let cancel = CancellationToken::new();
        futures::future::join_all(
            calls
                .into_iter()
                .map(|call| self.call_with(session, call, principal, &cancel)),
        )
        .await
    }

    /// [`Gate::call`] that stops when `cancel` fires (a background call's task
    /// too; [`Gate::cancel_task`] cancels one task).
    pub async fn call_with(
        &self,
        session: &str,
        call: ToolCall,
        principal: &Principal,
        cancel: &CancellationToken,
    ) -> Outcome {
        self.call_launching(session, call, principal, cancel, Launch::default())
            .await
    }

    /// [`Gate::call_with`] that runs the call as a background task when its tool
    /// runs in the background or [`Launch::as_task`] says so, in the span
    /// [`Launch::span`] gives or else its own.
    ///
    /// The call is one `execute_tool {tool}` span, named and attributed by the
    /// OpenTelemetry GenAI conventions for tool execution, with toolgate's own
    /// attributes under `toolgate.`; its stages that take time are its children.
    pub async fn call_launching(
        &self,
        session: &str,
        call: ToolCall,
        principal: &Principal,
        cancel: &CancellationToken,
        launch: Launch,
    ) -> Outcome {
        let span = match launch.span {
            Some(span) => span,
            None => call_span(session, &call, principal),
        };
        // A call's future holds every stage's state (kilobytes); boxed, the
        // futures of everything that awaits it stay small and are cheap to move.
        Box::pin(
            self.call_in_span(
                session,
                call,
                principal,
                cancel,
                launch.as_task,
                launch.scope,
            )
            .instrument(span),
        )
        .await
    }

    async fn call_in_span(
        &self,
        session: &str,
        call: ToolCall,
        principal: &Principal,
        cancel: &CancellationToken,
        as_task: bool,
        scope: Option<TaskScope>,
    ) -> Outcome {
        let started = Instant::now();
        let mut entry = self.audit_entry(RecordKind::Refusal, session, &call, principal);
        entry.arguments = audit_arguments(&call.arguments, &Value::Null);

        // Bound: arguments past the limit are refused before anything reads them.
        let size = json_len(&call.arguments);
        if size > self.options.max_argument_bytes {
            let outcome = Outcome::error(
                format!(
                    "the arguments for `{}` are {size} bytes, more than the {} bytes a call may carry; nothing ran. Send less (pass large content by reference, such as a URL or a file path, if the tool takes one)",
                    clip_text(&call.name, MAX_NAME_LEN),
                    self.options.max_argument_bytes
                ),
                false,
            );
            return self.refuse(entry, "too_large", outcome);
        }

        // Resolve: a tool outside the principal's view is unknown to it, exactly
        // as a name no tool has, and only tools it may use are suggested. Nothing
        // about it (argument rules, flow, availability) is checked, so nothing leaks.
        let tool = match self.catalog.find(&call.name) {
            Some(tool) if principal.sees(tool.descriptor()) => tool.clone(),
            found => {
                let unknown = self.unknown_to(&call.name, principal);
                if let Some(hidden) = found {
                    let verdict = self.policy.decide(hidden.descriptor(), principal);
                    entry.decision = Some(Decision::Deny);
                    entry.reason = Some(verdict.audit_reason());
                }
                return self.refuse(entry, "unknown_tool", unknown);
            }
        };
        // A tool the policy denies this principal is refused before its arguments
        // or the flow are looked at.
        let verdict = self.policy.decide(tool.descriptor(), principal);
        if verdict.decision == Decision::Deny {
            entry.decision = Some(verdict.decision);
            entry.reason = Some(verdict.audit_reason());
            let outcome = Outcome::Denied {
                reason: verdict.reason,
            };
            return self.refuse(entry, "denied", outcome);
        }
        let Some(tool_entry) = self.entries.get(&call.name) else {
            return self.refuse(
                entry,
                "unknown_tool",
                Outcome::error(format!("`{}` is not ready", call.name), true),
            );
        };
        if let Err(error) = tool.available() {
            return self.refuse(entry, "unavailable", tool_error(&call.name, error));
        }
        // Validate.
        let arguments = match tool_entry.arguments.check(&call.arguments) {
            Ok(arguments) => arguments,
            Err(problems) => {
                let outcome =
                    Outcome::error(invalid_arguments_message(&call.name, &problems), false);
                return self.refuse(entry, "invalid", outcome);
            }
        };
        entry.arguments = audit_arguments(&arguments, tool.input_schema());
        if let Some(names) = &tool_entry.span_arguments {
            let span = tracing::Span::current();
            if !span.is_disabled()
                && let Some(text) = crate::telemetry::span_arguments(&entry.arguments, names)
            {
                span.record("gen_ai.tool.call.arguments", text);
            }
        }
        // Admit: the conversation's flow may not allow this call yet (see `crate::flow`).
        // The caller is told only what its view allows; the audit keeps the full reason.
        let admitted = match self
            .flow
            .admit(self, session, &call.name, &arguments, principal)
            .await
        {
            Ok(admitted) => admitted,
            Err(refusal) => {
                entry.reason = refusal.reason;
                return self.refuse(entry, refusal.status, refusal.outcome);
            }
        };
        // Authorize: the policy decides this call (its rules' `when:` may read the
        // arguments, the conversation and the caller's claims), then the flow's
        // confirmations; the audit records what decided.
        let verdict = match self.decide_call(session, tool.descriptor(), &arguments, principal) {
            Ok(verdict) => admitted.decide(verdict),
            Err(e) => return store_failure("the state store", e),
        };
        entry.decision = Some(verdict.decision);
        entry.reason = Some(verdict.audit_reason());
        match verdict.decision {
            Decision::Deny => {
                return self.refuse(
                    entry,
                    "denied",
                    Outcome::Denied {
                        reason: verdict.reason,
                    },
                );
            }
            Decision::Ask => {
                let request = ApprovalRequest {
                    session: session.to_owned(),
                    tool: call.name.clone(),
                    arguments: entry.arguments.clone(),
                    args_hash: content_hash(&arguments),
                    principal: principal.id.clone(),
                    reason: verdict.reason.clone(),
                    answered_by: verdict.answered_by,
                };
                match self.store.resolve(&request, (self.clock)()) {
                    Ok(Resolution::Granted { by }) => {
                        entry.reason = Some(format!(
                            "{}; approved ({})",
                            verdict.audit_reason(),
                            self.answered(&by)
                        ))
                    }
                    Ok(Resolution::Pending { id, .. }) => {
                        let outcome = Outcome::PendingApproval {
                            approval_id: id,
                            reason: verdict.reason,
                        };
                        return self.refuse(entry, "pending_approval", outcome);
                    }
                    Ok(Resolution::Denied { reason, id }) => {
                        entry.reason = Some(format!(
                            "{}; denied ({})",
                            verdict.audit_reason(),
                            self.answered(&id)
                        ));
                        let outcome = Outcome::Denied {
                            reason: format!("a human denied this call: {reason}"),
                        };
                        return self.refuse(entry, "denied", outcome);
                    }
                    Err(e) => return store_failure("the approvals store", e),
                }
            }
            Decision::Allow => {}
        }
        // Rate limits: checked once the call is known to be allowed, so that a
        // call refused for any other reason (unknown, invalid, out of turn,
        // denied, waiting for approval) spends nothing; and before its intent
        // is recorded or it waits for a slot, so a refused call costs no write.
        let counters = self.store.rate_counters();
        let limited = match self.limiter.admit_counted(principal, &call.name, counters) {
            Ok(permit) => permit,
            Err(limiter::Limited::Store(e)) => {
                return store_failure("the rate-limit counters", e);
            }
            Err(limiter::Limited::Refused(refused)) => {
                crate::telemetry::rate_limited(&call.name, &principal.id);
                let outcome = Outcome::RateLimited {
                    limit: refused.limit,
                    // Rounded up: a call made after the floor of it could
                    // still be a fraction of a millisecond early.
                    retry_after_ms: u64::try_from(
                        refused.retry_after.as_nanos().div_ceil(1_000_000),
                    )
                    .unwrap_or(u64::MAX)
                    .max(1),
                };
                return self.refuse(entry, "rate_limited", outcome);
            }
        };
        // A background call takes one of its principal's task places before
        // anything is written; the place goes with the task.
        let background = as_task || tool.descriptor().background.is_some();
        let task_place = if background {
            match self.task_place(principal) {
                Ok(place) => Some(place),
                Err(outcome) => return self.refuse(entry, "rate_limited", *outcome),
            }
        } else {
            None
        };
        // Wait for a slot of this tool (bounded per tool), then record intent:
        // durable before anything runs.
        let slot = tokio::select! {
            slot = tool_entry.slots.clone().acquire_owned() => slot,
            _ = cancel.cancelled() => {
                let outcome = Outcome::error(format!("the call to `{}` was cancelled before it ran", call.name), false);
                return self.refuse(entry, "cancelled", outcome);
            }
        };
        entry.kind = RecordKind::Intent;
        entry.run_id = format!(
            "{}-{}",
            self.run_prefix,
            self.runs.fetch_add(1, Ordering::Relaxed)
        );
        let timeout = tool_entry.timeout.unwrap_or(self.options.default_timeout);
        let (intent, state) = if admitted.governed() {
            // Admitted for good, the intent recorded and the turn taken, in one step.
            let claim =
                self.flow
                    .claim(self, &admitted, entry.clone(), &arguments, timeout, cancel);
            match claim.await {
                Ok(state) => (None, state),
                Err(refusal) => {
                    entry.kind = RecordKind::Refusal;
                    entry.run_id = String::new();
                    if refusal.reason.is_some() {
                        entry.reason = refusal.reason;
                    }
                    return self.refuse(entry, refusal.status, refusal.outcome);
                }
            }
        } else {
            // A read leaves nothing to reconcile if the process dies while it runs,
            // so its intent is committed with its completion; any other call's
            // intent is committed before it runs.
            let intent = if tool.effect() == Effect::Read {
                Some(entry.clone())
            } else {
                if let Err(e) = self.store.append(entry.clone()) {
                    return store_failure("the audit log", e);
                }
                None
            };
            match self.state(session) {
                Ok(state) => (intent, state),
                Err(e) => return store_failure("the state store", e),
            }
        };
        // Execute: here, or on a task of its own for a background call.
        let run_cancel = if background {
            cancel.child_token()
        } else {
            cancel.clone()
        };
        let limits = RunLimits {
            deadline: Instant::now() + timeout,
            max_attempts: self.options.max_attempts.max(1),
            backoff: self.options.backoff,
        };
        let mut ctx = ToolCtx::new(call.id.clone(), principal.clone())
            .with_state(Arc::new(state.clone()))
            .with_deadline(limits.deadline)
            .with_cancellation(run_cancel.child_token());
        if let Some(key) = tool.idempotency_key(&arguments) {
            ctx = ctx.with_idempotency_key(key);
        }
        if tool.reads_flow() {
            match self.flow_view_in(session, &state, Some(principal)) {
                Ok(Some(view)) => ctx = ctx.with_flow_view(Arc::new(view)),
                Ok(None) => {}
                Err(e) => return store_failure("the state store", e),
            }
        }
        let execution = Execution {
            span: tracing::Span::current(),
            tool,
            entry: tool_entry.clone(),
            store: self.store.clone(),
            clock: self.clock.clone(),
            fail_on_output_mismatch: self.options.fail_on_output_mismatch,
            session: session.to_owned(),
            arguments,
            state,
            ctx,
            limits,
            timeout,
            audit: entry,
            intent,
            admitted,
            started,
            limited,
            slot: match slot {
                Ok(slot) => slot,
                Err(_) => return Outcome::error(format!("`{}` is not ready", call.name), true),
            },
        };
        if let Some(place) = task_place {
            return self.launch(&call, principal, execution, run_cancel, scope, place);
        }
        execution.run(&run_cancel).await.0
    }

    /// Whether `principal` may know of the tool `name`: it is in the catalog and
    /// in the principal's view ([`Principal::sees`]). A call to any other name is
    /// refused as unknown.
    pub fn knows(&self, name: &str, principal: &Principal) -> bool {
        self.catalog
            .find(name)
            .is_some_and(|tool| principal.sees(tool.descriptor()))
    }

    /// Whether words for `principal` may name `name` ([`Principal::may_name`]):
    /// what a flow's reasons and digests hold to.
    pub(crate) fn may_name_to<'p>(
        &'p self,
        principal: &'p Principal,
    ) -> impl Fn(&str) -> bool + 'p {
        |name| principal.may_name(name, self.catalog.find(name).map(|t| t.descriptor()))
    }

    /// The refusal of a call to a tool `principal` does not know of: the same for
    /// a tool outside its view as for a name no tool has, suggesting only tools
    /// it may use (in its view, not denied it by the policy).
    fn unknown_to(&self, name: &str, principal: &Principal) -> Outcome {
        let error = self.catalog.unknown(name, |tool| {
            principal.sees(tool) && self.policy.decide(tool, principal).decision != Decision::Deny
        });
        Outcome::error(error.to_string(), false)
    }

    pub(crate) fn now(&self) -> String {
        humantime::format_rfc3339_millis((self.clock)()).to_string()
    }

    /// The audit entry of a call, before anything is decided.
    fn audit_entry(
        &self,
        kind: RecordKind,
        session: &str,
        call: &ToolCall,
        principal: &Principal,
    ) -> AuditEntry {
        let mut entry = AuditEntry::new(
            self.now(),
            kind,
            String::new(),
            // A caller's id and tool name are kept only in part when huge.
            clip_text(&call.id, MAX_NAME_LEN),
            session,
            principal.id.clone(),
            clip_text(&call.name, MAX_NAME_LEN),
        );
        entry.effect = self.catalog.find(&call.name).map(|t| t.effect());
        Authenticated::stamp(&mut entry);
        entry
    }

    /// Records a call that did not run, and returns its outcome.
    fn refuse(&self, mut entry: AuditEntry, status: &'static str, outcome: Outcome) -> Outcome {
        // A tool the catalog has has an effect; any other name counts as unknown.
        let known = entry.effect.is_some();
        crate::telemetry::call_outcome(&entry.tool, known, status, &entry.principal);
        trace_end(&tracing::Span::current(), &entry, status, None);
        entry.outcome = Some(status.to_owned());
        entry.message = Some(audit_message(&outcome));
        match self.store.append(entry) {
            Ok(_) => outcome,
            Err(e) => store_failure("the audit log", e),
        }
    }
}

/// An outcome's message as the audit log keeps it: cut when long.
fn audit_message(outcome: &Outcome) -> String {
    clip_text(&outcome.message_for_model(), AUDIT_MESSAGE_CHARS).into_owned()
}

fn tool_error(tool: &str, error: ToolError) -> Outcome {
    match error {
        ToolError::Retryable { message, .. } => {
            Outcome::error(format!("`{tool}` failed: {message}"), true)
        }
        ToolError::Permanent { message } => {
            Outcome::error(format!("`{tool}` failed: {message}"), false)
        }
        ToolError::InvalidInput { message } => {
            Outcome::error(format!("`{tool}` refused its input: {message}"), false)
        }
    }
}
