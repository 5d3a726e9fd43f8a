//! Turns in SQLite: the `turns` table (schema 6), one row per session whose turn a
//! run holds, taken and released inside the write transaction.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use toolgate_core::AuditEntry;

use super::SqliteStore;
use super::audit::append_in;
use super::calls::calls_in;
use crate::store::turns::{Holder, now_ms, rerun_safe, standing};
use crate::store::{Admission, AdmissionCheck, StoreError};

impl SqliteStore {
    /// One IMMEDIATE transaction: the write lock is taken before the turn and the
    /// facts are read, so no other process can change them until it commits.
    pub(super) fn admit_in_turn(
        &self,
        session: &str,
        intent: AuditEntry,
        lease: Duration,
        check: &mut AdmissionCheck<'_>,
    ) -> Result<Admission, StoreError> {
        let error = self.error("admitting a call of a governed conversation");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let now = now_ms();
        let holder = holder_in(&tx, session, now).map_err(&error)?;
        if let Some(refused) = standing(holder, &intent.run_id) {
            return Ok(refused);
        }
        let state = self.load_in(&tx, session)?;
        let calls = calls_in(&tx, session, 0).map_err(&error)?;
        if !check(&state, &calls) {
            return Ok(Admission::Refused);
        }
        let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        tx.prepare_cached(
            "INSERT INTO turns (session, run_id, tool, rerun_safe, until_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (session) DO UPDATE
             SET run_id = excluded.run_id, tool = excluded.tool,
                 rerun_safe = excluded.rerun_safe, until_ms = excluded.until_ms",
        )
        .and_then(|mut stmt| {
            let safe = rerun_safe(&intent);
            stmt.execute(params![session, intent.run_id, intent.tool, safe, until])
        })
        .map_err(&error)?;
        let record = append_in(&tx, intent).map_err(&error)?;
        tx.commit().map_err(&error)?;
        Ok(Admission::Admitted(Box::new(record)))
    }
}

/// Who holds `session`'s turn, if anyone.
fn holder_in(tx: &Connection, session: &str, now: i64) -> rusqlite::Result<Option<Holder>> {
    tx.prepare_cached("SELECT run_id, tool, rerun_safe, until_ms FROM turns WHERE session = ?1")?
        .query_row([session], |row| {
            Ok(Holder {
                run_id: row.get(0)?,
                tool: row.get(1)?,
                rerun_safe: row.get(2)?,
                live: row.get::<_, i64>(3)? > now,
            })
        })
        .optional()
}

/// Releases `session`'s turn if `run_id` still holds it, inside an open transaction.
pub(super) fn release_in(tx: &Connection, session: &str, run_id: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM turns WHERE session = ?1 AND run_id = ?2")?
        .execute([session, run_id])?;
    Ok(())
}
