//! A principal's view: the tools within its tier ceiling and scopes. A tool
//! outside it does not exist for that principal — a call is refused exactly as a
//! call to a name no tool has, before its arguments or the flow are looked at,
//! and its name is never suggested. A tool in view that the policy denies is
//! refused with the policy's reason, also before arguments and flow.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Decision, Gate, Outcome, Principal, Tier, Tool, ToolCall, ToolCtx, ToolError,
    ToolHandler,
};

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct OrderId {
    order_id: String,
}

impl ToolHandler for LookupOrder {
    type Input = OrderId;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _q: OrderId) -> Result<String, ToolError> {
        Ok("delivered".into())
    }
}

/// Look up the orders of a customer.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrders;

impl ToolHandler for LookupOrders {
    type Input = OrderId;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _q: OrderId) -> Result<String, ToolError> {
        Ok("two orders".into())
    }
}

/// Refund an order.
#[derive(Tool)]
#[tool(effect = "external")]
struct RefundOrder;

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Refund {
    order_id: String,
    /// At most 10 000.
    #[schemars(range(max = 10000))]
    amount_cents: u64,
}

impl ToolHandler for RefundOrder {
    type Input = Refund;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _r: Refund) -> Result<String, ToolError> {
        Ok("refunded".into())
    }
}

/// Refunds only after `lookup_order`, once; `lookup_orders` is denied by a rule.
const SPEC: &str = r#"
tools: []
policy:
  effects: {read: allow, idempotent: allow, write: allow, execute: allow, destructive: allow, external: allow}
  rules:
    - {tools: lookup_orders, decision: deny, reason: customers' order lists stay with the staff}
flow:
  steps:
    - id: look
      allow: [lookup_order]
      done: {called_ok: lookup_order}
    - id: refund
      after: [look]
      allow: [refund_order]
  constraints:
    - once: refund_order
"#;

fn gate() -> Gate {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    let spec: SpecFile = serde_json::from_value(doc.value).unwrap();
    let catalog = Catalog::new()
        .with_native(LookupOrder)
        .unwrap()
        .with_native(LookupOrders)
        .unwrap()
        .with_native(RefundOrder)
        .unwrap();
    Gate::builder(catalog).spec(&spec).build()
}

/// May read, and knows of `lookup_order` and `lookup_orders` only.
fn reader() -> Principal {
    Principal {
        id: "reader".into(),
        ceiling: Tier::External,
        scopes: vec!["lookup_order".into(), "lookup_orders".into()],
    }
}

/// Reaches every tool by scope, but only up to the read tier.
fn low_ceiling() -> Principal {
    Principal {
        id: "low".into(),
        ceiling: Tier::Read,
        scopes: vec!["*".into()],
    }
}

async fn call(gate: &Gate, principal: &Principal, tool: &str, args: Value) -> Outcome {
    gate.call("s", ToolCall::new("c1", tool, args), principal)
        .await
}

fn message(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Error { message, .. } => message.clone(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tool_outside_the_view_is_refused_exactly_as_a_name_no_tool_has() {
    let gate = gate();
    for principal in [reader(), low_ceiling()] {
        // Arguments that break its rules, in a conversation whose flow blocks it.
        let bad = json!({"order_id": 7, "amount_cents": 99999});
        let hidden = call(&gate, &principal, "refund_order", bad.clone()).await;
        let missing = call(&gate, &principal, "refund_ordex", bad).await;
        assert_eq!(message(&hidden), "no tool is named `refund_order`");
        assert_eq!(
            message(&hidden).replace("refund_order", "refund_ordex"),
            message(&missing)
        );
        assert_eq!(
            format!("{hidden:?}").replace("refund_order", "refund_ordex"),
            format!("{missing:?}")
        );
    }
}

#[tokio::test]
async fn did_you_mean_names_only_tools_the_principal_may_use() {
    let gate = gate();
    let outcome = call(&gate, &Principal::operator(), "refund_ordr", json!({})).await;
    assert!(
        message(&outcome).contains("did you mean `refund_order`?"),
        "{outcome:?}"
    );
    let outcome = call(&gate, &reader(), "refund_ordr", json!({})).await;
    assert_eq!(message(&outcome), "no tool is named `refund_ordr`");
    // A tool in view but denied it by the policy is not suggested either.
    let outcome = call(&gate, &reader(), "lookup_ordrs", json!({})).await;
    let text = message(&outcome);
    assert!(text.contains("`lookup_order`"), "{text}");
    assert!(!text.contains("`lookup_orders`"), "{text}");
}

#[tokio::test]
async fn a_tool_the_policy_denies_is_refused_before_its_arguments_or_the_flow() {
    let gate = gate();
    let outcome = call(&gate, &reader(), "lookup_orders", json!({"order_id": 7})).await;
    match outcome {
        Outcome::Denied { reason } => {
            assert_eq!(reason, "customers' order lists stay with the staff")
        }
        other => panic!("expected a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn the_operator_still_learns_why_from_the_audit_log() {
    let gate = gate();
    call(&gate, &reader(), "refund_order", json!({})).await;
    let record = gate.store().tail(1).unwrap().pop().unwrap().entry;
    assert_eq!(record.outcome.as_deref(), Some("unknown_tool"));
    assert_eq!(record.decision, Some(Decision::Deny));
    assert_eq!(
        record.reason.as_deref(),
        Some("`refund_order` is outside the scopes of reader")
    );
}

#[tokio::test]
async fn a_tool_in_view_still_gets_its_argument_rules_and_flow() {
    let gate = gate();
    let operator = Principal::operator();
    let blocked = call(
        &gate,
        &operator,
        "refund_order",
        json!({"order_id": "A-1", "amount_cents": 100}),
    )
    .await;
    assert!(matches!(blocked, Outcome::Denied { .. }), "{blocked:?}");
    let invalid = call(&gate, &operator, "lookup_order", json!({"order_id": 7})).await;
    assert!(message(&invalid).contains("are invalid"), "{invalid:?}");
}
