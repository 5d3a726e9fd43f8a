//! Client sessions in memory: a map by kind and key, for tests and throwaway servers.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::store::{SessionKey, SessionKind, StoreError, StoredSession, StoredSessions};

/// Sessions in memory, for tests and throwaway servers.
#[derive(Debug, Default)]
pub struct MemorySessions {
    sessions: Mutex<BTreeMap<(SessionKind, SessionKey), StoredSession>>,
}

impl MemorySessions {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<(SessionKind, SessionKey), StoredSession>> {
        // Every method replaces whole entries, so a poisoned map is whole.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl StoredSessions for MemorySessions {
    fn put_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        sessions.retain(|_, s| !s.expired(session.created_ms));
        sessions.insert((session.kind, session.key.clone()), session.clone());
        Ok(())
    }

    fn session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
    ) -> Result<Option<StoredSession>, StoreError> {
        Ok(self
            .lock()
            .get(&(kind, key.clone()))
            .filter(|s| !s.expired(now_ms))
            .cloned())
    }

    fn renew_session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
        expires_ms: u64,
    ) -> Result<bool, StoreError> {
        match self.lock().get_mut(&(kind, key.clone())) {
            Some(s) if !s.expired(now_ms) => {
                s.expires_ms = expires_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn delete_session(&self, kind: SessionKind, key: &SessionKey) -> Result<bool, StoreError> {
        Ok(self.lock().remove(&(kind, key.clone())).is_some())
    }
}
