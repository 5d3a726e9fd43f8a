//! `toolgate budgets`: what each budget of the spec has spent in its window
//! now, from the counters the store shares with every instance on it.

use std::process::ExitCode;
use std::time::SystemTime;

use serde_json::json;

use crate::context::{CommandResult, load, open_store};
use crate::output::print_json;
use crate::{SpecArgs, StateArgs};

/// Prints each budget's use now: one line per budget and principal counted.
pub fn run(args: &SpecArgs, state: &StateArgs) -> CommandResult {
    let (spec, _) = load(args)?;
    if spec.budgets.is_empty() {
        if args.json {
            print_json(&json!([]));
        } else {
            sayln!(
                "the spec declares no budgets (add a `budgets:` section to count calls or cost)"
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let store = open_store(args, state)?;
    let uses = toolgate::budgets::budgets_in_use(&spec.budgets, &*store, SystemTime::now())
        .map_err(|e| e.to_string())?;
    if args.json {
        print_json(&json!(uses));
        return Ok(ExitCode::SUCCESS);
    }
    for used in &uses {
        let who = match used.principal.as_deref() {
            None => "every caller".to_owned(),
            Some(id) => id.to_owned(),
        };
        let flag = if used.spent >= used.limit {
            "  (used up)"
        } else {
            ""
        };
        sayln!(
            "{}  {}\n    {who}: {} of {} {} spent; over: {}; the window ends {}{flag}",
            used.budget,
            used.describes,
            used.spent,
            used.limit,
            used.unit,
            used.over,
            used.window_end
        );
    }
    Ok(ExitCode::SUCCESS)
}
