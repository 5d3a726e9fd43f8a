//! `toolgate code`: code mode on the command line — the stubs a model reads, and
//! running a program whose every tool call takes the gate.

use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use toolgate::Gate;
use toolgate::code_mode::{CodeLimits, CodeMode, WorkerCommand};

use crate::commands::{CommandResult, load, open_store, principal};
use crate::output::print_json;
use crate::{SpecArgs, StateArgs};

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
}

pub fn run(args: &SpecArgs, state: &StateArgs, action: CodeAction) -> CommandResult {
    let (spec, source) = load(args)?;
    let store = open_store(args, state)?;
    let caller = match &action {
        CodeAction::Stubs { caller } | CodeAction::Run { caller, .. } => caller.as_deref(),
    };
    let principal = principal(&spec, caller)?;
    let pins = store.clone() as Arc<dyn toolgate::PinStore>;
    let upstream = crate::upstreams::Upstream::connect(&spec, &source.path, || Ok(pins), None)?;
    let gate = Gate::from_spec(
        &spec,
        &source.path.display().to_string(),
        &upstream.catalog(),
        store,
    )
    .map_err(|e| e.to_string())?;
    match action {
        CodeAction::Stubs { .. } => {
            let stubs = toolgate::code_mode::stubs(&gate, &state.session, &principal, Some(&spec))
                .map_err(|e| e.to_string())?;
            say!("{stubs}");
            Ok(ExitCode::SUCCESS)
        }
        CodeAction::Run { program, .. } => {
            let code = read_program(&program)?;
            let worker = WorkerCommand::current_exe()
                .map_err(|e| format!("cannot find this executable to run the program ({e})"))?;
            let limits = CodeLimits::from_spec(&spec.code_mode);
            let mode = CodeMode::new(worker).limits(limits);
            let runtime = upstream.runtime();
            let run = runtime.block_on(mode.run(&gate, &state.session, &principal, &code));
            if args.json {
                print_json(&run);
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
            Ok(if run.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

fn read_program(program: &str) -> Result<String, String> {
    if program == "-" {
        let mut code = String::new();
        std::io::stdin()
            .read_to_string(&mut code)
            .map_err(|e| format!("cannot read the program from standard input ({e})"))?;
        return Ok(code);
    }
    toolgate::read_regular_file(std::path::Path::new(program))
        .map_err(|e| format!("cannot read the program {program}: {e}"))
}

/// `render --code-mode`: `run_code` (its description carries the stubs, for the
/// operator at the start of a conversation) plus the tools marked
/// `always_loaded`, which stay callable directly.
pub fn render(
    args: &SpecArgs,
    target: toolgate::wire::Target,
    options: toolgate::wire::RenderOptions,
) -> CommandResult {
    let (spec, source) = load(args)?;
    let tools = crate::wire_commands::descriptors(&spec, &source.path)?;
    let catalog = toolgate::spec_catalog(
        &spec,
        &source.path.display().to_string(),
        &toolgate::Catalog::new(),
    )
    .map_err(|e| e.to_string())?;
    let gate = Gate::builder(catalog).spec(&spec).build();
    let run_code = toolgate::code_mode::run_code_tool(
        &gate,
        "default",
        &toolgate::Principal::operator(),
        Some(&spec),
    )
    .map_err(|e| e.to_string())?;
    let defer = toolgate::wire::DeferSet::from_spec(&spec);
    let mut offered = vec![run_code];
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
