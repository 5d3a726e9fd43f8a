//! Upstream MCP servers: their tools as catalog tools, every call through the gate.
//!
//! A spec file's `mcp_servers:` section names servers by namespace; [`Upstreams`]
//! starts or reaches each one, lists its tools and offers each as a catalog tool
//! `namespace.tool` ([`UpstreamTool`]) with the server's schemas, title and
//! annotations. Its effect is the operator's override under `effects:`, else its
//! annotations read conservatively (no hints: `external`). Its output is untrusted:
//! the gate sanitizes it.
//!
//! ```no_run
//! # async fn run(spec: toolgate::spec::SpecFile) -> Result<(), toolgate::CatalogError> {
//! use std::sync::Arc;
//! use toolgate::mcp::client::{UpstreamOptions, Upstreams};
//! use toolgate::{Gate, MemoryGateStore, store::MemoryPins};
//!
//! let upstreams = Upstreams::connect(&spec, Arc::new(MemoryPins::new()), UpstreamOptions::default()).await;
//! for status in upstreams.status() {
//!     println!("{}: {}", status.namespace, status.state);
//! }
//! let gate = Gate::from_spec(&spec, "toolgate.yaml", &upstreams.catalog(), Arc::new(MemoryGateStore::default()))?;
//! # Ok(()) }
//! ```
//!
//! What keeps this safe and alive:
//!
//! - **Either revision.** A server is asked `server/discover` first (2026-07-28,
//!   stateless) and spoken to with the `initialize` handshake if it only knows the
//!   session revisions; [`ServerStatus::revision`] says which it speaks. A
//!   2026-07-28 server that answers a call with `input_required` gets a clear tool
//!   error: toolgate does not relay such questions yet.
//! - **Pins.** The first sight of a tool pins its definition in a [`PinStore`]; a
//!   later change quarantines the tool (left out of [`Upstreams::offered`], refused
//!   when called, naming what changed) until the operator accepts it
//!   (`toolgate pins accept`).
//! - **Processes.** A stdio server runs in its own process group and dies with
//!   toolgate, children included (see `process.rs`). Its environment is only
//!   [`INHERITED_ENV`] plus its `env:` settings.
//! - **Restarts.** A server that exits is restarted with backoff; calls in flight
//!   get an error saying so; after repeated failures its circuit opens and its
//!   tools answer "unavailable" until a cooldown has passed ([`RestartPolicy`]).
//! - **Skills.** Given a catalog ([`UpstreamOptions::skills`]), a server's skills
//!   (SEP-2640) join it as `namespace.name`, each checked (no `dynamic` files, the
//!   extension's limits, every file inside the skill's folder), its `SKILL.md`
//!   verified against its digest, and pinned as `skill:namespace.name` like a tool.
//! - **Refresh.** `notifications/tools/list_changed` and `resources/list_changed`
//!   re-list the tools and skills (and check their pins); on the stateless revision
//!   a subscription hears them. [`Upstreams::subscribe`] tells the owner.
//! - **Timeouts.** Connecting, listing and calling each have one (`timeouts:`).
//! - **Network.** A server reached by URL is under the spec file's `network:`
//!   section, as `http:` bindings are: public addresses only unless `allow` lists
//!   more, every resolved address checked, and redirects followed only within the
//!   URL's origin. A URL the policy refuses as written is never connected
//!   (`misconfigured`); a name that resolves outside it fails to connect, saying why.
//! - **Passing on.** During a call served by `toolgate serve`, the server's progress
//!   and log notifications and its sampling and elicitation requests go to the MCP
//!   client that made the call ([`crate::mcp::Downstream`]); without one,
//!   sampling is refused and elicitation cancelled (left unanswered, not refused).
//! - **Secrets.** `${env.NAME}` values are held apart from everything shown, and
//!   scrubbed from server messages and stderr before they reach logs or the audit log.
//!
//! A declared tool's own `mcp:` binding runs through [`McpBindingRunner`], with the
//! same supervision and without pins: the declaration is what the model sees.

mod binding;
mod breaker;
mod config;
mod handler;
mod http_client;
mod lifecycle;
mod listed;
mod process;
mod relay;
mod result;
mod server;
mod skills;
mod tool;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::broadcast;
use toolgate_core::spec::{NetworkPolicy, SpecFile};
use toolgate_core::{Catalog, DynTool};

pub use binding::McpBindingRunner;
pub use breaker::RestartPolicy;
pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_LIST_TIMEOUT, EnvLookup,
    INHERITED_ENV, ServerConfig, process_env, split_command_line,
};
pub use lifecycle::Revision;
pub use listed::{RemoteTool, remote_tool};
pub use result::{call_outcome, upstream_content};
pub use server::{ListedTool, Quarantine};
pub use tool::UpstreamTool;

use crate::skills::Skills;
use crate::store::PinStore;
use server::Server;

/// Where a server stands.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerState {
    /// Being started for the first time.
    Starting,
    /// Connected; its tools can be called.
    Ready,
    /// It failed and will be started again shortly; calls wait for it.
    Restarting {
        /// What failed, scrubbed of secrets.
        reason: String,
        /// Which restart this is (1 for the first).
        attempt: u32,
    },
    /// It failed too often in a row: its tools are unavailable until `until`.
    Unavailable {
        /// The last failure, scrubbed of secrets.
        reason: String,
        /// Failures in a row that opened the circuit.
        failures: u32,
        /// When it is tried again.
        until: Instant,
    },
    /// Its settings cannot be used (an unset `${env.NAME}`, ...); it never starts.
    Misconfigured {
        /// What is wrong with its settings.
        reason: String,
    },
    /// Stopped by its owner.
    Stopped,
}

impl ServerState {
    /// `starting`, `ready`, `restarting`, `unavailable`, `misconfigured` or `stopped`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Restarting { .. } => "restarting",
            ServerState::Unavailable { .. } => "unavailable",
            ServerState::Misconfigured { .. } => "misconfigured",
            ServerState::Stopped => "stopped",
        }
    }

    /// Why it is not ready, if it is not.
    pub fn reason(&self) -> Option<&str> {
        match self {
            ServerState::Restarting { reason, .. }
            | ServerState::Unavailable { reason, .. }
            | ServerState::Misconfigured { reason } => Some(reason),
            _ => None,
        }
    }

    /// Whether calls can reach it now (or will after a short wait).
    pub fn is_available(&self) -> bool {
        matches!(
            self,
            ServerState::Ready | ServerState::Starting | ServerState::Restarting { .. }
        )
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Unavailable {
                reason,
                failures,
                until,
            } => {
                let left = until.saturating_duration_since(Instant::now()).as_secs();
                write!(
                    f,
                    "unavailable after {failures} failures in a row, retried in {left}s: {reason}"
                )
            }
            ServerState::Restarting { reason, attempt } => {
                write!(f, "restarting (attempt {attempt}): {reason}")
            }
            ServerState::Misconfigured { reason } => write!(f, "misconfigured: {reason}"),
            other => f.write_str(other.as_str()),
        }
    }
}

/// Something an upstream server did, for the owner of [`Upstreams`].
#[derive(Debug, Clone)]
#[allow(deprecated)]
pub enum UpstreamEvent {
    /// Its tool list was read again (after a start, a restart or `list_changed`).
    ToolsChanged {
        /// The server's namespace.
        server: String,
    },
    /// It changed state.
    StateChanged {
        /// The server's namespace.
        server: String,
        /// The state it is in now.
        state: ServerState,
    },
    /// A progress notification, as the server sent it.
    Progress {
        /// The server's namespace.
        server: String,
        /// The notification's parameters, its progress token among them.
        params: rmcp::model::ProgressNotificationParam,
    },
    /// A log message, as the server sent it.
    #[allow(deprecated)]
    Log {
        /// The server's namespace.
        server: String,
        /// The message, its level and logger.
        params: rmcp::model::LoggingMessageNotificationParam,
    },
}

/// How [`Upstreams::connect`] runs servers.
#[derive(Clone)]
pub struct UpstreamOptions {
    /// The spec file's directory: relative `command` and `cwd` paths start there, and
    /// it is a stdio server's working directory unless `cwd` says otherwise.
    pub base_dir: Option<PathBuf>,
    /// Connect only these namespaces (all when `None`).
    pub only: Option<Vec<String>>,
    /// Restarts and the circuit breaker.
    pub restart: RestartPolicy,
    /// Where `${env.NAME}` is read (default: the process environment).
    pub env: EnvLookup,
    /// The catalog the servers' skills go to (SEP-2640), each pinned like a
    /// tool; `None` leaves skills unlisted.
    pub skills: Option<Arc<Skills>>,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        UpstreamOptions {
            base_dir: None,
            only: None,
            restart: RestartPolicy::default(),
            env: process_env(),
            skills: None,
        }
    }
}

impl fmt::Debug for UpstreamOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamOptions")
            .field("base_dir", &self.base_dir)
            .field("only", &self.only)
            .field("restart", &self.restart)
            .finish_non_exhaustive()
    }
}

/// A tool left out of what models are shown, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Withheld {
    /// The tool's catalog name.
    pub tool: String,
    /// Why it is withheld (quarantined by a changed pin, ...).
    pub reason: String,
}

/// A tool a server lists that cannot be offered, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedTool {
    /// Its name on the server.
    pub name: String,
    /// Why it cannot be offered (its name makes no catalog name, its schema is unsafe, ...).
    pub reason: String,
}

/// One server's standing, for reports.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    /// The server's namespace: the prefix of its tools' catalog names.
    pub namespace: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// Where it stands (serialized as the state's name).
    #[serde(serialize_with = "state_name")]
    pub state: ServerState,
    /// Why it is not ready, if it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The server's name and version, from the handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The protocol revision it speaks, as negotiated when it connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<Revision>,
    /// Its tools in the catalog.
    pub tools: Vec<String>,
    /// Those of them that are quarantined.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quarantined: Vec<String>,
    /// Tools it lists that cannot be offered, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedTool>,
    /// Its skills that are quarantined, by name in the catalog.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quarantined_skills: Vec<String>,
    /// Skills it lists that cannot be offered (named as listed), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_skills: Vec<SkippedTool>,
    /// Consecutive failures.
    pub failures: u32,
}

fn state_name<S: serde::Serializer>(state: &ServerState, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(state.as_str())
}

/// The upstream servers of a spec file, running. Dropping it stops them all.
pub struct Upstreams {
    servers: Vec<Arc<Server>>,
    events: broadcast::Sender<UpstreamEvent>,
}

/// Connects every server of `spec` (see [`Upstreams::connect`]).
pub async fn connect_all(
    spec: &SpecFile,
    pins: Arc<dyn PinStore>,
    options: UpstreamOptions,
) -> Upstreams {
    Upstreams::connect(spec, pins, options).await
}

impl Upstreams {
    /// Starts (or reaches) every server of `spec.mcp_servers` at once, and returns
    /// when each has connected or failed its first attempt. A server that failed is
    /// reported by [`Upstreams::status`] and retried in the background; nothing here
    /// fails as a whole. Must be called inside a tokio runtime, which must outlive
    /// the servers.
    pub async fn connect(
        spec: &SpecFile,
        pins: Arc<dyn PinStore>,
        options: UpstreamOptions,
    ) -> Upstreams {
        let (events, _) = broadcast::channel(256);
        let network = Arc::new(NetworkPolicy::new(&spec.network));
        let mut servers = Vec::new();
        for (namespace, server_spec) in &spec.mcp_servers {
            if options
                .only
                .as_ref()
                .is_some_and(|only| !only.contains(namespace))
            {
                continue;
            }
            let label = format!("MCP server `{namespace}`");
            let config = ServerConfig::from_spec(
                namespace,
                server_spec,
                options.base_dir.as_deref(),
                &options.env,
            )
            .map(|config| config.with_network(network.clone()))
            .and_then(|config| config.check_network().map(|()| config));
            let server = match config {
                Ok(config) => Server::new(
                    config,
                    label,
                    Some(pins.clone()),
                    options.skills.clone(),
                    options.restart,
                    events.clone(),
                ),
                Err(e) => {
                    // Never started: only its name and kind of transport are shown.
                    let transport = match &server_spec.command {
                        Some(command) => config::Transport::Stdio {
                            program: command.into(),
                            args: Vec::new(),
                            env: Vec::new(),
                            cwd: None,
                        },
                        None => config::Transport::Http {
                            url: server_spec.url.clone().unwrap_or_default(),
                            headers: Vec::new(),
                        },
                    };
                    let placeholder = ServerConfig {
                        name: namespace.clone(),
                        transport,
                        effects: Default::default(),
                        outputs: Default::default(),
                        costs: Default::default(),
                        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                        list_timeout: DEFAULT_LIST_TIMEOUT,
                        call_timeout: DEFAULT_CALL_TIMEOUT,
                        scrubber: Default::default(),
                        network: network.clone(),
                        revision: server_spec.revision,
                    };
                    let server = Server::new(
                        placeholder,
                        label,
                        None,
                        None,
                        options.restart,
                        events.clone(),
                    );
                    server.misconfigured(e.to_string());
                    server
                }
            };
            servers.push(server);
        }
        futures::future::join_all(
            servers
                .iter()
                .filter(|s| s.state() == ServerState::Starting)
                .map(|s| s.start()),
        )
        .await;
        Upstreams { servers, events }
    }

    /// Every upstream tool known, quarantined and unavailable ones included, so a
    /// call to any of them is answered with why it cannot run. Give these to the gate.
    pub fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        self.servers
            .iter()
            .flat_map(|server| {
                server.listed().into_iter().map(move |listed| {
                    Arc::new(UpstreamTool::new(server.clone(), &listed.tool)) as Arc<dyn DynTool>
                })
            })
            .collect()
    }

    /// [`Upstreams::tools`] as a catalog.
    pub fn catalog(&self) -> Catalog {
        catalog_of(self.tools())
    }

    /// The tools a model may be shown: [`Upstreams::tools`] without quarantined ones.
    pub fn offered(&self) -> Vec<Arc<dyn DynTool>> {
        let withheld = self.withheld();
        self.tools()
            .into_iter()
            .filter(|t| !withheld.iter().any(|w| w.tool == t.name()))
            .collect()
    }

    /// [`Upstreams::offered`] as a catalog.
    pub fn offered_catalog(&self) -> Catalog {
        catalog_of(self.offered())
    }

    /// Quarantined tools, with why. A change accepted since (`toolgate pins accept`,
    /// from any process) releases its tool here.
    pub fn withheld(&self) -> Vec<Withheld> {
        for server in &self.servers {
            server.release_accepted();
        }
        self.servers
            .iter()
            .flat_map(|server| {
                let label = format!("MCP server `{}`", server.name());
                server.listed().into_iter().filter_map(move |listed| {
                    let reason = listed.quarantine.as_ref()?.reason(&label);
                    Some(Withheld {
                        tool: listed.tool.descriptor.name.clone(),
                        reason,
                    })
                })
            })
            .collect()
    }

    /// Whether `tool` is quarantined.
    pub fn is_withheld(&self, tool: &str) -> bool {
        self.withheld().iter().any(|w| w.tool == tool)
    }

    /// What a metrics endpoint runs before each scrape
    /// ([`MetricsEndpoint::sampler`](crate::telemetry::MetricsEndpoint::sampler)):
    /// sets each server's state, up and quarantined-tools gauges.
    pub fn metrics_sampler(self: &Arc<Self>) -> impl Fn() + Send + Sync + 'static {
        let upstreams = self.clone();
        move || {
            for status in upstreams.status() {
                let up = matches!(status.state, ServerState::Ready);
                crate::telemetry::upstream_gauges(
                    &status.namespace,
                    status.state.as_str(),
                    up,
                    (status.quarantined.len(), status.quarantined_skills.len()),
                );
            }
        }
    }

    /// Every server's standing, in spec order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .iter()
            .map(|server| {
                server.release_accepted();
                let listed = server.listed();
                let state = server.state();
                ServerStatus {
                    namespace: server.name().to_owned(),
                    transport: server.config().transport_name(),
                    reason: state.reason().map(str::to_owned),
                    state,
                    server: server.server_info(),
                    revision: server.revision(),
                    tools: listed
                        .iter()
                        .map(|l| l.tool.descriptor.name.clone())
                        .collect(),
                    quarantined: listed
                        .iter()
                        .filter(|l| l.quarantine.is_some())
                        .map(|l| l.tool.descriptor.name.clone())
                        .collect(),
                    skipped: server
                        .skipped()
                        .into_iter()
                        .map(|(name, reason)| SkippedTool { name, reason })
                        .collect(),
                    quarantined_skills: server.quarantined_skills(),
                    skipped_skills: server
                        .skipped_skills()
                        .into_iter()
                        .map(|(name, reason)| SkippedTool { name, reason })
                        .collect(),
                    failures: server.failures(),
                }
            })
            .collect()
    }

    /// Events from every server: tool lists read again, state changes, progress
    /// and log notifications.
    pub fn subscribe(&self) -> broadcast::Receiver<UpstreamEvent> {
        self.events.subscribe()
    }

    /// The namespace's server, while connected: its peer for requests beyond tools
    /// (`resources/list`, `prompts/get`, ...).
    pub fn peer(&self, namespace: &str) -> Option<rmcp::Peer<rmcp::RoleClient>> {
        self.server(namespace)?.peer()
    }

    /// The process id of a namespace's stdio server, while it runs.
    pub fn pid(&self, namespace: &str) -> Option<u32> {
        self.server(namespace)?.pid()
    }

    fn server(&self, namespace: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.name() == namespace)
    }

    /// Waits until `namespace` is ready again (after a restart), up to `limit`.
    pub async fn wait_ready(&self, namespace: &str, limit: Duration) -> bool {
        let Some(server) = self.server(namespace) else {
            return false;
        };
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if server.state() == ServerState::Ready {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.state() == ServerState::Ready
    }

    /// Stops every server the orderly way (close stdin, wait, `SIGTERM`, kill).
    pub async fn shutdown(self) {
        futures::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }
}

impl Drop for Upstreams {
    fn drop(&mut self) {
        for server in &self.servers {
            server.stop_now();
        }
    }
}

fn catalog_of(tools: Vec<Arc<dyn DynTool>>) -> Catalog {
    let mut catalog = Catalog::new();
    for tool in tools {
        // Names are `namespace.tool`, unique per server and valid by construction.
        if let Err(e) = catalog.register(tool) {
            tracing::warn!("{e}");
        }
    }
    catalog
}
