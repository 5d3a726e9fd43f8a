//! The HTTP edge of the MCP server, met as a hostile or unusual client meets it:
//! which `Host` names it answers, and how many sessions it keeps. Real servers on
//! loopback, raw HTTP requests and the official SDK's client.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolgate::mcp::server::{HttpAccess, McpServer, ServeError, ServeReport};
use toolgate::{Catalog, Gate, Tool, ToolCtx, ToolError, ToolHandler};

// ---- tools -------------------------------------------------------------------

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

fn gate() -> Arc<Gate> {
    Arc::new(Gate::builder(Catalog::new().with_native(Slow).unwrap()).build())
}

// ---- servers and raw requests ------------------------------------------------

/// A server on a loopback address; its URL, and how to stop it.
struct Served {
    url: String,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<Result<ServeReport, ServeError>>>,
}

impl Served {
    async fn on(bind: &str, server: McpServer) -> Served {
        let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(
            server.serve_http(listener, "/mcp", HttpAccess::open(), async {
                let _ = stopped.await;
            }),
        );
        Served {
            url,
            stop: Some(stop),
            server: Some(server),
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
    }
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string()
}

/// A POST to the endpoint with the headers the transport requires.
fn post(client: &reqwest::Client, url: &str, body: String) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body)
}

// ---- Host names --------------------------------------------------------------

#[tokio::test]
async fn a_server_on_another_loopback_address_answers_its_own_address_and_refuses_other_names() {
    let served = Served::on("127.0.0.2:0", McpServer::builder(gate()).build()).await;
    let raw = reqwest::Client::new();

    let response = post(&raw, &served.url, initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());

    // DNS rebinding: a name an attacker controls, pointed at the loopback address.
    let port = served
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let response = post(&raw, &served.url, initialize_body())
        .header("host", format!("rebind.attacker.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);

    // The SDK's client holds a whole session there.
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(served.url.clone()))
            .await
            .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    client.cancel().await.unwrap();
    served.stop().await;
}
