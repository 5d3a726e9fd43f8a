//! The budgets' counters on PostgreSQL, shared by every instance on the
//! database: the `budget_spent` table, and `toolgate_charge_budgets` (a
//! function the schema defines) that takes a call's charges, or none, in one
//! statement under the counters' row locks: one round trip per call.

use super::{PostgresStore, StoreError};
use crate::store::{BudgetCharge, BudgetCounters, BudgetSpent, BudgetTaken};

/// The statement a charge runs, prepared once per pooled connection.
const CHARGE: &str =
    "SELECT over_by, spent_before, spent_now FROM toolgate_charge_budgets($1, $2, $3, $4)";

fn to_sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn from_sql(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// The charges as the function's arrays: counters, windows, amounts.
fn columns(charges: &[BudgetCharge]) -> (Vec<String>, Vec<i64>, Vec<i64>) {
    (
        charges.iter().map(|c| c.counter.clone()).collect(),
        charges.iter().map(|c| to_sql(c.window_ms)).collect(),
        charges.iter().map(|c| to_sql(c.amount)).collect(),
    )
}

impl BudgetCounters for PostgresStore {
    fn charge_budgets(&self, charges: &[BudgetCharge]) -> Result<BudgetTaken, StoreError> {
        if charges.is_empty() {
            return Ok(BudgetTaken::Taken(Vec::new()));
        }
        let (counters, windows, amounts) = columns(charges);
        let limits: Vec<Option<i64>> = charges.iter().map(|c| c.limit.map(to_sql)).collect();
        let inner = self.inner.clone();
        let (over_by, before, now) = self.run(async move {
            let conn = inner.conn().await?;
            let failed = inner.error("charging a call to its budgets");
            let charge = conn.prepare_cached(CHARGE).await.map_err(&failed)?;
            let row = conn
                .query_one(&charge, &[&counters, &windows, &amounts, &limits])
                .await
                .map_err(failed)?;
            Ok((
                row.get::<_, i32>(0),
                row.get::<_, i64>(1),
                row.get::<_, Vec<i64>>(2),
            ))
        })?;
        Ok(match usize::try_from(over_by).unwrap_or(0).checked_sub(1) {
            None => BudgetTaken::Taken(now.into_iter().map(from_sql).collect()),
            Some(charge) => BudgetTaken::Over {
                charge,
                spent: from_sql(before),
            },
        })
    }

    fn refund_budgets(&self, charges: &[BudgetCharge]) -> Result<(), StoreError> {
        let (counters, windows, amounts) = columns(charges);
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute(
                "UPDATE budget_spent AS b SET spent = greatest(b.spent - t.a, 0)
                 FROM unnest($1::TEXT[], $2::BIGINT[], $3::BIGINT[]) AS t(c, w, a)
                 WHERE b.counter = t.c AND b.window_ms = t.w",
                &[&counters, &windows, &amounts],
            )
            .await
            .map_err(inner.error("refunding a call's budgets"))?;
            Ok(())
        })
    }

    fn budgets_spent(&self) -> Result<Vec<BudgetSpent>, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = conn
                .query("SELECT counter, window_ms, spent FROM budget_spent", &[])
                .await
                .map_err(inner.error("reading the budgets' counters"))?;
            Ok(rows
                .iter()
                .map(|row| BudgetSpent {
                    counter: row.get(0),
                    window_ms: from_sql(row.get(1)),
                    spent: from_sql(row.get(2)),
                })
                .collect())
        })
    }
}
