//! The PostgreSQL store: everything [`SqliteStore`](super::SqliteStore) keeps, in one
//! database that several toolgate instances share, with the same guarantees across
//! them.
//!
//! The store's traits are synchronous and the gate calls them inline, from whatever
//! thread (often a tokio worker) runs the call. So the store owns a small tokio
//! runtime of its own, where its connection pool (deadpool) and tokio-postgres
//! connections live; a call hands its query to that runtime and waits on a plain
//! channel. That never nests one runtime's `block_on` in another's (which the
//! synchronous `postgres` crate would do, and tokio forbids), and works the same from
//! a CLI command with no runtime at all.
//!
//! Every transaction that writes what another instance decides on (the audit chain,
//! a conversation's turn, state and history) first takes one transaction-scoped
//! advisory lock, the store's write lock: instances take turns as SQLite's processes
//! do on one file, so the audit log stays **one hash chain** across instances, which
//! `toolgate audit verify` and anchors check as before. Approvals are consumed by a
//! conditional `UPDATE … WHERE status = 'approved'`, which a row lock makes exactly
//! once across instances. Audit appends and completions go through a group commit
//! (see `writer`): one transaction, and so one turn of the lock and one round trip
//! per batch, for all calls waiting in this instance.
//!
//! Each concern's SQL is in the file of its name beside this one, as in the other
//! backends; `schema`, `tls` and `writer` are PostgreSQL's own.

mod approvals;
mod audit;
mod budget_counters;
mod call_ledger;
mod calls;
mod code_runs;
mod gate_store;
mod pins;
mod rate_counters;
mod schema;
mod sessions;
mod state;
mod tasks;
mod tls;
mod untrusted_text;
mod writer;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio::sync::mpsc;

pub use schema::SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION;

use super::StoreError;
use super::blocking_wait::wait_blocking;
use writer::Queued;

/// The key of the store's write lock (`pg_advisory_xact_lock`): "toolgate" in ASCII.
const WRITE_LOCK: i64 = 0x746f_6f6c_6761_7465;

/// How a [`PostgresStore`] connects.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// Connections in the pool (reads, admissions and approvals; the group
    /// commit writer takes one of them).
    pub pool_size: usize,
    /// How long opening a connection may take before the database counts as
    /// unreachable.
    pub connect_timeout: Duration,
    /// How long a call waits for a free connection when all are in use (under
    /// load that is normal, so longer than `connect_timeout`).
    pub wait_timeout: Duration,
    /// Where the key that seals paused programs lives (`code-runs.key`); every
    /// instance that may resume another's programs needs the same key. `None`: a
    /// key for this process only.
    pub key_dir: Option<PathBuf>,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            pool_size: 16,
            connect_timeout: Duration::from_secs(10),
            wait_timeout: Duration::from_secs(30),
            key_dir: None,
        }
    }
}

/// A gate store in a PostgreSQL database that several toolgate instances share.
///
/// ```no_run
/// use toolgate::{store::PostgresOptions, PostgresStore, store::StateStore};
///
/// let store = PostgresStore::open("postgres://toolgate@db.internal/toolgate", PostgresOptions::default())?;
/// store.apply("default", &[("step".into(), serde_json::json!(2))])?;
/// # Ok::<(), toolgate::store::StoreError>(())
/// ```
pub struct PostgresStore {
    inner: Arc<Inner>,
    /// Owns the threads the pool and the writer run on; shut down on drop.
    runtime: Option<tokio::runtime::Runtime>,
    writes: mpsc::UnboundedSender<Queued>,
}

/// What the store's tasks share.
pub(super) struct Inner {
    pool: Pool,
    /// The URL with its password masked, for messages.
    location: String,
    key: Vec<u8>,
    /// The URL's TLS settings, to explain a failed handshake.
    tls: tls::Tls,
    /// Calls of `take_rate` so far, to sweep expired buckets on a fraction of them.
    rate_calls: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`,
    /// or libpq's `key=value` form), creates or migrates the schema, and refuses a
    /// database whose schema is newer than this toolgate knows. TLS is set as
    /// libpq sets it, by `sslmode` and `sslrootcert` in the URL (see `tls`).
    pub fn open(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let store = Self::connect(url, options)?;
        store.run({
            let inner = store.inner.clone();
            async move { schema::migrate(&inner).await.map(|_| ()) }
        })?;
        Ok(store)
    }

    /// Brings the database's schema up to this toolgate's, and says from which
    /// version (`toolgate store migrate`): `(found, now)`.
    pub fn migrate(url: &str, options: PostgresOptions) -> Result<(i64, i64), StoreError> {
        let store = Self::connect(url, options)?;
        store.run({
            let inner = store.inner.clone();
            async move { schema::migrate(&inner).await }
        })
    }

    fn connect(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let location = mask_url(url);
        let (url, tls) = tls::split(url, &location)?;
        let mut config: tokio_postgres::Config =
            url.parse()
                .map_err(|e: tokio_postgres::Error| StoreError::BadStoreUrl {
                    location: location.clone(),
                    problem: e.to_string(),
                })?;
        config.connect_timeout(options.connect_timeout);
        config.ssl_mode(tls.mode);
        let manager = Manager::from_config(
            config,
            tls.connector.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("toolgate-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unreachable {
                location: location.clone(),
                problem: format!("cannot start the store's threads ({e})"),
            })?;
        let pool = {
            let _guard = runtime.enter();
            Pool::builder(manager)
                .max_size(options.pool_size.max(2))
                .runtime(Runtime::Tokio1)
                .wait_timeout(Some(options.wait_timeout))
                .create_timeout(Some(options.connect_timeout))
                .recycle_timeout(Some(options.connect_timeout))
                .build()
                .map_err(|e| StoreError::Unreachable {
                    location: location.clone(),
                    problem: e.to_string(),
                })?
        };
        let key = match &options.key_dir {
            Some(dir) => super::code_runs::key_in(dir)?,
            None => super::code_runs::process_key().to_vec(),
        };
        let inner = Arc::new(Inner {
            pool,
            location,
            key,
            tls,
            rate_calls: std::sync::atomic::AtomicU64::new(0),
        });
        let writes = writer::start(&runtime, inner.clone());
        Ok(Self {
            inner,
            runtime: Some(runtime),
            writes,
        })
    }

    /// The database's URL, with its password masked.
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// Runs `work` on the store's runtime and waits for it, from any thread.
    pub(super) fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        let Some(runtime) = &self.runtime else {
            return Err(self.inner.stopped());
        };
        runtime.spawn(async move {
            let _ = done.send(work.await);
        });
        wait_blocking(|| wait.recv()).unwrap_or_else(|_| Err(self.inner.stopped()))
    }

    /// Runs one statement; the rows it changed.
    fn execute(
        &self,
        action: &'static str,
        sql: &'static str,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    ) -> Result<u64, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                params.iter().map(|p| p.as_ref() as _).collect();
            conn.execute(sql, &params)
                .await
                .map_err(inner.error(action))
        })
    }
}

/// A count of milliseconds as PostgreSQL stores it (`BIGINT`).
fn ms(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which tokio forbids inside another runtime;
        // the store may well be dropped there.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Inner {
    /// A connection from the pool, or why the database cannot be reached.
    pub(super) async fn conn(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| {
            if let deadpool_postgres::PoolError::Backend(backend) = &e
                && let Some((problem, fix)) = self.tls.failure(backend)
            {
                return StoreError::Tls {
                    location: self.location.clone(),
                    problem,
                    fix,
                };
            }
            StoreError::Unreachable {
                location: self.location.clone(),
                problem: pool_problem(&e),
            }
        })
    }

    /// Wraps an error of `action`.
    pub(super) fn error(
        &self,
        action: &'static str,
    ) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        move |e| {
            if e.is_closed() || e.as_db_error().is_none() && e.code().is_none() || going_away(&e) {
                StoreError::Unreachable {
                    location: self.location.clone(),
                    problem: format!("{action}: {}", error_text(&e)),
                }
            } else {
                StoreError::Database {
                    location: self.location.clone(),
                    action,
                    problem: error_text(&e),
                }
            }
        }
    }

    fn stopped(&self) -> StoreError {
        StoreError::Unreachable {
            location: self.location.clone(),
            problem: "the store was shut down".into(),
        }
    }
}

/// Whether the database refused because it is shutting down, starting up or
/// crashed (SQLSTATE class 57, operator intervention, but for a cancelled query),
/// or the connection failed (class 08): it is out of reach, not failing.
fn going_away(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        let code = code.code();
        code.starts_with("08") || code.starts_with("57P")
    })
}

/// An error's message with its causes, as one line.
/// `sql` prepared once per connection: a plain string is prepared again on
/// every call, a round trip of its own before the one that runs it.
pub(super) async fn prepared(
    client: &impl deadpool_postgres::GenericClient,
    sql: &str,
    error: impl Fn(tokio_postgres::Error) -> StoreError,
) -> Result<tokio_postgres::Statement, StoreError> {
    client.prepare_cached(sql).await.map_err(error)
}

fn error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}

fn pool_problem(e: &deadpool_postgres::PoolError) -> String {
    use deadpool_postgres::PoolError;
    match e {
        PoolError::Backend(e) => error_text(e),
        PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
            "every connection of the pool stayed busy for the whole wait; make the pool larger (pool_size) or the load smaller".into()
        }
        PoolError::Timeout(_) => "opening a connection took too long".into(),
        other => other.to_string(),
    }
}

/// `url` with any password replaced by `***`, fit to print: a URL's
/// `user:password@`, or libpq's `password=…`.
///
/// ```
/// assert_eq!(
///     toolgate::store::mask_url("postgres://tg:s3cret@db:5432/toolgate"),
///     "postgres://tg:***@db:5432/toolgate"
/// );
/// assert_eq!(toolgate::store::mask_url("host=db password=s3cret"), "host=db password=***");
/// ```
pub fn mask_url(url: &str) -> String {
    if let Ok(mut parsed) = url::Url::parse(url) {
        if parsed.password().is_some() {
            let _ = parsed.set_password(Some("***"));
        }
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" {
                    "***".into()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        if pairs.iter().any(|(k, _)| k == "password") {
            parsed.query_pairs_mut().clear().extend_pairs(pairs);
        }
        return parsed.to_string();
    }
    url.split(' ')
        .map(|part| match part.split_once('=') {
            Some(("password", _)) => "password=***".to_owned(),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_shown() {
        assert_eq!(
            mask_url("postgresql://u:p%40ss@localhost/db?sslmode=require"),
            "postgresql://u:***@localhost/db?sslmode=require"
        );
        assert_eq!(mask_url("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            mask_url("postgres://h/db?user=u&password=secret"),
            "postgres://h/db?user=u&password=***"
        );
        assert_eq!(
            mask_url("host=h password=x user=u"),
            "host=h password=*** user=u"
        );
    }
}
