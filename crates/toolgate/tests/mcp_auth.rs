//! Callers of `toolgate serve --http` identified by API keys: each request runs as
//! its key's principal, driven by the official SDK's client (rmcp) over streamable
//! HTTP on loopback.

#![cfg(feature = "mcp")]

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::oneshot;
use toolgate::auth::{ApiKeys, HttpAccess, KEYS_FILE, KeyFile};
use toolgate::mcp::server::McpServer;
use toolgate::serve::FrontDoor;
use toolgate::spec::SpecFile;
use toolgate::{Catalog, Gate, MemoryGateStore, Principal, store::AuditLog, tool::Tier};

/// A read tool anyone may use, and a write tool only `ops` reaches.
fn spec() -> SpecFile {
    serde_json::from_value(json!({
        "tools": [
            {"name": "lookup", "description": "Look a record up.", "effect": "read",
             "response": {"found": true}},
            {"name": "update", "description": "Change a record.", "effect": "write",
             "response": {"updated": true}}
        ]
    }))
    .unwrap()
}

fn principals() -> Vec<Principal> {
    vec![
        Principal {
            id: "support_bot".into(),
            ceiling: Tier::Read,
            scopes: vec!["*".into()],
            claims: Default::default(),
        },
        Principal {
            id: "ops".into(),
            ceiling: Tier::External,
            scopes: vec!["*".into()],
            claims: Default::default(),
        },
    ]
}

struct Served {
    url: String,
    keys: KeyFile,
    store: Arc<MemoryGateStore>,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

async fn served() -> Served {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(KEYS_FILE);
    let keys = KeyFile::open(&path).unwrap();
    let store = Arc::new(MemoryGateStore::default());
    let gate = Gate::from_spec(&spec(), "toolgate.yaml", &Catalog::new(), store.clone()).unwrap();
    let server = McpServer::builder(Arc::new(gate))
        .principals(principals())
        .build();
    let access = HttpAccess::open().with_keys(ApiKeys::open(&path).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(FrontDoor::new(server, access).serve(listener, async {
        let _ = stopped.await;
    }));
    Served {
        url,
        keys,
        store,
        _dir: dir,
        _stop: stop,
    }
}

async fn session_client(url: &str, key: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

async fn names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn each_key_s_requests_run_as_its_principal_and_see_its_tools() {
    let mut served = served().await;
    let (_, bot_key) = served.keys.add("support_bot", Some("widget")).unwrap();
    let (_, ops_key) = served.keys.add("ops", None).unwrap();
    let bot = session_client(&served.url, &bot_key).await;
    let ops = session_client(&served.url, &ops_key).await;
    assert_eq!(names(&bot).await, ["lookup"]);
    assert_eq!(names(&ops).await, ["lookup", "update"]);
    ops.call_tool(CallToolRequestParams::new("update"))
        .await
        .unwrap();
    let refused = bot.call_tool(CallToolRequestParams::new("update")).await;
    assert!(refused.is_err(), "outside support_bot's view: {refused:?}");
    let principals: Vec<String> = served
        .store
        .tail(100)
        .unwrap()
        .into_iter()
        .map(|r| r.entry.principal.clone())
        .collect();
    assert!(principals.contains(&"ops".to_owned()), "{principals:?}");
    assert!(
        principals.contains(&"support_bot".to_owned()),
        "{principals:?}"
    );
}

#[tokio::test]
async fn a_stateless_request_runs_as_its_key_s_principal_in_a_conversation_of_its_own() {
    let mut served = served().await;
    let (_, bot_key) = served.keys.add("support_bot", None).unwrap();
    let config =
        StreamableHttpClientTransportConfig::with_uri(served.url.as_str()).auth_header(bot_key);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            lifecycle,
        )
        .await
        .unwrap();
    assert_eq!(names(&client).await, ["lookup"]);
    client
        .call_tool(CallToolRequestParams::new("lookup"))
        .await
        .unwrap();
    let sessions: Vec<String> = served
        .store
        .tail(10)
        .unwrap()
        .into_iter()
        .map(|r| r.entry.session.clone())
        .collect();
    assert!(
        sessions.iter().all(|s| s == "mcp-support_bot-default"),
        "{sessions:?}"
    );
}

async fn post(url: &str, authorization: Option<&str>) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}
    }});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn without_a_live_key_a_request_gets_401_and_a_challenge() {
    let mut served = served().await;
    let (record, key) = served.keys.add("ops", None).unwrap();
    assert_eq!(
        post(&served.url, Some(&format!("Bearer {key}")))
            .await
            .status(),
        200
    );
    for refused in [
        None,
        Some("Bearer tgk_00000000_00"),
        Some("Basic b3BzOm9wcw=="),
    ] {
        let response = post(&served.url, refused).await;
        assert_eq!(response.status(), 401, "{refused:?}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        let text = response.text().await.unwrap();
        assert!(text.contains("toolgate keys add"), "{text}");
    }
    let in_url = post(&format!("{}?access_token={key}", served.url), None).await;
    assert_eq!(in_url.status(), 401);
    assert!(
        in_url
            .text()
            .await
            .unwrap()
            .contains("in the URL is refused")
    );
    served.keys.revoke(&record.id).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        post(&served.url, Some(&format!("Bearer {key}")))
            .await
            .status(),
        401,
        "revoked"
    );
}

#[tokio::test]
async fn a_session_opened_with_one_key_refuses_another() {
    let mut served = served().await;
    let (_, ops_key) = served.keys.add("ops", None).unwrap();
    let (_, bot_key) = served.keys.add("support_bot", None).unwrap();
    let opened = post(&served.url, Some(&format!("Bearer {ops_key}"))).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let http = reqwest::Client::new();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let done = http
        .post(&served.url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {ops_key}"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&initialized)
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let hijack = http
        .post(&served.url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {bot_key}"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&list)
        .send()
        .await
        .unwrap();
    let text = hijack.text().await.unwrap();
    assert!(text.contains("opened with another credential"), "{text}");
    assert!(!text.contains("update"), "{text}");
}

#[tokio::test]
async fn a_flood_of_sessions_with_one_key_never_ends_another_key_s_session_from_the_same_address() {
    let mut served = served().await;
    let (_, ops_key) = served.keys.add("ops", None).unwrap();
    let (_, bot_key) = served.keys.add("support_bot", None).unwrap();
    let ops = session_client(&served.url, &ops_key).await;
    assert!(names(&ops).await.contains(&"update".to_owned()));
    // More than the 64 sessions one client may hold, all from 127.0.0.1.
    for _ in 0..70 {
        let opened = post(&served.url, Some(&format!("Bearer {bot_key}"))).await;
        assert_eq!(opened.status(), 200);
    }
    assert!(
        names(&ops).await.contains(&"update".to_owned()),
        "the ops key's session and its conversation are still there"
    );
    let _ = ops.cancel().await;
}
