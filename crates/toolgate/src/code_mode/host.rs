//! The gate's side of a program run: start a worker under OS limits, answer each
//! call it sends with a [`Gate::call`], and turn how it ended — a value, an
//! exception, a limit, or the worker's death — into a [`CodeRun`].

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use toolgate_core::{
    AuditEntry, Principal, RecordKind, SanitizeOptions, clip_text, content_hash, sanitize_output,
};

use super::ask::{AskApproval, NeverAsk};
use super::limits::CodeLimits;
use super::names::PythonNames;
use super::protocol::{
    Finished, FromWorker, InterpreterLimits, ToWorker, read_frame_async, write_frame_async,
};
use super::run_code::RUN_CODE;
use crate::{Gate, Outcome, ToolCall};

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

/// How a program run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeRun {
    /// `ok`, or `error` with [`CodeRun::error`] saying why.
    pub status: &'static str,
    /// The return value or last expression, when it is JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Python's `repr` of a result that is not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repr: Option<String>,
    /// What the program printed (at most `max_output_bytes`).
    pub printed: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<CodeError>,
    /// Tool calls the program made.
    pub calls: usize,
}

/// Why a program did not finish with a value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeError {
    /// `syntax` (nothing ran), `exception` (raised and not caught), `limit`, or
    /// `worker` (the worker could not run or broke its protocol).
    pub kind: &'static str,
    /// For a limit: `wall_clock`, `interpreter_time`, `max_calls`,
    /// `max_output_bytes`, `max_memory_bytes`, `max_recursion_depth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'static str>,
    /// The Python exception type, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    /// What happened and what to do.
    pub message: String,
    /// The traceback as CPython prints it (or the syntax error's location).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub traceback: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl CodeRun {
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// What to tell the model: the result and what was printed, or the error and
    /// traceback; sanitized and fenced as untrusted output, and capped.
    pub fn text_for_model(&self, max_chars: usize) -> String {
        let mut text = String::new();
        match &self.error {
            None => {
                text.push_str("result: ");
                match (&self.value, &self.repr) {
                    (Some(value), _) => text.push_str(&value.to_string()),
                    (None, Some(repr)) => text.push_str(repr),
                    (None, None) => text.push_str("None"),
                }
            }
            Some(error) => {
                text.push_str(&error.message);
                if !error.traceback.is_empty() {
                    text.push('\n');
                    text.push_str(&error.traceback);
                }
            }
        }
        if !self.printed.is_empty() {
            text.push_str("\nprinted:\n");
            text.push_str(&self.printed);
        }
        sanitize_output(
            &text,
            "run_code",
            &SanitizeOptions::for_output().with_max_chars(max_chars),
        )
        .text
    }
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
        let mut entry = AuditEntry {
            time: gate.now(),
            kind: RecordKind::Intent,
            run_id: run_id.clone(),
            call_id: run_id.clone(),
            session: session.to_owned(),
            principal: principal.id.clone(),
            tool: RUN_CODE.to_owned(),
            effect: None,
            arguments: json!({
                "code": code,
                "sha256": content_hash(&Value::String(code.to_owned())),
            }),
            decision: None,
            reason: None,
            outcome: None,
            message: None,
            duration_ms: None,
            attempts: None,
        };
        let mut run = CodeRun {
            status: "ok",
            value: None,
            repr: None,
            printed: String::new(),
            error: None,
            calls: 0,
        };
        if code.len() > gate.max_argument_bytes() {
            run.fail(worker_error(format!(
                "the program is {} bytes, more than the {} bytes a call may carry; nothing ran. Write a shorter program",
                code.len(),
                gate.max_argument_bytes()
            )));
            return run;
        }
        if let Err(e) = gate.store().append(entry.clone()) {
            run.fail(worker_error(format!(
                "the audit log cannot be written ({e}), so the program did not run; tell the operator"
            )));
            return run;
        }
        self.run_program(gate, session, principal, code, &run_id, ask, &mut run)
            .await;
        entry.kind = RecordKind::Completion;
        entry.time = gate.now();
        entry.arguments = Value::Null;
        entry.outcome = Some(match &run.error {
            None => "ok".to_owned(),
            Some(error) => error.limit.map_or(error.kind, |_| "limit").to_owned(),
        });
        entry.message = run
            .error
            .as_ref()
            .map(|e| clip_text(&e.message, 4096).into_owned());
        entry.duration_ms = Some(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
        entry.attempts = Some(u32::try_from(run.calls).unwrap_or(u32::MAX));
        if let Err(e) = gate.store().append(entry) {
            tracing::warn!(run_id, "the end of a program could not be recorded: {e}");
        }
        run
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_program(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        code: &str,
        run_id: &str,
        ask: &dyn AskApproval,
        run: &mut CodeRun,
    ) {
        let names = Self::names(gate, principal);
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
        let mut clock = WallClock::new(self.limits.wall_clock);
        let driven = self
            .drive(
                &mut child, gate, session, principal, code, &names, run_id, ask, &mut clock, run,
            )
            .await;
        let finished = match driven {
            Ok(finished) => finished,
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
                run.fail(self.limit(
                    "wall_clock",
                    format!(
                        "the program ran longer than its wall-clock limit of {} and was stopped",
                        humantime::format_duration(self.limits.wall_clock)
                    ),
                ));
                return;
            }
        };
        let _ = child.wait().await;
        run.printed = finished.printed;
        if let Some(error) = finished.error {
            let (kind, limit_name) = match error.kind.as_str() {
                "syntax" => ("syntax", None),
                "interpreter_time" => ("limit", Some("interpreter_time")),
                "memory" => ("limit", Some("max_memory_bytes")),
                "recursion" => ("exception", Some("max_recursion_depth")),
                _ => ("exception", None),
            };
            if run.calls > self.limits.max_calls {
                // The call past `max_calls` was aborted: the limit is the cause.
                let message = format!(
                    "the program made more than the {} tool calls it may make",
                    self.limits.max_calls
                );
                run.fail(self.limit("max_calls", message));
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
            run.fail(self.limit(
                "max_output_bytes",
                format!(
                    "the program printed more than the {} bytes it may print",
                    self.limits.max_output_bytes
                ),
            ));
        }
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
        session: &str,
        principal: &Principal,
        code: &str,
        names: &PythonNames,
        run_id: &str,
        ask: &dyn AskApproval,
        clock: &mut WallClock,
        run: &mut CodeRun,
    ) -> Result<Finished, Stopped> {
        let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Stopped::Broken(std::io::Error::other(
                "the worker has no pipes",
            )));
        };
        let start = ToWorker::Start {
            code: code.to_owned(),
            functions: names.python_names().map(str::to_owned).collect(),
            limits: InterpreterLimits {
                interpreter_time_ms: u64::try_from(self.limits.interpreter_time.as_millis())
                    .unwrap_or(u64::MAX),
                max_recursion_depth: self.limits.max_recursion_depth,
                max_output_bytes: self.limits.max_output_bytes,
                max_memory_bytes: self.limits.max_memory_bytes,
            },
        };
        clock
            .within(write_frame_async(&mut stdin, &start))
            .await??;
        loop {
            match clock
                .within(read_frame_async::<FromWorker>(&mut stdout))
                .await??
            {
                FromWorker::Done(finished) => return Ok(finished),
                FromWorker::Call {
                    function,
                    arguments,
                } => {
                    run.calls += 1;
                    let reply = if run.calls > self.limits.max_calls {
                        ToWorker::Abort {
                            exception: "RuntimeError".into(),
                            message: format!(
                                "the program made more than the {} tool calls it may make{}",
                                self.limits.max_calls,
                                raise_hint("max_calls", &self.limits)
                            ),
                        }
                    } else {
                        match names.tool(&function) {
                            Some(tool) => {
                                let call = ToolCall::new(
                                    format!("{run_id}-{}", run.calls),
                                    tool,
                                    arguments,
                                );
                                reply_for(
                                    self.call_asking(gate, session, principal, call, ask, clock)
                                        .await?,
                                )
                            }
                            None => ToWorker::Raise {
                                exception: "NameError".into(),
                                message: format!("name '{function}' is not defined"),
                            },
                        }
                    };
                    clock
                        .within(write_frame_async(&mut stdin, &reply))
                        .await??;
                }
            }
        }
    }

    /// One call through the gate; when it needs approval, `ask` is given the
    /// chance to have it answered (not counted on `clock`), and an answered call
    /// is submitted once more.
    async fn call_asking(
        &self,
        gate: &Gate,
        session: &str,
        principal: &Principal,
        call: ToolCall,
        ask: &dyn AskApproval,
        clock: &mut WallClock,
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
        clock.within(gate.call(session, call, principal)).await
    }

    /// Why a worker that stopped talking died.
    fn died(&self, status: Option<ExitStatus>, stderr: &str, elapsed: Duration) -> CodeError {
        let signal = status.and_then(|s| s.signal());
        if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
            return self.limit(
                "max_memory_bytes",
                format!(
                    "the program needed more memory than its limit of {} MiB and was stopped",
                    self.limits.max_memory_bytes >> 20
                ),
            );
        }
        if stderr.contains("overflowed its stack") {
            return self.limit(
                "max_recursion_depth",
                "the program nested too deeply for the interpreter's stack and was stopped; \
                 flatten deeply nested expressions or recursion"
                    .to_owned(),
            );
        }
        if signal == Some(libc::SIGXCPU)
            || (signal == Some(libc::SIGKILL) && elapsed >= self.limits.interpreter_time)
        {
            return self.limit(
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

/// Why driving a worker stopped before the program ended.
enum Stopped {
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
/// person.
struct WallClock {
    deadline: tokio::time::Instant,
}

impl WallClock {
    fn new(limit: Duration) -> Self {
        WallClock {
            deadline: tokio::time::Instant::now() + limit,
        }
    }

    fn extend(&mut self, waited: Duration) {
        self.deadline += waited;
    }

    async fn within<T>(&self, work: impl std::future::Future<Output = T>) -> Result<T, Stopped> {
        tokio::time::timeout_at(self.deadline, work)
            .await
            .map_err(|_| Stopped::WallClock)
    }
}

impl CodeRun {
    fn fail(&mut self, error: CodeError) {
        self.status = "error";
        self.value = None;
        self.repr = None;
        self.error = Some(error);
    }
}

/// What a gate outcome becomes at the program's call site. The match names every
/// outcome: a new one must be given its exception here (a background tool's
/// `Started { task_id }` is a `RuntimeError` naming the task: its result never
/// reaches the program).
fn reply_for(outcome: Outcome) -> ToWorker {
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
        Outcome::Started { task_id } => ToWorker::Raise {
            exception: "RuntimeError".into(),
            message: format!(
                "this tool runs in the background as task {task_id}; its result does not reach a                  program: end the program and read it with `toolgate tasks get {task_id}`"
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

/// Where a limit is set and what it is now.
fn raise_hint(limit: &str, limits: &CodeLimits) -> String {
    let now = match limit {
        "wall_clock" => humantime::format_duration(limits.wall_clock).to_string(),
        "interpreter_time" => humantime::format_duration(limits.interpreter_time).to_string(),
        "max_calls" => limits.max_calls.to_string(),
        "max_output_bytes" => limits.max_output_bytes.to_string(),
        "max_memory_bytes" => limits.max_memory_bytes.to_string(),
        "max_recursion_depth" => limits.max_recursion_depth.to_string(),
        _ => String::new(),
    };
    format!(
        " (limit `code_mode.{limit}` is {now}; the operator can raise it in the spec file's `code_mode:` section)"
    )
}

impl CodeMode {
    /// A limit's error: what happened, the limit's setting and how to raise it.
    fn limit(&self, name: &'static str, message: String) -> CodeError {
        CodeError {
            kind: "limit",
            limit: Some(name),
            exception: None,
            message: format!("{message}{}", raise_hint(name, &self.limits)),
            traceback: String::new(),
            line: None,
            column: None,
        }
    }
}

fn worker_error(message: String) -> CodeError {
    CodeError {
        kind: "worker",
        limit: None,
        exception: None,
        message,
        traceback: String::new(),
        line: None,
        column: None,
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
