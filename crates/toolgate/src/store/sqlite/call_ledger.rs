//! The call ledger in SQLite: the `ledger` table (schema 13), one row per name,
//! the entry as JSON; a claim is one IMMEDIATE transaction.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use toolgate_core::{AuditEntry, Outcome};

use super::SqliteStore;
use super::audit::append_in;
use crate::store::{CallLedger, LedgerEntry, LedgerName, StoreError};

pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS ledger (
    name       TEXT PRIMARY KEY,
    run_id     TEXT NOT NULL,
    entry      TEXT NOT NULL CHECK (json_valid(entry)),
    expires_ms INTEGER NOT NULL
) WITHOUT ROWID;";

/// The entry under `name` as `conn` sees it, expired or not.
fn entry_in(conn: &Connection, name: &LedgerName) -> rusqlite::Result<Option<(LedgerEntry, u64)>> {
    conn.prepare_cached("SELECT entry, expires_ms FROM ledger WHERE name = ?1")?
        .query_row([name.as_str()], |row| {
            let text: String = row.get(0)?;
            let expires: i64 = row.get(1)?;
            let entry = serde_json::from_str(&text).map_err(|e| {
                rusqlite::Error::FromSqlConversionFailure(
                    0,
                    rusqlite::types::Type::Text,
                    Box::new(e),
                )
            })?;
            Ok((entry, u64::try_from(expires).unwrap_or(0)))
        })
        .optional()
}

fn put_in(conn: &Connection, name: &LedgerName, entry: &LedgerEntry) -> rusqlite::Result<()> {
    let text = serde_json::to_string(entry).unwrap_or_else(|_| "{}".into());
    let expires = i64::try_from(entry.expires_ms).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT INTO ledger (name, run_id, entry, expires_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (name) DO UPDATE
         SET run_id = excluded.run_id, entry = excluded.entry, expires_ms = excluded.expires_ms",
    )?
    .execute(params![name.as_str(), entry.run_id, text, expires])?;
    Ok(())
}

/// Records what `run_id`'s entry under `name` came to, inside an open
/// transaction (`None` forgets it); nothing when another run holds the name.
pub(super) fn settle_in(
    tx: &Connection,
    name: &LedgerName,
    run_id: &str,
    outcome: Option<&Outcome>,
    expires_ms: u64,
) -> rusqlite::Result<()> {
    let Some((mut entry, _)) = entry_in(tx, name)? else {
        return Ok(());
    };
    if entry.run_id != run_id {
        return Ok(());
    }
    match outcome {
        None => {
            tx.prepare_cached("DELETE FROM ledger WHERE name = ?1")?
                .execute([name.as_str()])?;
        }
        Some(outcome) => {
            entry.outcome = Some(outcome.clone());
            entry.expires_ms = expires_ms;
            put_in(tx, name, &entry)?;
        }
    }
    Ok(())
}

impl SqliteStore {
    /// Claims `name` for `entry` unless a live entry holds it (then that
    /// entry), appending `intent` with the claim: one IMMEDIATE transaction,
    /// which [`GateStore::append_claiming`](crate::store::GateStore::append_claiming)
    /// and [`CallLedger::claim_ledger`] both are.
    pub(super) fn claim_with(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
        intent: Option<AuditEntry>,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let error = self.error("claiming a call in the ledger");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        if let Some((held, expires)) = entry_in(&tx, name).map_err(&error)?
            && expires > now_ms
        {
            return Ok(Some(held));
        }
        put_in(&tx, name, entry).map_err(&error)?;
        if let Some(intent) = intent {
            append_in(&tx, intent).map_err(&error)?;
        }
        tx.commit().map_err(&error)?;
        Ok(None)
    }
}

impl CallLedger for SqliteStore {
    fn ledger_entry(
        &self,
        name: &LedgerName,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let found =
            entry_in(&self.reader(), name).map_err(self.error("reading the call ledger"))?;
        Ok(found.and_then(|(entry, expires)| (expires > now_ms).then_some(entry)))
    }

    fn claim_ledger(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        self.claim_with(name, entry, now_ms, None)
    }

    fn settle_ledger(
        &self,
        name: &LedgerName,
        run_id: &str,
        outcome: Option<&Outcome>,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        let error = self.error("settling a call in the ledger");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        settle_in(&tx, name, run_id, outcome, expires_ms).map_err(&error)?;
        tx.commit().map_err(&error)
    }

    fn ledger_of_run(&self, run_id: &str) -> Result<Vec<(LedgerName, LedgerEntry)>, StoreError> {
        let error = self.error("reading the call ledger");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT name, entry FROM ledger WHERE run_id = ?1")
            .map_err(&error)?;
        let rows = stmt
            .query_map([run_id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(&error)?;
        let mut found = Vec::new();
        for row in rows {
            let (name, text) = row.map_err(&error)?;
            if let Ok(entry) = serde_json::from_str(&text) {
                found.push((LedgerName::from_stored(name), entry));
            }
        }
        Ok(found)
    }
}
