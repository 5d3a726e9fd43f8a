//! Pins in SQLite: the `pins` table (schema 3), one row per tool with its pin and
//! the latest different definition seen.

use std::time::SystemTime;

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use super::SqliteStore;
use crate::store::pins::{timestamp, unknown};
use crate::store::{Pin, PinChange, PinCheck, PinError, PinStore};

const COLUMNS: &str = "tool, hash, CAST(definition AS BLOB), pinned_at, seen_hash, CAST(seen_definition AS BLOB), seen_at";

impl SqliteStore {
    fn read_pin(&self, row: &rusqlite::Row<'_>) -> Result<Pin, PinError> {
        let sql = |e| PinError::Store(self.error("reading a pin")(e));
        let tool: String = row.get(0).map_err(sql)?;
        let json = |bytes: Vec<u8>, what: &str| {
            serde_json::from_slice::<Value>(&bytes).map_err(|e| PinError::Corrupt {
                location: self
                    .path()
                    .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string()),
                tool: tool.clone(),
                problem: format!("{what} that is not JSON ({e})"),
            })
        };
        let definition = json(row.get(2).map_err(sql)?, "a definition")?;
        let seen_hash: Option<String> = row.get(4).map_err(sql)?;
        let seen_definition: Option<Vec<u8>> = row.get(5).map_err(sql)?;
        let seen_at: Option<String> = row.get(6).map_err(sql)?;
        let change = match (seen_hash, seen_definition, seen_at) {
            (Some(hash), Some(bytes), Some(seen_at)) => Some(PinChange {
                hash,
                definition: json(bytes, "a recorded change")?,
                seen_at,
            }),
            _ => None,
        };
        Ok(Pin {
            hash: row.get(1).map_err(sql)?,
            definition,
            pinned_at: row.get(3).map_err(sql)?,
            change,
            tool,
        })
    }

    fn pin_in(&self, conn: &rusqlite::Connection, tool: &str) -> Result<Option<Pin>, PinError> {
        let error = self.error("reading a pin");
        let mut stmt = conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM pins WHERE tool = ?1"))
            .map_err(&error)?;
        let mut rows = stmt.query([tool]).map_err(&error)?;
        match rows.next().map_err(&error)? {
            Some(row) => self.read_pin(row).map(Some),
            None => Ok(None),
        }
    }

    fn pinned_names(&self, conn: &rusqlite::Connection) -> Result<Vec<String>, PinError> {
        let error = self.error("listing pins");
        let mut stmt = conn
            .prepare_cached("SELECT tool FROM pins ORDER BY tool")
            .map_err(&error)?;
        let names = stmt
            .query_map([], |row| row.get(0))
            .map_err(&error)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(&error)?;
        Ok(names)
    }
}

impl PinStore for SqliteStore {
    fn observe_tool(
        &self,
        tool: &str,
        definition: &Value,
        now: SystemTime,
    ) -> Result<PinCheck, PinError> {
        let hash = toolgate_core::content_hash(definition);
        let error = self.error("recording a tool's pin");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let found: Option<String> = tx
            .query_row("SELECT hash FROM pins WHERE tool = ?1", [tool], |row| {
                row.get(0)
            })
            .optional()
            .map_err(&error)?;
        let check = match found {
            None => {
                tx.execute(
                    "INSERT INTO pins (tool, hash, definition, pinned_at) VALUES (?1, ?2, ?3, ?4)",
                    params![tool, hash, definition.to_string(), timestamp(now)],
                )
                .map_err(&error)?;
                PinCheck::Pinned
            }
            Some(pinned) if pinned == hash => {
                tx.execute(
                    "UPDATE pins SET seen_hash = NULL, seen_definition = NULL, seen_at = NULL
                     WHERE tool = ?1 AND seen_hash IS NOT NULL",
                    [tool],
                )
                .map_err(&error)?;
                PinCheck::Matches
            }
            Some(_) => {
                tx.execute(
                    "UPDATE pins SET seen_hash = ?2, seen_definition = ?3, seen_at = ?4 WHERE tool = ?1",
                    params![tool, hash, definition.to_string(), timestamp(now)],
                )
                .map_err(&error)?;
                let pin = self.pin_in(&tx, tool)?;
                PinCheck::Changed(pin.ok_or_else(|| unknown(tool, []))?)
            }
        };
        tx.commit().map_err(&error)?;
        Ok(check)
    }

    fn pin(&self, tool: &str) -> Result<Option<Pin>, PinError> {
        let conn = self.conn();
        self.pin_in(&conn, tool)
    }

    fn pins(&self) -> Result<Vec<Pin>, PinError> {
        let error = self.error("listing pins");
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM pins ORDER BY tool"))
            .map_err(&error)?;
        let mut rows = stmt.query([]).map_err(&error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(&error)? {
            out.push(self.read_pin(row)?);
        }
        Ok(out)
    }

    fn accept_pin(&self, tool: &str, now: SystemTime) -> Result<Pin, PinError> {
        let error = self.error("accepting a pin");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let Some(pin) = self.pin_in(&tx, tool)? else {
            return Err(unknown(tool, self.pinned_names(&tx)?));
        };
        if pin.change.is_none() {
            return Err(PinError::Unchanged {
                tool: tool.to_owned(),
                pinned_at: pin.pinned_at,
            });
        }
        tx.execute(
            "UPDATE pins SET hash = seen_hash, definition = seen_definition, pinned_at = ?2,
                 seen_hash = NULL, seen_definition = NULL, seen_at = NULL
             WHERE tool = ?1",
            params![tool, timestamp(now)],
        )
        .map_err(&error)?;
        let accepted = self.pin_in(&tx, tool)?.ok_or_else(|| unknown(tool, []))?;
        tx.commit().map_err(&error)?;
        Ok(accepted)
    }
}
