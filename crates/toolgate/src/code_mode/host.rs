//! The gate's side of a program run: start a worker under OS limits, answer each
//! call it sends with a [`Gate::call`], and turn how it ended — a value, an
//! exception, a limit, or the worker's death — into a [`CodeRun`].
//!
//! What it leans on lives in the sibling files: the calls themselves
//! ([`super::calls`]), limits, replies, resuming and the wall clock.

use std::time::{Duration, Instant, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use serde_json::json;
use tokio::process::Child;
use toolgate_core::{Principal, content_hash};

use super::ask::{AskApproval, NeverAsk};
use super::audit::{begin_audit, end_audit, epoch_ms, gate_time, millis};
use super::limits::CodeLimits;
use super::names::PythonNames;
use super::process::{WorkerCommand, Workers, read_capped, why_died};
use super::protocol::{
    Finished, FromWorker, InterpreterLimits, Parameters, ToWorker, read_frame_async,
    write_frame_async,
};
use super::replies::reply_for;
use super::run_result::{CodeError, CodeRun, limit_error, raise_hint, worker_error};
use super::slots::{QUEUE_WAIT, WorkerSlots};
use super::spin::Watched;
use super::wall_clock::{Stopped, WallClock};
use crate::{Gate, Outcome, ToolCall, store::PausedRun};

/// Runs programs whose tool calls take the gate.
#[derive(Debug, Clone)]
pub struct CodeMode {
    workers: Workers,
    pub(super) limits: CodeLimits,
    slots: WorkerSlots,
}

impl CodeMode {
    /// Workers started by `worker`, under the default limits.
    pub fn new(worker: WorkerCommand) -> Self {
        let limits = CodeLimits::default();
        CodeMode {
            workers: Workers::new(worker),
            slots: WorkerSlots::new(limits.max_workers, limits.max_workers_per_principal),
            limits,
        }
    }

    /// Keeps one worker started ahead of need, so that a run or a resume does
    /// not wait for a process to start (a server wants this; a one-off run
    /// does not).
    pub fn warm(mut self) -> Self {
        self.workers = self.workers.warm();
        self
    }

    /// Runs programs under `limits`; the worker caps (`max_workers`,
    /// `max_workers_per_principal`) start afresh with them.
    pub fn limits(mut self, limits: CodeLimits) -> Self {
        self.slots = WorkerSlots::new(limits.max_workers, limits.max_workers_per_principal);
        self.limits = limits;
        self
    }

    /// The limits programs run under, as [`limits`](Self::limits) last set them.
    pub fn current_limits(&self) -> &CodeLimits {
        &self.limits
    }

    /// The Python names of the tools `principal` may call through `gate`.
    pub fn names(gate: &Gate, principal: &Principal) -> PythonNames {
        PythonNames::new(
            gate.catalog()
                .iter()
                .map(|tool| tool.name())
                .filter(|name| gate.knows(name, principal)),
        )
    }

    /// Runs `code` in a fresh worker; each tool call in it is a [`Gate::call`] in
    /// `session` for `principal`. Never fails: whatever goes wrong is in the
    /// [`CodeRun`]'s error.
    ///
    /// A call that needs a person's approval pauses the program: its state is
    /// written to the gate's store, sealed ([`crate::store::CodeRunStore`]), and the run
    /// ends `pending_approval` with the approval id and the run id that
    /// [`CodeMode::resume`] takes.
    ///
    /// The audit log records the run as `run_code`: an intent with the code and
    /// its SHA-256 before anything runs, a completion with how it ended. Each
    /// inner call's id is the program's run id, a dash and its number.
    pub async fn run(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        code: &str,
    ) -> CodeRun {
        self.run_asking(gate, session, principal, code, &NeverAsk)
            .await
    }

    /// [`CodeMode::run`] that hands each approval a call in the program needs to
    /// `ask` first (see [`AskApproval`]): when `ask` records an answer, the same
    /// call is submitted again and the program goes on at its call site; when it
    /// does not, the program pauses. Time spent in `ask` does not count against
    /// the wall-clock limit.
    pub async fn run_asking(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        code: &str,
        ask: &dyn AskApproval,
    ) -> CodeRun {
        let started = Instant::now();
        let run_id = format!("code-{}", uuid::Uuid::new_v4().simple());
        let mut run = CodeRun::new();
        if code.len() > gate.max_argument_bytes() {
            run.fail(worker_error(format!(
                "the program is {} bytes, more than the {} bytes a call may carry; nothing ran. Write a shorter program",
                code.len(),
                gate.max_argument_bytes()
            )));
            return run;
        }
        let code_sha256 = content_hash(&Value::String(code.to_owned()));
        let intent = match begin_audit(
            gate,
            &run_id,
            &run_id,
            session,
            principal,
            json!({"code": code, "sha256": code_sha256}),
        ) {
            Ok(intent) => intent,
            Err(e) => {
                run.fail(worker_error(format!(
                    "the audit log cannot be written ({}), so the program did not run; tell the operator",
                    e.reported()
                )));
                return run;
            }
        };
        let names = Self::names(gate, principal);
        let mut segment = Segment {
            run_id,
            session: session.to_owned(),
            code_sha256,
            calls: 0,
            suspensions: 0,
            elapsed_before: Duration::ZERO,
            limit_hit: None,
        };
        let now = gate
            .clock_time()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let first = ToWorker::Start {
            code: code.to_owned(),
            functions: names.python_names().map(str::to_owned).collect(),
            parameters: Self::parameters(gate, &names),
            now_micros: i64::try_from(now.as_micros()).unwrap_or(i64::MAX),
            limits: self.interpreter_limits(),
        };
        let clock = WallClock::new(self.limits.wall_clock);
        self.run_segment(
            gate,
            principal,
            &names,
            first,
            &mut segment,
            &clock,
            ask,
            &mut run,
        )
        .await;
        end_audit(gate, intent, started, &run);
        run
    }

    /// Each tool function's parameter names in its stub's order.
    pub(super) fn parameters(gate: &Gate, names: &PythonNames) -> Parameters {
        names
            .python_names()
            .filter_map(|python| {
                let tool = gate.catalog().get(names.tool(python)?).ok()?;
                let order = super::stubs::parameter_names(&tool.descriptor().input_schema);
                Some((python.to_owned(), order))
            })
            .collect()
    }

    pub(super) fn interpreter_limits(&self) -> InterpreterLimits {
        InterpreterLimits {
            interpreter_time_ms: u64::try_from(self.limits.interpreter_time.as_millis())
                .unwrap_or(u64::MAX),
            max_recursion_depth: self.limits.max_recursion_depth,
            max_output_bytes: self.limits.max_output_bytes,
            max_memory_bytes: self.limits.max_memory_bytes,
        }
    }

    /// Runs one stretch of a program in a fresh worker — from its start, or from
    /// a snapshot (`first` is `Start` or `Resume`) — until it ends or pauses
    /// again, and records how in `run`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_segment(
        &self,
        gate: &Gate,
        principal: &Principal,
        names: &PythonNames,
        first: ToWorker,
        segment: &mut Segment,
        clock: &WallClock,
        ask: &dyn AskApproval,
        run: &mut CodeRun,
    ) {
        // A worker may take `max_memory_bytes`: no more run at once than the
        // caps allow, and the slot is held while this one runs.
        let _slot = match self
            .slots
            .take(&principal.id, QUEUE_WAIT.min(self.limits.wall_clock))
            .await
        {
            Ok(slot) => slot,
            Err((limit, why)) => {
                run.fail(limit_error(&self.limits, limit, why));
                return;
            }
        };
        let mut child = match self.workers.start(&self.limits).await {
            Ok(child) => child,
            Err(e) => {
                run.fail(worker_error(format!(
                    "the code-mode worker `{}` could not start ({e}); tell the operator",
                    self.workers.command().program.display()
                )));
                return;
            }
        };
        let stderr = child.stderr.take().map(|s| tokio::spawn(read_capped(s)));
        let started = Instant::now();
        let driven = self
            .drive(
                &mut child, gate, principal, names, first, segment, clock, ask,
            )
            .await;
        run.calls = segment.calls;
        let driven = match driven {
            Ok(driven) => driven,
            Err(Stopped::Broken(_broken)) => {
                let status = child.wait().await.ok();
                let stderr = match stderr {
                    Some(task) => task.await.unwrap_or_default(),
                    None => String::new(),
                };
                run.fail(why_died(&self.limits, status, &stderr, started.elapsed()));
                return;
            }
            Err(Stopped::WallClock) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                run.fail(self.wall_clock_error());
                return;
            }
        };
        let _ = child.wait().await;
        match driven {
            Driven::Finished(finished) => self.finished(finished, segment, run),
            Driven::Suspended {
                snapshot,
                printed,
                output_exceeded,
                pending,
            } => {
                if output_exceeded {
                    run.fail(self.output_error());
                    return;
                }
                let snapshot = match BASE64.decode(snapshot) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        run.fail(worker_error(format!(
                            "the code-mode worker sent a snapshot that is not base64 ({e}); tell the operator"
                        )));
                        return;
                    }
                };
                let since_ms = epoch_ms(gate_time(gate));
                let paused = PausedRun {
                    run_id: segment.run_id.clone(),
                    session: segment.session.clone(),
                    principal: principal.id.clone(),
                    code_sha256: segment.code_sha256.clone(),
                    tool: pending.tool,
                    call_id: pending.call_id,
                    arguments: pending.arguments,
                    approval_id: pending.approval_id,
                    reason: pending.reason,
                    calls: segment.calls as u64,
                    suspensions: segment.suspensions as u64,
                    elapsed_ms: millis(segment.elapsed_before + clock.used()),
                    printed,
                    since_ms,
                    expires_ms: since_ms.saturating_add(millis(self.limits.approval_wait)),
                    snapshot,
                };
                if let Err(e) = gate.store().pause_run(&paused) {
                    run.fail(worker_error(format!(
                        "the program paused for approval {}, but its state could not be saved ({}); tell the operator",
                        paused.approval_id,
                        e.reported()
                    )));
                    return;
                }
                run.pending(&paused);
            }
        }
    }

    /// Turns how the worker says the program ended into `run`.
    fn finished(&self, finished: Finished, segment: &Segment, run: &mut CodeRun) {
        run.printed = finished.printed;
        if let Some(error) = finished.error {
            let (kind, limit_name) = match error.kind.as_str() {
                "syntax" => ("syntax", None),
                "interpreter_time" => ("limit", Some("interpreter_time")),
                "memory" => ("limit", Some("max_memory_bytes")),
                "recursion" => ("exception", Some("max_recursion_depth")),
                "resume" => ("resume", None),
                _ => ("exception", None),
            };
            if let Some(limit) = segment.limit_hit {
                // The call past the limit was aborted: the limit is the cause.
                let message = match limit {
                    "max_suspensions" => format!(
                        "the program needed a person's approval more than the {} times it may pause",
                        self.limits.max_suspensions
                    ),
                    _ => format!(
                        "the program made more than the {} tool calls it may make",
                        self.limits.max_calls
                    ),
                };
                run.fail(limit_error(&self.limits, limit, message));
                return;
            }
            let mut message = match kind {
                "syntax" => match (error.line, error.column) {
                    (Some(line), Some(column)) => format!(
                        "the program does not parse: {} at line {line}, column {column}; nothing ran",
                        error.message
                    ),
                    _ => format!("the program does not parse: {}; nothing ran", error.message),
                },
                "limit" => format!("the program was stopped: {}", error.message),
                "resume" => error.message,
                _ => format!("the program raised {}: {}", error.exception, error.message),
            };
            if let Some(name) = limit_name {
                message.push_str(&raise_hint(name, &self.limits));
            }
            run.fail(CodeError {
                kind,
                limit: limit_name,
                exception: Some(error.exception),
                message,
                traceback: error.traceback,
                line: error.line,
                column: error.column,
            });
        } else {
            run.value = finished.value;
            run.repr = finished.repr;
        }
        if finished.output_exceeded {
            run.fail(self.output_error());
        }
    }

    pub(super) fn wall_clock_error(&self) -> CodeError {
        limit_error(
            &self.limits,
            "wall_clock",
            format!(
                "the program ran longer than its wall-clock limit of {} and was stopped",
                humantime::format_duration(self.limits.wall_clock)
            ),
        )
    }

    fn output_error(&self) -> CodeError {
        limit_error(
            &self.limits,
            "max_output_bytes",
            format!(
                "the program printed more than the {} bytes it may print",
                self.limits.max_output_bytes
            ),
        )
    }

    #[allow(clippy::too_many_arguments)]
    async fn drive(
        &self,
        child: &mut Child,
        gate: &Gate,
        principal: &Principal,
        names: &PythonNames,
        first: ToWorker,
        segment: &mut Segment,
        clock: &WallClock,
        ask: &dyn AskApproval,
    ) -> Result<Driven, Stopped> {
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Stopped::Broken(std::io::Error::other(
                "the worker has no pipes",
            )));
        };
        // A frame's header and body arrive together: one read takes both. Each
        // wait for the worker's next message spins briefly before it sleeps.
        let mut stdout = tokio::io::BufReader::with_capacity(64 << 10, Watched::new(stdout));
        let mut deadline = clock.timer();
        deadline
            .within(write_frame_async(&mut stdin, &first))
            .await??;
        let mut pending: Option<Pending> = None;
        loop {
            let (function, arguments) = match deadline
                .within(read_frame_async::<FromWorker>(&mut stdout))
                .await??
            {
                FromWorker::Done(finished) => return Ok(Driven::Finished(finished)),
                FromWorker::Suspended {
                    snapshot,
                    printed,
                    output_exceeded,
                } => {
                    let Some(pending) = pending.take() else {
                        return Err(Stopped::Broken(std::io::Error::other(
                            "the worker paused unasked",
                        )));
                    };
                    return Ok(Driven::Suspended {
                        snapshot,
                        printed,
                        output_exceeded,
                        pending,
                    });
                }
                FromWorker::Call {
                    function,
                    arguments,
                } => (function, arguments),
                FromWorker::Pong => {
                    return Err(Stopped::Broken(std::io::Error::other(
                        "the worker answered a ping nobody sent",
                    )));
                }
                FromWorker::Calls { calls } => {
                    let results = self
                        .call_batch(
                            gate,
                            principal,
                            names,
                            calls,
                            segment,
                            clock,
                            ask,
                            &mut pending,
                        )
                        .await?;
                    deadline
                        .within(write_frame_async(
                            &mut stdin,
                            &ToWorker::Results { results },
                        ))
                        .await??;
                    continue;
                }
            };
            let reply = if let Some(abort) = self.count_call(segment) {
                abort
            } else if let Some(tool) = names.tool(&function) {
                let call = ToolCall::new(
                    format!("{}-{}", segment.run_id, segment.calls),
                    tool,
                    arguments,
                );
                let outcome = self
                    .call_asking(gate, &segment.session, principal, &call, ask, clock)
                    .await?;
                match outcome {
                    Outcome::PendingApproval {
                        approval_id,
                        reason,
                    } => self.pause_at(segment, &mut pending, call, approval_id, reason),
                    other => reply_for(other),
                }
            } else {
                ToWorker::Raise {
                    exception: "NameError".into(),
                    message: format!("name '{function}' is not defined"),
                }
            };
            deadline
                .within(write_frame_async(&mut stdin, &reply))
                .await??;
        }
    }
}

/// One stretch of a program between its start or resume and its end or pause:
/// what carries over from one stretch to the next.
pub(super) struct Segment {
    pub run_id: String,
    pub session: String,
    pub code_sha256: String,
    /// Tool calls so far, over every stretch.
    pub calls: usize,
    /// Pauses so far, over every stretch.
    pub suspensions: usize,
    /// Wall-clock time the earlier stretches ran.
    pub elapsed_before: Duration,
    /// The limit whose call was aborted, if one was.
    pub limit_hit: Option<&'static str>,
}

/// How a stretch ended, as the worker said.
enum Driven {
    Finished(Finished),
    Suspended {
        snapshot: String,
        printed: String,
        output_exceeded: bool,
        pending: Pending,
    },
}

/// The call a program paused at.
pub(super) struct Pending {
    pub tool: String,
    pub call_id: String,
    pub arguments: Value,
    pub approval_id: String,
    pub reason: String,
}
