//! An MCP server (stdio) with the tools of the official conformance suite that talk
//! back to their client while they run: `test_tool_with_logging` (three log
//! messages), `test_tool_with_progress` (progress 0, 50, 100 of 100) and
//! `test_sampling` (asks the client's model). `tests/mcp/conformance.yaml` binds
//! its declarations of these tools here, so the suite checks that toolgate passes
//! an upstream server's notifications and requests on to its own client.
//!
//! `cargo build -p toolgate --example mcp_conformance_upstream`

#![allow(deprecated)] // Logging and sampling: deprecated in 2026-07-28, current before.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    CreateMessageRequestParams, Implementation, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

const STEP: Duration = Duration::from_millis(50);

struct Upstream;

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    serde_json::from_value(json!({
        "name": name, "description": description, "inputSchema": schema,
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    }))
    .expect("a valid tool")
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("mcp-conformance-upstream", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let none = json!({"type": "object", "properties": {}});
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "test_tool_with_logging",
                "Logs three messages while it runs.",
                none.clone(),
            ),
            tool(
                "test_tool_with_progress",
                "Reports progress while it runs.",
                none,
            ),
            tool(
                "test_sampling",
                "Asks the client's model to answer a prompt.",
                json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = &context.peer;
        let result = match request.name.as_ref() {
            "test_tool_with_logging" => {
                for (i, message) in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ]
                .into_iter()
                .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    let log =
                        LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message));
                    let _ = peer.notify_logging_message(log).await;
                }
                CallToolResult::success(vec![ContentBlock::text(
                    "Tool with logging executed successfully",
                )])
            }
            "test_tool_with_progress" => {
                for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(STEP).await;
                    }
                    if let Some(token) = context.meta.get_progress_token() {
                        let note =
                            ProgressNotificationParam::new(token, progress).with_total(100.0);
                        let _ = peer.notify_progress(note).await;
                    }
                }
                CallToolResult::success(vec![ContentBlock::text(
                    "Tool with progress executed successfully",
                )])
            }
            "test_sampling" => {
                let prompt = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("prompt"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let params: CreateMessageRequestParams = serde_json::from_value(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100
                }))
                .expect("valid sampling parameters");
                match peer.create_message(params).await {
                    Ok(answer) => {
                        let text = serde_json::to_value(&answer.message.content)
                            .ok()
                            .and_then(|c| c.get("text").and_then(Value::as_str).map(str::to_owned))
                            .unwrap_or_default();
                        CallToolResult::success(vec![ContentBlock::text(format!(
                            "LLM response: {text}"
                        ))])
                    }
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "sampling failed: {e}"
                    ))]),
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::from(result))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = Upstream.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
