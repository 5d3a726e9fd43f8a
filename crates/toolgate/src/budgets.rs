//! What each budget has spent in its window now, read from the counters every
//! instance on the store shares: what `toolgate budgets`, the console and
//! `/metrics` show.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use toolgate_core::spec::Budget;

use crate::store::{BudgetCounters, StoreError};

/// One budget's use by one principal it counts (or by every caller together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetUse {
    /// The budget's place under `budgets:`, as `budgets[N]`.
    pub budget: String,
    /// What the budget holds to, in words.
    pub describes: String,
    /// The principal counted; `None` for every caller together, `*` for a
    /// budget of each principal that none has spent from this window.
    pub principal: Option<String>,
    /// What the window has spent so far.
    pub spent: u64,
    /// The most it may spend.
    pub limit: u64,
    /// `calls` or `cost`.
    pub unit: &'static str,
    /// `deny` or `ask`: what a call past it meets.
    pub over: &'static str,
    /// When the window started (RFC 3339, UTC).
    pub window_start: String,
    /// When it ends, and the budget starts afresh.
    pub window_end: String,
}

/// Each budget's use in the window `now` falls in: a row per principal it
/// has ever counted (0 for one that has spent nothing this window), or one
/// with nothing spent.
pub fn budgets_in_use(
    budgets: &[Budget],
    counters: &dyn BudgetCounters,
    now: SystemTime,
) -> Result<Vec<BudgetUse>, StoreError> {
    let spent = counters.budgets_spent()?;
    let now_ms = epoch_ms(now);
    let mut out = Vec::new();
    for (index, budget) in budgets.iter().enumerate() {
        let Some((start, end)) = budget.window_at(now_ms) else {
            continue;
        };
        let row = |principal: Option<String>, spent: u64| BudgetUse {
            budget: format!("budgets[{index}]"),
            describes: budget.describe(),
            principal,
            spent,
            limit: budget.limit(),
            unit: budget.unit(),
            over: if budget.over.is_deny() { "deny" } else { "ask" },
            window_start: rfc3339(start),
            window_end: rfc3339(end),
        };
        let prefix = budget.counter("");
        let mut counted: Vec<BudgetUse> = spent
            .iter()
            .filter_map(|s| {
                let who = s.counter.strip_prefix(&prefix)?;
                let now = if s.window_ms == start { s.spent } else { 0 };
                Some(row((!who.is_empty()).then(|| who.to_owned()), now))
            })
            .collect();
        counted.sort_by(|a, b| a.principal.cmp(&b.principal));
        if counted.is_empty() {
            counted.push(row(budget.principal.clone(), 0));
        }
        out.extend(counted);
    }
    Ok(out)
}

/// Milliseconds since the epoch at `time`, as budgets' windows are counted.
pub(crate) fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
