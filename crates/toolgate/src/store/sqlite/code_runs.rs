//! Paused programs in SQLite: the `code_runs` table (schema 9), each row sealed
//! with the key beside the database file.

use std::path::Path;

use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};
use serde_json::Value;

use super::SqliteStore;
use crate::store::code_runs::{key_in, not_paused, process_key, seal, seal_holds};
use crate::store::{CodeRunStore, PausedRun, StoreError};

/// The schema step that adds `code_runs` (its number is its place in the
/// store's list of migrations).
pub(super) const MIGRATION: &str = "CREATE TABLE code_runs (
        run_id      TEXT PRIMARY KEY,
        session     TEXT NOT NULL,
        principal   TEXT NOT NULL,
        code_sha256 TEXT NOT NULL,
        tool        TEXT NOT NULL,
        call_id     TEXT NOT NULL,
        arguments   TEXT NOT NULL CHECK (json_valid(arguments)),
        approval_id TEXT NOT NULL,
        reason      TEXT NOT NULL,
        calls       INTEGER NOT NULL,
        suspensions INTEGER NOT NULL,
        elapsed_ms  INTEGER NOT NULL,
        printed     TEXT NOT NULL,
        since_ms    INTEGER NOT NULL,
        expires_ms  INTEGER NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('paused', 'resuming', 'finished')),
        snapshot    BLOB NOT NULL,
        seal        TEXT NOT NULL
    );
    CREATE INDEX code_runs_status ON code_runs (status, since_ms);";

impl SqliteStore {
    fn code_run_key(&self) -> Result<Vec<u8>, StoreError> {
        match self.path().and_then(Path::parent) {
            Some(dir) if !dir.as_os_str().is_empty() => key_in(dir),
            Some(_) => key_in(Path::new(".")),
            None => Ok(process_key().to_vec()),
        }
    }

    fn code_run_row(row: &Row<'_>) -> rusqlite::Result<(PausedRun, String, String)> {
        let arguments: String = row.get("arguments")?;
        let count = |name: &str| -> rusqlite::Result<u64> {
            Ok(u64::try_from(row.get::<_, i64>(name)?).unwrap_or(0))
        };
        Ok((
            PausedRun {
                run_id: row.get("run_id")?,
                session: row.get("session")?,
                principal: row.get("principal")?,
                code_sha256: row.get("code_sha256")?,
                tool: row.get("tool")?,
                call_id: row.get("call_id")?,
                arguments: serde_json::from_str(&arguments).unwrap_or(Value::Null),
                approval_id: row.get("approval_id")?,
                reason: row.get("reason")?,
                calls: count("calls")?,
                suspensions: count("suspensions")?,
                elapsed_ms: count("elapsed_ms")?,
                printed: row.get("printed")?,
                since_ms: count("since_ms")?,
                expires_ms: count("expires_ms")?,
                // Anything but a blob (an edited row) reads as bytes whose seal
                // will not match, so it is refused as tampered, not as a failure.
                snapshot: match row.get::<_, rusqlite::types::Value>("snapshot")? {
                    rusqlite::types::Value::Blob(bytes) => bytes,
                    rusqlite::types::Value::Text(text) => text.into_bytes(),
                    _ => Vec::new(),
                },
            },
            row.get("status")?,
            row.get("seal")?,
        ))
    }

    fn set_code_run_status(&self, run_id: &str, from: &str, to: &str) -> Result<(), StoreError> {
        let error = self.error("updating a paused program");
        let changed = self
            .conn()
            .execute(
                "UPDATE code_runs SET status = ?3 WHERE run_id = ?1 AND status = ?2",
                params![run_id, from, to],
            )
            .map_err(error)?;
        if changed == 0 {
            return Err(not_paused(run_id, None));
        }
        Ok(())
    }
}

impl CodeRunStore for SqliteStore {
    fn pause_run(&self, run: &PausedRun) -> Result<(), StoreError> {
        let seal = seal(&self.code_run_key()?, run);
        let error = self.error("pausing a program");
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.conn()
            .prepare_cached(
                "INSERT INTO code_runs (run_id, session, principal, code_sha256, tool, call_id,
                   arguments, approval_id, reason, calls, suspensions, elapsed_ms, printed,
                   since_ms, expires_ms, status, snapshot, seal)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                   'paused', ?16, ?17)
                 ON CONFLICT (run_id) DO UPDATE SET
                   session = excluded.session, principal = excluded.principal,
                   code_sha256 = excluded.code_sha256, tool = excluded.tool,
                   call_id = excluded.call_id, arguments = excluded.arguments,
                   approval_id = excluded.approval_id, reason = excluded.reason,
                   calls = excluded.calls, suspensions = excluded.suspensions,
                   elapsed_ms = excluded.elapsed_ms, printed = excluded.printed,
                   since_ms = excluded.since_ms, expires_ms = excluded.expires_ms,
                   status = 'paused', snapshot = excluded.snapshot, seal = excluded.seal",
            )
            .map_err(&error)?
            .execute(params![
                run.run_id,
                run.session,
                run.principal,
                run.code_sha256,
                run.tool,
                run.call_id,
                run.arguments.to_string(),
                run.approval_id,
                run.reason,
                int(run.calls),
                int(run.suspensions),
                int(run.elapsed_ms),
                run.printed,
                int(run.since_ms),
                int(run.expires_ms),
                run.snapshot,
                seal
            ])
            .map_err(&error)?;
        Ok(())
    }

    fn take_run(&self, run_id: &str) -> Result<PausedRun, StoreError> {
        let key = self.code_run_key()?;
        let error = self.error("taking a paused program");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let row = tx
            .prepare_cached("SELECT * FROM code_runs WHERE run_id = ?1")
            .map_err(&error)?
            .query_row(params![run_id], Self::code_run_row)
            .optional()
            .map_err(&error)?;
        let Some((run, status, stored_seal)) = row else {
            return Err(not_paused(run_id, None));
        };
        if status != "paused" {
            return Err(not_paused(run_id, Some(&status)));
        }
        if !seal_holds(&key, &run, &stored_seal) {
            return Err(StoreError::CodeRunTampered {
                location: self
                    .path()
                    .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string()),
                id: run_id.to_owned(),
            });
        }
        tx.execute(
            "UPDATE code_runs SET status = 'resuming' WHERE run_id = ?1",
            params![run_id],
        )
        .map_err(&error)?;
        tx.commit().map_err(&error)?;
        Ok(run)
    }

    fn release_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.set_code_run_status(run_id, "resuming", "paused")
    }

    fn finish_run(&self, run_id: &str) -> Result<(), StoreError> {
        let error = self.error("finishing a paused program");
        self.conn()
            .execute(
                "UPDATE code_runs SET status = 'finished', snapshot = x'' WHERE run_id = ?1",
                params![run_id],
            )
            .map_err(error)?;
        Ok(())
    }

    fn paused_runs(&self) -> Result<Vec<PausedRun>, StoreError> {
        let error = self.error("listing paused programs");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT run_id, session, principal, code_sha256, tool, call_id, arguments,
                   approval_id, reason, calls, suspensions, elapsed_ms, printed, since_ms,
                   expires_ms, status, x'' AS snapshot, seal
                 FROM code_runs WHERE status = 'paused' ORDER BY since_ms, run_id",
            )
            .map_err(&error)?;
        let rows = stmt
            .query_map([], Self::code_run_row)
            .map_err(&error)?
            .map(|row| row.map(|(run, _, _)| run))
            .collect::<Result<Vec<_>, _>>()
            .map_err(&error)?;
        Ok(rows)
    }
}
