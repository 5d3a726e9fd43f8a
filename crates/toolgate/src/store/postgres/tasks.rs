//! Background tasks on PostgreSQL: the `tasks` table, each method one statement.

use tokio_postgres::Row;
use toolgate_core::Outcome;

use super::{Inner, PostgresStore, ms};
use crate::store::{StoreError, TaskRecord, TaskStatus, TaskStore, rfc3339_ms};

const TASK_COLUMNS: &str = "id, session, principal, tool, call_id, run_id, status, created_ms, \
     updated_ms, ttl_ms, lease_until_ms, owner, cancel_requested, outcome";

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
