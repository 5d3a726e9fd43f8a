//! The worker: a process that runs one program in the Monty interpreter and sends
//! each of its tool calls to the gate over stdout, reading the answers from stdin.
//! It runs under the OS limits the gate set before it started (address space, CPU
//! time), so a program that exhausts memory or the stack ends this process, never
//! the gateway.
//!
//! Nothing but frames may be written to stdout: the program's `print` is collected,
//! never written through. This file starts a program or resumes it from its
//! snapshot; [`super::drive`] takes it from call to call.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use monty::{Dump, MontyRun, RunProgress, Session};
use monty_types::{
    CompileOptions, DateTimeSource, ExcType, ExtFunctionResult, MontyException, OsPolicy,
    PrintWriter, PrintWriterCallback, ResourceLimits, ResourceTracker, SleepMode,
};

use super::convert::to_python;
use super::drive::{Answer, MAX_SLEEP, SCRIPT_NAME, answer_call, answer_of, drive, worker_error};
use super::process::{LIMITS_ENV, OsLimits};
use super::protocol::{
    Finished, FromWorker, InterpreterLimits, Parameters, ToWorker, WorkerError, read_frame,
    write_frame,
};
use super::rewrite::{LineMap, Rewritten, rewrite, uses_await};
use super::snapshot::{self, OLD_SNAPSHOT};
use super::spin::Watched;

/// The interpreter's thread stack: deep enough for the recursion limit, and still
/// bounded by the address-space limit like everything else.
const INTERPRETER_STACK: usize = 16 << 20;

/// Runs one program as the gate's worker: reads it from stdin, answers its calls
/// through stdin and stdout, and exits. A binary that embeds toolgate calls this
/// when it is started with [`super::WORKER_ARG`] (the `toolgate` binary does), or
/// a dedicated binary calls it from `main`.
pub fn worker_main() -> ExitCode {
    // Never run a program without its limits: the gate puts them in the
    // environment, and a worker started any other way refuses.
    let Some(limits) = OsLimits::from_env() else {
        eprintln!(
            "toolgate code worker: no limits in {LIMITS_ENV}; the gate starts this worker, it is not run by hand"
        );
        return ExitCode::from(2);
    };
    if let Err(error) = limits.apply() {
        eprintln!("toolgate code worker: cannot set its OS limits: {error}");
        return ExitCode::from(2);
    }
    let (input, output) = match pipes() {
        Ok(pipes) => pipes,
        Err(error) => {
            eprintln!("toolgate code worker: cannot take its stdin and stdout: {error}");
            return ExitCode::from(2);
        }
    };
    let thread = std::thread::Builder::new()
        .name("code-mode".into())
        .stack_size(INTERPRETER_STACK)
        .spawn(move || {
            let mut input = BufReader::new(Watched::new(input));
            let mut output = output;
            serve(&mut input, &mut output)
        });
    match thread.map(|t| t.join()) {
        Ok(Ok(Ok(()))) => ExitCode::SUCCESS,
        Ok(Ok(Err(error))) => {
            eprintln!("toolgate code worker: {error}");
            ExitCode::from(2)
        }
        _ => ExitCode::from(3),
    }
}

/// Each wait for the gate's answer spins briefly before it sleeps ([`Watched`]).
pub(super) type Input = BufReader<Watched<File>>;
/// Unbuffered: [`write_frame`] builds each frame in one buffer, so a frame is
/// one `write`. (std's `Stdout` is line-buffered: a frame whose length or body
/// holds a 0x0A byte would go out in two writes and wake the gate twice.)
pub(super) type Output = File;

/// The worker's stdin and stdout as files of their own (duplicates of fds 0
/// and 1), read and written without std's locks and line buffering.
fn pipes() -> io::Result<(File, File)> {
    let input = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let output = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    Ok((input, output))
}

fn serve(input: &mut Input, output: &mut Output) -> io::Result<()> {
    let first = loop {
        let frame = read_frame(input).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::new(
                e.kind(),
                "no program came on stdin; the gate starts this worker, it is not run by hand",
            ),
            _ => e,
        })?;
        match frame {
            ToWorker::Ping => write_frame(output, &FromWorker::Pong)?,
            first => break first,
        }
    };
    let ended = match first {
        ToWorker::Start {
            code,
            functions,
            parameters,
            now_micros,
            limits,
        } => {
            let tools = Tools {
                functions,
                parameters,
            };
            run(&code, tools, now_micros, &limits, input, output)?
        }
        ToWorker::Resume {
            snapshot,
            printed,
            functions,
            parameters,
            limits,
            answer,
        } => {
            let tools = Tools {
                functions,
                parameters,
            };
            resume(&snapshot, printed, tools, &limits, *answer, input, output)?
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the first message must start or resume a program",
            ));
        }
    };
    match ended {
        Some(finished) => write_frame(output, &FromWorker::Done(finished)),
        None => Ok(()),
    }
}

/// `print` collected up to a cap; past it the program is told, and the gate
/// reports the limit however the program handles that.
pub(super) struct Printed {
    pub(super) text: String,
    pub(super) cap: usize,
    pub(super) exceeded: bool,
}

impl Printed {
    fn push(&mut self, s: &str) -> Result<(), MontyException> {
        if self.exceeded || self.text.len() + s.len() > self.cap {
            self.exceeded = true;
            return Err(MontyException::new(
                ExcType::RuntimeError,
                Some(format!(
                    "the program printed more than the {} bytes it may print",
                    self.cap
                )),
            ));
        }
        self.text.push_str(s);
        Ok(())
    }
}

impl PrintWriterCallback for Printed {
    fn stdout_write(&mut self, output: Cow<'_, str>) -> Result<(), MontyException> {
        self.push(&output)
    }

    fn stdout_push(&mut self, end: char) -> Result<(), MontyException> {
        let mut buf = [0u8; 4];
        self.push(end.encode_utf8(&mut buf))
    }
}

/// A program as it runs: what it may call, and the map from the lines it runs
/// to the lines the model wrote.
pub(super) struct Program {
    pub(super) tools: Tools,
    pub(super) lines: LineMap,
}

/// What a program may call: its tool functions and their parameters.
pub(super) struct Tools {
    pub(super) functions: Vec<String>,
    pub(super) parameters: Parameters,
}

impl Tools {
    pub(super) fn is_tool(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f == name)
    }

    pub(super) fn parameters(&self, function: &str) -> &[String] {
        self.parameters.get(function).map_or(&[], Vec::as_slice)
    }
}

fn run(
    code: &str,
    tools: Tools,
    now_micros: i64,
    limits: &InterpreterLimits,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Option<Finished>> {
    let mut printed = Printed {
        text: String::new(),
        cap: limits.max_output_bytes,
        exceeded: false,
    };
    let asynchronous = uses_await(code);
    let Rewritten { code, lines } = rewrite(code);
    let program = Program { tools, lines };
    let runner = match MontyRun::new(code, SCRIPT_NAME, Vec::new(), CompileOptions::default()) {
        Ok(runner) => runner.with_os_policy(os_policy(now_micros)),
        Err(exception) => {
            return Ok(Some(Finished {
                error: Some(worker_error(&exception, true, &program.lines)),
                ..Finished::default()
            }));
        }
    };
    let mut resource_limits = ResourceLimits::default()
        .max_feed_duration(Duration::from_millis(limits.interpreter_time_ms))
        .max_recursion_depth(limits.max_recursion_depth)
        .max_suspensions(usize::MAX);
    // Without Monty's allocator this checks only large single results up front
    // (`'x' * 10**13`); the address-space limit stops gradual growth.
    resource_limits.max_memory = usize::try_from(limits.max_memory_bytes).ok();
    let tracker = ResourceTracker::new(resource_limits);
    let progress = runner.start(Vec::new(), tracker, PrintWriter::Callback(&mut printed));
    drive(
        progress,
        &program,
        asynchronous,
        Vec::new(),
        printed,
        input,
        output,
    )
}

/// The interpreter's clock, sleeps and randomness: the clock reads the gate's
/// time at the program's start (kept in its snapshot, so a resumed program reads
/// the same), sleeps wait in the worker up to [`MAX_SLEEP`] each (the wall clock
/// still bounds the run), and `random` starts from OS entropy.
fn os_policy(now_micros: i64) -> OsPolicy {
    OsPolicy {
        datetime: DateTimeSource::Fixed {
            unix_seconds: now_micros.div_euclid(1_000_000),
            microsecond: u32::try_from(now_micros.rem_euclid(1_000_000)).unwrap_or(0),
        },
        sleep: SleepMode::System(MAX_SLEEP),
        ..OsPolicy::default()
    }
}

/// Goes on with a program from its snapshot, answering the call it paused at.
fn resume(
    snapshot: &str,
    printed: String,
    tools: Tools,
    limits: &InterpreterLimits,
    answer: ToWorker,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Option<Finished>> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let bytes = BASE64
        .decode(snapshot)
        .map_err(|e| invalid(format!("the snapshot is not base64 ({e})")))?;
    let unreadable = |message: String| {
        Ok(Some(Finished {
            printed: printed.clone(),
            error: Some(WorkerError {
                kind: "resume".to_owned(),
                exception: "RuntimeError".to_owned(),
                message,
                traceback: String::new(),
                line: None,
                column: None,
            }),
            ..Finished::default()
        }))
    };
    let Some((header, dump)) = snapshot::open(&bytes) else {
        return unreadable(OLD_SNAPSHOT.to_owned());
    };
    let program = Program {
        tools,
        lines: header.lines,
    };
    let dump = match Dump::load(dump) {
        Ok(dump) => dump,
        Err(e) => return unreadable(format!("{OLD_SNAPSHOT} ({e:?})")),
    };
    let Session::Running(progress) = dump.state else {
        return Err(invalid("the snapshot is not of a paused program".into()));
    };
    let mut printed = Printed {
        text: printed,
        cap: limits.max_output_bytes,
        exceeded: false,
    };
    let answer = answer_of(answer)?;
    match *progress {
        // A call made without `await` (the program is synchronous) or awaited
        // alone (it is asynchronous).
        RunProgress::FunctionCall(call) => {
            let asynchronous = call.allow_eager_await;
            let progress = answer_call(call, answer, &mut printed);
            drive(
                progress,
                &program,
                asynchronous,
                Vec::new(),
                printed,
                input,
                output,
            )
        }
        // A call awaited with others, the one the program still waits for;
        // the calls deferred behind it are asked of the gate again.
        RunProgress::ResolveFutures(futures) => {
            let Some(id) = header.awaited else {
                return Err(invalid("the snapshot names no call it waits for".into()));
            };
            let progress = match answer {
                Answer::Return(value) => futures.resume(
                    vec![(id, ExtFunctionResult::Return(to_python(&value)))],
                    PrintWriter::Callback(&mut printed),
                ),
                Answer::Raise(exc) => futures.resume(
                    vec![(id, ExtFunctionResult::Error(exc))],
                    PrintWriter::Callback(&mut printed),
                ),
                Answer::Abort(exc) => futures.abort(exc, PrintWriter::Callback(&mut printed)),
                Answer::Suspend | Answer::Defer => {
                    return Err(invalid("a resumed call cannot pause again".into()));
                }
            };
            drive(
                progress,
                &program,
                true,
                header.deferred,
                printed,
                input,
                output,
            )
        }
        _ => Err(invalid("the snapshot is not paused at a tool call".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_of_an_older_interpreter_ends_the_program_with_a_clear_error() {
        let mut input = BufReader::new(Watched::new(File::open("/dev/null").unwrap()));
        let mut output = File::options().write(true).open("/dev/null").unwrap();
        let tools = Tools {
            functions: Vec::new(),
            parameters: Parameters::new(),
        };
        let limits = InterpreterLimits {
            interpreter_time_ms: 1000,
            max_recursion_depth: 100,
            max_output_bytes: 1000,
            max_memory_bytes: 1 << 30,
        };
        // A dump as Monty 0.0.23 began one: no toolgate header, format version 8.
        let old = BASE64.encode([0u8, 8, 1, 2, 3]);
        let answer = ToWorker::Return {
            value: serde_json::json!(1),
        };
        let ended = resume(
            &old,
            "before\n".into(),
            tools,
            &limits,
            answer,
            &mut input,
            &mut output,
        )
        .unwrap()
        .expect("the program ends");
        let error = ended.error.expect("with an error");
        assert_eq!(error.kind, "resume");
        assert!(
            error.message.contains("paused by an older toolgate"),
            "{}",
            error.message
        );
        assert_eq!(ended.printed, "before\n");
    }
}
