//! The call ledger on PostgreSQL: the `ledger` table (version 6), one row per
//! name. A claim is one `INSERT … ON CONFLICT` that takes an expired row over,
//! so two instances claiming a name at once cannot both win.

use toolgate_core::{AuditEntry, Outcome};

use super::writer::{Chain, lock_and_head};
use super::{Inner, PostgresStore};
use crate::store::{CallLedger, LedgerEntry, LedgerName, StoreError};

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
    client: &impl deadpool_postgres::GenericClient,
    inner: &Inner,
    name: &str,
    now_ms: i64,
) -> Result<Option<LedgerEntry>, StoreError> {
    let error = inner.error("reading the call ledger");
    let read = super::prepared(
        client,
        "SELECT entry FROM ledger WHERE name = $1 AND expires_ms > $2",
        &error,
    )
    .await?;
    let row = client
        .query_opt(&read, &[&name, &now_ms])
        .await
        .map_err(error)?;
    row.map(|row| decode(inner, row.get(0))).transpose()
}

/// Puts `entry` under `name` inside `client`'s transaction unless a live entry
/// holds it; whether it did.
async fn take_in(
    client: &impl deadpool_postgres::GenericClient,
    inner: &Inner,
    name: &str,
    entry: &LedgerEntry,
    now_ms: u64,
) -> Result<bool, StoreError> {
    let text = serde_json::to_string(entry).unwrap_or_else(|_| "{}".into());
    let error = inner.error("claiming a call in the ledger");
    let claim = super::prepared(
        client,
        "INSERT INTO ledger (name, run_id, entry, expires_ms) VALUES ($1, $2, $3, $4)
         ON CONFLICT (name) DO UPDATE
         SET run_id = excluded.run_id, entry = excluded.entry, expires_ms = excluded.expires_ms
         WHERE ledger.expires_ms <= $5
         RETURNING name",
        &error,
    )
    .await?;
    let taken = client
        .query_opt(
            &claim,
            &[
                &name,
                &entry.run_id,
                &text,
                &millis(entry.expires_ms),
                &millis(now_ms),
            ],
        )
        .await
        .map_err(error)?;
    Ok(taken.is_some())
}

/// Records what `run_id`'s entry under `name` came to, inside an open
/// transaction (`None` forgets it); nothing when another run holds the name.
pub(super) async fn settle_in(
    tx: &impl deadpool_postgres::GenericClient,
    inner: &Inner,
    name: &str,
    run_id: &str,
    outcome: Option<&Outcome>,
    expires_ms: u64,
) -> Result<(), StoreError> {
    let error = inner.error("settling a call in the ledger");
    let held = super::prepared(
        tx,
        "SELECT entry FROM ledger WHERE name = $1 AND run_id = $2 FOR UPDATE",
        &error,
    )
    .await?;
    let row = tx
        .query_opt(&held, &[&name, &run_id])
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
            let mut entry = decode(inner, row.get(0))?;
            entry.outcome = Some(outcome.clone());
            entry.expires_ms = expires_ms;
            let text = serde_json::to_string(&entry).unwrap_or_else(|_| "{}".into());
            let update = super::prepared(
                tx,
                "UPDATE ledger SET entry = $2, expires_ms = $3 WHERE name = $1",
                &error,
            )
            .await?;
            tx.execute(&update, &[&name, &text, &millis(expires_ms)])
                .await
                .map_err(&error)?;
        }
    }
    Ok(())
}

impl PostgresStore {
    /// [`GateStore::append_claiming`](crate::store::GateStore::append_claiming)
    /// in one transaction, under the store's write lock.
    pub(super) fn append_claiming_in(
        &self,
        intent: AuditEntry,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let (inner, name, entry) = (self.inner.clone(), name.as_str().to_owned(), entry.clone());
        self.run(async move {
            let error = inner.error("recording an intent under its idempotency key");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            let head = lock_and_head(&tx, &inner).await?;
            if !take_in(&tx, &inner, &name, &entry, now_ms).await? {
                let held = entry_in(&tx, &inner, &name, millis(now_ms)).await?;
                return Ok(Some(held.unwrap_or(entry)));
            }
            let mut chain = Chain::after(head);
            chain.push(intent);
            chain.insert(&tx, &inner).await?;
            tx.commit().await.map_err(&error)?;
            Ok(None)
        })
    }
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
            entry_in(&conn, &inner, &name, millis(now_ms)).await
        })
    }

    fn claim_ledger(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        let (inner, name, entry) = (self.inner.clone(), name.as_str().to_owned(), entry.clone());
        self.run(async move {
            let conn = inner.conn().await?;
            // Taken, or held by a live entry; a held entry that is gone by the
            // time it is read was just settled or expired: claim again.
            for _ in 0..3 {
                if take_in(&conn, &inner, &name, &entry, now_ms).await? {
                    return Ok(None);
                }
                if let Some(held) = entry_in(&conn, &inner, &name, millis(now_ms)).await? {
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
            settle_in(&tx, &inner, &name, &run_id, outcome.as_ref(), expires_ms).await?;
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
