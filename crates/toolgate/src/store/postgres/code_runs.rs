//! Paused programs on PostgreSQL: the `code_runs` table, each row sealed. A paused
//! program is taken by `UPDATE … WHERE status = 'paused'`, so two instances cannot
//! both resume it.

use serde_json::Value;
use tokio_postgres::Row;

use super::{PostgresStore, ms};
use crate::store::code_runs::{not_paused, seal, seal_holds};
use crate::store::{CodeRunStore, PausedRun, StoreError};

const RUN_COLUMNS: &str = "run_id, session, principal, code_sha256, tool, call_id, arguments,
    approval_id, reason, calls, suspensions, elapsed_ms, printed, since_ms, expires_ms,
    status, snapshot, seal";

fn run_row(row: &Row) -> (PausedRun, String, String) {
    let count = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
    (
        PausedRun {
            run_id: row.get(0),
            session: row.get(1),
            principal: row.get(2),
            code_sha256: row.get(3),
            tool: row.get(4),
            call_id: row.get(5),
            arguments: serde_json::from_str(row.get(6)).unwrap_or(Value::Null),
            approval_id: row.get(7),
            reason: row.get(8),
            calls: count(9),
            suspensions: count(10),
            elapsed_ms: count(11),
            printed: row.get(12),
            since_ms: count(13),
            expires_ms: count(14),
            snapshot: row.get(16),
        },
        row.get(15),
        row.get(17),
    )
}

impl CodeRunStore for PostgresStore {
    fn pause_run(&self, run: &PausedRun) -> Result<(), StoreError> {
        let seal = seal(&self.inner.key, run);
        let int = |n: u64| ms(n);
        self.execute(
            "pausing a program",
            "INSERT INTO code_runs (run_id, session, principal, code_sha256, tool, call_id,
               arguments, approval_id, reason, calls, suspensions, elapsed_ms, printed,
               since_ms, expires_ms, status, snapshot, seal)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
               'paused', $16, $17)
             ON CONFLICT (run_id) DO UPDATE SET
               session = excluded.session, principal = excluded.principal,
               code_sha256 = excluded.code_sha256, tool = excluded.tool,
               call_id = excluded.call_id, arguments = excluded.arguments,
               approval_id = excluded.approval_id, reason = excluded.reason,
               calls = excluded.calls, suspensions = excluded.suspensions,
               elapsed_ms = excluded.elapsed_ms, printed = excluded.printed,
               since_ms = excluded.since_ms, expires_ms = excluded.expires_ms,
               status = 'paused', snapshot = excluded.snapshot, seal = excluded.seal",
            vec![
                Box::new(run.run_id.clone()),
                Box::new(run.session.clone()),
                Box::new(run.principal.clone()),
                Box::new(run.code_sha256.clone()),
                Box::new(run.tool.clone()),
                Box::new(run.call_id.clone()),
                Box::new(run.arguments.to_string()),
                Box::new(run.approval_id.clone()),
                Box::new(run.reason.clone()),
                Box::new(int(run.calls)),
                Box::new(int(run.suspensions)),
                Box::new(int(run.elapsed_ms)),
                Box::new(run.printed.clone()),
                Box::new(int(run.since_ms)),
                Box::new(int(run.expires_ms)),
                Box::new(run.snapshot.clone()),
                Box::new(seal),
            ],
        )?;
        Ok(())
    }

    fn take_run(&self, run_id: &str) -> Result<PausedRun, StoreError> {
        let (inner, run_id) = (self.inner.clone(), run_id.to_owned());
        self.run(async move {
            let error = inner.error("taking a paused program");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            let sql = format!("SELECT {RUN_COLUMNS} FROM code_runs WHERE run_id = $1 FOR UPDATE");
            let Some(row) = tx.query_opt(&sql, &[&run_id]).await.map_err(&error)? else {
                return Err(not_paused(&run_id, None));
            };
            let (run, status, stored_seal) = run_row(&row);
            if status != "paused" {
                return Err(not_paused(&run_id, Some(&status)));
            }
            if !seal_holds(&inner.key, &run, &stored_seal) {
                return Err(StoreError::CodeRunTampered {
                    location: inner.location.clone(),
                    id: run_id,
                });
            }
            tx.execute(
                "UPDATE code_runs SET status = 'resuming' WHERE run_id = $1 AND status = 'paused'",
                &[&run_id],
            )
            .await
            .map_err(&error)?;
            tx.commit().await.map_err(&error)?;
            Ok(run)
        })
    }

    fn release_run(&self, run_id: &str) -> Result<(), StoreError> {
        let changed = self.execute(
            "updating a paused program",
            "UPDATE code_runs SET status = 'paused' WHERE run_id = $1 AND status = 'resuming'",
            vec![Box::new(run_id.to_owned())],
        )?;
        if changed == 0 {
            return Err(not_paused(run_id, None));
        }
        Ok(())
    }

    fn finish_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.execute(
            "finishing a paused program",
            "UPDATE code_runs SET status = 'finished', snapshot = ''::bytea WHERE run_id = $1",
            vec![Box::new(run_id.to_owned())],
        )?;
        Ok(())
    }

    fn paused_runs(&self) -> Result<Vec<PausedRun>, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = conn
                .query(
                    "SELECT run_id, session, principal, code_sha256, tool, call_id, arguments,
                       approval_id, reason, calls, suspensions, elapsed_ms, printed, since_ms,
                       expires_ms, status, ''::bytea AS snapshot, seal
                     FROM code_runs WHERE status = 'paused' ORDER BY since_ms, run_id",
                    &[],
                )
                .await
                .map_err(inner.error("listing paused programs"))?;
            Ok(rows.iter().map(|row| run_row(row).0).collect())
        })
    }
}
