//! One MCP session: its own conversation in the gate (state, call history, flow
//! position), the tools its principal may use, and every call through the gate.

// MCP logging is deprecated by the 2026-07-28 revision, and current in the
// revisions this server speaks.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
    GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, Implementation, ListPromptsRequestMethod, ListPromptsResult,
    ListResourceTemplatesRequestMethod, ListResourceTemplatesResult, ListResourcesRequestMethod,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestMethod, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;
use toolgate_core::ToolDescriptor;
use toolgate_core::search::{ListedTools, SEARCH_TOOLS, found_tool_names};

use super::Shared;
use super::approval::{self, Answer};
use super::downstream::{Downstream, LogLevel};
use super::forward::Forwarded;
use super::offering::Offering;
use super::result::{call_result, error_result};
use super::tools::{ToolList, arguments, shown_names};
use crate::{Gate, Outcome, ToolCall};

/// The header that carries the session id on the streamable HTTP transport.
const SESSION_HEADER: &str = "mcp-session-id";

/// The newest protocol revision served. Clients of the revisions with sessions
/// (2025-06-18, 2025-11-25) initialize; clients of 2026-07-28 send their version
/// and capabilities in every request's `_meta`.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// The handler of one MCP session.
#[derive(Clone)]
pub(crate) struct Session {
    shared: Arc<Shared>,
    /// The gate's conversation id, fixed by the first call.
    id: Arc<OnceLock<String>>,
    log_level: LogLevel,
    /// The tool names last listed to the client, to tell it when they change.
    listed: Arc<Mutex<Option<Vec<String>>>>,
    /// With search: the tools this session lists (see [`Shared::search`](super::Shared)).
    searched: Arc<Mutex<ListedTools>>,
}

impl Session {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Session {
            id: Arc::default(),
            log_level: LogLevel::default(),
            searched: Arc::new(Mutex::new(shared.search.clone().unwrap_or_default())),
            listed: Arc::default(),
            shared,
        }
    }

    /// The tools this session's client is offered now, before the policy's
    /// filter: those in its principal's view, with a flow as the flow offers them
    /// in this conversation (a marked tool's reason naming no tool outside the
    /// view); with search, those listed in this session.
    fn offered(
        &self,
        offering: &Offering,
        context: &RequestContext<RoleServer>,
    ) -> Vec<ToolDescriptor> {
        let gate = &offering.gate;
        let session = self.conversation(context);
        let principal = &self.shared.principal;
        let mut descriptors = gate
            .visible_tools_for(session, principal)
            .unwrap_or_else(|e| {
                warn_flow_unreadable(session, &e);
                gate.catalog()
                    .iter()
                    .map(|tool| tool.descriptor().clone())
                    .collect()
            });
        if let Some(searched) = self.searched() {
            descriptors.retain(|d| searched.is_listed(&d.name));
        }
        descriptors
    }

    /// The names of the tools `tools/list` would show this session's client now,
    /// found without copying or rendering a descriptor.
    fn shown_now(&self, offering: &Offering, context: &RequestContext<RoleServer>) -> Vec<String> {
        let gate = &offering.gate;
        let session = self.conversation(context);
        let names = gate.visible_tool_names(session).unwrap_or_else(|e| {
            warn_flow_unreadable(session, &e);
            gate.catalog().iter().map(|tool| tool.name()).collect()
        });
        let searched = self.searched();
        let offered = names
            .into_iter()
            .filter(|name| searched.as_ref().is_none_or(|s| s.is_listed(name)))
            .filter_map(|name| gate.catalog().get(name).ok())
            .map(|tool| tool.descriptor());
        shown_names(gate, &self.shared.principal, &offering.withheld, offered)
    }

    /// With search, the tools this session lists.
    fn searched(&self) -> Option<MutexGuard<'_, ListedTools>> {
        self.shared
            .search
            .is_some()
            .then(|| self.searched.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Lists for this session the tools a `search_tools` call found.
    fn reveal_found(&self, tool: &str, outcome: &Outcome) {
        if self.shared.search.is_none() || tool != SEARCH_TOOLS {
            return;
        }
        if let Outcome::Ok { value, .. } = outcome {
            let found = found_tool_names(value);
            self.searched
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .reveal(found.iter().map(String::as_str));
        }
    }

    /// Tells the client when a call changed the tools it is offered (a flow
    /// opened or closed some), once it has listed them.
    async fn tell_if_tools_changed(
        &self,
        offering: &Offering,
        context: &RequestContext<RoleServer>,
    ) {
        if self
            .listed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
        {
            return;
        }
        let now = self.shown_now(offering, context);
        let changed = {
            let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
            let changed = listed.as_ref() != Some(&now);
            *listed = Some(now);
            changed
        };
        if changed {
            let _ = context.peer.notify_tool_list_changed().await;
        }
    }

    /// The conversation: `mcp-` and the transport's session id, or a fresh id
    /// on a transport without one (stdio: one process, one conversation).
    fn conversation(&self, context: &RequestContext<RoleServer>) -> &str {
        self.id.get_or_init(|| {
            let header = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get(SESSION_HEADER))
                .and_then(|value| value.to_str().ok())
                .filter(|id| !id.is_empty());
            match (&self.shared.session, header) {
                (Some(fixed), _) => fixed.clone(),
                (None, Some(id)) => format!("mcp-{id}"),
                (None, None) => format!("mcp-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            }
        })
    }

    /// Runs `call` through the gate, as the downstream client's call; stops when
    /// the client cancels the request or the server's grace period ends.
    async fn run(
        &self,
        gate: &Gate,
        session: &str,
        call: ToolCall,
        downstream: &Downstream,
        request: &CancellationToken,
    ) -> Outcome {
        let shared = &self.shared;
        let cancel = shared.inflight.cancellation().child_token();
        let gate_call = downstream.clone().scope(super::tasks::call_through(
            gate,
            session,
            call,
            &shared.principal,
            downstream,
            &cancel,
        ));
        tokio::pin!(gate_call);
        tokio::select! {
            biased;
            outcome = &mut gate_call => outcome,
            _ = request.cancelled() => {
                cancel.cancel();
                gate_call.await
            }
        }
    }

    /// Asks the client's user to approve a pending call and records the answer.
    /// `None` when they answered (the call is decided: run it again); otherwise
    /// why nobody answered.
    async fn ask(
        &self,
        gate: &Gate,
        context: &RequestContext<RoleServer>,
        downstream: &Downstream,
        approval_id: &str,
        reason: &str,
    ) -> Option<String> {
        if !downstream.supports_elicitation() {
            return Some("the MCP client cannot ask its user".to_owned());
        }
        let shared = &self.shared;
        let answer = approval::ask(
            &context.peer,
            gate,
            approval_id,
            reason,
            shared.options.approval_timeout,
            shared.inflight.cancellation(),
        )
        .await;
        approval::record(gate, approval_id, &answer);
        match answer {
            Answer::None(why) => Some(why),
            Answer::Approve | Answer::Deny => None,
        }
    }

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let shared = self.shared.clone();
        let offering = shared.offering();
        let gate = &offering.gate;
        let name = offering.tools.canonical(&request.name).to_owned();
        let Some(_guard) = shared.inflight.enter() else {
            return Ok(error_result(
                "the server is shutting down and takes no new calls; call again once it is back",
            ));
        };
        let session = self.conversation(&context).to_owned();
        let call = ToolCall::new(
            format!("mcp-{}", context.id),
            name.clone(),
            arguments(request.arguments),
        );
        let downstream = Downstream::new(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.log_level.clone(),
        );
        // A tool outside the principal's view is as unknown as a name no tool has.
        let known = gate.knows(&name, &shared.principal);
        let mut outcome = self
            .run(gate, &session, call.clone(), &downstream, &context.ct)
            .await;
        if !known {
            return Err(McpError::invalid_params(outcome.message_for_model(), None));
        }
        if let Outcome::PendingApproval {
            approval_id,
            reason,
        } = &outcome
        {
            match self
                .ask(gate, &context, &downstream, approval_id, reason)
                .await
            {
                Some(why) => {
                    let message = approval::pending_message(approval_id, reason, Some(&why));
                    return Ok(error_result(message));
                }
                None => {
                    outcome = self
                        .run(gate, &session, call, &downstream, &context.ct)
                        .await;
                }
            }
        }
        self.reveal_found(&name, &outcome);
        self.tell_if_tools_changed(&offering, &context).await;
        let tool = gate.catalog().get(&name).ok().map(|t| t.as_ref());
        Ok(call_result(&outcome, tool))
    }
}

impl Session {
    /// The upstream servers whose prompts (`prompts`) or resources are passed on.
    fn forwarded(&self, prompts: bool) -> Option<&Forwarded> {
        let offers = self.shared.offers;
        self.shared.forwarded.as_ref().filter(|_| {
            if prompts {
                offers.prompts
            } else {
                offers.resources
            }
        })
    }
}

/// A session whose flow cannot be read is offered every tool (the gate still
/// refuses what the flow blocks); the operator hears why.
fn warn_flow_unreadable(session: &str, error: &crate::StoreError) {
    tracing::warn!(
        session,
        "cannot read the conversation's flow ({error}); offering every tool"
    );
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        super::tasks::advertise(&mut capabilities);
        if self.shared.offers.prompts {
            capabilities.prompts = Some(Default::default());
        }
        if self.shared.offers.resources {
            capabilities.resources = Some(Default::default());
        }
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("toolgate", env!("CARGO_PKG_VERSION")).with_title("toolgate"),
            )
            .with_protocol_version(NEWEST_PROTOCOL);
        if let Some(instructions) = &self.shared.offering().instructions {
            config = config.with_instructions(instructions.clone());
        }
        config
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let offering = self.shared.offering();
        let descriptors = self.offered(&offering, &context);
        let names = shown_names(
            &offering.gate,
            &self.shared.principal,
            &offering.withheld,
            &descriptors,
        );
        *self.listed.lock().unwrap_or_else(PoisonError::into_inner) = Some(names);
        let offered = ToolList::of(
            &offering.gate,
            &self.shared.principal,
            &offering.withheld,
            descriptors,
        );
        Ok(ListToolsResult::with_all_items(
            offered.tools.as_ref().clone(),
        ))
    }

    /// Tells the client whenever the server's catalog is replaced, for as long as
    /// the session lasts.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut generation = self.shared.generation.subscribe();
        let peer = context.peer;
        tokio::spawn(async move {
            while generation.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let session = self.conversation(&context).to_owned();
        let task = super::tasks::start(&self.shared, &session, &request, &context, &self.log_level);
        if let Some(task) = task.await {
            return Ok(task);
        }
        self.call(request, context)
            .await
            .map(CallToolResponse::from)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let forwarded = self
            .forwarded(true)
            .ok_or_else(McpError::method_not_found::<ListPromptsRequestMethod>)?;
        Ok(ListPromptsResult::with_all_items(
            forwarded.list_prompts(&self.shared.principal).await,
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let forwarded = self
            .forwarded(true)
            .ok_or_else(McpError::method_not_found::<GetPromptRequestMethod>)?;
        forwarded
            .get_prompt(&self.shared.principal, request)
            .await
            .map(GetPromptResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let forwarded = self
            .forwarded(false)
            .ok_or_else(McpError::method_not_found::<ListResourcesRequestMethod>)?;
        Ok(ListResourcesResult::with_all_items(
            forwarded.list_resources(&self.shared.principal).await,
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let forwarded = self
            .forwarded(false)
            .ok_or_else(McpError::method_not_found::<ListResourceTemplatesRequestMethod>)?;
        Ok(ListResourceTemplatesResult::with_all_items(
            forwarded
                .list_resource_templates(&self.shared.principal)
                .await,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let forwarded = self
            .forwarded(false)
            .ok_or_else(McpError::method_not_found::<ReadResourceRequestMethod>)?;
        forwarded
            .read_resource(&self.shared.principal, request)
            .await
            .map(ReadResourceResponse::from)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        super::tasks::get(&self.shared, &request)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        super::tasks::update(&self.shared, &request)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        super::tasks::cancel(&self.shared, &request)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level.set(request.level);
        Ok(())
    }
}
