//! A principal's view: the tools within its tier ceiling and scopes. A tool
//! outside it does not exist for that principal — a call is refused exactly as a
//! call to a name no tool has, before its arguments or the flow are looked at,
//! and its name is never suggested. A tool in view that the policy denies is
//! refused with the policy's reason, also before arguments and flow.
//!
//! Nor does anything else a model reads name such a tool: a flow's reasons for a
//! tool in view ("blocked until a step you cannot take has been done"), the
//! planner digest, the tools offered and `search_tools` results. The audit record
//! keeps the full reason for the operator.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::flow::FlowVisibility;
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Decision, Gate, Outcome, Principal, Tool, ToolCall, ToolCtx, ToolError, ToolHandler,
    search::SearchTools, tool::Tier,
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
        claims: Default::default(),
    }
}

/// Reaches every tool by scope, but only up to the read tier.
fn low_ceiling() -> Principal {
    Principal {
        id: "low".into(),
        ceiling: Tier::Read,
        scopes: vec!["*".into()],
        claims: Default::default(),
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
        Some(
            "`refund_order` is outside the scopes of reader (decided by principals.reader.scopes)"
        )
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

/// A flow whose rules for tools in a principal's view depend on tools outside it:
/// refunds after `lookup_order`; `lookup_orders` only after a refund; and
/// `lookup_order` required before the conversation ends.
const DEPENDS: &str = r#"
tools: []
policy:
  effects: {read: allow, idempotent: allow, write: allow, execute: allow, destructive: allow, external: allow}
flow:
  constraints:
    - before: {first: lookup_order, then: refund_order}
    - never_until: {tool: lookup_orders, until: {called_ok: refund_order}}
    - require: {tool: lookup_order, when: always}
"#;

/// [`DEPENDS`] over the three tools and `search_tools`, blocked tools marked.
fn depending_gate() -> Gate {
    let doc = toolgate::spec::Document::parse(DEPENDS).unwrap();
    let spec: SpecFile = serde_json::from_value(doc.value).unwrap();
    let mut catalog = Catalog::new()
        .with_native(LookupOrder)
        .unwrap()
        .with_native(LookupOrders)
        .unwrap()
        .with_native(RefundOrder)
        .unwrap();
    SearchTools::register_in(&mut catalog).unwrap();
    Gate::builder(catalog)
        .spec(&spec)
        .flow_visibility(FlowVisibility::Mark)
        .build()
}

/// May refund and search, and knows of no lookup tool: the tool refunds wait
/// for is outside its scopes.
fn clerk() -> Principal {
    Principal {
        id: "clerk".into(),
        ceiling: Tier::External,
        scopes: vec!["refund_order".into(), "search_tools".into()],
        claims: Default::default(),
    }
}

/// Sees every tool up to the read tier: the refund `lookup_orders` waits for
/// is above its ceiling.
fn browser() -> Principal {
    Principal {
        id: "browser".into(),
        ceiling: Tier::Read,
        scopes: vec!["*".into()],
        claims: Default::default(),
    }
}

fn denial(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Denied { reason } => reason.clone(),
        other => panic!("expected a denial, got {other:?}"),
    }
}

fn refund() -> Value {
    json!({"order_id": "A-1", "amount_cents": 100})
}

#[tokio::test]
async fn a_flow_refusal_names_no_tool_outside_the_view() {
    let gate = depending_gate();
    let outcome = call(&gate, &clerk(), "refund_order", refund()).await;
    assert_eq!(
        denial(&outcome),
        "refund_order is blocked until a step you cannot take has been done"
    );
    let outcome = call(
        &gate,
        &browser(),
        "lookup_orders",
        json!({"order_id": "A-1"}),
    )
    .await;
    assert_eq!(
        denial(&outcome),
        "lookup_orders is blocked until a step you cannot take has been done"
    );
}

#[tokio::test]
async fn a_principal_that_sees_every_tool_still_gets_the_full_reason() {
    let gate = depending_gate();
    let outcome = call(&gate, &Principal::operator(), "refund_order", refund()).await;
    assert_eq!(
        denial(&outcome),
        "refund_order is blocked until lookup_order has succeeded"
    );
    let outcome = call(
        &gate,
        &Principal::operator(),
        "lookup_orders",
        json!({"order_id": "A-1"}),
    )
    .await;
    assert_eq!(
        denial(&outcome),
        "lookup_orders is blocked until refund_order has succeeded"
    );
}

#[tokio::test]
async fn the_audit_record_of_a_flow_refusal_keeps_the_full_reason() {
    let gate = depending_gate();
    call(&gate, &clerk(), "refund_order", refund()).await;
    let record = gate.store().tail(1).unwrap().pop().unwrap().entry;
    assert_eq!(record.outcome.as_deref(), Some("blocked"));
    assert_eq!(
        record.reason.as_deref(),
        Some("refund_order is blocked until lookup_order has succeeded")
    );
    let told = record.message.unwrap_or_default();
    assert!(told.contains("a step you cannot take"), "{told}");
    assert!(!told.contains("lookup_order"), "{told}");
}

#[tokio::test]
async fn the_planner_digest_names_no_tool_outside_the_view() {
    let gate = depending_gate();
    let digest = gate.planner_digest("s", &clerk()).unwrap();
    assert!(!digest.contains("lookup_order"), "{digest}");
    assert!(
        digest.contains(
            "not available yet: refund_order is blocked until a step you cannot take has been done"
        ),
        "{digest}"
    );
    assert!(
        digest.contains("- Before the conversation ends, a step you cannot take must be done (required because always)."),
        "{digest}"
    );
    let digest = gate.planner_digest("s", &browser()).unwrap();
    assert!(!digest.contains("refund_order"), "{digest}");
    let digest = gate.planner_digest("s", &Principal::operator()).unwrap();
    assert!(
        digest.contains("refund_order is blocked until lookup_order has succeeded"),
        "{digest}"
    );
    assert!(
        digest.contains("call lookup_order (required because always)"),
        "{digest}"
    );
}

#[tokio::test]
async fn the_tools_offered_name_no_tool_outside_the_view() {
    let gate = depending_gate();
    let offered = gate.visible_tools_for("s", &clerk()).unwrap();
    let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["refund_order", "search_tools"]);
    let text = serde_json::to_string(&offered).unwrap();
    assert!(!text.contains("lookup_order"), "{text}");
    let view = gate.flow_view_for("s", &clerk()).unwrap().unwrap();
    let text = serde_json::to_string(&view).unwrap();
    assert!(!text.contains("lookup_order"), "{text}");
    let view = gate.flow_view_for("s", &browser()).unwrap().unwrap();
    let text = serde_json::to_string(&view).unwrap();
    assert!(!text.contains("refund_order"), "{text}");
    let offered = gate.visible_tools("s").unwrap();
    let refund = offered.iter().find(|t| t.name == "refund_order").unwrap();
    assert!(
        refund
            .description
            .contains("until lookup_order has succeeded"),
        "{}",
        refund.description
    );
}

#[tokio::test]
async fn search_tools_finds_no_tool_outside_the_view() {
    let gate = depending_gate();
    let query = json!({"query": "look up an order", "k": 10});
    let outcome = call(&gate, &clerk(), "search_tools", query.clone()).await;
    let Outcome::Ok { value, text, .. } = &outcome else {
        panic!("expected a result, got {outcome:?}")
    };
    assert!(!value.to_string().contains("lookup_order"), "{value}");
    assert!(!text.contains("lookup_order"), "{text}");
    let outcome = call(&gate, &Principal::operator(), "search_tools", query).await;
    let Outcome::Ok { value, .. } = &outcome else {
        panic!("expected a result, got {outcome:?}")
    };
    assert!(value.to_string().contains("lookup_order"), "{value}");
}
