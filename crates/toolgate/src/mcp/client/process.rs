//! A stdio server's process: started in its own process group, killed with every
//! process it started, and never outliving toolgate.
//!
//! Each mechanism covers a way toolgate can stop:
//!
//! - **Its own process group.** The server and everything it starts (an `npx`
//!   server is `npx`, then `node`, then whatever that spawns) share one group, so
//!   one `killpg` reaches them all. It also keeps a terminal's Ctrl-C, which goes to
//!   the foreground group, from killing servers behind toolgate's back: toolgate
//!   decides when they stop.
//! - **Kill on drop.** Dropping a [`ServerProcess`] kills the group synchronously
//!   (no runtime needed), so a server stops when its owner does, including on a
//!   normal exit and on panics that unwind.
//! - **A parent-death signal (Linux).** If toolgate itself is killed (`SIGKILL`, an
//!   OOM kill), no destructor runs. `PR_SET_PDEATHSIG` makes the kernel signal the
//!   direct child then, but only it: a server's own children would live on. So on
//!   Linux the direct child is a small `/bin/sh` guardian that runs the server in the
//!   background and, on that signal (`SIGHUP`, reset to its default first, as
//!   `nohup` leaves it ignored), kills the whole group. The death
//!   signal is tied to the *thread* that forked, not the process, so every server is
//!   started from one dedicated thread that lives as long as the process; starting
//!   it from a runtime worker that later exits would kill the server early.
//!
//! The group is created with [`std::os::unix::process::CommandExt::process_group`]
//! (safe, in std). The death signal needs `prctl`, which std does not wrap, so it is
//! set in a `pre_exec` hook through `libc` (already in the dependency tree through
//! tokio); `nix` would add a crate for one call.
//!
//! The server's exit is watched with `waitid(WNOWAIT)`, which sees the exit without
//! reaping: a crash is noticed even when a child of the server still holds its
//! stdout open, and the group id stays reserved until toolgate has killed the group
//! and reaped the leader, so it cannot have been reused by an unrelated group.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::io::AsyncBufReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

use super::config::{INHERITED_ENV, Scrubber, Transport};

/// Lines of a server's stderr kept for failure reports.
const STDERR_LINES: usize = 20;
/// Characters kept of one stderr line.
const STDERR_LINE_CHARS: usize = 400;

/// A started stdio server.
pub(super) struct ServerProcess {
    child: Option<Child>,
    pid: u32,
    stderr: StderrTail,
    /// Becomes true when the process has exited (not yet reaped).
    exited: tokio::sync::watch::Receiver<bool>,
}

/// The last lines a server wrote to stderr, scrubbed of secrets and sanitized (they
/// reach the model in failure reports, and the operator's terminal).
#[derive(Clone, Default)]
pub(super) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// The last few lines, joined with ` | `, or `None` if there were none.
    pub(super) fn summary(&self, lines: usize) -> Option<String> {
        let all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let skip = all.len().saturating_sub(lines);
        let text: Vec<&str> = all.iter().skip(skip).map(String::as_str).collect();
        (!text.is_empty()).then(|| text.join(" | "))
    }
}

/// The pipes of a started server.
pub(super) struct Pipes {
    pub stdout: ChildStdout,
    pub stdin: ChildStdin,
}

impl ServerProcess {
    /// Starts the program of a stdio transport. Must be called inside a tokio runtime.
    pub(super) async fn start(
        name: &str,
        transport: &Transport,
        scrubber: &Scrubber,
    ) -> io::Result<(ServerProcess, Pipes)> {
        let Transport::Stdio {
            program,
            args,
            env,
            cwd,
        } = transport
        else {
            return Err(io::Error::other("not a stdio transport"));
        };
        let path = inherited_path(env);
        let program = find_program(program, cwd.as_deref(), path.as_deref())?;
        let mut command = guarded(&program, args);
        command
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for key in INHERITED_ENV {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        for (key, value) in env {
            command.env(key, value.expose());
        }
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        isolate(&mut command);
        let mut child = spawn_on_spawner_thread(command).await?;
        let pid = child.id();
        let guard_kill = |child: &mut Child| {
            kill_group(pid);
            let _ = child.wait();
        };
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            guard_kill(&mut child);
            return Err(io::Error::other("the server's pipes were not created"));
        };
        let pipes = match (ChildStdin::from_std(stdin), ChildStdout::from_std(stdout)) {
            (Ok(stdin), Ok(stdout)) => Pipes { stdout, stdin },
            (Err(e), _) | (_, Err(e)) => {
                guard_kill(&mut child);
                return Err(e);
            }
        };
        let exited = watch_exit(pid);
        let tail = StderrTail::default();
        if let Ok(stderr) = ChildStderr::from_std(stderr) {
            tokio::spawn(read_stderr(
                name.to_owned(),
                stderr,
                tail.clone(),
                scrubber.clone(),
            ));
        }
        Ok((
            ServerProcess {
                child: Some(child),
                pid,
                stderr: tail,
                exited,
            },
            pipes,
        ))
    }

    pub(super) fn pid(&self) -> u32 {
        self.pid
    }

    pub(super) fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// Fires when the process has exited.
    pub(super) fn exited(&self) -> tokio::sync::watch::Receiver<bool> {
        self.exited.clone()
    }

    /// Kills the whole group and reaps the server; returns its exit status.
    pub(super) async fn kill(mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        kill_group(self.pid);
        tokio::task::spawn_blocking(move || child.wait().ok())
            .await
            .ok()
            .flatten()
    }

    /// Asks the server to stop the way the MCP stdio transport says (its stdin is
    /// already closed): wait, then `SIGTERM`, then kill the group.
    pub(super) async fn stop(mut self, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let pid = self.pid;
        tokio::task::spawn_blocking(move || {
            let exited = |child: &mut Child, wait: Duration| {
                let until = std::time::Instant::now() + wait;
                loop {
                    match child.try_wait() {
                        Ok(Some(status)) => return Some(status),
                        Ok(None) if std::time::Instant::now() < until => {
                            std::thread::sleep(Duration::from_millis(10))
                        }
                        _ => return None,
                    }
                }
            };
            // The leader may be gone while others in its group live on: signal the
            // group before reaping, while its id is still ours.
            let status = exited(&mut child, grace).or_else(|| {
                signal_group(pid, libc::SIGTERM);
                exited(&mut child, grace)
            });
            kill_group(pid);
            status.or_else(|| child.wait().ok())
        })
        .await
        .ok()
        .flatten()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(self.pid);
            // Reap it so no zombie is left; the kill makes this quick.
            std::thread::spawn(move || child.wait());
        }
    }
}

async fn read_stderr(name: String, stderr: ChildStderr, tail: StderrTail, scrubber: Scrubber) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let line: String = super::result::upstream_words(&line, &scrubber)
            .chars()
            .take(STDERR_LINE_CHARS)
            .collect();
        tracing::debug!(server = %name, "stderr: {line}");
        tail.push(line);
    }
}

/// The command that runs `program`: on Linux under the guardian shell (see the
/// module docs), elsewhere directly.
fn guarded(program: &Path, args: &[String]) -> std::process::Command {
    if cfg!(target_os = "linux") {
        // `$0` is the server, `$@` its arguments. Its stdin is passed explicitly: a
        // background command would otherwise read /dev/null.
        const GUARDIAN: &str = "trap 'kill -KILL 0' HUP; exec 3<&0; \"$0\" \"$@\" <&3 3<&- & \
             exec 3<&-; wait $!; status=$?; exit $status";
        let mut command = std::process::Command::new("/bin/sh");
        command.arg("-c").arg(GUARDIAN).arg(program).args(args);
        command
    } else {
        let mut command = std::process::Command::new(program);
        command.args(args);
        command
    }
}

/// The `PATH` the server will see: its own `env:` setting, else toolgate's.
fn inherited_path(env: &[(String, super::config::Secret)]) -> Option<std::ffi::OsString> {
    env.iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.expose().into())
        .or_else(|| std::env::var_os("PATH"))
}

/// The program to run, found the way `execvp` would, so a missing one is reported
/// as such rather than as a guardian that exited.
fn find_program(
    program: &Path,
    cwd: Option<&Path>,
    path: Option<&std::ffi::OsStr>,
) -> io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        let full = match cwd {
            Some(cwd) if program.is_relative() => cwd.join(program),
            _ => program.to_path_buf(),
        };
        return if runnable(&full) {
            Ok(full)
        } else if full.exists() {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "not an executable file",
            ))
        } else {
            Err(io::Error::new(io::ErrorKind::NotFound, "no such file"))
        };
    }
    std::env::split_paths(path.unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|candidate| runnable(candidate))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not found on PATH"))
}

/// Watches for the exit of `pid` without reaping it.
fn watch_exit(pid: u32) -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let started = std::thread::Builder::new()
        .name("toolgate-mcp-exit".into())
        .spawn(move || {
            let id: libc::id_t = pid;
            loop {
                // SAFETY: `info` is a valid, zeroed siginfo_t for waitid to fill.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                let result = unsafe {
                    libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT)
                };
                if result == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            let _ = tx.send(true);
        });
    if let Err(e) = started {
        tracing::warn!("cannot watch an MCP server for its exit: {e}");
    }
    rx
}

/// A new process group, and on Linux the parent-death signal.
fn isolate(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the hook runs in the child between fork and exec, and calls only
        // async-signal-safe functions (`signal`, `prctl`, `getppid`); it allocates
        // nothing.
        unsafe {
            command.pre_exec(move || {
                // An ignored SIGHUP (toolgate run under `nohup`) stays ignored
                // across exec, and a shell cannot trap a signal ignored at its
                // start: the guardian would never kill the group.
                if libc::signal(libc::SIGHUP, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(io::Error::last_os_error());
                }
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGHUP as libc::c_ulong,
                    0,
                    0,
                    0,
                ) == -1
                {
                    return Err(io::Error::last_os_error());
                }
                // toolgate may have died between fork and prctl: then nobody would
                // send the signal. (An OS error, as `io::Error::other` would allocate.)
                if libc::getppid() as u32 != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
}

fn kill_group(pid: u32) {
    signal_group(pid, libc::SIGKILL);
}

fn signal_group(pid: u32, signal: libc::c_int) {
    if let Ok(pgid) = libc::pid_t::try_from(pid) {
        // SAFETY: killpg has no memory-safety preconditions; the group is ours while
        // its leader is unreaped (see the module docs).
        unsafe {
            libc::killpg(pgid, signal);
        }
    }
}

type SpawnRequest = (
    std::process::Command,
    tokio::sync::oneshot::Sender<io::Result<Child>>,
);

/// Starts `command` on the spawner thread (see the module docs for why).
async fn spawn_on_spawner_thread(command: std::process::Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Mutex<std::sync::mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SpawnRequest>();
        let started = std::thread::Builder::new()
            .name("toolgate-mcp-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            });
        if let Err(e) = started {
            tracing::error!("cannot start the thread that starts MCP servers: {e}");
        }
        Mutex::new(tx)
    });
    let (reply, answer) = tokio::sync::oneshot::channel();
    sender
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send((command, reply))
        .map_err(|_| io::Error::other("the thread that starts MCP servers is gone"))?;
    answer
        .await
        .map_err(|_| io::Error::other("the thread that starts MCP servers is gone"))?
}
