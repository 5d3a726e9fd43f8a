//! A program run's own audit records: `run_code`, an intent before anything runs
//! and a completion with how it ended (or paused), and the times they carry.

use std::time::{Duration, Instant};

use serde_json::Value;
use toolgate_core::{AuditEntry, Principal, RecordKind, clip_text};

use super::run_code::RUN_CODE;
use super::run_result::CodeRun;
use crate::Gate;

/// The audit intent of a program run (or of a resume), appended before anything
/// runs; its completion is appended by [`end_audit`].
pub(super) fn begin_audit(
    gate: &Gate,
    run_id: &str,
    call_id: &str,
    session: &str,
    principal: &Principal,
    arguments: Value,
) -> Result<AuditEntry, crate::store::StoreError> {
    let mut entry = AuditEntry::new(
        gate.now(),
        RecordKind::Intent,
        run_id,
        call_id,
        session,
        principal.id.clone(),
        RUN_CODE,
    );
    entry.arguments = arguments;
    crate::gate::Authenticated::stamp(&mut entry);
    gate.store().append(entry.clone())?;
    Ok(entry)
}

/// Records how a run (or a resume) begun by [`begin_audit`] ended.
pub(super) fn end_audit(gate: &Gate, mut entry: AuditEntry, started: Instant, run: &CodeRun) {
    entry.kind = RecordKind::Completion;
    entry.time = gate.now();
    entry.arguments = Value::Null;
    entry.outcome = Some(match &run.error {
        None => run.status.to_owned(),
        Some(error) => error.limit.map_or(error.kind, |_| "limit").to_owned(),
    });
    entry.message = match (&run.error, &run.approval_id) {
        (Some(e), _) => Some(clip_text(&e.message, 4096).into_owned()),
        (None, Some(approval)) => Some(format!("paused for approval {approval}")),
        (None, None) => None,
    };
    entry.duration_ms = Some(millis(started.elapsed()));
    entry.attempts = Some(u32::try_from(run.calls).unwrap_or(u32::MAX));
    let run_id = entry.run_id.clone();
    if let Err(e) = gate.store().append(entry) {
        tracing::warn!(run_id, "the end of a program could not be recorded: {e}");
    }
}

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The gate's clock (tests fix it), read through its timestamps.
pub(super) fn gate_time(gate: &Gate) -> std::time::SystemTime {
    humantime::parse_rfc3339(&gate.now()).unwrap_or_else(|_| std::time::SystemTime::now())
}

pub(super) fn epoch_ms(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(0, millis)
}
