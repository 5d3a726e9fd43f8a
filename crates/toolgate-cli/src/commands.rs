//! One function per command. Each returns the exit code, or a message for stderr.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::spec::{SpecFile, returns_shape, spec_file_schema};
use toolgate::{Catalog, Gate, Outcome, ToolCall, spec::SpecSource};

use crate::StateAction;
use crate::context::{CommandResult, SpecArgs, StateArgs, load, open_gate, open_store, principal};
use crate::output::{describe_tool, first_line, print_json, show_json};

/// `check`, and with `sandbox` (the operator's allow-list) the bindings a sandbox
/// would downgrade to mocks.
pub fn check(args: &SpecArgs, sandbox: Option<&[String]>) -> CommandResult {
    let source = SpecSource::read(&args.file).map_err(|e| e.to_string())?;
    let sandboxed = match (sandbox, &source.checked.spec) {
        (Some(allow), Some(spec)) => Some(sandbox_report(spec, allow)?),
        _ => None,
    };
    let labels = source
        .checked
        .spec
        .as_ref()
        .map(toolgate::spec::label_report)
        .filter(toolgate::spec::LabelReport::worth_saying);
    if args.json {
        let mut out =
            json!({ "ok": source.checked.is_ok(), "diagnostics": source.checked.diagnostics });
        if let Some((downgrades, _)) = &sandboxed {
            out["downgrades"] = json!(downgrades);
        }
        if let Some(labels) = &labels {
            out["labels"] = labels.to_json();
        }
        print_json(&out);
    } else if source.checked.diagnostics.is_empty() {
        let tools = source.checked.spec.as_ref().map_or(0, |s| s.tools.len());
        sayln!(
            "{}: ok, {tools} tool{}",
            args.file.display(),
            if tools == 1 { "" } else { "s" }
        );
    } else {
        say!("{}", source.render_diagnostics());
    }
    if let Some((_, lines)) = &sandboxed
        && !args.json
    {
        lines.iter().for_each(|line| sayln!("{line}"));
    }
    if let Some(labels) = &labels
        && !args.json
    {
        labels.lines().iter().for_each(|line| sayln!("{line}"));
    }
    Ok(if source.checked.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `check --sandbox` reports: the downgrades, and the lines that say them.
fn sandbox_report(
    spec: &SpecFile,
    allow: &[String],
) -> Result<(Vec<toolgate::http::Downgrade>, Vec<String>), String> {
    for entry in allow {
        toolgate::spec::AllowEntry::parse(entry).map_err(|e| format!("--allow {entry}: {e}"))?;
    }
    let section = toolgate::spec::NetworkSection {
        allow: allow.to_vec(),
        allow_public: false,
    };
    let (_, downgrades) = toolgate::http::sandbox(spec, &section);
    let bindings = spec
        .tools
        .iter()
        .filter(|t| t.http.is_some() || t.mcp.is_some())
        .count();
    let mut lines = Vec::new();
    if !spec.network.is_default() {
        lines.push("sandbox: the file's own `network:` section is ignored".to_owned());
    }
    lines.push(match downgrades.len() {
        0 => format!("sandbox: all {bindings} binding(s) are inside the allow-list"),
        n => format!("sandbox: {n} of {bindings} binding(s) downgraded to mocks"),
    });
    let width = downgrades.iter().map(|d| d.tool.len()).max().unwrap_or(0);
    for d in &downgrades {
        lines.push(format!(
            "  {:width$}  {} {} -> mock: {}",
            d.tool,
            d.binding.as_str(),
            d.target,
            d.reason
        ));
    }
    Ok((downgrades, lines))
}

pub fn schema() -> CommandResult {
    print_json(spec_file_schema());
    Ok(ExitCode::SUCCESS)
}

pub fn list(args: &SpecArgs) -> CommandResult {
    let (spec, source) = load(args)?;
    let upstream = crate::upstreams::Upstream::for_listing(&spec, &source.path)?.rows();
    if args.json {
        let mut rows: Vec<Value> = spec
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "effect": t.effect(), "binding": t.binding_kind(), "description": t.description}))
            .collect();
        rows.extend(upstream.iter().map(crate::upstreams::ListRow::json));
        print_json(&rows);
        return Ok(ExitCode::SUCCESS);
    }
    let width = spec
        .tools
        .iter()
        .map(|t| t.name.len())
        .chain(upstream.iter().map(|r| r.descriptor.name.len()))
        .max()
        .unwrap_or(0);
    for tool in &spec.tools {
        sayln!(
            "{:width$}  {:11}  {:6}  {}",
            tool.name,
            tool.effect().as_str(),
            tool.binding_kind().as_str(),
            first_line(&tool.description, 72)
        );
    }
    for row in &upstream {
        let status = row.status.map(|s| format!("[{s}] ")).unwrap_or_default();
        sayln!(
            "{:width$}  {:11}  {:6}  {status}{}",
            row.descriptor.name,
            row.descriptor.effect.as_str(),
            "mcp",
            first_line(&row.descriptor.description, 72)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn describe(args: &SpecArgs, name: &str) -> CommandResult {
    let (spec, source) = load(args)?;
    if crate::upstreams::is_upstream_name(&spec, name) {
        return crate::upstreams::describe(args, &spec, &source.path, name);
    }
    let catalog =
        toolgate::spec::spec_catalog(&spec, &source.path.display().to_string(), &Catalog::new())
            .map_err(|e| e.to_string())?;
    let descriptor = catalog.get(name).map_err(|e| e.to_string())?.descriptor();
    let tool = spec
        .tools
        .iter()
        .find(|t| t.name == name)
        .expect("the catalog holds only declared tools");
    if args.json {
        print_json(&json!({
            "descriptor": descriptor,
            "binding": tool.binding_kind(),
            "returns_shape": returns_shape(tool),
            "spec": toolgate::http::mask_tool_secrets(tool),
        }));
    } else {
        say!("{}", describe_tool(tool, descriptor));
    }
    Ok(ExitCode::SUCCESS)
}

/// How `toolgate call` makes its call, beyond the tool and its arguments.
#[derive(clap::Args, Debug)]
pub struct CallFlags {
    /// Call as this principal (declared under `principals:`; default: the operator).
    #[arg(long = "as", value_name = "PRINCIPAL")]
    caller: Option<String>,
    /// The largest arguments the call may carry, in bytes (instead of the spec
    /// file's `limits.max_argument_bytes`; default 1 MiB).
    #[arg(long, value_name = "BYTES", value_parser = crate::context::parse_max_argument_bytes)]
    max_argument_bytes: Option<u64>,
    /// When the call waits for approval, wait up to DURATION (`30s`, `5m`) for
    /// the answer (from the console or `toolgate approvals`), then run it.
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    wait: Option<Duration>,
    /// Make the call under this idempotency key: the same call again with the
    /// key (from any process sharing the store) prints the first one's outcome
    /// and runs nothing; the key with other arguments is refused.
    #[arg(long, value_name = "KEY", value_parser = parse_idempotency_key)]
    idempotency_key: Option<String>,
}

/// An idempotency key (see [`toolgate::ToolCall::is_valid_key`]).
fn parse_idempotency_key(text: &str) -> Result<String, String> {
    if toolgate::ToolCall::is_valid_key(text) {
        Ok(text.to_owned())
    } else {
        Err("an idempotency key is 1 to 255 printable ASCII characters without spaces, such as a UUID".into())
    }
}

pub fn call(
    args: &SpecArgs,
    state: &StateArgs,
    name: &str,
    arguments: Option<&str>,
    how: &CallFlags,
) -> CommandResult {
    let (caller, max_argument_bytes, wait) =
        (how.caller.as_deref(), how.max_argument_bytes, how.wait);
    let arguments: Value = match arguments {
        None => json!({}),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| format!("the arguments are not JSON ({e}); pass an object such as '{{\"order_id\": \"A-1\"}}'"))?,
    };
    let (mut spec, source) = load(args)?;
    if max_argument_bytes.is_some() {
        spec.limits.max_argument_bytes = max_argument_bytes;
    }
    let principal = principal(&spec, caller)?;
    let store = open_store(args, state)?;
    let pins = store.clone() as Arc<dyn toolgate::store::PinStore>;
    // `read_skill` reads upstream servers' skills too.
    let skills = crate::context::spec_skills(&source);
    let upstream = crate::upstreams::Upstream::connect_with(
        &spec,
        &source.path,
        || Ok(pins),
        Some(name),
        Some(skills.clone()),
    )?;
    if let Some(why) = upstream.missing(name) {
        return Err(why);
    }
    let gate =
        crate::context::open_gate_with(&spec, &source, &upstream.catalog(), Some(store), &skills)?;
    let runtime = upstream.runtime();
    let mut call = ToolCall::new(format!("cli-{}", std::process::id()), name, arguments);
    call.idempotency_key = how.idempotency_key.clone();
    let mut outcome = runtime.block_on(gate.call(&state.session, call.clone(), &principal));
    if let (Some(wait), Outcome::PendingApproval { approval_id, .. }) = (wait, &outcome)
        && answered_within(&gate, approval_id, wait)
    {
        // Run again: the gate takes the answer (an approval runs it, a denial says why).
        outcome = runtime.block_on(gate.call(&state.session, call, &principal));
    }
    // A background call: say its task at once, then run it to its end here (the
    // task is interrupted if this process is stopped first).
    if let Outcome::Started { task_id } = &outcome {
        if args.json {
            print_json(&outcome);
        } else {
            sayln!("started task {task_id}");
            tellln!(
                "`{name}` runs in the background as task {task_id} (`toolgate tasks get {task_id}` reads it from elsewhere); waiting here for it to end"
            );
        }
        let ended = runtime.block_on(gate.await_task(
            task_id,
            Duration::from_secs(365 * 24 * 3600),
            &principal,
        ));
        outcome = match ended {
            Ok(task) => task.outcome.unwrap_or_else(|| {
                Outcome::error(format!("task {task_id} ended {}", task.status), false)
            }),
            Err(e) => Outcome::error(e.to_string(), false),
        };
    }
    if args.json {
        print_json(&for_a_model(&gate, name, &outcome));
    } else {
        match &outcome {
            Outcome::Ok { value, notes, .. } => {
                show_json(value);
                notes.iter().for_each(|note| tellln!("note: {note}"));
            }
            Outcome::Error { message, .. } => tellln!("error: {message}"),
            Outcome::PendingApproval {
                approval_id,
                reason,
            } => tellln!(
                "pending approval {approval_id}: {reason}\n  approve it with `toolgate approvals approve {approval_id}`, then run the same call again"
            ),
            Outcome::Denied { reason } => tellln!("denied: {reason}"),
            Outcome::Unknown { message, run_id } => tellln!(
                "outcome unknown: {message}; it may have happened, so do not repeat it. Check, then record what happened with `toolgate audit resolve {run_id} --outcome ok|error|cancelled`"
            ),
            Outcome::Started { task_id } => tellln!("task {task_id} is still running"),
            limited @ Outcome::RateLimited { .. } => {
                tellln!("rate limited: {}", limited.message_for_model())
            }
        }
    }
    Ok(ExitCode::from(match outcome {
        Outcome::Ok { .. } => 0,
        Outcome::Error { .. } => 1,
        Outcome::PendingApproval { .. } => 3,
        Outcome::Denied { .. } => 4,
        Outcome::Started { .. } => 5,
        Outcome::RateLimited { .. } => 6,
        Outcome::Unknown { .. } => 7,
    }))
}

/// Waits up to `wait` for a person to answer `approval_id` (in the console, or
/// with `toolgate approvals` in another process); whether they did.
fn answered_within(gate: &Gate, approval_id: &str, wait: Duration) -> bool {
    const POLL: Duration = Duration::from_millis(100);
    tellln!(
        "waiting up to {} for approval {approval_id}: answer it in the console or with `toolgate approvals approve {approval_id}`",
        humantime::format_duration(wait)
    );
    let deadline = std::time::Instant::now() + wait;
    loop {
        if toolgate::store::ApprovalStore::no_longer_pending(gate.store().as_ref(), approval_id) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
}

/// `call --json`'s outcome, every field of it safe to hand to a model: for an
/// untrusted tool (HTTP, MCP), `value` has its strings sanitized as `structured`
/// has, and `text` is sanitized and fenced. The exact value is what `call`
/// without `--json` prints, for a person.
fn for_a_model(gate: &Gate, name: &str, outcome: &Outcome) -> Outcome {
    let untrusted = gate.catalog().get(name).is_ok_and(|tool| !tool.trusted());
    match outcome {
        Outcome::Ok {
            value,
            structured,
            text,
            notes,
        } if untrusted => Outcome::Ok {
            value: toolgate::sanitize::sanitize_value(value),
            structured: structured.clone(),
            text: text.clone(),
            notes: notes.clone(),
        },
        other => other.clone(),
    }
}

pub fn digest(args: &SpecArgs, caller: Option<&str>) -> CommandResult {
    let (spec, source) = load(args)?;
    let principal = principal(&spec, caller)?;
    let skills = crate::context::spec_skills(&source);
    let tools = crate::wire_commands::offered(&spec, &source.path, Some(skills.clone()))?;
    say!(
        "{}",
        toolgate::tool::planner_digest(&tools, &spec.policy, &principal)
    );
    if principal.has_scope_for(toolgate::skills::READ_SKILL) {
        let offered = skills.offered(&principal);
        let skills = toolgate::skills::skills_digest(&offered);
        if !skills.is_empty() {
            say!("\n{skills}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn state(args: &SpecArgs, state: &StateArgs, action: Option<StateAction>) -> CommandResult {
    let (spec, source) = load(args)?;
    let store = open_store(args, state)?;
    let gate = open_gate(&spec, &source, &Catalog::new(), Some(store.clone()))?;
    let session = &state.session;
    match action {
        None => show_json(&gate.state(session).map_err(|e| e.to_string())?),
        Some(StateAction::Get { key }) => {
            let all = gate.state(session).map_err(|e| e.to_string())?;
            match all.get(&key) {
                Some(value) => show_json(value),
                None if spec.state.contains_key(&key) => {
                    return Err(format!(
                        "state key `{key}` is declared but not set in session `{session}` yet"
                    ));
                }
                None => {
                    let known: Vec<&str> = spec.state.keys().map(String::as_str).collect();
                    let hint = toolgate::tool::closest_names(&key, known)
                        .into_iter()
                        .next();
                    let hint = hint
                        .map(|h| format!("; did you mean `{h}`?"))
                        .unwrap_or_default();
                    return Err(format!(
                        "state key `{key}` is not declared in {}{hint}",
                        source.path.display()
                    ));
                }
            }
        }
        Some(StateAction::Set { key, value }) => {
            let value: Value = serde_json::from_str(&value).map_err(|e| {
                format!("the value is not JSON ({e}); strings need quotes: '\"text\"'")
            })?;
            if !spec.state.contains_key(&key) {
                tellln!(
                    "warning: state key `{key}` is not declared under `state:` in {}",
                    source.path.display()
                );
            }
            store
                .apply(session, &[(key, value)])
                .map_err(|e| e.to_string())?;
        }
        Some(StateAction::Reset) => {
            // The conversation starts over: its flow too, which reads the calls.
            store.reset(session).map_err(|e| e.to_string())?;
            store.forget_calls(session).map_err(|e| e.to_string())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
