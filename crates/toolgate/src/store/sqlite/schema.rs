//! The SQLite file's schema: every migration in order, and bringing a file up to
//! the version this toolgate writes. `PRAGMA user_version` records the version, so a
//! later toolgate can migrate an older file in place.

use rusqlite::{Connection, TransactionBehavior};

use super::open_error;
use crate::store::StoreError;

/// One schema step: SQL, or a function where SQL alone cannot say it.
enum Migration {
    Sql(&'static str),
    Step(fn(&Connection) -> rusqlite::Result<()>),
}

/// Schema migrations; entry `i` takes the file from version `i` to `i + 1`.
const MIGRATIONS: &[Migration] = &[
    // Version 1. `json_valid` keeps anything but JSON out of `value`, even from a
    // hand-written UPDATE; reading still checks, as the constraint can be bypassed.
    Migration::Sql("CREATE TABLE state (
        session    TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL CHECK (json_valid(value)),
        updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        PRIMARY KEY (session, key)
    ) WITHOUT ROWID;"),
    // Version 2: the audit log (a hash chain, append-only) and approvals.
    Migration::Sql("CREATE TABLE audit (
        seq       INTEGER PRIMARY KEY,
        kind      TEXT NOT NULL,
        run_id    TEXT NOT NULL,
        record    TEXT NOT NULL CHECK (json_valid(record)),
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL
    );
    CREATE TABLE approvals (
        id         TEXT PRIMARY KEY,
        session    TEXT NOT NULL,
        tool       TEXT NOT NULL,
        args_hash  TEXT NOT NULL,
        arguments  TEXT NOT NULL CHECK (json_valid(arguments)),
        principal  TEXT NOT NULL,
        reason     TEXT NOT NULL,
        status     TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
        answer     TEXT,
        created_at TEXT NOT NULL,
        decided_at TEXT
    );
    CREATE INDEX approvals_call ON approvals (session, tool, args_hash, status);
    CREATE TABLE grants (
        id         INTEGER PRIMARY KEY,
        tool       TEXT NOT NULL,
        args_hash  TEXT,
        expires_at TEXT NOT NULL
    );"),
    // Version 3: pinned definitions of tools from servers the operator does not
    // control, and the latest different definition seen for each.
    Migration::Sql("CREATE TABLE pins (
        tool            TEXT PRIMARY KEY,
        hash            TEXT NOT NULL,
        definition      TEXT NOT NULL CHECK (json_valid(definition)),
        pinned_at       TEXT NOT NULL,
        seen_hash       TEXT,
        seen_definition TEXT CHECK (seen_definition IS NULL OR json_valid(seen_definition)),
        seen_at         TEXT
    ) WITHOUT ROWID;"),
    // Version 4: each conversation's call history, which flows read.
    Migration::Sql("CREATE TABLE calls (
        session TEXT NOT NULL,
        seq     INTEGER NOT NULL,
        tool    TEXT NOT NULL,
        ok      INTEGER NOT NULL CHECK (ok IN (0, 1)),
        time    TEXT NOT NULL,
        PRIMARY KEY (session, seq)
    ) WITHOUT ROWID;"),
    // Version 5: every column of the audit log that a command reads is computed from
    // the hashed record, so none can be edited apart from it (`pending` reads `kind`
    // and `run_id`; appending reads `hash`). The hash rule is unchanged (`kind` and
    // `run_id` were always inside the hashed record), so every record keeps its hash
    // and anchors taken before still hold; the copies the old columns held are
    // dropped, and a copy edited before the migration is replaced by the record's.
    // (A row an intruder made unreadable yields NULLs, not an error on every read.)
    Migration::Sql("CREATE TABLE audit_v5 (
        seq       INTEGER PRIMARY KEY,
        record    TEXT NOT NULL CHECK (json_valid(record)),
        kind      TEXT GENERATED ALWAYS AS (CASE WHEN typeof(record) = 'text' AND json_valid(record) THEN json_extract(record, '$.kind') END) VIRTUAL,
        run_id    TEXT GENERATED ALWAYS AS (CASE WHEN typeof(record) = 'text' AND json_valid(record) THEN json_extract(record, '$.run_id') END) VIRTUAL,
        prev_hash TEXT GENERATED ALWAYS AS (CASE WHEN typeof(record) = 'text' AND json_valid(record) THEN json_extract(record, '$.prev_hash') END) VIRTUAL,
        hash      TEXT GENERATED ALWAYS AS (CASE WHEN typeof(record) = 'text' AND json_valid(record) THEN json_extract(record, '$.hash') END) VIRTUAL
    );
    INSERT INTO audit_v5 (seq, record) SELECT seq, record FROM audit ORDER BY seq;
    DROP TABLE audit;
    ALTER TABLE audit_v5 RENAME TO audit;"),
    // Version 6: each governed conversation's turn, held by one run from admission to
    // completion across processes (see `turns`).
    Migration::Sql("CREATE TABLE turns (
        session    TEXT PRIMARY KEY,
        run_id     TEXT NOT NULL,
        tool       TEXT NOT NULL,
        rerun_safe INTEGER NOT NULL CHECK (rerun_safe IN (0, 1)),
        until_ms   INTEGER NOT NULL
    ) WITHOUT ROWID;"),
    // Version 7: background tasks, readable from any process and across restarts
    // (see `tasks`). A working task whose process stopped is marked interrupted.
    Migration::Sql("CREATE TABLE tasks (
        id               TEXT PRIMARY KEY,
        session          TEXT NOT NULL,
        principal        TEXT NOT NULL,
        tool             TEXT NOT NULL,
        call_id          TEXT NOT NULL,
        run_id           TEXT NOT NULL,
        status           TEXT NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled', 'interrupted')),
        created_ms       INTEGER NOT NULL,
        updated_ms       INTEGER NOT NULL,
        ttl_ms           INTEGER NOT NULL,
        lease_until_ms   INTEGER NOT NULL,
        owner            TEXT NOT NULL,
        cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested IN (0, 1)),
        outcome          TEXT CHECK (outcome IS NULL OR json_valid(outcome))
    ) WITHOUT ROWID;
    CREATE INDEX tasks_created ON tasks (created_ms);"),
    // Version 8: who may answer each approval request, and who did.
    Migration::Step(super::approvals::add_answerers),
    // Version 9: code-mode programs paused at a call that waits for approval.
    Migration::Sql(super::code_runs::MIGRATION),
    // Version 10: indexes of the audit record's fields the console filters on.
    Migration::Sql(super::audit::MIGRATION),
    // Version 11: client sessions any process sharing the file can continue.
    Migration::Sql(super::sessions::MIGRATION),
    // Version 12: grants bound to the principal (and conversation) they answered.
    Migration::Sql(super::approvals::GRANT_SCOPES),
    // Version 13: calls that must not run twice (idempotency keys, calls in doubt).
    Migration::Sql(super::call_ledger::MIGRATION),
    // Version 14: the fingerprints of untrusted results, which `tainted:` reads.
    Migration::Sql(super::untrusted_text::MIGRATION),
    // Version 15: what the budgets have spent (see `budget_counters`).
    Migration::Sql(super::budget_counters::MIGRATION),
    // Version 16: the audit's filtered fields as columns written beside the record.
    Migration::Sql(super::audit::COLUMNS_MIGRATION),
    // Version 17: the outcome index without `ok` completions and intents.
    Migration::Sql(super::audit::RARE_OUTCOMES_MIGRATION),
];

/// The schema version this toolgate writes and understands.
const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the schema up to [`SCHEMA_VERSION`]. The write lock is taken first, so two
/// processes opening a new file at once create the table once.
pub(super) fn migrate(conn: &mut Connection, location: &str) -> Result<(), StoreError> {
    let open_error = |source| open_error(location, source);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(open_error)?;
    let found: i64 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(open_error)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            location: location.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    for migration in &MIGRATIONS[usize::try_from(found).unwrap_or(0)..] {
        match migration {
            Migration::Sql(sql) => tx.execute_batch(sql),
            Migration::Step(step) => step(&tx),
        }
        .map_err(open_error)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(open_error)?;
    tx.commit().map_err(open_error)
}
