//! Pins, background tasks and paused programs on PostgreSQL: each method one
//! statement or one transaction, with the SQLite store's checks. A paused program
//! is taken by `UPDATE … WHERE status = 'paused'`, so two instances cannot both
//! resume it.

use std::time::SystemTime;

use serde_json::Value;
use tokio_postgres::Row;

use super::super::code_runs::{not_paused, seal, seal_holds};
use super::super::pins::{timestamp, unknown};
use super::super::{
    CodeRunStore, PausedRun, Pin, PinChange, PinCheck, PinError, PinStore, TaskRecord, TaskStatus,
    TaskStore, rfc3339_ms,
};
use super::{Inner, PostgresStore, StoreError};
use toolgate_core::Outcome;

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
        let hash = crate::content_hash(definition);
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

// ---------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------

const TASK_COLUMNS: &str = "id, session, principal, tool, call_id, run_id, status, created_ms, \
     updated_ms, ttl_ms, lease_until_ms, owner, cancel_requested, outcome";

fn ms(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn task_row(inner: &Inner, row: &Row) -> Result<TaskRecord, StoreError> {
    let id: String = row.get(0);
    let corrupt = |problem: String| StoreError::CorruptTask {
        location: inner.location.clone(),
        id: id.clone(),
        problem,
    };
    let status: &str = row.get(6);
    let status = TaskStatus::parse(status)
        .ok_or_else(|| corrupt(format!("an unknown status `{status}`")))?;
    let count = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or_default();
    let outcome = match row.get::<_, Option<&str>>(13) {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<Outcome>(text)
                .map_err(|e| corrupt(format!("an outcome that cannot be read ({e})")))?,
        ),
    };
    let (created_ms, updated_ms) = (count(7), count(8));
    Ok(TaskRecord {
        session: row.get(1),
        principal: row.get(2),
        tool: row.get(3),
        call_id: row.get(4),
        run_id: row.get(5),
        status,
        created_at: rfc3339_ms(created_ms),
        updated_at: rfc3339_ms(updated_ms),
        ttl_ms: count(9),
        outcome,
        created_ms,
        updated_ms,
        owner: row.get(11),
        lease_until_ms: count(10),
        cancel_requested: row.get(12),
        id,
    })
}

impl PostgresStore {
    /// Runs one statement; the rows it changed.
    fn execute(
        &self,
        action: &'static str,
        sql: &'static str,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    ) -> Result<u64, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p.as_ref() as _).collect();
            conn.execute(sql, &params)
                .await
                .map_err(inner.error(action))
        })
    }

    fn query_tasks(&self, sql: String, id: Option<String>) -> Result<Vec<TaskRecord>, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = match &id {
                Some(id) => conn.query(&sql, &[id]).await,
                None => conn.query(&sql, &[]).await,
            }
            .map_err(inner.error("reading tasks"))?;
            rows.iter().map(|row| task_row(&inner, row)).collect()
        })
    }
}

impl TaskStore for PostgresStore {
    fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let outcome = task
            .outcome
            .as_ref()
            .map(|o| serde_json::to_string(o).unwrap_or_else(|_| "null".into()));
        self.execute(
            "writing a task",
            "INSERT INTO tasks (id, session, principal, tool, call_id, run_id, status,
                created_ms, updated_ms, ttl_ms, lease_until_ms, owner, cancel_requested, outcome)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            vec![
                Box::new(task.id.clone()),
                Box::new(task.session.clone()),
                Box::new(task.principal.clone()),
                Box::new(task.tool.clone()),
                Box::new(task.call_id.clone()),
                Box::new(task.run_id.clone()),
                Box::new(task.status.as_str()),
                Box::new(ms(task.created_ms)),
                Box::new(ms(task.updated_ms)),
                Box::new(ms(task.ttl_ms)),
                Box::new(ms(task.lease_until_ms)),
                Box::new(task.owner.clone()),
                Box::new(task.cancel_requested),
                Box::new(outcome),
            ],
        )?;
        Ok(())
    }

    fn finish_task(
        &self,
        id: &str,
        status: TaskStatus,
        outcome: &Outcome,
        at_ms: u64,
    ) -> Result<bool, StoreError> {
        let outcome = serde_json::to_string(outcome).unwrap_or_else(|_| "null".into());
        let changed = self.execute(
            "ending a task",
            "UPDATE tasks SET status = $2, outcome = $3, updated_ms = $4
             WHERE id = $1 AND status = 'working'",
            vec![
                Box::new(id.to_owned()),
                Box::new(status.as_str()),
                Box::new(outcome),
                Box::new(ms(at_ms)),
            ],
        )?;
        Ok(changed > 0)
    }

    fn interrupt_task(&self, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let changed = self.execute(
            "marking a task interrupted",
            "UPDATE tasks SET status = 'interrupted', updated_ms = $2
             WHERE id = $1 AND status = 'working'",
            vec![Box::new(id.to_owned()), Box::new(ms(at_ms))],
        )?;
        Ok(changed > 0)
    }

    fn request_task_cancel(&self, id: &str) -> Result<(), StoreError> {
        self.execute(
            "asking for a task to be cancelled",
            "UPDATE tasks SET cancel_requested = true WHERE id = $1",
            vec![Box::new(id.to_owned())],
        )?;
        Ok(())
    }

    fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1");
        Ok(self
            .query_tasks(sql, Some(id.to_owned()))?
            .into_iter()
            .next())
    }

    fn all_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id");
        self.query_tasks(sql, None)
    }

    fn drop_expired_tasks(&self, now_ms: u64) -> Result<usize, StoreError> {
        let dropped = self.execute(
            "dropping expired tasks",
            "DELETE FROM tasks WHERE status <> 'working' AND updated_ms + ttl_ms <= $1",
            vec![Box::new(ms(now_ms))],
        )?;
        Ok(usize::try_from(dropped).unwrap_or(usize::MAX))
    }
}

// ---------------------------------------------------------------------------------
// Paused programs
// ---------------------------------------------------------------------------------

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
