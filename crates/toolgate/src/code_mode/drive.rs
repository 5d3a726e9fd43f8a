//! The interpreter driven from call to call: each tool call the program makes
//! goes to the gate (one at a time, or as a batch of awaited calls), each OS
//! call is answered (sleeps wait, imports of unknown modules fail, everything
//! else is refused), and the program ends, or is saved at a call that waits for
//! a person.

use std::io;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use monty::{FunctionCall, RunProgress, SessionRef};
use monty_types::{
    ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult, OsFunctionCall,
    PrintWriter,
};

use super::call_args::arguments;
use super::convert::{to_json, to_python};
use super::protocol::{
    BatchCall, Finished, FromWorker, ToWorker, WorkerError, read_frame, write_frame,
};
use super::rewrite::LineMap;
use super::snapshot::{self, Header};
use super::worker::{Input, Output, Printed, Program};

/// The longest one `time.sleep` or `asyncio.sleep` waits.
pub(super) const MAX_SLEEP: Duration = Duration::from_secs(10);

/// What a program calls to end with a value at once, as smolagents' agents do.
const FINAL_ANSWER: &str = "final_answer";

/// The name the program's traceback shows for its source.
pub(super) const SCRIPT_NAME: &str = "program.py";

/// Runs the program from `progress` until it ends (`Some`) or is saved at a call
/// that waits for a person (`None`: the snapshot is sent already).
///
/// In an `asynchronous` program (one that uses `await`), a tool call is a
/// coroutine: it returns a future at once, and when every task of the program
/// waits, the calls collected so far go to the gate as one batch, which runs
/// them concurrently.
pub(super) fn drive(
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
                    super::names::lookup(&program.tools.functions, &lookup.name).or_else(|| {
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
                    && !program.tools.is_tool(FINAL_ANSWER) =>
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
                } else if !program.tools.is_tool(&call.function_name) {
                    Err(exception(
                        ExcType::NameError,
                        &format!("name '{}' is not defined", call.function_name),
                    ))
                } else {
                    arguments(
                        &call.function_name,
                        program.tools.parameters(&call.function_name),
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
    let (json, repr) = match to_json(value.as_ref()) {
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
pub(super) fn answer_call(
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

pub(super) enum Answer {
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
    // Sent, then taken back: a deferred call is asked again on resume.
    let request = FromWorker::Calls { calls };
    write_frame(output, &request)?;
    let FromWorker::Calls { calls } = request else {
        unreachable!("the request was built as a batch")
    };
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
pub(super) fn answer_of(reply: ToWorker) -> io::Result<Answer> {
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

pub(super) fn exception(kind: ExcType, message: &str) -> MontyException {
    MontyException::new(kind, Some(message.to_owned()))
}

/// A program's exception as the gate reports it, in the program's own line
/// numbers, with a hint where the message alone would mislead; `syntax` when it
/// never ran.
pub(super) fn worker_error(
    exception: &MontyException,
    before_running: bool,
    lines: &LineMap,
) -> WorkerError {
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
