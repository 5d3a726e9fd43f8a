//! Budgets, the `budgets:` section: how many calls, or how much cost, a
//! principal (each principal, or every caller together) may spend on a set of
//! tools per window, and what happens to a call past it (asked or denied). A
//! tool's cost per call is its `cost:`, fixed or read from an argument. The
//! runtime's gate counts and enforces them; here is what they say and how
//! `toolgate check` finds mistakes in them.
//!
//! A window is fixed, not sliding: `per: 1h` counts from the top of each hour
//! and `per: 1d` from midnight UTC (windows are aligned to the Unix epoch), so
//! every instance agrees on when a budget starts afresh and a refusal can say
//! when that is.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::diagnostic::Diagnostic;
use super::document::Document;
use super::model::SpecFile;

/// One budget: which calls it counts, how much they may spend per window, and
/// what a call past it meets.
///
/// ```yaml
/// budgets:
///   - { principal: support_bot, tools: "refund_*", calls: 20, per: 1h, over: ask }
///   - { principal: "*", tools: "*", cost: 500, per: 1d, over: deny }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The principal whose calls count (`*`: each principal, counted apart);
    /// absent: every caller's, counted together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The tools whose calls count: a name, or a prefix ending in `*` (`ns.*`,
    /// `refund_*`, `*` for every tool; the default).
    #[serde(default = "every_tool")]
    pub tools: String,
    /// How many calls may run per window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// How many cost units (the tools' `cost:`) the calls may spend per window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<u64>,
    /// The window, such as `1h` or `1d`; windows start at multiples of it
    /// since the Unix epoch (UTC).
    pub per: String,
    /// What a call past the budget meets: `deny` (the default) or `ask`.
    #[serde(default, skip_serializing_if = "OverBudget::is_deny")]
    pub over: OverBudget,
}

fn every_tool() -> String {
    "*".to_owned()
}

/// What a call that would go past a budget meets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OverBudget {
    /// It is refused, with when the window starts afresh.
    #[default]
    Deny,
    /// A human is asked; if approved, it runs and counts past the budget.
    Ask,
}

impl OverBudget {
    /// Whether it is the default, `deny` (omitted when serialized).
    pub fn is_deny(&self) -> bool {
        *self == OverBudget::Deny
    }
}

/// What one call of a tool costs, for the budgets that count cost: a fixed
/// number (`cost: 3`) or the value of an argument (`cost: {arg: amount_cents}`,
/// a dotted path for a nested one), a number at least 0 and rounded up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Cost {
    /// The same for every call.
    Fixed(u64),
    /// Read from the call's arguments.
    Arg {
        /// The argument's name, or a dotted path to a nested one.
        arg: String,
    },
}

impl Cost {
    /// What a call with `arguments` costs, or why it cannot be told.
    pub fn of(&self, arguments: &Value) -> Result<u64, String> {
        let path = match self {
            Cost::Fixed(n) => return Ok(*n),
            Cost::Arg { arg } => arg,
        };
        let found = path
            .split('.')
            .try_fold(arguments, |value, key| value.get(key));
        match found.and_then(Value::as_f64) {
            Some(n) if n >= 0.0 && n.is_finite() => Ok(n.ceil().min(u64::MAX as f64) as u64),
            Some(_) => Err(format!(
                "the call's cost is read from `{path}`, which is below 0; give a number of at least 0"
            )),
            None if found.is_none() => Err(format!(
                "the call's cost is read from `{path}`, which the call does not give; give it as a number"
            )),
            None => Err(format!(
                "the call's cost is read from `{path}`, which is not a number; give it as a number"
            )),
        }
    }
}

/// What a call spends of one budget it falls under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// The budget's place under `budgets:`.
    pub budget: usize,
    /// The counter it is charged to ([`Budget::counter`]).
    pub counter: String,
    /// The window the call falls in: its start and end, in milliseconds since
    /// the epoch.
    pub window: (u64, u64),
    /// What the call spends: 1 call, or its cost.
    pub amount: u64,
    /// The most the window may spend.
    pub limit: u64,
}

/// What a call of `tool` by `principal` with `arguments`, made at `now_ms`
/// (milliseconds since the epoch), spends of each of `budgets` it falls under
/// — a budget it spends nothing of is left out, and of two on one counter
/// (which `check` refuses) the smaller limit holds — or why its cost cannot be
/// told. What the gate charges, and what a replay of the log charges.
pub fn charges(
    budgets: &[Budget],
    tool: &crate::ToolDescriptor,
    principal: &str,
    arguments: &Value,
    now_ms: u64,
) -> Result<Vec<Charge>, String> {
    let mut out: Vec<Charge> = Vec::new();
    for (index, budget) in budgets.iter().enumerate() {
        let (Some(counted), true) = (budget.counted(principal), budget.covers(&tool.name)) else {
            continue;
        };
        let Some(window) = budget.window_at(now_ms) else {
            continue;
        };
        let amount = budget.amount(tool, arguments)?;
        if amount == 0 {
            continue;
        }
        let counter = budget.counter(&counted);
        let limit = budget.limit();
        match out.iter_mut().find(|c| c.counter == counter) {
            Some(same) => same.limit = same.limit.min(limit),
            None => out.push(Charge {
                budget: index,
                counter,
                window,
                amount,
                limit,
            }),
        }
    }
    Ok(out)
}

impl Budget {
    /// The window, when `per` is a duration of at least a second.
    pub fn window(&self) -> Option<Duration> {
        humantime::parse_duration(&self.per)
            .ok()
            .filter(|d| d.as_secs() >= 1)
    }

    /// Whether the budget counts calls of `tool`.
    pub fn covers(&self, tool: &str) -> bool {
        match self.tools.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => self.tools == tool,
        }
    }

    /// How much the budget lets through per window: calls, or cost units.
    pub fn limit(&self) -> u64 {
        self.calls.or(self.cost).unwrap_or(0)
    }

    /// What it counts: `calls` or `cost`.
    pub fn unit(&self) -> &'static str {
        if self.calls.is_some() {
            "calls"
        } else {
            "cost"
        }
    }

    /// The start of the window `now_ms` (milliseconds since the epoch) is in,
    /// and the start of the next, in milliseconds since the epoch.
    pub fn window_at(&self, now_ms: u64) -> Option<(u64, u64)> {
        let per = u64::try_from(self.window()?.as_millis()).unwrap_or(u64::MAX);
        let start = now_ms - now_ms % per;
        Some((start, start.saturating_add(per)))
    }

    /// Whose calls a call of `principal` counts as: `None` when the budget
    /// does not count that principal's calls, `""` for every caller together.
    pub fn counted(&self, principal: &str) -> Option<String> {
        match self.principal.as_deref() {
            None => Some(String::new()),
            Some("*") => Some(principal.to_owned()),
            Some(id) => (id == principal).then(|| principal.to_owned()),
        }
    }

    /// The name of the counter that holds the calls of `counted` (as
    /// [`Budget::counted`] says): the same for every instance with this
    /// budget, and kept when only its limit changes, so raising a budget
    /// does not forget what the window has spent.
    pub fn counter(&self, counted: &str) -> String {
        let principal = self.principal.as_deref().unwrap_or("");
        format!(
            "{}|{}|{}|{principal}|{:?}@{counted}",
            self.unit(),
            self.tools,
            self.per,
            self.over
        )
    }

    /// The verdict on a call that would take this budget (`budgets[index]`)
    /// past its limit: its window has spent `spent`, the call would spend
    /// `amount`, and the window ends at `window_end_ms` (`now_ms` is now; both
    /// milliseconds since the epoch). The words say how far over, and when the
    /// budget starts afresh.
    pub fn over(
        &self,
        index: usize,
        spent: u64,
        amount: u64,
        window_end_ms: u64,
        now_ms: u64,
    ) -> crate::Verdict {
        let after = spent.saturating_add(amount);
        let (limit, unit) = (self.limit(), self.unit());
        let costs = if unit == "cost" {
            format!("; this call costs {amount}")
        } else {
            String::new()
        };
        let reason = format!(
            "over budget ({}): {spent} of {limit} {unit} spent this window{costs}, so it would make {after} ({} over)",
            self.describe(),
            after.saturating_sub(limit),
        );
        let (decision, reason) = match self.over {
            OverBudget::Deny => {
                let afresh = std::time::UNIX_EPOCH + Duration::from_millis(window_end_ms);
                let wait = Duration::from_secs(window_end_ms.saturating_sub(now_ms).div_ceil(1000));
                (
                    crate::Decision::Deny,
                    format!(
                        "{reason}; the budget starts afresh at {} (in {}), try then",
                        humantime::format_rfc3339_seconds(afresh),
                        humantime::format_duration(wait)
                    ),
                )
            }
            OverBudget::Ask => (
                crate::Decision::Ask,
                format!("{reason}; approve to let it run past the budget"),
            ),
        };
        crate::Verdict {
            decision,
            reason,
            decided_by: format!("budgets[{index}]"),
            answered_by: crate::AnsweredBy::Approver,
        }
    }

    /// What a call of `tool` with `arguments` spends of this budget: 1 for a
    /// budget of calls, its cost for one of cost (0 for a tool without one),
    /// or why its cost cannot be told.
    fn amount(&self, tool: &crate::ToolDescriptor, arguments: &Value) -> Result<u64, String> {
        match (self.calls, &tool.cost) {
            (Some(_), _) => Ok(1),
            (None, Some(cost)) => cost.of(arguments),
            (None, None) => Ok(0),
        }
    }

    /// What the budget holds to, in words: `support_bot's calls to
    /// `refund_*`: 20 calls per 1h`.
    pub fn describe(&self) -> String {
        let who = match self.principal.as_deref() {
            Some("*") => "each principal's calls".to_owned(),
            Some(id) => format!("{id}'s calls"),
            None => "all calls".to_owned(),
        };
        let tools = match self.tools.as_str() {
            "*" => String::new(),
            tools => format!(" to `{tools}`"),
        };
        let amount = match (self.calls, self.cost) {
            (Some(calls), _) => format!("{calls} calls"),
            (None, Some(cost)) => format!("{cost} cost units"),
            (None, None) => "nothing".to_owned(),
        };
        format!("{who}{tools}: {amount} per {}", self.per)
    }
}

/// The problems of `budgets:` and of the tools' `cost:`: a budget that counts
/// neither or both, counts nothing, has no window, names an undeclared
/// principal or repeats another; a cost read from an argument the tool does
/// not take; a cost budget no declared cost feeds.
pub(super) fn check_budgets(doc: &Document, spec: &SpecFile) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut error = |path: String, message: String, help: &str| {
        let span = doc.value_span(&path).or_else(|| {
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            doc.value_span(parent)
        });
        out.push(
            Diagnostic::error(path, message)
                .with_help(help.to_owned())
                .with_span(span),
        );
    };
    let mut counters: Vec<String> = Vec::new();
    for (i, budget) in spec.budgets.iter().enumerate() {
        let at = |field: &str| format!("/budgets/{i}{field}");
        match (budget.calls, budget.cost) {
            (None, None) => error(
                at(""),
                "this budget sets neither `calls` nor `cost`, so it counts nothing".into(),
                "write e.g. `calls: 20` to count calls, or `cost: 500` to count the tools' `cost:`",
            ),
            (Some(_), Some(_)) => error(
                at("/cost"),
                "a budget counts `calls` or `cost`, not both".into(),
                "write two budgets, one for each",
            ),
            (Some(0), _) | (_, Some(0)) => error(
                at(if budget.calls.is_some() {
                    "/calls"
                } else {
                    "/cost"
                }),
                "this budget is 0, so no call could ever run".into(),
                "write at least 1; to refuse a tool altogether, deny it in `policy:`",
            ),
            _ => {}
        }
        if budget.window().is_none() {
            error(
                at("/per"),
                format!("`{}` is not a duration of at least a second", budget.per),
                "write a window such as `1h`, `1d` or `7d`",
            );
        }
        if let Some(principal) = budget.principal.as_deref()
            && principal != "*"
            && principal != "operator"
            && !spec.principals.contains_key(principal)
        {
            error(
                at("/principal"),
                format!("`{principal}` is not a principal the spec declares"),
                "name one declared under `principals:`, or `*` for each principal",
            );
        }
        // Two budgets on one counter (a budget of neither or both is an error above).
        let counter = budget.counter("");
        if budget.calls.is_some() != budget.cost.is_some() {
            if counters.contains(&counter) {
                error(
                    at(""),
                    "this budget counts the same calls over the same window as one above it".into(),
                    "keep one of them, with the smaller limit",
                );
            }
            counters.push(counter);
        }
        if budget.cost.is_some() && !cost_feeds(spec, budget) {
            error(
                at("/tools"),
                format!(
                    "no tool matching `{}` declares a `cost:`, so this budget counts nothing",
                    budget.tools
                ),
                "give the tools a `cost:` (e.g. `cost: 1` or `cost: {arg: amount_cents}`), or count `calls`",
            );
        }
    }
    for (i, tool) in spec.tools.iter().enumerate() {
        if let Some(Cost::Arg { arg }) = &tool.cost
            && !takes_argument(tool.parameters.as_ref(), arg)
        {
            error(
                format!("/tools/{i}/cost/arg"),
                format!(
                    "`{}` takes no argument `{arg}` to read its cost from",
                    tool.name
                ),
                "name a numeric property of `parameters` (a dotted path for a nested one)",
            );
        }
    }
    out
}

/// Whether some declared tool `budget` covers has a cost, or some upstream
/// server declares costs (whose tools `check` does not know).
fn cost_feeds(spec: &SpecFile, budget: &Budget) -> bool {
    spec.tools
        .iter()
        .any(|t| t.cost.is_some() && budget.covers(&t.name))
        || spec.mcp_servers.values().any(|s| !s.costs.is_empty())
}

/// Whether `parameters` has the property at dotted `path`.
fn takes_argument(parameters: Option<&Value>, path: &str) -> bool {
    let Some(mut schema) = parameters else {
        return false;
    };
    for key in path.split('.') {
        match schema.get("properties").and_then(|p| p.get(key)) {
            Some(property) => schema = property,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(yaml: &str) -> Vec<String> {
        let spec: SpecFile = serde_saphyr::from_str(yaml).unwrap();
        let doc = Document::parse(yaml).unwrap();
        check_budgets(&doc, &spec)
            .into_iter()
            .map(|d| format!("{} {}", d.path, d.message))
            .collect()
    }

    #[test]
    fn a_budget_that_counts_nothing_or_cannot_be_counted_is_an_error() {
        let found = problems(
            "principals:\n  bot: {}\ntools:\n  - name: refund\n    description: d\n    parameters: {type: object, properties: {cents: {type: integer}}}\n    cost: {arg: amount}\nbudgets:\n  - {tools: a, per: 1h}\n  - {calls: 1, cost: 2, per: 1h}\n  - {calls: 0, per: 1h}\n  - {calls: 3, per: soon}\n  - {principal: bott, calls: 3, per: 1h}\n  - {principal: bot, calls: 5, per: 1h}\n  - {principal: bot, calls: 9, per: 1h}\n  - {tools: search, cost: 10, per: 1d}\n",
        );
        insta::assert_snapshot!(found.join("\n"), @r"
        /budgets/0 this budget sets neither `calls` nor `cost`, so it counts nothing
        /budgets/1/cost a budget counts `calls` or `cost`, not both
        /budgets/2/calls this budget is 0, so no call could ever run
        /budgets/3/per `soon` is not a duration of at least a second
        /budgets/4/principal `bott` is not a principal the spec declares
        /budgets/6 this budget counts the same calls over the same window as one above it
        /budgets/7/tools no tool matching `search` declares a `cost:`, so this budget counts nothing
        /tools/0/cost/arg `refund` takes no argument `amount` to read its cost from
        ");
    }

    #[test]
    fn a_cost_is_fixed_or_read_from_an_argument_rounded_up() {
        let fixed: Cost = serde_json::from_value(json!(3)).unwrap();
        assert_eq!(fixed.of(&json!({})), Ok(3));
        let read: Cost = serde_json::from_value(json!({"arg": "payment.cents"})).unwrap();
        assert_eq!(read.of(&json!({"payment": {"cents": 1250}})), Ok(1250));
        assert_eq!(read.of(&json!({"payment": {"cents": 12.2}})), Ok(13));
        insta::assert_snapshot!(
            [json!({}), json!({"payment": {"cents": "12"}}), json!({"payment": {"cents": -1}})]
                .iter()
                .map(|args| read.of(args).unwrap_err())
                .collect::<Vec<_>>()
                .join("\n"),
            @r"
        the call's cost is read from `payment.cents`, which the call does not give; give it as a number
        the call's cost is read from `payment.cents`, which is not a number; give it as a number
        the call's cost is read from `payment.cents`, which is below 0; give a number of at least 0
        "
        );
    }

    #[test]
    fn a_window_starts_at_a_multiple_of_its_length_since_the_epoch() {
        let budget: Budget =
            serde_json::from_value(json!({"principal": "*", "calls": 20, "per": "1h"})).unwrap();
        let hour = 3_600_000;
        assert_eq!(budget.window_at(5 * hour + 123), Some((5 * hour, 6 * hour)));
        assert_eq!(budget.counted("bot").as_deref(), Some("bot"));
        assert_eq!(budget.describe(), "each principal's calls: 20 calls per 1h");
        let mine: Budget = serde_json::from_value(
            json!({"principal": "bot", "tools": "refund_*", "cost": 500, "per": "1d", "over": "ask"}),
        )
        .unwrap();
        assert_eq!(mine.counted("other"), None);
        assert_eq!(
            mine.describe(),
            "bot's calls to `refund_*`: 500 cost units per 1d"
        );
        assert_eq!(mine.counter("bot"), "cost|refund_*|1d|bot|Ask@bot");
    }
}
