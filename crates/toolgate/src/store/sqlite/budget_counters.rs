//! The budgets' counters in SQLite: the `budget_spent` table (schema 15), one
//! row per counter; a call's charges are one IMMEDIATE transaction, so every
//! process on the file counts together.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::SqliteStore;
use crate::store::budget_counters::{has_room, spent_in};
use crate::store::{BudgetCharge, BudgetCounters, BudgetSpent, BudgetTaken, StoreError};

/// Version 15 of the schema.
pub(super) const MIGRATION: &str = "CREATE TABLE IF NOT EXISTS budget_spent (
    counter   TEXT PRIMARY KEY,
    window_ms INTEGER NOT NULL,
    spent     INTEGER NOT NULL
) WITHOUT ROWID;";

fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl BudgetCounters for SqliteStore {
    fn charge_budgets(&self, charges: &[BudgetCharge]) -> Result<BudgetTaken, StoreError> {
        let error = self.error("charging a call to its budgets");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let mut spent = Vec::with_capacity(charges.len());
        for charge in charges {
            let row = tx
                .prepare_cached("SELECT window_ms, spent FROM budget_spent WHERE counter = ?1")
                .and_then(|mut stmt| {
                    stmt.query_row([&charge.counter], |row| {
                        Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
                    })
                    .optional()
                })
                .map_err(&error)?;
            spent.push(row.map_or(0, |(window, n)| {
                spent_in(charge, from_sql(window), from_sql(n))
            }));
        }
        if let Some(charge) = (0..charges.len()).find(|&i| !has_room(&charges[i], spent[i])) {
            return Ok(BudgetTaken::Over {
                charge,
                spent: spent[charge],
            });
        }
        let mut now = Vec::with_capacity(charges.len());
        for (charge, spent) in charges.iter().zip(spent) {
            let total = spent.saturating_add(charge.amount);
            tx.prepare_cached(
                "INSERT INTO budget_spent (counter, window_ms, spent) VALUES (?1, ?2, ?3)
                 ON CONFLICT (counter) DO UPDATE
                 SET window_ms = excluded.window_ms, spent = excluded.spent",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    charge.counter,
                    to_sql(charge.window_ms),
                    to_sql(total)
                ])
            })
            .map_err(&error)?;
            now.push(total);
        }
        tx.commit().map_err(&error)?;
        Ok(BudgetTaken::Taken(now))
    }

    fn refund_budgets(&self, charges: &[BudgetCharge]) -> Result<(), StoreError> {
        let error = self.error("refunding a call's budgets");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        for charge in charges {
            tx.prepare_cached(
                "UPDATE budget_spent SET spent = max(spent - ?3, 0)
                 WHERE counter = ?1 AND window_ms = ?2",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    charge.counter,
                    to_sql(charge.window_ms),
                    to_sql(charge.amount)
                ])
            })
            .map_err(&error)?;
        }
        tx.commit().map_err(&error)
    }

    fn budgets_spent(&self) -> Result<Vec<BudgetSpent>, StoreError> {
        let error = self.error("reading the budgets' counters");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT counter, window_ms, spent FROM budget_spent")
            .map_err(&error)?;
        let rows = stmt
            .query_map([], |row| {
                Ok(BudgetSpent {
                    counter: row.get(0)?,
                    window_ms: from_sql(row.get(1)?),
                    spent: from_sql(row.get(2)?),
                })
            })
            .map_err(&error)?;
        rows.collect::<Result<_, _>>().map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::budget_counters::suite;

    #[test]
    fn sqlite_counters_charge_all_or_none_and_start_each_window_afresh() {
        suite::exercise(&SqliteStore::in_memory().unwrap());
    }

    #[test]
    fn sqlite_counters_hold_exactly_across_two_stores_on_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let one = SqliteStore::open(&path).unwrap();
        let two = SqliteStore::open(&path).unwrap();
        suite::race(&[&one, &two]);
    }
}
