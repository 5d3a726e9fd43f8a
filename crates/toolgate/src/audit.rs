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
///
/// A call whose outcome was recorded as unknown is resolved the same way: the
/// record is appended, the identical call in its conversation is no longer
/// refused, and its idempotency key (if any) answers a repeat with what the
/// operator found (or is freed, if it never ran).
pub fn resolve_pending(
    store: &dyn GateStore,
    run_id: &str,
    outcome: PendingOutcome,
    resolved_by: &str,
    note: Option<&str>,
) -> Result<AuditRecord, ResolveError> {
    let message = match note {
        Some(note) => format!("resolved by {resolved_by}: {note}"),
        None => format!("resolved by {resolved_by}"),
    };
    // The run's entries still waiting for what became of it: a key whose run
    // was lost or ended unknown, a call in doubt. A settled key is not.
    let mut held = store.ledger_of_run(run_id)?;
    held.retain(|(_, entry)| {
        matches!(
            entry.outcome,
            None | Some(toolgate_core::Outcome::Unknown { .. })
        )
    });
    let pending = store
        .pending()?
        .into_iter()
        .find(|r| r.entry.run_id == run_id);
    let record = match (pending, held.first()) {
        (Some(intent), _) => resolve_intent(store, &intent, outcome, message.clone())?,
        (None, Some((_, entry))) => {
            let mut completion = AuditEntry::new(
                humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
                RecordKind::Completion,
                run_id,
                "",
                entry.session.clone(),
                entry.principal.clone(),
                entry.tool.clone(),
            );
            completion.outcome = Some(outcome.as_str().to_owned());
            completion.message = Some(message.clone());
            completion.call_hash = Some(entry.call_hash.clone());
            store.append(completion)?
        }
        (None, None) => {
            return Err(ResolveError::NotPending {
                run_id: run_id.to_owned(),
            });
        }
    };
    for (name, entry) in held {
        let found = match outcome {
            _ if !name.is_key() => None,
            PendingOutcome::Cancelled => None,
            PendingOutcome::Ok => Some(toolgate_core::Outcome::Ok {
                value: serde_json::Value::Null,
                structured: None,
                text: format!(
                    "an operator found that this call took effect ({message}; run {run_id})"
                ),
                notes: Vec::new(),
            }),
            PendingOutcome::Error => Some(toolgate_core::Outcome::error(
                format!("an operator found that this call failed ({message}; run {run_id})"),
                false,
            )),
        };
        store.settle_ledger(&name, run_id, found.as_ref(), entry.expires_ms)?;
    }
    Ok(record)
}

/// Calls whose outcome was recorded as unknown and that no operator has
/// resolved yet, newest first (among the latest 1,000 unknown outcomes): each
/// holds back the same call in its conversation until resolved.
pub fn unresolved_unknowns(store: &dyn GateStore) -> Result<Vec<AuditRecord>, StoreError> {
    // (A key still running is not here: its run may be going on.)
    let filter = crate::store::AuditFilter {
        outcome: Some("unknown".into()),
        ..Default::default()
    };
    let mut found = Vec::new();
    let now = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    for record in store.query(&filter, None, 1000)? {
        let e = &record.entry;
        let name = crate::store::LedgerName::in_doubt(
            &e.session,
            e.call_hash.as_deref().unwrap_or_default(),
        );
        // Still in doubt, and by this run (not a later identical one).
        if store
            .ledger_entry(&name, now)?
            .is_some_and(|doubt| doubt.run_id == e.run_id)
        {
            found.push(record);
        }
    }
    Ok(found)
}

/// The completion of a pending intent, as an operator found it.
fn resolve_intent(
    store: &dyn GateStore,
    intent: &AuditRecord,
    outcome: PendingOutcome,
    message: String,
) -> Result<AuditRecord, ResolveError> {
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
    Ok(store.resolve_run(intent, entry)?)
}
