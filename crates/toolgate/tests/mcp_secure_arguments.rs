//! Secure arguments (SEP-3221, a draft) on the served MCP endpoint: a tool whose
//! spec fills a parameter from the host (`inject: {PARAM: "{host}"}`) lists it
//! under `secureInputSchema` (in the tool's `_meta`, as the SDK's tool type has
//! no place for the draft's top-level field) and not in `inputSchema`; the host's
//! `secureArguments` fill it; the model may not. Raw HTTP against a real server
//! on loopback.

#![cfg(feature = "mcp")]

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::McpServer;
use toolgate::serve::FrontDoor;
use toolgate::{Catalog, Gate, MemoryGateStore};

const SPEC: &str = r#"
tools:
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
    let tool = &listed["result"]["tools"][0];
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
