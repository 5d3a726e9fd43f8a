//! The embedded SQLite state store: one file that survives restarts and that several
//! processes can share.
//!
//! Values are stored as JSON text, one row per (session, key). The file runs in WAL
//! mode so readers never block the writer, and a busy timeout makes a second process
//! wait for the lock instead of failing. A store opened on a file reads through a
//! connection of its own, so a call's reads never wait for another call's commit,
//! and checkpoints the log on a thread of its own (see `checkpoint`). `PRAGMA user_version` records the schema
//! version, so a later toolgate can migrate an older file in place.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior, params};
use serde_json::{Map, Value};

use super::checkpoint::checkpoint_in_background;
use super::group_commit::WriteQueue;
use super::{STATE_DB_FILE, StateStore, StoreError};

/// How long a connection waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

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
    Migration::Sql(super::audit_query::MIGRATION),
    // Version 11: client sessions any process sharing the file can continue.
    Migration::Sql(super::sessions::MIGRATION),
    // Version 12: grants bound to the principal (and conversation) they answered.
    Migration::Sql(super::approvals::GRANT_SCOPES),
];

/// The schema version this toolgate writes and understands.
const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// A [`StateStore`] in an embedded SQLite database.
///
/// Open one per process with [`SqliteStore::open`]; several processes may open the
/// same file and see each other's writes. Each [`StateStore::apply`] is one SQLite
/// transaction.
///
/// ```
/// use serde_json::json;
/// use toolgate::{SqliteStore, StateStore};
///
/// let dir = std::env::temp_dir().join(format!("toolgate-doc-{}", std::process::id()));
/// let store = SqliteStore::open_in_dir(&dir)?;
/// store.apply("default", &[("step".into(), json!(2))])?;
/// assert_eq!(store.get("default", "step")?, Some(json!(2)));
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), toolgate::StoreError>(())
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// A second connection to the same file, for reads (none in memory).
    reader: Option<Mutex<Connection>>,
    /// Audit appends and completions waiting to be committed together.
    pub(super) queue: WriteQueue,
    path: Option<PathBuf>,
    /// The path as shown in error messages, or `:memory:`.
    location: String,
}

impl SqliteStore {
    /// Opens the store at `path`, creating its parent directories (`0700`), the file
    /// (`0600`) and the schema on first use, and migrating an older schema. A
    /// symbolic link at `path` is refused unless
    /// [`ALLOW_SYMLINK_ENV`](crate::ALLOW_SYMLINK_ENV) is `1`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let location = path.display().to_string();
        // A new directory 0700 and a new file 0600; no link in place of the file.
        super::files::prepare(path)?;
        let open_error = |source| open_error(&location, source);
        let mut conn = Connection::open(path).map_err(open_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        // WAL lets readers in other processes go on while one writes. The reply is
        // the mode in force; a filesystem without WAL support keeps the old journal,
        // which is slower but still correct, so it is not an error.
        use_wal(&conn, BUSY_TIMEOUT).map_err(open_error)?;
        // In WAL mode, NORMAL still survives any crash of the process and never
        // corrupts the file; a power loss may forget the last few commits. That is
        // the right trade for state written on every tool call: FULL would add an
        // fsync to each.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_error)?;
        checkpoint_in_background(&mut conn, path, BUSY_TIMEOUT).map_err(open_error)?;
        let mut store = Self::with_connection(conn, Some(path.to_path_buf()), location.clone())?;
        // A second connection for the reads every call makes (its conversation's
        // state and call history): in WAL mode it reads the last commit while the
        // first connection writes, so a call never waits for another's commit.
        let reader = Connection::open(path).map_err(open_error)?;
        reader.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        reader
            .pragma_update(None, "query_only", true)
            .map_err(open_error)?;
        plan_stably(&reader).map_err(open_error)?;
        store.reader = Some(Mutex::new(reader));
        Ok(store)
    }

    /// Opens `state.db` inside `dir` (see [`resolve_state_dir`](crate::resolve_state_dir)).
    pub fn open_in_dir(dir: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open(dir.as_ref().join(STATE_DB_FILE))
    }

    /// A private database in memory, with the same schema and behaviour as a file
    /// but gone when dropped.
    pub fn in_memory() -> Result<Self, StoreError> {
        let location = ":memory:".to_owned();
        let conn = Connection::open_in_memory().map_err(|e| open_error(&location, e))?;
        Self::with_connection(conn, None, location)
    }

    /// The file this store lives in, or `None` for [`SqliteStore::in_memory`].
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn with_connection(
        mut conn: Connection,
        path: Option<PathBuf>,
        location: String,
    ) -> Result<Self, StoreError> {
        plan_stably(&conn).map_err(|e| open_error(&location, e))?;
        migrate(&mut conn, &location)?;
        Ok(Self {
            conn: Mutex::new(conn),
            reader: None,
            queue: WriteQueue::default(),
            path,
            location,
        })
    }

    pub(super) fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held dropped any open transaction, which rolls
        // it back, so the connection behind a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection for reads that must not wait for a commit in progress: the
    /// reader, where the store has one.
    pub(super) fn reader(&self) -> MutexGuard<'_, Connection> {
        match &self.reader {
            Some(reader) => reader.lock().unwrap_or_else(PoisonError::into_inner),
            None => self.conn(),
        }
    }

    pub(super) fn error(
        &self,
        action: &'static str,
    ) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::sqlite(&self.location, action, source)
    }

    /// A session's state as `conn` sees it (the reader, or an open transaction).
    pub(super) fn load_in(
        &self,
        conn: &Connection,
        session: &str,
    ) -> Result<Map<String, Value>, StoreError> {
        let error = self.error("loading a session");
        // Casting to BLOB reads the stored bytes whatever their type, so a bad row
        // surfaces as a JSON error naming its key rather than a type error.
        let mut stmt = conn
            .prepare_cached(
                "SELECT key, CAST(value AS BLOB) FROM state WHERE session = ?1 ORDER BY key",
            )
            .map_err(&error)?;
        let mut rows = stmt.query([session]).map_err(&error)?;
        let mut state = Map::new();
        while let Some(row) = rows.next().map_err(&error)? {
            let key: String = row.get(0).map_err(&error)?;
            let bytes: Option<Vec<u8>> = row.get(1).map_err(&error)?;
            let value = self.decode(session, &key, bytes.as_deref())?;
            state.insert(key, value);
        }
        Ok(state)
    }

    fn decode(&self, session: &str, key: &str, bytes: Option<&[u8]>) -> Result<Value, StoreError> {
        serde_json::from_slice(bytes.unwrap_or_default()).map_err(|source| {
            StoreError::CorruptValue {
                location: self.location.clone(),
                session: session.to_owned(),
                key: key.to_owned(),
                source,
            }
        })
    }
}

/// Switches the file to WAL. A switch that meets another connection's lock gets
/// `SQLITE_BUSY` at once, without the busy handler (waiting could deadlock), so
/// of two processes opening a new file at the same moment one would fail: the
/// switch is tried again, with growing pauses, until `timeout` has passed.
fn use_wal(conn: &Connection, timeout: Duration) -> rusqlite::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

/// The bundled SQLite plans with STAT4, which makes every statement that binds a
/// new value to an indexed column expire and be compiled again on its next run;
/// toolgate never runs ANALYZE, so those plans gain nothing. The query planner
/// stability guarantee keeps each cached statement's plan.
fn plan_stably(conn: &Connection) -> rusqlite::Result<bool> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
}

fn open_error(location: &str, source: rusqlite::Error) -> StoreError {
    match StoreError::sqlite(location, "opening", source) {
        StoreError::Sqlite { source, .. } => StoreError::Open {
            location: location.to_owned(),
            source,
        },
        busy => busy,
    }
}

/// Brings the schema up to [`SCHEMA_VERSION`]. The write lock is taken first, so two
/// processes opening a new file at once create the table once.
fn migrate(conn: &mut Connection, location: &str) -> Result<(), StoreError> {
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

/// Upserts state keys inside an open transaction.
pub(super) fn write_state(
    tx: &Connection,
    session: &str,
    writes: &[(String, Value)],
) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO state (session, key, value) VALUES (?1, ?2, ?3)
         ON CONFLICT (session, key) DO UPDATE
         SET value = excluded.value, updated_at = excluded.updated_at",
    )?;
    for (key, value) in writes {
        stmt.execute(params![session, key, value.to_string()])?;
    }
    Ok(())
}

impl StateStore for SqliteStore {
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        self.load_in(&self.reader(), session)
    }

    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError> {
        let error = self.error("reading a key");
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached("SELECT CAST(value AS BLOB) FROM state WHERE session = ?1 AND key = ?2")
            .map_err(&error)?;
        let mut rows = stmt.query([session, key]).map_err(&error)?;
        match rows.next().map_err(&error)? {
            None => Ok(None),
            Some(row) => {
                let bytes: Option<Vec<u8>> = row.get(0).map_err(&error)?;
                self.decode(session, key, bytes.as_deref()).map(Some)
            }
        }
    }

    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let error = self.error("writing state");
        let mut conn = self.conn();
        // IMMEDIATE takes the write lock up front, so waiting for another process
        // happens here, under the busy timeout, and not halfway through the batch.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        write_state(&tx, session, writes).map_err(&error)?;
        // On any error above, dropping `tx` rolls the whole batch back.
        tx.commit().map_err(&error)
    }

    fn reset(&self, session: &str) -> Result<(), StoreError> {
        let error = self.error("resetting a session");
        self.conn()
            .execute("DELETE FROM state WHERE session = ?1", [session])
            .map_err(error)?;
        Ok(())
    }
}
