//! One execution per intended call, through the Rust API: a call under an
//! idempotency key runs once however often it is repeated (from one gate or
//! two sharing a SQLite file), the key names one call only, a call with effects
//! whose answer was lost is reported as `unknown` and not run again until an
//! operator resolves it, and an approval answers one definition of a tool.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::audit::{PendingOutcome, resolve_pending};
use toolgate::store::{AuditLog, CallLedger, LedgerEntry, LedgerName};
use toolgate::{
    Catalog, Gate, GateOptions, GateStore, MemoryGateStore, Outcome, Principal, SqliteStore, Tool,
    ToolCall, ToolCtx, ToolError, ToolHandler,
};

/// Pay an amount.
#[derive(Tool)]
#[tool(effect = "external")]
struct Pay {
    runs: Arc<AtomicUsize>,
    /// What each run does after it counts itself.
    then: Then,
}

#[derive(Clone, Copy)]
enum Then {
    Answer,
    /// The answer is lost (as an HTTP binding reports a broken connection).
    LoseAnswer,
    /// It outlives its deadline.
    Hang,
}

#[derive(Deserialize, JsonSchema)]
struct Payment {
    /// Cents to pay.
    cents: u64,
}

impl ToolHandler for Pay {
    type Input = Payment;
    type Output = Value;
    async fn call(&self, ctx: &ToolCtx, payment: Payment) -> Result<Value, ToolError> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        match self.then {
            Then::Answer => Ok(json!({
                "paid": payment.cents,
                "run": n,
                "key": ctx.idempotency_key(),
            })),
            Then::LoseAnswer => Err(ToolError::unknown(
                "the connection broke before it answered",
            )),
            Then::Hang => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(json!({}))
            }
        }
    }
}

const SPEC: &str = r#"
policy:
  effects: {external: allow}
tools:
  - name: pay
    description: Pay an amount.
    effect: external
    timeout: 200ms
"#;

fn gate_on(store: Arc<dyn GateStore>, runs: &Arc<AtomicUsize>, then: Then) -> Gate {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    let spec = serde_json::from_value(doc.value).unwrap();
    let natives = Catalog::new()
        .with_native(Pay {
            runs: runs.clone(),
            then,
        })
        .unwrap();
    Gate::from_spec(&spec, "tools.yaml", &natives, store).unwrap()
}

fn pay(cents: u64) -> ToolCall {
    ToolCall::new("c1", "pay", json!({"cents": cents}))
}

fn last_outcome(store: &dyn GateStore) -> String {
    store.tail(1).unwrap()[0]
        .entry
        .outcome
        .clone()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_call_repeated_with_its_key_runs_once_and_answers_the_same() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::Answer);
    let operator = Principal::operator();

    let first = gate
        .call("s", pay(500).with_idempotency_key("pay-1"), &operator)
        .await;
    assert_eq!(
        first.value().unwrap()["key"],
        "pay-1",
        "the tool sees the key"
    );
    let again = gate
        .call("s", pay(500).with_idempotency_key("pay-1"), &operator)
        .await;
    assert_eq!(again, first);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(last_outcome(store.as_ref()), "replayed");

    // In another conversation too: the key is the principal's.
    let elsewhere = gate
        .call("t", pay(500).with_idempotency_key("pay-1"), &operator)
        .await;
    assert_eq!(elsewhere, first);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_key_used_for_other_arguments_is_refused_and_nothing_runs() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::Answer);
    let operator = Principal::operator();
    gate.call("s", pay(500).with_idempotency_key("pay-1"), &operator)
        .await;

    let other = gate
        .call("s", pay(900).with_idempotency_key("pay-1"), &operator)
        .await;
    let Outcome::Error { message, retryable } = other else {
        panic!("{other:?}");
    };
    assert!(
        message.contains("already used for another call"),
        "{message}"
    );
    assert!(!retryable);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(last_outcome(store.as_ref()), "key_reused");
}

#[tokio::test]
async fn another_principal_s_key_of_the_same_name_is_its_own() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::Answer);
    gate.call(
        "s",
        pay(500).with_idempotency_key("k"),
        &Principal::operator(),
    )
    .await;
    let other = Principal {
        id: "agent".into(),
        ..Principal::operator()
    };
    let theirs = gate
        .call("s", pay(500).with_idempotency_key("k"), &other)
        .await;
    assert!(theirs.is_ok(), "{theirs:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_key_that_is_not_one_is_refused_before_anything_runs() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store, &runs, Then::Answer);
    for bad in ["", "has space", &"k".repeat(256)] {
        let outcome = gate
            .call(
                "s",
                pay(1).with_idempotency_key(bad),
                &Principal::operator(),
            )
            .await;
        assert!(
            outcome.message_for_model().contains("is not one"),
            "{outcome:?}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_call_whose_key_is_still_running_elsewhere_is_told_to_retry() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::Answer);
    let operator = Principal::operator();
    // Another process holds the key for a run that has not ended.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let probe = gate.call("probe", pay(7), &operator).await.value().cloned();
    assert!(probe.is_some());
    let call_hash = store.tail(1).unwrap()[0].entry.call_hash.clone().unwrap();
    let held = LedgerEntry {
        tool: "pay".into(),
        call_hash,
        run_id: "elsewhere-1".into(),
        session: "s".into(),
        principal: operator.id.clone(),
        outcome: None,
        lease_ms: now + 60_000,
        expires_ms: now + 3_600_000,
        call: None,
    };
    let name = LedgerName::key(&operator.id, "busy");
    assert!(store.claim_ledger(&name, &held, now).unwrap().is_none());

    let outcome = gate
        .call("s", pay(7).with_idempotency_key("busy"), &operator)
        .await;
    let Outcome::Error { message, retryable } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.contains("is running now (run elsewhere-1)"),
        "{message}"
    );
    assert!(retryable);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the probe ran");
}

#[tokio::test]
async fn two_gates_on_one_sqlite_file_racing_one_key_run_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let runs = Arc::new(AtomicUsize::new(0));
    let a = gate_on(
        Arc::new(SqliteStore::open(&path).unwrap()),
        &runs,
        Then::Answer,
    );
    let b = gate_on(
        Arc::new(SqliteStore::open(&path).unwrap()),
        &runs,
        Then::Answer,
    );
    let operator = Principal::operator();
    let calls = (0..8).map(|i| {
        let gate = if i % 2 == 0 { &a } else { &b };
        gate.call("s", pay(250).with_idempotency_key("race"), &operator)
    });
    let outcomes = futures::future::join_all(calls).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "{outcomes:#?}");
    for outcome in &outcomes {
        let retry = matches!(outcome, Outcome::Error { retryable: true, message } if message.contains("is running now"));
        assert!(outcome.is_ok() || retry, "{outcome:?}");
    }
}

#[tokio::test]
async fn a_lost_answer_is_unknown_and_the_same_call_waits_for_an_operator() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::LoseAnswer);
    let operator = Principal::operator();

    let lost = gate.call("s", pay(500), &operator).await;
    let Outcome::Unknown { message, run_id } = &lost else {
        panic!("{lost:?}");
    };
    assert!(message.contains("connection broke"), "{message}");
    assert!(lost.message_for_model().contains("Do not repeat it"));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "an unknown outcome is not retried"
    );

    let again = gate.call("s", pay(500), &operator).await;
    let Outcome::Denied { reason } = &again else {
        panic!("{again:?}");
    };
    assert!(reason.contains(run_id.as_str()), "{reason}");
    assert_eq!(last_outcome(store.as_ref()), "in_doubt");
    // Other arguments, or another conversation, are another call.
    assert!(matches!(
        gate.call("s", pay(501), &operator).await,
        Outcome::Unknown { .. }
    ));
    assert!(matches!(
        gate.call("t", pay(500), &operator).await,
        Outcome::Unknown { .. }
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 3);

    resolve_pending(
        store.as_ref(),
        run_id,
        PendingOutcome::Error,
        "the operator",
        None,
    )
    .unwrap();
    assert!(matches!(
        gate.call("s", pay(500), &operator).await,
        Outcome::Unknown { .. }
    ));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        4,
        "resolved, the call may run again"
    );
}

#[tokio::test]
async fn a_deadline_passed_while_it_ran_leaves_the_outcome_unknown() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::Hang);
    let outcome = gate.call("s", pay(1), &Principal::operator()).await;
    let Outcome::Unknown { message, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(message.contains("did not finish within 200ms"), "{message}");
    assert_eq!(last_outcome(store.as_ref()), "unknown");
}

#[tokio::test]
async fn a_keyed_call_whose_answer_was_lost_replays_unknown_until_resolved_then_what_was_found() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs, Then::LoseAnswer);
    let operator = Principal::operator();
    let keyed = || pay(500).with_idempotency_key("pay-9");

    let lost = gate.call("s", keyed(), &operator).await;
    let Outcome::Unknown { run_id, .. } = lost.clone() else {
        panic!("{lost:?}");
    };
    assert_eq!(gate.call("s", keyed(), &operator).await, lost);
    resolve_pending(
        store.as_ref(),
        &run_id,
        PendingOutcome::Ok,
        "the operator",
        Some("seen in the bank's ledger"),
    )
    .unwrap();
    let found = gate.call("s", keyed(), &operator).await;
    assert!(found.is_ok(), "{found:?}");
    assert!(
        found.message_for_model().contains("took effect"),
        "{found:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_approval_answers_the_tool_as_defined_when_it_was_asked() {
    let spec = |description: &str| {
        let text = format!(
            "policy:\n  effects: {{external: ask}}\ntools:\n  - name: pay\n    description: {description}\n    effect: external\n    parameters: {{type: object, properties: {{cents: {{type: integer}}}}}}\n    response: {{ok: true}}\n"
        );
        let doc = toolgate::spec::Document::parse(&text).unwrap();
        serde_json::from_value(doc.value).unwrap()
    };
    let store: Arc<dyn GateStore> = Arc::new(MemoryGateStore::default());
    let before = Gate::from_spec(
        &spec("Pay an amount."),
        "t.yaml",
        &Catalog::new(),
        store.clone(),
    )
    .unwrap();
    let operator = Principal::operator();
    let Outcome::PendingApproval { approval_id, .. } = before.call("s", pay(5), &operator).await
    else {
        panic!("asks first");
    };
    let asked = approval_id.clone();
    let by = toolgate::policy::Answerer::new("lead", "cli");
    store
        .approve_by(&approval_id, None, &by, std::time::SystemTime::now())
        .unwrap();

    // The definition changed meanwhile: the answer was not given for this one.
    let after = Gate::from_spec(
        &spec("Pay an amount, and tip."),
        "t.yaml",
        &Catalog::new(),
        store.clone(),
    )
    .unwrap();
    let changed = after.call("s", pay(5), &operator).await;
    let Outcome::PendingApproval { approval_id, .. } = &changed else {
        panic!("{changed:?}");
    };
    assert_ne!(*approval_id, asked, "a new question for the new definition");
    // The definition it answered still takes it, once.
    assert!(before.call("s", pay(5), &operator).await.is_ok());
    assert!(matches!(
        before.call("s", pay(5), &operator).await,
        Outcome::PendingApproval { .. }
    ));
    let intent = store
        .tail(8)
        .unwrap()
        .into_iter()
        .find(|r| r.entry.outcome.as_deref() == Some("ok"))
        .unwrap();
    assert!(intent.entry.reason.unwrap().contains("approved"));
    assert!(
        intent.entry.call_hash.is_some(),
        "the record names the call it answered"
    );
}

#[tokio::test]
async fn an_approval_used_by_a_call_that_then_did_not_run_still_stands() {
    let spec = serde_json::from_value(json!({
        "policy": {"effects": {"external": "ask", "read": "allow"}},
        "limits": {"rate": [{"principal": "*", "calls": 1, "per": "1h"}]},
        "tools": [
            {"name": "pay", "description": "Pay an amount.", "effect": "external",
             "parameters": {"type": "object", "properties": {"cents": {"type": "integer"}}},
             "response": {"ok": true}},
            {"name": "look", "description": "Look.", "effect": "read", "response": {}}
        ]
    }))
    .unwrap();
    let store: Arc<dyn GateStore> = Arc::new(MemoryGateStore::default());
    let gate = Gate::from_spec(&spec, "t.yaml", &Catalog::new(), store.clone()).unwrap();
    let operator = Principal::operator();
    let Outcome::PendingApproval { approval_id, .. } = gate.call("s", pay(5), &operator).await
    else {
        panic!("asks first");
    };
    store
        .approve(&approval_id, None, std::time::SystemTime::now())
        .unwrap();
    // The one call the rate limit allows goes elsewhere; the approved call
    // is then refused by the limit, after its approval was taken.
    assert!(
        gate.call("s", ToolCall::new("c", "look", json!({})), &operator)
            .await
            .is_ok()
    );
    let limited = gate.call("s", pay(5), &operator).await;
    assert!(
        matches!(limited, Outcome::RateLimited { .. }),
        "{limited:?}"
    );
    let record = &store.tail(1).unwrap()[0].entry;
    assert!(
        record
            .reason
            .as_deref()
            .unwrap()
            .contains(&format!("{approval_id} given back")),
        "{record:?}"
    );
    let approval = toolgate::store::ApprovalStore::get(store.as_ref(), &approval_id)
        .unwrap()
        .unwrap();
    assert_eq!(approval.status, toolgate::store::ApprovalStatus::Approved);
}

#[test]
fn gate_options_keep_a_key_for_a_day_by_default() {
    assert_eq!(
        GateOptions::default().idempotency_retention,
        Duration::from_secs(86_400)
    );
}
