//! The catalog served to clients of the stateless MCP revision (2026-07-28), driven
//! by the official SDK's client (rmcp, `server/discover` and per-request `_meta`)
//! over streamable HTTP on loopback and over a pipe.

#![cfg(feature = "mcp")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::RequestParamsMeta;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ElicitationAction, InputResponses,
    PaginatedRequestParams, ProtocolVersion, RequestMetaObject, ServerNotification,
    SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use support::mcp::{Client, over_http, text};
use tokio::sync::oneshot;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::{CONVERSATION_HEADER, CONVERSATION_META, McpServer};
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, MemoryGateStore, store::ApprovalStatus, store::ApprovalStore, store::AuditLog,
};

// ---- the served catalog ----------------------------------------------------------

/// `verify` latches `verified`; `whoami` reads it; closing an account asks the
/// customer (`answered_by: client`).
fn spec() -> SpecFile {
    serde_json::from_value(json!({
        "tools": [
            {"name": "verify", "description": "Verify the customer.", "effect": "idempotent",
             "set_state": {"verified": true}},
            {"name": "whoami", "description": "Say whether the customer is verified.", "effect": "read",
             "response": {"verified": "{state.verified}"}},
            {"name": "close_account", "description": "Close the customer's account for good.",
             "effect": "destructive", "response": {"closed": true}}
        ],
        "state": {"verified": {"type": "boolean", "default": false}},
        "policy": {"rules": [
            {"tools": "close_account", "decision": "ask", "answered_by": "client"}
        ]}
    }))
    .unwrap()
}

/// The same tools in a flow: `whoami` opens once `verify` succeeded.
fn flow_spec() -> SpecFile {
    let mut spec = spec();
    spec.tools.retain(|tool| tool.name != "close_account");
    spec.flow = serde_json::from_value(json!({"steps": [
        {"id": "identify", "allow": ["verify"], "done": {"called_ok": "verify"}},
        {"id": "assist", "after": ["identify"], "allow": ["whoami"]}
    ]}))
    .unwrap();
    spec
}

fn server(spec: &SpecFile, store: Arc<MemoryGateStore>) -> McpServer {
    let gate = Gate::from_spec(spec, "toolgate.yaml", &Catalog::new(), store).unwrap();
    McpServer::builder(Arc::new(gate)).build()
}

// ---- the client --------------------------------------------------------------------

fn stateless() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

async fn connect(url: &str, client: Client) -> RunningService<RoleClient, Client> {
    client
        .serve_with_lifecycle(StreamableHttpClientTransport::from_uri(url), stateless())
        .await
        .unwrap()
}

/// `_meta` naming `conversation`.
fn in_conversation(conversation: &str) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    meta.insert(CONVERSATION_META.to_owned(), json!(conversation));
    meta
}

fn call(name: &str, conversation: Option<&str>) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(Default::default());
    if let Some(id) = conversation {
        params.set_meta(in_conversation(id));
    }
    params
}

async fn listed(client: &RunningService<RoleClient, Client>, conversation: &str) -> Vec<String> {
    let mut request = PaginatedRequestParams::default();
    request.set_meta(in_conversation(conversation));
    let result = client.list_tools(Some(request)).await.unwrap();
    result
        .tools
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

fn sessions(store: &MemoryGateStore) -> std::collections::BTreeSet<String> {
    store
        .tail(1000)
        .unwrap()
        .into_iter()
        .map(|r| r.entry.session.clone())
        .collect()
}

// ---- conversations -----------------------------------------------------------------

#[tokio::test]
async fn requests_naming_one_conversation_share_its_state_and_others_do_not() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&spec(), store.clone()), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    client
        .call_tool(call("verify", Some("alice")))
        .await
        .unwrap();
    let alice = client
        .call_tool(call("whoami", Some("alice")))
        .await
        .unwrap();
    let bob = client.call_tool(call("whoami", Some("bob"))).await.unwrap();
    assert_eq!(alice.structured_content, Some(json!({"verified": true})));
    assert_eq!(bob.structured_content, Some(json!({"verified": false})));
    assert_eq!(
        sessions(&store),
        ["mcp-alice".to_owned(), "mcp-bob".to_owned()].into()
    );
    http.stop.send(()).unwrap();
    assert_eq!(http.server.await.unwrap().unwrap().calls, 3);
}

#[tokio::test]
async fn a_request_naming_no_conversation_is_in_the_server_s_default_one() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&spec(), store.clone()), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    client.call_tool(call("verify", None)).await.unwrap();
    let later = client.call_tool(call("whoami", None)).await.unwrap();
    assert_eq!(later.structured_content, Some(json!({"verified": true})));
    assert_eq!(sessions(&store), ["mcp-default".to_owned()].into());
}

#[tokio::test]
async fn a_malformed_conversation_id_is_refused_saying_what_to_send() {
    let http = over_http(server(&spec(), Arc::default()), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    let refused = client
        .call_tool(call("whoami", Some("two words\n")))
        .await
        .unwrap_err();
    let message = refused.to_string();
    assert!(
        message.contains("`_meta.toolgate/conversation` must name the conversation"),
        "{message}"
    );
    assert!(message.contains("leave it out"), "{message}");
}

#[tokio::test]
async fn a_conversation_s_flow_governs_its_stateless_requests_and_its_listing() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&flow_spec(), store), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    assert_eq!(listed(&client, "c1").await, ["verify"]);
    let early = client.call_tool(call("whoami", Some("c1"))).await.unwrap();
    assert_eq!(early.is_error, Some(true), "{}", text(&early));
    client.call_tool(call("verify", Some("c1"))).await.unwrap();
    assert_eq!(listed(&client, "c1").await, ["whoami"]);
    assert_eq!(
        listed(&client, "c2").await,
        ["verify"],
        "another conversation"
    );
}

#[tokio::test]
async fn tools_list_says_only_the_client_may_cache_it_and_not_at_all_under_a_flow() {
    let http = over_http(server(&spec(), Arc::default()), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    let plain = client.list_tools(None).await.unwrap();
    assert_eq!(plain.cache_scope, Some(CacheScope::Private));
    assert_eq!(plain.ttl_ms, Some(60_000));
    let governed = over_http(server(&flow_spec(), Arc::default()), HttpAccess::open()).await;
    let client = connect(&governed.url, Client::default()).await;
    let flowing = client.list_tools(None).await.unwrap();
    assert_eq!(flowing.cache_scope, Some(CacheScope::Private));
    assert_eq!(flowing.ttl_ms, Some(0));
}

#[tokio::test]
async fn a_subscription_hears_when_a_call_changes_its_conversation_s_tools() {
    let http = over_http(server(&flow_spec(), Arc::default()), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    // The subscription names its conversation in a header: rmcp sets no `_meta` on it.
    let headers = std::collections::HashMap::from([(
        http::HeaderName::from_static(CONVERSATION_HEADER),
        http::HeaderValue::from_static("c1"),
    )]);
    let config =
        StreamableHttpClientTransportConfig::with_uri(http.url.as_str()).custom_headers(headers);
    let listener = Client::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            stateless(),
        )
        .await
        .unwrap();
    let mut subscription = listener
        .peer()
        .listen(SubscriptionFilter::builder().tools_list_changed().build())
        .await
        .unwrap();
    assert_eq!(listed(&client, "c1").await, ["verify"]);
    // A call in another conversation changes nothing here.
    client.call_tool(call("verify", Some("c2"))).await.unwrap();
    client.call_tool(call("verify", Some("c1"))).await.unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(5), subscription.next())
        .await
        .expect("no notification within 5 s")
        .unwrap()
        .expect("the subscription ended");
    assert!(
        matches!(heard, ServerNotification::ToolListChangedNotification(_)),
        "{heard:?}"
    );
}

// ---- approvals ---------------------------------------------------------------------

#[tokio::test]
async fn a_call_needing_approval_asks_through_input_required_and_runs_once_approved() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&spec(), store.clone()), HttpAccess::open()).await;
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": true})));
    let service = connect(&http.url, client.clone()).await;
    let result = service
        .call_tool(call("close_account", Some("c1")))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    assert_eq!(result.structured_content, Some(json!({"closed": true})));
    let asked = client.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains("`close_account`"), "{}", asked[0]);
    let approvals = ApprovalStore::list(store.as_ref(), true).unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0].status, ApprovalStatus::Consumed);
}

#[tokio::test]
async fn a_declined_question_is_a_refusal_and_the_tool_does_not_run() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&spec(), store.clone()), HttpAccess::open()).await;
    let client = Client::answering(ElicitationAction::Decline, None);
    let service = connect(&http.url, client).await;
    let result = service
        .call_tool(call("close_account", Some("c1")))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("a human denied this call: declined in the MCP client"),
        "{}",
        text(&result)
    );
    let records = store.tail(1000).unwrap();
    assert!(
        records
            .iter()
            .all(|r| !matches!(r.entry.kind, toolgate_core::RecordKind::Completion)),
        "it never ran"
    );
}

#[tokio::test]
async fn without_elicitation_a_stateless_client_is_told_how_to_approve() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&spec(), store.clone()), HttpAccess::open()).await;
    let service = connect(&http.url, Client::default()).await;
    let result = service
        .call_tool(call("close_account", Some("c1")))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("toolgate approvals approve ap-"),
        "{}",
        text(&result)
    );
    let approvals = ApprovalStore::list(store.as_ref(), false).unwrap();
    assert_eq!(approvals[0].status, ApprovalStatus::Pending);
}

#[tokio::test]
async fn an_approver_only_ask_is_not_put_to_a_stateless_client() {
    let mut approver_only = spec();
    approver_only.policy = Default::default();
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&approver_only, store.clone()), HttpAccess::open()).await;
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": true})));
    let service = connect(&http.url, client.clone()).await;
    let result = service
        .call_tool_once(call("close_account", Some("c1")))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = result else {
        panic!("expected a result, not a question: {result:?}");
    };
    assert_eq!(result.is_error, Some(true));
    assert!(
        text(&result).contains("an approver's answer"),
        "{}",
        text(&result)
    );
    let approvals = ApprovalStore::list(store.as_ref(), false).unwrap();
    assert_eq!(approvals[0].status, ApprovalStatus::Pending);
}

#[tokio::test]
async fn a_request_state_from_another_conversation_approves_nothing() {
    let store = Arc::new(MemoryGateStore::default());
    let http = over_http(server(&spec(), store.clone()), HttpAccess::open()).await;
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": true})));
    let service = connect(&http.url, client).await;
    let CallToolResponse::InputRequired(asked) = service
        .call_tool_once(call("close_account", Some("c1")))
        .await
        .unwrap()
    else {
        panic!("expected an input_required result");
    };
    let state = asked.request_state.expect("a request state");
    let answer = InputResponses::from([(
        "approval".to_owned(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]);
    let replayed = call("close_account", Some("c2"))
        .with_input_responses(answer.clone())
        .with_request_state(state.clone());
    let refused = service.call_tool_once(replayed).await.unwrap_err();
    assert!(refused.to_string().contains("requestState"), "{refused}");
    let approvals = ApprovalStore::list(store.as_ref(), false).unwrap();
    assert_eq!(
        approvals[0].status,
        ApprovalStatus::Pending,
        "still waiting"
    );
    // Without an answer, the same conversation is asked again.
    let unanswered = call("close_account", Some("c1")).with_request_state(state);
    let again = service.call_tool_once(unanswered).await.unwrap();
    assert!(
        matches!(again, CallToolResponse::InputRequired(_)),
        "{again:?}"
    );
}

// ---- stdio -------------------------------------------------------------------------

#[tokio::test]
async fn over_stdio_a_stateless_client_discovers_lists_and_calls_in_its_conversations() {
    let store = Arc::new(MemoryGateStore::default());
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (stop, stopped) = oneshot::channel::<()>();
    let served = server(&spec(), store.clone()).serve_stream(tokio::io::split(server_io), async {
        let _ = stopped.await;
    });
    let server = tokio::spawn(served);
    let client = Client::default()
        .serve_with_lifecycle(tokio::io::split(client_io), stateless())
        .await
        .unwrap();
    assert_eq!(
        client
            .peer()
            .peer_info()
            .and_then(|info| info.server_info.clone())
            .map(|s| s.name),
        Some("toolgate".to_owned())
    );
    assert_eq!(
        listed(&client, "a").await,
        ["verify", "whoami", "close_account"]
    );
    client.call_tool(call("verify", Some("a"))).await.unwrap();
    let a = client.call_tool(call("whoami", Some("a"))).await.unwrap();
    let b = client.call_tool(call("whoami", Some("b"))).await.unwrap();
    assert_eq!(a.structured_content, Some(json!({"verified": true})));
    assert_eq!(b.structured_content, Some(json!({"verified": false})));
    stop.send(()).unwrap();
    assert_eq!(server.await.unwrap().unwrap().calls, 3);
}

// ---- headers -----------------------------------------------------------------------

#[tokio::test]
async fn a_call_whose_mcp_param_header_contradicts_its_argument_is_refused() {
    let spec: SpecFile = serde_json::from_value(json!({
        "tools": [{
            "name": "forecast", "description": "The weather in a region.", "effect": "read",
            "parameters": {"type": "object", "required": ["region"], "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}
            }},
            "response": {"sky": "clear"}
        }]
    }))
    .unwrap();
    let http = over_http(server(&spec, Arc::default()), HttpAccess::open()).await;
    let client = connect(&http.url, Client::default()).await;
    let tools = client.list_tools(None).await.unwrap();
    assert_eq!(
        tools.tools[0].input_schema["properties"]["region"]["x-mcp-header"],
        json!("Region"),
        "served to MCP clients as written"
    );
    let mut params = CallToolRequestParams::new("forecast")
        .with_arguments(json!({"region": "eu"}).as_object().unwrap().clone());
    params.set_meta(in_conversation("c1"));
    let fine = client.call_tool(params).await.unwrap();
    assert_eq!(
        fine.is_error,
        Some(false),
        "rmcp mirrors the argument: {}",
        text(&fine)
    );
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "forecast", "arguments": {"region": "eu"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    });
    let refused = reqwest::Client::new()
        .post(&http.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "forecast")
        .header("mcp-param-region", "us")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400, "{:?}", refused.text().await);
}
