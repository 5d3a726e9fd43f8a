//! A code-mode program whose call needs approval, answered in the web console of
//! `toolgate serve --http --console --code-mode`: a real `toolgate` process over
//! loopback, an MCP client that cannot ask its user (so only the console can
//! answer), and the console's own approve and deny forms under its CSRF token.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt, service::RunningService};
use serde_json::{Value, json};
use support::console::{self, Served, csrf, log_in, post, waiting_approval};

mod support;

/// A lookup anyone may run, and a refund policy asks an approver about.
const SPEC: &str = r#"
tools:
  - name: lookup
    description: Look up an order.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string}
      required: [order_id]
    response: {order_id: "{args.order_id}", total: 120}
  - name: refund
    description: Refund an order.
    effect: write
    parameters:
      type: object
      properties:
        order_id: {type: string}
      required: [order_id]
    response: {refunded: true}
policy:
  rules:
    - tools: refund
      decision: ask
      reason: refunds need a person
"#;

/// Refunds an order, and says what became of the refund.
const PROGRAM: &str = r#"
order = lookup(order_id="A-1")
print("refunding", order["order_id"])
try:
    outcome = refund(order_id=order["order_id"])["refunded"]
except PermissionError as e:
    outcome = "refused: " + str(e)
outcome
"#;

/// `toolgate serve --http --console --code-mode EXTRA` over [`SPEC`], once it
/// printed its login link.
fn start(extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    let mut args = vec!["serve", "--http", "127.0.0.1:0", "--console", "--code-mode"];
    args.extend_from_slice(extra);
    console::start(dir, &args)
}

/// A page the console serves (200), under `cookie`.
async fn get(served: &Served, path: &str, cookie: &str) -> String {
    let (status, page) = console::get(served, path, cookie).await;
    assert_eq!(status, 200, "{path}");
    page
}

/// Answers approval `id` (`approve` or `deny`) with the console's form, under the
/// CSRF token its Approvals page carries.
async fn answer(served: &Served, cookie: &str, id: &str, action: &str, reason: &str) {
    let token = csrf(&get(served, "/approvals", cookie).await);
    let path = format!("/approvals/{id}/{action}");
    let status = post(
        served,
        &path,
        cookie,
        &[("csrf", &token), ("reason", reason)],
    )
    .await;
    assert_eq!(status, 303, "{action} {id}");
}

/// An MCP client with a session that cannot ask its user anything.
async fn mcp_client(served: &Served) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", served.base));
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

/// The run a `run_code` or `resume_code` result carries.
fn run_of(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("no run in {result:?}"))
}

#[tokio::test]
async fn a_program_held_at_a_call_needing_approval_goes_on_once_the_console_approves() {
    let served = start(&[]);
    let cookie = log_in(&served).await;
    let client = mcp_client(&served).await;
    let peer = client.peer().clone();
    let running = tokio::spawn(async move {
        peer.call_tool(call("run_code", json!({"code": PROGRAM})))
            .await
    });
    let id = waiting_approval(&served, &cookie).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !running.is_finished(),
        "the program waits in the call for the answer: {:?}",
        running.await
    );
    answer(&served, &cookie, &id, "approve", "").await;
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the program goes on at once")
        .unwrap()
        .unwrap();
    let run = run_of(&result);
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["value"], true, "{run}");
    assert_eq!(run["printed"], "refunding A-1\n", "{run}");
    assert!(run.get("run_id").is_none(), "nothing paused: {run}");
    let audit = get(&served, "/audit?tool=refund&outcome=ok", &cookie).await;
    assert_eq!(
        audit.matches("<td>ok</td>").count(),
        1,
        "the refund ran once: {audit}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_program_paused_when_nobody_answered_in_time_resumes_after_the_console_approves() {
    let served = start(&["--approval-timeout", "1s"]);
    let cookie = log_in(&served).await;
    let client = mcp_client(&served).await;
    let result = client
        .peer()
        .call_tool(call("run_code", json!({"code": PROGRAM})))
        .await
        .unwrap();
    let paused = run_of(&result);
    assert_eq!(paused["status"], "pending_approval", "{paused}");
    let run_id = paused["run_id"].as_str().unwrap().to_owned();
    let approval_id = paused["approval_id"].as_str().unwrap().to_owned();
    assert_eq!(waiting_approval(&served, &cookie).await, approval_id);
    answer(&served, &cookie, &approval_id, "approve", "").await;
    let resumed = client
        .peer()
        .call_tool(call("resume_code", json!({"run_id": run_id})))
        .await
        .unwrap();
    let run = run_of(&resumed);
    assert_eq!(run["status"], "ok", "{run}");
    assert_eq!(run["value"], true, "{run}");
    assert_eq!(run["printed"], "refunding A-1\n", "{run}");
    let audit = get(&served, "/audit?tool=refund&outcome=ok", &cookie).await;
    assert_eq!(
        audit.matches("<td>ok</td>").count(),
        1,
        "the refund ran once: {audit}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_console_denial_raises_permission_error_at_the_program_s_call_site() {
    let served = start(&[]);
    let cookie = log_in(&served).await;
    let client = mcp_client(&served).await;
    let peer = client.peer().clone();
    let running = tokio::spawn(async move {
        peer.call_tool(call("run_code", json!({"code": PROGRAM})))
            .await
    });
    let id = waiting_approval(&served, &cookie).await;
    answer(&served, &cookie, &id, "deny", "not this order").await;
    let result = tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .expect("the program goes on at once")
        .unwrap()
        .unwrap();
    let run = run_of(&result);
    assert_eq!(run["status"], "ok", "the program caught the refusal: {run}");
    let outcome = run["value"].as_str().unwrap_or_else(|| panic!("{run}"));
    assert!(outcome.starts_with("refused: "), "{run}");
    assert!(outcome.contains("not this order"), "{run}");
    let audit = get(&served, "/audit?tool=refund&outcome=ok", &cookie).await;
    assert_eq!(
        audit.matches("<td>ok</td>").count(),
        0,
        "no refund ran: {audit}"
    );
    client.cancel().await.unwrap();
}
