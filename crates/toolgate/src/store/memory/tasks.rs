//! Background tasks in memory: a map by task id, for tests and throwaway gates.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use toolgate_core::Outcome;

use crate::store::{StoreError, TaskRecord, TaskStatus, TaskStore, rfc3339_ms};

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
