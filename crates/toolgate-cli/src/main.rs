//! The `toolgate` command: thin argument parsing and output over the `toolgate` library.

// First, so its print macros are in scope in every module below.
#[macro_use]
mod output;

mod anchor_commands;
mod approval_commands;
mod audit_commands;
mod budget_commands;
mod code_commands;
mod commands;
mod console_commands;
mod context;
mod flow_commands;
mod keys_commands;
mod openapi_commands;
mod pins_commands;
mod policy_commands;
mod reload;
mod search_commands;
mod semantic_search;
mod serve_commands;
mod skills_commands;
mod store_commands;
mod task_commands;
mod upstreams;
mod wire_commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use context::{SpecArgs, StateArgs};

/// A served call allocates for every message, span and record it handles:
/// with mimalloc a call takes 9% fewer instructions than with the system
/// allocator, and its telemetry 25% fewer.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// This binary as a code-mode worker. mimalloc reserves address space a
/// gibibyte at a time from the first allocation, and the worker's memory limit
/// (`RLIMIT_AS`, set once it has started) counts reserved space as used: the
/// worker reserves it a few mebibytes at a time instead.
fn code_worker() -> std::io::Result<toolgate::code_mode::WorkerCommand> {
    Ok(toolgate::code_mode::WorkerCommand::current_exe()?.env("MIMALLOC_ARENA_RESERVE", "4MiB"))
}

/// The tool layer between language models and the tools they call.
#[derive(Parser)]
#[command(name = "toolgate", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Write log lines as text or as JSON (one object a line, with the trace
    /// id); their levels come from RUST_LOG (default `warn`).
    #[arg(long, value_name = "FORMAT", global = true)]
    log_format: Option<LogFormatArg>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormatArg {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Validate a spec file: exit 0, or print every problem and exit 1.
    Check {
        #[command(flatten)]
        spec: SpecArgs,
        /// Load the file as someone else's: report each binding outside `--allow`,
        /// which the sandbox downgrades to its mock.
        #[arg(long)]
        sandbox: bool,
        /// With --sandbox: a host, address or CIDR range bindings may keep (repeatable).
        #[arg(long = "allow", value_name = "HOST", requires = "sandbox")]
        allow: Vec<String>,
    },
    /// Print the JSON Schema of the spec file format.
    Schema,
    /// One line per tool: name, effect, binding, first line of its description.
    List {
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Everything about one tool.
    Describe {
        /// The tool's name.
        tool: String,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Validate arguments and run a tool, applying its state effects.
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments as a JSON object (default `{}`).
        args: Option<String>,
        #[command(flatten)]
        how: commands::CallFlags,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Print the tool declarations as a model API expects them in a request body.
    Render {
        #[command(flatten)]
        render: RenderArgs,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Read the tool calls out of a model API's response (or stream of events).
    Parse {
        /// The model API the response came from.
        #[arg(long = "for", value_name = "TARGET")]
        target: toolgate::wire::Target,
        /// The response file, or `-` for standard input.
        #[arg(default_value = "-")]
        input: String,
        /// The input is a stream: SSE `data:` lines, JSON Lines, or a JSON array of events.
        #[arg(long)]
        stream: bool,
        /// The tools were rendered with `--strict`: a null for a field that was optional reads as absent.
        #[arg(long)]
        strict: bool,
        /// The tools were rendered with `--json-schema` (Gemini, Vertex).
        #[arg(long)]
        json_schema: bool,
        /// The tools were rendered with `--defer`: calls of `search_tools` are read too.
        #[arg(long)]
        defer: bool,
        /// The tools were rendered with `--always-loaded` these tools.
        #[arg(long, value_name = "NAMES", value_delimiter = ',')]
        always_loaded: Vec<String>,
        /// The tools were rendered with `--skills`: calls of `read_skill` are read too.
        #[arg(long)]
        skills: bool,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Turn a foreign tool list, or an HTTP API's OpenAPI description, into a spec
    /// file (printed as YAML).
    Import {
        /// The format: openapi (OpenAPI 3.1, 3.0, Swagger 2.0), openai-chat, openai-responses, anthropic, gemini, mcp, bfcl.
        #[arg(long = "from", value_name = "FORMAT")]
        from: wire_commands::ImportFrom,
        /// The file to import, or `-` for standard input.
        input: String,
        #[command(flatten)]
        openapi: openapi_commands::OpenApiArgs,
    },
    /// Read the audit log, check it for tampering, list calls left without a completion.
    Audit {
        #[command(subcommand)]
        action: Option<audit_commands::AuditAction>,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Manage the store: `migrate` brings a PostgreSQL database's schema up to this toolgate's.
    Store {
        #[command(subcommand)]
        action: store_commands::StoreAction,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// List the calls waiting for a person, and approve or deny them.
    Approvals {
        #[command(subcommand)]
        action: Option<approval_commands::ApprovalAction>,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Show what each budget has spent in its window now, by principal.
    Budgets {
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Explain the policy's decision on a call, or replay the audit log through another spec's policy.
    Policy {
        #[command(subcommand)]
        action: policy_commands::PolicyAction,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Print the system-prompt section that lists the tools a principal may use.
    Digest {
        /// For this principal (declared under `principals:`; default: the operator).
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Serve the catalog as an MCP server (stdio, or streamable HTTP with --http).
    Serve {
        #[command(flatten)]
        serve: serve_commands::ServeArgs,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Serve the web console alone (approvals, audit, catalog) over the state directory's store.
    Console {
        #[command(flatten)]
        console: console_commands::ConsoleArgs,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Run the scripted conversations under a spec file's `tests:`, offline; exit 1 if any fails.
    Test {
        /// A spec file, or a directory whose spec files with `tests:` all run (default: -f FILE).
        path: Option<PathBuf>,
        /// Also write a JUnit XML report to this file.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Draw the conversation flow, or show where a conversation stands in it.
    Flow {
        #[command(subcommand)]
        action: flow_commands::FlowAction,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Make, list and revoke the API keys callers of `serve --http` present.
    Keys {
        #[command(subcommand)]
        action: Option<keys_commands::KeyAction>,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// List the pinned definitions of upstream MCP tools, show what changed, accept a change.
    Pins {
        #[command(subcommand)]
        action: Option<pins_commands::PinAction>,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// List the spec's skills, or show one whole.
    Skills {
        #[command(subcommand)]
        action: Option<skills_commands::SkillAction>,
        /// As this principal sees them (declared under `principals:`; default: the operator).
        #[arg(long = "as", value_name = "PRINCIPAL", global = true)]
        caller: Option<String>,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// List the background tasks, show one with its result, cancel one.
    Tasks {
        #[command(subcommand)]
        action: Option<task_commands::TaskAction>,
        /// As this principal, who sees only its own tasks (default: the operator, who sees all).
        #[arg(long = "as", value_name = "PRINCIPAL", global = true)]
        caller: Option<String>,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// The tools that best fit a task, by what they do.
    Search {
        /// What to do, in words: "refund an order".
        query: String,
        /// How many tools to list.
        #[arg(short = 'k', default_value_t = 5)]
        k: usize,
        /// Search as this principal: tools it may not use are left out.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        caller: Option<String>,
        /// Also list the tools left out for the principal, marked with why.
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        model: search_commands::SearchModelArgs,
        #[command(flatten)]
        spec: SpecArgs,
    },
    /// Measure: `eval search` runs labelled queries and reports recall and latency.
    Eval {
        #[command(subcommand)]
        action: search_commands::EvalAction,
    },
    /// Code mode: print the stubs a model reads, run a program whose calls take the gate,
    /// and list or resume programs paused for approval.
    Code {
        #[command(subcommand)]
        action: code_commands::CodeAction,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Show or edit a conversation's state.
    State {
        #[command(subcommand)]
        action: Option<StateAction>,
        #[command(flatten)]
        spec: SpecArgs,
        #[command(flatten)]
        state: StateArgs,
    },
}

/// Options of `render`.
#[derive(clap::Args, Clone)]
struct RenderArgs {
    /// The model API: openai-chat, openai-responses, qwen, anthropic, gemini, vertex, mcp.
    #[arg(long = "for", value_name = "TARGET")]
    target: toolgate::wire::Target,
    /// Strict schemas where the API has a strict mode.
    #[arg(long)]
    strict: bool,
    /// Gemini and Vertex: full JSON Schema (`parametersJsonSchema`) instead of the OpenAPI subset.
    #[arg(long)]
    json_schema: bool,
    /// List every change made to fit the API, per tool, instead of the declarations.
    #[arg(long)]
    explain: bool,
    /// Load only the tools marked `always_loaded: true` up front; the rest wait for
    /// tool search (the API's own where it has one, else `search_tools`).
    #[arg(long)]
    defer: bool,
    /// Like --defer, also loading these tools up front (comma-separated or repeated).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    always_loaded: Vec<String>,
    /// Code mode: offer `run_code` (whose description carries the stubs of every
    /// tool), `resume_code` and the tools marked `always_loaded: true`.
    #[arg(long, conflicts_with_all = ["defer", "always_loaded", "explain"])]
    code_mode: bool,
    /// Offer the spec's skills: add the built-in `read_skill` tool, whose
    /// description lists each skill's name and description.
    #[arg(long, conflicts_with = "code_mode")]
    skills: bool,
}

#[derive(Subcommand)]
enum StateAction {
    /// Print one key's value.
    Get { key: String },
    /// Set one key to a JSON value.
    Set { key: String, value: String },
    /// Remove every key of the session and forget its calls (its flow starts over).
    Reset,
}

fn main() -> ExitCode {
    // A code-mode worker: the gate starts this binary to run one program under
    // OS limits (see `toolgate::code_mode`). Hidden from `--help` on purpose.
    if std::env::args_os().nth(1).as_deref() == Some(toolgate::code_mode::WORKER_ARG.as_ref()) {
        return toolgate::code_mode::worker_main();
    }
    #[cfg(feature = "semantic")]
    semantic_search::one_model_thread_unless_set();
    let cli = Cli::parse();
    // Log lines, and spans over OTLP when the OTEL_* variables ask; flushed
    // when the command ends.
    let format = cli.log_format.map(|f| match f {
        LogFormatArg::Text => toolgate::telemetry::LogFormat::Text,
        LogFormatArg::Json => toolgate::telemetry::LogFormat::Json,
    });
    let _telemetry = match toolgate::telemetry::init(format) {
        Ok(guard) => guard,
        Err(e) => {
            tellln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Check {
            spec,
            sandbox,
            allow,
        } => commands::check(&spec, sandbox.then_some(allow.as_slice())),
        Command::Schema => commands::schema(),
        Command::List { spec } => commands::list(&spec),
        Command::Describe { tool, spec } => commands::describe(&spec, &tool),
        Command::Call {
            tool,
            args,
            how,
            spec,
            state,
        } => commands::call(&spec, &state, &tool, args.as_deref(), &how),
        Command::Render { render, spec } if render.code_mode => code_commands::render(
            &spec,
            render.target,
            toolgate::wire::RenderOptions {
                strict: render.strict,
                json_schema: render.json_schema,
            },
        ),
        Command::Render { render, spec } => wire_commands::render(
            &spec,
            render.target,
            toolgate::wire::RenderOptions {
                strict: render.strict,
                json_schema: render.json_schema,
            },
            render.explain,
            (render.defer || !render.always_loaded.is_empty())
                .then_some(render.always_loaded.as_slice()),
            render.skills,
        ),
        Command::Parse {
            target,
            input,
            stream,
            strict,
            json_schema,
            defer,
            always_loaded,
            skills,
            spec,
        } => {
            let options = toolgate::wire::RenderOptions {
                strict,
                json_schema,
            };
            let defer = (defer || !always_loaded.is_empty()).then_some(always_loaded.as_slice());
            wire_commands::parse(&spec, target, options, &input, stream, defer, skills)
        }
        Command::Search {
            query,
            k,
            caller,
            all,
            model,
            spec,
        } => search_commands::search(&spec, &query, k, caller.as_deref(), all, &model),
        Command::Eval { action } => search_commands::eval(action),
        Command::Import {
            from,
            input,
            openapi,
        } => wire_commands::import(from, &input, &openapi),
        Command::Digest { caller, spec } => commands::digest(&spec, caller.as_deref()),
        Command::Audit {
            action,
            spec,
            state,
        } => audit_commands::run(&spec, &state, action),
        Command::Approvals {
            action,
            spec,
            state,
        } => approval_commands::run(&spec, &state, action),
        Command::Store {
            action,
            spec,
            state,
        } => store_commands::run(&spec, &state, action),
        Command::State {
            action,
            spec,
            state,
        } => commands::state(&spec, &state, action),
        Command::Keys {
            action,
            spec,
            state,
        } => keys_commands::run(&spec, &state, action),
        Command::Policy {
            action,
            spec,
            state,
        } => policy_commands::run(&spec, &state, action),
        Command::Budgets { spec, state } => budget_commands::run(&spec, &state),
        Command::Code {
            action,
            spec,
            state,
        } => code_commands::run(&spec, &state, action),
        Command::Pins {
            action,
            spec,
            state,
        } => pins_commands::run(&spec, &state, action),
        Command::Skills {
            action,
            caller,
            spec,
        } => skills_commands::run(&spec, caller.as_deref(), action),
        Command::Tasks {
            action,
            caller,
            spec,
            state,
        } => task_commands::run(&spec, &state, caller.as_deref(), action),
        Command::Serve { serve, spec, state } => serve_commands::serve(&spec, &state, &serve),
        Command::Console {
            console,
            spec,
            state,
        } => console_commands::run(&spec, &state, &console),
        Command::Test { path, junit, spec } => {
            flow_commands::test(&spec, path.as_deref(), junit.as_deref())
        }
        Command::Flow {
            action,
            spec,
            state,
        } => flow_commands::flow(&spec, &state, action),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            tellln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
