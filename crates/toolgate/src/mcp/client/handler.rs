//! What toolgate answers an upstream server, and what it passes on.
//!
//! toolgate offers sampling and elicitation, but has neither a model nor a user of
//! its own: it passes such a request on to the MCP client whose call is running on
//! the server (`toolgate serve`, see [`Relay`]) when that client can answer it, and
//! otherwise refuses sampling and cancels elicitation (no answer). Progress and log
//! notifications go to that client too. Values read from the environment are
//! scrubbed from everything passed on or logged, and the text of progress and log
//! notifications is sanitized (escapes, controls, invisible characters, template
//! tokens) on the way.

// Sampling and logging are deprecated by the 2026-07-28 revision, and current in the
// revisions servers speak today.
#![allow(deprecated)]

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    LoggingMessageNotificationParam, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, ServiceError};
use serde_json::Value;
use tokio::sync::{Notify, broadcast};

use super::UpstreamEvent;
use super::config::Scrubber;
use super::relay::Relay;
use super::result::upstream_words;

/// The client side of one connection.
pub(super) struct Handler {
    server: String,
    /// Woken by `notifications/tools/list_changed` and
    /// `notifications/resources/list_changed` (skills are resources).
    refresh: Arc<Notify>,
    events: broadcast::Sender<UpstreamEvent>,
    scrubber: Scrubber,
    relay: Arc<Relay>,
}

impl Handler {
    pub(super) fn new(
        server: String,
        refresh: Arc<Notify>,
        events: broadcast::Sender<UpstreamEvent>,
        scrubber: Scrubber,
        relay: Arc<Relay>,
    ) -> Self {
        Handler {
            server,
            refresh,
            events,
            scrubber,
            relay,
        }
    }

    /// Every string in `value`, scrubbed and sanitized.
    fn scrub(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = upstream_words(s, &self.scrubber),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.scrub(v)),
            _ => {}
        }
    }
}

/// A failed request to the downstream client, as an error for the upstream server.
fn passed_on(error: ServiceError) -> McpError {
    match error {
        ServiceError::McpError(error) => error,
        other => {
            McpError::internal_error(format!("toolgate's client did not answer: {other}"), None)
        }
    }
}

impl rmcp::ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "the server's tool list changed");
        self.refresh.notify_one();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "the server's resource list changed");
        self.refresh.notify_one();
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        params.message = params.message.map(|m| upstream_words(&m, &self.scrubber));
        if let Some(downstream) = self.relay.for_progress(&params.progress_token) {
            downstream.forward_progress(&params).await;
        }
        self.relay.passed_on();
        let _ = self.events.send(UpstreamEvent::Progress {
            server: self.server.clone(),
            params,
        });
    }

    async fn on_logging_message(
        &self,
        mut params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.scrub(&mut params.data);
        tracing::debug!(server = %self.server, level = ?params.level, "log: {}", params.data);
        if let Some(downstream) = self.relay.latest() {
            downstream.forward_log(&params).await;
        }
        self.relay.passed_on();
        let _ = self.events.send(UpstreamEvent::Log {
            server: self.server.clone(),
            params,
        });
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        match self.relay.latest() {
            Some(downstream) if downstream.supports_sampling() => downstream
                .peer()
                .create_message(params)
                .await
                .map_err(passed_on),
            _ => Err(McpError::invalid_request(
                "toolgate cannot sample a model here: no MCP client that offers sampling made this call",
                None,
            )),
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        match self.relay.latest() {
            Some(downstream) if downstream.supports_elicitation() => downstream
                .peer()
                .create_elicitation(request)
                .await
                .map_err(passed_on),
            // Nobody here can answer: neither yes nor no, so the asking server
            // leaves its question open rather than taking a refusal.
            _ => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_sampling()
                .enable_elicitation()
                .build(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
    }
}
