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
    Effect, GateStore, Outcome, audit::AuditEntry, audit::RecordKind, store::Admission,
    store::ApprovalRequest, store::PausedRun, store::PinCheck, store::PinStore, store::RateBucket,
    store::RateTaken, store::RecordedCall, store::Resolution, store::SessionKey,
    store::SessionKind, store::StateStore, store::StoreError, store::StoredSession,
    store::StoredSessions, store::TaskRecord, store::TaskStatus,
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
        let options = toolgate::store::PostgresOptions {
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

#[path = "store_suite/approvals.rs"]
mod approvals;
#[path = "store_suite/audit.rs"]
mod audit;
#[path = "store_suite/budgets.rs"]
mod budgets;
#[path = "store_suite/call_ledger.rs"]
mod call_ledger;
#[path = "store_suite/code_runs.rs"]
mod code_runs;
#[path = "store_suite/pins.rs"]
mod pins;
#[path = "store_suite/policy_trials.rs"]
mod policy_trials;
#[path = "store_suite/rate_limits.rs"]
mod rate_limits;
#[path = "store_suite/schema.rs"]
mod schema;
#[path = "store_suite/sessions.rs"]
mod sessions;
#[path = "store_suite/state.rs"]
mod state;
#[path = "store_suite/tasks.rs"]
mod tasks;
#[path = "store_suite/untrusted_text.rs"]
mod untrusted_text;

/// Runs each test (`module::name`) once per backend, as `sqlite::name` and
/// `postgres::name`.
macro_rules! suite {
    ($($module:ident :: $test:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $test() { super::$module::$test(&super::Sqlite::new()); })*
        }
        mod postgres {
            $(#[test] fn $test() {
                if let Some(backend) = super::Postgres::new() { super::$module::$test(&backend); }
            })*
        }
    };
}

suite!(
    state::state_is_kept_per_session_and_a_batch_lands_whole,
    state::call_histories_keep_sessions_apart_in_order,
    audit::concurrent_writers_on_two_handles_write_one_unbroken_chain,
    audit::an_intent_without_a_completion_is_pending_until_resolved,
    audit::a_read_whose_arguments_hold_a_nul_is_recorded_and_verifies,
    approvals::an_approved_call_runs_once_however_many_handles_race_for_it,
    approvals::a_denial_is_reported_once_and_asking_twice_opens_one_request,
    state::once_admits_exactly_one_of_many_concurrent_calls_across_handles,
    state::a_turn_is_held_from_admission_to_completion,
    pins::a_tool_is_pinned_and_its_change_recorded_until_accepted,
    tasks::tasks_are_written_finished_and_dropped_after_their_ttl,
    code_runs::a_paused_program_is_taken_once_across_handles,
    schema::a_store_written_by_a_newer_toolgate_is_refused,
    rate_limits::a_shared_rate_bucket_admits_exactly_its_limit_across_handles,
    rate_limits::expired_rate_buckets_are_swept_and_live_ones_stay_counted,
    sessions::a_session_written_on_one_handle_is_renewed_and_ended_on_another,
    call_ledger::a_key_is_claimed_by_one_of_many_handles_and_keeps_its_outcome,
    call_ledger::an_intent_and_its_key_are_written_together_and_settled_with_the_completion,
    untrusted_text::untrusted_text_recorded_on_one_handle_taints_on_another,
    budgets::a_budget_lets_exactly_its_calls_through_eight_callers_on_two_gates,
    policy_trials::shadow_records_verify_and_replay_through_a_new_spec,
);

/// An audit record of `kind` for run `run` of `tool` in `session`.
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
        call_hash: None,
        idempotency_key: None,
    }
}
