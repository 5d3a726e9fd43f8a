//! Asynchronous approval: the draft MCP extension SEP-2848
//! (`io.modelcontextprotocol/tool-approval`, as its pull request stood on
//! 2026-09-25), on the tasks extension.
//!
//! A call that waits for an approver, from a client that declared the tasks
//! extension, answers at once with a task (`status: working`, the policy's
//! reason as its `statusMessage`, and the structured denial of SEP-2643 with
//! `remediation: available` and a `task` hint). The task's id is the approval's.
//! The call itself is kept in the store's call ledger, so the task survives a
//! restart and any instance sharing the store answers for it.
//!
//! There is no process watching it: `tasks/get` moves it on. While the approval
//! is pending, the task is working. Once a person answered, the first
//! `tasks/get` on any instance takes the run (a ledger claim, so one instance
//! runs it) and runs the call through the gate — where policy and the flow
//! decide it again with the state as it is then, and the approval is consumed —
//! and the task completes with the call's result and a disposition in its
//! `_meta`: `approved-executed`, `denied-not-executed`, `execution-error` or
//! `outcome-unknown`. `tasks/cancel` withdraws the call: the approval is denied
//! by the caller, and the task ends `cancelled`, nothing run. A task not
//! answered within a day is forgotten (its approval stays for the operator).

use std::time::SystemTime;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, CreateTaskResult, DetailedTask, GetTaskResult, MetaObject, Task, TaskPayload,
    TaskStatus as McpStatus,
};
use serde_json::{Value, json};

use super::denial::AUTHORIZATION_META;
use super::result::call_result;
use crate::store::{ApprovalStatus, ApprovalStore, LedgerEntry, LedgerName, now_ms};
use crate::{Gate, Outcome, Principal, ToolCall};

/// The extension's id, declared in the server's capabilities.
pub(crate) const TOOL_APPROVAL_EXTENSION: &str = "io.modelcontextprotocol/tool-approval";

/// The draft this module follows.
pub const ASYNC_APPROVAL_DRAFT: &str = "SEP-2848 (2026-09-25)";

/// The `_meta` key of a completed task's result saying what became of the call.
const DISPOSITION_META: &str = "io.modelcontextprotocol/tool-approval-disposition";

/// How long a task waits for an answer before it is forgotten.
const AWAITING_MS: u64 = 24 * 60 * 60 * 1000;

/// How long one instance holds the run of an answered call before another may
/// take it (the call's own deadline is shorter).
const RUN_LEASE_MS: u64 = 10 * 60 * 1000;

/// How often a client is asked to poll.
const POLL_INTERVAL_MS: u64 = 2_000;

/// The reason a withdrawn call's task records.
const WITHDRAWN: &str = "the client cancelled the task before the call ran; nothing ran";

/// Keeps `call`, waiting for approval `approval_id`, as a task, and returns the
/// task for the `tools/call` answer. `envelope`: add SEP-2643's denial.
pub(crate) fn open(
    gate: &Gate,
    session: &str,
    principal: &Principal,
    call: ToolCall,
    approval_id: &str,
    reason: &str,
    envelope: bool,
) -> Result<CreateTaskResult, McpError> {
    let now = now_ms();
    let entry = LedgerEntry {
        tool: call.name.clone(),
        call_hash: String::new(),
        run_id: approval_id.to_owned(),
        session: session.to_owned(),
        principal: principal.id.clone(),
        outcome: None,
        lease_ms: u64::MAX,
        expires_ms: now.saturating_add(AWAITING_MS),
        call: Some(call),
    };
    let name = LedgerName::awaiting(approval_id);
    let held = gate
        .store()
        .claim_ledger(&name, &entry, now)
        .map_err(store_error)?;
    let entry = held.unwrap_or(entry);
    let mut result = CreateTaskResult::new(working(approval_id, &entry, reason));
    if envelope {
        result.meta = Some(available());
    }
    Ok(result)
}

/// `tasks/get` for a task this module keeps: `None` when `id` is not one.
pub(crate) async fn get(
    gate: &Gate,
    principal: &Principal,
    id: &str,
    envelope: bool,
) -> Option<Result<GetTaskResult, McpError>> {
    let entry = match held_by(gate, principal, id)? {
        Ok(entry) => entry,
        Err(e) => return Some(Err(e)),
    };
    Some(advance(gate, principal, id, entry, envelope).await)
}

/// `tasks/cancel` for a task this module keeps: `None` when `id` is not one.
pub(crate) fn cancel(gate: &Gate, principal: &Principal, id: &str) -> Option<Result<(), McpError>> {
    let entry = match held_by(gate, principal, id)? {
        Ok(entry) => entry,
        Err(e) => return Some(Err(e)),
    };
    if entry.outcome.is_some() {
        return Some(Ok(()));
    }
    let store = gate.store();
    let by = toolgate_core::Answerer::new(&principal.id, "tasks/cancel");
    let withdrawn = Outcome::Denied {
        reason: WITHDRAWN.to_owned(),
    };
    // A request already answered stays as answered; the call is withdrawn all
    // the same.
    let _ = store.deny_by(id, Some(WITHDRAWN), &by, SystemTime::now());
    let name = LedgerName::awaiting(id);
    let done = store.settle_ledger(&name, id, Some(&withdrawn), entry.expires_ms);
    Some(done.map_err(store_error))
}

/// The task `id` if this module keeps it and `principal` made its call (to
/// anyone else it is unknown, as a task id nobody has).
fn held_by(gate: &Gate, principal: &Principal, id: &str) -> Option<Result<LedgerEntry, McpError>> {
    let name = LedgerName::awaiting(id);
    match gate.store().ledger_entry(&name, now_ms()) {
        Ok(Some(entry)) if entry.principal == principal.id => Some(Ok(entry)),
        Ok(Some(_)) => Some(Err(McpError::invalid_params(
            format!("no task has id `{id}`"),
            None,
        ))),
        Ok(None) => None,
        Err(e) => Some(Err(store_error(e))),
    }
}

/// The task as it stands, running the call first if it was just answered.
async fn advance(
    gate: &Gate,
    principal: &Principal,
    id: &str,
    entry: LedgerEntry,
    envelope: bool,
) -> Result<GetTaskResult, McpError> {
    if let Some(outcome) = &entry.outcome {
        return Ok(ended(gate, id, &entry, outcome));
    }
    let store = gate.store();
    let approval = ApprovalStore::get(store.as_ref(), id).map_err(store_error)?;
    let reason = approval
        .as_ref()
        .map_or("", |a| a.reason.as_str())
        .to_owned();
    let answered = approval.is_some_and(|a| a.status != ApprovalStatus::Pending);
    let Some(call) = entry.call.clone().filter(|_| answered) else {
        let mut result = GetTaskResult::new(DetailedTask::new(
            working(id, &entry, &reason),
            TaskPayload::Working,
        ));
        if envelope {
            result.meta = Some(available());
        }
        return Ok(result);
    };
    // Answered: one instance takes the run, the others report it working.
    let now = now_ms();
    let running = LedgerEntry {
        lease_ms: now.saturating_add(RUN_LEASE_MS),
        expires_ms: now.saturating_add(RUN_LEASE_MS),
        call: None,
        ..entry.clone()
    };
    let taken = store
        .claim_ledger(&LedgerName::running(id), &running, now)
        .map_err(store_error)?
        .is_none();
    if !taken {
        let working = working(id, &entry, "approved; the call is running");
        return Ok(GetTaskResult::new(DetailedTask::new(
            working,
            TaskPayload::Working,
        )));
    }
    let outcome = gate.call(&entry.session, call, principal).await;
    store
        .settle_ledger(
            &LedgerName::awaiting(id),
            id,
            Some(&outcome),
            entry.expires_ms,
        )
        .map_err(store_error)?;
    Ok(ended(gate, id, &entry, &outcome))
}

/// The task of a call that ended with `outcome`.
fn ended(gate: &Gate, id: &str, entry: &LedgerEntry, outcome: &Outcome) -> GetTaskResult {
    let task = Task::new(
        id,
        McpStatus::Completed,
        created_at(entry),
        rfc3339(now_ms()),
    )
    .with_ttl_ms(AWAITING_MS);
    if matches!(outcome, Outcome::Denied { reason } if reason == WITHDRAWN) {
        // (`DetailedTask::new` sets the status the payload says.)
        return GetTaskResult::new(DetailedTask::new(task, TaskPayload::Cancelled));
    }
    let tool = gate.catalog().find(&entry.tool).map(|t| t.as_ref());
    let mut result = call_result(outcome, tool);
    let disposition = match outcome {
        Outcome::Ok { .. } => Some("approved-executed"),
        Outcome::Denied { .. } => Some("denied-not-executed"),
        Outcome::Unknown { .. } => Some("outcome-unknown"),
        Outcome::Error { .. } => Some("execution-error"),
        _ => None,
    };
    let meta = result
        .meta
        .get_or_insert_with(|| MetaObject(Default::default()));
    if let Some(disposition) = disposition {
        meta.0
            .insert(DISPOSITION_META.to_owned(), json!(disposition));
    }
    if let Outcome::Denied { .. } = outcome {
        meta.0.insert(
            AUTHORIZATION_META.to_owned(),
            json!({"reason": "insufficient_authorization", "remediation": "unavailable"}),
        );
    }
    let result: CallToolResult = result;
    let result = serde_json::to_value(result)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    GetTaskResult::new(DetailedTask::new(task, TaskPayload::Completed { result }))
}

/// The task while its call waits (or runs).
fn working(id: &str, entry: &LedgerEntry, reason: &str) -> Task {
    let message = if reason.is_empty() {
        "waiting for a person's approval".to_owned()
    } else {
        format!("waiting for a person's approval: {reason}")
    };
    Task::new(id, McpStatus::Working, created_at(entry), rfc3339(now_ms()))
        .with_status_message(message)
        .with_ttl_ms(AWAITING_MS)
        .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// SEP-2643's envelope for a call a person can still approve out of band,
/// through the task.
fn available() -> MetaObject {
    let envelope: Value = json!({
        "reason": "insufficient_authorization",
        "remediation": "available",
        "remediationHints": [{"type": "task"}],
    });
    let mut meta = MetaObject(Default::default());
    meta.0.insert(AUTHORIZATION_META.to_owned(), envelope);
    meta
}

fn created_at(entry: &LedgerEntry) -> String {
    rfc3339(entry.expires_ms.saturating_sub(AWAITING_MS))
}

fn rfc3339(ms: u64) -> String {
    let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(time).to_string()
}

fn store_error(e: crate::store::StoreError) -> McpError {
    McpError::internal_error(e.to_string(), None)
}
