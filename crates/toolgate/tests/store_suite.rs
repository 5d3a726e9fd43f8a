//! The store suite: what every durable gate store promises, run against each
//! backend — an SQLite file, and a PostgreSQL database when `TOOLGATE_TEST_POSTGRES`
//! names one (`scripts/postgres-store` starts a throwaway cluster and sets it).
//!
//! Each test is one function taking a [`Backend`], which opens handles on one
//! store: two handles on one store stand for two processes (SQLite) or two
//! instances (PostgreSQL) sharing it. `suite!` runs every function once per backend.
//! Without the variable the PostgreSQL tests skip with a message, unless
//! `TOOLGATE_TEST_POSTGRES_REQUIRED` is set, when they fail.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};
use toolgate::{
    Admission, ApprovalRequest, AuditEntry, Effect, GateStore, Outcome, PausedRun, PinCheck,
    PinStore, RateBucket, RateTaken, RecordKind, RecordedCall, Resolution, SessionKey, SessionKind,
    StateStore, StoreError, StoredSession, StoredSessions, TaskRecord, TaskStatus,
};

/// Everything a gate and its server keep in one store.
trait Store: GateStore + PinStore + StoredSessions {}
impl<T: GateStore + PinStore + StoredSessions> Store for T {}

/// One store, and how to open another handle on it.
trait Backend {
    fn open(&self) -> Result<Arc<dyn Store>, StoreError>;
    /// Marks the store as written by a toolgate newer than this one.
    fn make_newer(&self);
    /// Whether the store counts rate limits for every handle on it.
    fn shares_rate_limits(&self) -> bool;
    /// The keys of the rate buckets the store keeps, in order (none where rate
    /// limits are counted in the process).
    fn rate_bucket_keys(&self) -> Vec<String>;
}

struct Sqlite(tempfile::TempDir);

impl Sqlite {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }
}

impl Backend for Sqlite {
    fn open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(Arc::new(toolgate::SqliteStore::open_in_dir(self.0.path())?))
    }
    fn make_newer(&self) {
        set_user_version(&self.0.path().join("state.db"), 999);
    }
    fn shares_rate_limits(&self) -> bool {
        false
    }
    fn rate_bucket_keys(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Sets SQLite's `PRAGMA user_version` of a closed file: a header field at byte 60,
/// big-endian (a store handle would migrate the file, so it is written by hand).
fn set_user_version(path: &std::path::Path, version: u32) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    std::fs::write(path, bytes).unwrap();
}

struct Postgres {
    url: String,
}

impl Postgres {
    /// A fresh database on the server `TOOLGATE_TEST_POSTGRES` names, or `None`
    /// (with a message) when it is not set.
    fn new() -> Option<Self> {
        let Some(base) = std::env::var("TOOLGATE_TEST_POSTGRES")
            .ok()
            .filter(|v| !v.is_empty())
        else {
            assert!(
                std::env::var_os("TOOLGATE_TEST_POSTGRES_REQUIRED").is_none(),
                "TOOLGATE_TEST_POSTGRES_REQUIRED is set but TOOLGATE_TEST_POSTGRES is not"
            );
            eprintln!(
                "skipped: set TOOLGATE_TEST_POSTGRES to a PostgreSQL URL (scripts/postgres-store does) to run the PostgreSQL store tests"
            );
            return None;
        };
        let name = format!("suite_{}", uuid::Uuid::new_v4().simple());
        admin(&base, &format!("CREATE DATABASE {name}"));
        let url = match base.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => panic!("TOOLGATE_TEST_POSTGRES must end in /DATABASE"),
        };
        Some(Self { url })
    }
}

/// Runs `sql` on the database at `url`.
fn admin(url: &str, sql: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot reach the test database: {e}"));
        tokio::spawn(connection);
        client.batch_execute(sql).await.unwrap();
    });
}

impl Backend for Postgres {
    fn open(&self) -> Result<Arc<dyn Store>, StoreError> {
        // Generous: a debug build on a busy machine is slow to make connections
        // (SCRAM's key stretching runs unoptimized).
        let options = toolgate::PostgresOptions {
            pool_size: 8,
            connect_timeout: Duration::from_secs(60),
            ..Default::default()
        };
        Ok(Arc::new(toolgate::PostgresStore::open(&self.url, options)?))
    }
    fn make_newer(&self) {
        admin(&self.url, "UPDATE toolgate_schema SET version = 999");
    }
    fn shares_rate_limits(&self) -> bool {
        true
    }
    fn rate_bucket_keys(&self) -> Vec<String> {
        admin_strings(&self.url, "SELECT key FROM rate_buckets ORDER BY key")
    }
}

/// The first column of what `sql` returns on the database at `url`.
fn admin_strings(url: &str, sql: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("cannot reach the test database: {e}"));
        tokio::spawn(connection);
        let rows = client.query(sql, &[]).await.unwrap();
        rows.iter().map(|row| row.get(0)).collect()
    })
}

macro_rules! suite {
    ($($test:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $test() { super::$test(&super::Sqlite::new()); })*
        }
        mod postgres {
            $(#[test] fn $test() {
                if let Some(backend) = super::Postgres::new() { super::$test(&backend); }
            })*
        }
    };
}

suite!(
    state_is_kept_per_session_and_a_batch_lands_whole,
    call_histories_keep_sessions_apart_in_order,
    concurrent_writers_on_two_handles_write_one_unbroken_chain,
    an_intent_without_a_completion_is_pending_until_resolved,
    an_approved_call_runs_once_however_many_handles_race_for_it,
    a_denial_is_reported_once_and_asking_twice_opens_one_request,
    once_admits_exactly_one_of_many_concurrent_calls_across_handles,
    a_turn_is_held_from_admission_to_completion,
    a_tool_is_pinned_and_its_change_recorded_until_accepted,
    tasks_are_written_finished_and_dropped_after_their_ttl,
    a_paused_program_is_taken_once_across_handles,
    a_store_written_by_a_newer_toolgate_is_refused,
    a_shared_rate_bucket_admits_exactly_its_limit_across_handles,
    expired_rate_buckets_are_swept_and_live_ones_stay_counted,
    a_session_written_on_one_handle_is_renewed_and_ended_on_another,
);

fn entry(kind: RecordKind, run: &str, session: &str, tool: &str) -> AuditEntry {
    AuditEntry {
        time: "2026-01-01T00:00:00.000Z".into(),
        kind,
        run_id: run.into(),
        call_id: format!("call-{run}"),
        session: session.into(),
        principal: "operator".into(),
        tool: tool.into(),
        effect: Some(Effect::Write),
        arguments: json!({"run": run}),
        decision: None,
        reason: None,
        outcome: (kind == RecordKind::Completion).then(|| "ok".into()),
        message: None,
        duration_ms: None,
        attempts: None,
        auth: None,
        credential: None,
    }
}

fn state_is_kept_per_session_and_a_batch_lands_whole(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    store
        .apply(
            "a",
            &[
                ("cart".into(), json!(["A-1"])),
                ("step".into(), json!(1)),
                ("step".into(), json!(2)),
            ],
        )
        .unwrap();
    let other = backend.open().unwrap();
    assert_eq!(
        StateStore::get(&*other, "a", "step").unwrap(),
        Some(json!(2))
    );
    assert_eq!(StateStore::get(&*other, "b", "step").unwrap(), None);
    let mut expected = Map::new();
    expected.insert("cart".into(), json!(["A-1"]));
    expected.insert("step".into(), json!(2));
    assert_eq!(other.load("a").unwrap(), expected);
    other.reset("a").unwrap();
    assert!(store.load("a").unwrap().is_empty());
}

fn call_histories_keep_sessions_apart_in_order(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    store.record_call("a", "verify", false, "t1").unwrap();
    store.record_call("a", "verify", true, "t2").unwrap();
    store.record_call("b", "lookup", true, "t3").unwrap();
    let calls: Vec<(u64, String, bool)> = store
        .calls("a")
        .unwrap()
        .into_iter()
        .map(|c| (c.seq, c.tool, c.ok))
        .collect();
    assert_eq!(
        calls,
        [(1, "verify".into(), false), (2, "verify".into(), true)]
    );
    assert_eq!(store.calls("b").unwrap()[0].seq, 1);
    store.forget_calls("a").unwrap();
    assert!(store.calls("a").unwrap().is_empty());
    assert_eq!(store.calls("b").unwrap().len(), 1);
}

fn concurrent_writers_on_two_handles_write_one_unbroken_chain(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = handles[w % 2].clone();
            std::thread::spawn(move || {
                let mut seqs = Vec::new();
                for i in 0..50 {
                    let run = format!("run-{w}-{i}");
                    let session = format!("s{}", i % 3);
                    let writes = [("last".to_owned(), json!(run))];
                    let completion = entry(RecordKind::Completion, &run, &session, "lookup");
                    if i % 2 == 0 {
                        let intent = entry(RecordKind::Intent, &run, &session, "lookup");
                        seqs.push(store.append(intent).unwrap().seq);
                        seqs.push(
                            store
                                .complete(&session, &writes, None, completion)
                                .unwrap()
                                .seq,
                        );
                    } else {
                        let intent = Some(entry(RecordKind::Intent, &run, &session, "lookup"));
                        let done = store
                            .complete(&session, &writes, intent, completion)
                            .unwrap();
                        seqs.extend([done.seq - 1, done.seq]);
                    }
                }
                seqs
            })
        })
        .collect();
    let seqs: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let distinct: BTreeSet<u64> = seqs.iter().copied().collect();
    assert_eq!(distinct.len(), 800, "every record has a place of its own");
    assert_eq!(distinct.last(), Some(&800));
    let store = &handles[0];
    assert!(store.verify().unwrap().is_ok());
    assert!(store.pending().unwrap().is_empty());
    let tail = store.tail(usize::MAX).unwrap();
    assert_eq!(tail.len(), 800);
    // Each intent comes before its own completion.
    for record in tail
        .iter()
        .filter(|r| r.entry.kind == RecordKind::Completion)
    {
        let intent = tail
            .iter()
            .find(|r| r.entry.kind == RecordKind::Intent && r.entry.run_id == record.entry.run_id)
            .expect("an intent for every completion");
        assert!(intent.seq < record.seq);
    }
    let history: usize = (0..3)
        .map(|s| store.calls(&format!("s{s}")).unwrap().len())
        .sum();
    assert_eq!(history, 400);
}

fn an_intent_without_a_completion_is_pending_until_resolved(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let intent = store
        .append(entry(RecordKind::Intent, "r1", "s", "charge"))
        .unwrap();
    store
        .append(entry(RecordKind::Intent, "r2", "s", "charge"))
        .unwrap();
    store
        .complete(
            "s",
            &[],
            None,
            entry(RecordKind::Completion, "r2", "s", "charge"),
        )
        .unwrap();
    let pending = backend.open().unwrap().pending().unwrap();
    assert_eq!(pending, vec![intent.clone()]);
    let mut cancelled = entry(RecordKind::Completion, "r1", "s", "charge");
    cancelled.outcome = Some("cancelled".into());
    store.resolve_run(&intent, cancelled).unwrap();
    assert!(store.pending().unwrap().is_empty());
    assert_eq!(
        store.calls("s").unwrap().len(),
        1,
        "a cancelled call never ran"
    );
    assert!(store.verify().unwrap().is_ok());
}

fn request(session: &str) -> ApprovalRequest {
    ApprovalRequest::new(
        session,
        "refund",
        json!({"order": "A-1"}),
        "agent",
        "write asks",
    )
}

fn an_approved_call_runs_once_however_many_handles_race_for_it(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    let now = SystemTime::now();
    let Resolution::Pending { id, created: true } = handles[0].resolve(&request("s"), now).unwrap()
    else {
        panic!("a new request")
    };
    handles[1].approve(&id, None, now).unwrap();
    let granted = Arc::new(AtomicUsize::new(0));
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let store = handles[i % 2].clone();
            let granted = granted.clone();
            std::thread::spawn(move || {
                if let Resolution::Granted { .. } = store.resolve(&request("s"), now).unwrap() {
                    granted.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for racer in racers {
        racer.join().unwrap();
    }
    assert_eq!(granted.load(Ordering::SeqCst), 1, "exactly one call ran");
    let all = handles[0].list(true).unwrap();
    assert_eq!(all[0].id, id);
    assert_eq!(all[0].status, toolgate::ApprovalStatus::Consumed);
    // The losers opened one new request between them, not fifteen.
    assert_eq!(handles[1].list(false).unwrap().len(), 1);
}

fn a_denial_is_reported_once_and_asking_twice_opens_one_request(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let now = SystemTime::now();
    let Resolution::Pending { id, .. } = store.resolve(&request("s"), now).unwrap() else {
        panic!()
    };
    assert_eq!(
        store.resolve(&request("s"), now).unwrap(),
        Resolution::Pending {
            id: id.clone(),
            created: false
        }
    );
    store.deny(&id, Some("not today"), now).unwrap();
    assert!(matches!(
        store.deny(&id, None, now),
        Err(StoreError::ApprovalNotPending { .. })
    ));
    assert_eq!(
        store.resolve(&request("s"), now).unwrap(),
        Resolution::Denied {
            id: id.clone(),
            reason: "not today".into()
        }
    );
    assert!(matches!(
        store.resolve(&request("s"), now).unwrap(),
        Resolution::Pending { created: true, .. }
    ));
    let unknown = store.approve("ap-00000000", None, now).unwrap_err();
    assert!(
        matches!(unknown, StoreError::UnknownApproval { .. }),
        "{unknown}"
    );
    // A grant covers the tool for every conversation.
    let Resolution::Pending { id, .. } = store.resolve(&request("t"), now).unwrap() else {
        panic!()
    };
    let grant = toolgate::Grant {
        ttl: Duration::from_secs(60),
        scope: toolgate::GrantScope::Tool,
    };
    store.approve(&id, Some(grant), now).unwrap();
    assert!(matches!(
        store.resolve(&request("u"), now).unwrap(),
        Resolution::Granted { by } if by.starts_with("grant ")
    ));
}

fn once_admits_exactly_one_of_many_concurrent_calls_across_handles(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    let admitted = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..16)
        .map(|i| {
            let store = handles[i % 2].clone();
            let admitted = admitted.clone();
            std::thread::spawn(move || {
                let run = format!("r{i}");
                let mut once = |_: &Map<String, Value>, calls: &[RecordedCall]| {
                    calls.iter().all(|c| c.tool != "charge")
                };
                // A busy turn is tried again, as the gate does.
                loop {
                    let intent = entry(RecordKind::Intent, &run, "s", "charge");
                    match store
                        .admit("s", intent, Duration::from_secs(60), &mut once)
                        .unwrap()
                    {
                        Admission::Admitted(_) => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                            let done = entry(RecordKind::Completion, &run, "s", "charge");
                            store.complete_turn("s", &[], done).unwrap();
                            return;
                        }
                        Admission::Busy => std::thread::sleep(Duration::from_millis(5)),
                        Admission::Refused => return,
                        other => panic!("{other:?}"),
                    }
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::SeqCst), 1);
    assert_eq!(handles[0].calls("s").unwrap().len(), 1);
    assert_eq!(
        handles[1].tail(100).unwrap().len(),
        2,
        "one intent, one completion"
    );
}

fn a_turn_is_held_from_admission_to_completion(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let long = Duration::from_secs(60);
    let checks = std::cell::Cell::new(0);
    let mut once = |_: &Map<String, Value>, calls: &[RecordedCall]| {
        checks.set(checks.get() + 1);
        calls.iter().all(|c| c.tool != "charge")
    };
    let first = store.admit(
        "s",
        entry(RecordKind::Intent, "r1", "s", "charge"),
        long,
        &mut once,
    );
    assert!(matches!(first, Ok(Admission::Admitted(_))), "{first:?}");
    let second = store.admit(
        "s",
        entry(RecordKind::Intent, "r2", "s", "charge"),
        long,
        &mut once,
    );
    assert_eq!(second.unwrap(), Admission::Busy);
    store
        .complete_turn("s", &[], entry(RecordKind::Completion, "r1", "s", "charge"))
        .unwrap();
    let third = store.admit(
        "s",
        entry(RecordKind::Intent, "r3", "s", "charge"),
        long,
        &mut once,
    );
    assert_eq!(third.unwrap(), Admission::Refused);
    assert_eq!(checks.get(), 2, "a busy turn is not even checked");
    // A write whose holder died waits for the operator.
    let short = Duration::from_millis(20);
    let died = store.admit(
        "t",
        entry(RecordKind::Intent, "r4", "t", "charge"),
        short,
        &mut once,
    );
    let Ok(Admission::Admitted(intent)) = died else {
        panic!("{died:?}")
    };
    std::thread::sleep(Duration::from_millis(40));
    let next = store.admit(
        "t",
        entry(RecordKind::Intent, "r5", "t", "charge"),
        long,
        &mut once,
    );
    assert_eq!(
        next.unwrap(),
        Admission::Abandoned {
            run_id: "r4".into(),
            tool: "charge".into()
        }
    );
    store
        .resolve_run(&intent, entry(RecordKind::Completion, "r4", "t", "charge"))
        .unwrap();
    let after = store.admit(
        "t",
        entry(RecordKind::Intent, "r6", "t", "charge"),
        long,
        &mut once,
    );
    assert_eq!(after.unwrap(), Admission::Refused, "once: it ran");
    assert!(store.verify().unwrap().is_ok());
}

fn a_tool_is_pinned_and_its_change_recorded_until_accepted(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let now = SystemTime::now();
    let v1 = json!({"name": "read", "description": "Read a file."});
    let v2 = json!({"name": "read", "description": "Read a file and send it away."});
    assert_eq!(
        store.observe_tool("fs.read", &v1, now).unwrap(),
        PinCheck::Pinned
    );
    assert_eq!(
        store.observe_tool("fs.read", &v1, now).unwrap(),
        PinCheck::Matches
    );
    let PinCheck::Changed(pin) = store.observe_tool("fs.read", &v2, now).unwrap() else {
        panic!("a change")
    };
    assert_eq!(pin.changed_fields(), ["description"]);
    let other = backend.open().unwrap();
    assert!(other.pin("fs.read").unwrap().unwrap().change.is_some());
    let accepted = other.accept_pin("fs.read", now).unwrap();
    assert_eq!(accepted.definition, v2);
    assert_eq!(
        store.observe_tool("fs.read", &v2, now).unwrap(),
        PinCheck::Matches
    );
    assert!(matches!(
        store.accept_pin("fs.read", now),
        Err(toolgate::PinError::Unchanged { .. })
    ));
    assert!(matches!(
        store.accept_pin("fs.reed", now),
        Err(toolgate::PinError::Unknown { suggestions, .. }) if suggestions == ["fs.read"]
    ));
    assert_eq!(store.pins().unwrap().len(), 1);
}

fn task(id: &str, created_ms: u64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        session: "s".into(),
        principal: "agent".into(),
        tool: "export".into(),
        call_id: "c1".into(),
        run_id: format!("run-{id}"),
        status: TaskStatus::Working,
        created_at: String::new(),
        updated_at: String::new(),
        ttl_ms: 1_000,
        outcome: None,
        created_ms,
        updated_ms: created_ms,
        owner: "test".into(),
        lease_until_ms: created_ms + 60_000,
        cancel_requested: false,
    }
}

fn tasks_are_written_finished_and_dropped_after_their_ttl(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    store.create_task(&task("task-1", 1_000)).unwrap();
    store.create_task(&task("task-2", 2_000)).unwrap();
    let done = Outcome::error("it broke", false);
    assert!(
        store
            .finish_task("task-1", TaskStatus::Failed, &done, 3_000)
            .unwrap()
    );
    assert!(
        !store
            .finish_task("task-1", TaskStatus::Completed, &done, 3_500)
            .unwrap()
    );
    store.request_task_cancel("task-2").unwrap();
    let other = backend.open().unwrap();
    let one = other.task("task-1").unwrap().unwrap();
    assert_eq!(one.status, TaskStatus::Failed);
    assert_eq!(one.outcome, Some(done));
    assert!(other.task("task-2").unwrap().unwrap().cancel_requested);
    assert!(other.interrupt_task("task-2", 3_000).unwrap());
    let ids: Vec<String> = other
        .all_tasks()
        .unwrap()
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(ids, ["task-1", "task-2"]);
    assert_eq!(other.drop_expired_tasks(3_999).unwrap(), 0);
    assert_eq!(other.drop_expired_tasks(4_000).unwrap(), 2);
    assert!(store.task("task-1").unwrap().is_none());
}

fn paused(run_id: &str) -> PausedRun {
    PausedRun {
        run_id: run_id.into(),
        session: "s".into(),
        principal: "agent".into(),
        code_sha256: "ab".repeat(32),
        tool: "refund".into(),
        call_id: "c1".into(),
        arguments: json!({"order": "A-1"}),
        approval_id: "ap-12345678".into(),
        reason: "write asks".into(),
        calls: 2,
        suspensions: 1,
        elapsed_ms: 40,
        printed: "hello\n".into(),
        since_ms: 1_000,
        expires_ms: 100_000,
        snapshot: vec![1, 2, 3, 0, 255],
    }
}

fn a_paused_program_is_taken_once_across_handles(backend: &dyn Backend) {
    let handles = [backend.open().unwrap(), backend.open().unwrap()];
    handles[0].pause_run(&paused("code-1")).unwrap();
    let listed = handles[1].paused_runs().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0].snapshot.is_empty(),
        "listings leave snapshots out"
    );
    let taken = Arc::new(AtomicUsize::new(0));
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let store = handles[i % 2].clone();
            let taken = taken.clone();
            std::thread::spawn(move || {
                if let Ok(run) = store.take_run("code-1") {
                    assert_eq!(run, paused("code-1"));
                    taken.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for racer in racers {
        racer.join().unwrap();
    }
    assert_eq!(taken.load(Ordering::SeqCst), 1);
    handles[1].release_run("code-1").unwrap();
    handles[0].take_run("code-1").unwrap();
    handles[0].finish_run("code-1").unwrap();
    assert!(matches!(
        handles[1].take_run("code-1"),
        Err(StoreError::CodeRunNotPaused { status: Some(s), .. }) if s == "finished"
    ));
}

fn a_store_written_by_a_newer_toolgate_is_refused(backend: &dyn Backend) {
    drop(backend.open().unwrap());
    backend.make_newer();
    let refused = backend.open().err().expect("a newer store is refused");
    let message = refused.to_string();
    assert!(message.contains("schema version 999"), "{message}");
    assert!(message.contains("upgrade"), "{message}");
}

fn bucket(key: &str, calls: u32) -> RateBucket {
    let interval = Duration::from_secs(3600) / calls;
    RateBucket {
        key: key.into(),
        interval,
        tolerance: interval * (calls - 1),
    }
}

fn a_shared_rate_bucket_admits_exactly_its_limit_across_handles(backend: &dyn Backend) {
    let handles: Vec<Arc<dyn Store>> = (0..3).map(|_| backend.open().unwrap()).collect();
    if !backend.shares_rate_limits() {
        // Each gate on this store counts in its own process.
        assert!(handles[0].rate_counters().is_none());
        return;
    }
    // 20 calls an hour, raced for by 12 threads on three handles.
    let admitted = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..12)
        .map(|i| {
            let store = handles[i % 3].clone();
            let admitted = admitted.clone();
            std::thread::spawn(move || {
                let counters = store.rate_counters().unwrap();
                for _ in 0..10 {
                    match counters.take_rate(&[bucket("hourly", 20)]).unwrap() {
                        RateTaken::Admitted => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                        RateTaken::Refused { bucket, wait } => {
                            assert_eq!(bucket, 0);
                            assert!(wait > Duration::from_secs(170), "{wait:?}");
                        }
                    }
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::SeqCst), 20);
    // A call under two buckets, one of them full: refused, and the other keeps
    // the call it had room for.
    let counters = handles[1].rate_counters().unwrap();
    let (a, full) = (bucket("a", 1), bucket("hourly", 20));
    assert!(matches!(
        counters.take_rate(&[full, a.clone()]).unwrap(),
        RateTaken::Refused { bucket: 0, .. }
    ));
    assert_eq!(
        counters.take_rate(std::slice::from_ref(&a)).unwrap(),
        RateTaken::Admitted
    );
    assert!(matches!(
        handles[2].rate_counters().unwrap().take_rate(&[a]).unwrap(),
        RateTaken::Refused { bucket: 0, .. }
    ));
}

fn expired_rate_buckets_are_swept_and_live_ones_stay_counted(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let Some(counters) = store.rate_counters() else {
        // Counted in the process: nothing kept to sweep.
        return;
    };
    let brief = |key: &str| RateBucket {
        key: key.into(),
        interval: Duration::from_millis(20),
        tolerance: Duration::ZERO,
    };
    // 30 buckets full again 20 ms from now, and 5 that stay a call ahead for an hour.
    for i in 0..30 {
        let taken = counters
            .take_rate(&[brief(&format!("brief-{i:02}"))])
            .unwrap();
        assert_eq!(taken, RateTaken::Admitted);
    }
    for i in 0..5 {
        let taken = counters
            .take_rate(&[bucket(&format!("hourly-{i}"), 1)])
            .unwrap();
        assert_eq!(taken, RateTaken::Admitted);
    }
    std::thread::sleep(Duration::from_millis(60));
    // Calls enough that a sweep comes round (one call in 64 sweeps).
    let steady = RateBucket {
        key: "steady".into(),
        interval: Duration::from_micros(1),
        tolerance: Duration::from_secs(1),
    };
    for _ in 0..64 {
        let taken = counters.take_rate(std::slice::from_ref(&steady)).unwrap();
        assert_eq!(taken, RateTaken::Admitted);
    }
    let kept = backend.rate_bucket_keys();
    assert!(
        kept.iter().all(|key| !key.starts_with("brief-")),
        "expired buckets left: {kept:?}"
    );
    for i in 0..5 {
        assert!(kept.contains(&format!("hourly-{i}")), "{kept:?}");
    }
    // Admission is as before: the live buckets still refuse, and a swept one
    // admits as a fresh bucket would, then refuses at its limit.
    for i in 0..5 {
        match counters
            .take_rate(&[bucket(&format!("hourly-{i}"), 1)])
            .unwrap()
        {
            RateTaken::Refused { bucket: 0, wait } => {
                assert!(wait > Duration::from_secs(3500), "{wait:?}")
            }
            other => panic!("hourly-{i}: {other:?}"),
        }
    }
    let swept = bucket("brief-00", 1);
    assert_eq!(
        counters.take_rate(std::slice::from_ref(&swept)).unwrap(),
        RateTaken::Admitted
    );
    assert!(matches!(
        counters.take_rate(&[swept]).unwrap(),
        RateTaken::Refused { bucket: 0, .. }
    ));
}

fn a_session_written_on_one_handle_is_renewed_and_ended_on_another(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let other = backend.open().unwrap();
    let key = SessionKey::of("0c5e8d1f-mcp-session");
    let session = StoredSession {
        kind: SessionKind::Mcp,
        key: key.clone(),
        principal: Some("support".into()),
        data: json!({"opened_by": {"principal": "support", "credential": "key k1"}}),
        created_ms: 1_000,
        expires_ms: 301_000,
        idle_ms: 300_000,
    };
    store.put_session(&session).unwrap();
    assert_eq!(
        other.session(SessionKind::Mcp, &key, 2_000).unwrap(),
        Some(session.clone()),
        "another handle reads it whole"
    );
    assert_eq!(
        other.session(SessionKind::Console, &key, 2_000).unwrap(),
        None,
        "kinds are kept apart"
    );
    assert_eq!(
        other.session(SessionKind::Mcp, &key, 301_000).unwrap(),
        None
    );
    assert!(
        other
            .renew_session(SessionKind::Mcp, &key, 200_000, 500_000)
            .unwrap()
    );
    assert_eq!(
        store
            .session(SessionKind::Mcp, &key, 400_000)
            .unwrap()
            .map(|s| s.expires_ms),
        Some(500_000)
    );
    assert!(
        !store
            .renew_session(SessionKind::Mcp, &key, 500_000, 800_000)
            .unwrap(),
        "an expired session is not renewed"
    );
    // Writing a session drops the expired ones.
    let later = StoredSession {
        kind: SessionKind::Console,
        key: SessionKey::of("cookie"),
        principal: None,
        data: json!({"csrf": "c"}),
        created_ms: 600_000,
        expires_ms: 900_000,
        idle_ms: 300_000,
    };
    other.put_session(&later).unwrap();
    assert!(!store.delete_session(SessionKind::Mcp, &key).unwrap());
    assert!(
        store
            .delete_session(SessionKind::Console, &later.key)
            .unwrap()
    );
    assert_eq!(
        other
            .session(SessionKind::Console, &later.key, 600_001)
            .unwrap(),
        None
    );
}
