//! A conversation's call history: every call that ran, in order, and whether it
//! succeeded — what a flow's `called_ok`, `once` and `before` read. It lives in the
//! same store as the conversation's state, so a conversation goes on across
//! processes (`toolgate call --session ID`).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::params;
use serde::{Deserialize, Serialize};
use toolgate_core::AuditEntry;
use toolgate_core::flow::CallRecord;

use super::{SqliteStore, StoreError};

/// One call that ran in a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// Its place in the conversation, from 1.
    pub seq: u64,
    pub tool: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// When it completed (RFC 3339, from the gate's clock).
    pub time: String,
}

impl From<&RecordedCall> for CallRecord {
    fn from(call: &RecordedCall) -> Self {
        CallRecord::new(call.tool.clone(), call.ok)
    }
}

/// Where call histories live. The gate records each call that ran together with
/// its completion (see [`GateStore::complete`](super::GateStore::complete)).
pub trait CallHistory: Send + Sync {
    /// Appends a call that ran to a session's history.
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError>;

    /// A session's calls, oldest first; empty for a session with none.
    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError>;

    /// Forgets a session's calls (a conversation started over).
    fn forget_calls(&self, session: &str) -> Result<(), StoreError>;
}

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
        Ok(self.sessions().get(session).cloned().unwrap_or_default())
    }

    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        self.sessions().remove(session);
        Ok(())
    }
}

/// The call a completion record is about: (tool, ok, time).
pub(super) fn completed_call(entry: &AuditEntry) -> (&str, bool, &str) {
    (
        &entry.tool,
        entry.outcome.as_deref() == Some("ok"),
        &entry.time,
    )
}

/// Appends a call inside an open transaction.
pub(super) fn record_call_in(
    tx: &rusqlite::Connection,
    session: &str,
    tool: &str,
    ok: bool,
    time: &str,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO calls (session, seq, tool, ok, time)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM calls WHERE session = ?1), ?2, ?3, ?4)",
    )?
    .execute(params![session, tool, ok, time])?;
    Ok(())
}

/// A session's calls as `conn` sees it (the reader, or an open transaction).
pub(super) fn calls_in(
    conn: &rusqlite::Connection,
    session: &str,
) -> rusqlite::Result<Vec<RecordedCall>> {
    let mut stmt = conn
        .prepare_cached("SELECT seq, tool, ok, time FROM calls WHERE session = ?1 ORDER BY seq")?;
    let rows = stmt.query_map([session], |row| {
        Ok(RecordedCall {
            seq: row.get::<_, i64>(0)?.try_into().unwrap_or(0),
            tool: row.get(1)?,
            ok: row.get(2)?,
            time: row.get(3)?,
        })
    })?;
    rows.collect()
}

impl CallHistory for SqliteStore {
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError> {
        let error = self.error("recording a call");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&error)?;
        record_call_in(&tx, session, tool, ok, time).map_err(&error)?;
        tx.commit().map_err(&error)
    }

    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
        calls_in(&self.reader(), session).map_err(self.error("reading a session's calls"))
    }

    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        let error = self.error("forgetting a session's calls");
        self.conn()
            .execute("DELETE FROM calls WHERE session = ?1", [session])
            .map_err(error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(store: &dyn CallHistory) {
        store.record_call("a", "verify", false, "t1").unwrap();
        store.record_call("a", "verify", true, "t2").unwrap();
        store.record_call("b", "lookup", true, "t3").unwrap();
        let a = store.calls("a").unwrap();
        assert_eq!(
            a.iter()
                .map(|c| (c.seq, c.tool.as_str(), c.ok))
                .collect::<Vec<_>>(),
            [(1, "verify", false), (2, "verify", true)]
        );
        assert_eq!(
            store.calls("b").unwrap()[0].seq,
            1,
            "each session counts from 1"
        );
        assert!(store.calls("c").unwrap().is_empty());
        store.forget_calls("a").unwrap();
        assert!(store.calls("a").unwrap().is_empty());
        assert_eq!(store.calls("b").unwrap().len(), 1);
    }

    #[test]
    fn memory_histories_keep_sessions_apart_in_order() {
        exercise(&MemoryCallHistory::default());
    }

    #[test]
    fn sqlite_histories_keep_sessions_apart_in_order() {
        exercise(&SqliteStore::in_memory().unwrap());
    }
}
