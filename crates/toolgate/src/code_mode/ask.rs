//! Asking a person for an approval while a program waits, so the program can go on
//! within one request instead of pausing to the store.
//!
//! When a call inside a program needs approval, [`super::CodeMode::run_asking`]
//! hands the approval to an [`AskApproval`] (over MCP: an elicitation to the
//! client). If the asker records an answer in the approvals store
//! ([`crate::store::ApprovalStore::approve`] or [`crate::store::ApprovalStore::deny`]) and
//! returns `true`, the host submits the same call to the gate again — which now
//! finds it decided — and the program continues at its call site without a
//! snapshot: an approved call runs (once), a denied one raises `PermissionError`.
//! If it returns `false` (no answer, the client cannot ask, it declined to say),
//! the program is paused to the store exactly as without an asker, and
//! `run_code` returns `pending_approval` with the run id to resume.

use futures::future::BoxFuture;

/// Asks a person about one pending approval while a program waits.
///
/// Time spent in [`AskApproval::ask`] is time waiting for a person: it does not
/// count against the program's wall-clock limit.
pub trait AskApproval: Send + Sync {
    /// Ask about approval `approval_id` (`reason`: why policy asks, for the
    /// person). Return `true` once an answer (approve or deny) is recorded in the
    /// gate's approvals store; `false` to pause the program instead.
    fn ask<'a>(&'a self, approval_id: &'a str, reason: &'a str) -> BoxFuture<'a, bool>;
}

/// An asker that never asks: every approval pauses the program.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeverAsk;

impl AskApproval for NeverAsk {
    fn ask<'a>(&'a self, _approval_id: &'a str, _reason: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
    }
}
