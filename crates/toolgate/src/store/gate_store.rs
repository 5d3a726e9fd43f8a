//! Everything a gate persists, behind one trait: conversation state, approvals and
//! the audit log, with a call's state writes and its completion record kept together,
//! and a governed call's admission and intent record taken in one step.

use std::time::Duration;

use serde_json::Value;
use toolgate_core::{AuditEntry, AuditRecord};

use super::calls::completed_call;
use super::{
    Admission, AdmissionCheck, ApprovalStore, AuditLog, BudgetCounters, CallHistory, CallLedger,
    CodeRunStore, LedgerEntry, LedgerName, RateCounters, Settle, StateStore, StoreError, TaskStore,
    UntrustedText,
};

/// The gate's persistence.
pub trait GateStore:
    StateStore
    + ApprovalStore
    + AuditLog
    + CallHistory
    + TaskStore
    + CodeRunStore
    + CallLedger
    + UntrustedText
    + BudgetCounters
{
    /// Applies a call's state writes, adds it to the session's call history and
    /// appends its completion record — after its intent record, when that was not
    /// appended before the call ran — as one transaction where the store has them:
    /// after a crash, all or nothing. Returns the completion record.
    fn complete(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        if !writes.is_empty() {
            self.apply(session, writes)?;
        }
        let (tool, ok, time) = completed_call(&completion);
        self.record_call(session, tool, ok, time)?;
        if let Some(intent) = intent {
            self.append(intent)?;
        }
        self.append(completion)
    }

    /// Appends `intent` and claims `name` for its run (`entry`), in one
    /// transaction where the store has them, unless an entry that has not
    /// expired by `now_ms` holds the name: then that entry, and nothing is
    /// written.
    fn append_claiming(
        &self,
        intent: AuditEntry,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        if let Some(held) = self.claim_ledger(name, entry, now_ms)? {
            return Ok(Some(held));
        }
        match self.append(intent) {
            Ok(_) => Ok(None),
            Err(e) => {
                // Nothing ran: the name is free again.
                let _ = self.settle_ledger(name, &entry.run_id, None, 0);
                Err(e)
            }
        }
    }

    /// [`GateStore::complete`], settling the run's claim (`settle`) with its
    /// outcome in the same transaction where the store has them.
    fn complete_settling(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
        settle: &Settle,
    ) -> Result<AuditRecord, StoreError> {
        let run_id = completion.run_id.clone();
        let record = self.complete(session, writes, intent, completion)?;
        self.settle_ledger(
            &settle.name,
            &run_id,
            Some(&settle.outcome),
            settle.expires_ms,
        )?;
        Ok(record)
    }

    /// Admits a call of a conversation a flow governs, atomically across every
    /// process sharing the store: unless another run holds the session's turn
    /// ([`Admission::Busy`]), runs `check` on the session's state and call history
    /// as they stand, and if it passes, takes the turn for `intent.run_id` (for at
    /// most `lease`) and appends `intent`, all in one transaction.
    fn admit(
        &self,
        session: &str,
        intent: AuditEntry,
        lease: Duration,
        check: &mut AdmissionCheck<'_>,
    ) -> Result<Admission, StoreError>;

    /// Whether the store takes a call now, for a readiness probe: `Ok` once it
    /// answered. A store that is down errs; one that is locked may block, so the
    /// caller bounds the wait. By default, reads the audit log's last record.
    fn probe(&self) -> Result<(), StoreError> {
        self.tail(1).map(drop)
    }

    /// The rate-limit counters this store keeps for every process sharing it, or
    /// `None` (the default) when each gate counts its calls in its own process.
    fn rate_counters(&self) -> Option<&dyn RateCounters> {
        None
    }

    /// [`GateStore::complete`] for a call [`GateStore::admit`] let in (its intent is
    /// in the log already), releasing the session's turn in the same transaction.
    fn complete_turn(
        &self,
        session: &str,
        writes: &[(String, Value)],
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError>;

    /// Records what became of a pending `intent`, as the operator found out: appends
    /// `completion`, adds the call to its conversation's history unless it never ran
    /// (outcome `cancelled`), and releases the conversation's turn if the run still
    /// holds it, in one transaction.
    fn resolve_run(
        &self,
        intent: &AuditRecord,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError>;
}
