//! The gate's side of a program run: start a worker under OS limits, answer each
//! call it sends with a [`Gate::call`], and turn how it ended — a value, an
//! exception, a limit, or the worker's death — into a [`CodeRun`].

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use toolgate_core::{AuditEntry, Principal, RecordKind, clip_text, content_hash};

use super::ask::{AskApproval, NeverAsk};
use super::limits::CodeLimits;
use super::names::PythonNames;
use super::protocol::{
    BatchCall, Finished, FromWorker, InterpreterLimits, ToWorker, read_frame_async,
    write_frame_async,
};
use super::run_code::RUN_CODE;
use super::run_result::{CodeError, CodeRun, limit_error, raise_hint, worker_error};
use crate::{Gate, Outcome, PausedRun, ToolCall};

/// The argument that makes a binary embedding toolgate act as a code-mode worker
/// (it calls [`super::worker_main`]); the `toolgate` binary handles it.
pub const WORKER_ARG: &str = "__code-worker";

/// How much of a dying worker's stderr is kept to tell why it died.
const STDERR_CAP: usize = 8 << 10;

/// The command that starts a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// This executable, with [`WORKER_ARG`]: right for the `toolgate` binary and
    /// for any binary whose `main` hands that argument to [`super::worker_main`].
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(WorkerCommand {
            program: std::env::current_exe()?,
            args: vec![WORKER_ARG.into()],
        })
    }

    /// A binary that is only a worker (its `main` calls [`super::worker_main`]).
    pub fn program(program: impl Into<PathBuf>) -> Self {
        WorkerCommand {
            program: program.into(),
            args: Vec::new(),
        }
    }
}

/// Runs programs whose tool calls take the gate.
#[derive(Debug, Clone)]
pub struct CodeMode {
    worker: WorkerCommand,
    limits: CodeLimits,
}

impl CodeMode {
    /// Workers started by `worker`, under the default limits.
    pub fn new(worker: WorkerCommand) -> Self {
        CodeMode {
            worker,
            limits: CodeLimits::default(),
        }
    }

    pub fn limits(mut self, limits: CodeLimits) -> Self {
        self.limits = limits;
        self
    }

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
    /// written to the gate's store, sealed ([`crate::CodeRunStore`]), and the run
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
                    "the audit log cannot be written ({e}), so the program did not run; tell the operator"
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
        let first = ToWorker::Start {
            code: code.to_owned(),
            functions: names.python_names().map(str::to_owned).collect(),
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
        let mut child = match self.spawn() {
            Ok(child) => child,
            Err(e) => {
                run.fail(worker_error(format!(
                    "the code-mode worker `{}` could not start ({e}); tell the operator",
                    self.worker.program.display()
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
                run.fail(self.died(status, &stderr, started.elapsed()));
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
                        "the program paused for approval {}, but its state could not be saved ({e}); tell the operator",
                        paused.approval_id
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

    fn spawn(&self) -> std::io::Result<Child> {
        let mut command = Command::new(&self.worker.program);
        command
            .args(&self.worker.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let memory = self.limits.max_memory_bytes;
        // CPU seconds: the interpreter's own limit stops a busy program first;
        // this backstop also catches time spent where the interpreter does not
        // look (a parser on hostile input).
        let cpu = self.limits.interpreter_time.as_secs() + 2;
        // SAFETY: between fork and exec only async-signal-safe calls are made:
        // setrlimit, with values computed before the fork.
        unsafe {
            command.pre_exec(move || {
                set_limit(libc::RLIMIT_AS, memory, memory)?;
                set_limit(libc::RLIMIT_CPU, cpu, cpu + 1)?;
                set_limit(libc::RLIMIT_CORE, 0, 0)?;
                Ok(())
            });
        }
        command.spawn()
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
        // A frame's header and body arrive together: one read takes both.
        let mut stdout = tokio::io::BufReader::with_capacity(64 << 10, stdout);
        clock
            .within(write_frame_async(&mut stdin, &first))
            .await??;
        let mut pending: Option<Pending> = None;
        loop {
            let (function, arguments) = match clock
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
                FromWorker::Calls { calls } => {
                    let results = self
                        .call_batch(gate, principal, names, calls, segment, clock, ask)
                        .await?;
                    clock
                        .within(write_frame_async(
                            &mut stdin,
                            &ToWorker::Results { results },
                        ))
                        .await??;
                    continue;
                }
            };
            segment.calls += 1;
            let reply = if segment.calls > self.limits.max_calls {
                segment.limit_hit = Some("max_calls");
                ToWorker::Abort {
                    exception: "RuntimeError".into(),
                    message: format!(
                        "the program made more than the {} tool calls it may make{}",
                        self.limits.max_calls,
                        raise_hint("max_calls", &self.limits)
                    ),
                }
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
                    } => {
                        if segment.suspensions >= self.limits.max_suspensions {
                            segment.limit_hit = Some("max_suspensions");
                            ToWorker::Abort {
                                exception: "RuntimeError".into(),
                                message: format!(
                                    "the program needed a person's approval more than the {} times it may pause{}",
                                    self.limits.max_suspensions,
                                    raise_hint("max_suspensions", &self.limits)
                                ),
                            }
                        } else {
                            segment.suspensions += 1;
                            pending = Some(Pending {
                                tool: call.name,
                                call_id: call.id,
                                arguments: call.arguments,
                                approval_id,
                                reason,
                            });
                            ToWorker::Suspend
                        }
                    }
                    other => reply_for(other),
                }
            } else {
                ToWorker::Raise {
                    exception: "NameError".into(),
                    message: format!("name '{function}' is not defined"),
                }
            };
            clock
                .within(write_frame_async(&mut stdin, &reply))
                .await??;
        }
    }

    /// A batch of awaited calls, run concurrently through the gate as
    /// [`Gate::call_all`] runs a model's parallel calls (at most
    /// `per_tool_concurrency` of one tool at a time). A call that needs
    /// approval is asked about like any other, but cannot pause the program: if
    /// it stays pending, it raises `PermissionError`.
    #[allow(clippy::too_many_arguments)]
    async fn call_batch(
        &self,
        gate: &Gate,
        principal: &Principal,
        names: &PythonNames,
        calls: Vec<BatchCall>,
        segment: &mut Segment,
        clock: &WallClock,
        ask: &dyn AskApproval,
    ) -> Result<Vec<(u32, ToWorker)>, Stopped> {
        let mut results = Vec::with_capacity(calls.len());
        let mut runnable = Vec::with_capacity(calls.len());
        for call in calls {
            segment.calls += 1;
            if segment.calls > self.limits.max_calls {
                segment.limit_hit = Some("max_calls");
                results.push((
                    call.id,
                    ToWorker::Abort {
                        exception: "RuntimeError".into(),
                        message: format!(
                            "the program made more than the {} tool calls it may make{}",
                            self.limits.max_calls,
                            raise_hint("max_calls", &self.limits)
                        ),
                    },
                ));
                return Ok(results);
            }
            match names.tool(&call.function) {
                Some(tool) => runnable.push((
                    call.id,
                    ToolCall::new(
                        format!("{}-{}", segment.run_id, segment.calls),
                        tool,
                        call.arguments,
                    ),
                )),
                None => results.push((
                    call.id,
                    ToWorker::Raise {
                        exception: "NameError".into(),
                        message: format!("name '{}' is not defined", call.function),
                    },
                )),
            }
        }
        let session = segment.session.as_str();
        let outcomes = futures::future::join_all(
            runnable
                .iter()
                .map(|(_, call)| self.call_asking(gate, session, principal, call, ask, clock)),
        )
        .await;
        for ((id, _), outcome) in runnable.iter().zip(outcomes) {
            let reply = match outcome? {
                Outcome::PendingApproval {
                    approval_id,
                    reason,
                } => ToWorker::Raise {
                    exception: "PermissionError".into(),
                    message: format!(
                        "this call needs a person's approval ({reason}); approval id {approval_id}. \
                         A call awaited with others cannot pause the program: call the tool without \
                         `await` (in a program that does not use `await`) to wait for the approval"
                    ),
                },
                other => reply_for(other),
            };
            results.push((*id, reply));
        }
        Ok(results)
    }

    /// One call through the gate; when it needs approval, `ask` is given the
    /// chance to have it answered (not counted on `clock`), and an answered call
    /// is submitted once more.
    pub(super) async fn call_asking(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        call: &ToolCall,
        ask: &dyn AskApproval,
        clock: &WallClock,
    ) -> Result<Outcome, Stopped> {
        let outcome = clock
            .within(gate.call(session, call.clone(), principal))
            .await?;
        let Outcome::PendingApproval {
            approval_id,
            reason,
        } = &outcome
        else {
            return Ok(outcome);
        };
        let asked = Instant::now();
        let answered = ask.ask(approval_id, reason).await;
        clock.extend(asked.elapsed());
        if !answered {
            return Ok(outcome);
        }
        clock
            .within(gate.call(session, call.clone(), principal))
            .await
    }

    /// Why a worker that stopped talking died.
    fn died(&self, status: Option<ExitStatus>, stderr: &str, elapsed: Duration) -> CodeError {
        let signal = status.and_then(|s| s.signal());
        if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
            return limit_error(
                &self.limits,
                "max_memory_bytes",
                format!(
                    "the program needed more memory than its limit of {} MiB and was stopped",
                    self.limits.max_memory_bytes >> 20
                ),
            );
        }
        if stderr.contains("overflowed its stack") {
            return limit_error(
                &self.limits,
                "max_recursion_depth",
                "the program nested too deeply for the interpreter's stack and was stopped; \
                 flatten deeply nested expressions or recursion"
                    .to_owned(),
            );
        }
        if signal == Some(libc::SIGXCPU)
            || (signal == Some(libc::SIGKILL) && elapsed >= self.limits.interpreter_time)
        {
            return limit_error(
                &self.limits,
                "interpreter_time",
                format!(
                    "the program used more CPU time than its interpreter-time limit of {} allows and was stopped",
                    humantime::format_duration(self.limits.interpreter_time)
                ),
            );
        }
        let how = match (status.and_then(|s| s.code()), signal) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            _ => "stopped".to_owned(),
        };
        let detail = stderr.lines().last().unwrap_or("").trim();
        worker_error(format!(
            "the code-mode worker {how} before the program finished{}; the gateway is unaffected. \
             If this repeats, tell the operator",
            if detail.is_empty() {
                String::new()
            } else {
                format!(" ({detail})")
            }
        ))
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
struct Pending {
    tool: String,
    call_id: String,
    arguments: Value,
    approval_id: String,
    reason: String,
}

/// Why driving a worker stopped before the program ended.
pub(super) enum Stopped {
    /// The pipe broke or a frame was not the protocol's: the worker died.
    Broken(std::io::Error),
    /// The wall-clock limit passed.
    WallClock,
}

impl From<std::io::Error> for Stopped {
    fn from(error: std::io::Error) -> Self {
        Stopped::Broken(error)
    }
}

/// The program's wall-clock deadline, pushed back by time spent waiting for a
/// person. Shared by reference across awaits, so it is `Sync`.
pub(super) struct WallClock {
    started: Instant,
    /// Time spent waiting for a person, and the deadline it pushed back.
    waits: std::sync::Mutex<(Duration, tokio::time::Instant)>,
}

impl WallClock {
    /// A clock with `budget` left to run.
    pub(super) fn new(budget: Duration) -> Self {
        WallClock {
            started: Instant::now(),
            waits: std::sync::Mutex::new((Duration::ZERO, tokio::time::Instant::now() + budget)),
        }
    }

    fn waits(&self) -> std::sync::MutexGuard<'_, (Duration, tokio::time::Instant)> {
        self.waits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn extend(&self, waited: Duration) {
        let mut waits = self.waits();
        waits.0 += waited;
        waits.1 += waited;
    }

    /// Time run on this clock, not counting waits for a person.
    pub(super) fn used(&self) -> Duration {
        let waited = self.waits().0;
        self.started.elapsed().saturating_sub(waited)
    }

    pub(super) async fn within<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, Stopped> {
        let deadline = self.waits().1;
        tokio::time::timeout_at(deadline, work)
            .await
            .map_err(|_| Stopped::WallClock)
    }
}

/// The audit intent of a program run (or of a resume), appended before anything
/// runs; its completion is appended by [`end_audit`].
pub(super) fn begin_audit(
    gate: &Gate,
    run_id: &str,
    call_id: &str,
    session: &str,
    principal: &Principal,
    arguments: Value,
) -> Result<AuditEntry, crate::StoreError> {
    let mut entry = AuditEntry {
        time: gate.now(),
        kind: RecordKind::Intent,
        run_id: run_id.to_owned(),
        call_id: call_id.to_owned(),
        session: session.to_owned(),
        principal: principal.id.clone(),
        tool: RUN_CODE.to_owned(),
        effect: None,
        arguments,
        decision: None,
        reason: None,
        outcome: None,
        message: None,
        duration_ms: None,
        attempts: None,
        auth: None,
        credential: None,
    };
    crate::Authenticated::stamp(&mut entry);
    gate.store().append(entry.clone())?;
    Ok(entry)
}

/// Records how a run (or a resume) begun by [`begin_audit`] ended.
pub(super) fn end_audit(gate: &Gate, mut entry: AuditEntry, started: Instant, run: &CodeRun) {
    entry.kind = RecordKind::Completion;
    entry.time = gate.now();
    entry.arguments = Value::Null;
    entry.outcome = Some(match &run.error {
        None => run.status.to_owned(),
        Some(error) => error.limit.map_or(error.kind, |_| "limit").to_owned(),
    });
    entry.message = match (&run.error, &run.approval_id) {
        (Some(e), _) => Some(clip_text(&e.message, 4096).into_owned()),
        (None, Some(approval)) => Some(format!("paused for approval {approval}")),
        (None, None) => None,
    };
    entry.duration_ms = Some(millis(started.elapsed()));
    entry.attempts = Some(u32::try_from(run.calls).unwrap_or(u32::MAX));
    let run_id = entry.run_id.clone();
    if let Err(e) = gate.store().append(entry) {
        tracing::warn!(run_id, "the end of a program could not be recorded: {e}");
    }
}

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The gate's clock (tests fix it), read through its timestamps.
pub(super) fn gate_time(gate: &Gate) -> std::time::SystemTime {
    humantime::parse_rfc3339(&gate.now()).unwrap_or_else(|_| std::time::SystemTime::now())
}

pub(super) fn epoch_ms(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(0, millis)
}

/// What a gate outcome becomes at the program's call site. The match names every
/// outcome: a new one must be given its exception here (a background tool's
/// `Started { task_id }` is a `RuntimeError` naming the task: its result never
/// reaches the program).
pub(super) fn reply_for(outcome: Outcome) -> ToWorker {
    match outcome {
        Outcome::Ok { value, .. } => ToWorker::Return { value },
        Outcome::Error { message, .. } => ToWorker::Raise {
            exception: error_exception(&message).into(),
            message,
        },
        Outcome::Denied { reason } => ToWorker::Raise {
            exception: "PermissionError".into(),
            message: format!("this call is not allowed: {reason}"),
        },
        Outcome::PendingApproval {
            approval_id,
            reason,
        } => ToWorker::Raise {
            exception: "PermissionError".into(),
            message: format!(
                "this call needs a human's approval ({reason}); approval id {approval_id}. \
                 A program cannot wait for it: end the program, tell the user, and run it again once approved"
            ),
        },
        limited @ Outcome::RateLimited { .. } => ToWorker::Raise {
            exception: "RuntimeError".into(),
            message: limited.message_for_model(),
        },
        Outcome::Started { task_id } => ToWorker::Raise {
            exception: "RuntimeError".into(),
            message: format!(
                "this tool runs in the background as task {task_id}; its result does not reach a program: end the program and read it with `toolgate tasks get {task_id}`"
            ),
        },
    }
}

/// The Python exception for a gate error, from the gate's own wording: invalid
/// or oversized arguments are a `ValueError`, a deadline a `TimeoutError`,
/// anything else (the tool failed, a store failed) a `RuntimeError`.
fn error_exception(message: &str) -> &'static str {
    if message.contains("are invalid; nothing ran")
        || message.contains("refused its input")
        || message.contains("bytes a call may carry")
    {
        "ValueError"
    } else if message.contains("did not finish within") {
        "TimeoutError"
    } else {
        "RuntimeError"
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct it is given and nothing else.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

async fn read_capped(mut stream: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
        if kept.len() < STDERR_CAP {
            kept.extend_from_slice(&buf[..n.min(STDERR_CAP - kept.len())]);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}
