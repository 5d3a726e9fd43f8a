//! What a gate outcome becomes at a program's call site: the value returned, or
//! the Python exception raised.

use super::protocol::ToWorker;
use crate::Outcome;

/// What a gate outcome becomes at the program's call site. The match names every
/// outcome: a new one must be given its exception here (a background tool's
/// `Started { task_id }` is a `RuntimeError` naming the task: its result never
/// reaches the program).
pub(super) fn reply_for(outcome: Outcome) -> ToWorker {
    match outcome {
        Outcome::Ok { value, .. } => ToWorker::Return { value },
        Outcome::Error { message, .. } => ToWorker::Raise {
            exception: error_exception(&message).into(),
            message,
        },
        Outcome::Denied { reason } => ToWorker::Raise {
            exception: "PermissionError".into(),
            message: format!("this call is not allowed: {reason}"),
        },
        Outcome::PendingApproval {
            approval_id,
            reason,
        } => ToWorker::Raise {
            exception: "PermissionError".into(),
            message: format!(
                "this call needs a human's approval ({reason}); approval id {approval_id}. \
                 A program cannot wait for it: end the program, tell the user, and run it again once approved"
            ),
        },
        unknown @ Outcome::Unknown { .. } => ToWorker::Raise {
            exception: "RuntimeError".into(),
            message: unknown.message_for_model(),
        },
        limited @ Outcome::RateLimited { .. } => ToWorker::Raise {
            exception: "RuntimeError".into(),
            message: limited.message_for_model(),
        },
        Outcome::Started { task_id } => ToWorker::Raise {
            exception: "RuntimeError".into(),
            message: format!(
                "this tool runs in the background as task {task_id}; its result does not reach a program: end the program and read it with `toolgate tasks get {task_id}`"
            ),
        },
    }
}

/// The Python exception for a gate error, from the gate's own wording: invalid
/// or oversized arguments are a `ValueError`, a deadline a `TimeoutError`,
/// anything else (the tool failed, a store failed) a `RuntimeError`.
fn error_exception(message: &str) -> &'static str {
    if message.contains("are invalid; nothing ran")
        || message.contains("refused its input")
        || message.contains("bytes a call may carry")
    {
        "ValueError"
    } else if message.contains("did not finish within") {
        "TimeoutError"
    } else {
        "RuntimeError"
    }
}
