//! One `tools/call` served: through the gate as the downstream client's call,
//! under the request's span, with an approval asked of the client's user (by
//! elicitation, or on the stateless revision by an `input_required` result) and
//! the call run again once it is answered.

use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Session;
use super::caller::Caller;
use crate::mcp::server::approval::{self, Answer};
use crate::mcp::server::input_required;
use crate::mcp::server::result::{call_result, error_result};
use crate::mcp::server::stateless;
use crate::mcp::server::tasks;
use crate::mcp::server::tools::arguments;
use crate::mcp::server::{approval_task, denial};
use crate::mcp::{Downstream, LogLevel};
use crate::store::ApprovalStore;
use crate::{Gate, Outcome, ToolCall};

impl Session {
    /// Runs `call` through the gate, as the downstream client's call; stops when
    /// the client cancels the request or the server's grace period ends.
    async fn run(
        &self,
        caller: &Caller,
        session: &str,
        call: ToolCall,
        downstream: &Downstream,
        request: &CancellationToken,
        span: Option<tracing::Span>,
    ) -> Outcome {
        let cancel = self.shared.inflight.cancellation().child_token();
        let gate = &caller.offering.gate;
        let gate_call = downstream.clone().scope(tasks::call_through(
            gate,
            session,
            call,
            &caller.principal,
            downstream,
            &cancel,
            span,
        ));
        tokio::pin!(gate_call);
        tokio::select! {
            biased;
            outcome = &mut gate_call => outcome,
            _ = request.cancelled() => {
                cancel.cancel();
                gate_call.await
            }
        }
    }

    /// Asks the client's user to approve a pending call and records the answer.
    /// `None` when they answered (the call is decided: run it again); otherwise
    /// why nobody answered.
    async fn ask(
        &self,
        gate: &Gate,
        context: &RequestContext<RoleServer>,
        downstream: &Downstream,
        approval_id: &str,
        reason: &str,
        who: &str,
    ) -> Option<String> {
        let shared = &self.shared;
        let why = if !downstream.supports_elicitation() {
            "the MCP client cannot ask its user".to_owned()
        } else {
            let answer = approval::ask(
                &context.peer,
                gate,
                approval_id,
                reason,
                shared.options.approval_timeout,
                shared.inflight.cancellation(),
            )
            .instrument(tracing::info_span!(
                "toolgate.approval.wait",
                toolgate.approval_id = approval_id
            ))
            .await;
            let by = toolgate_core::Answerer::new(who, "elicitation");
            approval::record(gate, approval_id, &answer, &by);
            match answer {
                Answer::None(why) => why,
                Answer::Approve | Answer::Deny => return None,
            }
        };
        if shared.hold_approvals
            && approval::wait_for_answer(
                gate,
                approval_id,
                shared.options.approval_timeout,
                shared.inflight.cancellation(),
            )
            .await
        {
            return None;
        }
        Some(why)
    }

    /// Serves one `tools/call` in `span`, the request's span: the gate's call
    /// is that span (an approval asked for makes the second run its child).
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        span: &tracing::Span,
    ) -> Result<CallToolResponse, McpError> {
        let shared = self.shared.clone();
        let caller = self.caller(&context)?;
        let gate = &caller.offering.gate;
        let name = caller.offering.tools.canonical(&request.name).to_owned();
        let Some(_guard) = shared.inflight.enter() else {
            return Ok(error_result(
                "the server is shutting down and takes no new calls; call again once it is back",
            )
            .into());
        };
        let session = self.conversation(&context, &caller.principal)?;
        #[cfg(feature = "code-mode")]
        if let Some(code) = shared.code.as_ref().filter(|code| code.runs(&name)) {
            let (principal, arguments) = (&caller.principal, request.arguments);
            let result = code.serve(
                &shared, &name, gate, &session, principal, arguments, &context,
            );
            let result = result.await;
            self.tell_if_tools_changed(&caller, &session, &context)
                .await;
            return Ok(result.into());
        }
        let binding = input_required::binding(&caller.principal.id, &session, &name);
        if let Some(state) = &request.request_state {
            let retry =
                shared
                    .questions
                    .retry(state, request.input_responses.as_ref(), &binding)?;
            match retry.answer {
                // Asked, but not answered: ask again.
                None => {
                    let reason = pending_reason(gate, &retry.approval_id);
                    return Ok(shared
                        .questions
                        .ask(gate, &retry.approval_id, &reason, &binding)
                        .into());
                }
                Some(answer) => {
                    let by = toolgate_core::Answerer::new(&caller.principal.id, "input_required");
                    approval::record(gate, &retry.approval_id, &answer, &by);
                    if let Answer::None(why) = &answer {
                        let reason = pending_reason(gate, &retry.approval_id);
                        let message =
                            approval::pending_message(&retry.approval_id, &reason, Some(why));
                        return Ok(self.awaiting(error_result(message), &retry.approval_id));
                    }
                }
            }
        }
        let mut call = ToolCall::new(
            format!("mcp-{}", context.id),
            name.clone(),
            arguments(request.arguments),
        );
        call.idempotency_key = idempotency_key(&context)?;
        call.secure_arguments = secure_arguments(gate, &name, &call.arguments, &context)?;
        if let Some(label) = context.meta.get(toolgate_core::FLOW_ORIGIN_META) {
            call.untrusted_origin = toolgate_core::untrusted_contributors(label);
        }
        let is_stateless = stateless::is_stateless(&context);
        let log_level = if is_stateless {
            LogLevel::fixed(stateless::log_level(&context))
        } else {
            self.log_level.clone()
        };
        let downstream = Downstream::new(
            context.peer.clone(),
            context.meta.get_progress_token(),
            log_level,
        );
        // A tool outside the principal's view is as unknown as a name no tool has.
        let known = gate.knows(&name, &caller.principal);
        let mut outcome = self
            .run(
                &caller,
                &session,
                call.clone(),
                &downstream,
                &context.ct,
                Some(span.clone()),
            )
            .await;
        if !known {
            return Err(McpError::invalid_params(outcome.message_for_model(), None));
        }
        if let Outcome::PendingApproval {
            approval_id,
            reason,
        } = &outcome
        {
            // Only an approver may answer, and the client can take a task: the
            // call waits as a task (SEP-2848) instead of failing now.
            let tasks = context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks());
            if shared.options.async_approvals
                && tasks
                && approval::client_may_not_answer(gate, approval_id).is_some()
            {
                let envelope = shared.options.authorization_denials;
                let principal = &caller.principal;
                let task = approval_task::open(
                    gate,
                    &session,
                    principal,
                    call,
                    approval_id,
                    reason,
                    envelope,
                )?;
                return Ok(CallToolResponse::Task(task));
            }
            if is_stateless {
                if let Some(why) = approval::client_may_not_answer(gate, approval_id) {
                    let message = approval::pending_message(approval_id, reason, Some(&why));
                    return Ok(self.awaiting(error_result(message), approval_id));
                }
                if stateless::can_elicit_form(&context) {
                    return Ok(shared
                        .questions
                        .ask(gate, approval_id, reason, &binding)
                        .into());
                }
                let why = "the MCP client cannot ask its user";
                let message = approval::pending_message(approval_id, reason, Some(why));
                return Ok(self.awaiting(error_result(message), approval_id));
            }
            match self
                .ask(
                    gate,
                    &context,
                    &downstream,
                    approval_id,
                    reason,
                    &caller.principal.id,
                )
                .await
            {
                Some(why) => {
                    let message = approval::pending_message(approval_id, reason, Some(&why));
                    return Ok(self.awaiting(error_result(message), approval_id));
                }
                None => {
                    outcome = self
                        .run(&caller, &session, call, &downstream, &context.ct, None)
                        .await;
                }
            }
        }
        if let (true, Outcome::RateLimited { retry_after_ms, .. }) = (is_stateless, &outcome) {
            crate::mcp::server::too_many::refused_whole(&context, *retry_after_ms);
        }
        self.reveal_found(&session, &name, &outcome);
        self.tell_if_tools_changed(&caller, &session, &context)
            .await;
        let tool = gate.catalog().get(&name).ok().map(|t| t.as_ref());
        let result = call_result(&outcome, tool);
        if shared.options.authorization_denials {
            return Ok(denial::with_denial(result, &outcome).into());
        }
        Ok(result.into())
    }

    /// A result for a call waiting for a person, with the draft structured
    /// denial when the server puts it on.
    fn awaiting(&self, result: CallToolResult, approval_id: &str) -> CallToolResponse {
        if self.shared.options.authorization_denials {
            return denial::awaiting(result, approval_id).into();
        }
        result.into()
    }
}

/// The `_meta` key a client puts a call's idempotency key under.
pub(crate) const IDEMPOTENCY_META: &str = "toolgate/idempotency_key";

/// The call's idempotency key: `_meta["toolgate/idempotency_key"]`, else the
/// HTTP request's `Idempotency-Key` header. A key that is not one is refused,
/// saying so.
pub(crate) fn idempotency_key(
    context: &RequestContext<RoleServer>,
) -> Result<Option<String>, McpError> {
    let from_header = || {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.headers.get("idempotency-key"))
            .map(|value| value.to_str().unwrap_or("\u{0}").to_owned())
    };
    let key = match context.meta.get(IDEMPOTENCY_META) {
        Some(serde_json::Value::String(key)) => Some(key.clone()),
        Some(_) => Some(String::new()),
        None => from_header(),
    };
    let Some(key) = key else {
        return Ok(None);
    };
    if toolgate_core::ToolCall::is_valid_key(&key) {
        Ok(Some(key))
    } else {
        Err(McpError::invalid_params(
            format!(
                "an idempotency key (`_meta[\"{IDEMPOTENCY_META}\"]` or the `Idempotency-Key` header) is a string of 1 to 255 printable ASCII characters without spaces, such as a UUID; nothing ran"
            ),
            None,
        ))
    }
}

/// The call's secure arguments (SEP-3221, a draft): what the host sent under
/// `_meta` (see `secure_arguments`). A call whose model-supplied arguments name
/// a secure parameter is refused as invalid params, as the draft asks: such a
/// value may only come from the host.
fn secure_arguments(
    gate: &crate::Gate,
    name: &str,
    arguments: &serde_json::Value,
    context: &RequestContext<RoleServer>,
) -> Result<serde_json::Map<String, serde_json::Value>, McpError> {
    let secure = gate
        .catalog()
        .find(name)
        .and_then(|tool| tool.descriptor().secure_input_schema.as_ref())
        .and_then(|schema| schema.get("properties"))
        .and_then(serde_json::Value::as_object);
    if let (Some(secure), Some(given)) = (secure, arguments.as_object())
        && let Some(param) = given.keys().find(|k| secure.contains_key(*k))
    {
        return Err(McpError::invalid_params(
            format!(
                "`{}` is a secure parameter of `{name}`: only the host may send it, in `secureArguments`; nothing ran",
                toolgate_core::clip_text(param, 64)
            ),
            None,
        ));
    }
    match context
        .meta
        .get(super::super::secure_arguments::SECURE_META)
    {
        None => Ok(serde_json::Map::new()),
        Some(serde_json::Value::Object(values)) => Ok(values.clone()),
        Some(_) => Err(McpError::invalid_params(
            "`secureArguments` must be an object of the secure parameters' values; nothing ran",
            None,
        )),
    }
}

/// The server span of one `tools/call`, parented by the trace context its client
/// sent: in `_meta` (SEP-414), else in the HTTP request's `traceparent` header.
///
/// It is also the gate's span of the call it carries (the MCP conventions
/// ask that an MCP span add its attributes to the tool execution's span rather
/// than make a second), so it is named as the gate names a call and declares
/// every field the gate records.
pub(super) fn request_span(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    caller: &Caller,
    session: &str,
) -> tracing::Span {
    use toolgate_core::{MAX_NAME_LEN, clip_text};
    use tracing::field::Empty;
    let name = clip_text(caller.offering.tools.canonical(&request.name), MAX_NAME_LEN);
    let id = request_id(&context.id);
    let id = clip_text(&id, MAX_NAME_LEN);
    // Joined, not formatted: a recorded `format_args!` runs the formatting
    // machinery for each field.
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = ["execute_tool ", &name].concat().as_str(),
        otel.kind = "server",
        otel.status_code = Empty,
        error.type = Empty,
        mcp.method.name = "tools/call",
        jsonrpc.request.id = id.as_ref(),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name.as_ref(),
        gen_ai.tool.call.id = ["mcp-", &id].concat().as_str(),
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        toolgate.principal = caller.principal.id.as_str(),
        toolgate.session = session,
        toolgate.effect = Empty,
        toolgate.decision = Empty,
        toolgate.outcome = Empty,
        toolgate.attempts = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let headers = context
        .extensions
        .get::<axum::http::request::Parts>()
        .map(|parts| &parts.headers);
    let in_meta = context.meta.get_traceparent().is_some();
    crate::telemetry::follow_remote_parent(&span, |field| {
        if in_meta {
            context.meta.get(field)?.as_str().map(str::to_owned)
        } else {
            headers?.get(field)?.to_str().ok().map(str::to_owned)
        }
    });
    span
}

/// A JSON-RPC request id as the conventions record it: a string.
fn request_id(id: &rmcp::model::NumberOrString) -> std::borrow::Cow<'_, str> {
    match id {
        rmcp::model::NumberOrString::Number(n) => n.to_string().into(),
        rmcp::model::NumberOrString::String(s) => s.as_ref().into(),
    }
}

/// The reason an approval is asked for, as the approvals store has it.
fn pending_reason(gate: &Gate, approval_id: &str) -> String {
    ApprovalStore::get(gate.store().as_ref(), approval_id)
        .ok()
        .flatten()
        .map(|approval| approval.reason)
        .unwrap_or_else(|| "the policy asks a person first".to_owned())
}
