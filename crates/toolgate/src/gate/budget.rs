//! The budgets of a gate (`budgets:` of the spec): what a call spends of each
//! budget it falls under, charged in the store's counters (so every process
//! and instance on the store counts together), and what a call past one meets.
//!
//! A call the policy allows is charged as it is authorized: all its budgets or
//! none. Past a budget with `over: deny` it is refused, told when the window
//! starts afresh; past one with `over: ask`, a human is asked, and once
//! approved it is charged past the limit. A call the policy asks about is
//! charged once approved (its `deny` budgets still hold). A call charged that
//! then stops before it runs is refunded.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use toolgate_core::spec::{Budget, OverBudget};
use toolgate_core::{Principal, ToolDescriptor, Verdict};

use super::Gate;
use crate::store::{BudgetCharge, BudgetTaken, StoreError};

/// What one call spends: a charge per budget it falls under.
#[derive(Debug, Default)]
pub(super) struct Charges {
    /// The budgets charged, by their place under `budgets:`.
    budgets: Vec<usize>,
    charges: Vec<BudgetCharge>,
    /// When each charge's window ends, in milliseconds since the epoch.
    window_ends: Vec<u64>,
}

impl Charges {
    pub(super) fn is_empty(&self) -> bool {
        self.charges.is_empty()
    }
}

/// Milliseconds since the epoch at `time`.
fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Gate {
    /// What a call of `tool` by `principal` with `arguments` would spend of
    /// each budget it falls under, or why its cost cannot be told (a cost
    /// read from an argument the call does not give as a number).
    pub(super) fn charges(
        &self,
        tool: &ToolDescriptor,
        principal: &Principal,
        arguments: &Value,
    ) -> Result<Charges, String> {
        let mut out = Charges::default();
        if self.budgets.is_empty() {
            return Ok(out);
        }
        let now_ms = epoch_ms(self.clock_time());
        for (index, budget) in self.budgets.iter().enumerate() {
            let Some(counted) = budget.counted(&principal.id) else {
                continue;
            };
            let (Some((window_ms, window_end)), true) =
                (budget.window_at(now_ms), budget.covers(&tool.name))
            else {
                continue;
            };
            let amount = budget.amount(tool, arguments)?;
            if amount == 0 {
                continue;
            }
            let counter = budget.counter(&counted);
            let limit = budget.limit();
            // Two budgets on one counter (which `check` refuses): the smaller holds.
            if let Some(same) = out.charges.iter_mut().find(|c| c.counter == counter) {
                same.limit = same.limit.min(Some(limit));
                continue;
            }
            out.budgets.push(index);
            out.charges.push(BudgetCharge {
                counter,
                window_ms,
                amount,
                limit: Some(limit),
            });
            out.window_ends.push(window_end);
        }
        Ok(out)
    }

    /// Charges `charges`, all or none; with `approved` (a human let the call
    /// run past the budget), the `ask` budgets are charged whatever they have
    /// spent. Returns the verdict on a call past a budget, when it is one.
    pub(super) fn charge(
        &self,
        charges: &Charges,
        approved: bool,
    ) -> Result<Option<Verdict>, StoreError> {
        let asked: Vec<BudgetCharge> = charges
            .charges
            .iter()
            .zip(&charges.budgets)
            .map(|(charge, &index)| {
                let mut charge = charge.clone();
                if approved && self.budgets[index].over == OverBudget::Ask {
                    charge.limit = None;
                }
                charge
            })
            .collect();
        match self.store.charge_budgets(&asked)? {
            BudgetTaken::Taken(_) => Ok(None),
            BudgetTaken::Over { charge, spent } => {
                let index = charges.budgets[charge];
                crate::telemetry::over_budget(index);
                Ok(Some(self.budgets[index].over(
                    index,
                    spent,
                    asked[charge].amount,
                    charges.window_ends[charge],
                    epoch_ms(self.clock_time()),
                )))
            }
        }
    }

    /// Gives back what a call was charged, when it then did not run.
    pub(super) fn refund(&self, charges: &Charges) {
        if let Err(e) = self.store.refund_budgets(&charges.charges) {
            tracing::warn!(error = %e, "a call's budgets could not be refunded");
        }
    }

    /// The spec's budgets, in order.
    pub fn budgets(&self) -> &[Budget] {
        &self.budgets
    }
}
