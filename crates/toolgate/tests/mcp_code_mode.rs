//! Code mode served over MCP, driven by the official SDK's client (rmcp) over a
//! pipe: `tools/list` offers `run_code` (its description the caller's stubs) and
//! the always-loaded tools; a `tools/call` of `run_code` runs the program in the
//! caller's conversation, each call in it through the gate; an approval a call in
//! the program needs is asked by elicitation and the program goes on within the
//! same `tools/call`.

#![cfg(all(feature = "mcp", feature = "code-mode"))]

mod support;

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResult, ElicitationAction};
use serde_json::{Value, json};
use support::mcp::{Client, PipeSession, over_pipe};
use toolgate::code_mode::{CodeMode, WorkerCommand};
use toolgate::mcp::server::McpServer;
use toolgate::{
    Catalog, Gate, MemoryGateStore, Principal, spec::SpecSource, store::ApprovalStatus,
    store::ApprovalStore,
};
use toolgate_core::spec::SpecFile;

const SPEC: &str = r#"
principals:
  reader:
    ceiling: read
    scopes: ["*"]
state:
  looked_up:
    type: string
tools:
  - name: lookup_order
    description: Look up an order by its id.
    effect: read
    parameters:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
    returns:
      type: object
      properties: {order_id: {type: string}, status: {type: string}}
    response: {order_id: "{args.order_id}", status: shipped}
    set_state: {looked_up: "{args.order_id}"}
  - name: refund_order
    description: Refund an order.
    effect: external
    parameters:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
    response: {refunded: "{args.order_id}"}
  - name: ping
    description: Check that the desk answers.
    effect: read
    always_loaded: true
    parameters: {type: object, properties: {}}
    response: pong
policy:
  rules:
    - tools: refund_order
      decision: ask
      reason: a person approves refunds
      # The customer at the client confirms their own refund.
      answered_by: client
"#;

fn spec() -> SpecFile {
    let source = SpecSource::from_text("toolgate.yaml", SPEC.to_owned());
    assert!(source.checked.is_ok(), "{}", source.render_diagnostics());
    source.checked.spec.expect("a spec")
}

struct Desk {
    gate: Arc<Gate>,
    store: Arc<MemoryGateStore>,
    spec: SpecFile,
}

fn desk() -> Desk {
    let spec = spec();
    let store = Arc::new(MemoryGateStore::default());
    let gate = Gate::from_spec(&spec, "toolgate.yaml", &Catalog::new(), store.clone()).unwrap();
    Desk {
        gate: Arc::new(gate),
        store,
        spec,
    }
}

fn server(desk: &Desk, principal: Principal) -> McpServer {
    let mode = CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )));
    McpServer::builder(desk.gate.clone())
        .principal(principal)
        .conversation("c1")
        .code_mode(mode, Some(desk.spec.clone()), ["ping".to_owned()])
        .build()
}

async fn run_code(pipe: &PipeSession, code: &str) -> CallToolResult {
    let arguments = json!({"code": code}).as_object().cloned().unwrap();
    pipe.client
        .call_tool(CallToolRequestParams::new("run_code").with_arguments(arguments))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test]
async fn a_code_mode_server_offers_run_code_with_the_callers_stubs_and_the_always_loaded_tools() {
    let desk = desk();
    let pipe = over_pipe(server(&desk, Principal::operator()), Client::default()).await;
    let tools = pipe.client.list_all_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["run_code", "resume_code", "ping"]);
    let description = tools[0].description.as_deref().unwrap_or_default();
    assert!(
        description.contains("def lookup_order(order_id: str) -> dict:"),
        "{description}"
    );
    assert!(description.contains("def refund_order("), "{description}");
    assert!(
        description.contains("A human approves each call."),
        "{description}"
    );
    assert_eq!(tools[0].input_schema["required"], json!(["code"]));

    // A read-only principal's stubs leave out what it may not call.
    let reader = desk.spec.principals["reader"].to_principal("reader");
    let pipe = over_pipe(server(&desk, reader), Client::default()).await;
    let tools = pipe.client.list_all_tools().await.unwrap();
    let description = tools[0].description.as_deref().unwrap_or_default();
    assert!(description.contains("def lookup_order("), "{description}");
    assert!(!description.contains("refund_order"), "{description}");
}

#[tokio::test]
async fn a_program_sent_as_run_code_calls_tools_through_the_gate_in_the_callers_conversation() {
    let desk = desk();
    let pipe = over_pipe(server(&desk, Principal::operator()), Client::default()).await;
    let result = run_code(
        &pipe,
        "orders = [lookup_order(order_id=o)['status'] for o in ['A-1', 'A-2']]\nprint(ping())\norders",
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let said = text(&result);
    assert!(said.contains(r#"["shipped","shipped"]"#), "{said}");
    assert!(said.contains("pong"), "{said}");
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    assert_eq!(
        structured["value"],
        json!(["shipped", "shipped"]),
        "{structured}"
    );
    assert_eq!(desk.gate.state("c1").unwrap()["looked_up"], "A-2");

    let broken = run_code(&pipe, "lookup_order(order_id=)").await;
    assert_eq!(broken.is_error, Some(true));
    assert!(text(&broken).contains("line 1"), "{}", text(&broken));
    let missing = pipe
        .client
        .call_tool(CallToolRequestParams::new("run_code"))
        .await
        .unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert!(text(&missing).contains("`code`"), "{}", text(&missing));
}

#[tokio::test]
async fn an_approval_answered_by_elicitation_lets_the_program_go_on_within_the_same_call() {
    let desk = desk();
    // An accept approves only with the form's `approve: true`.
    let client = Client::answering(ElicitationAction::Accept, Some(json!({"approve": true})));
    let asked = client.asked.clone();
    let pipe = over_pipe(server(&desk, Principal::operator()), client).await;
    let result = run_code(
        &pipe,
        "order = lookup_order(order_id='A-1')\nrefund_order(order_id=order['order_id'])",
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains(r#"{"refunded":"A-1"}"#),
        "{}",
        text(&result)
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("refund_order"), "{asked:?}");
    let approvals = ApprovalStore::list(desk.store.as_ref(), true).unwrap();
    assert_eq!(approvals.len(), 1);
    // The approved call ran once, which used the approval up.
    assert_eq!(approvals[0].status, ApprovalStatus::Consumed);
    assert_eq!(approvals[0].answer, None);
}

#[tokio::test]
async fn an_approval_declined_by_elicitation_raises_permission_error_the_program_handles() {
    let desk = desk();
    let client = Client::answering(ElicitationAction::Decline, None);
    let pipe = over_pipe(server(&desk, Principal::operator()), client).await;
    let code = "\
try:
    refund_order(order_id='A-1')
    done = 'refunded'
except PermissionError as e:
    done = 'refused: ' + str(e)
done";
    let result = run_code(&pipe, code).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert!(text(&result).contains("refused: "), "{}", text(&result));
    let approvals = ApprovalStore::list(desk.store.as_ref(), true).unwrap();
    assert_eq!(approvals[0].status, ApprovalStatus::Consumed);
    assert_eq!(
        approvals[0].answer.as_deref(),
        Some("declined in the MCP client")
    );
}
