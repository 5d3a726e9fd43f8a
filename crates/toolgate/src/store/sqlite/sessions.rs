//! Client sessions in SQLite: the `sessions` table (schema 11), found by kind and
//! the digest of the secret.

use super::SqliteStore;
use crate::store::sessions::{sql_ms, stored};
use crate::store::{SessionKey, SessionKind, StoreError, StoredSession, StoredSessions};

/// Schema version 11 of the SQLite store: the sessions table.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS sessions (
    kind       TEXT NOT NULL CHECK (kind IN ('mcp', 'console')),
    key        TEXT NOT NULL,
    principal  TEXT,
    data       TEXT NOT NULL CHECK (json_valid(data)),
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    idle_ms    INTEGER NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_ms);";

impl StoredSessions for SqliteStore {
    fn put_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        let error = self.error("writing a session");
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(&error)?;
        tx.execute(
            "DELETE FROM sessions WHERE expires_ms <= ?1",
            [sql_ms(session.created_ms)],
        )
        .map_err(&error)?;
        tx.execute(
            "INSERT OR REPLACE INTO sessions (kind, key, principal, data, created_ms, expires_ms, idle_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            rusqlite::params![
                session.kind.as_str(),
                session.key.as_str(),
                session.principal,
                session.data.to_string(),
                sql_ms(session.created_ms),
                sql_ms(session.expires_ms),
                sql_ms(session.idle_ms),
            ],
        )
        .map_err(&error)?;
        tx.commit().map_err(&error)
    }

    fn session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
    ) -> Result<Option<StoredSession>, StoreError> {
        let error = self.error("reading a session");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT principal, data, created_ms, expires_ms, idle_ms FROM sessions
                 WHERE kind = ?1 AND key = ?2 AND expires_ms > ?3",
            )
            .map_err(&error)?;
        let mut rows = stmt
            .query(rusqlite::params![
                kind.as_str(),
                key.as_str(),
                sql_ms(now_ms)
            ])
            .map_err(&error)?;
        let Some(row) = rows.next().map_err(&error)? else {
            return Ok(None);
        };
        let data: String = row.get(1).map_err(&error)?;
        let times = (
            row.get(2).map_err(&error)?,
            row.get(3).map_err(&error)?,
            row.get(4).map_err(&error)?,
        );
        Ok(stored(
            kind,
            key.as_str().to_owned(),
            row.get(0).map_err(&error)?,
            &data,
            times,
        ))
    }

    fn renew_session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
        expires_ms: u64,
    ) -> Result<bool, StoreError> {
        let error = self.error("renewing a session");
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE sessions SET expires_ms = ?4
                 WHERE kind = ?1 AND key = ?2 AND expires_ms > ?3",
            )
            .and_then(|mut stmt| {
                stmt.execute(rusqlite::params![
                    kind.as_str(),
                    key.as_str(),
                    sql_ms(now_ms),
                    sql_ms(expires_ms)
                ])
            })
            .map_err(error)?;
        Ok(changed > 0)
    }

    fn delete_session(&self, kind: SessionKind, key: &SessionKey) -> Result<bool, StoreError> {
        let error = self.error("ending a session");
        let changed = self
            .conn()
            .prepare_cached("DELETE FROM sessions WHERE kind = ?1 AND key = ?2")
            .and_then(|mut stmt| stmt.execute(rusqlite::params![kind.as_str(), key.as_str()]))
            .map_err(error)?;
        Ok(changed > 0)
    }
}
