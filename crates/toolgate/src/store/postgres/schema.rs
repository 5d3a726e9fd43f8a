//! The PostgreSQL store's schema and its migrations.
//!
//! `toolgate_schema` holds one row, the schema version. Migrations run in one
//! transaction under an advisory lock of their own, so instances starting at once
//! migrate once; PostgreSQL's DDL is transactional, so a failed migration leaves the
//! database as it was. An instance refuses a database whose version is newer than it
//! knows. Version 1 holds everything SQLite's schema 9 holds, in PostgreSQL's terms:
//! the columns of the audit log that a command reads are generated from the hashed
//! record, as in SQLite since schema 5. Version 2 adds the rate-limit counters the
//! instances share, which SQLite does not keep. Version 3 sweeps expired counters
//! (see `rate`). Version 4 adds the client sessions (SQLite's schema 11),
//! version 5 binds grants to a principal (SQLite's 12), and version 6 adds the
//! call ledger (SQLite's 13).

use super::{Inner, StoreError};

/// Entry `i` takes the database from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // Version 1.
    "CREATE TABLE state (
        session    TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (session, key)
    );
    CREATE TABLE audit (
        seq       BIGINT PRIMARY KEY,
        record    TEXT NOT NULL,
        kind      TEXT GENERATED ALWAYS AS (record::jsonb ->> 'kind') STORED,
        run_id    TEXT GENERATED ALWAYS AS (record::jsonb ->> 'run_id') STORED,
        prev_hash TEXT GENERATED ALWAYS AS (record::jsonb ->> 'prev_hash') STORED,
        hash      TEXT GENERATED ALWAYS AS (record::jsonb ->> 'hash') STORED
    );
    CREATE INDEX audit_run ON audit (run_id, kind);
    CREATE TABLE approvals (
        n           BIGSERIAL UNIQUE,
        id          TEXT PRIMARY KEY,
        session     TEXT NOT NULL,
        tool        TEXT NOT NULL,
        args_hash   TEXT NOT NULL,
        arguments   TEXT NOT NULL,
        principal   TEXT NOT NULL,
        reason      TEXT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
        answer      TEXT,
        created_at  TEXT NOT NULL,
        decided_at  TEXT,
        answered_by TEXT NOT NULL DEFAULT 'either' CHECK (answered_by IN ('client', 'approver', 'either')),
        decided_by  TEXT,
        decided_via TEXT
    );
    CREATE INDEX approvals_call ON approvals (session, tool, args_hash, status);
    CREATE TABLE grants (
        id         BIGSERIAL PRIMARY KEY,
        tool       TEXT NOT NULL,
        args_hash  TEXT,
        expires_at TEXT NOT NULL
    );
    CREATE TABLE pins (
        tool            TEXT PRIMARY KEY,
        hash            TEXT NOT NULL,
        definition      TEXT NOT NULL,
        pinned_at       TEXT NOT NULL,
        seen_hash       TEXT,
        seen_definition TEXT,
        seen_at         TEXT
    );
    CREATE TABLE calls (
        session TEXT NOT NULL,
        seq     BIGINT NOT NULL,
        tool    TEXT NOT NULL,
        ok      BOOLEAN NOT NULL,
        time    TEXT NOT NULL,
        PRIMARY KEY (session, seq)
    );
    CREATE TABLE turns (
        session    TEXT PRIMARY KEY,
        run_id     TEXT NOT NULL,
        tool       TEXT NOT NULL,
        rerun_safe BOOLEAN NOT NULL,
        until_ms   BIGINT NOT NULL
    );
    CREATE TABLE tasks (
        id               TEXT PRIMARY KEY,
        session          TEXT NOT NULL,
        principal        TEXT NOT NULL,
        tool             TEXT NOT NULL,
        call_id          TEXT NOT NULL,
        run_id           TEXT NOT NULL,
        status           TEXT NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled', 'interrupted')),
        created_ms       BIGINT NOT NULL,
        updated_ms       BIGINT NOT NULL,
        ttl_ms           BIGINT NOT NULL,
        lease_until_ms   BIGINT NOT NULL,
        owner            TEXT NOT NULL,
        cancel_requested BOOLEAN NOT NULL DEFAULT false,
        outcome          TEXT
    );
    CREATE INDEX tasks_created ON tasks (created_ms);
    CREATE TABLE code_runs (
        run_id      TEXT PRIMARY KEY,
        session     TEXT NOT NULL,
        principal   TEXT NOT NULL,
        code_sha256 TEXT NOT NULL,
        tool        TEXT NOT NULL,
        call_id     TEXT NOT NULL,
        arguments   TEXT NOT NULL,
        approval_id TEXT NOT NULL,
        reason      TEXT NOT NULL,
        calls       BIGINT NOT NULL,
        suspensions BIGINT NOT NULL,
        elapsed_ms  BIGINT NOT NULL,
        printed     TEXT NOT NULL,
        since_ms    BIGINT NOT NULL,
        expires_ms  BIGINT NOT NULL,
        status      TEXT NOT NULL CHECK (status IN ('paused', 'resuming', 'finished')),
        snapshot    BYTEA NOT NULL,
        seal        TEXT NOT NULL
    );
    CREATE INDEX code_runs_status ON code_runs (status, since_ms);",
    // Version 2: rate-limit counters shared by the instances (see `rate`).
    "CREATE TABLE rate_buckets (
        key    TEXT PRIMARY KEY,
        due_us BIGINT NOT NULL
    );
    CREATE FUNCTION toolgate_take_rate(
        keys TEXT[], intervals BIGINT[], tolerances BIGINT[],
        OUT refused_by INT, OUT wait_us BIGINT
    ) LANGUAGE plpgsql AS $$
    DECLARE
        now_us BIGINT;
        ahead  BIGINT;
    BEGIN
        refused_by := 0;
        wait_us := 0;
        INSERT INTO rate_buckets (key, due_us)
            SELECT k, 0 FROM unnest(keys) WITH ORDINALITY AS t(k, n) ORDER BY n
            ON CONFLICT (key) DO NOTHING;
        PERFORM 1 FROM rate_buckets WHERE key = ANY (keys) ORDER BY key FOR UPDATE;
        now_us := (extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT;
        FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
            SELECT greatest(due_us, now_us) - now_us - tolerances[i] INTO ahead
                FROM rate_buckets WHERE key = keys[i];
            IF ahead > wait_us THEN
                wait_us := ahead;
                refused_by := i;
            END IF;
        END LOOP;
        IF refused_by = 0 THEN
            UPDATE rate_buckets AS b SET due_us = greatest(b.due_us, now_us) + t.interval_us
                FROM unnest(keys, intervals) AS t(key, interval_us) WHERE b.key = t.key;
        END IF;
    END $$;",
    // Version 3: `toolgate_take_rate` sweeps expired buckets when asked (see `rate`),
    // and takes each bucket's row lock by an insert-or-update in key order, which a
    // bucket swept meanwhile cannot slip past. The three-argument form stays for
    // instances still running the version 2 code during an upgrade.
    "CREATE FUNCTION toolgate_take_rate(
        keys TEXT[], intervals BIGINT[], tolerances BIGINT[], sweep INT,
        OUT refused_by INT, OUT wait_us BIGINT
    ) LANGUAGE plpgsql AS $$
    DECLARE
        now_us BIGINT;
        ahead  BIGINT;
    BEGIN
        refused_by := 0;
        wait_us := 0;
        INSERT INTO rate_buckets AS b (key, due_us)
            SELECT DISTINCT k, 0 FROM unnest(keys) AS t(k) ORDER BY k
            ON CONFLICT (key) DO UPDATE SET due_us = b.due_us;
        now_us := (extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT;
        IF sweep > 0 THEN
            DELETE FROM rate_buckets WHERE key IN (
                SELECT key FROM rate_buckets
                    WHERE due_us < now_us AND key <> ALL (keys)
                    LIMIT sweep FOR UPDATE SKIP LOCKED);
        END IF;
        FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
            SELECT greatest(due_us, now_us) - now_us - tolerances[i] INTO ahead
                FROM rate_buckets WHERE key = keys[i];
            IF ahead > wait_us THEN
                wait_us := ahead;
                refused_by := i;
            END IF;
        END LOOP;
        IF refused_by = 0 THEN
            UPDATE rate_buckets AS b SET due_us = greatest(b.due_us, now_us) + t.interval_us
                FROM unnest(keys, intervals) AS t(key, interval_us) WHERE b.key = t.key;
        END IF;
    END $$;
    CREATE OR REPLACE FUNCTION toolgate_take_rate(
        keys TEXT[], intervals BIGINT[], tolerances BIGINT[],
        OUT refused_by INT, OUT wait_us BIGINT
    ) LANGUAGE sql AS $$
        SELECT * FROM toolgate_take_rate(keys, intervals, tolerances, 0)
    $$;",
    // Version 4: client sessions any instance can continue (see `sessions`).
    "CREATE TABLE sessions (
        kind       TEXT NOT NULL CHECK (kind IN ('mcp', 'console')),
        key        TEXT NOT NULL,
        principal  TEXT,
        data       TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        expires_ms BIGINT NOT NULL,
        idle_ms    BIGINT NOT NULL,
        PRIMARY KEY (kind, key)
    );
    CREATE INDEX sessions_expiry ON sessions (expires_ms);",
    // Version 5: grants bound to the principal (and conversation) they answered;
    // grants from before covered every principal and are dropped (SQLite's 12).
    "DROP TABLE grants;
    CREATE TABLE grants (
        id          BIGSERIAL PRIMARY KEY,
        tool        TEXT NOT NULL,
        args_hash   TEXT,
        principal   TEXT NOT NULL,
        session     TEXT,
        approval_id TEXT NOT NULL,
        granted_by  TEXT NOT NULL,
        granted_via TEXT NOT NULL,
        expires_at  TEXT NOT NULL
    );
    CREATE INDEX grants_caller ON grants (tool, principal);",
    // Version 6: calls that must not run twice (SQLite's 13).
    super::call_ledger::MIGRATION,
    // Version 7: the fingerprints of untrusted results (SQLite's 14).
    "CREATE TABLE untrusted_text (
        session TEXT NOT NULL,
        run_id  TEXT NOT NULL,
        prints  BYTEA NOT NULL,
        PRIMARY KEY (session, run_id)
    );",
    // Version 8: what the budgets have spent (SQLite's 15; see `budget_counters`).
    // The function takes every charge or none: it locks the counters in order (so
    // two calls never deadlock), and reads each as empty once its window passed.
    "CREATE TABLE budget_spent (
        counter   TEXT PRIMARY KEY,
        window_ms BIGINT NOT NULL,
        spent     BIGINT NOT NULL
    );
    CREATE FUNCTION toolgate_charge_budgets(
        counters TEXT[], windows BIGINT[], amounts BIGINT[], limits BIGINT[],
        OUT over_by INT, OUT spent_before BIGINT, OUT spent_now BIGINT[]
    ) LANGUAGE plpgsql AS $$
    DECLARE
        held BIGINT;
    BEGIN
        over_by := 0;
        spent_before := 0;
        spent_now := '{}';
        INSERT INTO budget_spent AS b (counter, window_ms, spent)
            SELECT DISTINCT c, 0, 0 FROM unnest(counters) AS t(c) ORDER BY c
            ON CONFLICT (counter) DO UPDATE SET spent = b.spent;
        FOR i IN 1 .. coalesce(array_length(counters, 1), 0) LOOP
            SELECT CASE WHEN window_ms = windows[i] THEN spent ELSE 0 END INTO held
                FROM budget_spent WHERE counter = counters[i];
            IF limits[i] IS NOT NULL AND held + amounts[i] > limits[i] THEN
                over_by := i;
                spent_before := held;
                spent_now := '{}';
                RETURN;
            END IF;
            spent_now := spent_now || (held + amounts[i]);
        END LOOP;
        UPDATE budget_spent AS b SET window_ms = t.w, spent = t.s
            FROM unnest(counters, windows, spent_now) AS t(c, w, s) WHERE b.counter = t.c;
    END $$;",
];

/// The schema version this toolgate writes and understands.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The key of the migration lock: "tgschema".
const MIGRATION_LOCK: i64 = 0x7467_7363_6865_6d61;

/// Brings the schema up to [`SCHEMA_VERSION`]; returns the version found and the
/// version now.
pub(super) async fn migrate(inner: &Inner) -> Result<(i64, i64), StoreError> {
    let error = inner.error("migrating the schema");
    let mut conn = inner.conn().await?;
    let tx = conn.transaction().await.map_err(&error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(&error)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS toolgate_schema (version BIGINT NOT NULL)")
        .await
        .map_err(&error)?;
    let found: i64 = match tx
        .query_opt("SELECT version FROM toolgate_schema", &[])
        .await
        .map_err(&error)?
    {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO toolgate_schema (version) VALUES (0)", &[])
                .await
                .map_err(&error)?;
            0
        }
    };
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerDatabase {
            location: inner.location.clone(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for sql in &MIGRATIONS[usize::try_from(found).unwrap_or(0)..] {
        tx.batch_execute(sql).await.map_err(&error)?;
    }
    tx.execute(
        "UPDATE toolgate_schema SET version = $1",
        &[&SCHEMA_VERSION],
    )
    .await
    .map_err(&error)?;
    tx.commit().await.map_err(&error)?;
    Ok((found, SCHEMA_VERSION))
}
