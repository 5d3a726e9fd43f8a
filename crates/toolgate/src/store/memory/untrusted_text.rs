//! Untrusted results' fingerprints in memory: each session's merged.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use toolgate_core::Fingerprints;

use crate::store::{StoreError, UntrustedText};

/// Untrusted results' fingerprints in memory, for tests and throwaway runs.
#[derive(Debug, Default)]
pub struct MemoryUntrustedText {
    sessions: Mutex<HashMap<String, Fingerprints>>,
}

impl MemoryUntrustedText {
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Fingerprints>> {
        // Each change is one merge: a poisoned lock guards whole data.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl UntrustedText for MemoryUntrustedText {
    fn record_untrusted_text(
        &self,
        session: &str,
        _run_id: &str,
        prints: &Fingerprints,
    ) -> Result<(), StoreError> {
        self.sessions()
            .entry(session.to_owned())
            .or_default()
            .merge(prints);
        Ok(())
    }

    fn untrusted_text(&self, session: &str) -> Result<Fingerprints, StoreError> {
        Ok(self.sessions().get(session).cloned().unwrap_or_default())
    }
}
