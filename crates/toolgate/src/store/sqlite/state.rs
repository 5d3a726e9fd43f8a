//! Conversation state in SQLite: the `state` table, one row per (session, key),
//! values as JSON text.

use rusqlite::{Connection, TransactionBehavior, params};
use serde_json::{Map, Value};

use super::SqliteStore;
use crate::store::{StateStore, StoreError};

/// Upserts state keys inside an open transaction.
pub(super) fn write_state(
    tx: &Connection,
    session: &str,
    writes: &[(String, Value)],
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO state (session, key, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (session, key) DO UPDATE
         SET value = excluded.value, updated_at = excluded.updated_at",
    )?;
    for (key, value) in writes {
        stmt.execute(params![session, key, value.to_string()])?;
    }
    Ok(())
}

impl StateStore for SqliteStore {
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        self.load_in(&self.reader(), session)
    }

    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError> {
        let error = self.error("reading a key");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT CAST(value AS BLOB) FROM state WHERE session = ?1 AND key = ?2")
            .map_err(&error)?;
        let mut rows = stmt.query([session, key]).map_err(&error)?;
        match rows.next().map_err(&error)? {
            None => Ok(None),
            Some(row) => {
                let bytes: Option<Vec<u8>> = row.get(0).map_err(&error)?;
                self.decode(session, key, bytes.as_deref()).map(Some)
            }
        }
    }

    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let error = self.error("writing state");
        let mut conn = self.conn();
        // IMMEDIATE takes the write lock up front, so waiting for another process
        // happens here, under the busy timeout, and not halfway through the batch.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        write_state(&tx, session, writes).map_err(&error)?;
        // On any error above, dropping `tx` rolls the whole batch back.
        tx.commit().map_err(&error)
    }

    fn reset(&self, session: &str) -> Result<(), StoreError> {
        let error = self.error("resetting a session");
        self.conn()
            .execute("DELETE FROM state WHERE session = ?1", [session])
            .map_err(error)?;
        Ok(())
    }
}
