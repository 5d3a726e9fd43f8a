//! The `code_mode:` section: the limits of a program that a model writes and
//! toolgate runs (`run_code`). Every field is optional; what is left out keeps
//! its default.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::document::Document;

/// The smallest address space a worker may be given: it must still load itself.
pub const MIN_CODE_MEMORY_BYTES: u64 = 128 << 20;

/// Limits of one code-mode program.
///
/// ```yaml
/// code_mode:
///   wall_clock: 2m            # the whole run, tool calls included (default 60s)
///   interpreter_time: 5s      # interpreting, not counting tool calls (default 10s)
///   max_calls: 50             # tool calls (default 100)
///   max_output_bytes: 32768   # printed bytes; the result is capped alike (default 65536)
///   max_memory_bytes: 268435456  # the worker's address space (default 1073741824)
///   max_recursion_depth: 100  # nested Python calls (default 200)
///   max_suspensions: 3        # pauses for approval in one program (default 10)
///   approval_wait: 4h         # how long a paused program waits for its approval (default 24h)
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeModeSection {
    /// The whole run, tool calls included, as a duration (`60s`, `2m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<String>,
    /// Time spent interpreting, not counting time inside tool calls (`10s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter_time: Option<String>,
    /// Tool calls one program may make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_calls: Option<u64>,
    /// Bytes a program may print; its result is capped to as many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
    /// The worker process's address space in bytes (at least 134217728, 128 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_bytes: Option<u64>,
    /// How deep Python calls may nest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_recursion_depth: Option<u64>,
    /// Times one program may pause for a person's approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_suspensions: Option<u64>,
    /// How long a paused program waits for its approval, as a duration (`24h`);
    /// resumed later, the waiting call raises `PermissionError`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_wait: Option<String>,
    /// Programs that may run at once, each in a worker of its own (default:
    /// twice the machine's CPUs); more wait for a slot, up to 10 seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_workers: Option<u64>,
    /// Programs one principal may run at once (default 2); one more is refused
    /// at once, saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_workers_per_principal: Option<u64>,
}

impl CodeModeSection {
    /// True for a section that says nothing (every limit at its default).
    pub fn is_default(&self) -> bool {
        self == &CodeModeSection::default()
    }
}

/// The problems of a `code_mode:` section.
pub(super) fn check_code_mode(doc: &Document, section: &CodeModeSection) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut problem = |field: &str, message: String, help: &str| {
        let path = format!("/code_mode/{field}");
        out.push(
            Diagnostic::error(&path, message)
                .with_help(help.to_owned())
                .with_span(doc.value_span(&path)),
        );
    };
    for (field, value) in [
        ("wall_clock", &section.wall_clock),
        ("interpreter_time", &section.interpreter_time),
        ("approval_wait", &section.approval_wait),
    ] {
        if let Some(text) = value {
            match humantime::parse_duration(text) {
                Ok(d) if d.is_zero() => problem(
                    field,
                    format!("`{field}` is zero, so no program could run"),
                    "write a duration such as `10s`; leave it out for the default",
                ),
                Ok(_) => {}
                Err(e) => problem(
                    field,
                    format!("`{field}` is `{text}`, which is not a duration ({e})"),
                    "write a duration such as `10s` or `2m`",
                ),
            }
        }
    }
    for (field, value) in [
        ("max_calls", section.max_calls),
        ("max_output_bytes", section.max_output_bytes),
        ("max_recursion_depth", section.max_recursion_depth),
        ("max_suspensions", section.max_suspensions),
        ("max_workers", section.max_workers),
        (
            "max_workers_per_principal",
            section.max_workers_per_principal,
        ),
    ] {
        if value == Some(0) {
            problem(
                field,
                format!("`{field}` is 0, so no program could do anything"),
                "write a positive number; leave it out for the default",
            );
        }
    }
    if let Some(bytes) = section.max_memory_bytes
        && bytes < MIN_CODE_MEMORY_BYTES
    {
        problem(
            "max_memory_bytes",
            format!(
                "`max_memory_bytes` is {bytes}, less than the {MIN_CODE_MEMORY_BYTES} bytes (128 MiB) a worker needs to start"
            ),
            "write at least 134217728; leave it out for the default of 1073741824 (1 GiB)",
        );
    }
    out
}
