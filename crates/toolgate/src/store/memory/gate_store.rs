//! The gate's whole persistence in memory: each concern's memory store side by side,
//! with a turn map for admissions.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use toolgate_core::{Anchor, AuditEntry, AuditRecord, Outcome, VerifyReport};

use super::turns::{MemoryTurns, memory_turn, release_in_memory, standing_in_memory};
use super::{
    MemoryApprovals, MemoryAuditLog, MemoryBudgetCounters, MemoryCallHistory, MemoryCallLedger,
    MemoryCodeRuns, MemoryStore, MemoryTasks, MemoryUntrustedText,
};
use crate::store::calls::ran;
use crate::store::{
    Admission, AdmissionCheck, Approval, ApprovalRequest, ApprovalStore, AuditLog, CallHistory,
    CallLedger, CodeRunStore, GateStore, Grant, LedgerEntry, LedgerName, PausedRun, RecordedCall,
    Resolution, StateStore, StoreError, TaskRecord, TaskStatus, TaskStore, UntrustedText,
};

/// A gate store in memory, for tests and throwaway runs.
#[derive(Default)]
pub struct MemoryGateStore {
    state: MemoryStore,
    approvals: MemoryApprovals,
    audit: MemoryAuditLog,
    calls: MemoryCallHistory,
    turns: MemoryTurns,
    tasks: MemoryTasks,
    code_runs: MemoryCodeRuns,
    ledger: MemoryCallLedger,
    untrusted: MemoryUntrustedText,
    budgets: MemoryBudgetCounters,
}

impl GateStore for MemoryGateStore {
    fn admit(
        &self,
        session: &str,
        intent: AuditEntry,
        lease: Duration,
        check: &mut AdmissionCheck<'_>,
    ) -> Result<Admission, StoreError> {
        // Held throughout, so admissions to this store take turns as SQLite's write
        // lock makes them.
        let mut turns = self.turns.lock();
        if let Some(refused) = standing_in_memory(&turns, session, &intent.run_id) {
            return Ok(refused);
        }
        if !check(&self.state.load(session)?, &self.calls.calls(session)?) {
            return Ok(Admission::Refused);
        }
        turns.insert(session.to_owned(), memory_turn(&intent, lease));
        match self.audit.append(intent) {
            Ok(record) => Ok(Admission::Admitted(Box::new(record))),
            Err(e) => {
                turns.remove(session);
                Err(e)
            }
        }
    }

    fn complete_turn(
        &self,
        session: &str,
        writes: &[(String, Value)],
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        let run_id = completion.run_id.clone();
        let done = self.complete(session, writes, None, completion);
        release_in_memory(&mut self.turns.lock(), session, &run_id);
        done
    }

    fn resolve_run(
        &self,
        intent: &AuditRecord,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        let e = &intent.entry;
        if let Some(ok) = ran(&completion) {
            self.calls
                .record_call(&e.session, &e.tool, ok, &completion.time)?;
        }
        let record = self.audit.append(completion)?;
        release_in_memory(&mut self.turns.lock(), &e.session, &e.run_id);
        Ok(record)
    }
}

impl StateStore for MemoryGateStore {
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        self.state.load(session)
    }
    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError> {
        self.state.get(session, key)
    }
    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError> {
        self.state.apply(session, writes)
    }
    fn reset(&self, session: &str) -> Result<(), StoreError> {
        self.state.reset(session)
    }
}

impl ApprovalStore for MemoryGateStore {
    fn resolve(
        &self,
        request: &ApprovalRequest,
        now: SystemTime,
    ) -> Result<Resolution, StoreError> {
        self.approvals.resolve(request, now)
    }
    fn list(&self, include_decided: bool) -> Result<Vec<Approval>, StoreError> {
        self.approvals.list(include_decided)
    }
    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        ApprovalStore::get(&self.approvals, id)
    }
    fn approve_by(
        &self,
        id: &str,
        grant: Option<Grant>,
        by: &toolgate_core::Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        self.approvals.approve_by(id, grant, by, now)
    }
    fn deny_by(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &toolgate_core::Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        self.approvals.deny_by(id, reason, by, now)
    }
    fn give_back(&self, id: &str) -> Result<(), StoreError> {
        self.approvals.give_back(id)
    }
}

impl AuditLog for MemoryGateStore {
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        self.audit.append(entry)
    }
    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit.tail(n)
    }
    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError> {
        self.audit.verify_anchored(anchors)
    }
    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit.pending()
    }
}

impl CallHistory for MemoryGateStore {
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError> {
        self.calls.record_call(session, tool, ok, time)
    }
    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
        self.calls.calls(session)
    }
    fn calls_from(&self, session: &str, from: u64) -> Result<Vec<RecordedCall>, StoreError> {
        self.calls.calls_from(session, from)
    }
    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        self.calls.forget_calls(session)
    }
}

impl TaskStore for MemoryGateStore {
    fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        self.tasks.create_task(task)
    }
    fn finish_task(
        &self,
        id: &str,
        status: TaskStatus,
        outcome: &Outcome,
        at_ms: u64,
    ) -> Result<bool, StoreError> {
        self.tasks.finish_task(id, status, outcome, at_ms)
    }
    fn interrupt_task(&self, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        self.tasks.interrupt_task(id, at_ms)
    }
    fn request_task_cancel(&self, id: &str) -> Result<(), StoreError> {
        self.tasks.request_task_cancel(id)
    }
    fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.tasks.task(id)
    }
    fn all_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        self.tasks.all_tasks()
    }
    fn drop_expired_tasks(&self, now_ms: u64) -> Result<usize, StoreError> {
        self.tasks.drop_expired_tasks(now_ms)
    }
}

impl CodeRunStore for MemoryGateStore {
    fn pause_run(&self, run: &PausedRun) -> Result<(), StoreError> {
        self.code_runs.pause_run(run)
    }
    fn take_run(&self, run_id: &str) -> Result<PausedRun, StoreError> {
        self.code_runs.take_run(run_id)
    }
    fn release_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.code_runs.release_run(run_id)
    }
    fn finish_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.code_runs.finish_run(run_id)
    }
    fn paused_runs(&self) -> Result<Vec<PausedRun>, StoreError> {
        self.code_runs.paused_runs()
    }
}

impl CallLedger for MemoryGateStore {
    fn ledger_entry(
        &self,
        name: &LedgerName,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        self.ledger.ledger_entry(name, now_ms)
    }
    fn claim_ledger(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        self.ledger.claim_ledger(name, entry, now_ms)
    }
    fn settle_ledger(
        &self,
        name: &LedgerName,
        run_id: &str,
        outcome: Option<&Outcome>,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        self.ledger.settle_ledger(name, run_id, outcome, expires_ms)
    }
    fn ledger_of_run(&self, run_id: &str) -> Result<Vec<(LedgerName, LedgerEntry)>, StoreError> {
        self.ledger.ledger_of_run(run_id)
    }
}

impl UntrustedText for MemoryGateStore {
    fn record_untrusted_text(
        &self,
        session: &str,
        run_id: &str,
        prints: &toolgate_core::Fingerprints,
    ) -> Result<(), StoreError> {
        self.untrusted
            .record_untrusted_text(session, run_id, prints)
    }
    fn untrusted_text(&self, session: &str) -> Result<toolgate_core::Fingerprints, StoreError> {
        self.untrusted.untrusted_text(session)
    }
}

impl crate::store::BudgetCounters for MemoryGateStore {
    fn charge_budgets(
        &self,
        charges: &[crate::store::BudgetCharge],
    ) -> Result<crate::store::BudgetTaken, StoreError> {
        self.budgets.charge_budgets(charges)
    }
    fn refund_budgets(&self, charges: &[crate::store::BudgetCharge]) -> Result<(), StoreError> {
        self.budgets.refund_budgets(charges)
    }
    fn budgets_spent(&self) -> Result<Vec<crate::store::BudgetSpent>, StoreError> {
        self.budgets.budgets_spent()
    }
}
