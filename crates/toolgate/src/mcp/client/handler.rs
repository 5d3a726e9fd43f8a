//! What toolgate answers an upstream server: it asks for nothing (no sampling, no
//! roots, no elicitation), and passes on what the server announces, with values
//! read from the environment scrubbed out.

use std::sync::Arc;

#[allow(deprecated)]
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, LoggingMessageNotificationParam,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RoleClient};
use serde_json::Value;
use tokio::sync::{Notify, broadcast};

use super::UpstreamEvent;
use super::config::Scrubber;

/// The client side of one connection.
pub struct Handler {
    server: String,
    /// Woken by `notifications/tools/list_changed`.
    refresh: Arc<Notify>,
    events: broadcast::Sender<UpstreamEvent>,
    scrubber: Scrubber,
}

impl Handler {
    pub fn new(
        server: String,
        refresh: Arc<Notify>,
        events: broadcast::Sender<UpstreamEvent>,
        scrubber: Scrubber,
    ) -> Self {
        Handler {
            server,
            refresh,
            events,
            scrubber,
        }
    }

    /// Every string in `value`, scrubbed.
    fn scrub(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.scrubber.scrub(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.scrub(v)),
            _ => {}
        }
    }
}

#[allow(deprecated)]
impl rmcp::ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "the server's tool list changed");
        self.refresh.notify_one();
    }

    async fn on_progress(
        &self,
        mut params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        params.message = params.message.map(|m| self.scrubber.scrub(&m));
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
        let _ = self.events.send(UpstreamEvent::Log {
            server: self.server.clone(),
            params,
        });
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
    }
}
