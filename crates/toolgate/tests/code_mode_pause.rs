//! A program that needs a person's approval pauses, durably: its state is written
//! to a real SQLite store, sealed, and a new gate over the same file (a restart)
//! resumes it once the approval is answered. Every program runs in a real worker
//! process.

#![cfg(feature = "code-mode")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate::code_mode::{AskApproval, CodeLimits, CodeMode, CodeRun, WorkerCommand};
use toolgate::{
    Catalog, Decision, Gate, Policy, Principal, SqliteStore, Tool, ToolCtx, ToolError, ToolHandler,
    policy::PolicyRule, store::ApprovalStatus, store::ApprovalStore,
};

/// Look up an order by its number.
#[derive(Tool)]
#[tool(effect = "read")]
struct Lookup;

#[derive(Deserialize, Serialize, JsonSchema)]
struct OrderId {
    order_id: String,
}

impl ToolHandler for Lookup {
    type Input = OrderId;
    type Output = OrderId;
    async fn call(&self, _ctx: &ToolCtx, q: OrderId) -> Result<OrderId, ToolError> {
        Ok(q)
    }
}

/// Refund an order; every refund that runs is counted.
#[derive(Tool)]
#[tool(effect = "write")]
struct Refund(Arc<AtomicUsize>);

#[derive(Deserialize, JsonSchema)]
struct RefundInput {
    order_id: String,
    amount: u64,
}

#[derive(Serialize, JsonSchema)]
struct Refunded {
    ok: bool,
    order_id: String,
    amount: u64,
}

impl ToolHandler for Refund {
    type Input = RefundInput;
    type Output = Refunded;
    async fn call(&self, _ctx: &ToolCtx, r: RefundInput) -> Result<Refunded, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Refunded {
            ok: true,
            order_id: r.order_id,
            amount: r.amount,
        })
    }
}

/// A state directory, and the refunds run by every gate over it.
struct Shop {
    _dir: tempfile::TempDir,
    file: PathBuf,
    refunds: Arc<AtomicUsize>,
}

fn shop() -> Shop {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.db");
    Shop {
        _dir: dir,
        file,
        refunds: Arc::new(AtomicUsize::new(0)),
    }
}

impl Shop {
    /// A gate over the shop's store file, as a freshly started process builds it.
    fn gate(&self) -> Gate {
        let catalog = Catalog::new()
            .with_native(Lookup)
            .unwrap()
            .with_native(Refund(self.refunds.clone()))
            .unwrap();
        let policy = Policy {
            rules: vec![PolicyRule {
                mode: Default::default(),
                tools: "refund".into(),
                decision: Decision::Ask,
                reason: Some("a refund needs a person".into()),
                when: None,
                answered_by: None,
            }],
            ..Policy::default()
        };
        Gate::builder(catalog)
            .policy(policy)
            .store(Arc::new(SqliteStore::open(&self.file).unwrap()))
            .build()
    }

    /// The store as `toolgate approvals` opens it.
    fn person(&self) -> SqliteStore {
        SqliteStore::open(&self.file).unwrap()
    }

    fn refunds(&self) -> usize {
        self.refunds.load(Ordering::SeqCst)
    }
}

fn code_mode() -> CodeMode {
    CodeMode::new(WorkerCommand::program(env!(
        "CARGO_BIN_EXE_toolgate-code-worker"
    )))
    .limits(CodeLimits {
        wall_clock: Duration::from_secs(20),
        interpreter_time: Duration::from_secs(2),
        max_memory_bytes: 512 << 20,
        ..CodeLimits::default()
    })
}

const REFUND_ONE: &str = r#"
order = lookup(order_id="A-1")
print("checked", order["order_id"])
refund(order_id=order["order_id"], amount=120)
"#;

fn paused(run: &CodeRun) -> (String, String) {
    assert!(run.is_pending(), "expected a pause, got {run:?}");
    (
        run.run_id.clone().expect("a run id"),
        run.approval_id.clone().expect("an approval id"),
    )
}

fn refused(run: &CodeRun, words: &str) {
    let error = run
        .error
        .as_ref()
        .unwrap_or_else(|| panic!("expected a refusal, got {run:?}"));
    assert_eq!(error.kind, "resume", "{error:?}");
    assert!(
        error.message.contains(words),
        "`{words}` not in {}",
        error.message
    );
}

fn operator() -> Principal {
    Principal::operator()
}

#[tokio::test]
async fn a_paused_program_resumes_after_approval_in_a_new_gate_and_its_refund_runs_once() {
    let shop = shop();
    let run = code_mode()
        .run(&shop.gate(), "s", &operator(), REFUND_ONE)
        .await;
    let (run_id, approval_id) = paused(&run);
    assert_eq!(shop.refunds(), 0, "nothing is refunded before approval");
    assert_eq!(run.printed, "checked A-1\n");
    let told = run.text_for_model(10_000);
    assert!(
        told.contains("resume_code") && told.contains(&run_id),
        "{told}"
    );
    assert!(told.contains(&approval_id), "{told}");

    // A restart: a new gate over the same file lists the paused program.
    let listed = CodeMode::paused(&shop.gate()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].run_id, run_id);
    assert_eq!(listed[0].approval_id, approval_id);
    assert_eq!(listed[0].tool, "refund");
    assert_eq!(listed[0].principal, "operator");

    shop.person()
        .approve(&approval_id, None, SystemTime::now())
        .unwrap();
    let resumed = code_mode().resume(&shop.gate(), &run_id, &operator()).await;
    assert!(resumed.is_ok(), "{resumed:?}");
    assert_eq!(
        resumed.value,
        Some(json!({"ok": true, "order_id": "A-1", "amount": 120}))
    );
    assert_eq!(
        resumed.printed, "checked A-1\n",
        "what it printed before is kept"
    );
    assert_eq!(resumed.calls, 2);
    assert_eq!(shop.refunds(), 1);

    let again = code_mode().resume(&shop.gate(), &run_id, &operator()).await;
    refused(&again, "has finished");
    assert_eq!(shop.refunds(), 1, "the refund ran once");
    assert!(CodeMode::paused(&shop.gate()).unwrap().is_empty());
}

#[tokio::test]
async fn a_denied_call_raises_permission_error_that_the_program_catches() {
    let shop = shop();
    let code = r#"
try:
    refund(order_id="A-2", amount=900)
    result = "refunded"
except PermissionError as e:
    result = "not refunded: " + str(e)
result
"#;
    let run = code_mode().run(&shop.gate(), "s", &operator(), code).await;
    let (run_id, approval_id) = paused(&run);
    shop.person()
        .deny(&approval_id, Some("over the limit"), SystemTime::now())
        .unwrap();
    let resumed = code_mode().resume(&shop.gate(), &run_id, &operator()).await;
    assert!(resumed.is_ok(), "{resumed:?}");
    let value = resumed.value.unwrap();
    let text = value.as_str().unwrap();
    assert!(text.starts_with("not refunded:"), "{text}");
    assert!(text.contains("over the limit"), "{text}");
    assert_eq!(shop.refunds(), 0);
}

#[tokio::test]
async fn a_program_whose_approval_expired_gets_permission_error_at_its_call() {
    let shop = shop();
    let mode = code_mode().limits(CodeLimits {
        approval_wait: Duration::from_millis(50),
        ..*code_mode().current_limits()
    });
    let run = mode.run(&shop.gate(), "s", &operator(), REFUND_ONE).await;
    let (run_id, approval_id) = paused(&run);
    tokio::time::sleep(Duration::from_millis(120)).await;
    let resumed = mode.resume(&shop.gate(), &run_id, &operator()).await;
    let error = resumed.error.as_ref().expect("the call raised");
    assert_eq!(
        error.exception.as_deref(),
        Some("PermissionError"),
        "{error:?}"
    );
    assert!(
        error.message.contains("code_mode.approval_wait"),
        "{error:?}"
    );
    assert_eq!(shop.refunds(), 0);
    let approval = ApprovalStore::get(&shop.person(), &approval_id)
        .unwrap()
        .unwrap();
    assert_eq!(
        approval.status,
        ApprovalStatus::Denied,
        "the expired request does not linger"
    );
}

#[tokio::test]
async fn a_tampered_snapshot_is_refused_and_nothing_runs() {
    let shop = shop();
    let run = code_mode()
        .run(&shop.gate(), "s", &operator(), REFUND_ONE)
        .await;
    let (run_id, approval_id) = paused(&run);
    shop.person()
        .approve(&approval_id, None, SystemTime::now())
        .unwrap();
    edit(
        &shop.file,
        "UPDATE code_runs SET snapshot = CAST(snapshot || x'00' AS BLOB)",
    );
    let resumed = code_mode().resume(&shop.gate(), &run_id, &operator()).await;
    refused(&resumed, "seal does not match");
    assert_eq!(shop.refunds(), 0);

    // A row moved to another principal is refused alike.
    let run = code_mode()
        .run(&shop.gate(), "t", &operator(), REFUND_ONE)
        .await;
    let (run_id, _) = paused(&run);
    edit(
        &shop.file,
        &format!("UPDATE code_runs SET principal = 'mallory' WHERE run_id = '{run_id}'"),
    );
    let mallory = Principal {
        id: "mallory".into(),
        ..operator()
    };
    let resumed = code_mode().resume(&shop.gate(), &run_id, &mallory).await;
    refused(&resumed, "seal does not match");
}

fn edit(file: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(file).unwrap();
    conn.execute_batch(sql).unwrap();
}

#[tokio::test]
async fn a_program_is_resumed_only_by_its_principal_and_not_before_its_approval_is_answered() {
    let shop = shop();
    let run = code_mode()
        .run(&shop.gate(), "s", &operator(), REFUND_ONE)
        .await;
    let (run_id, approval_id) = paused(&run);
    let other = Principal {
        id: "support".into(),
        ..operator()
    };
    let resumed = code_mode().resume(&shop.gate(), &run_id, &other).await;
    refused(&resumed, "only it may resume");

    let early = code_mode().resume(&shop.gate(), &run_id, &operator()).await;
    assert_eq!(paused(&early), (run_id.clone(), approval_id.clone()));
    assert_eq!(shop.refunds(), 0);

    shop.person()
        .approve(&approval_id, None, SystemTime::now())
        .unwrap();
    let resumed = code_mode().resume(&shop.gate(), &run_id, &operator()).await;
    assert!(resumed.is_ok(), "{resumed:?}");
    assert_eq!(shop.refunds(), 1);
    let unknown = code_mode()
        .resume(&shop.gate(), "code-nothing", &operator())
        .await;
    refused(&unknown, "no paused program");
}

#[tokio::test]
async fn a_program_that_pauses_more_often_than_max_suspensions_ends_naming_the_limit() {
    let shop = shop();
    let mode = code_mode().limits(CodeLimits {
        max_suspensions: 1,
        ..*code_mode().current_limits()
    });
    let code = r#"
for order_id in ["A-1", "A-2"]:
    refund(order_id=order_id, amount=10)
"#;
    let run = mode.run(&shop.gate(), "s", &operator(), code).await;
    let (run_id, approval_id) = paused(&run);
    shop.person()
        .approve(&approval_id, None, SystemTime::now())
        .unwrap();
    let resumed = mode.resume(&shop.gate(), &run_id, &operator()).await;
    let error = resumed.error.as_ref().expect("the limit ended it");
    assert_eq!(error.kind, "limit", "{error:?}");
    assert_eq!(error.limit, Some("max_suspensions"));
    assert!(
        error.message.contains("code_mode.max_suspensions"),
        "{error:?}"
    );
    assert_eq!(
        shop.refunds(),
        1,
        "the approved refund ran, the next did not"
    );
}

/// Approves every approval in the store it is given, as a person answering an
/// elicitation would.
struct Approver {
    store: SqliteStore,
    asked: AtomicUsize,
}

impl AskApproval for Approver {
    fn ask<'a>(&'a self, approval_id: &'a str, _reason: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.asked.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(800)).await;
            self.store
                .approve(approval_id, None, SystemTime::now())
                .is_ok()
        })
    }
}

#[tokio::test]
async fn an_asker_that_records_an_answer_lets_the_program_go_on_within_one_run() {
    let shop = shop();
    let approver = Approver {
        store: shop.person(),
        asked: AtomicUsize::new(0),
    };
    // The wall clock is shorter than the time the person takes: waiting for a
    // person does not count.
    let mode = code_mode().limits(CodeLimits {
        wall_clock: Duration::from_millis(1200),
        ..*code_mode().current_limits()
    });
    let code = r#"
done = []
for order_id in ["A-1", "A-2"]:
    done.append(refund(order_id=order_id, amount=10)["order_id"])
done
"#;
    let run = mode
        .run_asking(&shop.gate(), "s", &operator(), code, &approver)
        .await;
    assert!(run.is_ok(), "{run:?}");
    assert_eq!(run.value, Some(json!(["A-1", "A-2"])));
    assert_eq!(approver.asked.load(Ordering::SeqCst), 2);
    assert_eq!(shop.refunds(), 2);
    assert!(CodeMode::paused(&shop.gate()).unwrap().is_empty());
}
