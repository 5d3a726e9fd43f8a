//! Checks of a spec file's `flow:` and `tests:` for `toolgate check`: names that
//! point nowhere (with "did you mean"), guards that read state nothing writes,
//! steps that can never become active, cycles, and constraints that contradict
//! each other. Every problem is located in the text. The step graph (cycles,
//! reachability) is checked in [`steps`].

use std::collections::{HashMap, HashSet};

use super::guard::join_and;
use super::model::{Ambient, Confirm, Constraint, Flow, Guard};
use super::satisfy::{necessary_successes, satisfiable};
use super::script::{Event, TestScript};
use crate::spec::{Diagnostic, Document, SpecFile, did_you_mean, pointer_segment as segment};

mod steps;

/// Every problem in the file's `flow:` and `tests:` sections.
pub fn check_flow(doc: &Document, spec: &SpecFile) -> Vec<Diagnostic> {
    let mut checks = Checks::new(doc, spec);
    if let Some(flow) = &spec.flow {
        checks.flow(flow);
    }
    checks.tests(&spec.tests);
    checks.out
}

struct Checks<'a> {
    doc: &'a Document,
    spec: &'a SpecFile,
    tools: Vec<&'a str>,
    steps: Vec<&'a str>,
    /// State keys something writes: a tool's `set_state` or `save_response_as`.
    written: HashSet<&'a str>,
    out: Vec<Diagnostic>,
}

/// Where a guard stands: a step's or constraint's (state and history only), or a
/// confirmation's for one tool (which may also compare that tool's arguments).
#[derive(Clone, Copy)]
enum Place<'a> {
    General,
    Confirm(&'a str),
}

impl<'a> Checks<'a> {
    fn new(doc: &'a Document, spec: &'a SpecFile) -> Self {
        let mut written = HashSet::new();
        for tool in &spec.tools {
            written.extend(tool.set_state.keys().map(String::as_str));
            written.extend(tool.save_response_as.as_deref());
        }
        Checks {
            doc,
            spec,
            tools: spec
                .tools
                .iter()
                .map(|t| t.name.as_str())
                // Spec skills are read through the built-in `read_skill`.
                .chain(spec.skills.is_some().then_some(crate::skill::READ_SKILL))
                .collect(),
            steps: spec
                .flow
                .iter()
                .flat_map(|f| f.steps.iter().map(|s| s.id.as_str()))
                .collect(),
            written,
            out: Vec::new(),
        }
    }

    fn push(&mut self, diagnostic: Diagnostic, key: bool) {
        let span = if key {
            self.doc.key_span(&diagnostic.path)
        } else {
            self.doc.value_span(&diagnostic.path)
        };
        self.out.push(diagnostic.with_span(span));
    }

    fn error(&mut self, path: &str, message: String, help: String) {
        self.push(Diagnostic::error(path, message).with_help(help), false);
    }

    fn warning(&mut self, path: &str, message: String, help: String) {
        self.push(Diagnostic::warning(path, message).with_help(help), false);
    }

    fn line_of(&self, path: &str) -> usize {
        let offset = self.doc.value_span(path).map_or(0, |s| s.offset);
        self.doc.line_of(offset)
    }

    fn tool_ref(&mut self, tool: &str, path: &str) {
        if self.tools.contains(&tool) {
            return;
        }
        let help = did_you_mean(tool, self.tools.iter().copied())
            .unwrap_or_else(|| "name a tool declared under `tools:`".into());
        self.error(
            path,
            format!("`{tool}` is not a tool this file declares"),
            help,
        );
    }

    fn step_ref(&mut self, step: &str, path: &str) {
        if self.steps.contains(&step) {
            return;
        }
        let help = did_you_mean(step, self.steps.iter().copied()).unwrap_or_else(|| {
            if self.steps.is_empty() {
                "the flow declares no steps".into()
            } else {
                format!(
                    "the steps are {}",
                    join_and(
                        self.steps
                            .iter()
                            .map(|s| format!("`{s}`"))
                            .collect::<Vec<_>>()
                            .iter()
                            .map(String::as_str)
                    )
                )
            }
        });
        self.error(path, format!("there is no step `{step}`"), help);
    }

    /// A state key a guard reads: declared or written, and set by something.
    fn state_read(&mut self, key: &str, path: &str) {
        let declared = self.spec.state.get(key);
        if declared.is_none() && !self.written.contains(key) {
            let known: Vec<&str> = self
                .spec
                .state
                .keys()
                .map(String::as_str)
                .chain(self.written.iter().copied())
                .collect();
            let help = did_you_mean(key, known).unwrap_or_else(|| {
                format!("declare `{key}` under `state:`, and have a tool latch it with `set_state`")
            });
            self.error(
                path,
                format!("this guard reads state key `{key}`, which is not declared under `state:` and no tool writes"),
                help,
            );
        } else if !self.written.contains(key) && declared.is_none_or(|d| d.default.is_none()) {
            self.warning(
                path,
                format!("this guard reads state key `{key}`, which no tool writes and no default sets"),
                format!("it holds only once the host sets `{key}`; give it a `default:` under `state:`, or latch it with a tool's `set_state`"),
            );
        }
    }

    fn guard(&mut self, guard: &Guard, path: &str, place: Place<'_>) {
        match guard {
            Guard::Always => {}
            Guard::IsTrue(key) => self.state_read(key, &format!("{path}/is_true")),
            Guard::IsSet(key) => self.state_read(key, &format!("{path}/is_set")),
            Guard::Eq(pairs) => {
                for key in pairs.keys() {
                    self.state_read(key, &format!("{path}/eq/{}", segment(key)));
                }
            }
            Guard::CalledOk(tool) => self.tool_ref(tool, &format!("{path}/called_ok")),
            Guard::Done(step) => self.step_ref(step, &format!("{path}/done")),
            Guard::All(parts) | Guard::Any(parts) => {
                let key = if matches!(guard, Guard::All(_)) {
                    "all"
                } else {
                    "any"
                };
                for (i, part) in parts.iter().enumerate() {
                    self.guard(part, &format!("{path}/{key}/{i}"), place);
                }
            }
            Guard::Not(inner) => self.guard(inner, &format!("{path}/not"), place),
            Guard::Above(above) => {
                let at = format!("{path}/above");
                let Place::Confirm(tool) = place else {
                    return self.error(
                        &at,
                        "`above` compares an argument of the call being admitted, so it can only appear in a `confirm:` entry's `when`".into(),
                        "move the comparison under `confirm:`, e.g. `- {tool: refund_order, when: {above: {arg: amount_cents, state: refund_threshold_cents}}}`".into(),
                    );
                };
                match (&above.state, &above.value) {
                    (Some(key), None) => self.state_read(key, &format!("{at}/state")),
                    (None, Some(_)) => {}
                    _ => self.error(
                        &at,
                        "`above` needs exactly one limit: `state: KEY` or `value: NUMBER`".into(),
                        "e.g. `above: {arg: amount_cents, state: refund_threshold_cents}`".into(),
                    ),
                }
                self.confirm_arg(tool, &above.arg, &format!("{at}/arg"));
            }
            Guard::StartsWith(test) => {
                let at = format!("{path}/starts_with");
                let Place::Confirm(tool) = place else {
                    return self.error(
                        &at,
                        "`starts_with` tests an argument of the call being admitted, so it can only appear in a `confirm:` entry's `when` (or a policy rule's `when:`)".into(),
                        "move the test under `confirm:`, or into a policy rule: `policy: {rules: [{tools: fs.write_file, when: {not: {starts_with: {arg: path, value: /srv/data/}}}, decision: deny}]}`".into(),
                    );
                };
                self.confirm_arg(tool, &test.arg, &format!("{at}/arg"));
            }
            Guard::Claim(_) => self.error(
                &format!("{path}/claim"),
                "`claim` reads the caller's credential, which a flow's guards do not see".into(),
                "test claims in a policy rule's `when:`, e.g. `policy: {rules: [{tools: refund_order, when: {claim: {groups: support}}, decision: allow}]}`".into(),
            ),
            Guard::Seen(label) => self.error(
                &format!("{path}/seen"),
                "`seen` reads the labels of what the conversation has read, which a flow's guards do not see".into(),
                format!("test it in a policy rule's `when:`, e.g. `policy: {{rules: [{{tools: send_email, when: {{seen: {label}}}, decision: ask}}]}}`"),
            ),
            Guard::Tainted(arg) => self.error(
                &format!("{path}/tainted"),
                "`tainted` reads where the call's arguments came from, which a flow's guards do not see".into(),
                format!("test it in a policy rule's `when:`, e.g. `policy: {{rules: [{{tools: send_email, when: {{tainted: {arg}}}, decision: deny}}]}}`"),
            ),
        }
    }

    /// An argument a confirmation's guard names must be one of the tool's.
    fn confirm_arg(&mut self, tool: &str, arg: &str, path: &str) {
        let Some(declared) = self.spec.tools.iter().find(|t| t.name == tool) else {
            return;
        };
        let schema = declared.input_schema();
        let args: Vec<&str> = schema
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if !args.contains(&arg) {
            let help = did_you_mean(arg, args.iter().copied())
                .unwrap_or_else(|| format!("name one of {tool}'s parameters"));
            self.error(
                path,
                format!("`{arg}` is not an argument of `{tool}`"),
                help,
            );
        }
    }

    fn flow(&mut self, flow: &'a Flow) {
        self.step_ids(flow);
        for (i, step) in flow.steps.iter().enumerate() {
            let at = format!("/flow/steps/{i}");
            for (j, after) in step.after.iter().enumerate() {
                self.step_ref(after, &format!("{at}/after/{j}"));
            }
            for (j, tool) in step.allow.iter().enumerate() {
                self.tool_ref(tool, &format!("{at}/allow/{j}"));
            }
            for (j, tool) in step.deny.iter().enumerate() {
                self.tool_ref(tool, &format!("{at}/deny/{j}"));
                if step.allow.contains(tool) {
                    self.error(
                        &format!("{at}/deny/{j}"),
                        format!("step `{}` both allows and denies `{tool}`", step.id),
                        "keep it under `allow` or under `deny`, not both".into(),
                    );
                }
            }
            if let Some(gate) = &step.gate {
                self.guard(gate, &format!("{at}/gate"), Place::General);
            }
            if let Some(done) = &step.done {
                self.guard(done, &format!("{at}/done"), Place::General);
            }
        }
        let cyclic = self.step_cycles(flow);
        self.reachability(flow, &cyclic);
        self.constraints(flow);
        for (i, confirm) in flow.confirm.iter().enumerate() {
            let at = format!("/flow/confirm/{i}");
            match confirm {
                Confirm::Always(tool) => self.tool_ref(tool, &at),
                Confirm::When(c) => {
                    self.tool_ref(&c.tool, &format!("{at}/tool"));
                    self.guard(&c.when, &format!("{at}/when"), Place::Confirm(&c.tool));
                }
            }
        }
    }

    fn step_ids(&mut self, flow: &Flow) {
        let mut first: HashMap<&str, usize> = HashMap::new();
        for (i, step) in flow.steps.iter().enumerate() {
            let at = format!("/flow/steps/{i}/id");
            let valid = !step.id.is_empty()
                && step
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !valid {
                self.error(
                    &at,
                    format!("step id `{}` is not a name", step.id),
                    "use letters, digits, `_`, `-` and `.`, e.g. `verify_identity`".into(),
                );
            } else if let Some(&j) = first.get(step.id.as_str()) {
                let line = self.line_of(&format!("/flow/steps/{j}/id"));
                self.error(
                    &at,
                    format!("step `{}` is declared twice", step.id),
                    format!(
                        "the first is step #{} (line {line}); rename or remove one",
                        j + 1
                    ),
                );
            } else {
                first.insert(&step.id, i);
            }
        }
    }

    fn constraints(&mut self, flow: &'a Flow) {
        let mut once_seen: HashMap<&str, usize> = HashMap::new();
        // A tool waits for the tools that must succeed before it may run.
        let mut waits: Vec<(&str, &str, String)> = Vec::new();
        for (i, constraint) in flow.constraints.iter().enumerate() {
            let at = format!("/flow/constraints/{i}");
            match constraint {
                Constraint::Once(tool) => {
                    self.tool_ref(tool, &format!("{at}/once"));
                    if let Some(&j) = once_seen.get(tool.as_str()) {
                        self.warning(
                            &format!("{at}/once"),
                            format!("`once: {tool}` is already stated (constraint #{})", j + 1),
                            "remove one of them".into(),
                        );
                    } else {
                        once_seen.insert(tool, i);
                    }
                }
                Constraint::Before(b) => {
                    self.tool_ref(&b.first, &format!("{at}/before/first"));
                    self.tool_ref(&b.then, &format!("{at}/before/then"));
                    waits.push((&b.then, &b.first, format!("{at}/before")));
                }
                Constraint::NeverUntil(n) => {
                    self.tool_ref(&n.tool, &format!("{at}/never_until/tool"));
                    self.guard(&n.until, &format!("{at}/never_until/until"), Place::General);
                    if !satisfiable(&n.until, &[]) {
                        self.error(
                            &format!("{at}/never_until/until"),
                            format!("`{}` can never run: its `until` can never hold", n.tool),
                            "change the guard, or remove the tool from the file if it must never run".into(),
                        );
                    }
                    let mut needed = Vec::new();
                    necessary_successes(&n.until, &mut needed);
                    for first in needed {
                        if let Some(first) = self.tools.iter().find(|t| **t == first) {
                            waits.push((&n.tool, first, format!("{at}/never_until/until")));
                        }
                    }
                }
                Constraint::Require(r) => {
                    self.tool_ref(&r.tool, &format!("{at}/require/tool"));
                    self.guard(&r.when, &format!("{at}/require/when"), Place::General);
                    if !satisfiable(&r.when, &[]) {
                        self.warning(
                            &format!("{at}/require/when"),
                            format!(
                                "this requirement of `{}` never applies: its `when` can never hold",
                                r.tool
                            ),
                            "change the guard, or remove the constraint".into(),
                        );
                    }
                    let allowed = flow.steps.iter().any(|s| s.allow.contains(&r.tool));
                    if flow.ambient == Ambient::Block
                        && !allowed
                        && self.tools.contains(&r.tool.as_str())
                    {
                        self.error(
                            &format!("{at}/require/tool"),
                            format!("`{}` is required but can never run: no step allows it, and `ambient` is `block`", r.tool),
                            format!("add `{}` to a step's `allow`", r.tool),
                        );
                    }
                }
            }
        }
        // Tools that wait for each other to succeed first: none of them can run.
        let names: Vec<&str> = {
            let mut names: Vec<&str> = Vec::new();
            for (a, b, _) in &waits {
                for t in [*a, *b] {
                    if !names.contains(&t) {
                        names.push(t);
                    }
                }
            }
            names
        };
        let edges: Vec<Vec<usize>> = names
            .iter()
            .map(|n| {
                waits
                    .iter()
                    .filter(|(a, _, _)| a == n)
                    .filter_map(|(_, b, _)| names.iter().position(|m| m == b))
                    .collect()
            })
            .collect();
        for cycle in cycles(&edges) {
            let tool = names[cycle[0]];
            let path = waits
                .iter()
                .find(|(a, b, _)| {
                    *a == tool && names[cycle.get(1).copied().unwrap_or(cycle[0])] == *b
                })
                .map(|(_, _, p)| p.clone())
                .unwrap_or_else(|| "/flow/constraints".into());
            let message = if cycle.len() == 1 {
                format!("`{tool}` must succeed before it may run, so it can never run")
            } else {
                let chain: Vec<String> = cycle.iter().map(|&i| format!("`{}`", names[i])).collect();
                format!(
                    "{} each wait for the next to succeed first ({} → {}), so none of them can ever run",
                    join_and(chain.iter().map(String::as_str)),
                    chain.join(" → "),
                    chain[0]
                )
            };
            self.error(
                &path,
                message,
                "remove one of the constraints that close the cycle".into(),
            );
        }
    }

    fn tests(&mut self, tests: &[TestScript]) {
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, test) in tests.iter().enumerate() {
            let at = format!("/tests/{i}");
            if let Some(&j) = names.get(test.name.as_str()) {
                let line = self.line_of(&format!("/tests/{j}/name"));
                self.error(
                    &format!("{at}/name"),
                    format!("test `{}` is declared twice", test.name),
                    format!(
                        "the first is test #{} (line {line}); give each test its own name",
                        j + 1
                    ),
                );
            } else {
                names.insert(&test.name, i);
            }
            if let Some(principal) = &test.principal
                && principal != "operator"
                && !self.spec.principals.contains_key(principal)
            {
                let help = did_you_mean(principal, self.spec.principals.keys().map(String::as_str))
                    .unwrap_or_else(|| {
                        "declare it under `principals:`, or leave `as` out to call as the operator"
                            .into()
                    });
                self.error(
                    &format!("{at}/as"),
                    format!("no principal is named `{principal}`"),
                    help,
                );
            }
            if test.events.is_empty() {
                self.warning(
                    &format!("{at}/name"),
                    format!("test `{}` has no events", test.name),
                    "add `events:`: `user`, `call`, `set` and `expect` entries".into(),
                );
            }
            let mut set_here: HashSet<&str> = HashSet::new();
            let mut called = false;
            for (j, event) in test.events.iter().enumerate() {
                let at = format!("{at}/events/{j}");
                match event {
                    Event::User(_) => {}
                    Event::Call(call) => {
                        called = true;
                        if !self.tools.contains(&call.tool.as_str()) {
                            let help = did_you_mean(&call.tool, self.tools.iter().copied())
                                .unwrap_or_else(|| "the gate refuses calls of unknown tools; name a declared tool unless that refusal is what the test shows".into());
                            self.warning(
                                &format!("{at}/call/tool"),
                                format!("`{}` is not a tool this file declares", call.tool),
                                help,
                            );
                        }
                    }
                    Event::Set(pairs) => {
                        for key in pairs.keys() {
                            set_here.insert(key);
                            if !self.spec.state.contains_key(key) {
                                let help =
                                    did_you_mean(key, self.spec.state.keys().map(String::as_str))
                                        .unwrap_or_else(|| {
                                            format!("declare `{key}` under `state:`")
                                        });
                                self.push(
                                    Diagnostic::warning(
                                        format!("{at}/set/{}", segment(key)),
                                        format!("state key `{key}` is not declared under `state:`"),
                                    )
                                    .with_help(help),
                                    true,
                                );
                            }
                        }
                    }
                    Event::Expect(expect) => {
                        let at = format!("{at}/expect");
                        if expect.is_empty() {
                            self.warning(&at, "this `expect` checks nothing".into(), "give it `allowed`, `blocked`, `active`, `done`, `state`, `outcome` or `message`".into());
                        }
                        for (k, tool) in expect.allowed.iter().enumerate() {
                            self.tool_ref(tool, &format!("{at}/allowed/{k}"));
                            if expect.blocked.contains(tool) {
                                self.error(
                                    &format!("{at}/allowed/{k}"),
                                    format!("`{tool}` is expected both allowed and blocked"),
                                    "keep it in one of the lists".into(),
                                );
                            }
                        }
                        for (k, tool) in expect.blocked.iter().enumerate() {
                            self.tool_ref(tool, &format!("{at}/blocked/{k}"));
                        }
                        for (key, steps) in [("active", &expect.active), ("done", &expect.done)] {
                            for (k, step) in steps.iter().flatten().enumerate() {
                                self.step_ref(step, &format!("{at}/{key}/{k}"));
                            }
                        }
                        for key in expect.state.keys() {
                            let known = self.spec.state.contains_key(key)
                                || self.written.contains(key.as_str())
                                || set_here.contains(key.as_str());
                            if !known {
                                let candidates: Vec<&str> = self
                                    .spec
                                    .state
                                    .keys()
                                    .map(String::as_str)
                                    .chain(self.written.iter().copied())
                                    .collect();
                                let help = did_you_mean(key, candidates).unwrap_or_else(|| {
                                    "name a state key declared under `state:`".into()
                                });
                                self.push(Diagnostic::error(format!("{at}/state/{}", segment(key)), format!("state key `{key}` is not declared, and nothing in this test sets it")).with_help(help), true);
                            }
                        }
                        if !called && (expect.outcome.is_some() || expect.message.is_some()) {
                            let key = if expect.outcome.is_some() {
                                "outcome"
                            } else {
                                "message"
                            };
                            self.error(
                                &format!("{at}/{key}"),
                                format!(
                                    "there is no call before this `expect` for `{key}` to check"
                                ),
                                "add a `call:` event before it".into(),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Every elementary cycle found by a depth-first search, each once, as node
/// indices in order (a self-loop is a cycle of one).
fn cycles(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnStack,
        Finished,
    }
    fn visit(
        node: usize,
        edges: &[Vec<usize>],
        marks: &mut [Mark],
        stack: &mut Vec<usize>,
        found: &mut Vec<Vec<usize>>,
    ) {
        marks[node] = Mark::OnStack;
        stack.push(node);
        for &next in &edges[node] {
            match marks[next] {
                Mark::New => visit(next, edges, marks, stack, found),
                Mark::OnStack => {
                    let from = stack.iter().position(|&n| n == next).unwrap_or(0);
                    found.push(stack[from..].to_vec());
                }
                Mark::Finished => {}
            }
        }
        stack.pop();
        marks[node] = Mark::Finished;
    }
    let mut marks = vec![Mark::New; edges.len()];
    let mut found = Vec::new();
    for node in 0..edges.len() {
        if marks[node] == Mark::New {
            visit(node, edges, &mut marks, &mut Vec::new(), &mut found);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_are_found_once_each() {
        assert_eq!(cycles(&[vec![1], vec![0]]), vec![vec![0, 1]]);
        assert_eq!(cycles(&[vec![0]]), vec![vec![0]]);
        assert!(cycles(&[vec![1], vec![2], vec![]]).is_empty());
    }
}
