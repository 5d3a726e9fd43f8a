//! One upstream server kept running: connect (start the program or reach the URL,
//! handshake, list tools, check pins), watch the connection, refresh the tool list
//! when the server says it changed, restart after a crash with backoff, open the
//! circuit after repeated failures; and calls, each under a timeout.

mod calls;
mod connect;
mod pins;
mod skills;

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
use super::listed::{RemoteTool, remote_tool};
use super::process::ServerProcess;
use super::relay::{Relay, Sequenced};
use super::result::{call_outcome, upstream_text, upstream_words};
use super::{ServerState, UpstreamEvent};
use crate::skills::Skills;
use crate::{store::PinCheck, store::PinStore, store::join_fields};

/// How long a stdio server gets to exit after its stdin closes, and again after
/// `SIGTERM`, before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Why a tool is withheld from models and refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Quarantine {
    /// The definition differs from its pin.
    Changed {
        /// The pinned fields that differ (`description`, `inputSchema`, ...).
        fields: Vec<&'static str>,
        /// When the pin was taken, as the pin store wrote it.
        pinned_at: String,
    },
    /// The pin could not be checked, so the tool is not trusted.
    Unchecked {
        /// Why the pin could not be checked.
        problem: String,
    },
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
    /// The tool as the server lists it.
    pub tool: RemoteTool,
    /// Why it is withheld from models; `None` when it is offered.
    pub quarantine: Option<Quarantine>,
}

/// What calls and reports read; written by the supervisor.
struct Shared {
    peer: Option<Peer<RoleClient>>,
    tools: IndexMap<String, ListedTool>,
    skipped: Vec<(String, String)>,
    /// Skills it lists that cannot be offered: the name as listed, and why.
    skipped_skills: Vec<(String, String)>,
    breaker: Breaker,
    last_error: Option<String>,
    /// The server's own name and version, from the handshake.
    server_info: Option<String>,
    /// The protocol revision the connection speaks.
    revision: Option<Revision>,
    process: Option<ServerProcess>,
}

/// A supervised upstream server.
pub(super) struct Server {
    config: ServerConfig,
    label: String,
    pins: Option<Arc<dyn PinStore>>,
    /// Where its skills go, when its owner takes them.
    skills: Option<Arc<Skills>>,
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
    pub(super) fn new(
        config: ServerConfig,
        label: String,
        pins: Option<Arc<dyn PinStore>>,
        skills: Option<Arc<Skills>>,
        policy: RestartPolicy,
        events: broadcast::Sender<UpstreamEvent>,
    ) -> Arc<Server> {
        Arc::new(Server {
            config,
            label,
            pins,
            skills,
            shared: Mutex::new(Shared {
                peer: None,
                tools: IndexMap::new(),
                skipped: Vec::new(),
                skipped_skills: Vec::new(),
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
    pub(super) async fn start(self: &Arc<Self>) {
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
    pub(super) fn is_supervised(&self) -> bool {
        self.supervisor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|task| !task.is_finished())
    }

    pub(super) fn name(&self) -> &str {
        &self.config.name
    }

    pub(super) fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub(super) fn state(&self) -> ServerState {
        self.state.borrow().clone()
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        // Every writer replaces whole fields, so the data behind a poisoned lock is whole.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn listed(&self) -> Vec<ListedTool> {
        self.shared().tools.values().cloned().collect()
    }

    pub(super) fn skipped(&self) -> Vec<(String, String)> {
        self.shared().skipped.clone()
    }

    pub(super) fn skipped_skills(&self) -> Vec<(String, String)> {
        self.shared().skipped_skills.clone()
    }

    pub(super) fn failures(&self) -> u32 {
        self.shared().breaker.failures()
    }

    pub(super) fn last_error(&self) -> Option<String> {
        self.shared().last_error.clone()
    }

    pub(super) fn server_info(&self) -> Option<String> {
        self.shared().server_info.clone()
    }

    /// The protocol revision of the current (or last) connection.
    pub(super) fn revision(&self) -> Option<Revision> {
        self.shared().revision.clone()
    }

    /// The connection's peer, while connected: for requests beyond tools
    /// (resources, prompts).
    pub(super) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.shared().peer.clone()
    }

    /// The process id of a stdio server, while it runs.
    pub(super) fn pid(&self) -> Option<u32> {
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
    pub(super) fn misconfigured(&self, reason: String) {
        self.set_state(ServerState::Misconfigured { reason });
    }

    /// Stops supervising and kills the server's process group now, without waiting.
    pub(super) fn stop_now(&self) {
        self.shutdown.cancel();
        let process = self.shared().process.take();
        drop(process);
        self.shared().peer = None;
        if !matches!(self.state(), ServerState::Misconfigured { .. }) {
            self.set_state(ServerState::Stopped);
        }
    }

    /// Stops the server the orderly way: close its input, wait, `SIGTERM`, kill.
    pub(super) async fn stop(&self) {
        self.shutdown.cancel();
        let mut state = self.state.subscribe();
        let stopped = state
            .wait_for(|s| matches!(s, ServerState::Stopped | ServerState::Misconfigured { .. }));
        let _ = tokio::time::timeout(STOP_GRACE * 3, stopped).await;
        self.stop_now();
    }
}
