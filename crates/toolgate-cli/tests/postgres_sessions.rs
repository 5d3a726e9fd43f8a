//! One MCP session of a session-based client (protocol 2025-11-25: `initialize`,
//! then `Mcp-Session-Id` on every request) spread over three `toolgate serve
//! --http` instances sharing one PostgreSQL database, as behind a load balancer
//! without sticky sessions: real processes, a real database (the one
//! `TOOLGATE_TEST_POSTGRES` names, a fresh database per test).
//!
//! Without `TOOLGATE_TEST_POSTGRES` the test skips with a message, unless
//! `TOOLGATE_TEST_POSTGRES_REQUIRED` is set (as `scripts/postgres-store` sets it),
//! when it fails.

use serde_json::{Value, json};

mod support;

use support::postgres::{Database, Instance, Site, is_error};

const PROTOCOL: &str = "2025-11-25";

/// Two principals with API keys, and a flow: `refund` only after `verify`, and once.
const SPEC: &str = r#"
principals:
  support: {ceiling: external, scopes: ["*"]}
  intruder: {ceiling: external, scopes: ["*"]}
auth:
  api_keys: {}
state:
  verified: {type: boolean, default: false}
policy:
  rules:
    - {tools: "*", decision: allow, reason: the desk runs at once}
tools:
  - name: verify
    description: Verify the customer.
    effect: write
    response: {verified: true}
    set_state: {verified: true}
  - name: refund
    description: Refund the order.
    effect: write
    response: {refunded: true}
flow:
  constraints:
    - before: {first: verify, then: refund}
    - once: refund
"#;

/// An HTTP status and the JSON-RPC message of an answer (`Null` without one).
struct Answer {
    status: u16,
    session: Option<String>,
    message: Value,
}

impl Answer {
    fn result(&self) -> &Value {
        assert_eq!(self.status, 200, "{}", self.message);
        self.message
            .get("result")
            .unwrap_or_else(|| panic!("no result: {}", self.message))
    }
}

/// POSTs one JSON-RPC message to `url` with `key`, in `session` if given.
async fn post(url: &str, key: &str, session: Option<&str>, message: Value) -> Answer {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {key}"))
        .body(message.to_string());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", PROTOCOL);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap();
    let message = if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| json!({"text": text}))
    };
    Answer {
        status,
        session,
        message,
    }
}

async fn call(url: &str, key: &str, session: &str, id: u64, tool: &str) -> Answer {
    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}}});
    post(url, key, Some(session), message).await
}

async fn delete(url: &str, key: &str, session: &str) -> u16 {
    reqwest::Client::new()
        .delete(url)
        .header("authorization", format!("Bearer {key}"))
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", PROTOCOL)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_session_continues_on_every_instance_bound_to_its_principal_until_deleted() {
    let Some(db) = Database::new("sessions") else {
        return;
    };
    let site = Site::new(db, SPEC);
    let support = site.key("support");
    let intruder = site.key("intruder");
    let instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let [a, b, c] = [0, 1, 2].map(|i| instances[i].url.as_str());

    // initialize on A.
    let opened = post(
        a,
        &support,
        None,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "postgres_sessions", "version": "1"},
        }}),
    )
    .await;
    opened.result();
    let session = opened.session.clone().expect("A gave a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let heard = post(b, &support, Some(&session), initialized).await;
    assert_eq!(heard.status, 202, "B takes the client's `initialized`");

    // Another principal's credential with this session id, on an instance that
    // has not served it yet: refused, and the session stays its opener's.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let stolen = post(c, &intruder, Some(&session), list.clone()).await;
    assert!(
        stolen.message["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("opened with another credential")),
        "C refused the intruder: {} {}",
        stolen.status,
        stolen.message
    );

    // tools/list on B.
    let listed = post(b, &support, Some(&session), list.clone()).await;
    let names: Vec<&str> = listed.result()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"verify"), "B lists the tools: {names:?}");

    // The flow holds across instances: refund waits for verify, then runs once.
    let early = call(c, &support, &session, 2, "refund").await;
    assert!(
        is_error(early.result()),
        "refund before verify on C: {}",
        early.message
    );
    let verified = call(a, &support, &session, 3, "verify").await;
    assert!(
        !is_error(verified.result()),
        "verify on A: {}",
        verified.message
    );
    let refunded = call(b, &support, &session, 4, "refund").await;
    assert!(
        !is_error(refunded.result()),
        "refund on B after verify on A: {}",
        refunded.message
    );
    let again = call(c, &support, &session, 5, "refund").await;
    assert!(
        is_error(again.result()),
        "a second refund on C: {}",
        again.message
    );
    let stolen = call(b, &intruder, &session, 6, "verify").await;
    assert!(
        stolen
            .message
            .to_string()
            .contains("opened with another credential"),
        "B refuses the intruder too: {}",
        stolen.message
    );

    // Every call was in one conversation, whichever instance ran it.
    let out = site
        .command(&["audit", "tail", "-n", "100", "--json"])
        .output()
        .unwrap();
    let records: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let conversations: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r["session"].as_str())
        .collect();
    assert_eq!(
        conversations,
        [format!("mcp-{session}").as_str()].into(),
        "one conversation"
    );
    let principals: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r["principal"].as_str())
        .collect();
    assert_eq!(
        principals,
        ["support"].into(),
        "nothing ran as the intruder"
    );

    // Only its opener may end it; ended on C, it is gone on A and B too.
    assert_eq!(delete(a, &intruder, &session).await, 403);
    assert_eq!(
        post(a, &support, Some(&session), list.clone()).await.status,
        200
    );
    assert_eq!(delete(c, &support, &session).await, 202);
    for (name, url) in [("A", a), ("B", b), ("C", c)] {
        let gone = post(url, &support, Some(&session), list.clone()).await;
        assert_eq!(
            gone.status, 404,
            "{name} after the delete: {}",
            gone.message
        );
    }
}
