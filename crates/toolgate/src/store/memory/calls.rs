//! Call histories in memory: each session's calls in a list.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::store::{CallHistory, RecordedCall, StoreError};

/// Call histories in memory, for tests and throwaway runs.
#[derive(Debug, Default)]
pub struct MemoryCallHistory {
    sessions: Mutex<HashMap<String, Vec<RecordedCall>>>,
}

impl MemoryCallHistory {
    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Vec<RecordedCall>>> {
        // Each change is one push or remove: a poisoned lock guards whole data.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CallHistory for MemoryCallHistory {
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError> {
        let mut sessions = self.sessions();
        let calls = sessions.entry(session.to_owned()).or_default();
        calls.push(RecordedCall {
            seq: calls.len() as u64 + 1,
            tool: tool.to_owned(),
            ok,
            time: time.to_owned(),
        });
        Ok(())
    }

    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
        self.calls_from(session, 0)
    }

    fn calls_from(&self, session: &str, from: u64) -> Result<Vec<RecordedCall>, StoreError> {
        // Calls are numbered from 1 in order, so the `from`th is at `from - 1`.
        let skip = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        Ok(self
            .sessions()
            .get(session)
            .map(|calls| calls.get(skip..).unwrap_or_default().to_vec())
            .unwrap_or_default())
    }

    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        self.sessions().remove(session);
        Ok(())
    }
}
