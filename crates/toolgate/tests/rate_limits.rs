//! Rate limits (`limits.rate`): a call over a limit is refused before it runs,
//! says when to try again, is audited as `rate_limited`, and a limit of N calls
//! lets exactly N through however many callers race for them.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{Catalog, Gate, MemoryGateStore, Outcome, Principal, ToolCall, store::AuditLog};

fn spec(rate: Value) -> SpecFile {
    serde_json::from_value(json!({
        "tools": [
            {"name": "lookup", "description": "Look a record up.", "effect": "read",
             "response": {"found": true}},
            {"name": "other", "description": "Something else.", "effect": "read",
             "response": {"ok": true}}
        ],
        "limits": {"rate": rate}
    }))
    .unwrap()
}

fn gate(rate: Value) -> (Arc<Gate>, Arc<MemoryGateStore>) {
    let store = Arc::new(MemoryGateStore::default());
    let gate =
        Gate::from_spec(&spec(rate), "toolgate.yaml", &Catalog::new(), store.clone()).unwrap();
    (Arc::new(gate), store)
}

fn lookup(id: usize) -> ToolCall {
    ToolCall::new(format!("c{id}"), "lookup", json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn eight_tasks_hammering_one_gate_get_exactly_the_calls_a_window_allows() {
    let (gate, store) =
        gate(json!([{"principal": "*", "tool": "lookup", "calls": 25, "per": "1h"}]));
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let gate = gate.clone();
            tokio::spawn(async move {
                let mut ran = 0;
                for i in 0..20 {
                    let outcome = gate
                        .call("s", lookup(task * 100 + i), &Principal::operator())
                        .await;
                    match outcome {
                        Outcome::Ok { .. } => ran += 1,
                        Outcome::RateLimited { .. } => {}
                        other => panic!("{other:?}"),
                    }
                }
                ran
            })
        })
        .collect();
    let mut ran = 0;
    for task in tasks {
        ran += task.await.unwrap();
    }
    assert_eq!(ran, 25, "exactly the 25 calls an hour allows");
    let records = store.tail(1000).unwrap();
    let limited = records
        .iter()
        .filter(|r| r.entry.outcome.as_deref() == Some("rate_limited"))
        .count();
    assert_eq!(
        limited,
        160 - 25,
        "every refusal is audited as rate_limited"
    );
    // Another principal's own count, and another tool, are untouched.
    let other = Principal {
        id: "other".into(),
        ..Principal::operator()
    };
    assert!(gate.call("s", lookup(0), &other).await.is_ok());
    assert!(
        gate.call(
            "s",
            ToolCall::new("x", "other", json!({})),
            &Principal::operator()
        )
        .await
        .is_ok()
    );
}

#[tokio::test]
async fn a_refused_call_says_when_to_retry_and_runs_once_the_window_allows() {
    let (gate, store) = gate(json!([{"calls": 1, "per": "1s"}]));
    let operator = Principal::operator();
    assert!(gate.call("s", lookup(1), &operator).await.is_ok());
    let refused = gate.call("s", lookup(2), &operator).await;
    let Outcome::RateLimited {
        limit,
        retry_after_ms,
    } = &refused
    else {
        panic!("{refused:?}")
    };
    assert_eq!(limit, "all calls: 1 per 1s");
    assert!((1..=1000).contains(retry_after_ms), "{retry_after_ms}");
    assert_eq!(
        refused.message_for_model(),
        "this call was not run: a rate limit lets no more through now (all calls: 1 per 1s). \
         Call again in 1 s or later."
    );
    let record = store.tail(1).unwrap().remove(0);
    assert_eq!(record.entry.outcome.as_deref(), Some("rate_limited"));
    assert_eq!(record.entry.call_id, "c2");
    tokio::time::sleep(Duration::from_millis(*retry_after_ms)).await;
    assert!(gate.call("s", lookup(3), &operator).await.is_ok());
}

#[tokio::test]
async fn a_call_refused_for_another_reason_spends_nothing() {
    let (gate, _) = gate(json!([{"calls": 1, "per": "1h"}]));
    let operator = Principal::operator();
    let invalid = gate
        .call(
            "s",
            ToolCall::new("c1", "lookup", json!("not an object")),
            &operator,
        )
        .await;
    assert!(matches!(invalid, Outcome::Error { .. }), "{invalid:?}");
    let unknown = gate
        .call("s", ToolCall::new("c2", "lokup", json!({})), &operator)
        .await;
    assert!(matches!(unknown, Outcome::Error { .. }), "{unknown:?}");
    assert!(gate.call("s", lookup(3), &operator).await.is_ok());
    assert!(matches!(
        gate.call("s", lookup(4), &operator).await,
        Outcome::RateLimited { .. }
    ));
}

/// A stateless (2026-07-28) `tools/call` is the one call: refused by a limit,
/// the whole request is refused with 429 and `Retry-After`.
#[cfg(feature = "mcp")]
#[tokio::test]
async fn a_stateless_call_refused_by_a_limit_is_answered_429_with_retry_after() {
    use toolgate::auth::HttpAccess;
    use toolgate::mcp::server::McpServer;
    use toolgate::serve::FrontDoor;
    let (gate, _) = gate(json!([{"tool": "lookup", "calls": 1, "per": "1h"}]));
    let server = McpServer::builder(gate).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(
        FrontDoor::new(server, HttpAccess::open()).serve(listener, async {
            let _ = stopped.await;
        }),
    );
    let post = |id: u32| {
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "lookup", "arguments": {}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }}
        });
        reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "lookup")
            .json(&body)
            .send()
    };
    let first = post(1).await.unwrap();
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("retry-after").is_none());
    let refused = post(2).await.unwrap();
    assert_eq!(refused.status(), 429);
    let seconds: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3590..=3600).contains(&seconds), "{seconds}");
    let body = refused.text().await.unwrap();
    assert!(
        body.contains("rate limit") && body.contains("Call again in"),
        "{body}"
    );
}
