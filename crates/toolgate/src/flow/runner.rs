//! Runs a spec file's `tests:` offline: each script against the real gate, with
//! every tool mocked (its canned `response`), a fixed clock and a fresh in-memory
//! store, so the same file gives the same results on any machine.
//!
//! Approvals: a call the policy or a `confirm:` sends to a person is approved by
//! the runner and run, unless the call says `approval: deny` (it is denied) or
//! `approval: wait`, or the next event expects `outcome: pending_approval` (it is
//! left waiting).

use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use serde_json::{Map, Value};
use toolgate_core::flow::{
    Approval, Event, Expect, ExpectedOutcome, Flow, FlowView, Monitor, StepStatus, TestScript,
    ToolStatus,
};
use toolgate_core::spec::{BindingKind, Document, SpecFile};
use toolgate_core::{Catalog, OutputLabel, Principal, ToolOutput};

use crate::gate::{Gate, Outcome, ToolCall};
use crate::store::{ApprovalStore, AuditLog, MemoryGateStore, StateStore};

/// The time every test runs at, as the gate's clock: 2024-05-18T10:00:00Z.
pub const TEST_CLOCK: Duration = Duration::from_secs(1_716_026_400);

/// The session every test's conversation runs in (each test has its own store).
const SESSION: &str = "test";

/// The results of one spec file's tests.
#[derive(Debug, Clone)]
pub struct FileTests {
    /// The file, as named on the command line.
    pub file: String,
    /// Each test's result, in the order the file declares them.
    pub results: Vec<TestResult>,
}

/// How one scripted test ended.
#[derive(Debug, Clone)]
pub struct TestResult {
    /// The test's name in the spec file.
    pub name: String,
    /// Where it diverged; `None` when it passed.
    pub failure: Option<TestFailure>,
    /// Wall-clock time it took (the gate's clock is fixed; this one is not).
    pub duration: Duration,
    /// The calls it made up to where it stopped, in order.
    pub calls: Vec<ScriptedCall>,
}

/// One call a test made, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedCall {
    /// The tool called.
    pub tool: String,
    /// How it ended: `ok`, `denied`, `blocked`, `pending_approval`, `error`...
    pub status: String,
    /// Whether a person was asked to approve it.
    pub asked: bool,
}

impl TestResult {
    /// Whether the test ran to its end without diverging.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

/// The event where a test diverged, and everything needed to see why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestFailure {
    /// The event, from 1.
    pub event: usize,
    /// How many events the test has.
    pub events: usize,
    /// Its line in the spec file.
    pub line: Option<usize>,
    /// The event, as written (JSON flow style).
    pub written: String,
    /// What did not match, one sentence each.
    pub problems: Vec<String>,
    /// The conversation up to and including the event, one line per event.
    pub transcript: Vec<String>,
    /// Where the monitor stood: steps, calls and state.
    pub monitor: Vec<String>,
    /// For each tool or step concerned, the rule and guard that did not hold.
    pub why: Vec<String>,
}

/// Runs the tests of one spec file.
pub struct TestRunner {
    spec: SpecFile,
    doc: Option<Document>,
    file: String,
    skills: Option<Arc<crate::skills::Skills>>,
}

/// The last call of a test: its tool, how it ended, and the audit's word for it.
struct LastCall {
    tool: String,
    outcome: Outcome,
    status: String,
}

impl TestRunner {
    /// A runner for `spec`, read from `text` (for line numbers) at `file`. Every
    /// tool runs as a mock: HTTP and MCP bindings and MCP servers are left out.
    pub fn new(spec: &SpecFile, text: &str, file: &str) -> Self {
        let mut spec = spec.clone();
        for tool in &mut spec.tools {
            // A bound tool's results keep their labels as a mock's.
            if tool.output.is_none() && tool.binding_kind() != BindingKind::Mock {
                tool.output = Some(ToolOutput::One(OutputLabel::Untrusted));
            }
            tool.http = None;
            tool.mcp = None;
        }
        spec.mcp_servers.clear();
        TestRunner {
            spec,
            doc: Document::parse(text).ok(),
            file: file.to_owned(),
            skills: None,
        }
    }

    /// Offers `skills` through `read_skill` in every test (the spec's, as
    /// [`SpecSource`](crate::spec::SpecSource) read them).
    pub fn with_skills(mut self, skills: Arc<crate::skills::Skills>) -> Self {
        self.skills = (!skills.is_empty()).then_some(skills);
        self
    }

    /// Runs every test, in file order.
    pub async fn run_all(&self) -> FileTests {
        let mut results = Vec::new();
        for (i, test) in self.spec.tests.iter().enumerate() {
            results.push(self.run(i, test).await);
        }
        FileTests {
            file: self.file.clone(),
            results,
        }
    }

    /// Runs test `index`, stopping at the first event that does not hold.
    pub async fn run(&self, index: usize, test: &TestScript) -> TestResult {
        let started = Instant::now();
        let mut calls = Vec::new();
        let failure = self.script(index, test, &mut calls).await.err();
        TestResult {
            name: test.name.clone(),
            failure,
            duration: started.elapsed(),
            calls,
        }
    }

    fn failure(
        &self,
        index: usize,
        test: &TestScript,
        event: usize,
        problems: Vec<String>,
    ) -> TestFailure {
        let line = self.doc.as_ref().and_then(|doc| {
            let span = doc.value_span(&format!("/tests/{index}/events/{event}"))?;
            Some(doc.line_of(span.offset))
        });
        TestFailure {
            event: event + 1,
            events: test.events.len(),
            line,
            written: test.events.get(event).map(written).unwrap_or_default(),
            problems,
            transcript: Vec::new(),
            monitor: Vec::new(),
            why: Vec::new(),
        }
    }

    async fn script(
        &self,
        index: usize,
        test: &TestScript,
        calls: &mut Vec<ScriptedCall>,
    ) -> Result<(), TestFailure> {
        let store = Arc::new(MemoryGateStore::default());
        let catalog = crate::spec_tool::spec_catalog(&self.spec, &self.file, &Catalog::new())
            .map_err(|e| {
                self.failure(
                    index,
                    test,
                    0,
                    vec![format!("the tools cannot be loaded: {e}")],
                )
            })?;
        let mut builder = Gate::builder(catalog);
        if let Some(skills) = &self.skills {
            builder = builder.skills(skills.clone());
        }
        let gate = builder
            .spec(&self.spec)
            .store(store.clone())
            .clock(|| UNIX_EPOCH + TEST_CLOCK)
            .build();
        let principal = match test.principal.as_deref() {
            None | Some("operator") => Principal::operator(),
            Some(id) => match self.spec.principals.get(id) {
                Some(declared) => declared.to_principal(id),
                None => {
                    let problem =
                        format!("no principal is named `{id}`; declare it under `principals:`");
                    return Err(self.failure(index, test, 0, vec![problem]));
                }
            },
        };
        let now = || UNIX_EPOCH + TEST_CLOCK;
        let mut transcript: Vec<String> = Vec::new();
        let mut last: Option<LastCall> = None;
        for (j, event) in test.events.iter().enumerate() {
            let line = match event {
                Event::User(text) => format!("user: {text}"),
                Event::Set(pairs) => {
                    let writes: Vec<(String, Value)> =
                        pairs.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    if let Err(e) = store.apply(SESSION, &writes) {
                        let mut f = self.failure(
                            index,
                            test,
                            j,
                            vec![format!("the state could not be set: {e}")],
                        );
                        f.transcript = transcript;
                        return Err(f);
                    }
                    let shown: Vec<String> =
                        pairs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    format!("set {}", shown.join(", "))
                }
                Event::Call(call) => {
                    let wait = matches!(
                        test.events.get(j + 1),
                        Some(Event::Expect(Expect {
                            outcome: Some(ExpectedOutcome::PendingApproval),
                            ..
                        }))
                    );
                    let approval = call.approval.unwrap_or(if wait {
                        Approval::Wait
                    } else {
                        Approval::Approve
                    });
                    let make = || {
                        ToolCall::new(
                            format!("test-{}-{}", index + 1, j + 1),
                            &call.tool,
                            Value::Object(call.args.clone()),
                        )
                    };
                    let mut outcome = gate.call(SESSION, make(), &principal).await;
                    let asked = matches!(outcome, Outcome::PendingApproval { .. });
                    let mut note = String::new();
                    if let Outcome::PendingApproval { approval_id, .. } = &outcome {
                        let answered = match approval {
                            Approval::Wait => None,
                            Approval::Approve => {
                                Some(("approved", store.approve(approval_id, None, now())))
                            }
                            Approval::Deny => Some((
                                "denied",
                                store.deny(approval_id, Some("the test script denies it"), now()),
                            )),
                        };
                        if let Some((word, answer)) = answered {
                            if let Err(e) = answer {
                                let mut f = self.failure(
                                    index,
                                    test,
                                    j,
                                    vec![format!("the approval could not be answered: {e}")],
                                );
                                f.transcript = transcript;
                                return Err(f);
                            }
                            note = format!(" (asked for approval: {word} by the test runner)");
                            outcome = gate.call(SESSION, make(), &principal).await;
                        }
                    }
                    // A background call's script goes on with what it came to.
                    if let Outcome::Started { task_id } = &outcome {
                        outcome = match gate
                            .await_task(task_id, std::time::Duration::from_secs(86_400), &principal)
                            .await
                        {
                            Ok(task) => task.outcome.unwrap_or(outcome),
                            Err(e) => Outcome::error(e.to_string(), false),
                        };
                    }
                    let status = match (&outcome, store.tail(1)) {
                        (Outcome::Denied { .. }, Ok(tail))
                            if tail.last().and_then(|r| r.entry.outcome.as_deref())
                                == Some("blocked") =>
                        {
                            "blocked".to_owned()
                        }
                        _ => outcome.status().to_owned(),
                    };
                    let args = if call.args.is_empty() {
                        String::new()
                    } else {
                        format!(" {}", Value::Object(call.args.clone()))
                    };
                    let line = format!(
                        "call {}{args}{note} → {}",
                        call.tool,
                        outcome_words(&outcome, &status)
                    );
                    calls.push(ScriptedCall {
                        tool: call.tool.clone(),
                        status: status.clone(),
                        asked,
                    });
                    last = Some(LastCall {
                        tool: call.tool.clone(),
                        outcome,
                        status,
                    });
                    line
                }
                Event::Expect(expect) => {
                    let view = match view_of(&gate) {
                        Ok(view) => view,
                        Err(problem) => {
                            let mut f = self.failure(index, test, j, vec![problem]);
                            f.transcript = transcript;
                            return Err(f);
                        }
                    };
                    let state = gate.state(SESSION).unwrap_or_default();
                    let problems = compare(expect, &view, &state, last.as_ref());
                    if !problems.is_empty() {
                        transcript.push(format!(
                            "expect {} ✗",
                            written(event).trim_start_matches("expect: ")
                        ));
                        let mut f = self.failure(index, test, j, problems);
                        f.transcript = transcript;
                        f.monitor = monitor_lines(&gate, &view, &state);
                        f.why = why_lines(expect, &view, last.as_ref());
                        return Err(f);
                    }
                    "expect ✓".to_owned()
                }
            };
            transcript.push(line);
        }
        Ok(())
    }
}

/// The monitor's view of the test's conversation (every tool allowed without a flow).
fn view_of(gate: &Gate) -> Result<FlowView, String> {
    let no_flow = Flow::default();
    let flow = gate.flow().unwrap_or(&no_flow);
    let state = gate
        .state(SESSION)
        .map_err(|e| format!("the state could not be read: {e}"))?;
    let history: Vec<_> = gate
        .history(SESSION)
        .map_err(|e| format!("the call history could not be read: {e}"))?
        .iter()
        .map(Into::into)
        .collect();
    Ok(Monitor::new(flow).view(&state, &history, gate.catalog().iter().map(|t| t.name())))
}

/// Every way the conversation differs from `expect`.
fn compare(
    expect: &Expect,
    view: &FlowView,
    state: &Map<String, Value>,
    last: Option<&LastCall>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for tool in &expect.allowed {
        if let Some(reason) = view.status(tool).reason() {
            problems.push(format!(
                "{tool} should be allowed, but it is blocked: {reason}"
            ));
        }
    }
    for tool in &expect.blocked {
        if view.is_allowed(tool) {
            problems.push(format!("{tool} should be blocked, but it is allowed"));
        }
    }
    for (word, want, have) in [
        ("active", &expect.active, view.active()),
        ("done", &expect.done, view.done()),
    ] {
        let Some(want) = want else { continue };
        let mut want_sorted: Vec<&str> = want.iter().map(String::as_str).collect();
        want_sorted.sort_unstable();
        let mut have_sorted = have.clone();
        have_sorted.sort_unstable();
        if want_sorted != have_sorted {
            problems.push(format!(
                "the {word} steps should be {}, but are {}",
                step_list(want.iter().map(String::as_str)),
                step_list(have.iter().copied())
            ));
        }
    }
    for (key, want) in &expect.state {
        let have = state.get(key).unwrap_or(&Value::Null);
        if !crate::flow::values_equal(have, want) {
            let have = if have.is_null() {
                "not set".to_owned()
            } else {
                format!("{have}")
            };
            let want = if want.is_null() {
                "not set".to_owned()
            } else {
                format!("{want}")
            };
            problems.push(format!("state `{key}` should be {want}, but is {have}"));
        }
    }
    if let (Some(want), Some(last)) = (expect.outcome, last) {
        let matches = match want {
            ExpectedOutcome::Ok => matches!(last.outcome, Outcome::Ok { .. }),
            ExpectedOutcome::Error => matches!(last.outcome, Outcome::Error { .. }),
            ExpectedOutcome::Denied => matches!(last.outcome, Outcome::Denied { .. }),
            ExpectedOutcome::Blocked => last.status == "blocked",
            ExpectedOutcome::PendingApproval => {
                matches!(last.outcome, Outcome::PendingApproval { .. })
            }
        };
        if !matches {
            problems.push(format!(
                "the {} call should have ended `{}`, but it ended {}",
                last.tool,
                want.as_str(),
                outcome_words(&last.outcome, &last.status).replacen(
                    &last.status,
                    &format!("`{}`", last.status),
                    1
                )
            ));
        }
    }
    if let (Some(want), Some(last)) = (&expect.message, last) {
        let message = last.outcome.message_for_model();
        if !message.contains(want.as_str()) {
            problems.push(format!(
                "the message of the {} call should contain \"{want}\", but it is \"{}\"",
                last.tool,
                shorten(&message, 300)
            ));
        }
    }
    problems
}

fn step_list<'a>(steps: impl Iterator<Item = &'a str>) -> String {
    let steps: Vec<String> = steps.map(|s| format!("`{s}`")).collect();
    if steps.is_empty() {
        "none".into()
    } else {
        steps.join(", ")
    }
}

/// How a call ended, in one line; approval ids are left out (they are random).
fn outcome_words(outcome: &Outcome, status: &str) -> String {
    match outcome {
        Outcome::Ok { text, .. } => format!("ok: {}", shorten(text, 120)),
        Outcome::Error { message, .. } => format!("error: {message}"),
        Outcome::PendingApproval { reason, .. } => format!("pending_approval: {reason}"),
        Outcome::Denied { reason } => format!("{status}: {reason}"),
        Outcome::Started { task_id } => format!("started: task {task_id}"),
        Outcome::RateLimited { limit, .. } => format!("rate_limited: {limit}"),
        Outcome::Unknown { message, .. } => format!("unknown: {message}"),
    }
}

/// At most `max` characters, with `…` where it was cut.
fn shorten(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// Where the monitor stood: steps, what is required, the calls so far, the state.
fn monitor_lines(gate: &Gate, view: &FlowView, state: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if gate.flow().is_some() {
        out.push(format!(
            "active steps: {}",
            step_list(view.active().into_iter())
        ));
        out.push(format!(
            "done steps: {}",
            step_list(view.done().into_iter())
        ));
        for step in view
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Waiting)
        {
            out.push(format!("waiting: `{}`: {}", step.id, step.why.join("; ")));
        }
        for required in &view.required {
            out.push(format!(
                "required: {} (because {})",
                required.tool, required.because
            ));
        }
        if let Some(step) = &view.finished_by {
            out.push(format!("finished: terminal step `{step}` is done"));
        }
    } else {
        out.push("no flow: every tool is allowed".into());
    }
    let calls: Vec<String> = gate
        .history(SESSION)
        .unwrap_or_default()
        .iter()
        .map(|c| format!("{} {}", c.tool, if c.ok { "ok" } else { "failed" }))
        .collect();
    out.push(format!(
        "calls: {}",
        if calls.is_empty() {
            "none".into()
        } else {
            calls.join(", ")
        }
    ));
    let state: Vec<String> = state
        .iter()
        .map(|(k, v)| format!("{k} = {}", shorten(&v.to_string(), 60)))
        .collect();
    out.push(format!(
        "state: {}",
        if state.is_empty() {
            "empty".into()
        } else {
            state.join(", ")
        }
    ));
    out
}

/// For each tool and step the failing expectation names, the rule and the guard
/// behind its status.
fn why_lines(expect: &Expect, view: &FlowView, last: Option<&LastCall>) -> Vec<String> {
    let mut tools: Vec<&str> = expect
        .allowed
        .iter()
        .chain(&expect.blocked)
        .map(String::as_str)
        .collect();
    if let Some(last) = last.filter(|_| expect.outcome.is_some() || expect.message.is_some()) {
        tools.push(&last.tool);
    }
    let mut out: Vec<String> = Vec::new();
    for tool in tools {
        let line = match view.status(tool) {
            ToolStatus::Blocked { reason, details } => {
                let mut line = format!("{tool} is blocked: {reason}");
                for detail in details {
                    line.push_str(&format!("\n  - {detail}"));
                }
                line
            }
            ToolStatus::Allowed { confirm } => {
                let mut line = format!("{tool} is allowed");
                let by: Vec<&str> = view
                    .steps
                    .iter()
                    .filter(|s| s.status == StepStatus::Active)
                    .map(|s| s.id.as_str())
                    .collect();
                if !by.is_empty() {
                    line.push_str(&format!(" (active steps: {})", step_list(by.into_iter())));
                }
                if let Some(confirm) = confirm {
                    line.push_str(&format!("; {confirm}"));
                }
                line
            }
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    let steps = expect
        .active
        .iter()
        .flatten()
        .chain(expect.done.iter().flatten());
    for id in steps {
        if let Some(step) = view.steps.iter().find(|s| &s.id == id)
            && step.status == StepStatus::Waiting
        {
            let line = format!("step `{id}` is waiting: {}", step.why.join("; "));
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

/// An event as written, in JSON flow style (which YAML reads too).
fn written(event: &Event) -> String {
    match serde_json::to_value(event) {
        Ok(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => event.kind().to_owned(),
    }
}
