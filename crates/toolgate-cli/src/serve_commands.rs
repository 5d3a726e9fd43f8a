//! `toolgate serve`: the spec file's catalog as an MCP server, over stdio or
//! streamable HTTP, every call through the gate.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use toolgate::auth::HttpAccess;
use toolgate::mcp::client::{UpstreamEvent, UpstreamOptions, Upstreams};
use toolgate::mcp::server::{
    DEFAULT_HTTP_PATH, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, McpServer,
    ServeOptions, SessionLimits, check_path, shutdown_signal,
};
use toolgate::serve::{DEFAULT_HTTP_ADDR, FrontDoor, Health, SpecStatus, serve_health};
use toolgate::telemetry::{METRICS_PATH, MetricsEndpoint, serve_metrics};
use toolgate::{GateStore, store::PinStore, store::ServedStore, store::resolve_state_dir};

use crate::console_commands;
use crate::context::CommandResult;
use crate::context::{
    Searching, SpecArgs, StateArgs, load, open_chosen, open_served_gate, principal, store_choice,
    with_spec_auth,
};
use crate::reload::{CurrentSpec, Reloader};

/// Options of `toolgate serve`.
#[derive(clap::Args, Clone)]
pub struct ServeArgs {
    /// Serve one session over standard input and output (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve streamable HTTP at ADDR (default 127.0.0.1:8731).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = DEFAULT_HTTP_ADDR)]
    http: Option<SocketAddr>,
    /// The path of the MCP endpoint.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_HTTP_PATH, requires = "http")]
    path: String,
    /// Require `Authorization: Bearer TOKEN` on HTTP, TOKEN read from this
    /// environment variable (needed for an address other than loopback).
    #[arg(long, value_name = "NAME", requires = "http")]
    token_env: Option<String>,
    /// Also answer HTTP requests whose `Host` is HOST (`name` for any port,
    /// `name:port` for one), besides the bind address and `localhost`; repeatable.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    allowed_hosts: Vec<String>,
    /// Also answer browsers whose page is at ORIGIN (`https://app.example.com`),
    /// besides the server's own origin; repeatable.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    allowed_origins: Vec<String>,
    /// Serve as this principal (declared under `principals:`; default: the operator).
    #[arg(long = "as", value_name = "PRINCIPAL")]
    caller: Option<String>,
    /// How long running calls may take to finish after SIGINT or SIGTERM.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = humantime::parse_duration)]
    grace: Duration,
    /// Offer a few tools plus search: `tools/list` shows `search_tools` and the
    /// tools marked `always_loaded: true`; a session lists the tools its searches found.
    #[arg(long)]
    search: bool,
    /// Code mode: `tools/list` shows `run_code`, whose description carries the
    /// stubs of the tools the caller may call, and the tools marked
    /// `always_loaded: true`; a `run_code` call runs the program, each of its tool
    /// calls through the gate.
    #[arg(long, conflicts_with = "search")]
    code_mode: bool,
    /// How long to wait for a person to answer an approval asked in the client.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    approval_timeout: Duration,
    /// Leave out the draft structured authorization denials (SEP-2643 as of
    /// 2026-08-21: `_meta["io.modelcontextprotocol/authorization"]` on a
    /// refused call), which are on by default.
    #[arg(long)]
    no_authorization_denials: bool,
    /// Answer a call that waits for an approver with a task, polled with
    /// `tasks/get` until a person answers (the draft asynchronous approval,
    /// SEP-2848 as of 2026-09-25), to clients that declare the tasks extension;
    /// on by default, this leaves it out.
    #[arg(long)]
    no_async_approvals: bool,
    /// HTTP sessions live at once, at most; a new one over the cap takes the
    /// place of the longest-idle session without a call in flight.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS, requires = "http")]
    max_sessions: usize,
    /// HTTP sessions of one client (IP address) live at once, at most.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS_PER_CLIENT, requires = "http")]
    max_sessions_per_client: usize,
    /// How long an HTTP session may sit idle before it is closed.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration, requires = "http")]
    session_idle: Duration,
    /// Also serve the web console at `/` (approvals, audit, catalog); on loopback
    /// without `auth:`, log in with the one-time link printed at start.
    #[arg(long, requires = "http")]
    console: bool,
    /// The largest arguments a call may carry, in bytes (instead of the spec file's
    /// `limits.max_argument_bytes`; default 1 MiB). An MCP message may be four
    /// times that plus 64 KiB.
    #[arg(long, value_name = "BYTES", value_parser = crate::context::parse_max_argument_bytes)]
    max_argument_bytes: Option<u64>,
    /// Serve Prometheus metrics: at /metrics beside the MCP endpoint, behind
    /// the same credential; or, given ADDR, at http://ADDR/metrics alone, with
    /// no credential (bind it where only the scraper reaches).
    #[arg(long, value_name = "ADDR", num_args = 0..=1, requires = "http")]
    metrics: Option<Option<SocketAddr>>,
    /// Serve the health checks (`/healthz`, `/readyz`) on a listener of their
    /// own at ADDR too; they are always served beside the MCP endpoint.
    #[arg(long, value_name = "ADDR", requires = "http")]
    health: Option<SocketAddr>,
    /// Read the spec file again whenever its content changes (as on SIGHUP).
    #[arg(long)]
    watch: bool,
    /// Load everything a start would (the spec, the store and its migrations,
    /// upstream servers, keys), report whether the server would be ready, and
    /// exit: 0 if it would, 1 if not.
    #[arg(long)]
    check: bool,
}

pub fn serve(spec_args: &SpecArgs, state: &StateArgs, args: &ServeArgs) -> CommandResult {
    let (mut spec, source) = load(spec_args)?;
    if args.max_argument_bytes.is_some() {
        spec.limits.max_argument_bytes = args.max_argument_bytes;
    }
    let principal = principal(&spec, args.caller.as_deref())?;
    let access = match &args.token_env {
        None => HttpAccess::open(),
        Some(name) => {
            let token = std::env::var(name).map_err(|_| {
                format!("the environment variable `{name}` (from --token-env) is not set; set it to the bearer token clients must send")
            })?;
            HttpAccess::bearer(token).map_err(|e| format!("`{name}`: {e}"))?
        }
    };
    let access = with_spec_auth(access, &spec, spec_args, state)?;
    let access = args
        .allowed_hosts
        .iter()
        .try_fold(access, |access, host| access.allow_host(host))
        .and_then(|access| {
            args.allowed_origins
                .iter()
                .try_fold(access, |access, origin| access.allow_origin(origin))
        })
        .map_err(|e| e.to_string())?;
    let http = if args.stdio { None } else { args.http };
    if let Some(addr) = http {
        access.check(addr).map_err(|e| e.to_string())?;
        check_path(&args.path).map_err(|e| e.to_string())?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // Heard from the start: SIGHUP's default would end the server.
    let hangup = {
        let _runtime = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|e| format!("cannot listen for SIGHUP: {e}"))?
    };
    let choice = store_choice(spec_args, state)?;
    let store = open_chosen(&choice, spec_args, state)?;
    if choice.is_shared() {
        tellln!("toolgate: store {}", choice.shown());
    }
    // The spec's skills, and upstream servers' as they list them.
    let skills = crate::context::spec_skills(&source);
    // Upstream servers run on this runtime for as long as the server does.
    let upstreams = (!spec.mcp_servers.is_empty()).then(|| {
        let options = UpstreamOptions {
            base_dir: source
                .path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(Path::to_path_buf),
            skills: Some(skills.clone()),
            ..UpstreamOptions::default()
        };
        let pins: Arc<dyn PinStore> = store.clone();
        Arc::new(runtime.block_on(Upstreams::connect(&spec, pins, options)))
    });
    if let Some(upstreams) = &upstreams {
        crate::upstreams::report(upstreams, Some(&skills), true);
    }
    let file = source.path.display().to_string();
    let search = match args.search {
        false => None,
        true => {
            let dir = resolve_state_dir(state.state_dir.as_deref(), &spec_args.file);
            let choice = crate::semantic_search::ModelChoice::resolve(
                Some((&spec, source.path.as_path())),
                None,
                Some(&dir),
            );
            let scorer = choice.map(|c| c.open()).transpose()?;
            Some(Searching { scorer })
        }
    };
    let (gate, withheld) = open_served_gate(
        &spec,
        &file,
        upstreams.as_deref(),
        &store,
        search.as_ref(),
        Some(&skills),
        None,
    )?;
    let declared = spec
        .principals
        .iter()
        .map(|(id, declared)| declared.to_principal(id));
    let mut builder = McpServer::builder(Arc::new(gate))
        .principal(principal.clone())
        .principals(declared)
        .withhold(withheld)
        .options(ServeOptions {
            grace: args.grace,
            approval_timeout: args.approval_timeout,
            sessions: SessionLimits {
                max_sessions: args.max_sessions,
                max_per_client: args.max_sessions_per_client,
                idle_timeout: args.session_idle,
            },
            authorization_denials: !args.no_authorization_denials,
            async_approvals: !args.no_async_approvals,
        });
    if choice.is_shared() {
        // Behind a load balancer, a session's requests may reach any instance.
        builder = builder.restorable_sessions(store.clone());
    }
    if args.search {
        let always = spec.tools.iter().filter(|t| t.always_loaded);
        builder = builder.search(always.map(|t| t.name.clone()));
    }
    if args.code_mode {
        let worker = crate::code_worker()
            .map_err(|e| format!("cannot find this executable to run programs ({e})"))?;
        let limits = toolgate::code_mode::CodeLimits::from_spec(&spec.code_mode);
        let mode = toolgate::code_mode::CodeMode::new(worker)
            .limits(limits)
            .warm();
        let always = spec.tools.iter().filter(|t| t.always_loaded);
        builder = builder.code_mode(mode, Some(spec.clone()), always.map(|t| t.name.clone()));
    }
    if let Some(upstreams) = &upstreams {
        let upstreams = upstreams.clone();
        builder = builder.forward(spec.mcp_servers.keys().cloned(), move |ns| {
            upstreams.peer(ns)
        });
    }
    // The server, once built: the metrics sample the budgets of its gate.
    let served: Arc<std::sync::OnceLock<McpServer>> = Arc::default();
    let mut metrics_beside = None;
    let metrics = match args.metrics {
        None => None,
        Some(at) => {
            if at.is_none() && args.path == METRICS_PATH {
                return Err(format!(
                    "the MCP endpoint is at {METRICS_PATH}, where --metrics would serve too: move it with --path, or give --metrics an address of its own"
                ));
            }
            let store: Arc<dyn GateStore> = store.clone();
            let serving = served.clone();
            let mut endpoint = MetricsEndpoint::install()
                .map_err(|e| e.to_string())?
                .store(store.clone())
                .budgets(move || serving.get().map(McpServer::gate), store);
            // Where the spec names approvers, only they read the metrics.
            let approvers: Vec<String> = spec
                .principals
                .iter()
                .filter(|(_, p)| !p.approve.is_empty())
                .map(|(id, _)| id.clone())
                .collect();
            if !approvers.is_empty() {
                endpoint = endpoint.readers(approvers);
            }
            if let Some(upstreams) = &upstreams {
                endpoint = endpoint.sampler(upstreams.metrics_sampler());
            }
            match at {
                None => metrics_beside = Some(endpoint),
                Some(addr) => {
                    let listener = runtime
                        .block_on(tokio::net::TcpListener::bind(addr))
                        .map_err(|e| format!("cannot listen on {addr} for --metrics: {e}"))?;
                    let bound = listener.local_addr().map_err(|e| e.to_string())?;
                    tellln!("toolgate: metrics at http://{bound}{METRICS_PATH}");
                    runtime.spawn(async move {
                        let served =
                            serve_metrics(listener, endpoint, std::future::pending()).await;
                        if let Err(e) = served {
                            tellln!("warning: the metrics endpoint stopped: {e}");
                        }
                    });
                }
            }
            Some(at)
        }
    };
    let status = Arc::new(SpecStatus::new(toolgate::audit::sha256_hex(&source.text)));
    let console = match (args.console, http) {
        (true, Some(addr)) => {
            let console = console_commands::console(&spec, &access, addr)?;
            let console = console_commands::upstream_parts(console, &store, upstreams.as_ref())
                .with_spec_status(status.clone());
            builder = builder.hold_approvals();
            Some(console)
        }
        _ => None,
    };
    let server = builder.build();
    let _ = served.set(server.clone());
    let gate_store: Arc<dyn GateStore> = store.clone();
    let mut health = Health::new(server.clone(), gate_store, status.clone());
    if let Some(upstreams) = &upstreams {
        let required = spec.mcp_servers.iter().filter(|(_, s)| s.required);
        health = health.upstreams(upstreams.clone(), required.map(|(ns, _)| ns.clone()));
    }
    if args.check {
        return Ok(check_report(&runtime.block_on(health.readiness()), &server));
    }
    let serving: CurrentSpec = Arc::new(tokio::sync::Mutex::new(Arc::new(spec.clone())));
    if let Some(upstreams) = &upstreams {
        let _guard = runtime.enter();
        follow_upstreams(
            &server,
            upstreams.clone(),
            serving.clone(),
            file.clone(),
            store.clone(),
            search.clone(),
            skills.clone(),
        );
    }
    let reloader = Reloader {
        seen: status.get().sha256,
        path: source.path.clone(),
        file,
        caller: args.caller.clone(),
        max_argument_bytes: args.max_argument_bytes,
        spec: serving,
        server: server.clone(),
        store,
        upstreams: upstreams.clone(),
        search,
        skills,
        local_skills: source.skills.clone(),
        local_skills_section: spec.skills.clone(),
        skills_seen: crate::reload::skills_fingerprint(&source.path, spec.skills.as_ref()),
        code_mode: args.code_mode,
        status,
        console: console.clone(),
    };
    runtime.spawn(reloader.run(hangup, args.watch));
    if let Some(addr) = args.health {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .map_err(|e| format!("cannot listen on {addr} for --health: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        tellln!("toolgate: health checks at http://{bound}/healthz and /readyz");
        let health = health.clone();
        runtime.spawn(async move {
            if let Err(e) = serve_health(listener, health, shutdown_signal()).await {
                tellln!("warning: the health checks stopped: {e}");
            }
        });
    }
    let shown = server.tool_names();
    for (tool, why) in server.left_out() {
        tellln!("warning: `{tool}` is not served: {why}");
    }
    let tools = format!(
        "{} tool{} as {}",
        shown.len(),
        if shown.len() == 1 { "" } else { "s" },
        principal.id
    );
    let report = runtime.block_on(async {
        match http {
            Some(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                let bound = listener.local_addr().map_err(|e| e.to_string())?;
                let host = match bound {
                    SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
                    SocketAddr::V4(v4) => v4.ip().to_string(),
                };
                if metrics == Some(None) {
                    tellln!(
                        "toolgate: metrics at http://{host}:{}{METRICS_PATH}",
                        bound.port()
                    );
                }
                tellln!(
                    "toolgate: serving {tools} at http://{host}:{}{} ({}Ctrl-C stops)",
                    bound.port(),
                    args.path,
                    if access.requires_token() {
                        "credential required; "
                    } else {
                        ""
                    }
                );
                let mut door = FrontDoor::new(server, access)
                    .path(&args.path)
                    .health(health);
                if let Some(console) = console {
                    console_commands::announce(&console, bound);
                    door = door.console(console);
                }
                if let Some(endpoint) = metrics_beside {
                    door = door.metrics(endpoint);
                }
                door.serve(listener, shutdown_signal())
                    .await
                    .map_err(|e| e.to_string())
            }
            None => {
                tellln!("toolgate: serving {tools} over stdio");
                server
                    .serve_stdio(shutdown_signal())
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    });
    // Stop the upstream servers (dropping the last handle also stops them).
    if let Some(upstreams) = upstreams.and_then(|u| Arc::try_unwrap(u).ok()) {
        runtime.block_on(upstreams.shutdown());
    }
    // A read of standard input cannot be cancelled; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    tellln!("toolgate: {}", report?);
    Ok(ExitCode::SUCCESS)
}

/// Serves a new gate whenever an upstream server's tools change (`list_changed`, a
/// restart, a quarantine), so clients see tools come, go and be withheld.
fn follow_upstreams(
    server: &McpServer,
    upstreams: Arc<Upstreams>,
    spec_now: CurrentSpec,
    file: String,
    store: Arc<dyn ServedStore>,
    search: Option<Searching>,
    skills: Arc<toolgate::skills::Skills>,
) {
    let server = server.clone();
    let mut events = upstreams.subscribe();
    let file = Arc::<str>::from(file);
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(UpstreamEvent::ToolsChanged { .. }) | Err(RecvError::Lagged(_)) => {}
                Ok(_) => continue,
                Err(RecvError::Closed) => break,
            }
            // Held until the new gate serves, so a reload waits for it.
            let spec = spec_now.clone().lock_owned().await;
            let serving = server.gate();
            let (file, upstreams) = (file.clone(), upstreams.clone());
            let (store, search, skills) = (store.clone(), search.clone(), skills.clone());
            // A model embeds the new tools: on a blocking thread, not this worker.
            let built = crate::semantic_search::off_the_workers(move || {
                open_served_gate(
                    &spec,
                    &file,
                    Some(&upstreams),
                    &store,
                    search.as_ref(),
                    Some(&skills),
                    Some(&serving),
                )
            });
            match built.await {
                Ok((gate, withheld)) => server.replace_gate(Arc::new(gate), withheld),
                Err(e) => tellln!(
                    "warning: the upstream tools changed, but the new catalog cannot be served ({e}); serving the old one"
                ),
            }
        }
    });
}

/// `serve --check`'s verdict on stdout: ready or not, and why; 0 when ready.
fn check_report(readiness: &toolgate::serve::Readiness, server: &McpServer) -> ExitCode {
    let tools = server.tool_names().len();
    if readiness.is_ready() {
        sayln!(
            "ready: the spec, the store and the required upstream servers are in order; {tools} tools would be served"
        );
        return ExitCode::SUCCESS;
    }
    sayln!("not ready:");
    for reason in &readiness.reasons {
        sayln!("  - {reason}");
    }
    ExitCode::FAILURE
}
