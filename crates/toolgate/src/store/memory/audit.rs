//! The audit log in memory: one chain in a list, for tests and gates that need no
//! durable record.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use toolgate_core::{
    Anchor, AuditEntry, AuditRecord, GENESIS_HASH, RecordKind, VerifyReport, verify_chain_anchored,
};

use crate::store::{AuditLog, StoreError};

/// An [`AuditLog`] in memory, for tests and gates that need no durable record.
#[derive(Debug, Default)]
pub struct MemoryAuditLog {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record so far, oldest first.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<AuditRecord>> {
        // Appends push a finished record in one step, so a poisoned list is whole.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AuditLog for MemoryAuditLog {
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let mut records = self.lock();
        let (seq, prev_hash) = records
            .last()
            .map_or((0, GENESIS_HASH), |r| (r.seq, r.hash.as_str()));
        let record = AuditRecord::seal(seq + 1, prev_hash, entry);
        records.push(record.clone());
        Ok(record)
    }

    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let records = self.lock();
        Ok(records[records.len().saturating_sub(n)..].to_vec())
    }

    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError> {
        Ok(verify_chain_anchored(
            self.lock().iter(),
            anchors.iter().cloned(),
        ))
    }

    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError> {
        let records = self.lock();
        let completed: HashSet<&str> = records
            .iter()
            .filter(|r| r.entry.kind == RecordKind::Completion)
            .map(|r| r.entry.run_id.as_str())
            .collect();
        Ok(records
            .iter()
            .filter(|r| {
                r.entry.kind == RecordKind::Intent && !completed.contains(r.entry.run_id.as_str())
            })
            .cloned()
            .collect())
    }
}
