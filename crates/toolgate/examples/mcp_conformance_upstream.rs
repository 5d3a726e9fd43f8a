//! An MCP server (stdio) with the tools of the official conformance suite that talk
//! back to their client while they run: `test_tool_with_logging` (three log
//! messages), `test_tool_with_progress` (progress 0, 50, 100 of 100),
//! `test_sampling` (asks the client's model), and `test_elicitation_sep1034_defaults`
//! and `test_elicitation_sep1330_enums` (ask the client's user to fill a form);
//! the diagnostic tools of the suite's stateless scenario, which check what
//! toolgate passes on to a client of the 2026-07-28 revision: `test_logging_tool`
//! (logs whatever the client's log level, so toolgate must hold the message back
//! from a client that set none), `test_streaming_elicitation` (reports progress,
//! then asks the user) and `test_missing_capability` (needs the client's model);
//! the suite's resources (`test://static-text`, `test://static-binary`, the
//! template `test://template/{id}/data`) and prompts (`test_simple_prompt`,
//! `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`,
//! `test_prompt_with_image`). `tests/mcp/conformance.yaml` binds its
//! declarations of these tools here and adds the server under a namespace, so the
//! suite checks that toolgate passes an upstream server's notifications, requests,
//! resources and prompts on to its own client.
//!
//! `cargo build -p toolgate --example mcp_conformance_upstream`

#![allow(deprecated)] // Logging and sampling: deprecated in 2026-07-28, current before.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    CreateMessageRequestParams, ElicitRequestParams, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

const STEP: Duration = Duration::from_millis(50);

/// A 1x1 PNG.
const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

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
                .enable_resources()
                .enable_prompts()
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
                "test_elicitation_sep1034_defaults",
                "Asks for a form whose fields have defaults.",
                none_schema(),
            ),
            tool(
                "test_elicitation_sep1330_enums",
                "Asks for a form with every kind of enum.",
                none_schema(),
            ),
            tool(
                "test_sampling",
                "Asks the client's model to answer a prompt.",
                json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
            ),
            tool(
                "test_logging_tool",
                "Logs a message whatever the client's log level.",
                none_schema(),
            ),
            tool(
                "test_streaming_elicitation",
                "Reports progress, then asks the user to confirm.",
                none_schema(),
            ),
            tool(
                "test_missing_capability",
                "Needs the client's model (sampling).",
                none_schema(),
            ),
        ]))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts = json!([
            {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
            {"name": "test_prompt_with_arguments", "description": "A prompt with required arguments",
             "arguments": [{"name": "arg1", "description": "First test argument", "required": true},
                           {"name": "arg2", "description": "Second test argument", "required": true}]},
            {"name": "test_prompt_with_embedded_resource",
             "description": "A prompt that includes an embedded resource",
             "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed",
                            "required": true}]},
            {"name": "test_prompt_with_image", "description": "A prompt that includes image content"}
        ]);
        Ok(ListPromptsResult::with_all_items(
            serde_json::from_value(prompts).expect("valid prompts"),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let argument = |name: &str| {
            request
                .arguments
                .as_ref()
                .and_then(|a| a.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let text =
            |text: String| json!({"role": "user", "content": {"type": "text", "text": text}});
        let messages = match request.name.as_str() {
            "test_simple_prompt" => json!([text("This is a simple prompt for testing.".into())]),
            "test_prompt_with_arguments" => json!([text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                argument("arg1"),
                argument("arg2")
            ))]),
            "test_prompt_with_embedded_resource" => json!([
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": argument("resourceUri"), "mimeType": "text/plain",
                    "text": "Embedded resource content for testing."}}},
                text("Please process the embedded resource above.".into())
            ]),
            "test_prompt_with_image" => json!([
                {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                text("Please analyze the image above.".into())
            ]),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown prompt: {other}"),
                    None,
                ));
            }
        };
        let result: GetPromptResult =
            serde_json::from_value(json!({"messages": messages})).expect("valid messages");
        Ok(GetPromptResponse::from(result))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = json!([
            {"uri": "test://static-text", "name": "static-text", "description": "A static text resource.",
             "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "description": "A 1x1 PNG image.",
             "mimeType": "image/png"}
        ]);
        Ok(ListResourcesResult::with_all_items(
            serde_json::from_value(resources).expect("valid resources"),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = json!([{"uriTemplate": "test://template/{id}/data", "name": "template-data",
            "description": "Data for an id.", "mimeType": "application/json"}]);
        Ok(ListResourceTemplatesResult::with_all_items(
            serde_json::from_value(templates).expect("valid templates"),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
                "text": "This is the content of the static text resource."}),
            "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => json!({"uri": uri, "mimeType": "application/json",
                    "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()}),
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        None,
                    ));
                }
            },
        };
        let result: ReadResourceResult =
            serde_json::from_value(json!({"contents": [contents]})).expect("valid contents");
        Ok(ReadResourceResponse::from(result))
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
            "test_logging_tool" => {
                let log = LoggingMessageNotificationParam::new(
                    LoggingLevel::Info,
                    json!("Diagnostic trace logging activated"),
                );
                let _ = peer.notify_logging_message(log).await;
                CallToolResult::success(vec![ContentBlock::text("Logging evaluated")])
            }
            "test_streaming_elicitation" => {
                if let Some(token) = context.meta.get_progress_token() {
                    let note = ProgressNotificationParam::new(token, 50.0).with_total(100.0);
                    let _ = peer.notify_progress(note).await;
                }
                elicit(
                    peer,
                    json!({"message": "Continue?", "requestedSchema": {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}}}),
                )
                .await
            }
            "test_missing_capability" => {
                let params: CreateMessageRequestParams = serde_json::from_value(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Say yes."}}],
                    "maxTokens": 10
                }))
                .expect("valid sampling parameters");
                match peer.create_message(params).await {
                    Ok(_) => CallToolResult::success(vec![ContentBlock::text("Success")]),
                    // The client's refusal is the answer to the call.
                    Err(rmcp::ServiceError::McpError(e)) => return Err(e),
                    Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "sampling failed: {e}"
                    ))]),
                }
            }
            "test_elicitation_sep1034_defaults" => elicit(peer, sep1034_form()).await,
            "test_elicitation_sep1330_enums" => elicit(peer, sep1330_form()).await,
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

fn none_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

/// SEP-1034: a default for every primitive type.
fn sep1034_form() -> Value {
    json!({
        "message": "Test client default value handling - please accept with defaults",
        "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        }}
    })
}

/// SEP-1330: every kind of enum.
fn sep1330_form() -> Value {
    json!({
        "message": "Test enum schema variants - please choose",
        "requestedSchema": {"type": "object", "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}}
        }}
    })
}

/// Asks the client's user to fill `form` (`message` and `requestedSchema`).
async fn elicit(peer: &rmcp::Peer<RoleServer>, mut form: Value) -> CallToolResult {
    form["mode"] = json!("form");
    let params: ElicitRequestParams = match serde_json::from_value(form) {
        Ok(params) => params,
        Err(e) => return CallToolResult::error(vec![ContentBlock::text(format!("bad form: {e}"))]),
    };
    match peer.create_elicitation(params).await {
        Ok(answer) => CallToolResult::success(vec![ContentBlock::text(format!(
            "Elicitation completed: action={}, content={}",
            serde_json::to_value(&answer.action).unwrap_or_default(),
            answer.content.unwrap_or_default()
        ))]),
        Err(e) => {
            CallToolResult::error(vec![ContentBlock::text(format!("elicitation failed: {e}"))])
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = Upstream.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
