//! `toolgate tasks`: the background calls, as the state file keeps them.
//!
//! A background tool's call (`background: true` or `scheduling:`) runs on as a task
//! while its caller goes on; the process that runs it writes what it came to in
//! `state.db`, so any other process reads it here. A task whose process stopped
//! before it ended shows as `interrupted`: it is never run again, and unless it only
//! read, `toolgate audit pending` lists its call for the operator to resolve.

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use toolgate::{Catalog, Outcome, gate::TaskFilter, store::TaskRecord, store::TaskStatus};

use crate::context::CommandResult;
use crate::context::{SpecArgs, StateArgs};
use crate::context::{load, open_gate, open_store, principal};
use crate::output::{first_line, print_json, say_table, show_json};

/// What `toolgate tasks` does; without one, it lists the tasks.
#[derive(Subcommand)]
pub enum TaskAction {
    /// One line per task: id, status, tool, session, principal, started, last change.
    List {
        /// Only the tasks of this conversation.
        #[arg(long, value_name = "SESSION")]
        of: Option<String>,
        /// Only the tasks in this status: working, completed, failed, cancelled, interrupted.
        #[arg(long, value_parser = parse_status)]
        status: Option<TaskStatus>,
    },
    /// One task, with its result once it has one.
    Get {
        /// The task's id, e.g. task-3f9a0c1e2b4d5a6f.
        id: String,
        /// Wait this long for it to finish first (e.g. 10s, 2m).
        #[arg(long, value_name = "DURATION", value_parser = parse_wait)]
        wait: Option<Duration>,
    },
    /// Cancel a working task (the process running it stops it within a moment).
    Cancel {
        /// The task's id, e.g. task-3f9a0c1e2b4d5a6f.
        id: String,
    },
}

fn parse_status(text: &str) -> Result<TaskStatus, String> {
    TaskStatus::parse(text).ok_or_else(|| {
        format!("`{text}` is not a task status; use working, completed, failed, cancelled or interrupted")
    })
}

fn parse_wait(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}); write one such as `10s` or `2m`"))
}

/// Runs one `toolgate tasks` action, as `caller` (the operator, who sees every
/// task, by default).
pub fn run(
    args: &SpecArgs,
    state: &StateArgs,
    caller: Option<&str>,
    action: Option<TaskAction>,
) -> CommandResult {
    let (spec, source) = load(args)?;
    let principal = principal(&spec, caller)?;
    let store = open_store(args, state)?;
    let gate = open_gate(&spec, &source, &Catalog::new(), Some(store))?;
    match action.unwrap_or(TaskAction::List {
        of: None,
        status: None,
    }) {
        TaskAction::List { of, status } => {
            let filter = TaskFilter {
                session: of,
                status,
            };
            list(
                args,
                &gate.tasks(&filter, &principal).map_err(|e| e.to_string())?,
            )
        }
        TaskAction::Get { id, wait } => {
            let task = match wait {
                None => gate.task(&id, &principal),
                Some(wait) => runtime()?.block_on(gate.await_task(&id, wait, &principal)),
            }
            .map_err(|e| e.to_string())?;
            show(args, &task);
            Ok(ExitCode::SUCCESS)
        }
        TaskAction::Cancel { id } => {
            let task = gate
                .cancel_task(&id, &principal)
                .map_err(|e| e.to_string())?;
            if args.json {
                print_json(&task);
            } else if task.status.is_finished() {
                sayln!("{id} had already ended: {}", task.status);
            } else {
                sayln!("asked {id} to stop; `toolgate tasks get {id}` shows when it has");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// `toolgate tasks list`.
fn list(args: &SpecArgs, tasks: &[TaskRecord]) -> CommandResult {
    if args.json {
        print_json(&tasks);
        return Ok(ExitCode::SUCCESS);
    }
    if tasks.is_empty() {
        sayln!("no tasks (finished ones are kept for their TTL, an hour by default)");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 7]> = tasks
        .iter()
        .map(|t| {
            [
                t.id.clone(),
                t.status.to_string(),
                t.tool.clone(),
                format!("session {}", t.session),
                format!("principal {}", t.principal),
                t.created_at.clone(),
                t.updated_at.clone(),
            ]
        })
        .collect();
    say_table(&rows);
    if tasks.iter().any(|t| t.status == TaskStatus::Interrupted) {
        sayln!(
            "Interrupted tasks stopped with their process and are never re-run; `toolgate audit pending` lists the calls among them that may have changed something."
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate tasks get ID`.
fn show(args: &SpecArgs, task: &TaskRecord) {
    if args.json {
        print_json(task);
        return;
    }
    sayln!(
        "{}  {}  {}  session {}  principal {}  run {}",
        task.id,
        task.status,
        task.tool,
        task.session,
        task.principal,
        task.run_id
    );
    sayln!(
        "started {}, last change {}",
        task.created_at,
        task.updated_at
    );
    match &task.outcome {
        Some(Outcome::Ok { value, .. }) => show_json(value),
        Some(other) => sayln!(
            "{}: {}",
            other.status(),
            first_line(&other.message_for_model(), 400)
        ),
        None if task.status == TaskStatus::Interrupted => sayln!(
            "its process stopped before it ended; it is never re-run (`toolgate audit pending` lists it unless it only read)"
        ),
        None => sayln!(
            "still running; `toolgate tasks get {} --wait 30s` waits for it",
            task.id
        ),
    }
}
