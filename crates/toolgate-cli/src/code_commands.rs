//! `toolgate code`: code mode on the command line — the stubs a model reads, and
//! running a program whose every tool call takes the gate.

use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use toolgate::code_mode::{CodeLimits, CodeMode, CodeRun};

use crate::context::CommandResult;
use crate::context::{SpecArgs, StateArgs};
use crate::context::{load, open_gate, open_store, principal};
use crate::output::{print_json, say_table};

/// What `toolgate code` does.
#[derive(Subcommand)]
pub enum CodeAction {
    /// Print the program's API: one Python function per tool the principal may call.
    Stubs {
        /// For this principal (declared under `principals:`; default: the operator).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
    },
    /// Run a program; each of its tool calls takes the gate, as `toolgate call` does.
    Run {
        /// The program file, or `-` for standard input.
        #[arg(default_value = "-")]
        program: String,
        /// As this principal (declared under `principals:`; default: the operator).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
    },
    /// Resume a program paused for approval, once the approval is answered.
    Resume {
        /// The program's run id (`toolgate code list` shows it).
        run_id: String,
        /// As this principal, who must be the one that ran it (default: the operator).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
    },
    /// List the programs paused for approval: session, principal, what each
    /// waits for, since when.
    List,
    /// Put a program left being resumed by a process that died mid-resume back
    /// as paused, so that it can be resumed again. Only when no process is still
    /// resuming it: one that is would go on, and the program would run twice.
    Release {
        /// The program's run id (from the refused `toolgate code resume`).
        run_id: String,
    },
}

pub fn run(args: &SpecArgs, state: &StateArgs, action: CodeAction) -> CommandResult {
    match action {
        CodeAction::List => return list(args, state),
        CodeAction::Release { run_id } => return release(args, state, &run_id),
        _ => {}
    }
    let (spec, source) = load(args)?;
    let store = open_store(args, state)?;
    let caller = match &action {
        CodeAction::Stubs { caller }
        | CodeAction::Run { caller, .. }
        | CodeAction::Resume { caller, .. } => caller.as_deref(),
        CodeAction::List | CodeAction::Release { .. } => None,
    };
    let principal = principal(&spec, caller)?;
    let pins = store.clone() as Arc<dyn toolgate::store::PinStore>;
    // A program may read any skill, the MCP servers' included.
    let skills = crate::context::spec_skills(&source);
    let upstream = crate::upstreams::Upstream::connect_with(
        &spec,
        &source.path,
        || Ok(pins),
        None,
        Some(skills.clone()),
    )?;
    let gate =
        crate::context::open_gate_with(&spec, &source, &upstream.catalog(), Some(store), &skills)?;
    match action {
        CodeAction::Stubs { .. } => {
            let stubs = toolgate::code_mode::stubs(&gate, &state.session, &principal, Some(&spec))
                .map_err(|e| e.to_string())?;
            say!("{stubs}");
            Ok(ExitCode::SUCCESS)
        }
        CodeAction::Run { program, .. } => {
            let code = read_program(&program)?;
            let worker = crate::code_worker()
                .map_err(|e| format!("cannot find this executable to run the program ({e})"))?;
            let limits = CodeLimits::from_spec(&spec.code_mode);
            let mode = CodeMode::new(worker).limits(limits);
            let runtime = upstream.runtime();
            let run = runtime.block_on(mode.run(&gate, &state.session, &principal, &code));
            Ok(report(args.json, &run))
        }
        CodeAction::Resume { run_id, .. } => {
            let worker = crate::code_worker()
                .map_err(|e| format!("cannot find this executable to run the program ({e})"))?;
            let mode = CodeMode::new(worker).limits(CodeLimits::from_spec(&spec.code_mode));
            let runtime = upstream.runtime();
            let run = runtime.block_on(mode.resume(&gate, &run_id, &principal));
            Ok(report(args.json, &run))
        }
        CodeAction::List | CodeAction::Release { .. } => Ok(ExitCode::SUCCESS),
    }
}

/// `toolgate code release RUN_ID`: a program left `resuming` goes back to paused.
fn release(args: &SpecArgs, state: &StateArgs, run_id: &str) -> CommandResult {
    let store = open_store(args, state)?;
    toolgate::store::CodeRunStore::release_run(store.as_ref(), run_id.trim()).map_err(|_| {
        format!(
            "program `{}` is not being resumed, so there is nothing to release; `toolgate code list` shows the paused programs",
            run_id.trim()
        )
    })?;
    sayln!(
        "program {} is paused again; resume it with `toolgate code resume {}`",
        run_id.trim(),
        run_id.trim()
    );
    Ok(ExitCode::SUCCESS)
}

/// How a program run (or resume) ended: its JSON with `--json`, else what it
/// printed and its value on stdout, its error or pause on stderr. The exit code
/// is 0 for a value, 3 for a pause (as `toolgate call` for a pending approval),
/// 1 otherwise.
fn report(json: bool, run: &CodeRun) -> ExitCode {
    if json {
        print_json(run);
    } else if run.is_ok() {
        say!("{}", run.printed);
        match (&run.value, &run.repr) {
            (Some(value), _) => sayln!(
                "{}",
                serde_json::to_string_pretty(value).unwrap_or_default()
            ),
            (None, Some(repr)) => sayln!("{repr}"),
            (None, None) => {}
        }
    } else {
        say!("{}", run.printed);
        if let (Some(run_id), Some(approval_id)) = (&run.run_id, &run.approval_id) {
            let (tool, reason) = run
                .waiting_for
                .as_ref()
                .map_or(("a tool", ""), |w| (w.tool.as_str(), w.reason.as_str()));
            tellln!(
                "paused: program {run_id} waits at its call of {tool} for approval {approval_id}: {reason}\n  approve it with `toolgate approvals approve {approval_id}` (or deny it), then `toolgate code resume {run_id}`"
            );
        }
        if let Some(error) = &run.error {
            tellln!("error: {}", error.message);
            if !error.traceback.is_empty() {
                tell!("{}", error.traceback);
                if !error.traceback.ends_with('\n') {
                    tellln!("");
                }
            }
        }
    }
    if run.is_ok() {
        ExitCode::SUCCESS
    } else if run.is_pending() {
        ExitCode::from(3)
    } else {
        ExitCode::FAILURE
    }
}

/// `toolgate code list`: the programs paused for approval, oldest first.
fn list(args: &SpecArgs, state: &StateArgs) -> CommandResult {
    let store = open_store(args, state)?;
    let paused =
        toolgate::store::CodeRunStore::paused_runs(store.as_ref()).map_err(|e| e.to_string())?;
    if args.json {
        print_json(&paused);
        return Ok(ExitCode::SUCCESS);
    }
    if paused.is_empty() {
        sayln!("no programs are paused for approval");
        return Ok(ExitCode::SUCCESS);
    }
    let since = |ms: u64| {
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
        )
        .to_string()
    };
    let mut rows: Vec<[String; 6]> = vec![[
        "RUN".into(),
        "SESSION".into(),
        "PRINCIPAL".into(),
        "WAITS FOR".into(),
        "SINCE".into(),
        "UNTIL".into(),
    ]];
    rows.extend(paused.iter().map(|run| {
        [
            run.run_id.clone(),
            run.session.clone(),
            run.principal.clone(),
            format!("{} ({})", run.approval_id, run.tool),
            since(run.since_ms),
            since(run.expires_ms),
        ]
    }));
    say_table(&rows);
    Ok(ExitCode::SUCCESS)
}

fn read_program(program: &str) -> Result<String, String> {
    if program == "-" {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .map_err(|e| format!("cannot read the program from standard input ({e})"))?;
        return Ok(code);
    }
    toolgate::files::read_regular_file(std::path::Path::new(program))
        .map_err(|e| format!("cannot read the program {program}: {e}"))
}

/// `render --code-mode`: `run_code` (its description carries the stubs, for the
/// operator at the start of a conversation), `resume_code` (for a program paused
/// for approval) plus the tools marked `always_loaded`, which stay callable
/// directly.
pub fn render(
    args: &SpecArgs,
    target: toolgate::wire::Target,
    options: toolgate::wire::RenderOptions,
) -> CommandResult {
    let (spec, source) = load(args)?;
    let tools = crate::wire_commands::descriptors(&spec, &source.path)?;
    let gate = open_gate(&spec, &source, &toolgate::Catalog::new(), None)?;
    let run_code = toolgate::code_mode::run_code_tool(
        &gate,
        "default",
        &toolgate::Principal::operator(),
        Some(&spec),
    )
    .map_err(|e| e.to_string())?;
    let resume_code = toolgate::code_mode::resume_code_descriptor(run_code.effect);
    let defer = toolgate::wire::DeferSet::from_spec(&spec);
    let mut offered = vec![run_code, resume_code];
    offered.extend(tools.into_iter().filter(|t| !defer.is_deferred(&t.name)));
    let rendered = toolgate::wire::render(target, &offered, &spec.hosted, options);
    print_json(&serde_json::json!({ "tools": rendered.tools }));
    for problem in &rendered.problems {
        tellln!("error: {}", problem.message);
    }
    Ok(if rendered.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
