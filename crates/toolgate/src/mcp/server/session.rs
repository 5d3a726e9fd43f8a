//! One MCP session: its own conversation in the gate (state, call history, flow
//! position), the tools its principal may use, and every call through the gate.

// MCP logging is deprecated by the 2026-07-28 revision, and current in the
// revisions this server speaks.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::approval::{self, Answer};
use super::downstream::{Downstream, LogLevel};
use super::result::{call_result, error_result};
use super::tools::arguments;
use crate::{Outcome, ToolCall};

/// The header that carries the session id on the streamable HTTP transport.
const SESSION_HEADER: &str = "mcp-session-id";

/// The newest protocol revision served: the last one with sessions, which are
/// what gives each client its own conversation.
const NEWEST_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// The handler of one MCP session.
#[derive(Clone)]
pub(crate) struct Session {
    shared: Arc<Shared>,
    /// The gate's conversation id, fixed by the first call.
    id: Arc<OnceLock<String>>,
    log_level: LogLevel,
}

impl Session {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Session {
            shared,
            id: Arc::default(),
            log_level: LogLevel::default(),
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
        session: &str,
        call: ToolCall,
        downstream: &Downstream,
        request: &CancellationToken,
    ) -> Outcome {
        let shared = &self.shared;
        let cancel = shared.inflight.cancellation().child_token();
        let gate_call = downstream.clone().scope(shared.gate.call_with(
            session,
            call,
            &shared.principal,
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

    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let shared = self.shared.clone();
        let name = shared.tools.canonical(&request.name).to_owned();
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
        let known = shared.gate.catalog().contains(&name);
        let mut outcome = self
            .run(&session, call.clone(), &downstream, &context.ct)
            .await;
        if !known {
            return Err(McpError::invalid_params(outcome.message_for_model(), None));
        }
        if let Outcome::PendingApproval {
            approval_id,
            reason,
        } = &outcome
        {
            let (approval_id, reason) = (approval_id.clone(), reason.clone());
            let why = if !downstream.supports_elicitation() {
                Some("the MCP client cannot ask its user".to_owned())
            } else {
                let cancel = shared.inflight.cancellation();
                let answer = approval::ask(
                    &context.peer,
                    &shared.gate,
                    &approval_id,
                    &reason,
                    shared.options.approval_timeout,
                    cancel,
                )
                .await;
                approval::record(&shared.gate, &approval_id, &answer);
                match answer {
                    Answer::None(why) => Some(why),
                    Answer::Approve | Answer::Deny => {
                        outcome = self.run(&session, call, &downstream, &context.ct).await;
                        None
                    }
                }
            };
            if let Some(why) = why {
                return Ok(error_result(approval::pending_message(
                    &approval_id,
                    &reason,
                    Some(&why),
                )));
            }
            if let Outcome::PendingApproval {
                approval_id,
                reason,
            } = &outcome
            {
                return Ok(error_result(approval::pending_message(
                    approval_id,
                    reason,
                    None,
                )));
            }
        }
        let tool = shared.gate.catalog().get(&name).ok().map(|t| t.as_ref());
        Ok(call_result(&outcome, tool))
    }
}

impl ServerHandler for Session {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")).with_title("toolgate"),
        )
        .with_protocol_version(NEWEST_PROTOCOL);
        if let Some(instructions) = &self.shared.instructions {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(
            self.shared.tools.tools.as_ref().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context)
            .await
            .map(CallToolResponse::from)
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
