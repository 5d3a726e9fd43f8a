//! Spec tools at run time: mocks, precedence of bindings, and state effects.

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, MemoryGateStore, Outcome, Principal, Tool, ToolCall, ToolCtx, ToolError,
    ToolHandler, store::StateStore,
};

const SPEC: &str = r#"
tools:
  - name: verify_customer
    description: Verify the customer.
    effect: read
    parameters:
      type: object
      properties:
        email: {type: string}
      required: [email]
    response: {verified: true, email: "{args.email}"}
    set_state: {customer_verified: true, customer_email: "{args.email}"}
  - name: lookup_order
    description: Look up an order.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string}
    response: {order_id: "{args.order_id}", owner: "{state.customer_email}"}
    save_response_as: last_order
  - name: fetch_rates
    description: Fetch exchange rates.
    effect: read
    http: {url: "http://192.0.2.10/latest"}
state:
  customer_verified: {type: boolean, default: false}
  customer_email: {type: string}
  last_order: {type: object}
"#;

fn spec() -> SpecFile {
    let checked = toolgate::spec::check(SPEC);
    assert!(checked.is_ok(), "{:?}", checked.diagnostics);
    checked.spec.unwrap()
}

fn gate_with(natives: &Catalog) -> (Gate, Arc<MemoryGateStore>) {
    let store = Arc::new(MemoryGateStore::default());
    (
        Gate::from_spec(&spec(), "test.yaml", natives, store.clone()).unwrap(),
        store,
    )
}

/// The value of a call that ran, or the outcome of one that did not.
async fn call(gate: &Gate, name: &str, args: Value) -> Result<Value, Outcome> {
    match gate
        .call(
            "s1",
            ToolCall::new("c1", name, args),
            &Principal::operator(),
        )
        .await
    {
        Outcome::Ok { value, .. } => Ok(value),
        other => Err(other),
    }
}

fn error_message(outcome: Outcome) -> String {
    match outcome {
        Outcome::Error { message, .. } => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_mock_returns_its_response_with_arguments_and_state_filled_in() {
    let (gate, _) = gate_with(&Catalog::new());
    call(
        &gate,
        "verify_customer",
        json!({"email": "ada@example.com"}),
    )
    .await
    .unwrap();
    let order = call(&gate, "lookup_order", json!({"order_id": "A-1"}))
        .await
        .unwrap();
    assert_eq!(
        order,
        json!({"order_id": "A-1", "owner": "ada@example.com"})
    );
}

#[tokio::test]
async fn state_effects_are_applied_after_the_tool_succeeds() {
    let (gate, store) = gate_with(&Catalog::new());
    assert_eq!(
        gate.state("s1").unwrap()["customer_verified"],
        json!(false),
        "declared default"
    );
    call(
        &gate,
        "verify_customer",
        json!({"email": "ada@example.com"}),
    )
    .await
    .unwrap();
    call(&gate, "lookup_order", json!({"order_id": "A-1"}))
        .await
        .unwrap();
    let state = gate.state("s1").unwrap();
    assert_eq!(state["customer_verified"], json!(true));
    assert_eq!(state["customer_email"], json!("ada@example.com"));
    assert_eq!(state["last_order"]["order_id"], json!("A-1"));
    assert!(
        store.load("s2").unwrap().is_empty(),
        "other conversations are untouched"
    );
}

#[tokio::test]
async fn invalid_arguments_run_nothing_and_latch_nothing() {
    let (gate, store) = gate_with(&Catalog::new());
    let message = error_message(
        call(&gate, "verify_customer", json!({"mail": "x"}))
            .await
            .unwrap_err(),
    );
    assert!(
        message.starts_with("the arguments for `verify_customer` are invalid; nothing ran"),
        "{message}"
    );
    assert!(message.contains("[required]"), "{message}");
    assert!(store.load("s1").unwrap().is_empty());
}

/// Verifies customers against the real directory.
#[derive(Tool)]
#[tool(name = "verify_customer", effect = "read")]
struct RealVerify;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct VerifyInput {
    email: String,
}

impl ToolHandler for RealVerify {
    type Input = VerifyInput;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, input: VerifyInput) -> Result<Value, ToolError> {
        if input.email.ends_with("@example.com") {
            Ok(json!({"verified": true, "by": "directory"}))
        } else {
            Err(ToolError::permanent("unknown customer"))
        }
    }
}

#[tokio::test]
async fn a_native_tool_under_the_same_name_runs_instead_of_the_mock_and_state_effects_still_apply()
{
    let natives = Catalog::new().with_native(RealVerify).unwrap();
    let (gate, _) = gate_with(&natives);
    let out = call(
        &gate,
        "verify_customer",
        json!({"email": "ada@example.com"}),
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"verified": true, "by": "directory"}));
    assert_eq!(gate.state("s1").unwrap()["customer_verified"], json!(true));
    let descriptor = gate.catalog().get("verify_customer").unwrap().descriptor();
    assert_eq!(
        descriptor.description, "Verify the customer.",
        "the model still sees the declaration"
    );
}

#[tokio::test]
async fn a_failed_call_latches_nothing() {
    let natives = Catalog::new().with_native(RealVerify).unwrap();
    let (gate, _) = gate_with(&natives);
    let err = call(&gate, "verify_customer", json!({"email": "eve@evil.test"}))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Outcome::Error {
            message: "`verify_customer` failed: unknown customer".into(),
            retryable: false
        }
    );
    assert_eq!(gate.state("s1").unwrap()["customer_verified"], json!(false));
}

#[tokio::test]
async fn an_http_binding_runs_instead_of_the_mock_under_the_network_policy() {
    let (gate, _) = gate_with(&Catalog::new());
    // 192.0.2.10 is a documentation address: refused before any connection.
    let message = error_message(call(&gate, "fetch_rates", json!({})).await.unwrap_err());
    assert!(
        message.contains(
            "refused before connecting: 192.0.2.10 is an address reserved for documentation"
        ),
        "{message}"
    );
}
