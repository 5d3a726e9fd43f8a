//! `toolgate policy explain TOOL ARGS --as P`: which rule decides a call, and why
//! every other rule did not. The decision is the one the gate takes at call time
//! ([`Policy::explain`](toolgate::Policy::explain)), over the arguments given, the
//! conversation state given with `--state` (over the declared defaults) and the
//! claims given with `--claims`; the call history is taken as empty.
//!
//! `toolgate policy simulate --spec NEW.yaml`: the audit log's decisions replayed
//! through another spec's policy (see [`Replay`](toolgate::policy::Replay)).
//!
//! `toolgate policy shadow-report`: what the shadow rules (`mode: shadow`) would
//! have decided on the calls in the audit log, where that differs.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Map, Value, json};
use toolgate::{Catalog, policy::CallFacts, policy::Considered};

use crate::context::CommandResult;
use crate::context::{load, open_store, principal};
use crate::output::print_json;
use crate::{SpecArgs, StateArgs};

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
    /// Replay the audit log's decisions through another spec's policy: which
    /// calls it would decide otherwise, loosened ones first. Nothing runs.
    Simulate {
        /// The spec file whose policy, principals and tools to replay through.
        #[arg(long = "spec", value_name = "NEW.yaml")]
        new: std::path::PathBuf,
        /// Only calls decided within this long before now, e.g. `7d`, `12h`.
        #[arg(long, value_name = "DURATION")]
        since: Option<String>,
        /// Only this caller's calls.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
        /// Exit 1 when some call is loosened (`loosened`: allowed where it was
        /// asked or denied, or asked where it was denied) or decided otherwise at
        /// all (`changed`).
        #[arg(long, value_name = "WHAT")]
        fail_on: Option<FailOn>,
    },
    /// Summarise what the shadow rules (`mode: shadow`) would have decided on
    /// the calls in the audit log, and where that differs from what was decided.
    ShadowReport {
        /// Only calls decided within this long before now, e.g. `7d`, `12h`.
        #[arg(long, value_name = "DURATION")]
        since: Option<String>,
    },
}

/// When `policy simulate` fails.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Some call would be let through further than before.
    Loosened,
    /// Some call would be decided otherwise.
    Changed,
}

/// Runs one `toolgate policy` action.
pub fn run(args: &SpecArgs, state: &StateArgs, action: PolicyAction) -> CommandResult {
    match action {
        PolicyAction::Simulate {
            new,
            since,
            caller,
            fail_on,
        } => simulate(
            args,
            state,
            &new,
            since.as_deref(),
            caller.as_deref(),
            fail_on,
        ),
        PolicyAction::ShadowReport { since } => shadow_report(args, state, since.as_deref()),
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

/// `toolgate policy simulate --spec NEW.yaml [--since D] [--as P] [--fail-on W]`.
fn simulate(
    args: &SpecArgs,
    state: &StateArgs,
    new: &std::path::Path,
    since: Option<&str>,
    caller: Option<&str>,
    fail_on: Option<FailOn>,
) -> CommandResult {
    let since = since_time(since)?;
    let source = toolgate::spec::SpecSource::read(new).map_err(|e| e.to_string())?;
    let Some(spec) = source.checked.spec.as_ref() else {
        return Err(format!(
            "{} has errors; `toolgate check -f {}` shows them",
            new.display(),
            new.display()
        ));
    };
    let catalog = toolgate::spec::spec_catalog(spec, &new.display().to_string(), &Catalog::new())
        .map_err(|e| e.to_string())?;
    let tools: Vec<toolgate::ToolDescriptor> =
        catalog.iter().map(|t| t.descriptor().clone()).collect();
    let records = open_store(args, state)?
        .tail(usize::MAX)
        .map_err(|e| e.to_string())?;
    // A policy in shadow mode decides nothing: toolgate's defaults would.
    let (deciding, _) = spec.policy.clone().split_shadow();
    let replay = toolgate::policy::Replay {
        policy: &deciding,
        principals: &spec.principals,
        tools: &tools,
        spec: Some(spec),
    };
    let run = replay.run(&records, since.as_deref(), caller);
    let loosened = run.loosened();
    if args.json {
        print_json(&json!({
            "judged": run.judged,
            "same": run.same,
            "changed": run.changes.len(),
            "loosened": loosened,
            "groups": run.groups(),
            "changes": run.changes,
            "unjudged": run.unjudged,
        }));
    } else {
        let unjudged: usize = run.unjudged.values().sum();
        sayln!(
            "replayed {} call{} through {}: {} decided as before, {} otherwise ({loosened} loosened), {unjudged} not judged",
            run.judged + unjudged,
            if run.judged + unjudged == 1 { "" } else { "s" },
            new.display(),
            run.same,
            run.changes.len()
        );
        for group in run.groups() {
            let flag = if group.new < group.old {
                "LOOSENED"
            } else {
                "changed "
            };
            sayln!(
                "  {flag}  {}  as {}: {} → {}  ×{}  (decided by {})",
                group.tool,
                group.principal,
                group.old,
                group.new,
                group.calls,
                group.decided_by
            );
        }
        if unjudged > 0 {
            sayln!("  not judged:");
            for (why, calls) in &run.unjudged {
                sayln!("    {calls:>6}  {why}");
            }
        }
    }
    let failed = match fail_on {
        Some(FailOn::Loosened) => loosened > 0,
        Some(FailOn::Changed) => !run.changes.is_empty(),
        None => false,
    };
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `--since 7d` as the RFC 3339 time that long before now, as the log writes it.
fn since_time(since: Option<&str>) -> Result<Option<String>, String> {
    let Some(text) = since else {
        return Ok(None);
    };
    let back = humantime::parse_duration(text)
        .map_err(|e| format!("--since {text}: {e}; write a duration such as 7d or 12h"))?;
    let from = std::time::SystemTime::now()
        .checked_sub(back)
        .unwrap_or(std::time::UNIX_EPOCH);
    Ok(Some(humantime::format_rfc3339_millis(from).to_string()))
}

/// Shadow observations by observer (the rule's place, or `None` for a policy
/// in shadow mode), tool, what was decided and what the observer would have.
type ShadowCounts = std::collections::BTreeMap<
    (
        Option<usize>,
        String,
        toolgate::Decision,
        toolgate::Decision,
    ),
    usize,
>;

/// An observer as the spec file names it: `policy.rules[2]` or `policy`.
fn observer(rule: Option<usize>) -> String {
    rule.map_or_else(|| "policy".to_owned(), |i| format!("policy.rules[{i}]"))
}

/// `toolgate policy shadow-report [--since D]`.
fn shadow_report(args: &SpecArgs, state: &StateArgs, since: Option<&str>) -> CommandResult {
    let since = since_time(since)?;
    let records = open_store(args, state)?
        .tail(usize::MAX)
        .map_err(|e| e.to_string())?;
    let mut counts = ShadowCounts::new();
    for record in &records {
        let entry = &record.entry;
        // A completion repeats its intent's decision: each call counts once.
        if entry.kind == toolgate::audit::RecordKind::Completion
            || since.as_deref().is_some_and(|s| entry.time.as_str() < s)
        {
            continue;
        }
        let (Some(decided), Some(shadow)) = (
            entry.decision,
            entry
                .reason
                .as_deref()
                .and_then(toolgate::policy::Shadowed::from_reason),
        ) else {
            continue;
        };
        *counts
            .entry((shadow.rule, entry.tool.clone(), decided, shadow.decision))
            .or_default() += 1;
    }
    let observed: usize = counts.values().sum();
    let differ: usize = counts
        .iter()
        .filter(|((_, _, decided, shadow), _)| decided != shadow)
        .map(|(_, calls)| calls)
        .sum();
    if args.json {
        let rows: Vec<Value> = counts
            .iter()
            .map(|((rule, tool, decided, shadow), calls)| {
                json!({"rule": observer(*rule), "tool": tool,
                    "decided": decided, "shadow": shadow, "calls": calls})
            })
            .collect();
        print_json(&json!({"observed": observed, "differ": differ, "rows": rows}));
        return Ok(ExitCode::SUCCESS);
    }
    sayln!(
        "shadow rules observed {observed} call{}; {differ} would have been decided otherwise",
        if observed == 1 { "" } else { "s" }
    );
    for ((rule, tool, decided, shadow), calls) in &counts {
        let flag = match shadow.cmp(decided) {
            std::cmp::Ordering::Less => "would loosen ",
            std::cmp::Ordering::Greater => "would tighten",
            std::cmp::Ordering::Equal => "agrees       ",
        };
        sayln!(
            "  {flag}  {}  {tool}: {decided} → {shadow}  ×{calls}",
            observer(*rule)
        );
    }
    Ok(ExitCode::SUCCESS)
}
