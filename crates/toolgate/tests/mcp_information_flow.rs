//! Information flow on the served MCP endpoint, by the drafts hosts may speak:
//! secure arguments (SEP-3221) — a tool whose spec fills a parameter from the
//! host (`inject: {PARAM: "{host}"}`) lists it under `secureInputSchema` (in the
//! tool's `_meta`, as the SDK's tool type has no place for the draft's top-level
//! field) and not in `inputSchema`, the host's `secureArguments` fill it and the
//! model may not — and data-origin labels (SEP-3193), which only restrict. Raw
//! HTTP against a real server on loopback.

#![cfg(feature = "mcp")]

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::McpServer;
use toolgate::serve::FrontDoor;
use toolgate::{Catalog, Gate, MemoryGateStore};

const SPEC: &str = r#"
policy:
  rule_of_two: deny
  effects: {external: allow}
  rules:
    - tools: post_message
      when: {tainted: "*"}
      decision: deny
      reason: the message may carry text a third party wrote
tools:
  - name: crm_lookup
    description: A customer's record.
    effect: read
    output: private
    response: {name: Ada Lovelace}
  - name: send_email
    description: Send an email.
    effect: external
    parameters: {type: object, properties: {to: {type: string}, body: {type: string}}}
  - name: post_message
    description: Post to the team channel.
    effect: external
    parameters: {type: object, properties: {text: {type: string}}}
  - name: run_query
    description: Run a read-only SQL query on the customer's database instance.
    effect: read
    parameters:
      type: object
      properties:
        sql: {type: string}
        instance: {type: string, description: The database instance.}
      required: [sql, instance]
    inject: {instance: "{host}"}
    response: {ran: "{args.sql}", on: "{args.instance}"}
"#;

async fn serve() -> (String, oneshot::Sender<()>) {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    let spec = serde_json::from_value(doc.value).unwrap();
    let gate = Gate::from_spec(
        &spec,
        "t.yaml",
        &Catalog::new(),
        Arc::new(MemoryGateStore::default()),
    )
    .unwrap();
    let server = McpServer::builder(Arc::new(gate)).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(
        FrontDoor::new(server, HttpAccess::open()).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    (url, stop)
}

/// Posts one JSON-RPC message in session `id` (or opens one); the session id and the answer.
async fn rpc(
    client: &reqwest::Client,
    url: &str,
    id: Option<&str>,
    body: Value,
) -> (Option<String>, Value) {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(id) = id {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    let answer = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (session, answer)
}

async fn session(client: &reqwest::Client, url: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}});
    let (id, _) = rpc(client, url, None, init).await;
    let id = id.expect("a session");
    rpc(
        client,
        url,
        Some(&id),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    id
}

#[tokio::test]
async fn the_host_fills_a_secure_parameter_and_the_model_cannot() {
    let (url, stop) = serve().await;
    let client = reqwest::Client::new();
    let id = session(&client, &url).await;

    let (_, listed) = rpc(
        &client,
        &url,
        Some(&id),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let tools = listed["result"]["tools"].as_array().unwrap();
    let tool = tools.iter().find(|t| t["name"] == "run_query").unwrap();
    assert!(
        tool["inputSchema"]["properties"].get("instance").is_none(),
        "{tool}"
    );
    assert_eq!(tool["inputSchema"]["required"], json!(["sql"]), "{tool}");
    assert_eq!(
        tool["_meta"]["toolgate/secureInputSchema"],
        json!({"type": "object", "properties": {"instance": {"type": "string", "description": "The database instance."}}, "required": ["instance"]})
    );

    let call = |arguments: Value, secure: Option<Value>| {
        let mut params = json!({"name": "run_query", "arguments": arguments});
        if let Some(secure) = secure {
            params["secureArguments"] = secure;
        }
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
    };
    let (_, ran) = rpc(
        &client,
        &url,
        Some(&id),
        call(
            json!({"sql": "select 1"}),
            Some(json!({"instance": "db-04"})),
        ),
    )
    .await;
    assert_eq!(
        ran["result"]["structuredContent"],
        json!({"ran": "select 1", "on": "db-04"}),
        "{ran}"
    );

    let (_, chosen) = rpc(
        &client,
        &url,
        Some(&id),
        call(
            json!({"sql": "select 1", "instance": "db-prod"}),
            Some(json!({"instance": "db-04"})),
        ),
    )
    .await;
    assert_eq!(chosen["error"]["code"], -32602, "{chosen}");
    assert!(
        chosen["error"]["message"]
            .as_str()
            .unwrap()
            .contains("only the host may send it"),
        "{chosen}"
    );

    let (_, missing) = rpc(
        &client,
        &url,
        Some(&id),
        call(json!({"sql": "select 1"}), None),
    )
    .await;
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    let text = missing["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("`instance` is a secure argument the host must send"),
        "{text}"
    );
    let _ = stop.send(());
}

/// A `tools/call` in session `id` with `_meta`.
fn call_with_meta(name: &str, arguments: Value, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta}})
}

#[tokio::test]
async fn a_hosts_origin_label_only_restricts() {
    let (url, stop) = serve().await;
    let client = reqwest::Client::new();
    let id = session(&client, &url).await;
    let web = json!({"io.modelcontextprotocol/flowOrigin": {"contributors": [
        {"principal": "urn:mcp:user", "assurance": "user"},
        {"principal": "https://mcp.webfetch.example/mcp", "assurance": "unverified"}
    ], "complete": true}});
    let user_only = json!({"io.modelcontextprotocol/flowOrigin": {"contributors": [
        {"principal": "urn:mcp:user", "assurance": "user"}], "complete": true}});
    let text = |answer: &Value| {
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    // Every argument of a call from an untrusted context counts as tainted.
    let (_, posted) = rpc(
        &client,
        &url,
        Some(&id),
        call_with_meta("post_message", json!({"text": "hi"}), web.clone()),
    )
    .await;
    assert_eq!(posted["result"]["isError"], true, "{posted}");
    assert!(
        text(&posted).contains("the message may carry text a third party wrote"),
        "{posted}"
    );
    let (_, plain) = rpc(
        &client,
        &url,
        Some(&id),
        call_with_meta("post_message", json!({"text": "hi"}), user_only.clone()),
    )
    .await;
    assert_ne!(plain["result"]["isError"], true, "{plain}");

    // With private data read, the label completes the rule of two.
    rpc(
        &client,
        &url,
        Some(&id),
        call_with_meta("crm_lookup", json!({}), user_only.clone()),
    )
    .await;
    let (_, sent) = rpc(
        &client,
        &url,
        Some(&id),
        call_with_meta("send_email", json!({"to": "ada@example.com"}), web),
    )
    .await;
    assert_eq!(sent["result"]["isError"], true, "{sent}");
    let said = text(&sent);
    assert!(said.contains("read untrusted content (the host's origin label: unverified https://mcp.webfetch.example/mcp"), "{said}");
    assert!(said.contains("read private data (crm_lookup"), "{said}");
    let (_, trusted) = rpc(
        &client,
        &url,
        Some(&id),
        call_with_meta("send_email", json!({"to": "ada@example.com"}), user_only),
    )
    .await;
    assert_ne!(trusted["result"]["isError"], true, "{trusted}");
    let _ = stop.send(());
}
