//! The embedded SQLite state store: one file that survives restarts and that several
//! processes can share.
//!
//! Values are stored as JSON text, one row per (session, key). The file runs in WAL
//! mode so readers never block the writer, and a busy timeout makes a second process
//! wait for the lock instead of failing. A store opened on a file reads through a
//! connection of its own, so a call's reads never wait for another call's commit,
//! and checkpoints the log on a thread of its own (see `checkpoint`). The schema and its
//! migrations are in `schema`; each concern's SQL is in the file of its name beside
//! this one, as in the other backends.

mod approvals;
mod audit;
mod budget_counters;
mod call_ledger;
mod calls;
mod checkpoint;
mod code_runs;
mod gate_store;
mod pins;
mod schema;
mod sessions;
mod state;
mod tasks;
mod turns;
mod untrusted_text;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::config::DbConfig;
use serde_json::{Map, Value};

use checkpoint::checkpoint_in_background;
use schema::migrate;

use crate::store::group_commit::WriteQueue;
use crate::store::{STATE_DB_FILE, StoreError};

/// How long a connection waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A [`StateStore`](crate::store::StateStore) in an embedded SQLite database.
///
/// Open one per process with [`SqliteStore::open`]; several processes may open the
/// same file and see each other's writes. Each [`StateStore::apply`](crate::store::StateStore::apply) is one SQLite
/// transaction.
///
/// ```
/// use serde_json::json;
/// use toolgate::{SqliteStore, store::StateStore};
///
/// let dir = std::env::temp_dir().join(format!("toolgate-doc-{}", std::process::id()));
/// let store = SqliteStore::open_in_dir(&dir)?;
/// store.apply("default", &[("step".into(), json!(2))])?;
/// assert_eq!(store.get("default", "step")?, Some(json!(2)));
/// # drop(store);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), toolgate::store::StoreError>(())
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// A second connection to the same file, for reads (none in memory).
    reader: Option<Mutex<Connection>>,
    /// Audit appends and completions waiting to be committed together.
    queue: WriteQueue,
    path: Option<PathBuf>,
    /// The path as shown in error messages, or `:memory:`.
    location: String,
}

impl SqliteStore {
    /// Opens the store at `path`, creating its parent directories (`0700`), the file
    /// (`0600`) and the schema on first use, and migrating an older schema. A
    /// symbolic link at `path` is refused unless
    /// [`ALLOW_SYMLINK_ENV`](crate::store::ALLOW_SYMLINK_ENV) is `1`.
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

    /// Opens `state.db` inside `dir` (see [`resolve_state_dir`](crate::store::resolve_state_dir)).
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

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held dropped any open transaction, which rolls
        // it back, so the connection behind a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection for reads that must not wait for a commit in progress: the
    /// reader, where the store has one.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        match &self.reader {
            Some(reader) => reader.lock().unwrap_or_else(PoisonError::into_inner),
            None => self.conn(),
        }
    }

    fn error(&self, action: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |source| StoreError::sqlite(&self.location, action, source)
    }

    /// A session's state as `conn` sees it (the reader, or an open transaction).
    fn load_in(&self, conn: &Connection, session: &str) -> Result<Map<String, Value>, StoreError> {
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
