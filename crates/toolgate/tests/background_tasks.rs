//! Background tools run in the background: the caller gets a task id at once, the
//! call goes through every stage of the gate, and its result is recorded when it
//! ends. Tasks are kept in the store: readable from a new gate on the same SQLite
//! file, interrupted (never re-run) when the gate that ran them is gone, and
//! dropped a TTL after they finished.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, GateOptions, GateStore, MemoryGateStore, Outcome, Principal, SqliteStore, Tool,
    ToolCall, ToolCtx, ToolError, ToolHandler, audit::RecordKind, gate::TaskError,
    gate::TaskFilter, store::AuditLog, store::TaskStatus, tool::Tier,
};

/// Build a report, taking `millis` to do it.
#[derive(Tool)]
#[tool(effect = "write")]
struct BuildReport(Arc<AtomicUsize>);

#[derive(Deserialize, JsonSchema)]
struct Job {
    /// How long the report takes.
    millis: u64,
}

impl ToolHandler for BuildReport {
    type Input = Job;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, job: Job) -> Result<Value, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(job.millis)).await;
        Ok(json!({"report": "ready", "took_ms": job.millis}))
    }
}

/// Look up an order.
#[derive(Tool)]
#[tool(effect = "read")]
struct LookupOrder;

impl ToolHandler for LookupOrder {
    type Input = Job;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, job: Job) -> Result<Value, ToolError> {
        tokio::time::sleep(Duration::from_millis(job.millis)).await;
        Ok(json!({"status": "shipped"}))
    }
}

const SPEC: &str = r#"
policy:
  effects: {write: allow, read: allow}
principals:
  analyst: {ceiling: write, scopes: ["*"]}
  intern: {ceiling: write, scopes: ["*"]}
state:
  report: {type: string, description: The last report built.}
tools:
  - name: build_report
    description: Build a report.
    effect: write
    background: true
    set_state: {report: ready}
  - name: lookup_order
    description: Look up an order.
    effect: read
"#;

fn spec() -> SpecFile {
    let doc = toolgate::spec::Document::parse(SPEC).unwrap();
    serde_json::from_value(doc.value).unwrap()
}

fn gate_on(store: Arc<dyn GateStore>, runs: &Arc<AtomicUsize>) -> Gate {
    let natives = Catalog::new()
        .with_native(BuildReport(runs.clone()))
        .unwrap()
        .with_native(LookupOrder)
        .unwrap();
    Gate::from_spec(&spec(), "tools.yaml", &natives, store).unwrap()
}

fn principal(id: &str) -> Principal {
    Principal {
        id: id.into(),
        ceiling: Tier::Write,
        scopes: vec!["*".into()],
        claims: Default::default(),
    }
}

fn report(millis: u64) -> ToolCall {
    ToolCall::new("c1", "build_report", json!({"millis": millis}))
}

fn task_id(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Started { task_id } => task_id.clone(),
        other => panic!("expected a started task, got {other:?}"),
    }
}

#[tokio::test]
async fn a_background_call_returns_a_task_id_at_once_and_records_its_result_when_it_ends() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs);
    let operator = Principal::operator();

    let begun = Instant::now();
    let outcome = gate.call("s", report(300), &operator).await;
    assert!(begun.elapsed() < Duration::from_millis(250), "{outcome:?}");
    assert_eq!(outcome.status(), "started");
    let id = task_id(&outcome);
    assert!(outcome.message_for_model().contains(&id));

    // Recorded as any call: the intent is in the log before it ends.
    let task = gate.task(&id, &operator).unwrap();
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(
        (task.tool.as_str(), task.session.as_str()),
        ("build_report", "s")
    );
    let pending = store.pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].entry.run_id, task.run_id);
    assert_eq!(gate.state("s").unwrap().get("report"), None);

    let done = gate
        .await_task(&id, Duration::from_secs(5), &operator)
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    let Some(Outcome::Ok { value, .. }) = &done.outcome else {
        panic!("{done:?}")
    };
    assert_eq!(value["report"], "ready");
    // Its completion is recorded with its state effects.
    assert_eq!(gate.state("s").unwrap()["report"], "ready");
    assert!(store.pending().unwrap().is_empty());
    let completion = store.tail(1).unwrap().remove(0);
    assert_eq!(completion.entry.kind, RecordKind::Completion);
    assert_eq!(completion.entry.outcome.as_deref(), Some("ok"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn any_call_can_be_started_as_a_task_and_a_plain_call_still_waits() {
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(Arc::new(MemoryGateStore::default()), &runs);
    let operator = Principal::operator();
    let lookup = || ToolCall::new("c2", "lookup_order", json!({"millis": 10}));

    assert_eq!(gate.call("s", lookup(), &operator).await.status(), "ok");
    let id = task_id(&gate.start("s", lookup(), &operator).await);
    let done = gate
        .await_task(&id, Duration::from_secs(5), &operator)
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(done.outcome.unwrap().value().unwrap()["status"], "shipped");
}

#[tokio::test]
async fn a_refused_background_call_starts_no_task() {
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(Arc::new(MemoryGateStore::default()), &runs);
    let outcome = gate
        .call(
            "s",
            ToolCall::new("c3", "build_report", json!({"millis": "soon"})),
            &Principal::operator(),
        )
        .await;
    assert_eq!(outcome.status(), "error", "{outcome:?}");
    let all = gate
        .tasks(&TaskFilter::default(), &Principal::operator())
        .unwrap();
    assert!(all.is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_principal_sees_only_its_own_tasks_and_the_operator_sees_every_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(Arc::new(MemoryGateStore::default()), &runs);
    let (analyst, intern) = (principal("analyst"), principal("intern"));
    let mine = task_id(&gate.call("s", report(10), &analyst).await);
    let theirs = task_id(&gate.call("t", report(10), &intern).await);

    let listed = |p: &Principal| -> Vec<String> {
        gate.tasks(&TaskFilter::default(), p)
            .unwrap()
            .into_iter()
            .map(|t| t.id)
            .collect()
    };
    assert_eq!(listed(&analyst), [mine]);
    assert_eq!(listed(&intern), std::slice::from_ref(&theirs));
    assert_eq!(listed(&Principal::operator()).len(), 2);
    // Another principal's task is as unknown as one that never was.
    let error = gate.task(&theirs, &analyst).unwrap_err();
    assert!(matches!(error, TaskError::Unknown { .. }), "{error}");
    assert!(gate.cancel_task(&theirs, &analyst).is_err());
    let by_session = TaskFilter {
        session: Some("t".into()),
        ..TaskFilter::default()
    };
    assert_eq!(
        gate.tasks(&by_session, &Principal::operator()).unwrap()[0].id,
        theirs
    );
}

#[tokio::test]
async fn a_cancelled_task_ends_cancelled_and_its_completion_says_so() {
    let store = Arc::new(MemoryGateStore::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(store.clone(), &runs);
    let operator = Principal::operator();
    let id = task_id(&gate.call("s", report(10_000), &operator).await);
    tokio::time::sleep(Duration::from_millis(50)).await;

    gate.cancel_task(&id, &operator).unwrap();
    let done = gate
        .await_task(&id, Duration::from_secs(5), &operator)
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Cancelled);
    assert_eq!(
        store.tail(1).unwrap()[0].entry.outcome.as_deref(),
        Some("cancelled")
    );
    assert!(store.pending().unwrap().is_empty());
    assert_eq!(gate.state("s").unwrap().get("report"), None);
    // Cancelling a finished task changes nothing.
    assert_eq!(
        gate.cancel_task(&id, &operator).unwrap().status,
        TaskStatus::Cancelled
    );
}

#[test]
fn a_task_whose_gate_stopped_is_interrupted_never_re_run_and_stays_in_audit_pending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let runs = Arc::new(AtomicUsize::new(0));
    let operator = Principal::operator();
    let (id, finished) = {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        let gate = gate_on(store, &runs);
        let id = task_id(&runtime.block_on(gate.call("s", report(60_000), &operator)));
        let finished = task_id(&runtime.block_on(gate.start(
            "s",
            ToolCall::new("c9", "lookup_order", json!({"millis": 1})),
            &operator,
        )));
        runtime
            .block_on(gate.await_task(&finished, Duration::from_secs(5), &operator))
            .unwrap();
        // Another gate on the file, while the first still runs it: still working.
        let other = gate_on(Arc::new(SqliteStore::open(&path).unwrap()), &runs);
        assert_eq!(
            other.task(&id, &operator).unwrap().status,
            TaskStatus::Working
        );
        // The process "stops": its runtime and gate go, the call half done.
        drop(runtime);
        drop(gate);
        (id, finished)
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let gate = gate_on(store.clone(), &runs);
    let task = gate.task(&id, &operator).unwrap();
    assert_eq!(task.status, TaskStatus::Interrupted);
    assert_eq!(task.outcome, None);
    // The one that finished before is still there, with its result.
    let done = gate.task(&finished, &operator).unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    assert!(done.outcome.unwrap().is_ok());
    // The write's intent has no completion: the operator must resolve it.
    let pending = store.pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].entry.run_id, task.run_id);
    // Never run again, and it stays interrupted.
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(100)).await });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let listed = gate
        .tasks(
            &TaskFilter {
                status: Some(TaskStatus::Interrupted),
                ..TaskFilter::default()
            },
            &operator,
        )
        .unwrap();
    assert_eq!(listed.len(), 1);
}

#[tokio::test]
async fn a_finished_task_stays_readable_for_its_ttl_then_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("state.db")).unwrap());
    let runs = Arc::new(AtomicUsize::new(0));
    let skew = Arc::new(AtomicU64::new(0));
    let clock = {
        let skew = skew.clone();
        move || SystemTime::now() + Duration::from_millis(skew.load(Ordering::SeqCst))
    };
    let natives = Catalog::new()
        .with_native(BuildReport(runs.clone()))
        .unwrap();
    let gate =
        Gate::builder(toolgate::spec::spec_catalog(&spec(), "tools.yaml", &natives).unwrap())
            .spec(&spec())
            .store(store)
            .clock(clock)
            .options(GateOptions {
                task_ttl: Duration::from_secs(60),
                ..GateOptions::default()
            })
            .build();
    let operator = Principal::operator();
    let id = task_id(&gate.call("s", report(1), &operator).await);
    let done = gate
        .await_task(&id, Duration::from_secs(5), &operator)
        .await
        .unwrap();
    assert_eq!(done.ttl_ms, 60_000);
    assert!(done.updated_at.ends_with('Z'));

    skew.store(59_000, Ordering::SeqCst);
    assert!(gate.task(&id, &operator).is_ok(), "kept within its TTL");
    skew.store(61_000, Ordering::SeqCst);
    assert!(matches!(
        gate.task(&id, &operator),
        Err(TaskError::Unknown { .. })
    ));
}

#[tokio::test]
async fn a_file_of_the_schema_before_tasks_is_migrated_and_keeps_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        toolgate::store::StateStore::apply(&store, "s", &[("report".into(), json!("old"))])
            .unwrap();
    }
    // As a toolgate of schema 6 left it: no `tasks` or `code_runs` table.
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.execute_batch("DROP TABLE tasks; DROP TABLE code_runs; PRAGMA user_version = 6;")
        .unwrap();
    drop(raw);

    let runs = Arc::new(AtomicUsize::new(0));
    let gate = gate_on(Arc::new(SqliteStore::open(&path).unwrap()), &runs);
    assert_eq!(gate.state("s").unwrap()["report"], "old");
    let operator = Principal::operator();
    let id = task_id(&gate.call("s", report(1), &operator).await);
    let done = gate
        .await_task(&id, Duration::from_secs(5), &operator)
        .await
        .unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_principal_with_its_most_tasks_running_is_refused_before_anything_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let natives = Catalog::new()
        .with_native(BuildReport(runs.clone()))
        .unwrap();
    let gate =
        Gate::builder(toolgate::spec::spec_catalog(&spec(), "tools.yaml", &natives).unwrap())
            .spec(&spec())
            .store(Arc::new(MemoryGateStore::default()))
            .options(GateOptions {
                max_tasks_per_principal: 2,
                ..GateOptions::default()
            })
            .build();
    let analyst = principal("analyst");
    let first = task_id(&gate.call("s", report(400), &analyst).await);
    task_id(&gate.call("s", report(400), &analyst).await);
    let refused = gate.call("s", report(400), &analyst).await;
    let Outcome::RateLimited { limit, .. } = &refused else {
        panic!("expected a refusal, got {refused:?}")
    };
    assert!(
        limit.contains("2 background tasks running at once for analyst"),
        "{limit}"
    );
    assert!(
        matches!(
            gate.call("s", report(1), &principal("intern")).await,
            Outcome::Started { .. }
        ),
        "another principal still starts tasks"
    );
    let refusal = gate
        .store()
        .tail(usize::MAX)
        .unwrap()
        .into_iter()
        .find(|r| r.entry.outcome.as_deref() == Some("rate_limited"))
        .expect("the refusal is audited");
    assert_eq!(refusal.entry.kind, RecordKind::Refusal);
    gate.await_task(&first, Duration::from_secs(5), &analyst)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        matches!(
            gate.call("s", report(1), &analyst).await,
            Outcome::Started { .. }
        ),
        "a finished task gives its place back"
    );
}

/// Echo a payload back, as large as it came.
#[derive(Tool)]
#[tool(effect = "read")]
struct Echo;

#[derive(Deserialize, JsonSchema)]
struct Payload {
    /// What to send back.
    blob: String,
}

impl ToolHandler for Echo {
    type Input = Payload;
    type Output = Value;
    async fn call(&self, _ctx: &ToolCtx, payload: Payload) -> Result<Value, ToolError> {
        Ok(json!({"blob": payload.blob}))
    }
}

#[tokio::test]
async fn a_task_keeps_a_large_result_as_its_size_hash_and_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.db");
    let gate = Gate::builder(Catalog::new().with_native(Echo).unwrap())
        .store(Arc::new(SqliteStore::open(&file).unwrap()))
        .build();
    let operator = Principal::operator();
    let blob = "x".repeat(900_000);
    let ids: Vec<String> = {
        let mut ids = Vec::new();
        for i in 0..5 {
            let call = ToolCall::new(format!("c{i}"), "echo", json!({"blob": blob}));
            ids.push(task_id(&gate.start("s", call, &operator).await));
        }
        ids
    };
    for id in &ids {
        let task = gate
            .await_task(id, Duration::from_secs(10), &operator)
            .await
            .unwrap();
        let Some(Outcome::Ok { value, notes, .. }) = task.outcome else {
            panic!("{task:?}")
        };
        assert_eq!(value["[clipped]"]["bytes"], json!(900_011));
        assert!(
            notes.iter().any(|n| n.contains("a background task keeps")),
            "{notes:?}"
        );
    }
    drop(gate);
    let size = std::fs::metadata(&file).unwrap().len()
        + std::fs::metadata(dir.path().join("state.db-wal")).map_or(0, |m| m.len());
    assert!(
        size < 2 << 20,
        "five 900 kB results, kept bounded, take {size} bytes of state"
    );
}
