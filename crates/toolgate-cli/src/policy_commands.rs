//! `toolgate policy explain TOOL ARGS --as P`: which rule decides a call, and why
//! every other rule did not. The decision is the one the gate takes at call time
//! ([`Policy::explain`](toolgate::Policy::explain)), over the arguments given, the
//! conversation state given with `--state` (over the declared defaults) and the
//! claims given with `--claims`; the call history is taken as empty.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Map, Value, json};
use toolgate::{Catalog, policy::CallFacts, policy::Considered};

use crate::SpecArgs;
use crate::context::CommandResult;
use crate::context::{load, principal};
use crate::output::print_json;

/// What `toolgate policy` does.
#[derive(Subcommand)]
pub enum PolicyAction {
    /// Say which rule decides a call of TOOL with ARGS, and why, rule by rule.
    Explain {
        /// The tool, as the spec file declares it.
        tool: String,
        /// The call's arguments, as a JSON object (default `{}`).
        arguments: Option<String>,
        /// The caller (declared under `principals:`; default: the operator).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
        /// The conversation's state, as a JSON object, over the declared defaults.
        #[arg(long, value_name = "JSON")]
        state: Option<String>,
        /// The caller's credential claims, as a JSON object (e.g. `{"groups": ["support"]}`).
        #[arg(long, value_name = "JSON")]
        claims: Option<String>,
        /// What the conversation has read, for the rule of two and `seen:`
        /// rules: `untrusted`, `private` or both (`--seen untrusted,private`).
        #[arg(long, value_name = "LABELS", value_delimiter = ',')]
        seen: Vec<toolgate::policy::SeenLabel>,
    },
}

/// Runs one `toolgate policy` action.
pub fn run(args: &SpecArgs, action: PolicyAction) -> CommandResult {
    match action {
        PolicyAction::Explain {
            tool,
            arguments,
            caller,
            state,
            claims,
            seen,
        } => explain(
            args,
            &tool,
            arguments.as_deref(),
            caller.as_deref(),
            state.as_deref(),
            claims.as_deref(),
            &seen,
        ),
    }
}

fn object(text: Option<&str>, what: &str) -> Result<Map<String, Value>, String> {
    let Some(text) = text else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "{what} must be a JSON object such as '{{\"amount_cents\": 5000}}', not {other}"
        )),
        Err(e) => Err(format!("{what} is not JSON ({e}); write a JSON object")),
    }
}

/// `toolgate policy explain TOOL [ARGS] [--as P] [--state JSON] [--claims JSON]`.
fn explain(
    args: &SpecArgs,
    tool: &str,
    arguments: Option<&str>,
    caller: Option<&str>,
    state: Option<&str>,
    claims: Option<&str>,
    labels: &[toolgate::policy::SeenLabel],
) -> CommandResult {
    let (spec, source) = load(args)?;
    let arguments = Value::Object(object(arguments, "ARGS")?);
    let written = object(state, "--state")?;
    let mut who = principal(&spec, caller)?;
    who.claims = object(claims, "--claims")?.into();
    let catalog =
        toolgate::spec::spec_catalog(&spec, &source.path.display().to_string(), &Catalog::new())
            .map_err(|e| e.to_string())?;
    let descriptor = catalog.get(tool).map_err(|e| e.to_string())?.descriptor();
    let mut state: Map<String, Value> = spec
        .state
        .iter()
        .filter_map(|(key, declared)| Some((key.clone(), declared.default.clone()?)))
        .collect();
    state.extend(written);
    let mut seen = toolgate::policy::Seen::default();
    for label in labels {
        let given = toolgate::policy::Labels {
            untrusted: *label == toolgate::policy::SeenLabel::Untrusted,
            private: *label == toolgate::policy::SeenLabel::Private,
        };
        seen.note("--seen", "", given);
    }
    let facts = CallFacts {
        arguments: &arguments,
        state: &state,
        history: &[],
        seen: Some(&seen),
        untrusted: None,
        untrusted_origin: false,
    };
    let explained = spec.policy.explain(descriptor, &who, facts);
    if args.json {
        print_json(&json!({
            "tool": explained.tool,
            "principal": explained.principal,
            "decision": explained.verdict.decision,
            "reason": explained.verdict.reason,
            "decided_by": explained.verdict.decided_by,
            "answered_by": explained.verdict.answered_by,
            "considered": explained.considered,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    let verdict = &explained.verdict;
    sayln!(
        "`{}` as {}: {} (decided by {})",
        explained.tool,
        explained.principal,
        verdict.decision,
        verdict.decided_by
    );
    sayln!("  reason: {}", verdict.reason);
    if verdict.decision == toolgate::Decision::Ask {
        sayln!("  answered by: {}", verdict.answered_by.as_str());
    }
    let width = explained
        .considered
        .iter()
        .map(|c| c.what.chars().count())
        .max()
        .unwrap_or(0);
    for considered in &explained.considered {
        sayln!(
            "  {:width$}  {:11}  {}",
            considered.what,
            status(considered),
            considered.why
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One word for what a step did: `decided`, `matched` (too late), `passed`,
/// `no match` or `not reached`.
fn status(considered: &Considered) -> &'static str {
    let is_rule = considered.what.starts_with("policy.rules");
    let is_effect = considered.what.starts_with("policy.effects");
    match (considered.decided, considered.matched) {
        (true, _) => "decided",
        (false, true) if is_rule => "matched",
        (false, _) if is_rule => "no match",
        (false, _) if is_effect => "not reached",
        (false, _) => "passed",
    }
}
