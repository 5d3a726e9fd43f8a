//! Everything a gate persists, behind one trait: conversation state, approvals and
//! the audit log, with a call's state writes and its completion record kept together.

use std::time::SystemTime;

use serde_json::{Map, Value};
use toolgate_core::{Anchor, AuditEntry, AuditRecord, VerifyReport};

use super::calls::completed_call;
use super::group_commit::{Completion, Write};
use super::{
    Approval, ApprovalRequest, ApprovalStore, AuditLog, CallHistory, Grant, MemoryApprovals,
    MemoryAuditLog, MemoryCallHistory, MemoryStore, RecordedCall, Resolution, SqliteStore,
    StateStore, StoreError,
};

/// The gate's persistence.
pub trait GateStore: StateStore + ApprovalStore + AuditLog + CallHistory {
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
}

/// A gate store in memory, for tests and throwaway runs.
#[derive(Default)]
pub struct MemoryGateStore {
    state: MemoryStore,
    approvals: MemoryApprovals,
    audit: MemoryAuditLog,
    calls: MemoryCallHistory,
}

impl GateStore for MemoryGateStore {}

impl GateStore for SqliteStore {
    fn complete(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::Complete(Completion {
            session: session.to_owned(),
            writes: writes.to_vec(),
            intent,
            completion,
        }))
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
    fn approve(
        &self,
        id: &str,
        grant: Option<Grant>,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        self.approvals.approve(id, grant, now)
    }
    fn deny(
        &self,
        id: &str,
        reason: Option<&str>,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        self.approvals.deny(id, reason, now)
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
