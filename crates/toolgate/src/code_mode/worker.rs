//! The worker: a process that runs one program in the Monty interpreter and sends
//! each of its tool calls to the gate over stdout, reading the answers from stdin.
//! It runs under the OS limits the gate set before it started (address space, CPU
//! time), so a program that exhausts memory or the stack ends this process, never
//! the gateway.
//!
//! Nothing but frames may be written to stdout: the program's `print` is collected,
//! never written through.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use monty::{Dump, FunctionCall, MontyRun, RunProgress, Session, SessionRef};
use monty_types::{
    CompileOptions, DateTimeSource, ExcType, ExtFunctionResult, MontyException, MontyObject,
    NameLookupResult, OsFunctionCall, OsPolicy, PrintWriter, PrintWriterCallback, ResourceLimits,
    ResourceTracker, SleepMode,
};

use super::call_args::arguments;
use super::convert::{to_json, to_python};
use super::process::{LIMITS_ENV, OsLimits};
use super::protocol::{
    BatchCall, Finished, FromWorker, InterpreterLimits, Parameters, ToWorker, WorkerError,
    read_frame, write_frame,
};
use super::rewrite::{LineMap, Rewritten, rewrite, uses_await};
use super::snapshot::{self, Header, OLD_SNAPSHOT};
use super::spin::Watched;

/// The interpreter's thread stack: deep enough for the recursion limit, and still
/// bounded by the address-space limit like everything else.
const INTERPRETER_STACK: usize = 16 << 20;

/// The longest one `time.sleep` or `asyncio.sleep` waits.
const MAX_SLEEP: Duration = Duration::from_secs(10);

/// What a program calls to end with a value at once, as smolagents' agents do.
const FINAL_ANSWER: &str = "final_answer";

/// The name the program's traceback shows for its source.
const SCRIPT_NAME: &str = "program.py";

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
type Input = BufReader<Watched<File>>;
/// Unbuffered: [`write_frame`] builds each frame in one buffer, so a frame is
/// one `write`. (std's `Stdout` is line-buffered: a frame whose length or body
/// holds a 0x0A byte would go out in two writes and wake the gate twice.)
type Output = File;

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
            let program = Program {
                functions,
                parameters,
                lines: LineMap::default(),
            };
            run(&code, program, now_micros, &limits, input, output)?
        }
        ToWorker::Resume {
            snapshot,
            printed,
            functions,
            parameters,
            limits,
            answer,
        } => {
            let program = Program {
                functions,
                parameters,
                lines: LineMap::default(),
            };
            resume(&snapshot, printed, program, &limits, *answer, input, output)?
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
struct Printed {
    text: String,
    cap: usize,
    exceeded: bool,
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

/// What a program may call (its tool functions and their parameters), and the
/// map from the lines it runs to the lines the model wrote.
struct Program {
    functions: Vec<String>,
    parameters: Parameters,
    lines: LineMap,
}

impl Program {
    fn is_tool(&self, name: &str) -> bool {
        self.functions.iter().any(|f| f == name)
    }

    fn parameters(&self, function: &str) -> &[String] {
        self.parameters.get(function).map_or(&[], Vec::as_slice)
    }
}

fn run(
    code: &str,
    program: Program,
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
    let program = Program { lines, ..program };
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
    program: Program,
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
        lines: header.lines,
        ..program
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

/// Runs the program from `progress` until it ends (`Some`) or is saved at a call
/// that waits for a person (`None`: the snapshot is sent already).
///
/// In an `asynchronous` program (one that uses `await`), a tool call is a
/// coroutine: it returns a future at once, and when every task of the program
/// waits, the calls collected so far go to the gate as one batch, which runs
/// them concurrently.
fn drive(
    mut progress: Result<RunProgress, MontyException>,
    program: &Program,
    asynchronous: bool,
    mut batch: Vec<BatchCall>,
    mut printed: Printed,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Option<Finished>> {
    // A call awaited with others that waits for a person's approval, and the
    // others of its kind deferred behind it.
    let mut awaited: Option<u32> = None;
    let mut deferred: Vec<BatchCall> = Vec::new();
    loop {
        let step = match progress {
            Err(exception) => {
                return Ok(Some(Finished {
                    printed: printed.text,
                    output_exceeded: printed.exceeded,
                    error: Some(worker_error(&exception, false, &program.lines)),
                    ..Finished::default()
                }));
            }
            Ok(step) => step,
        };
        progress = match step {
            RunProgress::Complete(value) => return Ok(Some(finished(&value, printed))),
            RunProgress::NameLookup(lookup) => {
                let found = lookup.object_id().is_none().then(|| {
                    super::names::lookup(&program.functions, &lookup.name).or_else(|| {
                        (lookup.name == FINAL_ANSWER)
                            .then(|| MontyObject::function(FINAL_ANSWER, None))
                    })
                });
                let answer = match found.flatten() {
                    Some(value) => NameLookupResult::Value(value),
                    None => NameLookupResult::Undefined,
                };
                lookup.resume(answer, PrintWriter::Callback(&mut printed))
            }
            RunProgress::FunctionCall(call)
                if call.object_id.is_none()
                    && call.function_name == FINAL_ANSWER
                    && !program.is_tool(FINAL_ANSWER) =>
            {
                let answer = call.args.arg(0).or_else(|| call.args.kwarg("answer"));
                let answer = answer.map_or_else(MontyObject::none, |a| a.to_owned());
                return Ok(Some(finished(&answer, printed)));
            }
            RunProgress::FunctionCall(call) => {
                let checked = if call.object_id.is_some() {
                    Err(exception(
                        ExcType::AttributeError,
                        &format!(
                            "no tool is named `{}` here; call the tools the stubs list",
                            call.function_name
                        ),
                    ))
                } else if !program.is_tool(&call.function_name) {
                    Err(exception(
                        ExcType::NameError,
                        &format!("name '{}' is not defined", call.function_name),
                    ))
                } else {
                    arguments(
                        &call.function_name,
                        program.parameters(&call.function_name),
                        &call.args,
                    )
                };
                match checked {
                    Err(raise) => answer_call(call, Answer::Raise(raise), &mut printed),
                    // An awaited call among others: collected for one batch.
                    Ok(arguments)
                        if asynchronous && !(call.allow_eager_await && batch.is_empty()) =>
                    {
                        batch.push(BatchCall {
                            id: call.call_id,
                            function: call.function_name.clone(),
                            arguments,
                        });
                        call.resume_pending(PrintWriter::Callback(&mut printed))
                    }
                    // A call made without `await`, or awaited alone: it may pause.
                    Ok(arguments) => {
                        let answer = ask_gate(&call.function_name, arguments, input, output)?;
                        if let Answer::Suspend = answer {
                            let header = Header {
                                lines: program.lines.clone(),
                                ..Header::default()
                            };
                            suspend(RunProgress::FunctionCall(call), &header, printed, output)?;
                            return Ok(None);
                        }
                        answer_call(call, answer, &mut printed)
                    }
                }
            }
            RunProgress::OsCall(os) => match os.function_call {
                OsFunctionCall::SystemSleep(delay) | OsFunctionCall::AsyncSystemSleep(delay) => {
                    std::thread::sleep(delay.min(MAX_SLEEP));
                    os.resume(MontyObject::none(), PrintWriter::Callback(&mut printed))
                }
                OsFunctionCall::Import(ref module) => {
                    let message = super::hints::no_such_module(module);
                    os.resume(
                        ExtFunctionResult::Error(exception(ExcType::ModuleNotFoundError, &message)),
                        PrintWriter::Callback(&mut printed),
                    )
                }
                _ => {
                    let message = format!(
                        "programs have no access to files, the network or the environment (`{}` was refused); call a tool instead",
                        os.function_call.name()
                    );
                    os.resume(
                        ExtFunctionResult::Error(exception(ExcType::PermissionError, &message)),
                        PrintWriter::Callback(&mut printed),
                    )
                }
            },
            // Every task waits, and nothing more is asked of the gate: the one
            // call that waits for a person pauses the program here.
            RunProgress::ResolveFutures(futures) if batch.is_empty() && awaited.is_some() => {
                let header = Header {
                    lines: program.lines.clone(),
                    awaited,
                    deferred,
                };
                suspend(
                    RunProgress::ResolveFutures(futures),
                    &header,
                    printed,
                    output,
                )?;
                return Ok(None);
            }
            RunProgress::ResolveFutures(futures) if batch.is_empty() => futures.abort(
                exception(
                    ExcType::RuntimeError,
                    "the program waits for something that is not a tool call",
                ),
                PrintWriter::Callback(&mut printed),
            ),
            RunProgress::ResolveFutures(futures) => {
                let calls = std::mem::take(&mut batch);
                match ask_gate_all(calls, input, output)? {
                    Ok(resolved) => {
                        awaited = awaited.or(resolved.suspended);
                        deferred.extend(resolved.deferred);
                        let results = resolved.results;
                        if results.is_empty() {
                            // Only the call that waits for a person was asked.
                            progress = Ok(RunProgress::ResolveFutures(futures));
                            continue;
                        }
                        futures.resume(results, PrintWriter::Callback(&mut printed))
                    }
                    Err(abort) => futures.abort(abort, PrintWriter::Callback(&mut printed)),
                }
            }
        };
    }
}

/// A program that ended with `value`.
fn finished(value: &MontyObject, printed: Printed) -> Finished {
    let (json, repr) = match to_json(value) {
        Ok(json) => (Some(json), None),
        Err(_) => (None, Some(value.py_repr())),
    };
    Finished {
        value: json,
        repr,
        printed: printed.text,
        output_exceeded: printed.exceeded,
        error: None,
    }
}

/// Sends the program's state at its pending call to the gate.
fn suspend(
    progress: RunProgress,
    header: &Header,
    printed: Printed,
    output: &mut Output,
) -> io::Result<()> {
    let dump = monty::dump(SCRIPT_NAME, None, &[], SessionRef::Running(&progress))
        .map_err(|e| io::Error::other(format!("the program's state cannot be saved ({e})")))?;
    let bytes = snapshot::seal(&dump, header);
    write_frame(
        output,
        &FromWorker::Suspended {
            snapshot: BASE64.encode(bytes),
            printed: printed.text,
            output_exceeded: printed.exceeded,
        },
    )
}

/// The call site's answer applied to the paused call.
fn answer_call(
    call: FunctionCall,
    answer: Answer,
    printed: &mut Printed,
) -> Result<RunProgress, MontyException> {
    match answer {
        // An awaited call settles its coroutine at once.
        Answer::Return(value) if call.allow_eager_await => {
            call.resume_eager(Ok(to_python(&value)), PrintWriter::Callback(printed))
        }
        Answer::Raise(exc) if call.allow_eager_await => {
            call.resume_eager(Err(exc), PrintWriter::Callback(printed))
        }
        Answer::Return(value) => call.resume(to_python(&value), PrintWriter::Callback(printed)),
        Answer::Raise(exc) => call.resume(
            ExtFunctionResult::Error(exc),
            PrintWriter::Callback(printed),
        ),
        Answer::Abort(exc) => call.abort(exc, PrintWriter::Callback(printed)),
        Answer::Suspend | Answer::Defer => call.abort(
            exception(ExcType::RuntimeError, "the program cannot pause here"),
            PrintWriter::Callback(printed),
        ),
    }
}

enum Answer {
    Return(serde_json::Value),
    Raise(MontyException),
    Abort(MontyException),
    Suspend,
    Defer,
}

fn ask_gate(
    function: &str,
    arguments: serde_json::Value,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Answer> {
    write_frame(
        output,
        &FromWorker::Call {
            function: function.to_owned(),
            arguments,
        },
    )?;
    answer_of(read_frame(input)?)
}

/// Sends a batch of awaited calls to the gate and reads their answers: each
/// call's result for the futures, or the exception that ends the program.
fn ask_gate_all(
    calls: Vec<BatchCall>,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Result<Resolved, MontyException>> {
    write_frame(
        output,
        &FromWorker::Calls {
            calls: calls.clone(),
        },
    )?;
    let ToWorker::Results { results } = read_frame(input)? else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the gate did not answer a batch of calls with their results",
        ));
    };
    let mut resolved = Resolved {
        results: Vec::with_capacity(results.len()),
        suspended: None,
        deferred: Vec::new(),
    };
    for (id, reply) in results {
        match answer_of(reply)? {
            Answer::Return(value) => resolved
                .results
                .push((id, ExtFunctionResult::Return(to_python(&value)))),
            Answer::Raise(exc) => resolved.results.push((id, ExtFunctionResult::Error(exc))),
            Answer::Abort(exc) => return Ok(Err(exc)),
            Answer::Suspend => resolved.suspended = Some(id),
            Answer::Defer => resolved
                .deferred
                .extend(calls.iter().filter(|c| c.id == id).cloned()),
        }
    }
    Ok(Ok(resolved))
}

/// A batch's answers: the results; the call that waits for a person, if one
/// does; the calls deferred behind it (their futures stay pending until the
/// program is resumed).
struct Resolved {
    results: Vec<(u32, ExtFunctionResult)>,
    suspended: Option<u32>,
    deferred: Vec<BatchCall>,
}

/// The answer a frame from the gate gives to a call.
fn answer_of(reply: ToWorker) -> io::Result<Answer> {
    Ok(match reply {
        ToWorker::Return { value } => Answer::Return(value),
        ToWorker::Raise {
            exception: kind,
            message,
        } => Answer::Raise(exception(exc_type(&kind), &message)),
        ToWorker::Abort {
            exception: kind,
            message,
        } => Answer::Abort(exception(exc_type(&kind), &message)),
        ToWorker::Suspend => Answer::Suspend,
        ToWorker::Defer => Answer::Defer,
        ToWorker::Start { .. }
        | ToWorker::Resume { .. }
        | ToWorker::Results { .. }
        | ToWorker::Ping => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a program is already running; the gate answers its calls",
            ));
        }
    })
}

fn exc_type(name: &str) -> ExcType {
    name.parse().unwrap_or(ExcType::RuntimeError)
}

fn exception(kind: ExcType, message: &str) -> MontyException {
    MontyException::new(kind, Some(message.to_owned()))
}

/// A program's exception as the gate reports it, in the program's own line
/// numbers, with a hint where the message alone would mislead; `syntax` when it
/// never ran.
fn worker_error(exception: &MontyException, before_running: bool, lines: &LineMap) -> WorkerError {
    let mut message = exception.message().unwrap_or_default().to_owned();
    let kind = match exception.exc_type() {
        _ if before_running => "syntax",
        ExcType::TimeoutError if message.contains("time limit exceeded") => "interpreter_time",
        ExcType::MemoryError if message.starts_with("memory limit exceeded") => "memory",
        ExcType::RecursionError => "recursion",
        _ => "exception",
    };
    let name = exception.exc_type().to_string();
    if let Some(hint) = super::hints::hint(&name, &message) {
        message = format!("{message} (hint: {hint})");
    }
    let at = exception
        .traceback()
        .iter()
        .rev()
        .find_map(|f| Some((lines.program_line(f.start.line)?, f.start.column)));
    WorkerError {
        kind: kind.to_owned(),
        exception: name,
        message,
        traceback: lines.traceback(&exception.to_string(), SCRIPT_NAME),
        line: at.map(|(line, _)| line),
        column: at.map(|(_, column)| column),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_of_an_older_interpreter_ends_the_program_with_a_clear_error() {
        let mut input = BufReader::new(Watched::new(File::open("/dev/null").unwrap()));
        let mut output = File::options().write(true).open("/dev/null").unwrap();
        let program = Program {
            functions: Vec::new(),
            parameters: Parameters::new(),
            lines: LineMap::default(),
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
            program,
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
