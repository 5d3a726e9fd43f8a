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

use serde_json::Value;
use toolgate_core::spec::{Budget, Charge, OverBudget, charges};
use toolgate_core::{Principal, ToolDescriptor, Verdict};

use super::Gate;
use crate::budgets::epoch_ms;
use crate::store::{BudgetCharge, BudgetTaken, StoreError};

/// What one call spends: a charge per budget it falls under.
#[derive(Debug, Default)]
pub(super) struct Charges(Vec<Charge>);

impl Charges {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The charges as the store takes them; with `approved`, those of `ask`
    /// budgets without a limit.
    fn for_store(&self, budgets: &[Budget], approved: bool) -> Vec<BudgetCharge> {
        self.0
            .iter()
            .map(|c| BudgetCharge {
                counter: c.counter.clone(),
                window_ms: c.window.0,
                amount: c.amount,
                limit: (!(approved && budgets[c.budget].over == OverBudget::Ask))
                    .then_some(c.limit),
            })
            .collect()
    }
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
        if self.budgets.is_empty() {
            return Ok(Charges::default());
        }
        let now_ms = epoch_ms(self.clock_time());
        charges(&self.budgets, tool, &principal.id, arguments, now_ms).map(Charges)
    }

    /// Charges `charges`, all or none; with `approved` (a human let the call
    /// run past the budget), the `ask` budgets are charged whatever they have
    /// spent. Returns the verdict on a call past a budget, when it is one.
    pub(super) fn charge(
        &self,
        charges: &Charges,
        approved: bool,
    ) -> Result<Option<Verdict>, StoreError> {
        let asked = charges.for_store(&self.budgets, approved);
        match self.store.charge_budgets(&asked)? {
            BudgetTaken::Taken(_) => Ok(None),
            BudgetTaken::Over { charge, spent } => {
                let over = &charges.0[charge];
                crate::telemetry::over_budget(over.budget);
                Ok(Some(self.budgets[over.budget].over(
                    over.budget,
                    spent,
                    over.amount,
                    over.window.1,
                    epoch_ms(self.clock_time()),
                )))
            }
        }
    }

    /// Gives back what a call was charged, when it then did not run.
    pub(super) fn refund(&self, charges: &Charges) {
        let charged = charges.for_store(&self.budgets, false);
        if let Err(e) = self.store.refund_budgets(&charged) {
            tracing::warn!(error = %e, "a call's budgets could not be refunded");
        }
    }

    /// The spec's budgets, in order.
    pub fn budgets(&self) -> &[Budget] {
        &self.budgets
    }
}
