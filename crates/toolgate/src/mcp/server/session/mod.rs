//! One MCP session: its own conversation in the gate (state, call history, flow
//! position), the tools its principal may use, and every call through the gate.
//!
//! This file is the handler rmcp calls, one method per MCP request; who a request
//! runs as is `caller.rs`, and serving a `tools/call` is `call.rs`.

// MCP logging is deprecated by the 2026-07-28 revision, and current in the
// revisions this server speaks.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
    GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesRequestMethod, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, ServerNotification, SetLevelRequestParams,
    SubscriptionFilter, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::SessionRestoreMarker;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio::sync::broadcast;
use toolgate_core::search::{SEARCH_TOOLS, found_tool_names};
use toolgate_core::{Principal, ToolDescriptor};
use tracing::Instrument;

mod call;
pub(super) mod caller;

use self::call::request_span;
use self::caller::Caller;
use super::Shared;
use super::forward::Forwarded;
use super::restore::Opener;
use super::tools::{ToolList, shown_names};
use super::{skills, stateless};
use crate::Outcome;
use crate::mcp::LogLevel;

/// The header that carries the session id on the streamable HTTP transport.
const SESSION_HEADER: &str = "mcp-session-id";

/// The newest protocol revision served. Clients of the revisions with sessions
/// (2025-06-18, 2025-11-25) initialize; clients of 2026-07-28 send their version
/// and capabilities in every request's `_meta`.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// How long a client may keep a tool list that no flow or search can change.
const STABLE_LIST_TTL_MS: u64 = 60_000;

/// The handler of one MCP session, or on the stateless revision of one request.
#[derive(Clone)]
pub(crate) struct Session {
    shared: Arc<Shared>,
    /// The gate's conversation id of a session, fixed by its first request.
    id: Arc<OnceLock<String>>,
    /// The credential that opened the session (its principal and credential
    /// name; `None` without one): no other may use it.
    opened_by: Arc<OnceLock<Option<Opener>>>,
    log_level: LogLevel,
}

impl Session {
    /// A handler for a new session (or, on the stateless revision, a request) of
    /// the server `shared` describes.
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Session {
            id: Arc::default(),
            opened_by: Arc::default(),
            log_level: LogLevel::default(),
            shared,
        }
    }

    /// Who the request runs as (see [`caller::resolve`]); a request with another
    /// credential than the one that opened the session is refused.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, McpError> {
        caller::resolve(&self.shared, &self.opened_by, context)
    }

    /// The tools this conversation's client is offered now, before the policy's
    /// filter: those in its principal's view, with a flow as the flow offers them
    /// in this conversation (a marked tool's reason naming no tool outside the
    /// view); with search, those listed in this conversation.
    fn offered(&self, caller: &Caller, session: &str) -> Vec<ToolDescriptor> {
        let gate = &caller.offering.gate;
        let principal = &caller.principal;
        let mut descriptors = gate
            .visible_tools_for(session, principal)
            .unwrap_or_else(|e| {
                warn_flow_unreadable(session, &e);
                gate.catalog()
                    .iter()
                    .map(|tool| tool.descriptor().clone())
                    .collect()
            });
        let conversations = &self.shared.conversations;
        descriptors.retain(|d| conversations.is_listed(session, &d.name));
        descriptors
    }

    /// The names of the tools `tools/list` would show this conversation's client
    /// now, found without copying or rendering a descriptor.
    fn shown_now(&self, caller: &Caller, session: &str) -> Vec<String> {
        let gate = &caller.offering.gate;
        let names = gate.visible_tool_names(session).unwrap_or_else(|e| {
            warn_flow_unreadable(session, &e);
            gate.catalog().iter().map(|tool| tool.name()).collect()
        });
        let conversations = &self.shared.conversations;
        let offered = names
            .into_iter()
            .filter(|name| conversations.is_listed(session, name))
            .filter_map(|name| gate.catalog().get(name).ok())
            .map(|tool| tool.descriptor());
        shown_names(gate, &caller.principal, &caller.offering.withheld, offered)
    }

    /// Lists in this conversation the tools a `search_tools` call found.
    fn reveal_found(&self, session: &str, tool: &str, outcome: &Outcome) {
        if !self.shared.conversations.searching() || tool != SEARCH_TOOLS {
            return;
        }
        if let Outcome::Ok { value, .. } = outcome {
            self.shared
                .conversations
                .reveal(session, &found_tool_names(value));
        }
    }

    /// Tells the client when a call changed the tools it is offered (a flow
    /// opened or closed some), once it has listed them: on the call's stream, and
    /// to the conversation's subscriptions.
    async fn tell_if_tools_changed(
        &self,
        caller: &Caller,
        session: &str,
        context: &RequestContext<RoleServer>,
    ) {
        let conversations = &self.shared.conversations;
        if !conversations.has_listed(session) {
            return;
        }
        let now = self.shown_now(caller, session);
        if conversations.offered_now(session, now) {
            // On the stateless revision this goes on the call's own response
            // stream (the call is what changed the list), as well as to the
            // conversation's subscriptions.
            let _ = context.peer.notify_tool_list_changed().await;
        }
    }

    /// The conversation of a request: the server's fixed one if it has one; on
    /// the stateless revision the one the request names (see [`stateless`]);
    /// otherwise `mcp-` and the transport's session id, or a fresh id on a
    /// transport without one (stdio: one process, one conversation).
    /// A stateless conversation belongs to its principal: another principal
    /// naming the same id is in a conversation of its own (`mcp-PRINCIPAL-ID`).
    fn conversation(
        &self,
        context: &RequestContext<RoleServer>,
        principal: &Principal,
    ) -> Result<String, McpError> {
        if let Some(fixed) = &self.shared.session {
            return Ok(fixed.clone());
        }
        if stateless::is_stateless(context) {
            let named = stateless::named_conversation(context)?;
            let id = named.as_deref().unwrap_or(stateless::DEFAULT_CONVERSATION);
            return Ok(if principal.id == self.shared.principals().served.id {
                format!("mcp-{id}")
            } else {
                format!("mcp-{}-{id}", principal.id)
            });
        }
        let id = self.id.get_or_init(|| {
            let header = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get(SESSION_HEADER))
                .and_then(|value| value.to_str().ok())
                .filter(|id| !id.is_empty());
            match header {
                Some(id) => format!("mcp-{id}"),
                None => format!("mcp-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
            }
        });
        Ok(id.clone())
    }

    /// Serves a subscription until it ends (see [`ServerHandler::listen`]),
    /// boxed by its caller: its state is larger than every other request's.
    async fn listen_for_changes(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        let context = subscription.request_context();
        let caller = self.caller(context)?;
        let session = self.conversation(context, &caller.principal)?;
        let mut generation = self.shared.generation.subscribe();
        let mut changed = self.shared.conversations.subscribe();
        loop {
            let tell = tokio::select! {
                _ = subscription.cancelled() => return Ok(()),
                replaced = generation.changed() => {
                    if replaced.is_err() {
                        return Ok(());
                    }
                    true
                }
                heard = changed.recv() => match heard {
                    Ok(id) => id == session,
                    Err(broadcast::error::RecvError::Lagged(_)) => true,
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            };
            if tell {
                let notification =
                    ServerNotification::ToolListChangedNotification(Default::default());
                if subscription.sink().send(notification).await.is_err() {
                    return Ok(());
                }
            }
        }
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
fn warn_flow_unreadable(session: &str, error: &crate::store::StoreError) {
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
        if self.shared.options.async_approvals {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    super::approval_task::TOOL_APPROVAL_EXTENSION.to_owned(),
                    Default::default(),
                );
        }
        if self.shared.offers.prompts {
            capabilities.prompts = Some(Default::default());
        }
        if self.shared.offers.resources {
            capabilities.resources = Some(Default::default());
        }
        skills::advertise(&mut capabilities, &self.shared.offering().gate);
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

    /// Binds the session to the credential that opens it, and gives its
    /// principal's planner digest as the instructions.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let mut request = request;
        if context.extensions.get::<SessionRestoreMarker>().is_some() {
            // Another server opened this session: it stays bound to its opener.
            let _ = self
                .opened_by
                .set(super::restore::take_opener(&mut request));
            context.peer.set_peer_info(request.clone());
            return self.negotiate_initialize(&request);
        }
        let caller = self.caller(&context)?;
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.instructions = caller.offering.instructions.clone();
        Ok(result)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let caller = self.caller(&context)?;
        let session = self.conversation(&context, &caller.principal)?;
        let descriptors = self.offered(&caller, &session);
        let offering = &caller.offering;
        let names = shown_names(
            &offering.gate,
            &caller.principal,
            &offering.withheld,
            &descriptors,
        );
        self.shared.conversations.listed(&session, names);
        let offered = ToolList::of(
            &offering.gate,
            &caller.principal,
            &offering.withheld,
            descriptors,
        );
        // The list is the principal's, so only its client may cache it; where a
        // flow or search changes it from call to call, not even that.
        let per_conversation =
            self.shared.conversations.searching() || offering.gate.flow.flow().is_some();
        let ttl_ms = if per_conversation {
            0
        } else {
            STABLE_LIST_TTL_MS
        };
        #[allow(unused_mut)]
        let mut tools = offered.tools.as_ref().clone();
        #[cfg(feature = "code-mode")]
        if let Some(code) = &self.shared.code {
            let canonical = |wire: &str| offered.canonical(wire).to_owned();
            tools = code.tools(
                &offering.gate,
                &session,
                &caller.principal,
                &tools,
                canonical,
            );
        }
        let mut result = ListToolsResult::with_all_items(tools).with_ttl_ms(ttl_ms);
        result.cache_scope = Some(CacheScope::Private);
        Ok(result)
    }

    /// The streamable HTTP transport checks a call's `Mcp-Param-*` headers against
    /// the `x-mcp-header` annotations of the tool's schema.
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.shared.offering().tools.with_header_params(name)
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    /// A stateless client's subscription hears when the server's catalog is
    /// replaced, and when a call in its conversation changed what it is offered.
    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        Box::pin(self.listen_for_changes(subscription)).await
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
        let caller = self.caller(&context)?;
        let session = self.conversation(&context, &caller.principal)?;
        let span = request_span(&request, &context, &caller, &session);
        // Boxed: rmcp moves the handler's future several times before it runs.
        let served = Box::pin(async {
            let task = super::tasks::start(
                &self.shared,
                &caller,
                &session,
                &request,
                &context,
                &self.log_level,
            );
            if let Some(task) = task.await {
                return Ok(task);
            }
            self.call(request, context, &span).await
        });
        let served = served.instrument(span.clone());
        match caller.authenticated.clone() {
            Some(authenticated) => authenticated.scope(served).await,
            None => served.await,
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let forwarded = self
            .forwarded(true)
            .ok_or_else(McpError::method_not_found::<ListPromptsRequestMethod>)?;
        let principal = self.caller(&context)?.principal;
        Ok(ListPromptsResult::with_all_items(
            Box::pin(forwarded.list_prompts(&principal)).await,
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let forwarded = self
            .forwarded(true)
            .ok_or_else(McpError::method_not_found::<GetPromptRequestMethod>)?;
        let principal = self.caller(&context)?.principal;
        Box::pin(forwarded.get_prompt(&principal, request))
            .await
            .map(GetPromptResponse::from)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let caller = self.caller(&context)?;
        Ok(skills::list(&caller, stateless::is_stateless(&context)))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let caller = self.caller(&context)?;
        let session = self.conversation(&context, &caller.principal)?;
        let stateless = stateless::is_stateless(&context);
        Box::pin(skills::get(&caller, &session, &request.uri, stateless)).await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        skills::read_directory(&self.caller(&context)?, &request.uri)
    }

    /// The `SKILL.md` of each skill the principal is offered, and the resources
    /// of upstream servers.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let caller = self.caller(&context)?;
        let mut resources = skills::listed(&caller);
        match self.forwarded(false) {
            Some(forwarded) => {
                let listed = Box::pin(forwarded.list_resources(&caller.principal)).await;
                let gate = &caller.offering.gate;
                resources.extend(
                    listed
                        .into_iter()
                        .filter(|r| skills::passed_on(gate, &r.uri)),
                );
            }
            None if !skills::serves(&caller.offering.gate) => {
                return Err(McpError::method_not_found::<ListResourcesRequestMethod>());
            }
            None => {}
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let principal = self.caller(&context)?.principal;
        let Some(forwarded) = self.forwarded(false) else {
            return skills::no_templates(&self.shared.offering().gate);
        };
        Ok(ListResourceTemplatesResult::with_all_items(
            Box::pin(forwarded.list_resource_templates(&principal)).await,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let caller = self.caller(&context)?;
        if let Some(file) = skills::file_at(&caller, &request.uri) {
            let session = self.conversation(&context, &caller.principal)?;
            let read = skills::read_file(&caller, &session, file, &request.uri);
            return Box::pin(read).await.map(ReadResourceResponse::from);
        }
        if !skills::passed_on(&caller.offering.gate, &request.uri) {
            return Err(skills::read_around_the_gate(&request.uri));
        }
        let forwarded = self
            .forwarded(false)
            .ok_or_else(|| skills::not_found(&caller.offering.gate, &request.uri))?;
        Box::pin(forwarded.read_resource(&caller.principal, request))
            .await
            .map(ReadResourceResponse::from)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let caller = self.caller(&context)?;
        let options = &self.shared.options;
        if options.async_approvals {
            let (gate, principal) = (&caller.offering.gate, &caller.principal);
            let id = &request.task_id;
            let envelope = options.authorization_denials;
            let found = Box::pin(super::approval_task::get(gate, principal, id, envelope));
            if let Some(found) = found.await {
                return found;
            }
        }
        super::tasks::get(&caller, &request)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        super::tasks::update(&self.caller(&context)?, &request)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = self.caller(&context)?;
        if self.shared.options.async_approvals {
            let (gate, principal) = (&caller.offering.gate, &caller.principal);
            if let Some(done) = super::approval_task::cancel(gate, principal, &request.task_id) {
                return done;
            }
        }
        super::tasks::cancel(&caller, &request)
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
