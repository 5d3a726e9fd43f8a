//! Background tasks: calls that run while their caller goes on, kept in the store so
//! that another process can read them and a restart cannot lose them.
//!
//! A task is written when its call starts (`working`) and rewritten once when it
//! ends (`completed`, `failed` or `cancelled`, with its outcome). A task whose
//! process stopped while it ran is marked `interrupted` by whoever reads it next
//! (the gate decides that, see `gate::task`); it is never run again. A finished
//! task is kept for its TTL after it finished, then dropped.

use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use toolgate_core::Outcome;

use super::StoreError;

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
    /// The tool the call runs.
    pub tool: String,
    /// The caller's id of the call.
    pub call_id: String,
    /// The run id of the call in the audit log.
    pub run_id: String,
    /// Where it stands.
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
pub(crate) fn rfc3339_ms(ms: u64) -> String {
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
