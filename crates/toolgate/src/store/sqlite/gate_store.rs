//! The gate's whole persistence in one SQLite file: a call's completion goes through
//! the write queue as one transaction, and admission takes the turn in one step.

use std::time::Duration;

use serde_json::Value;
use toolgate_core::{AuditEntry, AuditRecord};

use super::SqliteStore;
use crate::store::group_commit::Write;
use crate::store::{
    Admission, AdmissionCheck, GateStore, LedgerEntry, LedgerName, Settle, StoreError,
};

impl GateStore for SqliteStore {
    /// Takes the write lock and lets it go: a file another process holds
    /// locked (or that cannot be written) is not ready, though it can be read.
    fn probe(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        let error = self.error("probing the store");
        conn.prepare_cached("BEGIN IMMEDIATE")
            .and_then(|mut begin| begin.execute([]))
            .map_err(&error)?;
        conn.prepare_cached("ROLLBACK")
            .and_then(|mut rollback| rollback.execute([]))
            .map(drop)
            .map_err(error)
    }

    fn complete(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::complete(session, writes, intent, completion))
    }

    fn append_claiming(
        &self,
        intent: AuditEntry,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        self.claim_with(name, entry, now_ms, Some(intent))
    }

    fn complete_settling(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
        settle: &Settle,
    ) -> Result<AuditRecord, StoreError> {
        let write = Write::complete_settling(session, writes, intent, completion, settle);
        self.commit_write(write)
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
