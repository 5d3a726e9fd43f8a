//! Background tasks in SQLite: the `tasks` table (schema 7), one row per task.

use toolgate_core::Outcome;

use super::SqliteStore;
use crate::store::{StoreError, TaskRecord, TaskStatus, TaskStore, rfc3339_ms};

const TASK_COLUMNS: &str = "id, session, principal, tool, call_id, run_id, status, created_ms, \
     updated_ms, ttl_ms, lease_until_ms, owner, cancel_requested, CAST(outcome AS BLOB)";

/// A count of milliseconds as SQLite stores it.
fn sql_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

impl SqliteStore {
    fn read_task(&self, row: &rusqlite::Row<'_>) -> Result<TaskRecord, StoreError> {
        let error = self.error("reading a task");
        let id: String = row.get(0).map_err(&error)?;
        let corrupt = |problem: String| StoreError::CorruptTask {
            location: self
                .path()
                .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string()),
            id: id.clone(),
            problem,
        };
        let status: String = row.get(6).map_err(&error)?;
        let status = TaskStatus::parse(&status)
            .ok_or_else(|| corrupt(format!("an unknown status `{status}`")))?;
        let ms = |i: usize| -> Result<u64, StoreError> {
            let v: i64 = row.get(i).map_err(&error)?;
            Ok(u64::try_from(v).unwrap_or_default())
        };
        let outcome: Option<Vec<u8>> = row.get(13).map_err(&error)?;
        let outcome = match outcome {
            None => None,
            Some(bytes) => Some(
                serde_json::from_slice::<Outcome>(&bytes)
                    .map_err(|e| corrupt(format!("an outcome that cannot be read ({e})")))?,
            ),
        };
        let (created_ms, updated_ms) = (ms(7)?, ms(8)?);
        Ok(TaskRecord {
            session: row.get(1).map_err(&error)?,
            principal: row.get(2).map_err(&error)?,
            tool: row.get(3).map_err(&error)?,
            call_id: row.get(4).map_err(&error)?,
            run_id: row.get(5).map_err(&error)?,
            status,
            created_at: rfc3339_ms(created_ms),
            updated_at: rfc3339_ms(updated_ms),
            ttl_ms: ms(9)?,
            outcome,
            created_ms,
            updated_ms,
            owner: row.get(11).map_err(&error)?,
            lease_until_ms: ms(10)?,
            cancel_requested: row.get::<_, i64>(12).map_err(&error)? != 0,
            id,
        })
    }

    fn query_tasks(&self, sql: &str, id: Option<&str>) -> Result<Vec<TaskRecord>, StoreError> {
        let error = self.error("reading tasks");
        let conn = self.reader();
        let mut stmt = conn.prepare_cached(sql).map_err(&error)?;
        let mut rows = match id {
            Some(id) => stmt.query([id]),
            None => stmt.query([]),
        }
        .map_err(&error)?;
        let mut tasks = Vec::new();
        while let Some(row) = rows.next().map_err(&error)? {
            tasks.push(self.read_task(row)?);
        }
        Ok(tasks)
    }
}

impl TaskStore for super::SqliteStore {
    fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        let error = self.error("writing a task");
        let outcome = task
            .outcome
            .as_ref()
            .map(|o| serde_json::to_string(o).unwrap_or_else(|_| "null".into()));
        self.conn()
            .prepare_cached(
                "INSERT INTO tasks (id, session, principal, tool, call_id, run_id, status,
                    created_ms, updated_ms, ttl_ms, lease_until_ms, owner, cancel_requested, outcome)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )
            .and_then(|mut stmt| {
                stmt.execute(rusqlite::params![
                    task.id,
                    task.session,
                    task.principal,
                    task.tool,
                    task.call_id,
                    task.run_id,
                    task.status.as_str(),
                    sql_ms(task.created_ms),
                    sql_ms(task.updated_ms),
                    sql_ms(task.ttl_ms),
                    sql_ms(task.lease_until_ms),
                    task.owner,
                    i64::from(task.cancel_requested),
                    outcome,
                ])
            })
            .map_err(error)?;
        Ok(())
    }

    fn finish_task(
        &self,
        id: &str,
        status: TaskStatus,
        outcome: &Outcome,
        at_ms: u64,
    ) -> Result<bool, StoreError> {
        let error = self.error("ending a task");
        let outcome = serde_json::to_string(outcome).unwrap_or_else(|_| "null".into());
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE tasks SET status = ?2, outcome = ?3, updated_ms = ?4
                 WHERE id = ?1 AND status = 'working'",
            )
            .and_then(|mut stmt| {
                stmt.execute(rusqlite::params![
                    id,
                    status.as_str(),
                    outcome,
                    sql_ms(at_ms)
                ])
            })
            .map_err(error)?;
        Ok(changed > 0)
    }

    fn interrupt_task(&self, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let error = self.error("marking a task interrupted");
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE tasks SET status = 'interrupted', updated_ms = ?2
                 WHERE id = ?1 AND status = 'working'",
            )
            .and_then(|mut stmt| stmt.execute(rusqlite::params![id, sql_ms(at_ms)]))
            .map_err(error)?;
        Ok(changed > 0)
    }

    fn request_task_cancel(&self, id: &str) -> Result<(), StoreError> {
        let error = self.error("asking for a task to be cancelled");
        self.conn()
            .prepare_cached("UPDATE tasks SET cancel_requested = 1 WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute([id]))
            .map_err(error)?;
        Ok(())
    }

    fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1");
        Ok(self.query_tasks(&sql, Some(id))?.into_iter().next())
    }

    fn all_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms, id");
        self.query_tasks(&sql, None)
    }

    fn drop_expired_tasks(&self, now_ms: u64) -> Result<usize, StoreError> {
        let error = self.error("dropping expired tasks");
        self.conn()
            .prepare_cached(
                "DELETE FROM tasks WHERE status <> 'working' AND updated_ms + ttl_ms <= ?1",
            )
            .and_then(|mut stmt| stmt.execute([sql_ms(now_ms)]))
            .map_err(error)
    }
}
