//! How a program run ended, as the caller and the model see it: a value, an
//! error naming what went wrong (a limit, an exception, a syntax error), or a
//! pause for a person's approval with the run id that resumes it.

use serde::Serialize;
use serde_json::Value;
use toolgate_core::{SanitizeOptions, sanitize_output};

use super::limits::CodeLimits;

/// How a program run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeRun {
    /// `ok`; `error` with [`CodeRun::error`] saying why; or `pending_approval`:
    /// the program is paused at a call that waits for [`CodeRun::approval_id`],
    /// and resumes with [`super::CodeMode::resume`] of [`CodeRun::run_id`].
    pub status: &'static str,
    /// The program's run id, for a paused program (what `resume_code` takes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The approval a paused program waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// Why policy asks, and the tool of the waiting call, for a paused program.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<Waiting>,
    /// The return value or last expression, when it is JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Python's `repr` of a result that is not JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repr: Option<String>,
    /// What the program printed (at most `max_output_bytes`).
    pub printed: String,
    /// Why the program did not finish with a value; `None` when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<CodeError>,
    /// Tool calls the program made.
    pub calls: usize,
}

/// The call a paused program waits at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waiting {
    /// The tool the call is to, by its catalog name.
    pub tool: String,
    /// Why it waits: the policy's reason for asking a person.
    pub reason: String,
}

/// Why a program did not finish with a value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CodeError {
    /// `syntax` (nothing ran), `exception` (raised and not caught), `limit`,
    /// `worker` (the worker could not run or broke its protocol), or `resume`
    /// (a paused program could not be resumed: unknown, finished, another
    /// principal's, or its snapshot's seal does not match).
    pub kind: &'static str,
    /// For a limit: `wall_clock`, `interpreter_time`, `max_calls`,
    /// `max_output_bytes`, `max_memory_bytes`, `max_recursion_depth`,
    /// `max_suspensions`.
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
    /// The program line the error is at (1-based), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// The column on that line (1-based), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
}

impl CodeRun {
    pub(super) fn new() -> Self {
        CodeRun {
            status: "ok",
            run_id: None,
            approval_id: None,
            waiting_for: None,
            value: None,
            repr: None,
            printed: String::new(),
            error: None,
            calls: 0,
        }
    }

    /// Whether the program finished with a value (status `ok`), neither failing nor paused.
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }

    /// Whether the program is paused for approval.
    pub fn is_pending(&self) -> bool {
        self.status == "pending_approval"
    }

    /// What to tell the model: the result and what was printed, or the error and
    /// traceback; sanitized and fenced as untrusted output, and capped.
    pub fn text_for_model(&self, max_chars: usize) -> String {
        let mut text = String::new();
        match &self.error {
            None if self.is_pending() => {
                let (tool, reason) = self
                    .waiting_for
                    .as_ref()
                    .map_or(("a tool", ""), |w| (w.tool.as_str(), w.reason.as_str()));
                text.push_str(&format!(
                    "pending_approval: the program is paused at its call of {tool}, which needs a \
                     person's approval ({reason}; approval id {}). Tell the user what waits for \
                     approval. Once it is answered, call resume_code with run_id \"{}\" to go on \
                     from that call: approved, the call runs and the program continues; denied, \
                     the call raises PermissionError. Do not run the program again.",
                    self.approval_id.as_deref().unwrap_or("unknown"),
                    self.run_id.as_deref().unwrap_or("unknown"),
                ));
            }
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

impl CodeRun {
    /// The run is paused at `paused`'s call.
    pub(super) fn pending(&mut self, paused: &crate::store::PausedRun) {
        self.status = "pending_approval";
        self.run_id = Some(paused.run_id.clone());
        self.approval_id = Some(paused.approval_id.clone());
        self.waiting_for = Some(Waiting {
            tool: paused.tool.clone(),
            reason: paused.reason.clone(),
        });
        self.printed = paused.printed.clone();
        self.calls = usize::try_from(paused.calls).unwrap_or(usize::MAX);
        self.value = None;
        self.repr = None;
        self.error = None;
    }

    pub(super) fn fail(&mut self, error: CodeError) {
        self.status = "error";
        self.run_id = None;
        self.approval_id = None;
        self.waiting_for = None;
        self.value = None;
        self.repr = None;
        self.error = Some(error);
    }
}

/// Where a limit is set and what it is now.
pub(super) fn raise_hint(limit: &str, limits: &CodeLimits) -> String {
    let now = match limit {
        "wall_clock" => humantime::format_duration(limits.wall_clock).to_string(),
        "interpreter_time" => humantime::format_duration(limits.interpreter_time).to_string(),
        "max_calls" => limits.max_calls.to_string(),
        "max_output_bytes" => limits.max_output_bytes.to_string(),
        "max_memory_bytes" => limits.max_memory_bytes.to_string(),
        "max_recursion_depth" => limits.max_recursion_depth.to_string(),
        "max_suspensions" => limits.max_suspensions.to_string(),
        "approval_wait" => humantime::format_duration(limits.approval_wait).to_string(),
        "max_workers" => limits.max_workers.to_string(),
        "max_workers_per_principal" => limits.max_workers_per_principal.to_string(),
        _ => String::new(),
    };
    format!(
        " (limit `code_mode.{limit}` is {now}; the operator can raise it in the spec file's `code_mode:` section)"
    )
}

/// A limit's error: what happened, the limit's setting and how to raise it.
pub(super) fn limit_error(limits: &CodeLimits, name: &'static str, message: String) -> CodeError {
    CodeError {
        kind: "limit",
        limit: Some(name),
        exception: None,
        message: format!("{message}{}", raise_hint(name, limits)),
        traceback: String::new(),
        line: None,
        column: None,
    }
}

pub(super) fn worker_error(message: String) -> CodeError {
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

/// A paused program that could not be resumed.
pub(super) fn resume_error(message: String) -> CodeError {
    CodeError {
        kind: "resume",
        ..worker_error(message)
    }
}
