//! Policy rules that decide on a call's arguments, the conversation's state and
//! the caller's claims, at call time in the gate, with the audit log naming the
//! rule that decided and whoever answered.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, MemoryGateStore, Outcome, Principal, ToolCall, policy::Answerer,
    store::ApprovalStore, store::AuditLog, store::StateStore,
};

fn spec() -> SpecFile {
    serde_json::from_value(json!({
        "tools": [
            {"name": "refund_order", "description": "Refund an order.", "effect": "write",
             "parameters": {"type": "object", "properties": {
                 "order_id": {"type": "string"}, "amount_cents": {"type": "integer"}}},
             "response": {"refunded": true}},
            {"name": "fs.write_file", "description": "Write a file.", "effect": "write",
             "parameters": {"type": "object", "properties": {
                 "path": {"type": "string"}, "content": {"type": "string"}}},
             "response": {"written": true}},
            {"name": "close_account", "description": "Close an account.", "effect": "write",
             "response": {"closed": true}}
        ],
        "state": {"vip": {"type": "boolean", "default": false}},
        "principals": {"agent": {"ceiling": "write"}},
        "policy": {"rules": [
            {"tools": "refund_order", "when": {"above": {"arg": "amount_cents", "value": 10000}},
             "decision": "ask", "reason": "refunds over $100 need a second pair of eyes"},
            {"tools": "fs.write_file", "when": {"not": {"starts_with": {"arg": "path", "value": "/srv/data/"}}},
             "decision": "deny", "reason": "files are written only under /srv/data"},
            {"tools": "close_account", "when": {"any": [{"claim": {"groups": "support"}}, {"is_true": "vip"}]},
             "decision": "allow"},
            {"tools": "close_account", "decision": "deny", "reason": "only support closes accounts"},
            {"tools": "*", "decision": "allow"}
        ]}
    }))
    .unwrap()
}

fn gate(store: Arc<MemoryGateStore>) -> Gate {
    Gate::from_spec(&spec(), "toolgate.yaml", &Catalog::new(), store).unwrap()
}

fn agent() -> Principal {
    spec().principals["agent"].to_principal("agent")
}

async fn call(gate: &Gate, who: &Principal, tool: &str, arguments: Value) -> Outcome {
    gate.call("s1", ToolCall::new("c1", tool, arguments), who)
        .await
}

fn last_reason(store: &MemoryGateStore) -> String {
    store.tail(1).unwrap()[0]
        .entry
        .reason
        .clone()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refund_above_the_limit_waits_for_an_approver_and_the_audit_names_the_rule_and_who_approved()
 {
    let store = Arc::new(MemoryGateStore::default());
    let gate = gate(store.clone());
    let small = call(
        &gate,
        &agent(),
        "refund_order",
        json!({"order_id": "A-1", "amount_cents": 500}),
    )
    .await;
    assert!(matches!(small, Outcome::Ok { .. }), "{small:?}");
    assert!(last_reason(&store).contains("(decided by policy.rules[4])"));
    let big = json!({"order_id": "A-2", "amount_cents": 25000});
    let Outcome::PendingApproval {
        approval_id,
        reason,
    } = call(&gate, &agent(), "refund_order", big.clone()).await
    else {
        panic!("a big refund waits");
    };
    assert_eq!(reason, "refunds over $100 need a second pair of eyes");
    assert!(
        last_reason(&store).ends_with("(decided by policy.rules[0])"),
        "{}",
        last_reason(&store)
    );
    store
        .approve_by(
            &approval_id,
            None,
            &Answerer::new("lead", "cli"),
            SystemTime::now(),
        )
        .unwrap();
    let approved = call(&gate, &agent(), "refund_order", big).await;
    assert!(matches!(approved, Outcome::Ok { .. }), "{approved:?}");
    let intent = store
        .tail(10)
        .unwrap()
        .into_iter()
        .rev()
        .find(|r| r.entry.kind == toolgate::audit::RecordKind::Intent)
        .unwrap();
    assert_eq!(
        intent.entry.reason.as_deref(),
        Some(
            format!(
                "refunds over $100 need a second pair of eyes (decided by policy.rules[0]); approved ({approval_id} by lead via cli)"
            )
            .as_str()
        )
    );
}

#[tokio::test]
async fn a_write_outside_the_prefix_is_denied_even_through_dot_dot() {
    let store = Arc::new(MemoryGateStore::default());
    let gate = gate(store.clone());
    let inside = call(
        &gate,
        &agent(),
        "fs.write_file",
        json!({"path": "/srv/data/notes/a.txt", "content": "x"}),
    )
    .await;
    assert!(matches!(inside, Outcome::Ok { .. }), "{inside:?}");
    for outside in [
        "/etc/passwd",
        "/srv/data/../../etc/passwd",
        "/srv/database/x",
        "/srv/data/../..",
    ] {
        let refused = call(
            &gate,
            &agent(),
            "fs.write_file",
            json!({"path": outside, "content": "x"}),
        )
        .await;
        assert_eq!(
            refused,
            Outcome::Denied {
                reason: "files are written only under /srv/data".into()
            },
            "{outside}"
        );
        assert!(last_reason(&store).ends_with("(decided by policy.rules[1])"));
    }
}

#[tokio::test]
async fn a_rule_reads_the_callers_claims_and_the_conversations_state() {
    let store = Arc::new(MemoryGateStore::default());
    let gate = gate(store.clone());
    let refused = call(&gate, &agent(), "close_account", json!({})).await;
    assert_eq!(
        refused,
        Outcome::Denied {
            reason: "only support closes accounts".into()
        }
    );
    let mut support = agent();
    support.claims = json!({"sub": "ada", "groups": ["support"]})
        .as_object()
        .unwrap()
        .clone()
        .into();
    let allowed = call(&gate, &support, "close_account", json!({})).await;
    assert!(matches!(allowed, Outcome::Ok { .. }), "{allowed:?}");
    store.apply("s1", &[("vip".into(), json!(true))]).unwrap();
    let vip = call(&gate, &agent(), "close_account", json!({})).await;
    assert!(
        matches!(vip, Outcome::Ok { .. }),
        "the state says vip: {vip:?}"
    );
}
