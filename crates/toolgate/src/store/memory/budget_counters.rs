//! The budgets' counters in memory: one map under one lock, so a call's
//! charges are checked and taken in one step.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::store::budget_counters::{has_room, spent_in};
use crate::store::{BudgetCharge, BudgetCounters, BudgetSpent, BudgetTaken, StoreError};

/// The budgets' counters in memory, for tests and throwaway runs: each
/// counter's window and what it has spent.
#[derive(Debug, Default)]
pub struct MemoryBudgetCounters {
    counters: Mutex<HashMap<String, (u64, u64)>>,
}

impl MemoryBudgetCounters {
    fn counters(&self) -> MutexGuard<'_, HashMap<String, (u64, u64)>> {
        // Every change is made whole under the lock: a poisoned one guards whole data.
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BudgetCounters for MemoryBudgetCounters {
    fn charge_budgets(&self, charges: &[BudgetCharge]) -> Result<BudgetTaken, StoreError> {
        let mut counters = self.counters();
        let spent: Vec<u64> = charges
            .iter()
            .map(|charge| {
                counters
                    .get(&charge.counter)
                    .map_or(0, |&(window, spent)| spent_in(charge, window, spent))
            })
            .collect();
        if let Some(charge) = (0..charges.len()).find(|&i| !has_room(&charges[i], spent[i])) {
            return Ok(BudgetTaken::Over {
                charge,
                spent: spent[charge],
            });
        }
        let now = charges
            .iter()
            .zip(spent)
            .map(|(charge, spent)| {
                let total = spent.saturating_add(charge.amount);
                counters.insert(charge.counter.clone(), (charge.window_ms, total));
                total
            })
            .collect();
        Ok(BudgetTaken::Taken(now))
    }

    fn refund_budgets(&self, charges: &[BudgetCharge]) -> Result<(), StoreError> {
        let mut counters = self.counters();
        for charge in charges {
            if let Some((window, spent)) = counters.get_mut(&charge.counter)
                && *window == charge.window_ms
            {
                *spent = spent.saturating_sub(charge.amount);
            }
        }
        Ok(())
    }

    fn budgets_spent(&self) -> Result<Vec<BudgetSpent>, StoreError> {
        Ok(self
            .counters()
            .iter()
            .map(|(counter, &(window_ms, spent))| BudgetSpent {
                counter: counter.clone(),
                window_ms,
                spent,
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::budget_counters::suite;

    #[test]
    fn memory_counters_charge_all_or_none_and_start_each_window_afresh() {
        suite::exercise(&MemoryBudgetCounters::default());
    }

    #[test]
    fn memory_counters_hold_exactly_under_eight_threads() {
        suite::race(&[&MemoryBudgetCounters::default()]);
    }
}
