//! The HTTP edge of the MCP server, met as a hostile or unusual client meets it:
//! which `Host` names and `Origin`s it answers, and how many sessions it keeps. Real servers on
//! loopback, raw HTTP requests and the official SDK's client.

#![cfg(feature = "mcp")]

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use toolgate::auth::OAuth;
use toolgate::auth::{AccessError, HttpAccess};
use toolgate::mcp::server::{McpServer, ServeError, ServeOptions, ServeReport, SessionLimits};
use toolgate::serve::FrontDoor;
use toolgate::spec::OAuthSection;
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
        let server = tokio::spawn(FrontDoor::new(server, HttpAccess::open()).serve(
            listener,
            async {
                let _ = stopped.await;
            },
        ));
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

/// A server on 127.0.0.1 taking OAuth tokens (so it serves the metadata routes),
/// with `access` adding names; its base URL (`http://127.0.0.1:PORT`).
async fn guarded(access: HttpAccess) -> (String, oneshot::Sender<()>) {
    let dir = std::env::temp_dir();
    let section = OAuthSection {
        issuer: "https://auth.example.test".into(),
        audience: "https://tools.example.test/mcp".into(),
        jwks: "no-such-jwks.json".into(),
        ..OAuthSection::default()
    };
    let oauth = OAuth::new(&section, [], &dir).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(
        FrontDoor::new(McpServer::builder(gate()).build(), access.with_oauth(oauth)).serve(
            listener,
            async {
                let _ = stopped.await;
            },
        ),
    );
    (base, stop)
}

/// The status and body of a request to `route` (the MCP endpoint gets an
/// `initialize`, a metadata route a GET) with these extra headers.
async fn probe(base: &str, route: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let raw = reqwest::Client::new();
    let url = format!("{base}{route}");
    let mut request = if route == "/mcp" {
        post(&raw, &url, initialize_body())
    } else {
        raw.get(&url)
    };
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

const ROUTES: [&str; 3] = [
    "/mcp",
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
];

#[tokio::test]
async fn every_route_refuses_a_forged_host_or_a_foreign_origin_before_asking_for_a_credential() {
    let (base, _stop) = guarded(HttpAccess::open()).await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let rebound = format!("rebind.attacker.example:{port}");
    let other_port = "127.0.0.1:1".to_owned();
    for route in ROUTES {
        // What the route answers a request that passes: 401 for the endpoint
        // (no token), the document for the metadata.
        let passes = if route == "/mcp" { 401 } else { 200 };
        for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
            assert_eq!(
                probe(&base, route, &[("host", &host)]).await.0,
                passes,
                "{route} {host}"
            );
        }
        for host in [&rebound, &other_port, &"localhost".to_owned()] {
            let (status, body) = probe(&base, route, &[("host", host)]).await;
            assert_eq!(status, 403, "{route} {host}");
            assert!(
                body.contains("DNS rebinding") && body.contains("--allowed-host"),
                "{body}"
            );
        }
        for own in [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
        ] {
            assert_eq!(
                probe(&base, route, &[("origin", &own)]).await.0,
                passes,
                "{route} {own}"
            );
        }
        for foreign in [
            "https://evil.example",
            "null",
            &format!("https://localhost:{port}"),
            "http://localhost:3000",
            "not an origin",
        ] {
            let (status, body) = probe(&base, route, &[("origin", foreign)]).await;
            assert_eq!(status, 403, "{route} {foreign}");
            assert!(body.contains("--allowed-origin"), "{body}");
        }
        // A rebound name with its own origin: the Host check catches it.
        let (status, _) = probe(
            &base,
            route,
            &[("host", &rebound), ("origin", &format!("http://{rebound}"))],
        )
        .await;
        assert_eq!(status, 403, "{route}");
    }
}

#[tokio::test]
async fn allowed_hosts_and_origins_are_answered_and_nothing_more() {
    let access = HttpAccess::open()
        .allow_host("tools.example.test")
        .unwrap()
        .allow_host("proxy.example.test:8443")
        .unwrap()
        .allow_origin("https://app.example.test")
        .unwrap();
    let (base, _stop) = guarded(access).await;
    for route in ROUTES {
        let passes = if route == "/mcp" { 401 } else { 200 };
        for host in [
            "tools.example.test",
            "tools.example.test:443",
            "proxy.example.test:8443",
        ] {
            assert_eq!(
                probe(&base, route, &[("host", host)]).await.0,
                passes,
                "{route} {host}"
            );
        }
        assert_eq!(
            probe(&base, route, &[("host", "proxy.example.test")])
                .await
                .0,
            403
        );
        assert_eq!(
            probe(&base, route, &[("origin", "https://app.example.test")])
                .await
                .0,
            passes
        );
        for origin in [
            "https://app.example.test:8443",
            "http://app.example.test",
            "https://evil.example",
        ] {
            assert_eq!(
                probe(&base, route, &[("origin", origin)]).await.0,
                403,
                "{route} {origin}"
            );
        }
    }
}

#[tokio::test]
async fn an_allowed_origin_gets_the_cors_answers_a_browser_needs() {
    let app = "https://app.example.test";
    let access = HttpAccess::open().allow_origin(app).unwrap();
    let (base, _stop) = guarded(access).await;
    let raw = reqwest::Client::new();
    let preflight = |origin: &'static str| {
        raw.request(reqwest::Method::OPTIONS, format!("{base}/mcp"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type, mcp-session-id",
            )
            .send()
    };
    let answer = preflight(app).await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let headers = answer.headers();
    assert_eq!(headers["access-control-allow-origin"], app);
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    assert!(
        methods.contains("POST") && methods.contains("DELETE"),
        "{methods}"
    );
    let allowed = headers["access-control-allow-headers"].to_str().unwrap();
    assert!(
        allowed.contains("authorization") && allowed.contains("mcp-session-id"),
        "{allowed}"
    );
    assert_eq!(
        preflight("https://evil.example").await.unwrap().status(),
        403
    );

    // The reply itself, a 401 here, shows the page its challenge.
    let reply = post(&raw, &format!("{base}/mcp"), initialize_body())
        .header("origin", app)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 401);
    assert_eq!(reply.headers()["access-control-allow-origin"], app);
    let exposed = reply.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap();
    assert!(
        exposed.contains("mcp-session-id") && exposed.contains("www-authenticate"),
        "{exposed}"
    );
}

#[test]
fn a_malformed_allowed_host_or_origin_is_an_error_saying_what_to_give() {
    let host = HttpAccess::open()
        .allow_host("http://tools.example.test/")
        .unwrap_err();
    assert!(matches!(host, AccessError::BadAllowedHost { .. }), "{host}");
    assert!(
        host.to_string().contains("tools.example.com:8443"),
        "{host}"
    );
    let origin = HttpAccess::open()
        .allow_origin("app.example.test")
        .unwrap_err();
    assert!(
        matches!(origin, AccessError::BadAllowedOrigin { .. }),
        "{origin}"
    );
}

// ---- sessions ----------------------------------------------------------------

fn limited(max_sessions: usize, max_per_client: usize) -> McpServer {
    McpServer::builder(gate())
        .options(ServeOptions {
            sessions: SessionLimits {
                max_sessions,
                max_per_client,
                ..SessionLimits::default()
            },
            ..ServeOptions::default()
        })
        .build()
}

/// A raw HTTP client whose connections come from `source` (any 127.0.0.0/8 address).
fn raw_from(source: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(source.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// Sends `initialize`; the response's status, session id and body.
async fn initialize(raw: &reqwest::Client, url: &str) -> (u16, Option<String>, String) {
    let response = post(raw, url, initialize_body()).send().await.unwrap();
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, id, response.text().await.unwrap())
}

/// A POST within session `id`.
fn within(raw: &reqwest::Client, url: &str, id: &str, body: Value) -> reqwest::RequestBuilder {
    post(raw, url, body.to_string())
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25")
}

/// An initialized session's id.
async fn open_session(raw: &reqwest::Client, url: &str) -> String {
    let (status, id, body) = initialize(raw, url).await;
    assert_eq!(status, 200, "{body}");
    let id = id.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = within(raw, url, &id, initialized).send().await.unwrap();
    assert_eq!(response.status(), 202);
    id
}

/// Whether session `id` still answers a ping (else the server says 404).
async fn answers(raw: &reqwest::Client, url: &str, id: &str) -> bool {
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let response = within(raw, url, id, ping).send().await.unwrap();
    match response.status().as_u16() {
        200 => true,
        404 => false,
        other => panic!("a ping got {other}: {}", response.text().await.unwrap()),
    }
}

#[tokio::test]
async fn a_flood_of_initialize_requests_keeps_the_live_sessions_at_the_cap() {
    const FLOOD: usize = 2000;
    const PER_CLIENT: usize = 8;
    let server = limited(64, PER_CLIENT);
    let served = Served::on("127.0.0.1:0", server.clone()).await;
    let raw = reqwest::Client::new();
    let first = open_session(&raw, &served.url).await;

    let flood = async {
        let mut most = 0;
        let mut ids = Vec::new();
        for _ in 0..FLOOD / 4 {
            let batch = futures::future::join_all((0..4).map(|_| initialize(&raw, &served.url)));
            for (status, id, body) in batch.await {
                assert_eq!(status, 200, "{body}");
                ids.push(id.unwrap());
            }
            most = most.max(server.live_sessions());
        }
        (most, ids)
    };
    let (most, ids) = tokio::time::timeout(Duration::from_secs(120), flood)
        .await
        .expect("the flood is answered in time");
    assert_eq!(ids.len(), FLOOD);
    assert!(most <= PER_CLIENT, "{most} sessions were live at once");
    assert_eq!(server.live_sessions(), PER_CLIENT);
    assert!(!answers(&raw, &served.url, &first).await, "the oldest went");
    assert!(answers(&raw, &served.url, ids.last().unwrap()).await);
    served.stop().await;
}

#[tokio::test]
async fn sessions_with_a_call_in_flight_stay_and_a_full_server_answers_503_with_a_json_rpc_error() {
    let served = Served::on("127.0.0.1:0", limited(64, 2)).await;
    let raw = reqwest::Client::new();
    let mut running = Vec::new();
    for _ in 0..2 {
        let id = open_session(&raw, &served.url).await;
        let slow = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"millis": 1500}}});
        let response = within(&raw, &served.url, &id, slow).send().await.unwrap();
        assert_eq!(response.status(), 200);
        running.push((id, response));
    }

    let response = post(&raw, &served.url, initialize_body())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["id"], 1, "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("session limit"), "{message}");
    assert!(message.contains("retry"), "{message}");

    // Once the calls are answered, the sessions are idle and give way.
    for (id, response) in running {
        assert!(response.text().await.unwrap().contains("done"));
        assert!(answers(&raw, &served.url, &id).await);
    }
    let (status, _, body) = initialize(&raw, &served.url).await;
    assert_eq!(status, 200, "{body}");
    served.stop().await;
}

#[tokio::test]
async fn over_the_overall_cap_the_client_holding_the_most_sessions_gives_way() {
    let server = limited(4, 3);
    let served = Served::on("127.0.0.1:0", server.clone()).await;
    let (small, large, newcomer) = (
        raw_from("127.0.0.2"),
        raw_from("127.0.0.1"),
        raw_from("127.0.0.3"),
    );
    let kept = open_session(&small, &served.url).await;
    let mut crowd = Vec::new();
    for _ in 0..3 {
        crowd.push(open_session(&large, &served.url).await);
    }
    open_session(&newcomer, &served.url).await;
    assert_eq!(server.live_sessions(), 4);
    assert!(answers(&small, &served.url, &kept).await);
    assert!(!answers(&large, &served.url, &crowd[0]).await);
    assert!(answers(&large, &served.url, &crowd[2]).await);
    served.stop().await;
}

// ---- SEP-2243 parameter headers ----------------------------------------------

/// Name the region a request is for.
#[derive(Tool)]
#[tool(effect = "read")]
struct Regional;

#[derive(Deserialize, JsonSchema)]
struct InRegion {
    /// The region; clients send it as the `Mcp-Param-Region` header too.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

impl ToolHandler for Regional {
    type Input = InRegion;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, r: InRegion) -> Result<String, ToolError> {
        Ok(r.region)
    }
}

/// A 2026-07-28 `tools/call` of `regional` for `region`, with `Mcp-Param-Region: header`.
async fn call_in_region(url: &str, region: &str, header: &str) -> (u16, Value) {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "regional", "arguments": {"region": region}, "_meta": meta}});
    let response = post(&reqwest::Client::new(), url, body.to_string())
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "regional")
        .header("mcp-param-region", header)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    // A JSON body, or the one `data:` event of a stream.
    let json = text
        .lines()
        .find_map(|line| line.strip_prefix("data:"))
        .unwrap_or(&text);
    (
        status,
        serde_json::from_str(json.trim()).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_parameter_header_that_contradicts_the_arguments_is_refused() {
    let gate = Arc::new(Gate::builder(Catalog::new().with_native(Regional).unwrap()).build());
    let served = Served::on("127.0.0.1:0", McpServer::builder(gate).build()).await;
    let (status, answer) = call_in_region(&served.url, "eu", "eu").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "eu", "{answer}");
    let (status, answer) = call_in_region(&served.url, "eu", "us").await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32020, "{answer}");
    served.stop().await;
}
