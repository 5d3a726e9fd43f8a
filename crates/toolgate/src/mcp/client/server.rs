//! One upstream server kept running: connect (start the program or reach the URL,
//! handshake, list tools, check pins), watch the connection, refresh the tool list
//! when the server says it changed, restart after a crash with backoff, open the
//! circuit after repeated failures; and calls, each under a timeout.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use indexmap::IndexMap;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, InputRequest, InputRequiredResult, RequestId, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, Peer, PeerRequestOptions, RoleClient,
    RunningService, ServiceError, serve_client_with_lifecycle_and_ct,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;
use toolgate_core::spec::UpstreamRevision;
use toolgate_core::{ToolCtx, ToolError, content_hash};
use tracing::Instrument;

use super::breaker::{AfterFailure, Breaker, RestartPolicy};
use super::config::{Scrubber, ServerConfig, Transport};
use super::handler::Handler;
use super::http_client::checked_http_client;
use super::lifecycle::{self, Revision};
use super::process::ServerProcess;
use super::relay::{Relay, Sequenced};
use super::result::{call_outcome, upstream_text, upstream_words};
use super::tool::{RemoteTool, remote_tool};
use super::{ServerState, UpstreamEvent};
use crate::{PinCheck, PinStore, join_fields};

/// How long a stdio server gets to exit after its stdin closes, and again after
/// `SIGTERM`, before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Why a tool is withheld from models and refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Quarantine {
    /// The definition differs from its pin.
    Changed {
        fields: Vec<&'static str>,
        pinned_at: String,
    },
    /// The pin could not be checked, so the tool is not trusted.
    Unchecked { problem: String },
}

impl Quarantine {
    /// Why, in words, for a tool called `tool` on `label`.
    pub fn reason(&self, label: &str) -> String {
        match self {
            Quarantine::Changed { fields, pinned_at } => format!(
                "{label} changed its {} since it was pinned at {pinned_at}",
                join_fields(fields)
            ),
            Quarantine::Unchecked { problem } => {
                format!("its definition could not be checked against its pin ({problem})")
            }
        }
    }
}

/// Why a connection did not start.
enum Refused {
    /// The server knows `server/discover` but speaks only session revisions.
    SessionOnly(String),
    Other(String),
}

impl Refused {
    fn of(error: &ClientInitializeError, reason: String) -> Refused {
        if lifecycle::wants_initialize(error) {
            Refused::SessionOnly(reason)
        } else {
            Refused::Other(reason)
        }
    }

    fn into_reason(self) -> String {
        match self {
            Refused::SessionOnly(reason) | Refused::Other(reason) => reason,
        }
    }
}

/// One listed tool and its standing.
#[derive(Debug, Clone)]
pub struct ListedTool {
    pub tool: RemoteTool,
    pub quarantine: Option<Quarantine>,
}

/// What calls and reports read; written by the supervisor.
struct Shared {
    peer: Option<Peer<RoleClient>>,
    tools: IndexMap<String, ListedTool>,
    skipped: Vec<(String, String)>,
    breaker: Breaker,
    last_error: Option<String>,
    /// The server's own name and version, from the handshake.
    server_info: Option<String>,
    /// The protocol revision the connection speaks.
    revision: Option<Revision>,
    process: Option<ServerProcess>,
}

/// A supervised upstream server.
pub struct Server {
    config: ServerConfig,
    label: String,
    pins: Option<Arc<dyn PinStore>>,
    shared: Mutex<Shared>,
    state: watch::Sender<ServerState>,
    refresh: Arc<Notify>,
    reconnect: Notify,
    shutdown: CancellationToken,
    events: broadcast::Sender<UpstreamEvent>,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Served calls running on the server, for passing its notifications on.
    relay: Arc<Relay>,
}

impl Server {
    /// A server not yet started. `label` names it in messages ("MCP server `fs`").
    pub fn new(
        config: ServerConfig,
        label: String,
        pins: Option<Arc<dyn PinStore>>,
        policy: RestartPolicy,
        events: broadcast::Sender<UpstreamEvent>,
    ) -> Arc<Server> {
        Arc::new(Server {
            config,
            label,
            pins,
            shared: Mutex::new(Shared {
                peer: None,
                tools: IndexMap::new(),
                skipped: Vec::new(),
                breaker: Breaker::new(policy),
                last_error: None,
                server_info: None,
                revision: None,
                process: None,
            }),
            state: watch::Sender::new(ServerState::Starting),
            refresh: Arc::new(Notify::new()),
            reconnect: Notify::new(),
            shutdown: CancellationToken::new(),
            events,
            supervisor: Mutex::new(None),
            relay: Arc::default(),
        })
    }

    /// Starts supervising on the current runtime and waits until the first attempt
    /// to connect has ended, one way or the other.
    pub async fn start(self: &Arc<Self>) {
        let mut state = self.state.subscribe();
        let task = tokio::spawn(self.clone().supervise());
        *self
            .supervisor
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(task);
        let _ = state
            .wait_for(|s| !matches!(s, ServerState::Starting))
            .await;
    }

    /// Whether its supervisor still runs (it stops with its runtime, or when stopped).
    pub fn is_supervised(&self) -> bool {
        self.supervisor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|task| !task.is_finished())
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        // Every writer replaces whole fields, so the data behind a poisoned lock is whole.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn listed(&self) -> Vec<ListedTool> {
        self.shared().tools.values().cloned().collect()
    }

    pub fn skipped(&self) -> Vec<(String, String)> {
        self.shared().skipped.clone()
    }

    pub fn failures(&self) -> u32 {
        self.shared().breaker.failures()
    }

    pub fn last_error(&self) -> Option<String> {
        self.shared().last_error.clone()
    }

    pub fn server_info(&self) -> Option<String> {
        self.shared().server_info.clone()
    }

    /// The protocol revision of the current (or last) connection.
    pub fn revision(&self) -> Option<Revision> {
        self.shared().revision.clone()
    }

    /// The connection's peer, while connected: for requests beyond tools
    /// (resources, prompts).
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.shared().peer.clone()
    }

    /// The process id of a stdio server, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.shared().process.as_ref().map(ServerProcess::pid)
    }

    fn set_state(&self, state: ServerState) {
        let changed = self.state.send_if_modified(|current| {
            let changed = *current != state;
            *current = state.clone();
            changed
        });
        if changed {
            let _ = self.events.send(UpstreamEvent::StateChanged {
                server: self.config.name.clone(),
                state,
            });
        }
    }

    /// A server whose settings cannot be used: it never starts.
    pub fn misconfigured(&self, reason: String) {
        self.set_state(ServerState::Misconfigured { reason });
    }

    /// Stops supervising and kills the server's process group now, without waiting.
    pub fn stop_now(&self) {
        self.shutdown.cancel();
        let process = self.shared().process.take();
        drop(process);
        self.shared().peer = None;
        if !matches!(self.state(), ServerState::Misconfigured { .. }) {
            self.set_state(ServerState::Stopped);
        }
    }

    /// Stops the server the orderly way: close its input, wait, `SIGTERM`, kill.
    pub async fn stop(&self) {
        self.shutdown.cancel();
        let mut state = self.state.subscribe();
        let stopped = state
            .wait_for(|s| matches!(s, ServerState::Stopped | ServerState::Misconfigured { .. }));
        let _ = tokio::time::timeout(STOP_GRACE * 3, stopped).await;
        self.stop_now();
    }

    async fn supervise(self: Arc<Self>) {
        loop {
            if self.shutdown.is_cancelled() {
                break;
            }
            let reason = match self.connect_once().await {
                Ok((running, ct)) => match self.serve(running, ct).await {
                    Some(reason) => reason,
                    None => break,
                },
                Err(reason) => reason,
            };
            let reason = upstream_words(&reason, &self.config.scrubber);
            tracing::warn!(server = %self.config.name, "{reason}");
            let after = {
                let mut shared = self.shared();
                shared.peer = None;
                shared.last_error = Some(reason.clone());
                shared.breaker.record_failure(Instant::now())
            };
            let wait_until = match after {
                AfterFailure::Restart(wait) => {
                    let attempt = self.failures();
                    crate::telemetry::upstream_restart(&self.config.name);
                    self.set_state(ServerState::Restarting { reason, attempt });
                    Instant::now() + wait
                }
                AfterFailure::Open(until) => {
                    let failures = self.failures();
                    self.set_state(ServerState::Unavailable {
                        reason,
                        failures,
                        until,
                    });
                    until
                }
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wait_until.into()) => {}
                _ = self.shutdown.cancelled() => break,
            }
        }
        self.stop_now();
        self.set_state(ServerState::Stopped);
    }

    /// Starts or reaches the server and starts the protocol: `server/discover`
    /// first, `initialize` for servers of the session revisions (see
    /// `lifecycle.rs`).
    async fn connect_once(
        &self,
    ) -> Result<(RunningService<RoleClient, Handler>, CancellationToken), String> {
        match self.config.revision {
            UpstreamRevision::Session => {
                return self
                    .connect_with(lifecycle::initialize_only())
                    .await
                    .map_err(Refused::into_reason);
            }
            UpstreamRevision::Stateless => {
                return self
                    .connect_with(lifecycle::discover_only())
                    .await
                    .map_err(Refused::into_reason);
            }
            UpstreamRevision::Auto => {}
        }
        match self.connect_with(lifecycle::discover_first()).await {
            Err(Refused::SessionOnly(reason)) => {
                tracing::debug!(server = %self.config.name, "{reason}; connecting again with `initialize`");
                self.connect_with(lifecycle::initialize_only())
                    .await
                    .map_err(Refused::into_reason)
            }
            other => other.map_err(Refused::into_reason),
        }
    }

    async fn connect_with(
        &self,
        lifecycle: ClientLifecycleMode,
    ) -> Result<(RunningService<RoleClient, Handler>, CancellationToken), Refused> {
        let handler = Handler::new(
            self.config.name.clone(),
            self.refresh.clone(),
            self.events.clone(),
            self.config.scrubber.clone(),
            self.relay.clone(),
        );
        let connect = humantime::format_duration(self.config.connect_timeout);
        let label = &self.label;
        let ct = self.shutdown.child_token();
        match &self.config.transport {
            transport @ Transport::Stdio { program, .. } => {
                let (process, pipes) =
                    ServerProcess::start(&self.config.name, transport, &self.config.scrubber)
                        .await
                        .map_err(|e| {
                            Refused::Other(format!(
                                "{label} could not be started (`{}`: {e}); check `command` and that the program is installed",
                                program.display()
                            ))
                        })?;
                let transport = Sequenced::new(
                    AsyncRwTransport::new_client(pipes.stdout, pipes.stdin),
                    self.relay.clone(),
                );
                let handshake =
                    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, ct.clone());
                match tokio::time::timeout(self.config.connect_timeout, handshake).await {
                    Ok(Ok(running)) => {
                        self.shared().process = Some(process);
                        Ok((running, ct))
                    }
                    Ok(Err(e)) => {
                        let stderr = process.stderr().clone();
                        let status = process.kill().await;
                        let reason = format!(
                            "{label} failed the MCP handshake ({e}){}{}",
                            exit_words(status),
                            stderr_words(&stderr)
                        );
                        Err(Refused::of(&e, reason))
                    }
                    Err(_) => {
                        let stderr = process.stderr().clone();
                        process.kill().await;
                        Err(Refused::Other(format!(
                            "{label} did not complete the MCP handshake within {connect}{}",
                            stderr_words(&stderr)
                        )))
                    }
                }
            }
            Transport::Http { url, headers } => {
                let mut map = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        Refused::Other(format!("{label}: `{name}` is not an HTTP header name"))
                    })?;
                    let mut value = http::HeaderValue::from_str(value.expose()).map_err(|_| {
                        Refused::Other(format!(
                            "{label}: the value of header `{name}` is not a valid header value"
                        ))
                    })?;
                    value.set_sensitive(true);
                    map.insert(name, value);
                }
                let client = checked_http_client(&self.config.network, url)
                    .await
                    .map_err(|reason| Refused::Other(format!("{label} at {url}: {reason}")))?;
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                let transport = Sequenced::new(
                    StreamableHttpClientTransport::with_client(client, config),
                    self.relay.clone(),
                );
                match tokio::time::timeout(
                    self.config.connect_timeout,
                    serve_client_with_lifecycle_and_ct(handler, transport, lifecycle, ct.clone()),
                )
                .await
                {
                    Ok(Ok(running)) => Ok((running, ct)),
                    Ok(Err(e)) => {
                        let reason = format!("{label} at {url} could not be reached ({e})");
                        Err(Refused::of(&e, reason))
                    }
                    Err(_) => Err(Refused::Other(format!(
                        "{label} at {url} did not complete the MCP handshake within {connect}"
                    ))),
                }
            }
        }
    }

    /// Lists tools, then watches the connection until it ends. Returns why it
    /// ended, or `None` when toolgate is shutting the server down.
    async fn serve(
        &self,
        running: RunningService<RoleClient, Handler>,
        cancel: CancellationToken,
    ) -> Option<String> {
        let peer = running.peer().clone();
        let info = running.peer_info().map(|info| {
            let server = info.server_info.as_ref();
            server.map_or_else(String::new, |s| format!("{} {}", s.name, s.version))
        });
        let revision = running.peer_info().map(|info| Revision::of(&info));
        if let Err(reason) = self.list_tools(&peer).await {
            let _ = running.cancel().await;
            self.end_process().await;
            return Some(reason);
        }
        {
            let mut shared = self.shared();
            shared.peer = Some(peer.clone());
            shared.server_info = info.filter(|i| !i.is_empty());
            shared.revision = revision.clone();
        }
        if let Some(revision) = &revision {
            tracing::debug!(server = %self.config.name, "connected; it speaks MCP {revision}");
        }
        self.set_state(ServerState::Ready);
        let healthy_at = Instant::now() + self.shared().breaker.policy().healthy_after;
        let mut healthy = false;
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let mut exited = self.shared().process.as_ref().map(ServerProcess::exited);
        let process_exit = async {
            match &mut exited {
                Some(exited) => {
                    let _ = exited.wait_for(|gone| *gone).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::pin!(process_exit);
        let ended = loop {
            tokio::select! {
                _ = &mut waiting => break "closed the connection",
                _ = &mut process_exit => {
                    cancel.cancel();
                    let _ = (&mut waiting).await;
                    break "exited";
                }
                _ = self.refresh.notified() => {
                    if let Err(reason) = self.list_tools(&peer).await {
                        tracing::warn!(server = %self.config.name, "{}", self.config.scrubber.scrub(&reason));
                    }
                }
                _ = self.reconnect.notified() => {
                    cancel.cancel();
                    let _ = (&mut waiting).await;
                    break "stopped answering";
                }
                _ = tokio::time::sleep_until(healthy_at.into()), if !healthy => {
                    healthy = true;
                    self.shared().breaker.record_success();
                }
                _ = self.shutdown.cancelled() => {
                    // Closing the transport closes the server's stdin: the orderly stop.
                    let _ = (&mut waiting).await;
                    self.shared().peer = None;
                    let process = self.shared().process.take();
                    if let Some(process) = process {
                        process.stop(STOP_GRACE).await;
                    }
                    return None;
                }
            }
        };
        self.shared().peer = None;
        let (status, stderr) = self.end_process().await;
        let what = status
            .and_then(exit_phrase)
            .unwrap_or_else(|| ended.to_owned());
        Some(format!(
            "{} {what}{}",
            self.label,
            stderr.map(|s| stderr_words(&s)).unwrap_or_default()
        ))
    }

    /// Kills what is left of a stdio server's group and reaps it.
    async fn end_process(
        &self,
    ) -> (
        Option<std::process::ExitStatus>,
        Option<super::process::StderrTail>,
    ) {
        let process = self.shared().process.take();
        match process {
            Some(process) => {
                let stderr = process.stderr().clone();
                (process.kill().await, Some(stderr))
            }
            None => (None, None),
        }
    }

    /// Lists the server's tools and checks each against its pin.
    async fn list_tools(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let label = &self.label;
        let listed =
            match tokio::time::timeout(self.config.list_timeout, peer.list_all_tools()).await {
                Ok(Ok(tools)) => tools,
                Ok(Err(e)) => return Err(format!("{label} failed to list its tools ({e})")),
                Err(_) => {
                    return Err(format!(
                        "{label} did not list its tools within {}",
                        humantime::format_duration(self.config.list_timeout)
                    ));
                }
            };
        let mut tools = IndexMap::new();
        let mut skipped = Vec::new();
        for tool in listed {
            let value = serde_json::to_value(&tool).unwrap_or(Value::Null);
            let remote = match remote_tool(&self.config.name, &value, &self.config.effects) {
                Ok(remote) => remote,
                Err(reason) => {
                    let name = toolgate_core::escape_for_terminal(&tool.name).into_owned();
                    tracing::warn!(server = %self.config.name, "tool `{name}` is left out: {reason}");
                    skipped.push((name, reason));
                    continue;
                }
            };
            if tools.contains_key(&remote.name) {
                skipped.push((remote.name.clone(), "the server lists it twice".to_owned()));
                continue;
            }
            let quarantine = self.check_pin(&remote);
            if let Some(q) = &quarantine {
                tracing::warn!(
                    server = %self.config.name,
                    "`{}` is quarantined: {}",
                    remote.descriptor.name,
                    q.reason(&self.label)
                );
            }
            tools.insert(
                remote.name.clone(),
                ListedTool {
                    tool: remote,
                    quarantine,
                },
            );
        }
        {
            let mut shared = self.shared();
            shared.tools = tools;
            shared.skipped = skipped;
        }
        let _ = self.events.send(UpstreamEvent::ToolsChanged {
            server: self.config.name.clone(),
        });
        Ok(())
    }

    fn check_pin(&self, tool: &RemoteTool) -> Option<Quarantine> {
        let pins = self.pins.as_ref()?;
        match pins.observe_tool(&tool.descriptor.name, &tool.definition, SystemTime::now()) {
            Ok(PinCheck::Pinned | PinCheck::Matches) => None,
            Ok(PinCheck::Changed(pin)) => Some(Quarantine::Changed {
                fields: pin.changed_fields(),
                pinned_at: pin.pinned_at,
            }),
            Err(e) => Some(Quarantine::Unchecked {
                problem: e.to_string(),
            }),
        }
    }

    /// Releases quarantined tools whose change was accepted since (perhaps by
    /// another process), so they are offered again.
    pub fn release_accepted(&self) {
        let quarantined: Vec<ListedTool> = self
            .shared()
            .tools
            .values()
            .filter(|l| matches!(l.quarantine, Some(Quarantine::Changed { .. })))
            .cloned()
            .collect();
        for listed in quarantined {
            self.release_if_accepted(&listed);
        }
    }

    /// Releases one quarantined tool if its current definition is now its pin.
    fn release_if_accepted(&self, listed: &ListedTool) -> bool {
        let Some(pins) = &self.pins else {
            return false;
        };
        if !matches!(listed.quarantine, Some(Quarantine::Changed { .. })) {
            return false;
        }
        let accepted = pins
            .pin(&listed.tool.descriptor.name)
            .ok()
            .flatten()
            .is_some_and(|pin| pin.hash == content_hash(&listed.tool.definition));
        if accepted {
            if let Some(entry) = self.shared().tools.get_mut(&listed.tool.name) {
                entry.quarantine = None;
            }
            let _ = self.events.send(UpstreamEvent::ToolsChanged {
                server: self.config.name.clone(),
            });
        }
        accepted
    }

    /// Refuses a call to a tool that is quarantined or no longer listed. A quarantined
    /// tool whose change was accepted since (perhaps by another process) is released.
    pub fn check_tool(&self, remote: &str, catalog_name: &str) -> Result<(), ToolError> {
        // Only a quarantined tool's listing is needed past the lock; most calls
        // clone nothing.
        let listed = match self.shared().tools.get(remote) {
            Some(listed) if listed.quarantine.is_none() => return Ok(()),
            other => other.cloned(),
        };
        let Some(listed) = listed else {
            let state = self.state();
            if matches!(state, ServerState::Ready) {
                return Err(ToolError::permanent(format!(
                    "{} no longer offers `{remote}`; it left the server's tool list",
                    self.label
                )));
            }
            return Ok(());
        };
        let Some(quarantine) = &listed.quarantine else {
            return Ok(());
        };
        if self.release_if_accepted(&listed) {
            return Ok(());
        }
        Err(ToolError::permanent(format!(
            "it is quarantined and was not run: {}. The operator must review the change \
             (`toolgate pins diff {catalog_name}`) and accept it (`toolgate pins accept {catalog_name}`)",
            quarantine.reason(&self.label)
        )))
    }

    /// Refuses a call while the server's circuit is open (see [`Self::ready_peer`]).
    pub fn check_circuit(&self) -> Result<(), ToolError> {
        match self.state() {
            ServerState::Unavailable {
                reason,
                failures,
                until,
            } => Err(self.circuit_open(&reason, failures, until)),
            _ => Ok(()),
        }
    }

    fn circuit_open(&self, reason: &str, failures: u32, until: Instant) -> ToolError {
        let left = until.saturating_duration_since(Instant::now());
        ToolError::Retryable {
            message: format!(
                "{} is unavailable after {failures} failures in a row (the last: {reason}); \
                 toolgate tries it again in {}",
                self.label,
                humantime::format_duration(Duration::from_secs(left.as_secs().max(1)))
            ),
            retry_after: Some(left),
        }
    }

    /// Calls `remote` with `input`, under the server's call timeout and the call's
    /// deadline.
    pub async fn call(
        &self,
        remote: &str,
        input: Value,
        ctx: &ToolCtx,
    ) -> Result<Value, ToolError> {
        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::invalid_input(format!(
                    "arguments must be a JSON object, not {other}"
                )));
            }
        };
        let peer = self.ready_peer(ctx).await?;
        let mut params = CallToolRequestParams::new(remote.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let limit = match ctx.deadline() {
            Some(deadline) => self
                .config
                .call_timeout
                .min(deadline.saturating_duration_since(Instant::now())),
            None => self.config.call_timeout,
        };
        // The client span of the upstream call; its trace context rides in
        // `_meta` (SEP-414), where the upstream server can pick it up.
        let span = tracing::info_span!(
            "tools/call",
            otel.name = tracing::field::Empty,
            otel.kind = "client",
            mcp.method.name = "tools/call",
            gen_ai.tool.name = remote,
            toolgate.upstream = %self.config.name,
        );
        if !span.is_disabled() {
            span.record("otel.name", format!("tools/call {remote}"));
            let fields = crate::telemetry::trace_fields(&span);
            if !fields.is_empty() {
                let meta = params.meta.get_or_insert_with(Default::default);
                for (key, value) in fields {
                    meta.insert(key, Value::String(value));
                }
            }
        }
        let sent = tokio::time::timeout(limit, self.send_call(&peer, params)).instrument(span);
        let answer = tokio::select! {
            answer = sent => answer,
            _ = ctx.cancellation().cancelled() => {
                return Err(ToolError::permanent("the call was cancelled; the server was told to stop it"));
            }
        };
        let label = &self.label;
        let result = match answer {
            Err(_) => Err(ToolError::retryable(format!(
                "{label} did not answer within {}; the call was cancelled on the server",
                humantime::format_duration(limit)
            ))),
            Ok(Ok(Answer::Result(result))) => {
                self.shared().breaker.record_success();
                let value = serde_json::to_value(&result).unwrap_or(Value::Null);
                call_outcome(&value, &self.config.name, &self.config.scrubber)
            }
            Ok(Ok(Answer::InputRequired(asked))) => {
                self.shared().breaker.record_success();
                Err(ToolError::permanent(input_required_words(
                    label,
                    &self.config.name,
                    &asked,
                    &self.config.scrubber,
                )))
            }
            Ok(Err(ServiceError::McpError(error))) => {
                let message =
                    upstream_text(&error.message, &self.config.name, &self.config.scrubber);
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    Err(ToolError::invalid_input(format!(
                        "{label} refused the arguments: {message}"
                    )))
                } else {
                    Err(ToolError::permanent(format!(
                        "{label} answered with an error: {message}"
                    )))
                }
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                if matches!(self.config.transport, Transport::Http { .. }) {
                    self.reconnect.notify_one();
                }
                let detail = self.lost_connection_reason().await;
                Err(ToolError::retryable(format!(
                    "{detail}; toolgate is restarting it. The call may have taken effect before the connection was lost"
                )))
            }
            Ok(Err(other)) => Err(ToolError::permanent(format!(
                "{label} failed the call: {}",
                upstream_words(&other.to_string(), &self.config.scrubber)
            ))),
        };
        crate::telemetry::upstream_call(&self.config.name, result.is_ok());
        result
    }

    /// Sends one `tools/call`. While it runs, the server's progress on it, its log
    /// messages and its requests go to the MCP client whose call this is, if any
    /// (see `relay.rs`). Dropped before the answer (a timeout, a cancellation), it
    /// tells the server to stop.
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
    ) -> Result<Answer, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await?;
        let registered = crate::mcp::server::Downstream::current().map(|downstream| {
            self.relay
                .register(handle.progress_token.clone(), downstream)
        });
        let mut abandoned = CancelOnDrop {
            peer: Some(peer.clone()),
            id: handle.id.clone(),
        };
        let answer = handle.await_response().await;
        abandoned.peer = None;
        if registered.is_some() {
            self.relay.caught_up().await;
        }
        match answer? {
            ServerResult::CallToolResult(result) => Ok(Answer::Result(result)),
            ServerResult::InputRequiredResult(asked) => Ok(Answer::InputRequired(asked)),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// Why the connection was lost, as the supervisor found out (it may take a
    /// moment to learn the exit status).
    async fn lost_connection_reason(&self) -> String {
        let mut state = self.state.subscribe();
        let ended = state.wait_for(|s| !matches!(s, ServerState::Ready | ServerState::Starting));
        match tokio::time::timeout(Duration::from_secs(1), ended).await {
            Ok(Ok(state)) => match &*state {
                ServerState::Restarting { reason, .. }
                | ServerState::Unavailable { reason, .. } => {
                    format!("the connection was lost during the call: {reason}")
                }
                _ => format!("{} lost the connection during the call", self.label),
            },
            _ => format!("{} lost the connection during the call", self.label),
        }
    }

    /// The peer of a live connection; waits while the server starts or restarts,
    /// and fails fast while its circuit is open.
    async fn ready_peer(&self, ctx: &ToolCtx) -> Result<Peer<RoleClient>, ToolError> {
        let mut state = self.state.subscribe();
        let wait = match ctx.deadline() {
            Some(deadline) => self
                .config
                .connect_timeout
                .min(deadline.saturating_duration_since(Instant::now())),
            None => self.config.connect_timeout,
        };
        let until = Instant::now() + wait;
        loop {
            let current = state.borrow_and_update().clone();
            let label = &self.label;
            match current {
                ServerState::Ready => {
                    if let Some(peer) = self.peer() {
                        return Ok(peer);
                    }
                }
                ServerState::Unavailable {
                    reason,
                    failures,
                    until,
                } => return Err(self.circuit_open(&reason, failures, until)),
                ServerState::Misconfigured { reason } => return Err(ToolError::permanent(reason)),
                ServerState::Stopped => {
                    return Err(ToolError::permanent(format!("{label} has been stopped")));
                }
                ServerState::Starting | ServerState::Restarting { .. } => {}
            }
            let changed = tokio::time::timeout_at(until.into(), state.changed());
            match changed.await {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => {
                    return Err(ToolError::permanent(format!("{label} has been stopped")));
                }
                Err(_) => {
                    let why = self
                        .last_error()
                        .map(|e| format!(" (the last failure: {e})"))
                        .unwrap_or_default();
                    return Err(ToolError::retryable(format!(
                        "{label} is restarting and was not back within {}{why}",
                        humantime::format_duration(wait)
                    )));
                }
            }
        }
    }
}

/// `exited with status 3`, `was killed by signal 9`.
fn exit_phrase(status: std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Some(format!("exited with status {code}")),
        (None, Some(signal)) => Some(format!("was killed by signal {signal}")),
        _ => None,
    }
}

fn exit_words(status: Option<std::process::ExitStatus>) -> String {
    status
        .and_then(exit_phrase)
        .map(|phrase| format!(" (it {phrase})"))
        .unwrap_or_default()
}

fn stderr_words(stderr: &super::process::StderrTail) -> String {
    stderr
        .summary(3)
        .map(|s| format!("; its last words on stderr: {s}"))
        .unwrap_or_default()
}

/// What an upstream server answered a `tools/call` with.
enum Answer {
    Result(CallToolResult),
    /// The 2026-07-28 revision's question back (`resultType: "input_required"`).
    InputRequired(InputRequiredResult),
}

/// The tool error for an upstream `input_required` answer: what kinds of input the
/// server asked for, and an elicitation's question (fenced as untrusted text). toolgate
/// does not relay such questions: the answer would have to come from whoever called
/// toolgate, and the gate has no way to ask them yet.
fn input_required_words(
    label: &str,
    source: &str,
    asked: &InputRequiredResult,
    scrubber: &Scrubber,
) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    let mut question = None;
    for request in asked.input_requests.iter().flat_map(|r| r.values()) {
        let kind = match request {
            InputRequest::Elicitation(elicit) => {
                question = question.or_else(|| {
                    let params = serde_json::to_value(&elicit.params).ok()?;
                    params.get("message")?.as_str().map(str::to_owned)
                });
                "an answer from the user"
            }
            InputRequest::CreateMessage(_) => "a reply from the model (sampling)",
            InputRequest::ListRoots(_) => "the client's roots",
            _ => "input of a kind toolgate does not know",
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    let what = if kinds.is_empty() {
        "more input".to_owned()
    } else {
        kinds.join(" and ")
    };
    let mut words = format!(
        "the upstream {label} asked for input ({what}); toolgate cannot relay it yet, so the tool did not run"
    );
    if let Some(question) = question {
        words.push_str(". Its question: ");
        words.push_str(&upstream_text(&question, source, scrubber));
    }
    words
}

/// Tells the server to stop a request whose answer nobody waits for any more.
struct CancelOnDrop {
    peer: Option<Peer<RoleClient>>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(peer), Ok(runtime)) = (self.peer.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let notice = CancelledNotificationParam::new(
            Some(self.id.clone()),
            Some("toolgate stopped waiting for the answer".into()),
        );
        runtime.spawn(async move {
            let _ = peer.notify_cancelled(notice).await;
        });
    }
}
