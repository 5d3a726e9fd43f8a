//! Background tasks: calls that run while their caller goes on, kept in the store so
//! that another process can read them and a restart cannot lose them.
//!
//! A task is written when its call starts (`working`) and rewritten once when it
//! ends (`completed`, `failed` or `cancelled`, with its outcome). A task whose
//! process stopped while it ran is marked `interrupted` by whoever reads it next
//! (the gate decides that, see `gate::task`); it is never run again. A finished
//! task is kept for its TTL after it finished, then dropped.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::StoreError;
use toolgate_core::Outcome;

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// It is running.
    Working,
    /// The tool ran and returned a value.
    Completed,
    /// The tool ran and failed (or timed out); the outcome says how.
    Failed,
    /// It was cancelled before it finished.
    Cancelled,
    /// The process running it stopped before it finished; it may or may not have
    /// taken effect, and is never run again.
    Interrupted,
}

impl TaskStatus {
    /// The status as written in the store and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Interrupted => "interrupted",
        }
    }

    /// The status written as [`TaskStatus::as_str`] does.
    pub fn parse(text: &str) -> Option<Self> {
        [
            TaskStatus::Working,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
            TaskStatus::Interrupted,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }

    /// Whether the task has ended (every status but `working`).
    pub fn is_finished(self) -> bool {
        self != TaskStatus::Working
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One background task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task's id, e.g. `task-3f9a0c1e2b4d`.
    pub id: String,
    /// The conversation the call belongs to.
    pub session: String,
    /// Who made the call; only it (and the operator) sees the task.
    pub principal: String,
    pub tool: String,
    /// The caller's id of the call.
    pub call_id: String,
    /// The run id of the call in the audit log.
    pub run_id: String,
    pub status: TaskStatus,
    /// When the task started, RFC 3339 UTC.
    pub created_at: String,
    /// When it last changed (its end, once finished), RFC 3339 UTC.
    pub updated_at: String,
    /// How long it stays readable after it finished, in milliseconds.
    pub ttl_ms: u64,
    /// What the call came to, once finished (none when interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// [`TaskRecord::created_at`] in milliseconds since the Unix epoch.
    #[serde(skip)]
    pub created_ms: u64,
    /// [`TaskRecord::updated_at`] in milliseconds since the Unix epoch.
    #[serde(skip)]
    pub updated_ms: u64,
    /// Who runs it: the process and gate, as `gate::task` writes it.
    #[serde(skip)]
    pub owner: String,
    /// When it must have finished by, running or not (its deadline and a margin),
    /// in milliseconds since the Unix epoch: past it, a working task is interrupted.
    #[serde(skip)]
    pub lease_until_ms: u64,
    /// Whether someone asked for it to be cancelled (the process running it
    /// watches for this).
    #[serde(skip)]
    pub cancel_requested: bool,
}

impl TaskRecord {
    /// Whether it may be dropped at `now_ms`: finished, and its TTL past.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.status.is_finished() && self.updated_ms.saturating_add(self.ttl_ms) <= now_ms
    }
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC, to the millisecond.
pub fn rfc3339_ms(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

/// Where background tasks live.
///
/// Implementations are synchronous and safe to share; every method is one
/// transaction where the store has them.
pub trait TaskStore: Send + Sync {
    /// Writes a new task (status `working`).
    fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError>;

    /// Ends a working task with `status` and `outcome`; a task that is not
    /// working any more (interrupted meanwhile) is left as it is. Returns whether
    /// it was ended.
    fn finish_task(
        &self,
        id: &str,
        status: TaskStatus,
        outcome: &Outcome,
        at_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Marks a working task `interrupted`; returns whether it was working.
    fn interrupt_task(&self, id: &str, at_ms: u64) -> Result<bool, StoreError>;

    /// Asks the process running a working task to cancel it.
    fn request_task_cancel(&self, id: &str) -> Result<(), StoreError>;

    /// One task, if the store has it.
    fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError>;

    /// Every task, oldest first.
    fn all_tasks(&self) -> Result<Vec<TaskRecord>, StoreError>;

    /// Drops the finished tasks whose TTL is past at `now_ms`; returns how many.
    fn drop_expired_tasks(&self, now_ms: u64) -> Result<usize, StoreError>;
}

/// Tasks in memory, for tests and throwaway gates.
#[derive(Debug, Default)]
pub struct MemoryTasks {
    tasks: Mutex<BTreeMap<String, TaskRecord>>,
}

impl MemoryTasks {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, TaskRecord>> {
        // Every method replaces whole fields, so a poisoned map is whole.
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl TaskStore for MemoryTasks {
    fn create_task(&self, task: &TaskRecord) -> Result<(), StoreError> {
        self.lock().insert(task.id.clone(), task.clone());
        Ok(())
    }

    fn finish_task(
        &self,
        id: &str,
        status: TaskStatus,
        outcome: &Outcome,
        at_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut tasks = self.lock();
        match tasks.get_mut(id) {
            Some(task) if task.status == TaskStatus::Working => {
                task.status = status;
                task.outcome = Some(outcome.clone());
                task.updated_ms = at_ms;
                task.updated_at = rfc3339_ms(at_ms);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn interrupt_task(&self, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let mut tasks = self.lock();
        match tasks.get_mut(id) {
            Some(task) if task.status == TaskStatus::Working => {
                task.status = TaskStatus::Interrupted;
                task.updated_ms = at_ms;
                task.updated_at = rfc3339_ms(at_ms);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn request_task_cancel(&self, id: &str) -> Result<(), StoreError> {
        if let Some(task) = self.lock().get_mut(id) {
            task.cancel_requested = true;
        }
        Ok(())
    }

    fn task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }

    fn all_tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        let mut tasks: Vec<TaskRecord> = self.lock().values().cloned().collect();
        tasks.sort_by(|a, b| (a.created_ms, &a.id).cmp(&(b.created_ms, &b.id)));
        Ok(tasks)
    }

    fn drop_expired_tasks(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut tasks = self.lock();
        let before = tasks.len();
        tasks.retain(|_, task| !task.expired(now_ms));
        Ok(before - tasks.len())
    }
}

// ---------------------------------------------------------------------------------
// SQLite
// ---------------------------------------------------------------------------------

const TASK_COLUMNS: &str = "id, session, principal, tool, call_id, run_id, status, created_ms, \
     updated_ms, ttl_ms, lease_until_ms, owner, cancel_requested, CAST(outcome AS BLOB)";

/// A count of milliseconds as SQLite stores it.
fn sql_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

impl super::SqliteStore {
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
