//! The call ledger on PostgreSQL: the `ledger` table (version 6), one row per
//! name. A claim is one `INSERT … ON CONFLICT` that takes an expired row over,
//! so two instances claiming a name at once cannot both win.

use super::{Inner, PostgresStore};
use crate::store::{CallLedger, LedgerEntry, LedgerName, StoreError};
use toolgate_core::Outcome;

pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS ledger (
    name       TEXT PRIMARY KEY,
    run_id     TEXT NOT NULL,
    entry      TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);";

fn millis(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn decode(inner: &Inner, text: &str) -> Result<LedgerEntry, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Unreachable {
        location: inner.location.clone(),
        problem: format!("a call ledger entry cannot be read ({e})"),
    })
}

async fn entry_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    name: &str,
    now_ms: i64,
) -> Result<Option<LedgerEntry>, StoreError> {
    let row = client
        .query_opt(
            "SELECT entry FROM ledger WHERE name = $1 AND expires_ms > $2",
            &[&name, &now_ms],
        )
        .await
        .map_err(inner.error("reading the call ledger"))?;
    row.map(|row| decode(inner, row.get(0))).transpose()
}

impl CallLedger for PostgresStore {
    fn ledger_entry(
        &self,
        name: &LedgerName,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let (inner, name) = (self.inner.clone(), name.as_str().to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            entry_in(&**conn, &inner, &name, millis(now_ms)).await
        })
    }

    fn claim_ledger(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let (inner, name) = (self.inner.clone(), name.as_str().to_owned());
        let text = serde_json::to_string(entry).unwrap_or_else(|_| "{}".into());
        let (run_id, expires) = (entry.run_id.clone(), millis(entry.expires_ms));
        self.run(async move {
            let error = inner.error("claiming a call in the ledger");
            let conn = inner.conn().await?;
            // Taken, or held by a live entry; a held entry that is gone by the
            // time it is read was just settled or expired: claim again.
            for _ in 0..3 {
                let taken = conn
                    .query_opt(
                        "INSERT INTO ledger (name, run_id, entry, expires_ms) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (name) DO UPDATE
                         SET run_id = excluded.run_id, entry = excluded.entry, expires_ms = excluded.expires_ms
                         WHERE ledger.expires_ms <= $5
                         RETURNING name",
                        &[&name, &run_id, &text, &expires, &millis(now_ms)],
                    )
                    .await
                    .map_err(&error)?;
                if taken.is_some() {
                    return Ok(None);
                }
                if let Some(held) = entry_in(&**conn, &inner, &name, millis(now_ms)).await? {
                    return Ok(Some(held));
                }
            }
            Err(StoreError::Unreachable {
                location: inner.location.clone(),
                problem: "a call ledger entry changed on every try to claim it".into(),
            })
        })
    }

    fn settle_ledger(
        &self,
        name: &LedgerName,
        run_id: &str,
        outcome: Option<&Outcome>,
        expires_ms: u64,
    ) -> Result<(), StoreError> {
        let (inner, name, run_id) = (
            self.inner.clone(),
            name.as_str().to_owned(),
            run_id.to_owned(),
        );
        let outcome = outcome.cloned();
        self.run(async move {
            let error = inner.error("settling a call in the ledger");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            let row = tx
                .query_opt(
                    "SELECT entry FROM ledger WHERE name = $1 AND run_id = $2 FOR UPDATE",
                    &[&name, &run_id],
                )
                .await
                .map_err(&error)?;
            let Some(row) = row else {
                return Ok(());
            };
            match outcome {
                None => {
                    tx.execute("DELETE FROM ledger WHERE name = $1", &[&name])
                        .await
                        .map_err(&error)?;
                }
                Some(outcome) => {
                    let mut entry = decode(&inner, row.get(0))?;
                    entry.outcome = Some(outcome);
                    entry.expires_ms = expires_ms;
                    let text = serde_json::to_string(&entry).unwrap_or_else(|_| "{}".into());
                    tx.execute(
                        "UPDATE ledger SET entry = $2, expires_ms = $3 WHERE name = $1",
                        &[&name, &text, &millis(expires_ms)],
                    )
                    .await
                    .map_err(&error)?;
                }
            }
            tx.commit().await.map_err(&error)
        })
    }

    fn ledger_of_run(&self, run_id: &str) -> Result<Vec<(LedgerName, LedgerEntry)>, StoreError> {
        let (inner, run_id) = (self.inner.clone(), run_id.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = conn
                .query(
                    "SELECT name, entry FROM ledger WHERE run_id = $1",
                    &[&run_id],
                )
                .await
                .map_err(inner.error("reading the call ledger"))?;
            rows.into_iter()
                .map(|row| {
                    Ok((
                        LedgerName::from_stored(row.get(0)),
                        decode(&inner, row.get(1))?,
                    ))
                })
                .collect()
        })
    }
}
