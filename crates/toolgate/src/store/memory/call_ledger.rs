//! The call ledger in memory: a map of names to entries behind one lock.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use toolgate_core::Outcome;

use crate::store::{CallLedger, LedgerEntry, LedgerName, StoreError};

/// The call ledger in memory, for tests and throwaway runs.
#[derive(Debug, Default)]
pub struct MemoryCallLedger {
    entries: Mutex<HashMap<LedgerName, LedgerEntry>>,
}

impl MemoryCallLedger {
    fn entries(&self) -> MutexGuard<'_, HashMap<LedgerName, LedgerEntry>> {
        // Each change is one insert or remove: a poisoned lock guards whole data.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CallLedger for MemoryCallLedger {
    fn ledger_entry(
        &self,
        name: &LedgerName,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        Ok(self
            .entries()
            .get(name)
            .filter(|entry| entry.expires_ms > now_ms)
            .cloned())
    }

    fn claim_ledger(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let mut entries = self.entries();
        if let Some(held) = entries.get(name).filter(|held| held.expires_ms > now_ms) {
            return Ok(Some(held.clone()));
        }
        entries.insert(name.clone(), entry.clone());
        Ok(None)
    }

    fn settle_ledger(
        &self,
        name: &LedgerName,
        run_id: &str,
        outcome: Option<&Outcome>,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        let mut entries = self.entries();
        match (entries.get_mut(name), outcome) {
            (Some(entry), _) if entry.run_id != run_id => {}
            (Some(_), None) => {
                entries.remove(name);
            }
            (Some(entry), Some(outcome)) => {
                entry.outcome = Some(outcome.clone());
                entry.expires_ms = expires_ms;
            }
            (None, _) => {}
        }
        Ok(())
    }

    fn ledger_of_run(&self, run_id: &str) -> Result<Vec<(LedgerName, LedgerEntry)>, StoreError> {
        Ok(self
            .entries()
            .iter()
            .filter(|(_, entry)| entry.run_id == run_id)
            .map(|(name, entry)| (name.clone(), entry.clone()))
            .collect())
    }
}
