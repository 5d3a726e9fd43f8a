//! The audit log: its records and hash chain (core's words, re-exported), and
//! what an operator does to a store's log from any front end — the CLI's
//! `toolgate audit resolve` and the console's Resolve button are one operation.

use std::str::FromStr;
use std::time::SystemTime;

pub use toolgate_core::{
    AUDIT_ARGUMENTS_BYTES, AUDIT_STRING_BYTES, Anchor, AnchorError, AuditEntry, AuditRecord,
    CLIPPED_KEY, ChainBreak, ChainVerifier, ECHO_CHARS, GENESIS_HASH, RecordKind, VerifyReport,
    audit_arguments, canonical_json, chain_hash, clip_for_audit, clip_text, content_hash, json_len,
    lower_hex, sha256_hex, verify_chain, verify_chain_anchored,
};

use crate::{GateStore, store::StoreError};

/// What became of a call a crash left pending, as the person who checked found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingOutcome {
    /// It took effect.
    Ok,
    /// It failed.
    Error,
    /// It never ran.
    Cancelled,
}

impl PendingOutcome {
    /// `ok`, `error` or `cancelled`: the outcome the completion record carries.
    pub fn as_str(self) -> &'static str {
        match self {
            PendingOutcome::Ok => "ok",
            PendingOutcome::Error => "error",
            PendingOutcome::Cancelled => "cancelled",
        }
    }
}

impl FromStr for PendingOutcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ok" => Ok(PendingOutcome::Ok),
            "error" => Ok(PendingOutcome::Error),
            "cancelled" => Ok(PendingOutcome::Cancelled),
            other => Err(format!(
                "the outcome `{other}` is not ok, error or cancelled"
            )),
        }
    }
}

/// Why a pending call could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No call with that run id is pending (it completed, or never was).
    #[error("no pending call has run id `{run_id}`")]
    NotPending {
        /// The run id asked for.
        run_id: String,
    },
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Records that the pending call `run_id` ended with `outcome`, as found by
/// `resolved_by` (`the operator`, `alice in the console`), with an optional
/// note; the completion record it appended. It also frees the conversation's
/// turn the run held, and counts the call in its history unless it never ran,
/// so that a flow's `once` counts it.
pub fn resolve_pending(
    store: &dyn GateStore,
    run_id: &str,
    outcome: PendingOutcome,
    resolved_by: &str,
    note: Option<&str>,
) -> Result<AuditRecord, ResolveError> {
    let Some(intent) = store
        .pending()?
        .into_iter()
        .find(|r| r.entry.run_id == run_id)
    else {
        return Err(ResolveError::NotPending {
            run_id: run_id.to_owned(),
        });
    };
    let message = match note {
        Some(note) => format!("resolved by {resolved_by}: {note}"),
        None => format!("resolved by {resolved_by}"),
    };
    let entry = AuditEntry {
        time: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        kind: RecordKind::Completion,
        outcome: Some(outcome.as_str().to_owned()),
        message: Some(message),
        duration_ms: None,
        attempts: None,
        auth: None,
        credential: None,
        ..intent.entry.clone()
    };
    Ok(store.resolve_run(&intent, entry)?)
}
