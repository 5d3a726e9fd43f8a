//! The worker process: the command that starts it, the OS limits it runs under,
//! the one kept started ahead of need, and what its death means.
//!
//! A worker runs one program (or one stretch of a paused one) and exits, so no
//! program ever shares a process, an address space or a CPU-time budget with
//! another. Starting a process costs milliseconds; a [`Workers`] that is kept
//! warm starts the next worker while the current one runs, so a run or a resume
//! finds one waiting on its stdin.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

use super::limits::CodeLimits;
use super::protocol::{FromWorker, ToWorker, read_frame_async, write_frame_async};
use super::run_result::{CodeError, limit_error, worker_error};
use super::spin::SPIN_ENV;

/// The argument that makes a binary embedding toolgate act as a code-mode worker
/// (it calls [`super::worker_main`]); the `toolgate` binary handles it.
pub const WORKER_ARG: &str = "__code-worker";

/// How much of a dying worker's stderr is kept to tell why it died.
const STDERR_CAP: usize = 8 << 10;

/// The command that starts a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The worker executable (`toolgate_code_worker`, or the test's stand-in).
    pub program: PathBuf,
    /// Its arguments, passed as they are.
    pub args: Vec<OsString>,
    /// The worker's environment, which is otherwise cleared.
    pub env: Vec<(OsString, OsString)>,
}

impl WorkerCommand {
    /// This executable, with [`WORKER_ARG`]: right for the `toolgate` binary and
    /// for any binary whose `main` hands that argument to [`super::worker_main`].
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(WorkerCommand {
            program: std::env::current_exe()?,
            args: vec![WORKER_ARG.into()],
            env: Vec::new(),
        })
    }

    /// A binary that is only a worker (its `main` calls [`super::worker_main`]).
    pub fn program(program: impl Into<PathBuf>) -> Self {
        WorkerCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Also starts the worker with `name` set to `value`.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }
}

/// How long a worker started ahead has to answer a ping (it may still be
/// starting on a busy machine) before a new one is started instead.
const PING_WAIT: Duration = Duration::from_secs(2);

/// Starts workers with a [`WorkerCommand`] under a run's OS limits; when warm,
/// keeps one more started and waiting.
#[derive(Debug, Clone)]
pub(super) struct Workers {
    command: WorkerCommand,
    /// The worker started ahead of need, when warm.
    standby: Option<Arc<Mutex<Option<Child>>>>,
}

impl Workers {
    pub(super) fn new(command: WorkerCommand) -> Self {
        Workers {
            command,
            standby: None,
        }
    }

    /// Keeps one worker started ahead of need from now on.
    pub(super) fn warm(mut self) -> Self {
        self.standby = Some(Arc::default());
        self
    }

    pub(super) fn command(&self) -> &WorkerCommand {
        &self.command
    }

    /// A worker waiting for its first frame, started under `limits`: the one
    /// started ahead if it still answers, else a new one. When warm, the next
    /// one is started in the background.
    pub(super) async fn start(&self, limits: &CodeLimits) -> std::io::Result<Child> {
        let Some(standby) = &self.standby else {
            return self.spawn(limits);
        };
        let ready = standby
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let next = self.clone();
        let ahead = *limits;
        // Starting a process and waiting for its exec takes a while: off the
        // runtime's threads.
        tokio::task::spawn_blocking(move || {
            if let (Ok(child), Some(standby)) = (next.spawn(&ahead), &next.standby) {
                *standby.lock().unwrap_or_else(PoisonError::into_inner) = Some(child);
            }
        });
        if let Some(mut child) = ready
            && answers(&mut child).await
        {
            return Ok(child);
        }
        self.spawn(limits)
    }

    fn spawn(&self, limits: &CodeLimits) -> std::io::Result<Child> {
        let mut command = Command::new(&self.command.program);
        command
            .args(&self.command.args)
            .env_clear()
            .envs(self.command.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // No `pre_exec`: the worker sets its own limits from this variable before
        // it reads anything, so std can `posix_spawn` it instead of forking the
        // gateway, whose page tables a fork copies (milliseconds for a large one).
        command.env(LIMITS_ENV, OsLimits::of(limits).to_string());
        if let Some(spin) = std::env::var_os(SPIN_ENV) {
            command.env(SPIN_ENV, spin);
        }
        command.spawn()
    }
}

/// Whether a worker started ahead still answers: one that died (or was killed)
/// while it waited is not given a program.
async fn answers(child: &mut Child) -> bool {
    let (Some(stdin), Some(stdout)) = (child.stdin.as_mut(), child.stdout.as_mut()) else {
        return false;
    };
    if write_frame_async(stdin, &ToWorker::Ping).await.is_err() {
        return false;
    }
    let pong = tokio::time::timeout(PING_WAIT, read_frame_async::<FromWorker>(stdout)).await;
    matches!(pong, Ok(Ok(FromWorker::Pong)))
}

/// Why a worker that stopped talking died.
pub(super) fn why_died(
    limits: &CodeLimits,
    status: Option<ExitStatus>,
    stderr: &str,
    elapsed: Duration,
) -> CodeError {
    let signal = status.and_then(|s| s.signal());
    if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
        return limit_error(
            limits,
            "max_memory_bytes",
            format!(
                "the program needed more memory than its limit of {} MiB and was stopped",
                limits.max_memory_bytes >> 20
            ),
        );
    }
    if stderr.contains("overflowed its stack") {
        return limit_error(
            limits,
            "max_recursion_depth",
            "the program nested too deeply for the interpreter's stack and was stopped; \
             flatten deeply nested expressions or recursion"
                .to_owned(),
        );
    }
    if signal == Some(libc::SIGXCPU)
        || (signal == Some(libc::SIGKILL) && elapsed >= limits.interpreter_time)
    {
        return limit_error(
            limits,
            "interpreter_time",
            format!(
                "the program used more CPU time than its interpreter-time limit of {} allows and was stopped",
                humantime::format_duration(limits.interpreter_time)
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

/// The variable that carries a worker's OS limits, as `MEMORY_BYTES CPU_SECONDS`.
pub(super) const LIMITS_ENV: &str = "TOOLGATE_CODE_WORKER_LIMITS";

/// The OS limits a worker puts on itself before it reads a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OsLimits {
    /// Address space, in bytes.
    pub memory: u64,
    /// CPU seconds: the interpreter's own limit stops a busy program first; this
    /// backstop also catches time spent where the interpreter does not look (a
    /// parser on hostile input).
    pub cpu: u64,
}

impl OsLimits {
    pub(super) fn of(limits: &CodeLimits) -> Self {
        OsLimits {
            memory: limits.max_memory_bytes,
            cpu: limits.interpreter_time.as_secs() + 2,
        }
    }

    /// The limits in [`LIMITS_ENV`]; `None` when it is missing or malformed.
    pub(super) fn from_env() -> Option<Self> {
        let value = std::env::var(LIMITS_ENV).ok()?;
        let (memory, cpu) = value.split_once(' ')?;
        Some(OsLimits {
            memory: memory.parse().ok()?,
            cpu: cpu.parse().ok()?,
        })
    }

    /// Puts the limits on this process: address space, CPU time, no core file.
    pub(super) fn apply(self) -> std::io::Result<()> {
        set_limit(libc::RLIMIT_AS, self.memory, self.memory)?;
        set_limit(libc::RLIMIT_CPU, self.cpu, self.cpu + 1)?;
        set_limit(libc::RLIMIT_CORE, 0, 0)
    }
}

impl std::fmt::Display for OsLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.memory, self.cpu)
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

pub(super) async fn read_capped(mut stream: impl AsyncRead + Unpin) -> String {
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
