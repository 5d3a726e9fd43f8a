//! Background tasks: calls that run while their caller goes on.
//!
//! A call to a tool that runs in the background (`background: true` or
//! `scheduling:` in a spec file), or any call made with [`Gate::start`], goes
//! through every stage of the gate as any call does: admitted, authorized and its
//! intent recorded. Then, instead of waiting, the caller gets
//! [`Outcome::Started`] with the task's id, and the call runs on a task of its own;
//! when it ends, its completion is recorded as any call's is (state effects, audit
//! completion) and the task's outcome written to the store.
//!
//! Tasks live in the gate's store ([`TaskStore`]), so another process on the same
//! file reads them (`toolgate tasks list`). A task records who runs it: this
//! process (its id and start time) and this gate's task set. A working task whose
//! runner is gone (its process stopped, or the gate and its runtime were dropped)
//! or whose deadline passed long ago is marked `interrupted` by the next reader:
//! never re-run, and, unless it only read, its intent stays in `audit pending`
//! for the operator to resolve. A finished task stays readable for its TTL
//! ([`GateOptions::task_ttl`](super::GateOptions::task_ttl), an hour by default),
//! then is dropped.
//!
//! A principal sees only its own tasks; the operator sees every task.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_core::{CLIPPED_KEY, Principal, clip_text, content_hash, json_len};

use super::execution::Execution;
use super::{Gate, Outcome, ToolCall};
use crate::store::{StoreError, TaskRecord, TaskStatus, rfc3339_ms};

/// How long a finished task stays readable by default: an hour.
pub const DEFAULT_TASK_TTL: Duration = Duration::from_secs(3600);

/// How long past its deadline a working task may still be recording its
/// completion before it counts as interrupted whoever runs it.
const LEASE_MARGIN: Duration = Duration::from_secs(60);

/// How often a running task checks the store for a cancellation asked by another
/// process.
const CANCEL_POLL: Duration = Duration::from_millis(200);

/// How often [`Gate::await_task`] reads the store for a task another process runs.
const AWAIT_POLL: Duration = Duration::from_millis(100);

/// A future that runs a background call, as handed to a [`TaskScope`].
pub type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Wraps the future of a background call before it is spawned: how a caller
/// gives the task what its own context held (for MCP, the client to report
/// progress to).
pub type TaskScope = Arc<dyn Fn(TaskFuture) -> TaskFuture + Send + Sync>;

/// Which tasks [`Gate::tasks`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Only those of this conversation.
    pub session: Option<String>,
    /// Only those in this status.
    pub status: Option<TaskStatus>,
}

/// A task could not be read or cancelled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No task has this id, for this principal (tasks of other principals are
    /// unknown to it, as are tasks dropped after their TTL).
    #[error(
        "no task has id `{id}`; finished tasks are kept for their TTL after they end, and `toolgate tasks list` shows the ones there are"
    )]
    Unknown {
        /// The id asked for.
        id: String,
    },
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The background tasks this gate (and the gates that succeed it) run.
pub(crate) struct Tasks {
    /// Who runs them, as written in the store: `PID:START:SET`.
    owner: String,
    /// This set's id, registered in [`live_sets`] for as long as it lives.
    set: String,
    running: Mutex<HashMap<String, Running>>,
    /// Task places taken, by principal: a task's from before its intent is
    /// written until it ends.
    places: Mutex<HashMap<String, usize>>,
}

/// One of a principal's places for a running task, given back when dropped.
pub(super) struct TaskPlace {
    tasks: Arc<Tasks>,
    principal: String,
}

impl Drop for TaskPlace {
    fn drop(&mut self) {
        let mut places = self.tasks.places();
        if let Some(taken) = places.get_mut(&self.principal) {
            *taken -= 1;
            if *taken == 0 {
                places.remove(&self.principal);
            }
        }
    }
}

/// A task running here.
struct Running {
    cancel: CancellationToken,
    done: watch::Receiver<bool>,
}

/// The task sets alive in this process.
fn live_sets() -> MutexGuard<'static, HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

impl Default for Tasks {
    fn default() -> Self {
        let set = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        live_sets().insert(set.clone());
        let (pid, start) = this_process();
        Tasks {
            owner: format!("{pid}:{start}:{set}"),
            set,
            running: Mutex::default(),
            places: Mutex::default(),
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        live_sets().remove(&self.set);
    }
}

impl Tasks {
    fn running(&self) -> MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn places(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.places.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The outcome a finished task keeps: the call's outcome when it is at most
/// `max` bytes as JSON; else a value's size, hash and start, and an error's
/// message cut, each saying so. A task is read back for an hour by default:
/// kept whole, a few large results would fill the store.
pub(super) fn kept_for_task(outcome: Outcome, max: usize) -> Outcome {
    let size = match &outcome {
        Outcome::Ok {
            value,
            structured,
            text,
            ..
        } => json_len(value) + structured.as_ref().map_or(0, json_len) + text.len(),
        Outcome::Error { message, .. } => message.len(),
        _ => return outcome,
    };
    if size <= max {
        return outcome;
    }
    let note = format!(
        "the result was {size} bytes, more than the {max} bytes a background task keeps; it is kept as its size, SHA-256 and start. Call the tool directly (not as a task) for all of it"
    );
    match outcome {
        Outcome::Ok {
            value, mut notes, ..
        } => {
            let kept = json!({CLIPPED_KEY: {
                "bytes": json_len(&value),
                "sha256": content_hash(&value),
                "start": clip_text(&value.to_string(), KEPT_START_CHARS),
            }});
            notes.push(note.clone());
            Outcome::Ok {
                text: format!("{note}: {}", kept[CLIPPED_KEY]["start"]),
                value: kept,
                structured: None,
                notes,
            }
        }
        Outcome::Error { message, retryable } => Outcome::Error {
            message: clip_text(&message, KEPT_START_CHARS).into_owned(),
            retryable,
        },
        other => other,
    }
}

/// How many characters of a result too large to keep a task keeps.
const KEPT_START_CHARS: usize = 1024;

/// This process's id and start time (in clock ticks since boot, from
/// `/proc/self/stat`; empty where there is none), which together name it even
/// after its id is reused.
fn this_process() -> (u32, String) {
    let pid = std::process::id();
    (pid, process_start(pid).unwrap_or_default())
}

/// A process's start time, if it is running (and not a zombie).
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ...`: the command may hold spaces and parentheses.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    // Field 22 of the line is the start time; fields here begin at field 3.
    fields.get(19).map(|s| (*s).to_owned())
}

/// Whether the runner `owner` names is alive, as far as this process can tell.
fn runner_alive(owner: &str) -> bool {
    let mut parts = owner.splitn(3, ':');
    let (Some(pid), Some(start), Some(set)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let (me, my_start) = this_process();
    if pid == me && start == my_start {
        return live_sets().contains(set);
    }
    if !std::path::Path::new("/proc/self/stat").exists() {
        // No way to look at other processes here: the lease decides.
        return true;
    }
    process_start(pid).is_some_and(|s| s == start)
}

fn now_ms(clock: &super::Clock) -> u64 {
    let since = clock().duration_since(UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

fn wall_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The status a background call's end gives its task.
fn status_of(outcome: &Outcome, audit_status: &str) -> TaskStatus {
    match (outcome, audit_status) {
        (Outcome::Ok { .. }, _) => TaskStatus::Completed,
        (_, "cancelled") => TaskStatus::Cancelled,
        _ => TaskStatus::Failed,
    }
}

impl Gate {
    /// One task, if `principal` may see it (its own; the operator sees all).
    pub fn task(&self, id: &str, principal: &Principal) -> Result<TaskRecord, TaskError> {
        self.settle_tasks()?;
        self.store
            .task(id)?
            .map(|task| self.settled(task))
            .filter(|task| may_see(principal, task))
            .ok_or_else(|| TaskError::Unknown { id: id.to_owned() })
    }

    /// The tasks `principal` may see that pass `filter`, oldest first.
    pub fn tasks(
        &self,
        filter: &TaskFilter,
        principal: &Principal,
    ) -> Result<Vec<TaskRecord>, TaskError> {
        self.settle_tasks()?;
        Ok(self
            .store
            .all_tasks()?
            .into_iter()
            .filter(|task| may_see(principal, task))
            .map(|task| self.settled(task))
            .filter(|task| filter.session.as_ref().is_none_or(|s| *s == task.session))
            .filter(|task| filter.status.is_none_or(|s| s == task.status))
            .collect())
    }

    /// Waits up to `timeout` for a task to finish; returns it as it then stands
    /// (still `working` if it did not finish in time).
    pub async fn await_task(
        &self,
        id: &str,
        timeout: Duration,
        principal: &Principal,
    ) -> Result<TaskRecord, TaskError> {
        let task = self.task(id, principal)?;
        if task.status.is_finished() {
            return Ok(task);
        }
        let local = self.tasks.running().get(id).map(|r| r.done.clone());
        let wait = async {
            match local {
                Some(mut done) => {
                    let _ = done.wait_for(|done| *done).await;
                }
                None => loop {
                    tokio::time::sleep(AWAIT_POLL).await;
                    match self.task(id, principal) {
                        Ok(task) if !task.status.is_finished() => {}
                        _ => break,
                    }
                },
            }
        };
        let _ = tokio::time::timeout(timeout, wait).await;
        self.task(id, principal)
    }

    /// Asks a working task to stop, and returns it as it then stands. A task this
    /// process runs is cancelled at once; one another process runs is cancelled by
    /// that process within a moment (it watches the store). A finished task is
    /// left as it is.
    pub fn cancel_task(&self, id: &str, principal: &Principal) -> Result<TaskRecord, TaskError> {
        let task = self.task(id, principal)?;
        if task.status.is_finished() {
            return Ok(task);
        }
        self.store.request_task_cancel(id)?;
        if let Some(running) = self.tasks.running().get(id) {
            running.cancel.cancel();
        }
        self.task(id, principal)
    }

    /// Drops the finished tasks whose TTL is past.
    fn settle_tasks(&self) -> Result<(), StoreError> {
        self.store.drop_expired_tasks(now_ms(&self.clock))?;
        Ok(())
    }

    /// `task`, marked interrupted (in the store too) if it is working but its
    /// runner is gone or its deadline long past.
    fn settled(&self, mut task: TaskRecord) -> TaskRecord {
        if task.status != TaskStatus::Working {
            return task;
        }
        let here = self.tasks.running().contains_key(&task.id);
        if here || (runner_alive(&task.owner) && wall_ms() < task.lease_until_ms) {
            return task;
        }
        let at = now_ms(&self.clock);
        match self.store.interrupt_task(&task.id, at) {
            Ok(true) => {
                task.status = TaskStatus::Interrupted;
                task.updated_ms = at;
                task.updated_at = rfc3339_ms(at);
                task
            }
            // It finished meanwhile, or the store cannot be written: read it again.
            _ => self.store.task(&task.id).ok().flatten().unwrap_or(task),
        }
    }

    /// One of `principal`'s places for a running task, or the refusal that says
    /// there is none: [`GateOptions::max_tasks_per_principal`] of its tasks
    /// already run here.
    ///
    /// [`GateOptions::max_tasks_per_principal`]: super::GateOptions::max_tasks_per_principal
    pub(super) fn task_place(&self, principal: &Principal) -> Result<TaskPlace, Box<Outcome>> {
        let max = self.options.max_tasks_per_principal.max(1);
        let mut places = self.tasks.places();
        let taken = places.entry(principal.id.clone()).or_default();
        if *taken >= max {
            return Err(Box::new(Outcome::RateLimited {
                limit: format!(
                    "{max} background tasks running at once for {}; wait for one to finish (or cancel one), then call again",
                    principal.id
                ),
                retry_after_ms: 1000,
            }));
        }
        *taken += 1;
        drop(places);
        Ok(TaskPlace {
            tasks: self.tasks.clone(),
            principal: principal.id.clone(),
        })
    }

    /// Writes the task of an execution and spawns it; the caller's outcome.
    pub(super) fn launch(
        &self,
        call: &ToolCall,
        principal: &Principal,
        execution: Execution,
        cancel: CancellationToken,
        scope: Option<TaskScope>,
        place: TaskPlace,
    ) -> Outcome {
        let id = format!("task-{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let now = now_ms(&self.clock);
        let lease = execution.timeout.saturating_add(LEASE_MARGIN);
        let record = TaskRecord {
            id: id.clone(),
            session: execution.session.clone(),
            principal: principal.id.clone(),
            tool: call.name.clone(),
            call_id: execution.audit.call_id.clone(),
            run_id: execution.run_id().to_owned(),
            status: TaskStatus::Working,
            created_at: rfc3339_ms(now),
            updated_at: rfc3339_ms(now),
            ttl_ms: duration_ms(self.options.task_ttl),
            outcome: None,
            created_ms: now,
            updated_ms: now,
            owner: self.tasks.owner.clone(),
            lease_until_ms: wall_ms().saturating_add(duration_ms(lease)),
            cancel_requested: false,
        };
        if let Err(e) = self.store.create_task(&record) {
            let outcome = Outcome::error(
                format!(
                    "the task of `{}` cannot be written ({e}), so it did not start; tell the operator",
                    call.name
                ),
                true,
            );
            return execution.record("error", outcome, 0).0;
        }
        let (done_tx, done_rx) = watch::channel(false);
        self.tasks.running().insert(
            id.clone(),
            Running {
                cancel: cancel.clone(),
                done: done_rx,
            },
        );
        let tasks = self.tasks.clone();
        let store = self.store.clone();
        let clock = self.clock.clone();
        let task_id = id.clone();
        let max_result = self.options.max_task_result_bytes;
        let future: TaskFuture = Box::pin(async move {
            let _place = place;
            let watching = watch_for_cancel(store.clone(), task_id.clone(), cancel.clone());
            let (outcome, status) = execution.run(&cancel).await;
            watching.abort();
            let status = status_of(&outcome, status);
            let outcome = kept_for_task(outcome, max_result);
            if let Err(e) = store.finish_task(&task_id, status, &outcome, now_ms(&clock)) {
                tracing::error!(task = task_id, "cannot record the end of a task: {e}");
            }
            tasks.running().remove(&task_id);
            let _ = done_tx.send(true);
        });
        let future = match scope {
            Some(scope) => scope(future),
            None => future,
        };
        tokio::spawn(future);
        Outcome::Started { task_id: id }
    }
}

/// Cancels `cancel` when the store says someone (another process) asked to.
fn watch_for_cancel(
    store: Arc<dyn crate::store::GateStore>,
    id: String,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(CANCEL_POLL) => {}
            }
            if let Ok(Some(task)) = store.task(&id)
                && task.cancel_requested
            {
                cancel.cancel();
                return;
            }
        }
    })
}

/// Whether `principal` may see `task`: its own, or any for the operator.
fn may_see(principal: &Principal, task: &TaskRecord) -> bool {
    principal.id == Principal::operator().id || principal.id == task.principal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_too_large_for_a_task_is_kept_as_its_size_hash_and_start() {
        let value = json!({"blob": "x".repeat(10_000)});
        let outcome = Outcome::Ok {
            text: value.to_string(),
            value: value.clone(),
            structured: None,
            notes: Vec::new(),
        };
        assert_eq!(
            kept_for_task(outcome.clone(), 1 << 20),
            outcome,
            "small enough: whole"
        );
        let Outcome::Ok {
            value: kept,
            text,
            notes,
            ..
        } = kept_for_task(outcome, 4096)
        else {
            panic!("still ok: the call ran")
        };
        assert_eq!(kept[CLIPPED_KEY]["bytes"], json!(json_len(&value)));
        assert_eq!(kept[CLIPPED_KEY]["sha256"], json!(content_hash(&value)));
        assert!(json_len(&kept) + text.len() < 4096, "{}", json_len(&kept));
        assert!(
            notes[0].contains("more than the 4096 bytes a background task keeps"),
            "{notes:?}"
        );
    }

    #[test]
    fn this_process_is_alive_while_its_task_set_lives() {
        let tasks = Tasks::default();
        assert!(runner_alive(&tasks.owner));
        let owner = tasks.owner.clone();
        drop(tasks);
        assert!(!runner_alive(&owner), "a dropped set runs nothing");
    }

    #[test]
    fn an_owner_that_cannot_be_read_runs_nothing() {
        assert!(!runner_alive(""));
        assert!(!runner_alive("not-a-pid:1:x"));
        // A process that does not exist (pid_max is at most 2^22).
        assert!(!runner_alive("4294967295:1:x"));
    }
}
