//! Group commit on PostgreSQL: the audit appends and completions every call makes
//! queue here, and one task per store commits whatever has queued by the time the
//! last commit ended, as one transaction under the store's write lock. A lone call
//! commits alone; under load, many calls share one transaction, one turn of the lock
//! and a few round trips. Each caller gets its own record back, and only once its
//! write is committed (PostgreSQL's `synchronous_commit` makes that durable).
//!
//! A batch commits whole or not at all: what fails one write (the database gone,
//! a full disk) fails them all, and each caller gets that error.

use std::sync::Arc;

use deadpool_postgres::{GenericClient, Transaction};
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use toolgate_core::{AuditEntry, AuditRecord, GENESIS_HASH};

use super::call_ledger::settle_in;
use super::{Inner, StoreError, WRITE_LOCK, prepared};
use crate::store::blocking_wait::wait_blocking;
use crate::store::calls::completed_call;
use crate::store::group_commit::Write;

/// A write and where its result goes.
pub(super) type Queued = (Write, oneshot::Sender<Result<AuditRecord, StoreError>>);

/// The most writes one transaction takes.
const MAX_BATCH: usize = 512;

/// Starts the writer task on `runtime`; it stops when every sender is dropped.
pub(super) fn start(
    runtime: &tokio::runtime::Runtime,
    inner: Arc<Inner>,
) -> mpsc::UnboundedSender<Queued> {
    let (send, mut queue) = mpsc::unbounded_channel::<Queued>();
    runtime.spawn(async move {
        while let Some(first) = queue.recv().await {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (writes, replies): (Vec<Write>, Vec<_>) = batch.into_iter().unzip();
            let actions: Vec<&'static str> = writes.iter().map(Write::action).collect();
            match commit(&inner, writes).await {
                Ok(records) => {
                    for (reply, record) in replies.into_iter().zip(records) {
                        let _ = reply.send(Ok(record));
                    }
                }
                Err(e) => {
                    for (reply, action) in replies.into_iter().zip(actions) {
                        let _ = reply.send(Err(again(&e, action)));
                    }
                }
            }
        }
    });
    send
}

/// The batch's error, for each of its writers.
fn again(e: &StoreError, action: &'static str) -> StoreError {
    match e {
        StoreError::Unreachable { location, problem } => StoreError::Unreachable {
            location: location.clone(),
            problem: problem.clone(),
        },
        StoreError::Database {
            location, problem, ..
        } => StoreError::Database {
            location: location.clone(),
            action,
            problem: problem.clone(),
        },
        other => StoreError::Database {
            location: String::new(),
            action,
            problem: other.to_string(),
        },
    }
}

/// Statements a commit runs; prepared once per connection ([`warm`]).
const LOCK: &str = "SELECT pg_advisory_xact_lock($1)";
const HEAD: &str = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1";
const INSERT_AUDIT: &str =
    "INSERT INTO audit (seq, record) SELECT * FROM UNNEST($1::BIGINT[], $2::TEXT[])";
const UPSERT_STATE: &str = "INSERT INTO state (session, key, value)
     SELECT $1, k, v FROM UNNEST($2::TEXT[], $3::TEXT[]) AS w (k, v)
     ON CONFLICT (session, key) DO UPDATE SET value = excluded.value, updated_at = now()";
const INSERT_CALL: &str = "INSERT INTO calls (session, seq, tool, ok, time)
     VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM calls WHERE session = $1), $2, $3, $4)";
const RELEASE_TURN: &str = "DELETE FROM turns WHERE session = $1 AND run_id = $2";

/// The most statements sent together: `try_join_all` polls up to this many
/// futures in order, and tokio-postgres sends a statement when its future is
/// first polled, so they run in the order given.
const PIPELINE: usize = 30;

/// A statement of a commit, waiting to be sent.
type Statement<'a> = BoxFuture<'a, Result<(), StoreError>>;

/// Applies `writes` in one transaction under the write lock, and commits: four
/// round trips (begin; lock and head; the writes and the records; commit)
/// whatever the batch holds, up to [`PIPELINE`] statements.
async fn commit(inner: &Inner, writes: Vec<Write>) -> Result<Vec<AuditRecord>, StoreError> {
    let error = inner.error("committing the audit log");
    let mut conn = inner.conn().await?;
    let tx = conn.transaction().await.map_err(&error)?;
    warm(&tx, inner).await?;
    let head = lock_and_head(&tx, inner).await?;
    let mut chain = Chain::after(head);
    let mut records = Vec::with_capacity(writes.len());
    let mut statements: Vec<Statement<'_>> = Vec::new();
    for write in writes {
        records.push(apply(&tx, inner, &mut chain, write, &mut statements));
    }
    statements.push(Box::pin(chain.insert(&tx, inner)));
    pipelined(statements).await?;
    tx.commit().await.map_err(&error)?;
    Ok(records)
}

/// Prepares a commit's statements on this connection; nothing to do, and no
/// round trip, once they are. Afterwards each statement is sent the first time
/// its future is polled, which the pipeline's order relies on.
async fn warm(tx: &impl GenericClient, inner: &Inner) -> Result<(), StoreError> {
    let error = inner.error("preparing the store's statements");
    for sql in [
        LOCK,
        HEAD,
        INSERT_AUDIT,
        UPSERT_STATE,
        INSERT_CALL,
        RELEASE_TURN,
    ] {
        prepared(tx, sql, &error).await?;
    }
    Ok(())
}

/// Sends `statements` together, [`PIPELINE`] at a time, and waits for them:
/// they run in their order, in a round trip for each `PIPELINE`.
async fn pipelined(statements: Vec<Statement<'_>>) -> Result<(), StoreError> {
    let mut statements = statements.into_iter().peekable();
    while statements.peek().is_some() {
        let sent: Vec<_> = statements.by_ref().take(PIPELINE).collect();
        futures::future::try_join_all(sent).await?;
    }
    Ok(())
}

/// Takes the store's write lock inside `tx` and reads the chain's head: `(seq,
/// hash)` of the last record, if any.
pub(super) async fn lock_and_head(
    tx: &impl GenericClient,
    inner: &Inner,
) -> Result<Option<(i64, String)>, StoreError> {
    let error = inner.error("taking the store's write lock");
    let lock = prepared(tx, LOCK, &error).await?;
    let last = prepared(tx, HEAD, &error).await?;
    // Sent together, run in turn: the head is read once the lock is held.
    let (_, head) = futures::try_join!(tx.execute(&lock, &[&WRITE_LOCK]), tx.query_opt(&last, &[]))
        .map_err(&error)?;
    Ok(head.map(|row| {
        (
            row.get(0),
            row.get::<_, Option<String>>(1).unwrap_or_default(),
        )
    }))
}

/// Records sealed in this transaction and not yet inserted.
pub(super) struct Chain {
    seq: u64,
    hash: String,
    seqs: Vec<i64>,
    texts: Vec<String>,
}

impl Chain {
    pub(super) fn after(head: Option<(i64, String)>) -> Self {
        let (seq, hash) = head.unwrap_or((0, GENESIS_HASH.to_owned()));
        Self {
            seq: u64::try_from(seq).unwrap_or_default(),
            hash,
            seqs: Vec::new(),
            texts: Vec::new(),
        }
    }

    /// Seals `entry` as the next record.
    pub(super) fn push(&mut self, entry: AuditEntry) -> AuditRecord {
        self.seq += 1;
        let (record, stored) = AuditRecord::seal_stored(self.seq, &self.hash, entry);
        self.hash = record.hash.clone();
        self.seqs
            .push(i64::try_from(record.seq).unwrap_or(i64::MAX));
        self.texts.push(stored);
        record
    }

    /// Inserts every record sealed so far, in one statement.
    pub(super) async fn insert(
        self,
        tx: &impl GenericClient,
        inner: &Inner,
    ) -> Result<(), StoreError> {
        if self.seqs.is_empty() {
            return Ok(());
        }
        let error = inner.error("appending to the audit log");
        let insert = prepared(tx, INSERT_AUDIT, &error).await?;
        tx.execute(&insert, &[&self.seqs, &self.texts])
            .await
            .map_err(error)?;
        Ok(())
    }
}

/// Seals `write`'s records into `chain`, and adds the statements it needs to
/// `statements` (sent later, together, in order).
fn apply<'a>(
    tx: &'a Transaction<'a>,
    inner: &'a Inner,
    chain: &mut Chain,
    write: Write,
    statements: &mut Vec<Statement<'a>>,
) -> AuditRecord {
    let c = match write {
        Write::Append(entry) => return chain.push(entry),
        Write::Complete(c) => c,
    };
    let run_id = c.completion.run_id.clone();
    let session = c.session.clone();
    let writes = c.writes;
    statements.push(Box::pin(async move {
        write_state(tx, inner, &session, &writes).await
    }));
    if let Some(settle) = c.settle {
        let run_id = run_id.clone();
        statements.push(Box::pin(async move {
            let (outcome, expires) = (Some(&settle.outcome), settle.expires_ms);
            settle_in(tx, inner, settle.name.as_str(), &run_id, outcome, expires).await
        }));
    }
    if c.release_turn {
        let session = c.session.clone();
        statements.push(Box::pin(async move {
            release_turn(tx, inner, &session, &run_id).await
        }));
    }
    if c.in_history {
        let (tool, ok, time) = completed_call(&c.completion);
        let (session, tool, time) = (c.session, tool.to_owned(), time.to_owned());
        statements.push(Box::pin(async move {
            record_call(tx, inner, &session, &tool, ok, &time).await
        }));
    }
    if let Some(intent) = c.intent {
        chain.push(intent);
    }
    chain.push(c.completion)
}

/// Upserts state keys inside an open transaction.
pub(super) async fn write_state(
    tx: &impl GenericClient,
    inner: &Inner,
    session: &str,
    writes: &[(String, serde_json::Value)],
) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    // Later writes of a key win, as in one SQLite batch: keep each key's last.
    let mut last = std::collections::BTreeMap::new();
    for (key, value) in writes {
        last.insert(key.as_str(), value.to_string());
    }
    let (keys, values): (Vec<&str>, Vec<String>) = last.into_iter().unzip();
    let error = inner.error("writing state");
    let upsert = prepared(tx, UPSERT_STATE, &error).await?;
    tx.execute(&upsert, &[&session, &keys, &values])
        .await
        .map_err(error)?;
    Ok(())
}

/// Appends a call to a session's history inside an open transaction.
pub(super) async fn record_call(
    tx: &impl GenericClient,
    inner: &Inner,
    session: &str,
    tool: &str,
    ok: bool,
    time: &str,
) -> Result<(), StoreError> {
    let error = inner.error("recording a call");
    let insert = prepared(tx, INSERT_CALL, &error).await?;
    tx.execute(&insert, &[&session, &tool, &ok, &time])
        .await
        .map_err(error)?;
    Ok(())
}

/// Releases `session`'s turn if `run_id` still holds it.
pub(super) async fn release_turn(
    tx: &impl GenericClient,
    inner: &Inner,
    session: &str,
    run_id: &str,
) -> Result<(), StoreError> {
    let error = inner.error("releasing a conversation's turn");
    let delete = prepared(tx, RELEASE_TURN, &error).await?;
    tx.execute(&delete, &[&session, &run_id])
        .await
        .map_err(error)?;
    Ok(())
}

impl super::PostgresStore {
    /// Commits `write` with whatever else is queued, and waits for it.
    pub(super) fn commit_write(&self, write: Write) -> Result<AuditRecord, StoreError> {
        let (reply, wait) = oneshot::channel();
        if self.writes.send((write, reply)).is_err() {
            return Err(self.inner.stopped());
        }
        // A plain blocking wait: the writer runs on the store's own runtime.
        wait_blocking(|| futures::executor::block_on(wait))
            .unwrap_or_else(|_| Err(self.inner.stopped()))
    }
}
