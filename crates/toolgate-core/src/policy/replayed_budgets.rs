//! The new spec's budgets in a replay: each call the flow and the policy let
//! through is charged, at the time the log says it was made, against counters
//! of the replay's own (what the store's counters held is not replayed), and
//! one past a budget gets that budget's verdict — refused, or asked about —
//! as the gate would give it.
//!
//! A call the replay asks about is not charged: whether a person would have
//! approved it is not known.

use std::collections::HashMap;

use serde_json::Value;

use super::simulate::whole;
use super::{Decision, Verdict};
use crate::ToolDescriptor;
use crate::spec::{Budget, charges};

/// The budgets and what the replay has charged them: by counter, the window
/// it counts and what that window spent.
pub(super) struct ReplayedBudgets<'a> {
    budgets: &'a [Budget],
    spent: HashMap<String, (u64, u64)>,
}

impl<'a> ReplayedBudgets<'a> {
    pub(super) fn new(budgets: &'a [Budget]) -> Self {
        ReplayedBudgets {
            budgets,
            spent: HashMap::new(),
        }
    }

    /// The verdict on a call of `tool` by `principal` with `arguments` at
    /// `time` (RFC 3339) that was otherwise `verdict`: charged if allowed and
    /// every budget has room, else the first full budget's verdict. Why it
    /// cannot be told, when its cost is read from arguments kept in part.
    pub(super) fn judge(
        &mut self,
        tool: &ToolDescriptor,
        principal: &str,
        arguments: &Value,
        time: &str,
        verdict: Verdict,
    ) -> Result<Verdict, String> {
        if verdict.decision != Decision::Allow || self.budgets.is_empty() {
            return Ok(verdict);
        }
        let Some(now_ms) = humantime::parse_rfc3339_weak(time)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_millis()).ok())
        else {
            return Err("the log's time of the call does not read as a time".into());
        };
        let reads_cost = tool.cost.is_some()
            && self
                .budgets
                .iter()
                .any(|b| b.cost.is_some() && b.covers(&tool.name));
        if reads_cost && !whole(arguments) {
            return Err(
                "a budget reads the call's cost from arguments the log kept only in part".into(),
            );
        }
        let charges = match charges(self.budgets, tool, principal, arguments, now_ms) {
            Ok(charges) => charges,
            Err(reason) => {
                return Ok(Verdict {
                    decision: Decision::Deny,
                    reason,
                    decided_by: "budgets".into(),
                    answered_by: Default::default(),
                });
            }
        };
        let mut taken = Vec::with_capacity(charges.len());
        for charge in &charges {
            let spent = match self.spent.get(&charge.counter) {
                Some(&(window, spent)) if window == charge.window.0 => spent,
                _ => 0,
            };
            if spent.saturating_add(charge.amount) > charge.limit {
                let budget = &self.budgets[charge.budget];
                let over =
                    budget.over(charge.budget, spent, charge.amount, charge.window.1, now_ms);
                return Ok(over);
            }
            taken.push(spent + charge.amount);
        }
        for (charge, spent) in charges.into_iter().zip(taken) {
            self.spent.insert(charge.counter, (charge.window.0, spent));
        }
        Ok(verdict)
    }
}
