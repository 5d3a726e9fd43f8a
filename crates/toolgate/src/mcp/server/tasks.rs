//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) over the
//! gate's background tasks.
//!
//! A `tools/call` of a background tool from a client that declares the extension
//! (at `initialize`, or in the request's `_meta` capabilities) answers at once
//! with a `CreateTaskResult`; so does any call whose request asks for a task with
//! `_meta["toolgate/task"]: true` (the extension lets only the server decide, so
//! the ask is toolgate's own). `tasks/get` reads the task from the gate's store —
//! the source of truth, which outlives the client's connection, the session and
//! a restart of the server (a task that was running then reads as `failed`, its
//! error saying it was interrupted) — and inlines the call's result once it ended;
//! `tasks/cancel` cancels it through the gate; `tasks/update` has nothing to answer
//! (the gate asks no input mid-task) and ignores what it is sent. A finished task
//! stays readable for the gate's task TTL. While it runs, the tool's progress goes
//! to the client, under the token of the call that started it, where the
//! connection still carries notifications.
//!
//! A background tool called by a client without the extension runs as a task all
//! the same, and its call waits for it ([`call_through`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask,
    ExtensionCapabilities, GetTaskParams, GetTaskResult, JsonObject, ServerCapabilities, Task,
    TaskPayload, TaskStatus as McpStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::inflight::CallGuard;
use super::result::call_result;
use super::session::caller::Caller;
use super::tools::arguments;
use crate::mcp::{Downstream, LogLevel};
use crate::{
    Gate, Outcome, Principal, ToolCall, gate::CallOptions, gate::TaskScope, store::TaskRecord,
    store::TaskStatus,
};

/// The `_meta` key a request sets to `true` to run any call as a task.
pub(super) const TASK_META: &str = "toolgate/task";

/// How often a client is asked to poll a working task.
const POLL_INTERVAL_MS: u64 = 500;

/// Declares the extension in the server's capabilities.
pub(crate) fn advertise(capabilities: &mut ServerCapabilities) {
    capabilities
        .extensions
        .get_or_insert_with(ExtensionCapabilities::new)
        .insert(
            rmcp::model::TASKS_EXTENSION_ID.to_owned(),
            JsonObject::new(),
        );
}

/// The scope a background call runs in: the client that made it, for progress,
/// and (when given) the server's count of calls in flight, so that shutdown lets
/// the task finish within its grace period before it cancels it.
fn scope(downstream: &Downstream, guard: Option<CallGuard>) -> TaskScope {
    let downstream = downstream.clone();
    let guard = Mutex::new(guard);
    Arc::new(move |future| {
        let guard = guard.lock().unwrap_or_else(PoisonError::into_inner).take();
        let downstream = downstream.clone();
        Box::pin(async move {
            let _in_flight = guard;
            downstream.scope(future).await
        })
    })
}

/// Runs a call through the gate for a caller that waits for its result: a
/// background call runs as a task (reporting to `downstream`) and is waited for;
/// `request` cancelling cancels it.
pub(crate) async fn call_through(
    gate: &Gate,
    session: &str,
    call: ToolCall,
    principal: &Principal,
    downstream: &Downstream,
    cancel: &CancellationToken,
    span: Option<tracing::Span>,
) -> Outcome {
    let options = CallOptions {
        cancel: cancel.clone(),
        as_task: false,
        scope: Some(scope(downstream, None)),
        span,
    };
    let outcome = gate.call_with(session, call, principal, options).await;
    let Outcome::Started { task_id } = &outcome else {
        return outcome;
    };
    let waited = tokio::select! {
        task = gate.await_task(task_id, Duration::from_secs(365 * 24 * 3600), principal) => task,
        _ = cancel.cancelled() => {
            let _ = gate.cancel_task(task_id, principal);
            gate.await_task(task_id, Duration::from_secs(5), principal).await
        }
    };
    match waited {
        Ok(task) => match &task.outcome {
            Some(outcome) => outcome.clone(),
            None => ended_without_outcome(&task),
        },
        Err(e) => Outcome::error(e.to_string(), false),
    }
}

fn ended_without_outcome(task: &TaskRecord) -> Outcome {
    Outcome::error(
        format!(
            "task {} of `{}` ended {} without a result",
            task.id, task.tool, task.status
        ),
        false,
    )
}

/// The `tools/call` of a client that may get a task: `None` unless it declared the
/// extension and the call is one to run as a task (a background tool's, or one
/// that asks), which then answers with the task (or the refusal, if the gate
/// refused it).
pub(crate) async fn start(
    shared: &Shared,
    caller: &Caller,
    session: &str,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    log_level: &LogLevel,
) -> Option<CallToolResponse> {
    if !context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
    {
        return None;
    }
    let offering = &caller.offering;
    let gate = &offering.gate;
    let name = offering.tools.canonical(&request.name).to_owned();
    let principal = &caller.principal;
    let tool = gate
        .catalog()
        .find(&name)
        .filter(|_| gate.knows(&name, principal))?;
    // The transport moves a request's `_meta` to its context.
    let asked = [request.meta.as_ref(), Some(&context.meta)]
        .into_iter()
        .flatten()
        .any(|meta| meta.get(TASK_META) == Some(&Value::Bool(true)));
    if tool.descriptor().background.is_none() && !asked {
        return None;
    }
    let downstream = Downstream::new(
        context.peer.clone(),
        context.meta.get_progress_token(),
        log_level.clone(),
    );
    let call = ToolCall::new(
        format!("mcp-{}", context.id),
        name.clone(),
        arguments(request.arguments.clone()),
    );
    // A server shutting down takes no new calls (the plain path says so).
    let guard = shared.inflight.enter()?;
    let cancel = shared.inflight.cancellation().child_token();
    let outcome = gate
        .call_with(
            session,
            call,
            principal,
            CallOptions {
                cancel,
                as_task: true,
                scope: Some(scope(&downstream, Some(guard))),
                span: None,
            },
        )
        .await;
    let Outcome::Started { task_id } = &outcome else {
        return Some(CallToolResponse::from(call_result(
            &outcome,
            Some(tool.as_ref()),
        )));
    };
    match gate.task(task_id, principal) {
        Ok(task) => Some(CallToolResponse::Task(CreateTaskResult::new(seed(&task)))),
        Err(e) => Some(CallToolResponse::from(super::result::error_result(
            e.to_string(),
        ))),
    }
}

/// The task's base fields as the extension shows them.
fn seed(task: &TaskRecord) -> Task {
    let mut seed = Task::new(
        task.id.clone(),
        McpStatus::Working,
        task.created_at.clone(),
        task.updated_at.clone(),
    )
    .with_ttl_ms(task.ttl_ms)
    .with_poll_interval_ms(POLL_INTERVAL_MS);
    if task.status == TaskStatus::Interrupted {
        seed = seed.with_status_message(
            "the server running it stopped before it ended; it is never re-run",
        );
    }
    seed
}

/// `tasks/get`: the task as it stands, with the call's result once it ended.
pub(crate) fn get(caller: &Caller, request: &GetTaskParams) -> Result<GetTaskResult, McpError> {
    let gate = caller.offering.gate.clone();
    let task = read(&gate, &caller.principal, &request.task_id)?;
    let payload = match (&task.status, &task.outcome) {
        (TaskStatus::Working, _) => TaskPayload::Working,
        (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
        (TaskStatus::Completed | TaskStatus::Failed, Some(outcome)) => {
            let tool = gate.catalog().find(&task.tool).map(|t| t.as_ref());
            let result = serde_json::to_value(call_result(outcome, tool))
                .ok()
                .and_then(|v| v.as_object().cloned())
                .unwrap_or_default();
            TaskPayload::Completed { result }
        }
        (TaskStatus::Interrupted, _) | (_, None) => {
            let error = json!({
                "code": -32603,
                "message": format!(
                    "task {} of `{}` was interrupted: the server running it stopped before it ended, and it is never re-run; unless it only read, the operator finds it in `toolgate audit pending`",
                    task.id, task.tool
                ),
            });
            TaskPayload::Failed {
                error: error.as_object().cloned().unwrap_or_default(),
            }
        }
    };
    Ok(GetTaskResult::new(DetailedTask::new(seed(&task), payload)))
}

/// `tasks/cancel`: cancels the task through the gate (a finished one stays as it
/// ended).
pub(crate) fn cancel(caller: &Caller, request: &CancelTaskParams) -> Result<(), McpError> {
    let gate = caller.offering.gate.clone();
    gate.cancel_task(&request.task_id, &caller.principal)
        .map(|_| ())
        .map_err(unknown)
}

/// `tasks/update`: the gate asks no input mid-task, so there is nothing to answer;
/// the responses are ignored, as the extension says of keys it does not expect.
pub(crate) fn update(caller: &Caller, request: &UpdateTaskParams) -> Result<(), McpError> {
    let gate = caller.offering.gate.clone();
    read(&gate, &caller.principal, &request.task_id).map(|_| ())
}

fn read(gate: &Gate, principal: &Principal, id: &str) -> Result<TaskRecord, McpError> {
    gate.task(id, principal).map_err(unknown)
}

fn unknown(error: crate::gate::TaskError) -> McpError {
    match error {
        crate::gate::TaskError::Unknown { .. } => McpError::invalid_params(error.to_string(), None),
        other => McpError::internal_error(other.to_string(), None),
    }
}
