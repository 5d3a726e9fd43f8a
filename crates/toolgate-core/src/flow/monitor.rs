//! The monitor: from a flow, a conversation's state and its call history, which
//! steps are active or done and, for every tool, whether it may run — and if not,
//! what must happen first, in words a model can act on.
//!
//! It is a pure function of its inputs: the same flow, state and history give the
//! same answer, in any process, so a conversation can go on wherever its state and
//! history are kept.
//!
//! Words for a principal ([`Monitor::seen_by`]) never name a tool outside its
//! view: "blocked until a step you cannot take has been done". The caller keeps
//! the full reason (from a monitor without a viewer) for the operator.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::guard::{self, Cond, Facts, HIDDEN_STEP, join_and};
use super::history::CallRecord;
use super::model::{Ambient, Constraint, Flow, Guard, Step};
use super::status::{FlowView, Requirement, StepStatus, StepView, ToolStatus};

/// Answers questions about one flow.
#[derive(Clone, Copy)]
pub struct Monitor<'f> {
    flow: &'f Flow,
    /// The tools the reader of its words may know of; `None`: every tool.
    viewer: Option<&'f dyn Fn(&str) -> bool>,
}

impl std::fmt::Debug for Monitor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("flow", self.flow)
            .field("viewer", &self.viewer.is_some())
            .finish()
    }
}

impl<'f> Monitor<'f> {
    /// A monitor that answers for a principal who sees every tool.
    pub fn new(flow: &'f Flow) -> Self {
        Monitor { flow, viewer: None }
    }

    /// Answers in words for a principal that may know only of the tools `sees`
    /// admits: a tool outside its view is never named (what it must do is "a step
    /// you cannot take", a required one's `tool` too), a view leaves such tools
    /// out of `tools`, and the details and `why` written for people are left out.
    pub fn seen_by(self, sees: &'f dyn Fn(&str) -> bool) -> Self {
        Monitor {
            viewer: Some(sees),
            ..self
        }
    }

    /// Where the conversation stands, with the status of each of `tools`.
    pub fn view<'t>(
        &self,
        state: &Map<String, Value>,
        history: &[CallRecord],
        tools: impl IntoIterator<Item = &'t str>,
    ) -> FlowView {
        let eval = Eval::new(self.flow, state, history, self.viewer);
        let tools = tools
            .into_iter()
            .filter(|tool| eval.may_name(tool))
            .map(|tool| {
                let status = match eval.blocked(tool) {
                    Some(blocked) => blocked,
                    None => ToolStatus::Allowed {
                        confirm: eval.confirm_in_view(tool),
                    },
                };
                (tool.to_owned(), status)
            })
            .collect();
        FlowView {
            steps: (0..self.flow.steps.len())
                .map(|i| eval.step_view(i))
                .collect(),
            required: eval
                .open_requirements()
                .map(|(tool, when)| Requirement {
                    tool: if eval.may_name(tool) {
                        tool.to_owned()
                    } else {
                        HIDDEN_STEP.to_owned()
                    },
                    because: eval.describe(when),
                })
                .collect(),
            finished_by: eval.finished_by().map(|i| self.flow.steps[i].id.clone()),
            tools,
        }
    }

    /// Whether one call may run now: its tool's status, with the confirmation
    /// decided on the call's own arguments.
    pub fn admit(
        &self,
        state: &Map<String, Value>,
        history: &[CallRecord],
        tool: &str,
        arguments: &Value,
    ) -> ToolStatus {
        let eval = Eval::new(self.flow, state, history, self.viewer);
        if let Some(blocked) = eval.blocked(tool) {
            return blocked;
        }
        ToolStatus::Allowed {
            confirm: eval.confirm_for_call(tool, arguments),
        }
    }
}

/// Memo of a step's "done" while it is being computed, so cycles end.
#[derive(Clone, Copy, PartialEq)]
enum Memo {
    Unknown,
    Visiting,
    Known(bool),
}

/// One evaluation: the facts of a conversation, with step status memoized.
struct Eval<'a> {
    flow: &'a Flow,
    state: &'a Map<String, Value>,
    successes: HashMap<&'a str, usize>,
    index: HashMap<&'a str, usize>,
    done: RefCell<Vec<Memo>>,
    /// The steps whose completion is being computed, outermost first.
    visiting: RefCell<Vec<usize>>,
    /// The outermost place on `visiting` a cycle reached back to, if any.
    cycle_from: std::cell::Cell<usize>,
    /// Steps being explained, so explaining a cycle ends.
    explaining: RefCell<Vec<bool>>,
    /// The arguments of the call being admitted, while a confirmation is decided.
    args: Option<&'a Value>,
    /// The tools the reader may know of (see [`Monitor::seen_by`]).
    viewer: Option<&'a dyn Fn(&str) -> bool>,
}

impl Facts for Eval<'_> {
    fn state(&self, key: &str) -> Option<&Value> {
        self.state.get(key)
    }

    fn succeeded(&self, tool: &str) -> bool {
        self.successes.get(tool).is_some_and(|n| *n > 0)
    }

    fn is_done(&self, step: &str) -> bool {
        self.index.get(step).is_some_and(|&i| self.step_done(i))
    }

    fn unmet_done(&self, step: &str) -> Vec<Cond> {
        match self.index.get(step) {
            Some(&i) => self.unmet_done_at(i),
            None => vec![Cond::fact(format!("there is no step `{step}`"))],
        }
    }

    fn args(&self) -> Option<&Value> {
        self.args
    }

    fn may_name(&self, tool: &str) -> bool {
        self.viewer.is_none_or(|sees| sees(tool))
    }
}

impl<'a> Eval<'a> {
    fn new(
        flow: &'a Flow,
        state: &'a Map<String, Value>,
        history: &'a [CallRecord],
        viewer: Option<&'a dyn Fn(&str) -> bool>,
    ) -> Self {
        let mut successes = HashMap::new();
        for call in history.iter().filter(|c| c.ok) {
            *successes.entry(call.tool.as_str()).or_insert(0) += 1;
        }
        let mut index = HashMap::new();
        for (i, step) in flow.steps.iter().enumerate() {
            // A duplicate id is an error `check` reports; the first one counts.
            index.entry(step.id.as_str()).or_insert(i);
        }
        let n = flow.steps.len();
        Eval {
            flow,
            state,
            successes,
            index,
            done: RefCell::new(vec![Memo::Unknown; n]),
            visiting: RefCell::new(Vec::new()),
            cycle_from: std::cell::Cell::new(usize::MAX),
            explaining: RefCell::new(vec![false; n]),
            args: None,
            viewer,
        }
    }

    /// What a guard says, in words the reader may be told.
    fn describe(&self, guard: &Guard) -> String {
        guard::describe_for(guard, &|tool| self.may_name(tool))
    }

    fn step(&self, i: usize) -> &'a Step {
        &self.flow.steps[i]
    }

    /// Done: every step it comes after is done, and its `done` guard holds.
    ///
    /// A step whose completion depends on itself is never done, and neither is
    /// any step on that cycle: each is found in the cycle whichever step is
    /// asked first, so the answer does not depend on the order of questions.
    fn step_done(&self, i: usize) -> bool {
        match self.done.borrow()[i] {
            Memo::Known(done) => return done,
            Memo::Visiting => {
                // The cycle reaches back to `i`, at its place on the stack.
                let at = self.visiting.borrow().iter().position(|&v| v == i);
                if let Some(at) = at {
                    let lowest = self.cycle_from.get().min(at);
                    self.cycle_from.set(lowest);
                }
                return false;
            }
            Memo::Unknown => {}
        }
        self.done.borrow_mut()[i] = Memo::Visiting;
        let depth = {
            let mut visiting = self.visiting.borrow_mut();
            visiting.push(i);
            visiting.len() - 1
        };
        let step = self.step(i);
        let mut done = step.after.iter().all(|a| self.is_done(a))
            && step.done.as_ref().is_some_and(|g| guard::holds(g, self));
        self.visiting.borrow_mut().pop();
        if self.cycle_from.get() <= depth {
            // On a cycle: never done. The cycle closes at the step it began from.
            done = false;
            if self.cycle_from.get() == depth {
                self.cycle_from.set(usize::MAX);
            }
        }
        self.done.borrow_mut()[i] = Memo::Known(done);
        done
    }

    /// The first terminal step that is done: the flow has ended.
    fn finished_by(&self) -> Option<usize> {
        (0..self.flow.steps.len()).find(|&i| self.step(i).terminal && self.step_done(i))
    }

    /// `require` constraints whose `when` holds and whose tool has not succeeded.
    fn open_requirements(&self) -> impl Iterator<Item = (&'a str, &'a Guard)> + '_ {
        self.flow.constraints.iter().filter_map(|c| match c {
            Constraint::Require(r) if !self.succeeded(&r.tool) && guard::holds(&r.when, self) => {
                Some((r.tool.as_str(), &r.when))
            }
            _ => None,
        })
    }

    fn step_active(&self, i: usize) -> bool {
        let step = self.step(i);
        !self.step_done(i)
            && self.finished_by().is_none()
            && step.after.iter().all(|a| self.is_done(a))
            && step.gate.as_ref().is_none_or(|g| guard::holds(g, self))
            && !(step.terminal && self.open_requirements().next().is_some())
    }

    /// What must happen before step `i` is done.
    fn unmet_done_at(&self, i: usize) -> Vec<Cond> {
        if self.step_done(i) || self.explaining.borrow()[i] {
            return Vec::new();
        }
        self.explaining.borrow_mut()[i] = true;
        let step = self.step(i);
        let mut out = self.unmet_after(step);
        if let Some(gate) = &step.gate {
            // Not needed for "done" itself, but the step's tools run only while it is active.
            out.extend(guard::unmet(gate, self));
        }
        match &step.done {
            Some(done) => out.extend(guard::unmet(done, self)),
            None => out.push(Cond::fact(format!(
                "step `{}` has no `done:` guard, so it is never done",
                step.id
            ))),
        }
        self.explaining.borrow_mut()[i] = false;
        out
    }

    fn unmet_after(&self, step: &Step) -> Vec<Cond> {
        step.after
            .iter()
            .filter(|a| !self.is_done(a))
            .flat_map(|a| self.unmet_done(a))
            .collect()
    }

    /// What must happen before step `i` is active, or why it never will be.
    fn unmet_active(&self, i: usize) -> Vec<Cond> {
        let step = self.step(i);
        if self.step_done(i) {
            return vec![Cond::fact(format!("step `{}` is done", step.id))];
        }
        if let Some(t) = self.finished_by() {
            return vec![Cond::fact(format!(
                "the conversation's flow ended when step `{}` was done",
                self.step(t).id
            ))];
        }
        let mut out = self.unmet_after(step);
        if let Some(gate) = &step.gate {
            out.extend(guard::unmet(gate, self));
        }
        if step.terminal {
            out.extend(self.open_requirements().map(|(tool, when)| {
                Cond::needs(format!(
                    "{} (it is required because {})",
                    guard::succeeded_words(tool, &|t| self.may_name(t), false),
                    self.describe(when)
                ))
            }));
        }
        out
    }

    /// Why step `i` is not active, one line per reason, naming the guards.
    fn why_waiting(&self, i: usize) -> Vec<String> {
        let step = self.step(i);
        let mut why = Vec::new();
        if self.viewer.is_some() {
            return why;
        }
        if let Some(t) = self.finished_by() {
            why.push(format!(
                "the flow has ended: terminal step `{}` is done",
                self.step(t).id
            ));
            return why;
        }
        for after in step.after.iter().filter(|a| !self.is_done(a)) {
            let pending = match self.flow.step(after).and_then(|a| a.done.as_ref()) {
                Some(done) => format!("its `done: {{{done}}}` does not hold"),
                None => "it has no `done:` guard".into(),
            };
            why.push(format!(
                "it comes after `{after}`, which is not done: {pending}"
            ));
        }
        if let Some(gate) = step.gate.as_ref().filter(|g| !guard::holds(g, self)) {
            why.push(format!("its `gate: {{{gate}}}` does not hold"));
        }
        if step.terminal {
            for (tool, when) in self.open_requirements() {
                why.push(format!(
                    "it is terminal, and {tool} is still required (`require` when `{when}`)"
                ));
            }
        }
        why
    }

    fn step_view(&self, i: usize) -> StepView {
        let step = self.step(i);
        let (status, why) = if self.step_done(i) {
            (StepStatus::Done, Vec::new())
        } else if self.step_active(i) {
            (StepStatus::Active, Vec::new())
        } else {
            (StepStatus::Waiting, self.why_waiting(i))
        };
        StepView {
            id: step.id.clone(),
            status,
            instruction: step.instruction.clone(),
            why,
        }
    }

    /// `None` when `tool` may run (confirmation aside), else why not.
    fn blocked(&self, tool: &str) -> Option<ToolStatus> {
        let mut never: Vec<String> = Vec::new();
        let mut until: Vec<Cond> = Vec::new();
        let mut details: Vec<String> = Vec::new();
        let named = |list: &[String]| list.iter().any(|t| t == tool);
        let steps = 0..self.flow.steps.len();

        // A step that is active and denies the tool.
        for i in steps.clone().filter(|&i| named(&self.step(i).deny)) {
            if !self.step_active(i) {
                continue;
            }
            let step = self.step(i);
            details.push(format!("step `{}` is active and denies it", step.id));
            match &step.done {
                Some(_) => {
                    let conds = self.unmet_done_at(i);
                    if conds.is_empty() {
                        until.push(Cond::needs(format!("step `{}` is done", step.id)));
                    }
                    until.extend(conds);
                }
                None => never.push(format!("{tool} is not allowed during step `{}`", step.id)),
            }
        }

        // The steps that allow it: one of them must be active.
        let allowing: Vec<usize> = steps.filter(|&i| named(&self.step(i).allow)).collect();
        if allowing.is_empty() {
            if self.flow.ambient == Ambient::Block {
                never.push(format!("{tool} is not part of this conversation's flow"));
                details.push("no step allows it, and the flow's `ambient` is `block`".into());
            }
        } else if !allowing.iter().any(|&i| self.step_active(i)) {
            // Explain through the step that is closest to becoming active.
            let best = allowing
                .iter()
                .map(|&i| (i, self.unmet_active(i)))
                .min_by_key(|(_, conds)| (conds.iter().any(|c| c.permanent), conds.len()));
            if let Some((i, conds)) = best {
                let step = self.step(i);
                let why = self.why_waiting(i);
                if self.step_done(i) {
                    details.push(format!("step `{}` allows it, and is done", step.id));
                } else {
                    details.push(format!(
                        "step `{}` allows it, but is not active: {}",
                        step.id,
                        why.join("; ")
                    ));
                }
                if conds.is_empty() {
                    until.push(Cond::needs(format!("step `{}` is active", step.id)));
                }
                until.extend(conds);
            }
        }

        // Constraints.
        for constraint in &self.flow.constraints {
            match constraint {
                Constraint::Once(t) if t == tool => {
                    let n = self.successes.get(tool).copied().unwrap_or(0);
                    if n > 0 {
                        never.push(format!(
                            "{tool} may succeed only once in a conversation, and it already has"
                        ));
                        details.push(format!(
                            "`once: {tool}`: it has succeeded {n} time{}",
                            if n == 1 { "" } else { "s" }
                        ));
                    }
                }
                Constraint::Before(b) if b.then == tool && !self.succeeded(&b.first) => {
                    until.push(Cond::needs(guard::succeeded_words(
                        &b.first,
                        &|t| self.may_name(t),
                        false,
                    )));
                    details.push(format!(
                        "`before: {{first: {}, then: {}}}`: {} has not succeeded",
                        b.first, b.then, b.first
                    ));
                }
                Constraint::NeverUntil(n) if n.tool == tool && !guard::holds(&n.until, self) => {
                    until.extend(guard::unmet(&n.until, self));
                    details.push(format!(
                        "`never_until` for {tool}: `{}` does not hold",
                        n.until
                    ));
                }
                _ => {}
            }
        }

        if self.viewer.is_some() {
            details.clear();
        }
        if let Some(first) = never.into_iter().next() {
            return Some(ToolStatus::Blocked {
                reason: first,
                details,
            });
        }
        let mut seen: Vec<Cond> = Vec::new();
        for cond in until {
            if !seen.iter().any(|c| c.text == cond.text) {
                seen.push(cond);
            }
        }
        if seen.is_empty() {
            return None;
        }
        let permanent: Vec<&str> = seen
            .iter()
            .filter(|c| c.permanent)
            .map(|c| c.text.as_str())
            .collect();
        let reason = if permanent.is_empty() {
            format!(
                "{tool} is blocked until {}",
                join_and(seen.iter().map(|c| c.text.as_str()))
            )
        } else {
            format!(
                "{tool} is blocked for the rest of this conversation: {}",
                join_and(permanent)
            )
        };
        Some(ToolStatus::Blocked { reason, details })
    }

    /// Whether a listing should say the tool asks for confirmation: it always does,
    /// or its guard holds, or the guard depends on the call's arguments.
    fn confirm_in_view(&self, tool: &str) -> Option<String> {
        self.flow
            .confirm
            .iter()
            .filter(|c| c.tool() == tool)
            .find_map(|c| match c.when() {
                None => Some("the user confirms every call".to_owned()),
                Some(when) => match guard::eval(when, self) {
                    Some(true) => Some("the user confirms every call".to_owned()),
                    Some(false) => None,
                    None => Some(format!(
                        "the user confirms calls where {}",
                        self.describe(when)
                    )),
                },
            })
    }

    /// Whether this call needs the user's confirmation, and why.
    fn confirm_for_call(mut self, tool: &str, arguments: &'a Value) -> Option<String> {
        self.args = Some(arguments);
        let eval = &self;
        eval.flow
            .confirm
            .iter()
            .filter(|c| c.tool() == tool)
            .find_map(|c| match c.when() {
                None => Some(format!(
                    "the flow asks the user to confirm every {tool} call"
                )),
                // Unknown (a limit that is not set) asks: the safe side.
                Some(when) => (guard::eval(when, eval) != Some(false)).then(|| {
                    let mut values = Vec::new();
                    guard::compared_values(when, eval, &mut values);
                    let values = if values.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", values.join(", "))
                    };
                    format!(
                        "the flow asks the user to confirm {tool} when {}{values}",
                        eval.describe(when)
                    )
                }),
            })
    }
}
