//! The gate's admission stage: a flow decides which calls may run now. Blocked
//! calls never reach their handler and say what must happen first; `confirm:`
//! tools wait for a person; the call history is durable, so a conversation goes
//! on across gates and processes sharing one SQLite file.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::flow::FlowVisibility;
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, GateStore, MemoryGateStore, Outcome, Principal, SqliteStore, Tool, ToolCall,
    ToolCtx, ToolError, ToolHandler, store::ApprovalStore, store::AuditLog,
};

/// How many times a handler ran.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn hit(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// Check that the caller owns the account.
#[derive(Tool)]
#[tool(effect = "read")]
struct VerifyIdentity(Runs);

#[derive(Deserialize, JsonSchema)]
struct Identity {
    last4: String,
}

#[derive(Serialize, JsonSchema)]
struct Verified {
    verified: bool,
}

impl ToolHandler for VerifyIdentity {
    type Input = Identity;
    type Output = Verified;
    async fn call(&self, _ctx: &ToolCtx, id: Identity) -> Result<Verified, ToolError> {
        self.0.hit();
        if id.last4 == "4242" {
            Ok(Verified { verified: true })
        } else {
            Err(ToolError::permanent("the card digits do not match"))
        }
    }
}

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder(Runs);

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct OrderId {
    order_id: String,
}

impl ToolHandler for LookupOrder {
    type Input = OrderId;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _q: OrderId) -> Result<String, ToolError> {
        self.0.hit();
        Ok("delivered".into())
    }
}

/// Refund an order.
#[derive(Tool)]
#[tool(effect = "external")]
struct RefundOrder(Runs);

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Refund {
    order_id: String,
    amount_cents: u64,
}

impl ToolHandler for RefundOrder {
    type Input = Refund;
    type Output = String;
    async fn call(&self, _ctx: &ToolCtx, _r: Refund) -> Result<String, ToolError> {
        // Slow enough that parallel calls overlap.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        self.0.hit();
        Ok("refunded".into())
    }
}

/// The flow under test: verify first, then look up and refund (once; a person
/// confirms refunds above the limit the state records). Policy lets everything
/// run at once, so every refusal here is the flow's.
const SPEC: &str = r#"
tools: []
policy:
  effects: {read: allow, idempotent: allow, write: allow, execute: allow, destructive: allow, external: allow}
state:
  refund_limit_cents: {type: integer, default: 5000}
flow:
  steps:
    - id: verify
      allow: [verify_identity]
      done: {called_ok: verify_identity}
      instruction: Ask for the last four card digits and verify them.
    - id: serve
      after: [verify]
      allow: [lookup_order, refund_order]
      instruction: Help with the order.
  constraints:
    - once: refund_order
  confirm:
    - {tool: refund_order, when: {above: {arg: amount_cents, state: refund_limit_cents}}}
"#;

fn spec() -> SpecFile {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    serde_json::from_value(doc.value).unwrap()
}

struct Desk {
    verify: Runs,
    refund: Runs,
    gate: Gate,
}

fn desk(store: Arc<dyn GateStore>) -> Desk {
    desk_with(store, FlowVisibility::Hide)
}

fn desk_with(store: Arc<dyn GateStore>, visibility: FlowVisibility) -> Desk {
    let (verify, refund) = (Runs::default(), Runs::default());
    let catalog = Catalog::new()
        .with_native(VerifyIdentity(verify.clone()))
        .unwrap()
        .with_native(LookupOrder(Runs::default()))
        .unwrap()
        .with_native(RefundOrder(refund.clone()))
        .unwrap();
    let gate = Gate::builder(catalog)
        .spec(&spec())
        .store(store)
        .flow_visibility(visibility)
        .build();
    Desk {
        verify,
        refund,
        gate,
    }
}

async fn call(gate: &Gate, session: &str, tool: &str, args: Value) -> Outcome {
    gate.call(
        session,
        ToolCall::new("c1", tool, args),
        &Principal::operator(),
    )
    .await
}

fn refund(amount: u64) -> Value {
    json!({"order_id": "ORD-1", "amount_cents": amount})
}

fn verify() -> Value {
    json!({"last4": "4242"})
}

#[tokio::test]
async fn a_blocked_call_never_reaches_the_handler_and_says_what_must_happen_first() {
    let store = Arc::new(MemoryGateStore::default());
    let d = desk(store.clone());
    let outcome = call(&d.gate, "s", "refund_order", refund(100)).await;
    assert_eq!(
        outcome,
        Outcome::Denied {
            reason: "refund_order is blocked until verify_identity has succeeded".into()
        }
    );
    assert_eq!(d.refund.count(), 0, "the handler never ran");
    let last = store.tail(1).unwrap().pop().unwrap();
    assert_eq!(last.entry.outcome.as_deref(), Some("blocked"));
    assert_eq!(
        last.entry.message.as_deref(),
        Some(
            "this call is not allowed: refund_order is blocked until verify_identity has succeeded"
        )
    );
    assert!(
        d.gate.history("s").unwrap().is_empty(),
        "a refused call is not history"
    );
}

#[tokio::test]
async fn once_what_must_happen_first_has_happened_the_call_runs_once() {
    let d = desk(Arc::new(MemoryGateStore::default()));
    assert!(
        call(&d.gate, "s", "verify_identity", verify())
            .await
            .is_ok()
    );
    assert!(
        call(&d.gate, "s", "refund_order", refund(100))
            .await
            .is_ok()
    );
    assert_eq!(d.refund.count(), 1);
    let again = call(&d.gate, "s", "refund_order", refund(100)).await;
    assert_eq!(
        again,
        Outcome::Denied {
            reason: "refund_order may succeed only once in a conversation, and it already has"
                .into()
        }
    );
    assert_eq!(d.refund.count(), 1);
}

#[tokio::test]
async fn a_failed_call_does_not_unblock_what_waits_for_it() {
    let d = desk(Arc::new(MemoryGateStore::default()));
    let failed = call(&d.gate, "s", "verify_identity", json!({"last4": "0000"})).await;
    assert!(matches!(failed, Outcome::Error { .. }), "{failed:?}");
    assert_eq!(d.verify.count(), 1);
    assert!(matches!(
        call(&d.gate, "s", "lookup_order", json!({"order_id": "ORD-1"})).await,
        Outcome::Denied { .. }
    ));
    let history = d.gate.history("s").unwrap();
    assert_eq!(history.len(), 1);
    assert!(!history[0].ok, "the failure is history, as a failure");
}

#[tokio::test]
async fn a_confirm_tool_waits_for_a_person_above_the_limit_even_where_policy_allows() {
    let store = Arc::new(MemoryGateStore::default());
    let d = desk(store.clone());
    call(&d.gate, "s", "verify_identity", verify()).await;
    let waiting = call(&d.gate, "s", "refund_order", refund(6499)).await;
    let Outcome::PendingApproval {
        approval_id,
        reason,
    } = waiting
    else {
        panic!("{waiting:?}")
    };
    assert_eq!(
        reason,
        "the flow asks the user to confirm refund_order when `amount_cents` is above `refund_limit_cents` (`amount_cents` is 6499, `refund_limit_cents` is 5000)"
    );
    assert_eq!(d.refund.count(), 0);
    store
        .approve(&approval_id, None, std::time::SystemTime::now())
        .unwrap();
    assert!(
        call(&d.gate, "s", "refund_order", refund(6499))
            .await
            .is_ok()
    );
    assert_eq!(d.refund.count(), 1);

    // Below the limit, in another conversation: it runs at once.
    call(&d.gate, "t", "verify_identity", verify()).await;
    assert!(
        call(&d.gate, "t", "refund_order", refund(4999))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn history_persists_across_two_gates_on_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let first = desk(Arc::new(SqliteStore::open(&path).unwrap()));
        assert!(
            call(&first.gate, "s", "verify_identity", verify())
                .await
                .is_ok()
        );
    }
    let second = desk(Arc::new(SqliteStore::open(&path).unwrap()));
    assert!(
        call(&second.gate, "s", "refund_order", refund(100))
            .await
            .is_ok(),
        "the second gate knows the identity was verified"
    );
    let third = desk(Arc::new(SqliteStore::open(&path).unwrap()));
    assert!(matches!(
        call(&third.gate, "s", "refund_order", refund(100)).await,
        Outcome::Denied { reason } if reason.contains("only once")
    ));
    let history = third.gate.history("s").unwrap();
    assert_eq!(
        history
            .iter()
            .map(|c| (c.seq, c.tool.as_str(), c.ok))
            .collect::<Vec<_>>(),
        [(1, "verify_identity", true), (2, "refund_order", true)]
    );
    assert!(
        third.gate.history("other").unwrap().is_empty(),
        "sessions keep their own history"
    );
}

#[tokio::test]
async fn parallel_calls_of_a_once_tool_run_once() {
    let d = desk(Arc::new(MemoryGateStore::default()));
    call(&d.gate, "s", "verify_identity", verify()).await;
    let calls = (0..4)
        .map(|i| ToolCall::new(format!("c{i}"), "refund_order", refund(100)))
        .collect();
    let outcomes = d.gate.call_all("s", calls, &Principal::operator()).await;
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(d.refund.count(), 1);
}

#[tokio::test]
async fn a_once_tool_runs_once_across_a_gate_and_the_gate_that_replaces_it() {
    let store: Arc<dyn GateStore> = Arc::new(MemoryGateStore::default());
    let old = desk(store.clone());
    call(&old.gate, "s", "verify_identity", verify()).await;
    let catalog = Catalog::new()
        .with_native(VerifyIdentity(Runs::default()))
        .unwrap()
        .with_native(RefundOrder(old.refund.clone()))
        .unwrap();
    let new = Gate::builder(catalog)
        .spec(&spec())
        .store(store)
        .succeeding(&old.gate)
        .build();
    // A call still running on the old gate while the same conversation calls the new one.
    let (on_old, on_new) = tokio::join!(
        call(&old.gate, "s", "refund_order", refund(100)),
        call(&new, "s", "refund_order", refund(100)),
    );
    assert_eq!(
        [on_old.is_ok(), on_new.is_ok()],
        [true, false],
        "{on_old:?} {on_new:?}"
    );
    assert_eq!(old.refund.count(), 1);
}

/// Two gates that share nothing but `stores` (each a store on the same data, as two
/// processes have), calling a `once` tool of one conversation at the same time.
async fn race_two_gates(stores: [Arc<dyn GateStore>; 2]) -> (usize, Vec<Outcome>) {
    let [a, b] = stores.map(desk);
    call(&a.gate, "s", "verify_identity", verify()).await;
    let calls = (0..10).map(|i| {
        let gate = if i % 2 == 0 { &a.gate } else { &b.gate };
        call(gate, "s", "refund_order", refund(100))
    });
    let outcomes = futures::future::join_all(calls).await;
    (a.refund.count() + b.refund.count(), outcomes)
}

#[tokio::test]
async fn a_once_tool_runs_once_across_gates_that_share_only_a_store() {
    let memory: Arc<dyn GateStore> = Arc::new(MemoryGateStore::default());
    let (runs, outcomes) = race_two_gates([memory.clone(), memory]).await;
    assert_eq!(runs, 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);

    // Two stores opened on one file, as two processes open it.
    let dir = tempfile::tempdir().unwrap();
    let open = || -> Arc<dyn GateStore> { Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap()) };
    let (runs, outcomes) = race_two_gates([open(), open()]).await;
    assert_eq!(runs, 1, "{outcomes:?}");
    let refused: Vec<&Outcome> = outcomes.iter().filter(|o| !o.is_ok()).collect();
    assert_eq!(refused.len(), 9);
    for outcome in refused {
        let Outcome::Denied { reason } = outcome else {
            panic!("{outcome:?}")
        };
        assert!(reason.contains("only once"), "{reason}");
    }
    let store = SqliteStore::open_in_dir(dir.path()).unwrap();
    assert!(store.pending().unwrap().is_empty(), "every turn completed");
    assert!(store.verify().unwrap().is_ok());
}

#[tokio::test]
async fn a_model_is_shown_blocked_tools_hidden_or_marked_and_the_steps_instructions() {
    let hidden = desk(Arc::new(MemoryGateStore::default()));
    let names: Vec<String> = hidden
        .gate
        .visible_tools("s")
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["verify_identity"]);
    let digest = hidden
        .gate
        .planner_digest("s", &Principal::operator())
        .unwrap();
    assert!(
        digest.contains("- Now (verify): Ask for the last four card digits and verify them."),
        "{digest}"
    );
    assert!(!digest.contains("### refund_order"), "{digest}");

    let marked = desk_with(Arc::new(MemoryGateStore::default()), FlowVisibility::Mark);
    let tools = marked.gate.visible_tools("s").unwrap();
    assert_eq!(tools.len(), 3);
    let refund = tools.iter().find(|t| t.name == "refund_order").unwrap();
    assert!(
        refund.description.starts_with(
            "[Not available yet: refund_order is blocked until verify_identity has succeeded.]"
        ),
        "{}",
        refund.description
    );
    call(&marked.gate, "s", "verify_identity", verify()).await;
    let view = marked.gate.flow_view("s").unwrap().unwrap();
    assert_eq!(view.active(), ["serve"]);
    assert_eq!(view.done(), ["verify"]);
}

#[tokio::test]
async fn a_gate_without_a_flow_admits_every_call_and_still_keeps_history() {
    let runs = Runs::default();
    let gate = Gate::builder(
        Catalog::new()
            .with_native(RefundOrder(runs.clone()))
            .unwrap(),
    )
    .policy(spec().policy)
    .build();
    assert!(gate.flow().is_none());
    assert!(gate.flow_view("s").unwrap().is_none());
    assert!(call(&gate, "s", "refund_order", refund(1)).await.is_ok());
    assert!(call(&gate, "s", "refund_order", refund(1)).await.is_ok());
    assert_eq!(runs.count(), 2);
    assert_eq!(gate.history("s").unwrap().len(), 2);
}
