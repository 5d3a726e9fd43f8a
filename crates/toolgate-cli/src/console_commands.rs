//! `toolgate console`: the web console alone, for an operator on the gateway's
//! machine; and what `serve --http --console` shares with it (how one logs in).
//!
//! Alone, the console reads the same state directory as the gates serving the
//! spec file, so approvals asked in one process are answered here.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use toolgate::auth::HttpAccess;
use toolgate::console::{Console, LoginToken};
use toolgate::mcp::client::Upstreams;
use toolgate::mcp::server::shutdown_signal;
use toolgate::spec::SpecFile;
use toolgate::{store::PinStore, store::ServedStore};

use crate::context::CommandResult;
use crate::context::open_served_gate;
use crate::context::with_spec_auth;
use crate::context::{SpecArgs, StateArgs};
use crate::context::{load, open_store};

/// The default address of `toolgate console`: beside `serve --http`'s 8731.
pub const DEFAULT_CONSOLE_ADDR: &str = "127.0.0.1:8732";

/// Options of `toolgate console`.
#[derive(clap::Args, Clone)]
pub struct ConsoleArgs {
    /// Serve the console at ADDR.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_CONSOLE_ADDR)]
    addr: SocketAddr,
    /// Also answer requests whose `Host` is HOST; repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
}

/// The console of `spec` served at `addr` with `access`: on loopback without a
/// credential to ask for, one logs in with a one-time link; otherwise with a
/// credential `access` takes. Refuses an address others can reach without one.
pub fn console(spec: &SpecFile, access: &HttpAccess, addr: SocketAddr) -> Result<Console, String> {
    let login = if access.requires_token() {
        None
    } else if addr.ip().is_loopback() {
        Some(LoginToken::random().map_err(|e| format!("cannot make a login token: {e}"))?)
    } else {
        return Err(format!(
            "{addr} is reachable from other machines, so the console needs the spec file's `auth:` (API keys or OAuth) to log in with; bind 127.0.0.1 instead"
        ));
    };
    Ok(Console::new(spec, login))
}

/// `console` showing the quarantined tools of `store`'s pins and, when `serve`
/// runs them, the upstream servers' health, its login sessions kept in `store`.
pub fn upstream_parts(
    console: Console,
    store: &Arc<dyn ServedStore>,
    upstreams: Option<&Arc<Upstreams>>,
) -> Console {
    let pins: Arc<dyn PinStore> = store.clone();
    let console = console.with_pins(pins).with_sessions(store.clone());
    match upstreams {
        Some(upstreams) => console.with_upstreams(upstreams.clone()),
        None => console,
    }
}

/// Prints how to log in to `console` at `addr`.
pub fn announce(console: &Console, addr: SocketAddr) {
    match console.login_url(addr) {
        Some(url) => tellln!("toolgate: console at {url} (the link logs in once)"),
        None => {
            tellln!("toolgate: console at http://{addr}/ (log in with an API key or bearer token)")
        }
    }
}

/// `toolgate console [-f FILE] [--addr ADDR]`.
pub fn run(spec_args: &SpecArgs, state: &StateArgs, args: &ConsoleArgs) -> CommandResult {
    let (spec, source) = load(spec_args)?;
    let access = with_spec_auth(HttpAccess::open(), &spec, spec_args, state)?;
    let access = args
        .allowed_hosts
        .iter()
        .try_fold(access, |access, host| access.allow_host(host))
        .map_err(|e| e.to_string())?;
    let console = console(&spec, &access, args.addr)?;
    let store = open_store(spec_args, state)?;
    let console = upstream_parts(console, &store, None);
    let file = source.path.display().to_string();
    let skills = crate::context::spec_skills(&source);
    let (gate, _) = open_served_gate(&spec, &file, None, &store, None, Some(&skills), None)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        announce(&console, bound);
        console
            .serve(listener, Arc::new(gate), access, shutdown_signal())
            .await
            .map_err(|e| e.to_string())
    })?;
    runtime.shutdown_timeout(Duration::from_millis(500));
    tellln!("toolgate: console stopped");
    Ok(ExitCode::SUCCESS)
}
