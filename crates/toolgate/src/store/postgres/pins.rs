//! Pins on PostgreSQL: each method one
//! statement or one transaction, with the SQLite store's checks.

use std::future::Future;
use std::time::SystemTime;

use serde_json::Value;
use tokio_postgres::Row;

use super::{Inner, PostgresStore};
use crate::store::pins::{timestamp, unknown};
use crate::store::{Pin, PinChange, PinCheck, PinError, PinStore};

const PIN_COLUMNS: &str = "tool, hash, definition, pinned_at, seen_hash, seen_definition, seen_at";

fn pin_row(inner: &Inner, row: &Row) -> Result<Pin, PinError> {
    let tool: String = row.get(0);
    let json = |text: &str, what: &str| {
        serde_json::from_str::<Value>(text).map_err(|e| PinError::Corrupt {
            location: inner.location.clone(),
            tool: tool.clone(),
            problem: format!("{what} that is not JSON ({e})"),
        })
    };
    let definition = json(row.get(2), "a definition")?;
    let seen: (Option<String>, Option<String>, Option<String>) =
        (row.get(4), row.get(5), row.get(6));
    let change = match seen {
        (Some(hash), Some(text), Some(seen_at)) => Some(PinChange {
            hash,
            definition: json(&text, "a recorded change")?,
            seen_at,
        }),
        _ => None,
    };
    Ok(Pin {
        hash: row.get(1),
        definition,
        pinned_at: row.get(3),
        change,
        tool,
    })
}

async fn pin_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    tool: &str,
) -> Result<Option<Pin>, PinError> {
    let sql = format!("SELECT {PIN_COLUMNS} FROM pins WHERE tool = $1");
    let row = client
        .query_opt(&sql, &[&tool])
        .await
        .map_err(inner.error("reading a pin"))?;
    row.map(|row| pin_row(inner, &row)).transpose()
}

impl PostgresStore {
    fn run_pins<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, PinError>> + Send + 'static,
    ) -> Result<T, PinError> {
        // Pin errors travel inside a store error's slot: unwrap them again.
        let (send, wait) = std::sync::mpsc::sync_channel(1);
        self.run(async move {
            let _ = send.send(work.await);
            Ok(())
        })?;
        wait.recv()
            .unwrap_or_else(|_| Err(PinError::Store(self.inner.stopped())))
    }
}

impl PinStore for PostgresStore {
    fn observe_tool(
        &self,
        tool: &str,
        definition: &Value,
        now: SystemTime,
    ) -> Result<PinCheck, PinError> {
        let hash = toolgate_core::content_hash(definition);
        let (inner, tool, definition) =
            (self.inner.clone(), tool.to_owned(), definition.to_string());
        self.run_pins(async move {
            let error = inner.error("recording a tool's pin");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('pin' || chr(31) || $1, 0))",
                &[&tool],
            )
            .await
            .map_err(&error)?;
            let found = tx
                .query_opt("SELECT hash FROM pins WHERE tool = $1", &[&tool])
                .await
                .map_err(&error)?
                .map(|row| row.get::<_, String>(0));
            let check = match found {
                None => {
                    tx.execute(
                        "INSERT INTO pins (tool, hash, definition, pinned_at) VALUES ($1, $2, $3, $4)",
                        &[&tool, &hash, &definition, &timestamp(now)],
                    )
                    .await
                    .map_err(&error)?;
                    PinCheck::Pinned
                }
                Some(pinned) if pinned == hash => {
                    tx.execute(
                        "UPDATE pins SET seen_hash = NULL, seen_definition = NULL, seen_at = NULL
                         WHERE tool = $1 AND seen_hash IS NOT NULL",
                        &[&tool],
                    )
                    .await
                    .map_err(&error)?;
                    PinCheck::Matches
                }
                Some(_) => {
                    tx.execute(
                        "UPDATE pins SET seen_hash = $2, seen_definition = $3, seen_at = $4 WHERE tool = $1",
                        &[&tool, &hash, &definition, &timestamp(now)],
                    )
                    .await
                    .map_err(&error)?;
                    let pin = pin_in(&*tx, &inner, &tool).await?;
                    PinCheck::Changed(pin.ok_or_else(|| unknown(&tool, []))?)
                }
            };
            tx.commit().await.map_err(&error)?;
            Ok(check)
        })
    }

    fn pin(&self, tool: &str) -> Result<Option<Pin>, PinError> {
        let (inner, tool) = (self.inner.clone(), tool.to_owned());
        self.run_pins(async move {
            let conn = inner.conn().await?;
            pin_in(&**conn, &inner, &tool).await
        })
    }

    fn pins(&self) -> Result<Vec<Pin>, PinError> {
        let inner = self.inner.clone();
        self.run_pins(async move {
            let conn = inner.conn().await?;
            let sql = format!("SELECT {PIN_COLUMNS} FROM pins ORDER BY tool");
            let rows = conn
                .query(&sql, &[])
                .await
                .map_err(inner.error("listing pins"))?;
            rows.iter().map(|row| pin_row(&inner, row)).collect()
        })
    }

    fn accept_pin(&self, tool: &str, now: SystemTime) -> Result<Pin, PinError> {
        let (inner, tool) = (self.inner.clone(), tool.to_owned());
        self.run_pins(async move {
            let error = inner.error("accepting a pin");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('pin' || chr(31) || $1, 0))",
                &[&tool],
            )
            .await
            .map_err(&error)?;
            let Some(pin) = pin_in(&*tx, &inner, &tool).await? else {
                let names = tx
                    .query("SELECT tool FROM pins ORDER BY tool", &[])
                    .await
                    .map_err(&error)?;
                return Err(unknown(&tool, names.iter().map(|r| r.get::<_, String>(0))));
            };
            if pin.change.is_none() {
                return Err(PinError::Unchanged {
                    tool,
                    pinned_at: pin.pinned_at,
                });
            }
            tx.execute(
                "UPDATE pins SET hash = seen_hash, definition = seen_definition, pinned_at = $2,
                     seen_hash = NULL, seen_definition = NULL, seen_at = NULL
                 WHERE tool = $1",
                &[&tool, &timestamp(now)],
            )
            .await
            .map_err(&error)?;
            let accepted = pin_in(&*tx, &inner, &tool)
                .await?
                .ok_or_else(|| unknown(&tool, []))?;
            tx.commit().await.map_err(&error)?;
            Ok(accepted)
        })
    }
}
