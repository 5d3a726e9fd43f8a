//! A declared tool's `mcp:` binding: the declaration stays what the model sees, and
//! calls run on the named server's tool.
//!
//! The server is started on the first call and kept, supervised like an upstream
//! server (restarts, circuit breaker, timeouts), until the runner is dropped. Its
//! tools are not pinned: the model sees the declaration, not the server's words.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tokio::sync::broadcast;
use toolgate_core::spec::{NetworkPolicy, ToolSpec};
use toolgate_core::{ToolCtx, ToolError};

use super::breaker::RestartPolicy;
use super::config::{ConfigError, ServerConfig, bound_tool_name, process_env};
use super::server::Server;
use super::{ServerState, UpstreamEvent};

/// Runs one declared tool on the MCP server its `mcp:` binding names.
pub struct McpBindingRunner {
    tool: String,
    remote: String,
    config: Result<ServerConfig, ConfigError>,
    server: tokio::sync::Mutex<Option<Arc<Server>>>,
    events: broadcast::Sender<UpstreamEvent>,
    restart: Mutex<RestartPolicy>,
}

impl McpBindingRunner {
    /// The runner of a declared tool, or `None` when it has no `mcp:` binding.
    /// `file` is the spec file: relative paths start in its directory.
    pub fn new(spec: &ToolSpec, file: &str) -> Option<McpBindingRunner> {
        let binding = spec.mcp.as_ref()?;
        let base_dir = Path::new(file)
            .parent()
            .filter(|d| !d.as_os_str().is_empty());
        let config = ServerConfig::from_binding(&spec.name, binding, base_dir, &process_env());
        Some(McpBindingRunner {
            tool: spec.name.clone(),
            remote: bound_tool_name(&spec.name, binding).to_owned(),
            config,
            server: tokio::sync::Mutex::new(None),
            events: broadcast::channel(16).0,
            restart: Mutex::new(RestartPolicy::default()),
        })
    }

    /// Puts the server under `network` (the spec file's `network:` section) instead
    /// of the default policy (public addresses only), from the next start on.
    pub fn set_network(&mut self, network: Arc<NetworkPolicy>) {
        if let Ok(config) = &mut self.config {
            config.network = network;
        }
    }

    /// Replaces the restart policy for servers started from now on.
    pub fn set_restart_policy(&self, policy: RestartPolicy) {
        *self.restart.lock().unwrap_or_else(PoisonError::into_inner) = policy;
    }

    /// Calls the bound tool.
    pub async fn call(&self, ctx: &ToolCtx, input: Value) -> Result<Value, ToolError> {
        let server = self.server().await?;
        let listed = server.listed();
        if server.state() == ServerState::Ready
            && !listed.is_empty()
            && !listed.iter().any(|l| l.tool.name == self.remote)
        {
            let offered: Vec<String> = listed
                .iter()
                .map(|l| format!("`{}`", l.tool.name))
                .collect();
            return Err(ToolError::permanent(format!(
                "the MCP server behind `{}` offers no tool `{}` (it offers {}); name the right one with `tool:` under `mcp:`",
                self.tool,
                self.remote,
                offered.join(", ")
            )));
        }
        server.call(&self.remote, input, ctx).await
    }

    /// The running server, started on first use (again, if the runtime it ran on
    /// has gone away since).
    async fn server(&self) -> Result<Arc<Server>, ToolError> {
        let config = self
            .config
            .as_ref()
            .map_err(|e| ToolError::permanent(e.to_string()))?;
        config
            .check_network()
            .map_err(|e| ToolError::permanent(e.to_string()))?;
        let mut slot = self.server.lock().await;
        if let Some(server) = slot.as_ref()
            && server.is_supervised()
        {
            return Ok(server.clone());
        }
        let policy = *self.restart.lock().unwrap_or_else(PoisonError::into_inner);
        let server = Server::new(
            config.clone(),
            format!("the MCP server behind `{}`", self.tool),
            None,
            None,
            policy,
            self.events.clone(),
        );
        server.start().await;
        *slot = Some(server.clone());
        Ok(server)
    }
}

impl Drop for McpBindingRunner {
    fn drop(&mut self) {
        if let Some(server) = self.server.get_mut().take() {
            server.stop_now();
        }
    }
}
