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
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
    PrintWriter, PrintWriterCallback, ResourceLimits, ResourceTracker,
};

use super::convert::{to_json, to_python};
use super::process::{LIMITS_ENV, OsLimits};
use super::protocol::{
    BatchCall, Finished, FromWorker, InterpreterLimits, ToWorker, WorkerError, read_frame,
    write_frame,
};
use super::spin::Watched;

/// The interpreter's thread stack: deep enough for the recursion limit, and still
/// bounded by the address-space limit like everything else.
const INTERPRETER_STACK: usize = 16 << 20;

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
            limits,
        } => run(&code, &functions, &limits, input, output)?,
        ToWorker::Resume {
            snapshot,
            printed,
            functions,
            limits,
            answer,
        } => resume(
            &snapshot, printed, &functions, &limits, *answer, input, output,
        )?,
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

fn run(
    code: &str,
    functions: &[String],
    limits: &InterpreterLimits,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Option<Finished>> {
    let mut printed = Printed {
        text: String::new(),
        cap: limits.max_output_bytes,
        exceeded: false,
    };
    let runner = match MontyRun::new(
        code.to_owned(),
        SCRIPT_NAME,
        Vec::new(),
        CompileOptions::default(),
    ) {
        Ok(runner) => runner,
        Err(exception) => {
            return Ok(Some(Finished {
                error: Some(worker_error(&exception, true)),
                ..Finished::default()
            }));
        }
    };
    let mut resource_limits = ResourceLimits::default()
        .max_duration(Duration::from_millis(limits.interpreter_time_ms))
        .max_recursion_depth(limits.max_recursion_depth)
        .max_suspensions(usize::MAX);
    // Without Monty's allocator this checks only large single results up front
    // (`'x' * 10**13`); the address-space limit stops gradual growth.
    resource_limits.max_memory = usize::try_from(limits.max_memory_bytes).ok();
    let tracker = ResourceTracker::new(resource_limits);
    let progress = runner.start(Vec::new(), tracker, PrintWriter::Callback(&mut printed));
    drive(
        progress,
        functions,
        uses_await(code),
        printed,
        input,
        output,
    )
}

/// Goes on with a program from its snapshot, answering the call it paused at.
fn resume(
    snapshot: &str,
    printed: String,
    functions: &[String],
    limits: &InterpreterLimits,
    answer: ToWorker,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Option<Finished>> {
    let invalid = |message: String| io::Error::new(io::ErrorKind::InvalidData, message);
    let bytes = BASE64
        .decode(snapshot)
        .map_err(|e| invalid(format!("the snapshot is not base64 ({e})")))?;
    let dump = Dump::load(&bytes).map_err(|e| {
        invalid(format!(
            "the snapshot cannot be read by this worker ({e:?})"
        ))
    })?;
    let Session::Running(progress) = dump.state else {
        return Err(invalid("the snapshot is not of a paused program".into()));
    };
    let RunProgress::FunctionCall(call) = *progress else {
        return Err(invalid("the snapshot is not paused at a tool call".into()));
    };
    let mut printed = Printed {
        text: printed,
        cap: limits.max_output_bytes,
        exceeded: false,
    };
    let progress = answer_call(call, answer_of(answer)?, &mut printed);
    // Only a call made without `await` pauses, so the rest of the program is
    // synchronous too.
    drive(progress, functions, false, printed, input, output)
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
    functions: &[String],
    asynchronous: bool,
    mut printed: Printed,
    input: &mut Input,
    output: &mut Output,
) -> io::Result<Option<Finished>> {
    let mut batch: Vec<BatchCall> = Vec::new();
    loop {
        let step = match progress {
            Err(exception) => {
                return Ok(Some(Finished {
                    printed: printed.text,
                    output_exceeded: printed.exceeded,
                    error: Some(worker_error(&exception, false)),
                    ..Finished::default()
                }));
            }
            Ok(step) => step,
        };
        progress = match step {
            RunProgress::Complete(value) => {
                let (value, repr) = match to_json(&value) {
                    Ok(value) => (Some(value), None),
                    Err(_) => (None, Some(value.py_repr())),
                };
                return Ok(Some(Finished {
                    value,
                    repr,
                    printed: printed.text,
                    output_exceeded: printed.exceeded,
                    error: None,
                }));
            }
            RunProgress::NameLookup(lookup) => {
                let found = lookup
                    .object_id()
                    .is_none()
                    .then(|| super::names::lookup(functions, &lookup.name));
                let answer = match found.flatten() {
                    Some(value) => NameLookupResult::Value(value),
                    None => NameLookupResult::Undefined,
                };
                lookup.resume(answer, PrintWriter::Callback(&mut printed))
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
                } else if !functions.contains(&call.function_name) {
                    Err(exception(
                        ExcType::NameError,
                        &format!("name '{}' is not defined", call.function_name),
                    ))
                } else {
                    arguments(&call.function_name, &call.args, &call.kwargs)
                };
                match checked {
                    Err(raise) => answer_call(call, Answer::Raise(raise), &mut printed),
                    Ok(arguments) if asynchronous => {
                        batch.push(BatchCall {
                            id: call.call_id,
                            function: call.function_name.clone(),
                            arguments,
                        });
                        call.resume_pending(PrintWriter::Callback(&mut printed))
                    }
                    Ok(arguments) => {
                        let answer = ask_gate(&call.function_name, arguments, input, output)?;
                        if let Answer::Suspend = answer {
                            suspend(RunProgress::FunctionCall(call), printed, output)?;
                            return Ok(None);
                        }
                        answer_call(call, answer, &mut printed)
                    }
                }
            }
            RunProgress::OsCall(os) => {
                let message = format!(
                    "programs have no access to files, the network, the environment or the clock (`{}` was refused); call a tool instead",
                    os.function_call.name()
                );
                os.resume(
                    ExtFunctionResult::Error(exception(ExcType::PermissionError, &message)),
                    PrintWriter::Callback(&mut printed),
                )
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
                    Ok(results) => futures.resume(results, PrintWriter::Callback(&mut printed)),
                    Err(abort) => futures.abort(abort, PrintWriter::Callback(&mut printed)),
                }
            }
        };
    }
}

/// Sends the program's state at its pending call to the gate.
fn suspend(progress: RunProgress, printed: Printed, output: &mut Output) -> io::Result<()> {
    let bytes = monty::dump(SCRIPT_NAME, None, SessionRef::Running(&progress))
        .map_err(|e| io::Error::other(format!("the program's state cannot be saved ({e})")))?;
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
        Answer::Return(value) => call.resume(to_python(&value), PrintWriter::Callback(printed)),
        Answer::Raise(exc) => call.resume(
            ExtFunctionResult::Error(exc),
            PrintWriter::Callback(printed),
        ),
        Answer::Abort(exc) => call.abort(exc, PrintWriter::Callback(printed)),
        Answer::Suspend => call.abort(
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
}

/// A tool function's arguments as one JSON object: keywords, or one dict.
fn arguments(
    function: &str,
    args: &[MontyObject],
    kwargs: &[(MontyObject, MontyObject)],
) -> Result<serde_json::Value, MontyException> {
    let not_json = |e: super::convert::NotJson| {
        exception(
            exc_type(e.exception()),
            &format!("an argument of {function}(): {}", e.message),
        )
    };
    match (args, kwargs.is_empty()) {
        ([], _) => {
            let mut map = serde_json::Map::new();
            for (key, value) in kwargs {
                let MontyObject::String(key) = key else {
                    return Err(exception(ExcType::TypeError, "keywords must be strings"));
                };
                map.insert(key.clone(), to_json(value).map_err(not_json)?);
            }
            Ok(serde_json::Value::Object(map))
        }
        ([dict @ MontyObject::Dict(_)], true) => to_json(dict).map_err(not_json),
        _ => Err(exception(
            ExcType::TypeError,
            &format!("{function}() takes keyword arguments only, e.g. {function}(name=value)"),
        )),
    }
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
) -> io::Result<Result<Vec<(u32, ExtFunctionResult)>, MontyException>> {
    write_frame(output, &FromWorker::Calls { calls })?;
    let ToWorker::Results { results } = read_frame(input)? else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the gate did not answer a batch of calls with their results",
        ));
    };
    let mut resolved = Vec::with_capacity(results.len());
    for (id, reply) in results {
        match answer_of(reply)? {
            Answer::Return(value) => {
                resolved.push((id, ExtFunctionResult::Return(to_python(&value))))
            }
            Answer::Raise(exc) => resolved.push((id, ExtFunctionResult::Error(exc))),
            Answer::Abort(exc) => return Ok(Err(exc)),
            Answer::Suspend => {
                return Ok(Err(exception(
                    ExcType::RuntimeError,
                    "a call awaited with others cannot pause the program",
                )));
            }
        }
    }
    Ok(Ok(resolved))
}

/// Whether a program uses `await` (outside strings and comments): then its tool
/// calls are coroutines, as Python's async functions are.
fn uses_await(code: &str) -> bool {
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            quote @ (b'\'' | b'"') => {
                let triple = bytes.get(i..i + 3) == Some(&[quote, quote, quote][..]);
                i += if triple { 3 } else { 1 };
                while i < bytes.len() {
                    if bytes[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if triple {
                        if bytes.get(i..i + 3) == Some(&[quote, quote, quote][..]) {
                            i += 3;
                            break;
                        }
                    } else if bytes[i] == quote || bytes[i] == b'\n' {
                        i += 1;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            b'a' if code[i..].starts_with("await")
                && (i == 0 || !is_name_byte(bytes[i - 1]))
                && !bytes.get(i + 5).is_some_and(|b| is_name_byte(*b)) =>
            {
                return true;
            }
            b if is_name_byte(b) => {
                while i < bytes.len() && is_name_byte(bytes[i]) {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    false
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
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

/// A program's exception as the gate reports it; `syntax` when it never ran.
fn worker_error(exception: &MontyException, before_running: bool) -> WorkerError {
    let message = exception.message().unwrap_or_default().to_owned();
    let kind = match exception.exc_type() {
        _ if before_running => "syntax",
        ExcType::TimeoutError if message.starts_with("time limit exceeded") => "interpreter_time",
        ExcType::MemoryError if message.starts_with("memory limit exceeded") => "memory",
        ExcType::RecursionError => "recursion",
        _ => "exception",
    };
    let at = exception.traceback().last();
    WorkerError {
        kind: kind.to_owned(),
        exception: exception.exc_type().to_string(),
        message,
        traceback: exception.to_string(),
        line: at.map(|f| f.start.line),
        column: at.map(|f| f.start.column),
    }
}

#[cfg(test)]
mod tests {
    use super::uses_await;

    #[test]
    fn a_program_is_asynchronous_when_it_uses_await_outside_strings_and_comments() {
        assert!(uses_await("x = await lookup(id=1)"));
        assert!(uses_await(
            "import asyncio\na, b = await asyncio.gather(f(), g())"
        ));
        assert!(!uses_await("x = lookup(id=1)  # no await here"));
        assert!(!uses_await("print('await me')\ns = \"\"\"await\"\"\""));
        assert!(!uses_await("awaiting = 1\nnot_await = 2"));
    }
}
