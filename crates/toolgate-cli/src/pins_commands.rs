//! `toolgate pins`: the pinned definitions of upstream MCP tools and skills (the
//! latter as `skill:NAME`), what changed in the ones that changed, and accepting
//! a change.
//!
//! Pins live in `state.db` in the state directory. A change is recorded whenever
//! toolgate sees the server (any command that lists or calls its tools); accepting
//! it releases the tool or skill everywhere, a running `toolgate serve` included.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use clap::Subcommand;
use serde_json::{Value, json};
use toolgate::{store::Pin, store::ServedStore, store::join_fields};

use crate::context::CommandResult;
use crate::context::{SpecArgs, StateArgs};
use crate::output::print_json;

/// What `toolgate pins` does; without one, it lists the pins.
#[derive(Subcommand)]
pub enum PinAction {
    /// One line per pinned tool or skill: name, `pinned` or `changed`, when, what changed.
    List,
    /// What changed in a tool or skill since it was pinned, part by part.
    Diff {
        /// The tool's name in the catalog, e.g. `fs.read_file`, or `skill:` and
        /// a skill's, e.g. `skill:docs.refund-dispute`.
        tool: String,
    },
    /// Make the recorded change of a tool or skill its pin, releasing it from quarantine.
    Accept {
        /// The tool's name in the catalog, e.g. `fs.read_file`, or `skill:` and
        /// a skill's, e.g. `skill:docs.refund-dispute`.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        tool: Option<String>,
        /// Accept every recorded change.
        #[arg(long)]
        all: bool,
    },
}

/// Runs one `toolgate pins` action.
pub fn run(args: &SpecArgs, state: &StateArgs, action: Option<PinAction>) -> CommandResult {
    let store = open(args, state)?;
    match action {
        None | Some(PinAction::List) => list(args, &*store),
        Some(PinAction::Diff { tool }) => diff(args, &*store, &tool),
        Some(PinAction::Accept { tool, all }) => accept(args, &*store, tool.as_deref(), all),
    }
}

fn open(args: &SpecArgs, state: &StateArgs) -> Result<Arc<dyn ServedStore>, String> {
    crate::context::open_store(args, state)
}

fn list(args: &SpecArgs, store: &dyn ServedStore) -> CommandResult {
    let pins = store.pins().map_err(|e| e.to_string())?;
    if args.json {
        let rows: Vec<Value> = pins
            .iter()
            .map(|p| {
                json!({
                    "tool": p.tool,
                    "status": if p.change.is_some() { "changed" } else { "pinned" },
                    "hash": p.hash,
                    "pinned_at": p.pinned_at,
                    "changed": p.changed_fields(),
                    "seen_at": p.change.as_ref().map(|c| &c.seen_at),
                })
            })
            .collect();
        print_json(&rows);
        return Ok(ExitCode::SUCCESS);
    }
    if pins.is_empty() {
        sayln!(
            "nothing is pinned yet; an MCP server's tools and skills are pinned the first time toolgate lists them"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let width = pins.iter().map(|p| p.tool.len()).max().unwrap_or(0);
    for pin in &pins {
        match &pin.change {
            None => sayln!("{:width$}  pinned   {}", pin.tool, pin.pinned_at),
            Some(change) => sayln!(
                "{:width$}  changed  {}  {} changed (seen {})",
                pin.tool,
                pin.pinned_at,
                join_fields(&pin.changed_fields()),
                change.seen_at
            ),
        }
    }
    let changed = pins.iter().filter(|p| p.change.is_some()).count();
    if changed > 0 {
        tellln!(
            "{changed} {} quarantined; `toolgate pins diff NAME` shows the change, `toolgate pins accept NAME` accepts it",
            if changed == 1 {
                "definition is"
            } else {
                "definitions are"
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn find(store: &dyn ServedStore, tool: &str) -> Result<Pin, String> {
    match store.pin(tool).map_err(|e| e.to_string())? {
        Some(pin) => Ok(pin),
        None => {
            let names: Vec<String> = store
                .pins()
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(|p| p.tool)
                .collect();
            Err(toolgate::store::PinError::Unknown {
                tool: tool.to_owned(),
                suggestions: toolgate::tool::closest_names(tool, names.iter().map(String::as_str)),
            }
            .to_string())
        }
    }
}

fn diff(args: &SpecArgs, store: &dyn ServedStore, tool: &str) -> CommandResult {
    let pin = find(store, tool)?;
    let Some(change) = &pin.change else {
        if args.json {
            print_json(&json!({"tool": pin.tool, "changed": [], "pinned_at": pin.pinned_at}));
        } else {
            sayln!(
                "`{tool}` has not changed since it was pinned at {}",
                pin.pinned_at
            );
        }
        return Ok(ExitCode::SUCCESS);
    };
    if args.json {
        print_json(&json!({
            "tool": pin.tool,
            "changed": pin.changed_fields(),
            "pinned_at": pin.pinned_at,
            "seen_at": change.seen_at,
            "pinned": pin.definition,
            "seen": change.definition,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    say!("{}", toolgate::store::pin_diff(&pin));
    Ok(ExitCode::SUCCESS)
}

fn accept(
    args: &SpecArgs,
    store: &dyn ServedStore,
    tool: Option<&str>,
    all: bool,
) -> CommandResult {
    let tools: Vec<String> = match (tool, all) {
        (Some(tool), _) => vec![tool.to_owned()],
        (None, _) => store
            .pins()
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|p| p.change.is_some())
            .map(|p| p.tool)
            .collect(),
    };
    if tools.is_empty() {
        if args.json {
            print_json(&json!([]));
        } else {
            sayln!("nothing to accept: no pinned tool or skill has changed");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut accepted = Vec::new();
    for tool in &tools {
        let before = find(store, tool)?;
        let fields = before.changed_fields();
        let pin = store
            .accept_pin(tool, SystemTime::now())
            .map_err(|e| e.to_string())?;
        if !args.json {
            sayln!(
                "accepted `{}`: its {} as seen at {}; pinned now ({})",
                pin.tool,
                join_fields(&fields),
                before.change.as_ref().map_or("", |c| c.seen_at.as_str()),
                &pin.hash[..12.min(pin.hash.len())]
            );
        }
        accepted.push(json!({"tool": pin.tool, "hash": pin.hash, "pinned_at": pin.pinned_at, "accepted": fields}));
    }
    if args.json {
        print_json(&accepted);
    }
    Ok(ExitCode::SUCCESS)
}
