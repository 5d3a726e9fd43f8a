//! The step graph of a `flow:` for `toolgate check`: cycles through `after` and
//! `done: STEP` guards, steps that can never become active, and steps that can
//! never be done. A part of the flow checks, kept apart because it reasons about
//! the graph of steps rather than about one name or guard at a time.

use std::collections::{HashMap, HashSet};

use super::{Checks, cycles};
use crate::flow::model::{Flow, Guard};
use crate::flow::satisfy::{Atom, satisfiable};

impl Checks<'_> {
    /// Cycles through `after` and `done: STEP` guards. Returns the steps on one.
    pub(super) fn step_cycles(&mut self, flow: &Flow) -> HashSet<usize> {
        let index = step_positions(flow);
        // Edges: a step waits for the steps it comes after and those its `done` reads.
        let edges: Vec<Vec<(usize, String)>> = flow
            .steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let mut out: Vec<(usize, String)> = step
                    .after
                    .iter()
                    .enumerate()
                    .filter_map(|(j, a)| {
                        Some((
                            *index.get(a.as_str())?,
                            format!("/flow/steps/{i}/after/{j}"),
                        ))
                    })
                    .collect();
                if let Some(done) = &step.done {
                    let mut atoms = Vec::new();
                    done_atoms(done, &mut atoms);
                    out.extend(atoms.into_iter().filter_map(|a| {
                        Some((*index.get(a.as_str())?, format!("/flow/steps/{i}/done")))
                    }));
                }
                out
            })
            .collect();
        let mut on_cycle = HashSet::new();
        for cycle in cycles(
            &edges
                .iter()
                .map(|e| e.iter().map(|(t, _)| *t).collect())
                .collect::<Vec<Vec<usize>>>(),
        ) {
            let names: Vec<String> = cycle
                .iter()
                .map(|&i| format!("`{}`", flow.steps[i].id))
                .collect();
            let first = cycle[0];
            let next = cycle.get(1).copied().unwrap_or(first);
            let path = edges[first]
                .iter()
                .find(|(t, _)| *t == next)
                .map(|(_, p)| p.clone())
                .unwrap_or_else(|| format!("/flow/steps/{first}"));
            let message = if cycle.len() == 1 {
                format!(
                    "step {} waits for itself, so it can never become active",
                    names[0]
                )
            } else {
                format!(
                    "steps {} → {} wait for each other in a cycle, so none of them can ever become active",
                    names.join(" → "),
                    names[0]
                )
            };
            self.error(
                &path,
                message,
                "remove one of the `after:` (or `done: STEP`) references that close the cycle"
                    .into(),
            );
            on_cycle.extend(cycle);
        }
        on_cycle
    }

    /// Steps that can never become active, and steps that can never be done.
    pub(super) fn reachability(&mut self, flow: &Flow, cyclic: &HashSet<usize>) {
        let n = flow.steps.len();
        // Why each step can never be done, if it cannot; in dependency order.
        let mut never_done: Vec<Option<String>> = vec![None; n];
        let mut resolved = vec![false; n];
        let positions = step_positions(flow);
        let index = |id: &str| positions.get(id).copied();
        // Iterate to a fixpoint: a step is settled once its `after` steps are.
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                if resolved[i] {
                    continue;
                }
                let step = &flow.steps[i];
                let deps: Vec<usize> = step.after.iter().filter_map(|a| index(a)).collect();
                if !cyclic.contains(&i) && deps.iter().any(|&d| !resolved[d]) {
                    continue;
                }
                resolved[i] = true;
                changed = true;
                never_done[i] = if cyclic.contains(&i) {
                    Some("it waits for itself through a cycle".into())
                } else if let Some(d) = deps.iter().find(|&&d| never_done[d].is_some()) {
                    Some(format!(
                        "it comes after `{}`, which can never be done",
                        flow.steps[*d].id
                    ))
                } else {
                    match &step.done {
                        None => Some("it has no `done:` guard".into()),
                        Some(done) if !satisfiable(done, &[]) => {
                            Some("its `done` guard can never hold".into())
                        }
                        Some(_) => None,
                    }
                };
            }
        }
        // Steps that come after a terminal step, directly or not.
        let mut after_terminal: Vec<Option<usize>> = vec![None; n];
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                if after_terminal[i].is_some() {
                    continue;
                }
                after_terminal[i] = flow.steps[i]
                    .after
                    .iter()
                    .filter_map(|a| index(a))
                    .find_map(|d| {
                        if flow.steps[d].terminal {
                            Some(d)
                        } else {
                            after_terminal[d]
                        }
                    });
                changed |= after_terminal[i].is_some();
            }
        }
        for (i, step) in flow.steps.iter().enumerate() {
            if cyclic.contains(&i) {
                continue;
            }
            let at = format!("/flow/steps/{i}");
            if let Some((j, a)) = step
                .after
                .iter()
                .enumerate()
                .find(|(_, a)| index(a).is_some_and(|d| never_done[d].is_some()))
            {
                let d = index(a).unwrap_or(0);
                let why = never_done[d].clone().unwrap_or_default();
                let help = if flow.steps[d].done.is_none() {
                    format!("give step `{a}` a `done:` guard, or remove it from `after`")
                } else {
                    format!("fix step `{a}`, or remove it from `after`")
                };
                self.error(
                    &format!("{at}/after/{j}"),
                    format!("step `{}` can never become active: it comes after `{a}`, which can never be done ({why})", step.id),
                    help,
                );
                continue;
            }
            if let Some(t) = after_terminal[i] {
                let (j, _) = step
                    .after
                    .iter()
                    .enumerate()
                    .find(|(_, a)| index(a).is_some())
                    .unwrap_or((0, &step.id));
                let terminal = &flow.steps[t].id;
                self.error(
                    &format!("{at}/after/{j}"),
                    format!("step `{}` can never become active: it comes after terminal step `{terminal}`, and the flow ends when `{terminal}` is done", step.id),
                    format!("remove `terminal: true` from `{terminal}`, or do not put `{}` after it", step.id),
                );
                continue;
            }
            if let Some(gate) = &step.gate {
                let fixed: Vec<(Atom, bool)> = step
                    .after
                    .iter()
                    .map(|a| (Atom::Done(a.clone()), true))
                    .chain([(Atom::Done(step.id.clone()), false)])
                    .collect();
                if !satisfiable(gate, &fixed) {
                    self.error(
                        &format!("{at}/gate"),
                        format!(
                            "step `{}` can never become active: its `gate` can never hold{}",
                            step.id,
                            if step.after.is_empty() {
                                ""
                            } else {
                                " once the steps it comes after are done"
                            }
                        ),
                        "change the gate; `toolgate flow graph` draws the whole flow".into(),
                    );
                    continue;
                }
            }
            if let Some(done) = &step.done
                && !satisfiable(done, &[])
            {
                self.warning(
                    &format!("{at}/done"),
                    format!(
                        "step `{}` can never be done: its `done` guard can never hold",
                        step.id
                    ),
                    "change the guard, or remove `done:` if the step is meant to stay active"
                        .into(),
                );
            }
        }
    }
}

/// The step ids a `done` guard reads through `done: STEP`.
fn done_atoms(guard: &Guard, out: &mut Vec<String>) {
    guard.for_each_leaf(&mut |leaf| {
        if let Guard::Done(step) = leaf {
            out.push(step.clone());
        }
    });
}

/// Each step id's position in the flow; a repeated id maps to its first step.
fn step_positions(flow: &Flow) -> HashMap<&str, usize> {
    flow.steps
        .iter()
        .enumerate()
        .rev()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect()
}
