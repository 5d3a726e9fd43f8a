//! What the gate and a code-mode worker say to each other over the worker's stdin
//! and stdout: one JSON message per frame, each frame a 4-byte big-endian length and
//! that many bytes. Neither side reads a frame longer than [`MAX_FRAME`].

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The longest frame either side accepts: the arguments of a call are at most the
/// gate's `max_argument_bytes` (1 MiB by default); results and output are capped
/// well below this.
pub(crate) const MAX_FRAME: usize = 64 << 20;

/// The limits the worker itself applies to the interpreter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct InterpreterLimits {
    pub interpreter_time_ms: u64,
    pub max_recursion_depth: usize,
    pub max_output_bytes: usize,
    pub max_memory_bytes: u64,
}

/// Each tool function's parameter names, in the order positional arguments
/// fill them.
pub(crate) type Parameters = std::collections::BTreeMap<String, Vec<String>>;

/// From the gate to the worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ToWorker {
    /// Run this program; `functions` are the names it may call, `parameters`
    /// each one's parameter names in the stubs' order (for positional
    /// arguments), and `now_micros` the gate's clock, which the program's
    /// `datetime.now()` and `time.time()` read throughout its run.
    Start {
        code: String,
        functions: Vec<String>,
        #[serde(default)]
        parameters: Parameters,
        now_micros: i64,
        limits: InterpreterLimits,
    },
    /// Go on with a program paused earlier: `snapshot` is what the worker sent
    /// in [`FromWorker::Suspended`] (base64), `printed` what it had printed, and
    /// `answer` the reply to the call it paused at (`Return`, `Raise` or `Abort`).
    Resume {
        snapshot: String,
        printed: String,
        functions: Vec<String>,
        #[serde(default)]
        parameters: Parameters,
        limits: InterpreterLimits,
        answer: Box<ToWorker>,
    },
    /// The call returned this value.
    Return { value: Value },
    /// The call waits for a person: save the program's state and stop.
    Suspend,
    /// A call of a batch that also waits for a person, while another call of
    /// the program already does: leave it pending, and ask it of the gate again
    /// once the program is resumed.
    Defer,
    /// The answers to a batch of [`FromWorker::Calls`], each by its call id
    /// (`Return`, `Raise` or `Abort`).
    Results { results: Vec<(u32, ToWorker)> },
    /// The call raised: `exception` is a Python exception type (`PermissionError`).
    Raise { exception: String, message: String },
    /// End the program at the call with an exception it cannot catch (a limit).
    Abort { exception: String, message: String },
    /// Are you alive? Asked of a worker started ahead of need, before it is
    /// given a program; it answers [`FromWorker::Pong`].
    Ping,
}

/// From the worker to the gate.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum FromWorker {
    /// The program calls `function` with these (keyword) arguments.
    Call { function: String, arguments: Value },
    /// The program awaits these calls (its every task waits): run them
    /// concurrently and answer with [`ToWorker::Results`].
    Calls { calls: Vec<BatchCall> },
    /// The program ended.
    Done(Finished),
    /// The answer to [`ToWorker::Ping`].
    Pong,
    /// The program was saved at its pending call, as [`ToWorker::Suspend`] asked:
    /// `snapshot` is the interpreter's state (base64), `printed` what it printed.
    Suspended {
        snapshot: String,
        printed: String,
        output_exceeded: bool,
    },
}

/// One awaited call of a batch: its id in the interpreter, the function and its
/// (keyword) arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BatchCall {
    pub id: u32,
    pub function: String,
    pub arguments: Value,
}

/// How a program ended, as the worker saw it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Finished {
    /// The return value or last expression, when it is JSON.
    pub value: Option<Value>,
    /// Python's `repr` of a result that is not JSON (a set, bytes, a date).
    pub repr: Option<String>,
    /// What the program printed, at most `max_output_bytes`.
    pub printed: String,
    /// The program tried to print more than `max_output_bytes`.
    pub output_exceeded: bool,
    pub error: Option<WorkerError>,
}

/// A program that raised, did not parse, or hit a limit of the interpreter.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerError {
    /// `syntax` (nothing ran), `exception`, or a limit: `interpreter_time`,
    /// `memory`, `recursion`.
    pub kind: String,
    /// The Python exception type.
    pub exception: String,
    pub message: String,
    /// The traceback as CPython prints it.
    pub traceback: String,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

pub(crate) fn read_frame<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> io::Result<T> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = frame_len(len)?;
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

pub(crate) fn write_frame<T: Serialize>(output: &mut impl Write, message: &T) -> io::Result<()> {
    output.write_all(&frame(message)?)?;
    output.flush()
}

/// A message as one frame, header and body in one buffer, so that it goes out
/// in one write and wakes the reader once.
fn frame<T: Serialize>(message: &T) -> io::Result<Vec<u8>> {
    let mut frame = Vec::with_capacity(256);
    frame.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut frame, message)?;
    let header = frame_header(frame.len() - 4)?;
    frame[..4].copy_from_slice(&header);
    Ok(frame)
}

pub(crate) async fn read_frame_async<T: for<'de> Deserialize<'de>>(
    input: &mut (impl AsyncRead + Unpin),
) -> io::Result<T> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len).await?;
    let len = frame_len(len)?;
    let mut body = vec![0u8; len];
    input.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

pub(crate) async fn write_frame_async<T: Serialize>(
    output: &mut (impl AsyncWrite + Unpin),
    message: &T,
) -> io::Result<()> {
    output.write_all(&frame(message)?).await?;
    output.flush().await
}

fn frame_len(header: [u8; 4]) -> io::Result<usize> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is longer than the {MAX_FRAME} bytes allowed"),
        ));
    }
    Ok(len)
}

fn frame_header(len: usize) -> io::Result<[u8; 4]> {
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {len} bytes is longer than the {MAX_FRAME} bytes allowed"),
        ));
    }
    Ok((len as u32).to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_frame_reads_back_as_written() {
        let mut buf = Vec::new();
        let message = FromWorker::Call {
            function: "lookup".into(),
            arguments: json!({"id": 18446744073709551615u64, "name": "año"}),
        };
        write_frame(&mut buf, &message).unwrap();
        let back: FromWorker = read_frame(&mut buf.as_slice()).unwrap();
        let FromWorker::Call { arguments, .. } = back else {
            panic!("not a call")
        };
        assert_eq!(
            arguments,
            json!({"id": 18446744073709551615u64, "name": "año"})
        );
    }

    #[test]
    fn an_oversized_frame_is_refused_before_it_is_read() {
        let header = ((MAX_FRAME + 1) as u32).to_be_bytes();
        let error = read_frame::<Value>(&mut header.as_slice()).unwrap_err();
        assert!(error.to_string().contains("longer than"), "{error}");
    }
}
