//! The catalog served over MCP, driven by the official SDK's client (rmcp) over a
//! pipe (the stdio transport's framing) and over streamable HTTP on loopback.

#![cfg(feature = "mcp")]
#![allow(deprecated)] // MCP logging: deprecated in 2026-07-28, current in 2025-11-25.

mod support;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolResult, ElicitationAction, LoggingLevel, LoggingMessageNotificationParam,
    NumberOrString, ProgressNotificationParam, ProgressToken, SetLevelRequestParams,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use support::mcp::{Client, call, over_http, over_pipe, text};
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::{Downstream, McpServer, ServeError, ServeOptions};
use toolgate::serve::FrontDoor;
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, MemoryGateStore, Principal, Tool, ToolCtx, ToolError, ToolHandler,
    store::ApprovalStatus, store::ApprovalStore, store::AuditLog, tool::Tier,
};

// ---- tools -------------------------------------------------------------------

/// Look up an order by its id.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

#[derive(Deserialize, JsonSchema)]
struct OrderQuery {
    /// The order's id, e.g. `A-1`.
    order_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Order {
    order_id: String,
    status: String,
}

impl ToolHandler for LookupOrder {
    type Input = OrderQuery;
    type Output = Order;
    async fn call(&self, _ctx: &ToolCtx, q: OrderQuery) -> Result<Order, ToolError> {
        Ok(Order {
            order_id: q.order_id,
            status: "shipped".into(),
        })
    }
}

/// Delete an account for good.
#[derive(Tool)]
#[tool(effect = "destructive")]
struct DeleteAccount;

#[derive(Deserialize, JsonSchema)]
struct AccountRef {
    account_id: String,
}

impl ToolHandler for DeleteAccount {
    type Input = AccountRef;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, a: AccountRef) -> Result<Value, ToolError> {
        Ok(json!({"deleted": a.account_id}))
    }
}

/// Export a report, reporting progress and logging as it goes.
#[derive(Tool)]
#[tool(effect = "read")]
struct ExportReport;

#[derive(Deserialize, JsonSchema)]
struct Empty {}

impl ToolHandler for ExportReport {
    type Input = Empty;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _: Empty) -> Result<String, ToolError> {
        let downstream = Downstream::current()
            .ok_or_else(|| ToolError::permanent("no MCP client to report to"))?;
        for step in 0..3 {
            downstream
                .progress(
                    f64::from(step * 50),
                    Some(100.0),
                    Some(format!("step {step}")),
                )
                .await;
            downstream
                .log(
                    LoggingLevel::Info,
                    Some("export"),
                    json!(format!("step {step}")),
                )
                .await;
        }
        downstream
            .log(LoggingLevel::Debug, Some("export"), json!("details"))
            .await;
        Ok("exported".into())
    }
}

/// Pass on what an upstream server reported, as a tool bound to one would.
#[derive(Tool)]
#[tool(effect = "read")]
struct Relay;

impl ToolHandler for Relay {
    type Input = Empty;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _: Empty) -> Result<String, ToolError> {
        let downstream = Downstream::current()
            .ok_or_else(|| ToolError::permanent("no MCP client to report to"))?;
        let upstream_token = ProgressToken(NumberOrString::String("upstream-7".into()));
        let progress = ProgressNotificationParam::new(upstream_token, 25.0).with_total(100.0);
        downstream.forward_progress(&progress).await;
        let log =
            LoggingMessageNotificationParam::new(LoggingLevel::Warning, json!("disk almost full"))
                .with_logger("upstream");
        downstream.forward_log(&log).await;
        Ok("relayed".into())
    }
}

/// Wait, then answer.
#[derive(Tool)]
#[tool(effect = "read")]
struct Slow;

#[derive(Deserialize, JsonSchema)]
struct Wait {
    millis: u64,
}

impl ToolHandler for Slow {
    type Input = Wait;
    type Output = String;
    async fn call(&self, ctx: &ToolCtx, w: Wait) -> Result<String, ToolError> {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(w.millis)) => Ok("done".into()),
            _ = ctx.cancellation().cancelled() => Err(ToolError::permanent("stopped")),
        }
    }
}

fn catalog() -> Catalog {
    Catalog::new()
        .with_native(LookupOrder)
        .unwrap()
        .with_native(DeleteAccount)
        .unwrap()
        .with_native(ExportReport)
        .unwrap()
        .with_native(Slow)
        .unwrap()
        .with_native(Relay)
        .unwrap()
}

fn gate(store: Arc<MemoryGateStore>) -> Arc<Gate> {
    Arc::new(Gate::builder(catalog()).store(store).build())
}

/// A gate whose policy asks before `delete_account` and lets the client's user
/// answer (`answered_by: client`), as a customer confirming their own request.
fn client_answers(store: Arc<MemoryGateStore>) -> Arc<Gate> {
    let policy: toolgate::Policy = serde_json::from_value(json!({
        "rules": [{"tools": "delete_account", "decision": "ask", "answered_by": "client"}]
    }))
    .unwrap();
    Arc::new(Gate::builder(catalog()).store(store).policy(policy).build())
}

// ---- clients -----------------------------------------------------------------

async fn http_client(
    url: &str,
    token: Option<&str>,
    client: Client,
) -> RunningService<RoleClient, Client> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    client
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

/// The names `tools/list` shows the client, in order.
async fn listed(client: &rmcp::Peer<RoleClient>) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

fn audit(store: &MemoryGateStore) -> Vec<Value> {
    store
        .tail(1000)
        .unwrap()
        .into_iter()
        .map(|r| serde_json::to_value(r.entry).unwrap())
        .collect()
}

// ---- listing -----------------------------------------------------------------

#[tokio::test]
async fn tools_list_shows_what_the_principal_may_use_with_annotations_from_effects() {
    let reader = Principal {
        id: "reader".into(),
        ceiling: Tier::Read,
        scopes: vec!["*".into()],
        claims: Default::default(),
    };
    let server = McpServer::builder(gate(Arc::default()))
        .principal(reader)
        .build();
    let session = over_pipe(server, Client::default()).await;
    let tools = session.client.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["export_report", "lookup_order", "relay", "slow"]);
    let lookup = tools.iter().find(|t| t.name == "lookup_order").unwrap();
    let lookup = serde_json::to_value(lookup).unwrap();
    assert_eq!(lookup["annotations"]["readOnlyHint"], true);
    assert_eq!(lookup["annotations"]["destructiveHint"], false);
    assert_eq!(lookup["inputSchema"]["required"], json!(["order_id"]));
    assert_eq!(lookup["description"], "Look up an order by its id.");
}

#[tokio::test]
async fn tools_list_names_no_tool_outside_the_principal_s_view_in_a_flow_s_reasons() {
    let spec: SpecFile = serde_json::from_value(json!({
        "tools": [],
        "flow": {"constraints": [{"before": {"first": "delete_account", "then": "lookup_order"}}]}
    }))
    .unwrap();
    let gate = Gate::builder(catalog())
        .spec(&spec)
        .flow_visibility(toolgate::flow::FlowVisibility::Mark)
        .build();
    let reader = Principal {
        id: "reader".into(),
        ceiling: Tier::Read,
        scopes: vec!["*".into()],
        claims: Default::default(),
    };
    let server = McpServer::builder(Arc::new(gate)).principal(reader).build();
    let session = over_pipe(server, Client::default()).await;
    let tools = session.client.list_all_tools().await.unwrap();
    let listed = serde_json::to_string(&tools).unwrap();
    assert!(!listed.contains("delete_account"), "{listed}");
    let lookup = tools.iter().find(|t| t.name == "lookup_order").unwrap();
    assert_eq!(
        lookup.description.as_deref(),
        Some(
            "[Not available yet: lookup_order is blocked until a step you cannot take has been done.] Look up an order by its id."
        )
    );
}

#[tokio::test]
async fn the_operator_sees_every_tool_and_a_destructive_one_is_annotated_so() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let session = over_pipe(server, Client::default()).await;
    let tools = session.client.list_all_tools().await.unwrap();
    let delete = tools.iter().find(|t| t.name == "delete_account").unwrap();
    let delete = serde_json::to_value(delete).unwrap();
    assert_eq!(delete["annotations"]["destructiveHint"], true);
    assert_eq!(delete["annotations"]["readOnlyHint"], false);
    assert_eq!(tools.len(), 5);
}

// ---- calling -----------------------------------------------------------------

#[tokio::test]
async fn a_call_runs_through_the_gate_and_returns_text_and_structured_content() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(gate(store.clone())).build();
    let session = over_pipe(server, Client::default()).await;
    let result = session
        .client
        .call_tool(call("lookup_order", json!({"order_id": "A-1"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(
        result.structured_content,
        Some(json!({"order_id": "A-1", "status": "shipped"}))
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text(&result)).unwrap(),
        json!({"order_id": "A-1", "status": "shipped"})
    );
    let records = audit(&store);
    let kinds: Vec<_> = records.iter().map(|r| r["kind"].clone()).collect();
    assert_eq!(kinds, [json!("intent"), json!("completion")]);
    let session_id = records[0]["session"].as_str().unwrap();
    assert!(session_id.starts_with("mcp-"), "{session_id}");
}

#[tokio::test]
async fn invalid_arguments_come_back_as_an_error_result_naming_the_field() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let session = over_pipe(server, Client::default()).await;
    let result = session
        .client
        .call_tool(call("lookup_order", json!({"order_id": 42})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let message = text(&result);
    assert!(message.contains("order_id"), "{message}");
    assert!(message.contains("nothing ran"), "{message}");
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error_suggesting_the_closest_name() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let session = over_pipe(server, Client::default()).await;
    let error = session
        .client
        .call_tool(call("lookup_ordr", json!({})))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("did you mean `lookup_order`"), "{error}");
}

#[tokio::test]
async fn a_tool_outside_the_principal_s_view_is_as_unknown_as_a_missing_one() {
    let reader = Principal {
        id: "reader".into(),
        ceiling: Tier::Read,
        scopes: vec!["*".into()],
        claims: Default::default(),
    };
    let server = McpServer::builder(gate(Arc::default()))
        .principal(reader)
        .build();
    let session = over_pipe(server, Client::default()).await;
    let hidden = session
        .client
        .call_tool(call("delete_account", json!({"account_id": 42})))
        .await
        .unwrap_err()
        .to_string();
    let missing = session
        .client
        .call_tool(call("delete_acount", json!({"account_id": 42})))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        hidden.contains("no tool is named `delete_account`"),
        "{hidden}"
    );
    assert_eq!(hidden.replace("delete_account", "delete_acount"), missing);
    assert!(!missing.contains("did you mean"), "{missing}");
}

#[tokio::test]
async fn a_tool_reports_progress_and_logs_to_the_client_that_called_it() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let client = Client::default();
    let session = over_pipe(server, client.clone()).await;
    // The SDK's client asks for progress on every request it sends.
    let result = session
        .client
        .call_tool(call("export_report", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&result), "exported");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*client.progress.lock().unwrap(), [0.0, 50.0, 100.0]);
    assert_eq!(
        *client.logs.lock().unwrap(),
        [json!("step 0"), json!("step 1"), json!("step 2")],
        "debug is held back until the client asks for it"
    );
    session
        .client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    session
        .client
        .call_tool(call("export_report", json!({})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(client.logs.lock().unwrap().last(), Some(&json!("details")));
}

#[tokio::test]
async fn an_upstream_server_s_progress_and_logs_are_passed_on_under_the_caller_s_token() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let client = Client::default();
    let session = over_pipe(server, client.clone()).await;
    let result = session
        .client
        .call_tool(call("relay", json!({})))
        .await
        .unwrap();
    assert_eq!(text(&result), "relayed");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*client.progress.lock().unwrap(), [25.0]);
    let tokens = client.progress_tokens.lock().unwrap().clone();
    assert_ne!(
        tokens[0],
        ProgressToken(NumberOrString::String("upstream-7".into())),
        "the caller's token, not the upstream's"
    );
    assert_eq!(*client.logs.lock().unwrap(), [json!("disk almost full")]);
}

// ---- upstream prompts and resources ------------------------------------------

/// An upstream MCP server with one prompt and one resource.
struct Library;

impl rmcp::ServerHandler for Library {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
    }

    async fn list_prompts(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(rmcp::model::ListPromptsResult::with_all_items(vec![
            serde_json::from_value(json!({"name": "review", "description": "Review a change.",
                "arguments": [{"name": "change", "required": true}]}))
            .unwrap(),
        ]))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        assert_eq!(request.name, "review", "the upstream sees its own name");
        let change = request
            .arguments
            .and_then(|a| a.get("change").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let result: rmcp::model::GetPromptResult = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": format!("Review {change}")}}]
        }))
        .unwrap();
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(rmcp::model::ListResourcesResult::with_all_items(vec![
            serde_json::from_value(
                json!({"uri": "notes://today", "name": "today", "mimeType": "text/plain"}),
            )
            .unwrap(),
        ]))
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        if request.uri != "notes://today" {
            return Err(ErrorData::resource_not_found("no such note", None));
        }
        let result: rmcp::model::ReadResourceResult = serde_json::from_value(json!({
            "contents": [{"uri": "notes://today", "mimeType": "text/plain", "text": "ship it"}]
        }))
        .unwrap();
        Ok(result.into())
    }
}

/// The client side of a connection to a running [`Library`].
async fn library() -> RunningService<RoleClient, ()> {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = Library.serve(tokio::io::split(theirs)).await.unwrap();
        let _ = running.waiting().await;
    });
    ().serve(tokio::io::split(ours)).await.unwrap()
}

fn forwarding(upstream: &RunningService<RoleClient, ()>, principal: Principal) -> McpServer {
    let peer = upstream.peer().clone();
    McpServer::builder(gate(Arc::default()))
        .principal(principal)
        .forward(["lib".to_owned()], move |ns| {
            (ns == "lib").then(|| peer.clone())
        })
        .build()
}

#[tokio::test]
async fn an_upstream_server_s_prompts_are_offered_under_its_namespace() {
    let upstream = library().await;
    let session = over_pipe(
        forwarding(&upstream, Principal::operator()),
        Client::default(),
    )
    .await;
    let prompts = session.client.list_all_prompts().await.unwrap();
    let names: Vec<_> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["lib.review"]);
    let Value::Object(arguments) = json!({"change": "PR 7"}) else {
        unreachable!()
    };
    let mut request = rmcp::model::GetPromptRequestParams::new("lib.review");
    request.arguments = Some(arguments);
    let prompt = session.client.get_prompt(request).await.unwrap();
    let prompt = serde_json::to_value(prompt).unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Review PR 7");
    let error = session
        .client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("review"))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("SERVER.PROMPT"), "{error}");
}

#[tokio::test]
async fn an_upstream_server_s_resources_keep_their_uris_and_are_read_from_it() {
    let upstream = library().await;
    let session = over_pipe(
        forwarding(&upstream, Principal::operator()),
        Client::default(),
    )
    .await;
    let resources = session.client.list_all_resources().await.unwrap();
    let listed: Vec<_> = resources
        .iter()
        .map(|r| (r.uri.as_str(), r.name.as_str()))
        .collect();
    assert_eq!(listed, [("notes://today", "lib.today")]);
    let read = session
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("notes://today"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(read).unwrap()["contents"][0]["text"],
        "ship it"
    );
    let missing = session
        .client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "notes://tomorrow",
        ))
        .await;
    assert!(missing.is_err());
}

/// A client of the 2026-07-28 revision (discover, no session) over a pipe.
async fn stateless_over_pipe(server: McpServer) -> RunningService<RoleClient, Client> {
    use rmcp::{ClientLifecycleMode, ClientServiceExt};
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(server.serve_stream(tokio::io::split(server_io), std::future::pending()));
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
    };
    Client::default()
        .serve_with_lifecycle(tokio::io::split(client_io), lifecycle)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_passed_on_resource_and_prompt_say_their_result_type_to_a_2026_07_28_client() {
    let upstream = library().await;
    let client = stateless_over_pipe(forwarding(&upstream, Principal::operator())).await;
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("notes://today"))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(read).unwrap()["resultType"],
        "complete"
    );
    let mut request = rmcp::model::GetPromptRequestParams::new("lib.review");
    request.arguments = json!({"change": "PR 7"}).as_object().cloned();
    let prompt = client.get_prompt(request).await.unwrap();
    assert_eq!(
        serde_json::to_value(prompt).unwrap()["resultType"],
        "complete"
    );
}

#[tokio::test]
async fn a_resource_no_upstream_server_has_is_an_error_naming_its_uri() {
    let upstream = library().await;
    for stateless in [false, true] {
        let server = forwarding(&upstream, Principal::operator());
        let client = if stateless {
            stateless_over_pipe(server).await
        } else {
            over_pipe(server, Client::default()).await.client
        };
        let error = client
            .read_resource(rmcp::model::ReadResourceRequestParams::new(
                "notes://tomorrow",
            ))
            .await
            .unwrap_err();
        let rmcp::ServiceError::McpError(error) = error else {
            panic!("not an MCP error: {error}");
        };
        assert_eq!(
            error.data,
            Some(json!({"uri": "notes://tomorrow"})),
            "stateless: {stateless}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_principal_sees_only_the_upstream_servers_its_scopes_reach() {
    let upstream = library().await;
    let outsider = Principal {
        id: "faq_bot".into(),
        ceiling: Tier::Read,
        scopes: vec!["lookup_order".into()],
        claims: Default::default(),
    };
    let session = over_pipe(forwarding(&upstream, outsider), Client::default()).await;
    assert!(session.client.list_all_prompts().await.unwrap().is_empty());
    assert!(
        session
            .client
            .list_all_resources()
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn without_upstream_servers_prompts_and_resources_are_not_offered() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let session = over_pipe(server, Client::default()).await;
    let info = session.client.peer_info().unwrap();
    assert!(info.capabilities.prompts.is_none());
    assert!(info.capabilities.resources.is_none());
    assert!(session.client.list_all_prompts().await.is_err());
}

// ---- approvals ---------------------------------------------------------------

#[tokio::test]
async fn a_call_needing_approval_asks_the_client_and_runs_once_approved() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(client_answers(store.clone())).build();
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": true})));
    let session = over_pipe(server, client.clone()).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(result.structured_content, Some(json!({"deleted": "X-9"})));
    let asked = client.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("`delete_account`"), "{}", asked[0]);
    assert!(asked[0].contains("X-9"), "{}", asked[0]);
    let approvals = ApprovalStore::list(store.as_ref(), true).unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0].status, ApprovalStatus::Consumed);
    assert_eq!(
        approvals[0].decided_by,
        Some(toolgate::policy::Answerer::new("operator", "elicitation")),
        "the answer names who gave it and how"
    );
    let completions = audit(&store)
        .into_iter()
        .filter(|r| r["kind"] == "completion")
        .count();
    assert_eq!(completions, 1, "the tool ran exactly once");
}

#[tokio::test]
async fn a_declined_approval_is_a_refusal_the_model_reads() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(client_answers(store.clone())).build();
    let client = Client::answering(ElicitationAction::Decline, None);
    let session = over_pipe(server, client).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("a human denied this call: declined in the MCP client"),
        "{}",
        text(&result)
    );
    assert!(audit(&store).iter().all(|r| r["kind"] != "completion"));
    assert_eq!(
        authorization(&result),
        Some(json!({"reason": "insufficient_authorization", "remediation": "unavailable"})),
        "a denial carries the draft structured envelope (SEP-2643)"
    );
}

/// The draft structured authorization denial (SEP-2643) on a result.
fn authorization(result: &CallToolResult) -> Option<Value> {
    let meta = result.meta.as_ref()?;
    meta.0.get("io.modelcontextprotocol/authorization").cloned()
}

#[tokio::test]
async fn a_server_may_leave_out_the_draft_authorization_envelope() {
    let server = McpServer::builder(client_answers(Arc::default()))
        .options(ServeOptions {
            authorization_denials: false,
            ..ServeOptions::default()
        })
        .build();
    let client = Client::answering(ElicitationAction::Decline, None);
    let session = over_pipe(server, client).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(authorization(&result), None);
}

#[tokio::test]
async fn unticking_the_approve_box_denies_the_call() {
    let server = McpServer::builder(client_answers(Arc::default())).build();
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": false})));
    let session = over_pipe(server, client).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("denied"), "{}", text(&result));
}

#[tokio::test]
async fn without_elicitation_a_pending_call_says_how_to_approve_it() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(gate(store.clone())).build();
    let session = over_pipe(server, Client::default()).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    let pending = ApprovalStore::list(store.as_ref(), false).unwrap();
    assert_eq!(pending.len(), 1);
    let message = text(&result);
    assert!(
        message.contains(&format!("`toolgate approvals approve {}`", pending[0].id)),
        "{message}"
    );
    assert_eq!(
        authorization(&result),
        Some(json!({
            "reason": "insufficient_authorization",
            "remediation": "undisclosed",
            "authorizationContextId": pending[0].id,
        })),
        "a remedy exists out of band, which this client cannot drive"
    );
    // Approved out of band, the same call runs.
    store
        .approve(&pending[0].id, None, std::time::SystemTime::now())
        .unwrap();
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(authorization(&result), None, "a call that ran carries none");
}

#[tokio::test]
async fn a_dismissed_question_leaves_the_approval_open_for_the_operator() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(client_answers(store.clone())).build();
    let client = Client::answering(ElicitationAction::Cancel, None);
    let session = over_pipe(server, client).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains("dismissed"), "{}", text(&result));
    assert_eq!(ApprovalStore::list(store.as_ref(), false).unwrap().len(), 1);
}

#[tokio::test]
async fn a_clients_accept_does_not_approve_an_approver_only_ask() {
    // The default for a policy `ask` is an approver: the client is not asked,
    // and an answer it would give would not count.
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(gate(store.clone())).build();
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": true})));
    let session = over_pipe(server, client.clone()).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains("an approver's answer"),
        "{}",
        text(&result)
    );
    assert!(
        client.asked.lock().unwrap().is_empty(),
        "the client was not asked"
    );
    let pending = ApprovalStore::list(store.as_ref(), false).unwrap();
    assert_eq!(pending.len(), 1, "the approval waits for an approver");
    assert!(audit(&store).iter().all(|r| r["kind"] != "completion"));
}

#[tokio::test]
async fn an_accept_without_the_approve_field_is_not_an_approval() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(client_answers(store.clone())).build();
    let client = Client::answering(ElicitationAction::Accept, None);
    let session = over_pipe(server, client.clone()).await;
    let result = session
        .client
        .call_tool(call("delete_account", json!({"account_id": "X-9"})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert_eq!(client.asked.lock().unwrap().len(), 1);
    assert!(text(&result).contains("no approval"), "{}", text(&result));
    assert_eq!(ApprovalStore::list(store.as_ref(), false).unwrap().len(), 1);
    assert!(audit(&store).iter().all(|r| r["kind"] != "completion"));
}

// ---- sessions over HTTP ------------------------------------------------------

fn latch_spec() -> SpecFile {
    serde_json::from_value(json!({
        "tools": [
            {"name": "verify", "description": "Verify the customer.", "effect": "idempotent",
             "set_state": {"verified": true}},
            {"name": "whoami", "description": "Say whether the customer is verified.", "effect": "read",
             "response": {"verified": "{state.verified}"}}
        ],
        "state": {"verified": {"type": "boolean", "default": false}}
    }))
    .unwrap()
}

#[tokio::test]
async fn each_http_session_is_its_own_conversation() {
    let store = Arc::new(MemoryGateStore::default());
    let spec = latch_spec();
    let gate = Gate::from_spec(&spec, "latch.yaml", &Catalog::new(), store.clone()).unwrap();
    let server = McpServer::builder(Arc::new(gate)).build();
    let http = over_http(server, HttpAccess::open()).await;
    let alice = http_client(&http.url, None, Client::default()).await;
    let bob = http_client(&http.url, None, Client::default()).await;
    alice.call_tool(call("verify", json!({}))).await.unwrap();
    let alice_sees = alice.call_tool(call("whoami", json!({}))).await.unwrap();
    let bob_sees = bob.call_tool(call("whoami", json!({}))).await.unwrap();
    assert_eq!(
        alice_sees.structured_content,
        Some(json!({"verified": true}))
    );
    assert_eq!(
        bob_sees.structured_content,
        Some(json!({"verified": false}))
    );
    let sessions: std::collections::BTreeSet<String> = audit(&store)
        .iter()
        .map(|r| r["session"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    alice.cancel().await.unwrap();
    bob.cancel().await.unwrap();
    http.stop.send(()).unwrap();
    let report = http.server.await.unwrap().unwrap();
    assert_eq!(report.calls, 3);
}

#[tokio::test]
async fn tools_list_follows_the_conversation_s_flow_and_the_client_hears_when_it_changes() {
    let mut spec = latch_spec();
    spec.flow = serde_json::from_value(json!({"steps": [
        {"id": "identify", "allow": ["verify"], "done": {"called_ok": "verify"}},
        {"id": "assist", "after": ["identify"], "allow": ["whoami"]}
    ]}))
    .unwrap();
    let store = Arc::new(MemoryGateStore::default());
    let gate = Gate::from_spec(&spec, "flow.yaml", &Catalog::new(), store).unwrap();
    let server = McpServer::builder(Arc::new(gate)).build();
    let client = Client::default();
    let session = over_pipe(server, client.clone()).await;
    assert_eq!(listed(&session.client).await, ["verify"]);
    session
        .client
        .call_tool(call("verify", json!({})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*client.tools_changed.lock().unwrap(), 1);
    assert_eq!(listed(&session.client).await, ["whoami"]);
    session
        .client
        .call_tool(call("whoami", json!({})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*client.tools_changed.lock().unwrap(), 1, "nothing changed");
}

#[tokio::test]
async fn a_replaced_gate_is_listed_and_called_and_every_client_hears_of_it() {
    let store = Arc::new(MemoryGateStore::default());
    let first = Gate::builder(Catalog::new().with_native(LookupOrder).unwrap())
        .store(store.clone())
        .build();
    let server = McpServer::builder(Arc::new(first)).build();
    let client = Client::default();
    let session = over_pipe(server.clone(), client.clone()).await;
    assert_eq!(listed(&session.client).await, ["lookup_order"]);

    // The catalog changed (as when an upstream server's tools change): a new gate,
    // with one tool withheld (as a quarantined one would be).
    let second = Gate::builder(catalog()).store(store).build();
    server.replace_gate(
        Arc::new(second),
        vec!["relay".to_owned(), "slow".to_owned()],
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*client.tools_changed.lock().unwrap(), 1);
    assert_eq!(
        listed(&session.client).await,
        ["lookup_order", "delete_account", "export_report"]
    );
    let result = session
        .client
        .call_tool(call("export_report", json!({})))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
}

fn search_catalog() -> (Catalog, Arc<toolgate::search::SearchTools>) {
    let mut catalog = catalog();
    let search = toolgate::search::SearchTools::register_in(&mut catalog).unwrap();
    (catalog, search)
}

#[tokio::test]
async fn with_search_a_session_lists_search_and_always_loaded_tools_then_what_it_found() {
    let (catalog, _) = search_catalog();
    let gate = Gate::builder(catalog)
        .store(Arc::new(MemoryGateStore::default()))
        .build();
    let server = McpServer::builder(Arc::new(gate))
        .search(["lookup_order".to_owned()])
        .build();
    assert_eq!(server.tool_names(), ["lookup_order", "search_tools"]);
    let client = Client::default();
    let session = over_pipe(server.clone(), client.clone()).await;
    assert_eq!(
        listed(&session.client).await,
        ["lookup_order", "search_tools"]
    );
    let found = session
        .client
        .call_tool(call(
            "search_tools",
            json!({"query": "export a report", "k": 1}),
        ))
        .await
        .unwrap();
    assert!(text(&found).contains("export_report"), "{}", text(&found));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*client.tools_changed.lock().unwrap(), 1);
    assert_eq!(
        listed(&session.client).await,
        ["lookup_order", "export_report", "search_tools"]
    );

    // Another session starts over; a tool not listed can still be called (the gate decides).
    let other = over_pipe(server, Client::default()).await;
    assert_eq!(
        listed(&other.client).await,
        ["lookup_order", "search_tools"]
    );
    let direct = other
        .client
        .call_tool(call("export_report", json!({})))
        .await
        .unwrap();
    assert_ne!(direct.is_error, Some(true), "{direct:?}");
}

/// A bearer token as `openssl rand -hex 32` makes one (the server takes 32 bytes and up).
const TOKEN: &str = "9c1e5b7f3a0d2c4e6f8a1b3d5e7f9a0c2e4f6a8b1c3d5e7f9a0b2c4d6e8f0a1b";

#[tokio::test]
async fn http_requests_without_the_bearer_token_get_401() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let http = over_http(server, HttpAccess::bearer(TOKEN).unwrap()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}}});
    let raw = reqwest::Client::new();
    for auth in [None, Some("Bearer wrong"), Some(TOKEN)] {
        let mut request = raw
            .post(&http.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{auth:?}");
        assert_eq!(
            response.headers()["www-authenticate"],
            "Bearer realm=\"toolgate\""
        );
    }
    let client = http_client(&http.url, Some(TOKEN), Client::default()).await;
    assert_eq!(client.list_all_tools().await.unwrap().len(), 5);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_endpoint_path_axum_cannot_route_is_an_error_not_a_panic() {
    let server = McpServer::builder(gate(Arc::default())).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let error = FrontDoor::new(server, HttpAccess::open())
        .path("mcp")
        .serve(listener, std::future::pending())
        .await
        .unwrap_err();
    assert!(matches!(error, ServeError::BadPath(_)), "{error}");
}

// ---- shutdown ----------------------------------------------------------------

#[tokio::test]
async fn shutdown_lets_a_running_call_finish_within_the_grace_period() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(gate(store.clone()))
        .options(ServeOptions {
            grace: Duration::from_secs(10),
            ..ServeOptions::default()
        })
        .build();
    let http = over_http(server, HttpAccess::open()).await;
    let client = http_client(&http.url, None, Client::default()).await;
    let running =
        tokio::spawn(async move { client.call_tool(call("slow", json!({"millis": 400}))).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    http.stop.send(()).unwrap();
    let report = http.server.await.unwrap().unwrap();
    assert_eq!((report.shutdown.running, report.shutdown.cancelled), (1, 0));
    let result = running.await.unwrap().unwrap();
    assert_eq!(text(&result), "done");
    let outcomes: Vec<_> = audit(&store)
        .into_iter()
        .filter(|r| r["kind"] == "completion")
        .map(|r| r["outcome"].clone())
        .collect();
    assert_eq!(outcomes, [json!("ok")]);
}

#[tokio::test]
async fn shutdown_cancels_a_call_that_outlives_the_grace_period_and_records_it() {
    let store = Arc::new(MemoryGateStore::default());
    let server = McpServer::builder(gate(store.clone()))
        .options(ServeOptions {
            grace: Duration::from_millis(100),
            ..ServeOptions::default()
        })
        .build();
    let session = over_pipe(server, Client::default()).await;
    let client = session.client;
    let running = tokio::spawn(async move {
        client
            .call_tool(call("slow", json!({"millis": 60_000})))
            .await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    session.stop.send(()).unwrap();
    let report = session.server.await.unwrap().unwrap();
    assert_eq!((report.shutdown.running, report.shutdown.cancelled), (1, 1));
    assert_eq!(report.shutdown.abandoned, 0);
    let outcomes: Vec<_> = audit(&store)
        .into_iter()
        .filter(|r| r["kind"] == "completion")
        .map(|r| r["outcome"].clone())
        .collect();
    assert_eq!(outcomes, [json!("cancelled")]);
    if let Ok(Ok(result)) = running.await {
        assert_eq!(result.is_error, Some(true));
        assert!(text(&result).contains("cancelled"), "{}", text(&result));
    }
}

#[tokio::test]
async fn no_new_call_is_taken_once_shutdown_has_begun() {
    let server = McpServer::builder(gate(Arc::default()))
        .options(ServeOptions {
            grace: Duration::from_secs(5),
            ..ServeOptions::default()
        })
        .build();
    let session = over_pipe(server, Client::default()).await;
    let client = Arc::new(session.client);
    let first = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool(call("slow", json!({"millis": 500}))).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    session.stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = client
        .call_tool(call("lookup_order", json!({"order_id": "A-1"})))
        .await
        .unwrap();
    assert_eq!(second.is_error, Some(true));
    assert!(text(&second).contains("shutting down"), "{}", text(&second));
    assert_eq!(text(&first.await.unwrap().unwrap()), "done");
    session.server.await.unwrap().unwrap();
}
