//! Call histories in SQLite: the `calls` table, one row per call that ran, numbered
//! from 1 in each session.

use rusqlite::params;

use super::SqliteStore;
use crate::store::{CallHistory, RecordedCall, StoreError};

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

/// A session's calls from its `from`th on, as `conn` sees them (the reader, or
/// an open transaction).
pub(super) fn calls_in(
    conn: &rusqlite::Connection,
    session: &str,
    from: u64,
) -> rusqlite::Result<Vec<RecordedCall>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, tool, ok, time FROM calls WHERE session = ?1 AND seq >= ?2 ORDER BY seq",
    )?;
    let from = i64::try_from(from).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![session, from], |row| {
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
        self.calls_from(session, 0)
    }

    fn calls_from(&self, session: &str, from: u64) -> Result<Vec<RecordedCall>, StoreError> {
        calls_in(&self.reader(), session, from).map_err(self.error("reading a session's calls"))
    }

    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        let error = self.error("forgetting a session's calls");
        self.conn()
            .execute("DELETE FROM calls WHERE session = ?1", [session])
            .map_err(error)?;
        Ok(())
    }
}
