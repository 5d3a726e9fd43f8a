//! `toolgate test`'s text output: a line per test, a trace for each failure (the
//! event where it diverged, the conversation so far, where the monitor stood and
//! the guard that did not hold), and the summary line `N passed, N failed`.

use std::fmt::Write as _;

use super::runner::{FileTests, TestFailure};

/// The lines of one file's results. `header` prints the file's name first (when
/// several files are tested).
pub fn render_tests(tests: &FileTests, header: bool) -> String {
    let mut out = String::new();
    if header {
        let _ = writeln!(out, "{}", tests.file);
    }
    for result in &tests.results {
        match &result.failure {
            None => {
                let _ = writeln!(out, "ok    {}", result.name);
            }
            Some(failure) => {
                let _ = writeln!(out, "FAIL  {}", result.name);
                out.push_str(&render_failure(&tests.file, failure));
            }
        }
    }
    out
}

/// The trace of one failure, indented under its test's line.
pub fn render_failure(file: &str, failure: &TestFailure) -> String {
    let mut out = String::new();
    let at = match failure.line {
        Some(line) => format!("{file}:{line}"),
        None => file.to_owned(),
    };
    let _ = writeln!(
        out,
        "      at event {} of {} ({at}): {}",
        failure.event, failure.events, failure.written
    );
    for problem in &failure.problems {
        let _ = writeln!(out, "      - {problem}");
    }
    let sections = [
        ("the conversation so far", &failure.transcript, true),
        ("the monitor at this event", &failure.monitor, false),
        ("why", &failure.why, false),
    ];
    for (title, lines, numbered) in sections {
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(out, "      {title}:");
        for (i, line) in lines.iter().enumerate() {
            let mut parts = line.lines();
            let first = parts.next().unwrap_or_default();
            if numbered {
                let _ = writeln!(out, "        {:>2}. {first}", i + 1);
            } else {
                let _ = writeln!(out, "        {first}");
            }
            for rest in parts {
                let _ = writeln!(out, "        {rest}");
            }
        }
    }
    out
}

/// The closing line: exactly `N passed, N failed`.
pub fn summary_line(passed: usize, failed: usize) -> String {
    format!("{passed} passed, {failed} failed")
}
