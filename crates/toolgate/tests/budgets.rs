//! Budgets (`budgets:`): a call past a budget is refused until its window
//! starts afresh, or asked about and charged once a human approves it; a cost
//! is read from the call's arguments; a call that spends and then does not
//! run is refunded, and a call the policy refuses spends nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolgate::store::{ApprovalStore, AuditLog};
use toolgate::{Catalog, Gate, GateStore, MemoryGateStore, Outcome, Principal, ToolCall};

/// A gate over `yaml` on a clock the test moves, starting at 14:37 UTC.
struct Fixture {
    gate: Gate,
    store: Arc<MemoryGateStore>,
    spec: toolgate::spec::SpecFile,
    now: Arc<Mutex<SystemTime>>,
}

fn fixture(yaml: &str) -> Fixture {
    let doc = toolgate::spec::Document::parse(yaml).unwrap();
    let spec: toolgate::spec::SpecFile = serde_json::from_value(doc.value).unwrap();
    let store = Arc::new(MemoryGateStore::default());
    let now = Arc::new(Mutex::new(
        humantime::parse_rfc3339("2026-12-04T14:37:00Z").unwrap(),
    ));
    let clock = now.clone();
    let catalog = toolgate::spec::spec_catalog(&spec, "toolgate.yaml", &Catalog::new()).unwrap();
    let shared: Arc<dyn GateStore> = store.clone();
    let gate = Gate::builder(catalog)
        .spec(&spec)
        .store(shared)
        .clock(move || *clock.lock().unwrap())
        .build();
    Fixture {
        gate,
        store,
        spec,
        now,
    }
}

impl Fixture {
    async fn call(&self, tool: &str, args: Value) -> Outcome {
        let call = ToolCall::new("c", tool, args);
        self.gate.call("s", call, &Principal::operator()).await
    }

    fn later(&self, by: Duration) {
        *self.now.lock().unwrap() += by;
    }

    /// What each budget has spent now, as `toolgate budgets` reads it.
    fn spent(&self) -> Vec<u64> {
        let now = *self.now.lock().unwrap();
        toolgate::budgets::budgets_in_use(&self.spec.budgets, &*self.store, now)
            .unwrap()
            .iter()
            .map(|used| used.spent)
            .collect()
    }

    fn last_reason(&self) -> String {
        let records = self.store.tail(1).unwrap();
        records[0].entry.reason.clone().unwrap_or_default()
    }
}

const TOOLS: &str = r#"
policy:
  effects: {external: allow, destructive: deny}
tools:
  - name: refund
    description: Refund an order.
    effect: external
    parameters:
      type: object
      properties: {order: {type: string}, cents: {type: integer}}
      required: [order]
    cost: {arg: cents}
    response: {refunded: "{args.cents}"}
  - name: lookup
    description: Look an order up.
    effect: read
    response: {found: true}
  - name: wipe
    description: Wipe every order.
    effect: destructive
"#;

#[tokio::test]
async fn a_call_past_a_deny_budget_is_refused_until_its_window_starts_afresh() {
    let f = fixture(&format!(
        "{TOOLS}budgets:\n  - {{tools: refund, calls: 2, per: 1h}}\n"
    ));
    for _ in 0..2 {
        let ran = f.call("refund", json!({"order": "A-1", "cents": 5})).await;
        assert!(matches!(ran, Outcome::Ok { .. }), "{ran:?}");
    }
    let Outcome::Denied { reason } = f.call("refund", json!({"order": "A-1", "cents": 5})).await
    else {
        panic!("the third refund of the hour runs");
    };
    insta::assert_snapshot!(reason, @"over budget (all calls to `refund`: 2 calls per 1h): 2 of 2 calls spent this window, so it would make 3 (1 over); the budget starts afresh at 2026-12-04T15:00:00Z (in 23m), try then");
    assert!(f.last_reason().ends_with("(decided by budgets[0])"));
    assert!(
        matches!(f.call("lookup", json!({})).await, Outcome::Ok { .. }),
        "another tool is not counted"
    );
    assert_eq!(f.spent(), [2]);
    f.later(Duration::from_secs(23 * 60));
    let ran = f.call("refund", json!({"order": "A-1", "cents": 5})).await;
    assert!(matches!(ran, Outcome::Ok { .. }), "a new hour: {ran:?}");
    assert_eq!(f.spent(), [1]);
}

#[tokio::test]
async fn a_call_past_an_ask_budget_waits_for_a_human_and_is_charged_once_approved() {
    let f = fixture(&format!(
        "{TOOLS}budgets:\n  - {{tools: refund, cost: 1000, per: 1d, over: ask}}\n"
    ));
    let ran = f
        .call("refund", json!({"order": "A-1", "cents": 600}))
        .await;
    assert!(matches!(ran, Outcome::Ok { .. }), "{ran:?}");
    let big = json!({"order": "A-2", "cents": 500});
    let Outcome::PendingApproval {
        approval_id,
        reason,
    } = f.call("refund", big.clone()).await
    else {
        panic!("a refund past the day's budget runs unasked");
    };
    insta::assert_snapshot!(reason, @"over budget (all calls to `refund`: 1000 cost units per 1d): 600 of 1000 cost spent this window; this call costs 500, so it would make 1100 (100 over); approve to let it run past the budget");
    assert_eq!(f.spent(), [600], "nothing charged while it waits");
    f.store
        .approve(&approval_id, None, *f.now.lock().unwrap())
        .unwrap();
    let ran = f.call("refund", big).await;
    assert!(matches!(ran, Outcome::Ok { .. }), "approved: {ran:?}");
    assert_eq!(f.spent(), [1100], "charged past the budget");
    assert!(f.last_reason().contains("approved"), "{}", f.last_reason());
}

#[tokio::test]
async fn a_cost_the_call_does_not_give_refuses_it_and_says_what_to_give() {
    let f = fixture(&format!(
        "{TOOLS}budgets:\n  - {{tools: refund, cost: 1000, per: 1d}}\n"
    ));
    let Outcome::Denied { reason } = f.call("refund", json!({"order": "A-1"})).await else {
        panic!("a refund of unknown cost runs");
    };
    assert_eq!(
        reason,
        "the call's cost is read from `cents`, which the call does not give; give it as a number"
    );
    assert_eq!(f.spent(), [0]);
}

#[tokio::test]
async fn a_call_charged_and_then_refused_by_a_rate_limit_is_refunded() {
    let f = fixture(&format!(
        "{TOOLS}budgets:\n  - {{tools: refund, calls: 5, per: 1h}}\nlimits:\n  rate:\n    - {{tool: refund, calls: 1, per: 1h}}\n"
    ));
    let ran = f.call("refund", json!({"order": "A-1", "cents": 5})).await;
    assert!(matches!(ran, Outcome::Ok { .. }), "{ran:?}");
    let limited = f.call("refund", json!({"order": "A-1", "cents": 5})).await;
    assert!(
        matches!(limited, Outcome::RateLimited { .. }),
        "{limited:?}"
    );
    assert_eq!(f.spent(), [1], "the call that did not run was refunded");
}

#[tokio::test]
async fn a_call_the_policy_refuses_spends_nothing() {
    let f = fixture(&format!("{TOOLS}budgets:\n  - {{calls: 5, per: 1h}}\n"));
    let refused = f.call("wipe", json!({})).await;
    assert!(matches!(refused, Outcome::Denied { .. }), "{refused:?}");
    assert!(matches!(
        f.call("lookup", json!({})).await,
        Outcome::Ok { .. }
    ));
    assert_eq!(f.spent(), [1]);
}

#[cfg(feature = "code-mode")]
#[tokio::test]
async fn a_program_the_model_wrote_spends_the_same_budget_as_its_calls() {
    use toolgate::code_mode::{CodeMode, WorkerCommand};
    let f = fixture(&format!(
        "{TOOLS}budgets:\n  - {{tools: refund, calls: 2, per: 1h}}\n"
    ));
    let code = r#"
done = []
for order in ["A-1", "A-2", "A-3"]:
    try:
        refund(order=order, cents=5)
        done.append(order)
    except Exception as e:
        done.append(str(e))
done
"#;
    let worker = WorkerCommand::program(env!("CARGO_BIN_EXE_toolgate-code-worker"));
    let run = CodeMode::new(worker)
        .run(&f.gate, "s", &Principal::operator(), code)
        .await;
    let done = run.value.expect("the program ran to its end");
    assert_eq!(done[0], "A-1");
    assert_eq!(done[1], "A-2");
    assert!(
        done[2].as_str().is_some_and(|e| e.contains("over budget")),
        "{done}"
    );
    assert_eq!(f.spent(), [2]);
}
