//! How large a message the MCP server takes in: four times the spec's
//! `limits.max_argument_bytes` plus 64 KiB, over HTTP (a larger body is answered
//! 413 unread) and over stdio (a longer line is dropped unread); below that the
//! gate refuses oversized arguments with a message. Real servers on loopback and on
//! a pipe, the official SDK's client and raw requests.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolgate::auth::HttpAccess;
use toolgate::mcp::server::{McpServer, ServeError, ServeReport, max_message_bytes};
use toolgate::serve::FrontDoor;
use toolgate::{Catalog, Gate, MemoryGateStore, spec::SpecSource};

/// A gate over one mock tool, its arguments limited by the spec to `limit` bytes.
fn gate(limit: usize) -> Arc<Gate> {
    let text = format!(
        "limits: {{max_argument_bytes: {limit}}}\ntools:\n  - {{name: echo, description: Say it back., effect: read, parameters: {{type: object, properties: {{text: {{type: string}}}}}}}}\n"
    );
    let source = SpecSource::from_text("limits.yaml", text);
    assert!(source.checked.is_ok(), "{}", source.render_diagnostics());
    let spec = source.checked.spec.unwrap();
    let store = Arc::new(MemoryGateStore::default());
    let gate = Gate::from_spec(&spec, "limits.yaml", &Catalog::new(), store).unwrap();
    assert_eq!(gate.max_argument_bytes(), limit);
    Arc::new(gate)
}

fn echo(bytes: usize) -> CallToolRequestParams {
    let Value::Object(arguments) = json!({"text": "x".repeat(bytes)}) else {
        unreachable!()
    };
    CallToolRequestParams::new("echo").with_arguments(arguments)
}

struct Served {
    url: String,
    stop: oneshot::Sender<()>,
    server: JoinHandle<Result<ServeReport, ServeError>>,
}

async fn serve_http(gate: Arc<Gate>) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(
        FrontDoor::new(McpServer::builder(gate).build(), HttpAccess::open()).serve(
            listener,
            async {
                let _ = stopped.await;
            },
        ),
    );
    Served { url, stop, server }
}

impl Served {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap().unwrap();
    }
}

/// An `initialize` request padded to `bytes` bytes.
fn initialize_of(bytes: usize) -> String {
    let body = |pad: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1", "pad": pad}}})
        .to_string()
    };
    let overhead = body("").len();
    body(&"x".repeat(bytes - overhead))
}

#[test]
fn the_message_bound_is_four_times_the_argument_limit_and_64_kib() {
    assert_eq!(max_message_bytes(1 << 20), (4 << 20) + (64 << 10));
    assert_eq!(max_message_bytes(usize::MAX), usize::MAX);
}

#[tokio::test]
async fn an_http_body_past_the_message_bound_is_refused_unread_and_smaller_ones_meet_the_gate() {
    let limit = 1024;
    let served = serve_http(gate(limit)).await;
    let largest = max_message_bytes(limit);
    let raw = reqwest::Client::new();
    let post = |body: String| {
        raw.post(&served.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
    };
    let response = post(initialize_of(largest + 1)).await.unwrap();
    assert_eq!(response.status(), 413);
    let response = post(initialize_of(largest)).await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());

    // Within the bound, arguments over the limit get the gate's refusal.
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
            .await
            .unwrap();
    let refused = client.call_tool(echo(2 * limit)).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    let said = serde_json::to_string(&refused.content).unwrap();
    assert!(
        said.contains("more than the 1024 bytes a call may carry; nothing ran"),
        "{said}"
    );
    let fine = client.call_tool(echo(limit / 2)).await.unwrap();
    assert_ne!(fine.is_error, Some(true), "{fine:?}");
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn an_argument_limit_above_the_transports_default_lets_such_calls_through_http() {
    // 5 MiB of arguments: more than rmcp's own 4 MiB default body limit.
    let limit = 8 << 20;
    let served = serve_http(gate(limit)).await;
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
            .await
            .unwrap();
    let result = client.call_tool(echo(5 << 20)).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    client.cancel().await.unwrap();
    served.stop().await;
}

#[tokio::test]
async fn a_stdio_line_past_the_message_bound_is_dropped_and_the_session_goes_on() {
    let limit = 1024;
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(McpServer::builder(gate(limit)).build().serve_stream(
        tokio::io::split(theirs),
        async {
            let _ = stopped.await;
        },
    ));
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    let mut send = async |message: Value| {
        let mut line = message.to_string();
        line.push('\n');
        write.write_all(line.as_bytes()).await.unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    )
    .await;
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

    let call = |id: u64, bytes: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x".repeat(bytes)}}})
    };
    // Past the bound: dropped unread. Within it but over the limit: the gate refuses.
    send(call(2, max_message_bytes(limit) + 1)).await;
    send(call(3, 2 * limit)).await;
    let answer = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("the session answers the next call")
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["id"], 3, "no answer to the dropped line: {answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("more than the 1024 bytes a call may carry"),
        "{answer}"
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
