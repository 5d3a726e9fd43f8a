//! Conversation state in memory: fast, and gone when the process exits.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};

use crate::store::{StateStore, StoreError};

type Sessions = HashMap<String, BTreeMap<String, Value>>;

/// A [`StateStore`] held in memory, for tests and runs whose state need not outlive
/// the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<Sessions>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn sessions(&self) -> MutexGuard<'_, Sessions> {
        // A panic while the lock was held cannot leave a half-applied batch (see
        // `apply`), so the data behind a poisoned lock is still whole.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl StateStore for MemoryStore {
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        let sessions = self.sessions();
        let state = sessions.get(session).into_iter().flatten();
        Ok(state.map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError> {
        Ok(self
            .sessions()
            .get(session)
            .and_then(|state| state.get(key))
            .cloned())
    }

    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        // Build the new state aside and swap it in, so the batch lands whole.
        let mut sessions = self.sessions();
        let mut state = sessions.get(session).cloned().unwrap_or_default();
        for (key, value) in writes {
            state.insert(key.clone(), value.clone());
        }
        sessions.insert(session.to_owned(), state);
        Ok(())
    }

    fn reset(&self, session: &str) -> Result<(), StoreError> {
        self.sessions().remove(session);
        Ok(())
    }
}
