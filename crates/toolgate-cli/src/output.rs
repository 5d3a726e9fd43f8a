//! What the command prints, and human-readable renderings of tools.
//!
//! Every print goes through here. Text for a person ([`say!`], [`sayln!`],
//! [`tell!`], [`tellln!`], [`show_json`]) has its control and invisible characters
//! shown as escapes (`\x1b` as `\u{1b}`): spec files, upstream servers and models
//! write it, and a terminal would obey an escape sequence (set its title, clear the
//! screen). `--json` output ([`print_json`]) is printed exactly.
//!
//! A closed pipe (`toolgate audit tail | head -1`) ends the output, not the command:
//! SIGPIPE stays ignored (Rust's default), so nothing can kill `call` between its
//! tool's run and the audit record of its completion; a write that fails with
//! `EPIPE` marks that stream closed, later writes to it are dropped, and the
//! command finishes its work and exits with its own status, without a panic.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use serde_json::Value;
use toolgate::spec::{McpBinding, ToolSpec, returns_shape, schema_shape};
use toolgate::{
    ToolDescriptor, sanitize::escape_for_terminal, sanitize::escape_json_for_terminal, tool::Retry,
};

/// Prints to standard output for a person, like `print!`, with control characters
/// shown escaped.
macro_rules! say {
    ($($arg:tt)*) => { $crate::output::to_person($crate::output::Stream::Out, &format!($($arg)*)) };
}

/// [`say!`] with a line break, like `println!`.
macro_rules! sayln {
    ($($arg:tt)*) => { $crate::output::to_person($crate::output::Stream::Out, &format!("{}\n", format_args!($($arg)*))) };
}

/// Prints to standard error for a person, like `eprint!`, with control characters
/// shown escaped.
macro_rules! tell {
    ($($arg:tt)*) => { $crate::output::to_person($crate::output::Stream::Err, &format!($($arg)*)) };
}

/// [`tell!`] with a line break, like `eprintln!`.
macro_rules! tellln {
    ($($arg:tt)*) => { $crate::output::to_person($crate::output::Stream::Err, &format!("{}\n", format_args!($($arg)*))) };
}

/// Where a print goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `text` for a person: control characters shown escaped.
pub fn to_person(stream: Stream, text: &str) {
    write_to(stream, &escape_for_terminal(text));
}

/// Writes `text` as it is, and flushes, so a closed pipe is noticed here. After a
/// failed write the stream is closed for the rest of the run; a failure other than
/// a closed pipe (a full disk) is said once on standard error.
pub fn write_to(stream: Stream, text: &str) {
    let closed = match stream {
        Stream::Out => &STDOUT_CLOSED,
        Stream::Err => &STDERR_CLOSED,
    };
    if closed.load(Ordering::Relaxed) {
        return;
    }
    let written = match stream {
        Stream::Out => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        }
        Stream::Err => {
            let mut err = std::io::stderr().lock();
            err.write_all(text.as_bytes()).and_then(|()| err.flush())
        }
    };
    if let Err(e) = written {
        closed.store(true, Ordering::Relaxed);
        if stream == Stream::Out && e.kind() != std::io::ErrorKind::BrokenPipe {
            write_to(
                Stream::Err,
                &format!("error: cannot write to standard output: {e}\n"),
            );
        }
    }
}

/// Prints `value` as pretty JSON, exactly (`--json`).
pub fn print_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => write_to(Stream::Out, &format!("{text}\n")),
        Err(e) => tellln!("error: cannot print JSON: {e}"),
    }
}

/// Prints `value` as pretty JSON for a person: control and invisible characters in
/// strings are written as `\uXXXX` escapes, so it is still valid JSON with the same
/// value, and a terminal shows them instead of obeying them.
pub fn show_json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => write_to(
            Stream::Out,
            &format!("{}\n", escape_json_for_terminal(&text)),
        ),
        Err(e) => tellln!("error: cannot print JSON: {e}"),
    }
}

/// Prints `rows` as a table for a person: each column as wide as its widest cell,
/// two spaces between columns, no trailing blanks.
pub fn say_table<const N: usize>(rows: &[[String; N]]) {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        sayln!("{}", line.join("  ").trim_end());
    }
}

/// The first line of a text, cut to `max` characters.
pub fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// Everything about one tool, as a page a person reads.
pub fn describe_tool(tool: &ToolSpec, descriptor: &ToolDescriptor) -> String {
    let mut out = String::new();
    let safety = descriptor.safety();
    let _ = writeln!(out, "{}", tool.name);
    if let Some(title) = &tool.title {
        let _ = writeln!(out, "  {title}");
    }
    let _ = writeln!(out, "\n{}\n", tool.description.trim());
    let retry = match safety.retry {
        Retry::Freely => "retried freely",
        Retry::WithSameKey => "retried with the same idempotency key",
        Retry::Never => "never retried",
    };
    let _ = writeln!(
        out,
        "effect      {} (tier {}, {retry})",
        tool.effect(),
        safety.tier
    );
    let _ = writeln!(out, "binding     {}", binding_line(tool));
    if let Some(timeout) = &tool.timeout {
        let _ = writeln!(out, "timeout     {timeout}");
    }
    if tool.is_background() {
        let scheduling = tool
            .scheduling
            .map(|s| format!(", scheduling {}", s.as_str()))
            .unwrap_or_default();
        let _ = writeln!(out, "background  yes{scheduling}");
    }
    let _ = writeln!(out, "\nparameters");
    let schema = &descriptor.input_schema;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match schema.get("properties").and_then(Value::as_object) {
        Some(props) if !props.is_empty() => {
            for (name, sub) in props {
                let need = if required.contains(&name.as_str()) {
                    "required"
                } else {
                    "optional"
                };
                let description = sub
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  {name}: {} ({need}) {description}",
                    schema_shape(sub, schema, 0)
                );
            }
        }
        _ => {
            let _ = writeln!(out, "  (none)");
        }
    }
    let _ = writeln!(out, "\nreturns     {}", returns_shape(tool));
    if !tool.usage.is_empty() {
        let _ = writeln!(out, "\nusage");
        let u = &tool.usage;
        for (label, text) in [
            ("when to use", &u.when_to_use),
            ("when not to", &u.when_not_to),
            ("cost", &u.cost),
            ("example", &u.example),
            ("tier", &u.tier),
        ] {
            if let Some(text) = text {
                let _ = writeln!(out, "  {label:12}{text}");
            }
        }
        for precondition in &u.preconditions {
            let _ = writeln!(out, "  {:12}{precondition}", "requires");
        }
    }
    if !tool.set_state.is_empty() || tool.save_response_as.is_some() {
        let _ = writeln!(out, "\nstate effects");
        for (key, value) in &tool.set_state {
            let _ = writeln!(out, "  sets {key} = {value}");
        }
        if let Some(key) = &tool.save_response_as {
            let _ = writeln!(out, "  saves the response as {key}");
        }
    }
    for example in &tool.examples {
        let _ = writeln!(out, "\nexample     {example}");
    }
    out
}

fn binding_line(tool: &ToolSpec) -> String {
    if let Some(http) = &tool.http {
        return format!("http {}", toolgate::http::binding_summary(http));
    }
    match &tool.mcp {
        Some(McpBinding::Short(server)) => format!("mcp {server}"),
        Some(McpBinding::Full(server)) => {
            let target = server
                .url
                .clone()
                .or_else(|| server.command.clone())
                .unwrap_or_default();
            format!("mcp {target}")
        }
        None => "mock (returns its canned response)".into(),
    }
}
