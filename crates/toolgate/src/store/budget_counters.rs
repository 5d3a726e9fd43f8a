//! What the budgets have spent, kept where every process and instance on the
//! store reads it: one counter per budget and principal counted, holding the
//! window it counts and what that window has spent.
//!
//! A call charges every budget it falls under, or — if one of them has no room
//! — none, in one atomic step (a transaction on SQLite, a row-locking function
//! on PostgreSQL, a lock in memory), so that N calls a budget lets through are
//! exactly N however many callers and instances race for them. A counter whose
//! window has passed reads as empty; the next charge starts it afresh.

use super::StoreError;

/// One charge of a call against one budget's counter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetCharge {
    /// The counter: the budget and the principal it counts
    /// (`toolgate_core::spec::Budget::counter`).
    pub counter: String,
    /// The start of the window the call falls in, in milliseconds since the epoch.
    pub window_ms: u64,
    /// What the call spends: 1 for a budget of calls, its cost for one of cost.
    pub amount: u64,
    /// The most the window may spend, or `None` to charge whatever was spent
    /// (a call a human approved past the budget).
    pub limit: Option<u64>,
}

/// What charging a call came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetTaken {
    /// Every charge was taken; what each counter holds now, in the order asked.
    Taken(Vec<u64>),
    /// Charge `charge` (an index into what was asked) would pass its limit: the
    /// window had spent `spent` already. Nothing was taken.
    Over {
        /// The index of the first charge without room.
        charge: usize,
        /// What its window had spent before this call.
        spent: u64,
    },
}

/// One counter as it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetSpent {
    /// The counter's name.
    pub counter: String,
    /// The start of the window it last counted.
    pub window_ms: u64,
    /// What that window has spent.
    pub spent: u64,
}

/// The budgets' counters, shared by every process on one store.
pub trait BudgetCounters: Send + Sync {
    /// Takes every charge if each has room (or no limit), else none.
    fn charge_budgets(&self, charges: &[BudgetCharge]) -> Result<BudgetTaken, StoreError>;

    /// Gives back charges a call took and then did not run: each counter still
    /// in the charge's window loses its amount.
    fn refund_budgets(&self, charges: &[BudgetCharge]) -> Result<(), StoreError>;

    /// Every counter, with the window it last counted.
    fn budgets_spent(&self) -> Result<Vec<BudgetSpent>, StoreError>;
}

/// What a counter that last counted `window_ms` and has spent `spent` holds in
/// `charge`'s window.
pub(crate) fn spent_in(charge: &BudgetCharge, window_ms: u64, spent: u64) -> u64 {
    if window_ms == charge.window_ms {
        spent
    } else {
        0
    }
}

/// Whether `charge` has room on a counter holding `spent` in its window.
pub(crate) fn has_room(charge: &BudgetCharge, spent: u64) -> bool {
    charge
        .limit
        .is_none_or(|limit| spent.saturating_add(charge.amount) <= limit)
}

#[cfg(test)]
pub(crate) mod suite {
    //! What every store's counters hold to, run against each.

    use super::*;

    fn charge(counter: &str, window_ms: u64, amount: u64, limit: Option<u64>) -> BudgetCharge {
        BudgetCharge {
            counter: counter.into(),
            window_ms,
            amount,
            limit,
        }
    }

    /// A call charges all its budgets or none; a window passing empties a
    /// counter; a refund gives back only within its window; an approved
    /// call charges past the limit.
    pub(crate) fn exercise(store: &dyn BudgetCounters) {
        let calls = charge("calls|*|1h||Deny@bot", 1000, 1, Some(2));
        let cost = charge("cost|*|1h||Deny@bot", 1000, 30, Some(50));
        assert_eq!(
            store
                .charge_budgets(&[calls.clone(), cost.clone()])
                .unwrap(),
            BudgetTaken::Taken(vec![1, 30])
        );
        assert_eq!(
            store
                .charge_budgets(&[calls.clone(), cost.clone()])
                .unwrap(),
            BudgetTaken::Over {
                charge: 1,
                spent: 30
            },
            "30 + 30 is past 50"
        );
        let cheap = charge("cost|*|1h||Deny@bot", 1000, 20, Some(50));
        assert_eq!(
            store
                .charge_budgets(&[calls.clone(), cheap.clone()])
                .unwrap(),
            BudgetTaken::Taken(vec![2, 50]),
            "the refused call took nothing from the calls counter"
        );
        store.refund_budgets(&[cheap]).unwrap();
        let approved = charge("cost|*|1h||Deny@bot", 1000, 40, None);
        assert_eq!(
            store.charge_budgets(&[approved]).unwrap(),
            BudgetTaken::Taken(vec![70])
        );
        let next_hour = charge("calls|*|1h||Deny@bot", 2000, 1, Some(2));
        assert_eq!(
            store.charge_budgets(&[next_hour]).unwrap(),
            BudgetTaken::Taken(vec![1])
        );
        store.refund_budgets(&[calls]).unwrap();
        let mut spent = store.budgets_spent().unwrap();
        spent.sort_by(|a, b| a.counter.cmp(&b.counter));
        assert_eq!(
            spent,
            [
                BudgetSpent {
                    counter: "calls|*|1h||Deny@bot".into(),
                    window_ms: 2000,
                    spent: 1
                },
                BudgetSpent {
                    counter: "cost|*|1h||Deny@bot".into(),
                    window_ms: 1000,
                    spent: 70
                }
            ],
            "a refund for a window gone by gives nothing back"
        );
    }

    /// Eight threads racing for a budget of 50, each on one of `stores` in
    /// turn (stores over the same data), get exactly 50 calls.
    pub(crate) fn race(stores: &[&dyn BudgetCounters]) {
        let taken = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|scope| {
            for thread in 0..8 {
                let (store, taken) = (stores[thread % stores.len()], &taken);
                scope.spawn(move || {
                    for _ in 0..20 {
                        let one = charge("calls|t|1d||Deny@", 0, 1, Some(50));
                        if let BudgetTaken::Taken(_) = store.charge_budgets(&[one]).unwrap() {
                            taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(taken.into_inner(), 50);
    }
}
