//! `toolgate test` runs a spec file's scripted conversations offline; `toolgate
//! flow` draws a flow and shows where a conversation stands in it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Value, json};
use toolgate::flow::{
    BrokenFile, FileTests, FlowView, StepStatus, TestRunner, ToolStatus, junit_xml, mermaid,
    render_tests, summary_line,
};
use toolgate::policy::{RuleOfTwo, Seen, SeenLabel};
use toolgate::{Catalog, spec::SpecSource};

use crate::context::CommandResult;
use crate::context::load;
use crate::context::{SpecArgs, StateArgs, open_gate, open_store};
use crate::output::print_json;

/// What `toolgate flow` does.
#[derive(Subcommand)]
pub enum FlowAction {
    /// Print the flow as a Mermaid flowchart.
    Graph,
    /// Where a conversation stands: active and done steps, and each tool allowed or blocked.
    Status,
}

/// `toolgate test [FILE | DIR] [--junit FILE]`.
pub fn test(args: &SpecArgs, path: Option<&Path>, junit: Option<&Path>) -> CommandResult {
    let target = path.unwrap_or(&args.file);
    let files = if target.is_dir() {
        let found = spec_files_with_tests(target);
        if found.is_empty() {
            return Err(format!(
                "no spec file under {} has a `tests:` section",
                target.display()
            ));
        }
        found
    } else {
        vec![target.to_path_buf()]
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let several = files.len() > 1;
    let mut done: Vec<FileTests> = Vec::new();
    let mut broken: Vec<BrokenFile> = Vec::new();
    for file in &files {
        let source = SpecSource::read(file).map_err(|e| e.to_string())?;
        let name = file.display().to_string();
        let spec = match (&source.checked.spec, source.checked.is_ok()) {
            (Some(spec), true) => spec,
            _ => {
                let message = source.render_diagnostics();
                if !args.json {
                    say!("{message}");
                    sayln!("FAIL  {name} does not check clean; fix it first");
                }
                broken.push(BrokenFile {
                    file: name,
                    message,
                });
                continue;
            }
        };
        if spec.tests.is_empty() {
            if several {
                continue;
            }
            return Err(format!(
                "{name} has no `tests:` section; add scripted conversations under `tests:` (see examples/helpdesk/toolgate.yaml)"
            ));
        }
        let tests = runtime.block_on(
            TestRunner::new(spec, &source.text, &name)
                .with_skills(crate::context::spec_skills(&source))
                .run_all(),
        );
        if !args.json {
            say!("{}", render_tests(&tests, several));
        }
        done.push(tests);
    }
    let passed = done
        .iter()
        .flat_map(|f| &f.results)
        .filter(|r| r.passed())
        .count();
    let failed = done
        .iter()
        .flat_map(|f| &f.results)
        .filter(|r| !r.passed())
        .count()
        + broken.len();
    if let Some(junit) = junit {
        std::fs::write(junit, junit_xml(&done, &broken)).map_err(|e| {
            format!(
                "cannot write the JUnit report to {}: {e}; check that its directory exists",
                junit.display()
            )
        })?;
    }
    if args.json {
        print_json(&json!({
            "files": done.iter().map(file_json).collect::<Vec<_>>(),
            "broken": broken.iter().map(|b| b.file.clone()).collect::<Vec<_>>(),
            "passed": passed,
            "failed": failed,
        }));
    } else {
        sayln!("{}", summary_line(passed, failed));
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn file_json(file: &FileTests) -> Value {
    let tests: Vec<Value> = file
        .results
        .iter()
        .map(|r| match &r.failure {
            None => json!({"name": r.name, "passed": true}),
            Some(f) => json!({
                "name": r.name,
                "passed": false,
                "event": f.event,
                "line": f.line,
                "written": f.written,
                "problems": f.problems,
                "transcript": f.transcript,
                "monitor": f.monitor,
                "why": f.why,
            }),
        })
        .collect();
    json!({"file": file.file, "tests": tests})
}

/// Spec files under `dir` (not in hidden directories or `target/`) whose document
/// has a top-level `tests:` key, in path order.
fn spec_files_with_tests(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "node_modules" {
                    pending.push(path);
                }
            } else if [".yaml", ".yml", ".json"].iter().any(|e| name.ends_with(e))
                && has_tests(&path)
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn has_tests(path: &Path) -> bool {
    // A named pipe among the files would block the search for test files.
    let Ok(text) = toolgate::files::read_regular_file(path) else {
        return false;
    };
    // A cheap look before parsing: only files that mention `tests` at all.
    text.contains("tests")
        && toolgate::spec::Document::parse(&text).is_ok_and(|doc| doc.value.get("tests").is_some())
}

/// `toolgate flow graph | status`.
pub fn flow(args: &SpecArgs, state: &StateArgs, action: FlowAction) -> CommandResult {
    let (spec, source) = load(args)?;
    let no_flow = || {
        format!(
            "{} has no `flow:` section; `toolgate schema` shows its format",
            args.file.display()
        )
    };
    match action {
        FlowAction::Graph => {
            let Some(flow) = &spec.flow else {
                return Err(no_flow());
            };
            say!("{}", mermaid(flow));
        }
        FlowAction::Status => {
            // Without a flow there is still what the conversation has seen, when
            // its tools carry labels; with neither, there is nothing to show.
            if spec.flow.is_none()
                && !open_gate(&spec, &source, &Catalog::new(), None)?.carries_labels()
            {
                return Err(no_flow());
            }
            let store = open_store(args, state)?;
            let gate = open_gate(&spec, &source, &Catalog::new(), Some(store))?;
            let view = gate.flow_view(&state.session).map_err(|e| e.to_string())?;
            let seen = gate.seen(&state.session).map_err(|e| e.to_string())?;
            if view.is_none() && seen.is_empty() {
                return Err(no_flow());
            }
            let ahead = gate.rule_of_two_ahead(&seen);
            if args.json {
                print_json(&status_json(view.as_ref(), &seen, ahead)?);
                return Ok(ExitCode::SUCCESS);
            }
            if let Some(view) = &view {
                print_view(view);
            }
            if !seen.is_empty() {
                say!("{}", seen_text(&seen, ahead, view.is_some()));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_view(view: &FlowView) {
    for step in &view.steps {
        let status = match step.status {
            StepStatus::Active => "active ",
            StepStatus::Done => "done   ",
            StepStatus::Waiting => "waiting",
        };
        let why = if step.why.is_empty() {
            String::new()
        } else {
            format!("  ({})", step.why.join("; "))
        };
        sayln!("{status}  {}{why}", step.id);
    }
    for required in &view.required {
        sayln!("required  {} (because {})", required.tool, required.because);
    }
    let width = view.tools.keys().map(String::len).max().unwrap_or(0);
    for (tool, status) in &view.tools {
        match status {
            ToolStatus::Allowed { confirm: None } => sayln!("  {tool:width$}  allowed"),
            ToolStatus::Allowed {
                confirm: Some(confirm),
            } => sayln!("  {tool:width$}  allowed; {confirm}"),
            ToolStatus::Blocked { reason, .. } => {
                sayln!("  {tool:width$}  blocked: {reason}")
            }
        }
    }
}

/// `flow status --json`: the flow's view (when there is a flow), with `seen`
/// and `rule_of_two` beside it once the conversation has seen something.
fn status_json(
    view: Option<&FlowView>,
    seen: &Seen,
    ahead: Option<RuleOfTwo>,
) -> Result<Value, String> {
    let mut out = match view {
        Some(view) => serde_json::to_value(view).map_err(|e| e.to_string())?,
        None => json!({}),
    };
    if let Value::Object(fields) = &mut out {
        if !seen.is_empty() {
            fields.insert(
                "seen".into(),
                json!({"untrusted": seen.untrusted, "private": seen.private}),
            );
        }
        if let Some(rule) = ahead {
            fields.insert("rule_of_two".into(), json!(rule));
        }
    }
    Ok(out)
}

/// How many of a label's calls `flow status` names before counting the rest.
const SIGHTINGS_SHOWN: usize = 3;

/// The `seen:` section: each label the conversation has seen and the calls
/// that brought it in, then what the rule of two will do with its next act.
/// After a flow's lines it opens with a blank line.
fn seen_text(seen: &Seen, ahead: Option<RuleOfTwo>, after_flow: bool) -> String {
    let mut text = String::new();
    if after_flow {
        text.push('\n');
    }
    text.push_str("seen:\n");
    for label in [SeenLabel::Untrusted, SeenLabel::Private] {
        let sightings = seen.sightings(label);
        if sightings.is_empty() {
            continue;
        }
        let mut calls: Vec<String> = sightings
            .iter()
            .take(SIGHTINGS_SHOWN)
            .map(|s| match time_of_day(&s.time) {
                Some(hm) => format!("{} ({hm})", s.tool),
                None => s.tool.clone(),
            })
            .collect();
        if sightings.len() > SIGHTINGS_SHOWN {
            calls.push(format!("{} more", sightings.len() - SIGHTINGS_SHOWN));
        }
        let name = format!("{label}:");
        text.push_str(&format!("  {name:<10} {}\n", calls.join(", ")));
    }
    match ahead {
        Some(RuleOfTwo::Deny) => text.push_str(
            "  the rule of two: the next call that changes the world or sends data out will be refused\n",
        ),
        Some(_) => text.push_str(
            "  the rule of two: the next call that changes the world or sends data out needs a person's approval\n",
        ),
        None => {}
    }
    text
}

/// `12:03` of an RFC 3339 time (`2026-12-04T12:03:09Z`).
fn time_of_day(time: &str) -> Option<&str> {
    (time.as_bytes().get(10) == Some(&b'T'))
        .then(|| time.get(11..16))
        .flatten()
}
