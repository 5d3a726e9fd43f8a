//! Everything a gate persists, behind one trait: conversation state, approvals and
//! the audit log, with a call's state writes and its completion record kept together,
//! and a governed call's admission and intent record taken in one step.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};
use toolgate_core::{Anchor, AuditEntry, AuditRecord, VerifyReport};

use super::calls::completed_call;
use super::group_commit::{Write, ran};
use super::turns::{
    Admission, AdmissionCheck, MemoryTurns, memory_turn, release_in_memory, standing_in_memory,
};
use super::{
    Approval, ApprovalRequest, ApprovalStore, AuditLog, CallHistory, CodeRunStore, Grant,
    MemoryApprovals, MemoryAuditLog, MemoryCallHistory, MemoryCodeRuns, MemoryStore, MemoryTasks,
    PausedRun, RateCounters, RecordedCall, Resolution, SqliteStore, StateStore, StoreError,
    TaskRecord, TaskStatus, TaskStore,
};
use toolgate_core::Outcome;

/// The gate's persistence.
pub trait GateStore:
    StateStore + ApprovalStore + AuditLog + CallHistory + TaskStore + CodeRunStore
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

impl GateStore for SqliteStore {
    fn complete(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::complete(session, writes, intent, completion))
    }

    fn admit(
        &self,
        session: &str,
        intent: AuditEntry,
        lease: Duration,
        check: &mut AdmissionCheck<'_>,
    ) -> Result<Admission, StoreError> {
        self.admit_in_turn(session, intent, lease, check)
    }

    fn complete_turn(
        &self,
        session: &str,
        writes: &[(String, Value)],
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::complete_turn(session, writes, completion))
    }

    fn resolve_run(
        &self,
        intent: &AuditRecord,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::resolve_run(intent, completion))
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
