//! The one way into the gate: [`Gate::call_with`] and its plain forms, and the
//! stages every call goes through, in the order the module doc of `gate` lists
//! them.
//!
//! Each stage is a method that either lets the call on (with what it found) or
//! stops it with a `Stop`; the spine, `Gate::through_stages`, is the list of
//! stages. A stage that refuses fills the audit entry with what decided, and the
//! spine records the refusal. Most stages are here; authorize is in
//! `authorize`, and recall and the key's claim in `once`. What comes after the
//! intent is recorded (running the tool, the state writes, the completion) is
//! `Execution`'s.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use toolgate_core::{
    AuditEntry, Decision, DynTool, Effect, MAX_NAME_LEN, Principal, RecordKind, ToolCtx,
    audit_arguments, call_hash, clip_text, json_len,
};
use tracing::Instrument;

use super::arguments::invalid_arguments_message;
use super::call_span::{call_span, trace_end};
use super::execution::Execution;
use super::limiter::{Limited, RatePermit};
use super::once::Keyed;
use super::run::RunLimits;
use super::store_failure::store_failure;
use super::task::{TaskPlace, TaskScope};
use super::{Entry, Gate, Outcome, ToolCall, audit_message, tool_error};
use crate::flow::Admitted;

/// How [`Gate::call_with`] runs a call, beyond what the call is. The default is
/// a plain call: never cancelled, run where it is made unless its tool runs in
/// the background, in a span of its own.
#[derive(Default, Clone)]
pub struct CallOptions {
    /// Stops the call when cancelled: while it waits for a slot (then nothing
    /// ran), or while its tool runs (then the completion says `cancelled`). A
    /// background call's task is cancelled with it; [`Gate::cancel_task`]
    /// cancels one task.
    pub cancel: CancellationToken,
    /// Run it as a background task whatever its tool: the caller gets
    /// [`Outcome::Started`] once its intent is recorded.
    pub as_task: bool,
    /// Wraps a background call's future before it is spawned (for MCP, to give
    /// the task the client to report progress to).
    pub scope: Option<TaskScope>,
    /// The span to run it in instead of its own: a server's span for the request
    /// that carries this one call, so that a call served is one span, not two.
    /// It must declare the fields of the gate's own `execute_tool` span, which
    /// the gate records (`toolgate.outcome`, `error.type` and the rest).
    pub span: Option<tracing::Span>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancel", &self.cancel)
            .field("as_task", &self.as_task)
            .field("scope", &self.scope.is_some())
            .field("span", &self.span)
            .finish()
    }
}

/// A call as it was asked of the gate: what, in which conversation, by whom
/// and how; what every stage reads.
pub(super) struct Request<'a> {
    pub(super) session: &'a str,
    pub(super) call: &'a ToolCall,
    pub(super) principal: &'a Principal,
    pub(super) options: &'a CallOptions,
}

/// Why a call stopped before its tool ran.
pub(super) enum Stop {
    /// A stage refused it: recorded in the audit log with this status (the
    /// audit entry says what decided), and the caller told `outcome`.
    Refused(&'static str, Box<Outcome>),
    /// It could not go on (the store failed): the caller is told `outcome`,
    /// and nothing more is recorded.
    Failed(Box<Outcome>),
}

impl Stop {
    /// A refusal, recorded with `status`.
    pub(super) fn refused(status: &'static str, outcome: Outcome) -> Self {
        Stop::Refused(status, Box::new(outcome))
    }

    /// A failure to go on, recorded nowhere.
    pub(super) fn failed(outcome: Outcome) -> Self {
        Stop::Failed(Box::new(outcome))
    }
}

/// What a call that passed every stage up to its recorded intent takes to run.
struct Cleared {
    tool: Arc<dyn DynTool>,
    entry: Arc<Entry>,
    arguments: Value,
    admitted: Admitted,
    /// Its places among the calls in flight the rate limits count.
    limited: RatePermit,
    /// Its principal's task place, when it runs in the background.
    place: Option<TaskPlace>,
    slot: OwnedSemaphorePermit,
    /// A read's intent, committed with its completion.
    intent: Option<AuditEntry>,
    state: Map<String, Value>,
    timeout: Duration,
    limits: RunLimits,
    ctx: ToolCtx,
    /// What cancels the run.
    run_cancel: CancellationToken,
    /// The idempotency key it holds, if it has one.
    keyed: Option<Keyed>,
}

impl Gate {
    /// Runs one call in conversation `session` on behalf of `principal`:
    /// [`Gate::call_with`] with the default [`CallOptions`].
    pub async fn call(&self, session: &str, call: ToolCall, principal: &Principal) -> Outcome {
        self.call_with(session, call, principal, CallOptions::default())
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
        let options = CallOptions::default();
        futures::future::join_all(
            calls
                .into_iter()
                .map(|call| self.call_with(session, call, principal, options.clone())),
        )
        .await
    }

    /// Runs `call` as a background task whatever its tool: [`Gate::call_with`]
    /// with [`CallOptions::as_task`]. The outcome is [`Outcome::Started`] (or the
    /// refusal, if it was refused); read the result with [`Gate::task`] or
    /// [`Gate::await_task`].
    pub async fn start(&self, session: &str, call: ToolCall, principal: &Principal) -> Outcome {
        let options = CallOptions {
            as_task: true,
            ..CallOptions::default()
        };
        self.call_with(session, call, principal, options).await
    }

    /// Runs one call through every stage of the gate, as `options` say: the
    /// one path every caller's call takes.
    ///
    /// The call is one `execute_tool {tool}` span, named and attributed by the
    /// OpenTelemetry GenAI conventions for tool execution, with toolgate's own
    /// attributes under `toolgate.`; its stages that take time are its children.
    pub async fn call_with(
        &self,
        session: &str,
        call: ToolCall,
        principal: &Principal,
        options: CallOptions,
    ) -> Outcome {
        let span = match options.span.clone() {
            Some(span) => span,
            None => call_span(session, &call, principal),
        };
        // A call's future holds every stage's state (kilobytes); boxed, the
        // futures of everything that awaits it stay small and are cheap to move.
        Box::pin(
            self.call_in_span(session, call, principal, options)
                .instrument(span),
        )
        .await
    }

    /// The call in its span: every stage up to the recorded intent, then the
    /// tool run here or launched as a task.
    async fn call_in_span(
        &self,
        session: &str,
        call: ToolCall,
        principal: &Principal,
        options: CallOptions,
    ) -> Outcome {
        let started = Instant::now();
        let mut audit = self.audit_entry(session, &call, principal);
        let request = Request {
            session,
            call: &call,
            principal,
            options: &options,
        };
        let cleared = match self.through_stages(&request, &mut audit).await {
            Ok(cleared) => cleared,
            Err(Stop::Refused(status, outcome)) => return self.refuse(audit, status, *outcome),
            Err(Stop::Failed(outcome)) => return *outcome,
        };
        let execution = Execution {
            span: tracing::Span::current(),
            tool: cleared.tool,
            entry: cleared.entry,
            store: self.store.clone(),
            clock: self.clock.clone(),
            fail_on_output_mismatch: self.options.fail_on_output_mismatch,
            session: session.to_owned(),
            arguments: cleared.arguments,
            state: cleared.state,
            ctx: cleared.ctx,
            limits: cleared.limits,
            timeout: cleared.timeout,
            audit,
            intent: cleared.intent,
            admitted: cleared.admitted,
            started,
            limited: cleared.limited,
            slot: cleared.slot,
            keyed: cleared.keyed,
        };
        // Launch (a background call) or execute.
        match cleared.place {
            Some(place) => self.launch(
                &call,
                principal,
                execution,
                cleared.run_cancel,
                options.scope,
                place,
            ),
            None => execution.run(&cleared.run_cancel).await.0,
        }
    }

    /// The spine: every stage a call passes before its tool runs, in order.
    async fn through_stages(
        &self,
        request: &Request<'_>,
        audit: &mut AuditEntry,
    ) -> Result<Cleared, Stop> {
        let (call, principal, cancel) = (request.call, request.principal, &request.options.cancel);
        self.bound(call)?;
        let (tool, entry) = self.resolve(call, principal, audit)?;
        let arguments = self.validate(call, principal, &tool, &entry, audit)?;
        let key = call.idempotency_key.as_deref();
        self.recall(request.session, key, tool.as_ref(), audit)?;
        let admitted = self.admit(request, &arguments, audit).await?;
        let authorized = self.authorize(request, &tool, &entry, &arguments, &admitted, audit)?;
        // From here to the intent, a stop gives back an approval the call
        // consumed (it did not run, so the answer still stands) and what its
        // budgets were charged.
        let cleared = async {
            let limited = self.rate_limit(call, principal)?;
            let background = request.options.as_task || tool.descriptor().background.is_some();
            let place = if background {
                Some(
                    self.task_place(principal)
                        .map_err(|o| Stop::Refused("rate_limited", o))?,
                )
            } else {
                None
            };
            let slot = self.slot(call, &entry, cancel).await?;
            let timeout = entry.timeout.unwrap_or(self.options.default_timeout);
            audit.run_id = format!(
                "{}-{}",
                self.run_prefix,
                self.runs.fetch_add(1, Ordering::Relaxed)
            );
            // A call with effects outside a flow claims its key with its intent.
            let apart = admitted.governed() || tool.effect() == Effect::Read;
            let claimed = match key {
                Some(key) if apart => self.claim_key(key, audit, timeout, None).map(Some),
                _ => Ok(None),
            };
            let keyed = match claimed {
                Ok(keyed) => keyed,
                Err(stop) => {
                    // A refusal: no run of its own.
                    audit.run_id = String::new();
                    return Err(stop);
                }
            };
            let recorded = self
                .record_intent(request, &tool, &arguments, &admitted, timeout, audit)
                .await;
            let (intent, state, keyed) = match recorded {
                Ok((intent, state, with_intent)) => (intent, state, keyed.or(with_intent)),
                Err(stop) => {
                    // Nothing ran: the key is free for the next try.
                    if let Some(keyed) = &keyed
                        && let Err(e) =
                            self.store
                                .settle_ledger(&keyed.name, &audit.run_id, None, 0)
                    {
                        tracing::warn!(error = %e, "an idempotency key could not be released");
                    }
                    audit.run_id = String::new();
                    return Err(stop);
                }
            };
            // What cancels the run: the caller's token, or a child of it for a
            // background call (whose task may be cancelled alone).
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
            let ctx = self.tool_ctx(request, &tool, &arguments, &state, limits, &run_cancel)?;
            Ok::<_, Stop>(Cleared {
                tool,
                entry,
                arguments,
                admitted,
                limited,
                place,
                slot,
                intent,
                state,
                timeout,
                limits,
                ctx,
                run_cancel,
                keyed,
            })
        }
        .await;
        if cleared.is_err() {
            self.undo(&authorized, audit);
        }
        cleared
    }

    /// Bound: arguments past the limit, and an idempotency key that is not one,
    /// are refused before anything reads them.
    fn bound(&self, call: &ToolCall) -> Result<(), Stop> {
        if let Some(key) = &call.idempotency_key
            && !toolgate_core::ToolCall::is_valid_key(key)
        {
            let outcome = Outcome::error(
                format!(
                    "the idempotency key `{}` is not one: a key is 1 to 255 printable ASCII characters without spaces, such as a UUID; nothing ran",
                    clip_text(key, 64).escape_debug()
                ),
                false,
            );
            return Err(Stop::refused("invalid", outcome));
        }
        let size = json_len(&call.arguments);
        let max = self.options.max_argument_bytes;
        if size <= max {
            return Ok(());
        }
        let outcome = Outcome::error(
            format!(
                "the arguments for `{}` are {size} bytes, more than the {max} bytes a call may carry; nothing ran. Send less (pass large content by reference, such as a URL or a file path, if the tool takes one)",
                clip_text(&call.name, MAX_NAME_LEN),
            ),
            false,
        );
        Err(Stop::refused("too_large", outcome))
    }

    /// Resolve: the tool the call names, if `principal` may use it and it is
    /// ready.
    ///
    /// A tool outside the principal's view is unknown to it, exactly as a name
    /// no tool has, and only tools it may use are suggested; nothing about it
    /// (argument rules, flow, availability) is checked, so nothing leaks. A tool
    /// the policy denies this principal is refused before its arguments or the
    /// flow are looked at.
    fn resolve(
        &self,
        call: &ToolCall,
        principal: &Principal,
        audit: &mut AuditEntry,
    ) -> Result<(Arc<dyn DynTool>, Arc<Entry>), Stop> {
        let tool = match self.catalog.find(&call.name) {
            Some(tool) if principal.sees(tool.descriptor()) => tool.clone(),
            found => {
                let unknown = self.unknown_to(&call.name, principal);
                if let Some(hidden) = found {
                    let verdict = self.policy.decide(hidden.descriptor(), principal);
                    audit.decision = Some(Decision::Deny);
                    audit.reason = Some(verdict.audit_reason());
                }
                return Err(Stop::refused("unknown_tool", unknown));
            }
        };
        let verdict = self.policy.decide(tool.descriptor(), principal);
        if verdict.decision == Decision::Deny {
            audit.decision = Some(verdict.decision);
            audit.reason = Some(verdict.audit_reason());
            let outcome = Outcome::Denied {
                reason: verdict.reason,
            };
            return Err(Stop::refused("denied", outcome));
        }
        let Some(entry) = self.entries.get(&call.name) else {
            let outcome = Outcome::error(format!("`{}` is not ready", call.name), true);
            return Err(Stop::refused("unknown_tool", outcome));
        };
        if let Err(error) = tool.available() {
            return Err(Stop::refused("unavailable", tool_error(&call.name, error)));
        }
        Ok((tool, entry.clone()))
    }

    /// Validate: the arguments against the tool's input schema and argument
    /// rules; the audit (and the span, for the arguments it may show) then
    /// keeps them as the tool will read them.
    fn validate(
        &self,
        call: &ToolCall,
        principal: &Principal,
        tool: &Arc<dyn DynTool>,
        entry: &Entry,
        audit: &mut AuditEntry,
    ) -> Result<Value, Stop> {
        if let Some(inject) = tool.injected() {
            super::inject::refuse_supplied(call, inject)?;
        }
        let mut arguments = match entry.arguments.check(&call.arguments) {
            Ok(arguments) => arguments,
            Err(problems) => {
                let outcome =
                    Outcome::error(invalid_arguments_message(&call.name, &problems), false);
                return Err(Stop::refused("invalid", outcome));
            }
        };
        let secret = match tool.injected() {
            Some(inject) => super::inject::fill(call, principal, inject, &mut arguments)?,
            None => Vec::new(),
        };
        let schema = match entry.schema_redacts {
            true => tool.input_schema(),
            false => &Value::Null,
        };
        audit.arguments = audit_arguments(&arguments, schema);
        super::inject::mask(&mut audit.arguments, &secret);
        // What "the same call" means, where something reads it: a key, a call
        // in doubt, an approval (an unkeyed read is spared the hashing).
        if call.idempotency_key.is_some() || tool.effect() != Effect::Read {
            audit.call_hash = Some(call_hash(&call.name, &entry.definition, &arguments));
        }
        audit.idempotency_key = call.idempotency_key.clone();
        if let Some(names) = &entry.span_arguments {
            let span = tracing::Span::current();
            if !span.is_disabled()
                && let Some(text) = crate::telemetry::span_arguments(&audit.arguments, names)
            {
                span.record("gen_ai.tool.call.arguments", text);
            }
        }
        Ok(arguments)
    }

    /// Admit: the conversation's flow may not allow this call yet (see
    /// `crate::flow`). The caller is told only what its view allows; the audit
    /// keeps the full reason.
    async fn admit(
        &self,
        request: &Request<'_>,
        arguments: &Value,
        audit: &mut AuditEntry,
    ) -> Result<Admitted, Stop> {
        let Request {
            session,
            call,
            principal,
            ..
        } = *request;
        self.flow
            .admit(self, session, &call.name, arguments, principal)
            .await
            .map_err(|refusal| {
                audit.reason = refusal.reason;
                Stop::refused(refusal.status, refusal.outcome)
            })
    }

    /// Rate limit: checked once the call is known to be allowed, so that a call
    /// refused for any other reason (unknown, invalid, out of turn, denied,
    /// waiting for approval) spends nothing; and before its intent is recorded
    /// or it waits for a slot, so a refused call costs no write.
    fn rate_limit(&self, call: &ToolCall, principal: &Principal) -> Result<RatePermit, Stop> {
        let counters = self.store.rate_counters();
        match self.limiter.admit_counted(principal, &call.name, counters) {
            Ok(permit) => Ok(permit),
            Err(Limited::Store(e)) => {
                Err(Stop::failed(store_failure("the rate-limit counters", e)))
            }
            Err(Limited::Refused(refused)) => {
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
                Err(Stop::refused("rate_limited", outcome))
            }
        }
    }

    /// Slot: waits for one of the tool's slots (its calls that may run at once),
    /// or stops, with nothing run, when `cancel` fires first.
    async fn slot(
        &self,
        call: &ToolCall,
        entry: &Entry,
        cancel: &CancellationToken,
    ) -> Result<OwnedSemaphorePermit, Stop> {
        tokio::select! {
            slot = entry.slots.clone().acquire_owned() => slot.map_err(|_| {
                Stop::failed(Outcome::error(format!("`{}` is not ready", call.name), true))
            }),
            _ = cancel.cancelled() => {
                let outcome = Outcome::error(format!("the call to `{}` was cancelled before it ran", call.name), false);
                Err(Stop::refused("cancelled", outcome))
            }
        }
    }

    /// Record intent: durable before anything runs, and the conversation's
    /// state the call runs with. A call the flow governs is admitted for good,
    /// its intent recorded and its turn taken, in one step; a read's intent is
    /// kept to be committed with its completion (it leaves nothing to reconcile
    /// if the process dies while it runs); any other call's is committed now,
    /// with its idempotency key claimed in the same step (which it returns).
    async fn record_intent(
        &self,
        request: &Request<'_>,
        tool: &Arc<dyn DynTool>,
        arguments: &Value,
        admitted: &Admitted,
        timeout: Duration,
        audit: &mut AuditEntry,
    ) -> Result<(Option<AuditEntry>, Map<String, Value>, Option<Keyed>), Stop> {
        let cancel = &request.options.cancel;
        audit.kind = RecordKind::Intent;
        if admitted.governed() {
            let claim = self
                .flow
                .claim(self, admitted, audit.clone(), arguments, timeout, cancel);
            return match claim.await {
                Ok(state) => Ok((None, state, None)),
                Err(refusal) => {
                    audit.kind = RecordKind::Refusal;
                    if refusal.reason.is_some() {
                        audit.reason = refusal.reason;
                    }
                    Err(Stop::refused(refusal.status, refusal.outcome))
                }
            };
        }
        let (intent, keyed) = if tool.effect() == Effect::Read {
            (Some(audit.clone()), None)
        } else {
            let keyed = match request.call.idempotency_key.as_deref() {
                Some(key) => Some(self.claim_key(key, audit, timeout, Some(audit.clone()))?),
                None => match self.store.append(audit.clone()) {
                    Ok(_) => None,
                    Err(e) => return Err(Stop::failed(store_failure("the audit log", e))),
                },
            };
            (None, keyed)
        };
        match self.state(request.session) {
            Ok(state) => Ok((intent, state, keyed)),
            Err(e) => Err(Stop::failed(store_failure("the state store", e))),
        }
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

    /// The audit entry of a call, before anything is decided: a refusal until
    /// its intent is recorded, with the arguments as the caller sent them.
    fn audit_entry(&self, session: &str, call: &ToolCall, principal: &Principal) -> AuditEntry {
        let mut entry = AuditEntry::new(
            self.now(),
            RecordKind::Refusal,
            String::new(),
            // A caller's id and tool name are kept only in part when huge.
            clip_text(&call.id, MAX_NAME_LEN),
            session,
            principal.id.clone(),
            clip_text(&call.name, MAX_NAME_LEN),
        );
        entry.effect = self.catalog.find(&call.name).map(|t| t.effect());
        entry.arguments = audit_arguments(&call.arguments, &Value::Null);
        super::Authenticated::stamp(&mut entry);
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
