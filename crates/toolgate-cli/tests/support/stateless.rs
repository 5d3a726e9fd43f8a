//! A client of MCP's stateless lifecycle (the 2026-07-28 revision): every request
//! a self-contained POST carrying its protocol version, capabilities and
//! conversation in `_meta`, to whichever instance it is given.

use serde_json::{Value, json};

const PROTOCOL: &str = "2026-07-28";

/// One stateless MCP client: every request a self-contained POST, to whichever
/// instance it is given.
pub struct Client {
    pub http: reqwest::Client,
    conversation: String,
}

impl Client {
    pub fn new(conversation: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            conversation: conversation.to_owned(),
        }
    }

    /// Calls `tool`; the call's result, or the JSON-RPC error as `Err`.
    pub async fn call(
        &self,
        url: &str,
        id: u64,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "postgres_instances", "version": "1"},
                "toolgate/conversation": self.conversation,
            },
        }});
        let response = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let text = response.text().await.map_err(|e| e.to_string())?;
        let message: Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str(d.trim()).ok())
                .ok_or_else(|| format!("no answer in {text:?}"))?
        };
        match (message.get("result"), message.get("error")) {
            (Some(result), _) => Ok(result.clone()),
            (_, Some(error)) => Err(error.to_string()),
            _ => Err(format!("neither result nor error: {message}")),
        }
    }
}
