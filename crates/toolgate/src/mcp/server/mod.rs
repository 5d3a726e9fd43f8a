//! Serving a gate's catalog to any MCP client, over stdio or streamable HTTP.
//!
//! Each MCP session is its own conversation in the gate: its own state, call
//! history and flow position. `tools/list` shows the tools the served principal
//! may use (denied tools are left out; with a flow, those it offers the
//! conversation now, and the client hears when a call changes them), with
//! annotations read off their effects;
//! `tools/call` runs through the gate, so validation errors, refusals and tool
//! failures come back as `isError` results the model can act on. A call that
//! needs a person's approval asks the client's user through MCP elicitation when
//! the client can show a form, and otherwise says how to approve it
//! (`toolgate approvals approve ID`). Prompts and resources of upstream MCP
//! servers are passed on under their namespace ([`McpServerBuilder::forward`]),
//! and the gate's skills are offered through MCP's skills extension; a tool
//! reaches the client of the call it serves through [`Downstream`].
//!
//! Over HTTP the server offers its endpoint to the front door
//! ([`crate::serve::FrontDoor`]), which checks who may reach it. Shutting down
//! (the `shutdown` future of [`McpServer::serve_stdio`] or of the front door
//! resolving, e.g. on [`shutdown_signal`]) stops taking calls, gives running
//! calls a grace period, then cancels the rest through the gate, which records
//! each outcome.

mod approval;
mod approval_task;
mod capacity;
#[cfg(feature = "code-mode")]
mod code_offer;
mod conversations;
mod denial;
mod forward;
mod http;
mod inflight;
mod input_required;
mod offering;
mod restore;
mod result;
mod secure_arguments;
mod session;
mod skills;
mod stateless;
mod tasks;
mod too_many;
mod tools;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmcp::ServiceExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolgate_core::Principal;
use toolgate_core::search::ListedTools;

pub use super::Downstream;
pub use approval_task::ASYNC_APPROVAL_DRAFT;
pub use capacity::{
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CLIENT, DEFAULT_SESSION_IDLE, SessionLimits,
};
pub use denial::AUTHORIZATION_DENIALS_DRAFT;
pub use forward::PeerLookup;
pub use http::{DEFAULT_HTTP_PATH, check_path};
pub use inflight::DrainReport;
pub use result::{content_blocks, content_value};
pub use skills::{SKILL_SCHEME, skill_file_uri, skill_name_at, skill_uri};
pub use stateless::{CONVERSATION_HEADER, CONVERSATION_META, DEFAULT_CONVERSATION};

use crate::Gate;
use capacity::CappedSessions;
use conversations::Conversations;
use forward::{Forwarded, Offers};
use inflight::InFlight;
use input_required::ApprovalQuestions;
use offering::Offering;
use session::Session;

/// How long running calls get to finish after shutdown begins, by default.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// How long the server waits for a person to answer an approval question, by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// The largest MCP message (an HTTP body, a line on stdio) a server takes in, for
/// a gate taking `max_argument_bytes` of arguments: four times that, for a
/// client's escapes and spacing (`\u00e9` for `é`, `", "` for `","`), plus 64 KiB
/// for the JSON-RPC envelope. Past it a message is refused unread (HTTP 413, or the
/// line dropped on stdio); below it the gate refuses oversized arguments with a
/// message the client can act on.
pub fn max_message_bytes(max_argument_bytes: usize) -> usize {
    max_argument_bytes
        .saturating_mul(4)
        .saturating_add(64 << 10)
}

/// After the calls are done, how long the transport gets to deliver their results.
const SETTLE: Duration = Duration::from_millis(200);

/// Limits of a server.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// How long running calls may take to finish once shutdown begins.
    pub grace: Duration,
    /// How long to wait for a person to answer an approval question.
    pub approval_timeout: Duration,
    /// How many streamable HTTP sessions live at once, and how long one may idle.
    pub sessions: SessionLimits,
    /// Put the draft structured authorization denial
    /// ([`AUTHORIZATION_DENIALS_DRAFT`]) on refused calls (default: on).
    pub authorization_denials: bool,
    /// Answer a call that waits for an approver with a task, to a client that
    /// declared the tasks extension: the draft asynchronous approval
    /// ([`ASYNC_APPROVAL_DRAFT`]; default: on).
    pub async_approvals: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            grace: DEFAULT_GRACE,
            approval_timeout: DEFAULT_APPROVAL_TIMEOUT,
            sessions: SessionLimits::default(),
            authorization_denials: true,
            async_approvals: true,
        }
    }
}

/// Why a server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Who may reach the server cannot be settled (a token, an allowed host).
    #[error(transparent)]
    Access(#[from] crate::auth::AccessError),
    /// The endpoint path is not one axum can route.
    #[error(
        "the endpoint path `{0}` must start with `/` and hold no `{{`, `}}` or `*`, e.g. `/mcp`"
    )]
    BadPath(String),
    /// The MCP session over stdio could not start (the client did not initialize).
    #[error("the MCP session over stdio did not start: {0}")]
    Stdio(String),
    /// The transport failed.
    #[error("serving failed: {0}")]
    Io(#[from] std::io::Error),
}

/// What happened while serving, for the operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServeReport {
    /// Calls that ran to an outcome (any outcome, recorded by the gate).
    pub calls: u64,
    /// What shutting down did to calls still running.
    pub shutdown: DrainReport,
}

impl fmt::Display for ServeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DrainReport {
            running,
            cancelled,
            abandoned,
        } = self.shutdown;
        write!(
            f,
            "served {} call{}; at shutdown {running} running, {cancelled} cancelled after the grace period",
            self.calls,
            if self.calls == 1 { "" } else { "s" }
        )?;
        if abandoned > 0 {
            write!(
                f,
                ", {abandoned} without a recorded outcome (check `toolgate audit pending`)"
            )?;
        }
        Ok(())
    }
}

/// One principal's views of the catalog: each set of scopes it was seen with,
/// and what it is offered with them.
type Views = Vec<(Vec<String>, Arc<Offering>)>;

/// What every session of one server shares.
pub(crate) struct Shared {
    offering: RwLock<Arc<Offering>>,
    /// Counts replaced offerings; sessions watch it to tell their clients.
    generation: watch::Sender<u64>,
    /// Whom requests run as; a reload replaces them.
    principals: RwLock<Arc<Principals>>,
    /// What the server offers principals other than `principal`, built on first use:
    /// by id, then by scopes (a token may narrow its principal's scopes).
    offerings: RwLock<HashMap<String, Views>>,
    /// What each conversation lists (with search: `search_tools`, the
    /// always-loaded tools, and those a search in it found) and was last shown.
    conversations: Conversations,
    /// Approval questions put to stateless clients as `input_required`.
    questions: ApprovalQuestions,
    /// A fixed conversation id for every session (else one per session).
    session: Option<String>,
    /// Upstream servers whose prompts and resources are passed on.
    forwarded: Option<Forwarded>,
    /// What they offered when the server was built.
    offers: Offers,
    options: ServeOptions,
    inflight: Arc<InFlight>,
    /// The streamable HTTP sessions, capped by `options.sessions`.
    http_sessions: Arc<CappedSessions>,
    /// Code mode: `run_code` and the always-loaded tools instead of the catalog.
    #[cfg(feature = "code-mode")]
    code: Option<code_offer::CodeOffer>,
    /// Whether a call waiting for an approver holds until one answers (in the
    /// console, or with `toolgate approvals`), up to the approval timeout.
    hold_approvals: bool,
}

/// Whom a server's requests run as.
pub(crate) struct Principals {
    /// Whom requests without a credential of their own run as.
    pub(crate) served: Principal,
    /// The principals a credential may name, by id.
    declared: HashMap<String, Principal>,
}

impl Shared {
    /// Whom requests run as now.
    pub(crate) fn principals(&self) -> Arc<Principals> {
        self.principals
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What the server offers now.
    pub(crate) fn offering(&self) -> Arc<Offering> {
        self.offering
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The declared principal `id` (the operator is always declared).
    pub(crate) fn principal_named(&self, id: &str) -> Option<Principal> {
        let principals = self.principals();
        match principals.declared.get(id) {
            Some(principal) => Some(principal.clone()),
            None if id == principals.served.id => Some(principals.served.clone()),
            None => (id == "operator").then(Principal::operator),
        }
    }

    /// What the server offers `principal` now: its view of the catalog, its digest.
    /// Looked up on every request, so without allocating.
    pub(crate) fn offering_for(&self, principal: &Principal) -> Arc<Offering> {
        let current = self.offering();
        let served = &self.principals().served;
        if principal.id == served.id && principal.scopes == served.scopes {
            return current;
        }
        let cached = self
            .offerings
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&principal.id)
            .and_then(|views| views.iter().find(|(scopes, _)| *scopes == principal.scopes))
            .map(|(_, offering)| offering.clone())
            .filter(|offering| Arc::ptr_eq(&offering.gate, &current.gate));
        if let Some(offering) = cached {
            return offering;
        }
        let built = Arc::new(Offering::new(
            current.gate.clone(),
            principal,
            current.withheld.clone(),
        ));
        let mut offerings = self
            .offerings
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let views = offerings.entry(principal.id.clone()).or_default();
        views.retain(|(scopes, _)| *scopes != principal.scopes);
        views.push((principal.scopes.clone(), built.clone()));
        built
    }
}

/// Builds an [`McpServer`].
pub struct McpServerBuilder {
    gate: Arc<Gate>,
    principal: Principal,
    principals: HashMap<String, Principal>,
    session: Option<String>,
    withheld: Vec<String>,
    search: Option<ListedTools>,
    forwarded: Option<Forwarded>,
    options: ServeOptions,
    #[cfg(feature = "code-mode")]
    code: Option<code_offer::CodeOffer>,
    hold_approvals: bool,
    restorable: Option<Arc<dyn crate::store::StoredSessions>>,
}

impl McpServerBuilder {
    /// Keep every streamable HTTP session in `store`, so that any server sharing
    /// it continues a session another opened (behind a load balancer without
    /// sticky sessions); a session deleted or expired on one is gone on all.
    pub fn restorable_sessions(mut self, store: Arc<dyn crate::store::StoredSessions>) -> Self {
        self.restorable = Some(store);
        self
    }

    /// Hold a call that waits for an approver until someone answers it (in the
    /// web console, or with `toolgate approvals`), up to the approval timeout,
    /// instead of answering at once that it waits: what a server with a console
    /// beside it does, where approvers are at hand.
    pub fn hold_approvals(mut self) -> Self {
        self.hold_approvals = true;
        self
    }

    /// Serve on behalf of `principal` (default: the operator) the requests that
    /// carry no credential naming another.
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = principal;
        self
    }

    /// The principals a request's credential may name (an API key's principal),
    /// e.g. every one the spec file declares.
    pub fn principals(mut self, principals: impl IntoIterator<Item = Principal>) -> Self {
        self.principals
            .extend(principals.into_iter().map(|p| (p.id.clone(), p)));
        self
    }

    /// Put every session's calls in one conversation (default: one per session).
    pub fn conversation(mut self, id: impl Into<String>) -> Self {
        self.session = Some(id.into());
        self
    }

    /// Leave these tools out of `tools/list` (e.g. quarantined upstream tools); a
    /// call still reaches the gate, where the tool refuses it with its reason.
    pub fn withhold(mut self, tools: impl IntoIterator<Item = String>) -> Self {
        self.withheld.extend(tools);
        self
    }

    /// Offer the catalog as "a few always-loaded tools plus search": `tools/list`
    /// shows `search_tools` (which the gate's catalog must hold, see
    /// [`SearchTools::register_in`](crate::search_tool::SearchTools::register_in)) and
    /// `always_loaded`; the tools a search returns are listed for that session from
    /// then on, and its client is told the list changed. Every call still goes
    /// through the gate, listed or not.
    pub fn search(mut self, always_loaded: impl IntoIterator<Item = String>) -> Self {
        self.search = Some(ListedTools::new(always_loaded));
        self
    }

    /// Pass on the prompts and resources of these upstream servers, by namespace,
    /// reached through `peer` (e.g. `move |ns| upstreams.peer(ns)`).
    pub fn forward(
        mut self,
        namespaces: impl IntoIterator<Item = String>,
        peer: impl Fn(&str) -> Option<rmcp::Peer<rmcp::RoleClient>> + Send + Sync + 'static,
    ) -> Self {
        self.forwarded = Some(Forwarded::new(
            namespaces.into_iter().collect(),
            Arc::new(peer),
        ));
        self
    }

    /// How the server runs: its limits, timeouts and what it offers (see
    /// [`ServeOptions`]); the defaults otherwise.
    pub fn options(mut self, options: ServeOptions) -> Self {
        self.options = options;
        self
    }

    /// Offer code mode: `tools/list` shows `run_code`, whose description carries
    /// the stubs of the tools the caller's principal may call in its conversation,
    /// and the `always_loaded` tools; a call of `run_code` runs the program with
    /// `mode`, every call in it through the gate (see [`crate::code_mode`]).
    /// `spec`, the file the tools came from, gives the returns shapes of mocks.
    #[cfg(feature = "code-mode")]
    pub fn code_mode(
        mut self,
        mode: crate::code_mode::CodeMode,
        spec: Option<toolgate_core::spec::SpecFile>,
        always_loaded: impl IntoIterator<Item = String>,
    ) -> Self {
        self.code = Some(code_offer::CodeOffer::new(mode, spec, always_loaded));
        self
    }

    /// The server, ready to serve over stdio or HTTP.
    pub fn build(self) -> McpServer {
        let offering = Offering::new(self.gate, &self.principal, self.withheld);
        let offers = self
            .forwarded
            .as_ref()
            .map(Forwarded::offers)
            .unwrap_or_default();
        McpServer {
            shared: Arc::new(Shared {
                offering: RwLock::new(Arc::new(offering)),
                generation: watch::Sender::new(0),
                principals: RwLock::new(Arc::new(Principals {
                    served: self.principal,
                    declared: self.principals,
                })),
                offerings: RwLock::default(),
                conversations: Conversations::new(
                    self.options.sessions.max_sessions.saturating_mul(4),
                    self.search,
                ),
                questions: ApprovalQuestions::new(self.options.approval_timeout),
                session: self.session,
                forwarded: self.forwarded,
                offers,
                http_sessions: Arc::new(match self.restorable {
                    Some(store) => CappedSessions::new(self.options.sessions).restoring(store),
                    None => CappedSessions::new(self.options.sessions),
                }),
                options: self.options,
                inflight: Arc::default(),
                #[cfg(feature = "code-mode")]
                code: self.code,
                hold_approvals: self.hold_approvals,
            }),
        }
    }
}

/// A gate's catalog as an MCP server.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl McpServer {
    /// Starts a server of `gate`'s catalog, served as the operator principal
    /// unless the builder names another.
    pub fn builder(gate: Arc<Gate>) -> McpServerBuilder {
        McpServerBuilder {
            gate,
            principal: Principal::operator(),
            principals: HashMap::new(),
            session: None,
            withheld: Vec::new(),
            search: None,
            forwarded: None,
            options: ServeOptions::default(),
            #[cfg(feature = "code-mode")]
            code: None,
            hold_approvals: false,
            restorable: None,
        }
    }

    /// The names of the tools `tools/list` shows a new session.
    pub fn tool_names(&self) -> Vec<String> {
        let offering = self.shared.offering();
        let listed = offering.tools.names();
        let conversations = &self.shared.conversations;
        listed
            .into_iter()
            .filter(|name| conversations.listed_at_first(offering.tools.canonical(name)))
            .collect()
    }

    /// Tools the principal may use that MCP cannot carry, each with the reason.
    pub fn left_out(&self) -> Vec<(String, String)> {
        self.shared.offering().tools.left_out.clone()
    }

    /// How many streamable HTTP sessions are live now (at most
    /// [`SessionLimits::max_sessions`]).
    pub fn live_sessions(&self) -> usize {
        self.shared.http_sessions.live()
    }

    /// The gate serving calls now.
    pub fn gate(&self) -> Arc<Gate> {
        self.shared.offering().gate.clone()
    }

    /// Serves `gate` from now on (its catalog changed: an upstream server's tools
    /// came, went or were quarantined), withholding `withheld`; every connected
    /// client is told the tool list changed. Calls already running finish on the
    /// gate they started with.
    pub fn replace_gate(&self, gate: Arc<Gate>, withheld: Vec<String>) {
        let served = self.shared.principals().served.clone();
        let offering = Arc::new(Offering::new(gate, &served, withheld));
        *self
            .shared
            .offering
            .write()
            .unwrap_or_else(PoisonError::into_inner) = offering;
        self.shared
            .offerings
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.shared.generation.send_modify(|g| *g += 1);
    }

    /// Serves a reloaded spec from now on: `gate` built from it (succeeding the
    /// gate serving now, so `once` and turns hold), `served` and `declared` its
    /// principals. Sessions, conversations and their state carry over; calls
    /// already running finish on the gate they started with; every connected
    /// client is told the tool list changed.
    pub fn reload(
        &self,
        gate: Arc<Gate>,
        withheld: Vec<String>,
        served: Principal,
        declared: impl IntoIterator<Item = Principal>,
    ) {
        let declared = declared.into_iter().map(|p| (p.id.clone(), p)).collect();
        *self
            .shared
            .principals
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(Principals { served, declared });
        self.replace_gate(gate, withheld);
    }

    /// Serves one session over standard input and output until the client
    /// disconnects or `shutdown` resolves.
    pub async fn serve_stdio(
        self,
        shutdown: impl Future<Output = ()>,
    ) -> Result<ServeReport, ServeError> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_stream((stdin, stdout), shutdown).await
    }

    /// Serves one session over a byte stream pair (a pipe, a socket) until the
    /// peer disconnects or `shutdown` resolves.
    pub async fn serve_stream<R, W>(
        self,
        (reader, writer): (R, W),
        shutdown: impl Future<Output = ()>,
    ) -> Result<ServeReport, ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let session = CancellationToken::new();
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(reader, writer)
            .with_max_line_length(max_message_bytes(self.gate().max_argument_bytes()));
        let running = Session::new(self.shared.clone())
            .serve_with_ct(transport, session.clone())
            .await
            .map_err(|e| ServeError::Stdio(e.to_string()))?;
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let report = tokio::select! {
            _ = &mut waiting => {
                // The client went away: its calls have no one to answer to.
                self.shared.inflight.drain(Duration::ZERO).await
            }
            _ = shutdown => {
                let report = self.shared.inflight.drain(self.shared.options.grace).await;
                tokio::time::sleep(SETTLE).await;
                session.cancel();
                let _ = waiting.await;
                report
            }
        };
        Ok(self.report(report))
    }

    /// The streamable HTTP endpoint at `path`, for the front door
    /// ([`crate::serve::FrontDoor`]) to put behind its checks; its sessions end
    /// when `sessions` is cancelled.
    pub(crate) fn endpoint(&self, path: &str, sessions: CancellationToken) -> axum::Router {
        http::endpoint(self.shared.clone(), path, sessions)
    }

    /// Stops taking calls and waits up to the grace period for those running
    /// (cancelling the rest through the gate), then a moment for the transport
    /// to deliver their results: the first half of shutting down over HTTP.
    pub(crate) async fn drain(&self) -> ServeReport {
        let report = self.shared.inflight.drain(self.shared.options.grace).await;
        tokio::time::sleep(SETTLE).await;
        self.report(report)
    }

    fn report(&self, shutdown: DrainReport) -> ServeReport {
        ServeReport {
            calls: self.shared.inflight.finished(),
            shutdown,
        }
    }
}

/// Resolves on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
}
