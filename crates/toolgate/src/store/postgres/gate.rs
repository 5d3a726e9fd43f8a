//! Conversation state, call history, the audit log and flow admission on
//! PostgreSQL.
//!
//! Admission (`once`, `before`, `never_until`) is one transaction under the store's
//! write lock: the turn, the session's state and its history are read, the flow
//! decides on them — on the calling thread, since the check is the caller's closure
//! — and the turn and the intent are written, before the lock is released. So two
//! instances cannot both pass `once` on the same facts, as two processes on one
//! SQLite file cannot.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::sync::oneshot;
use toolgate_core::{
    Anchor, AuditEntry, AuditRecord, ChainBreak, ChainVerifier, Retry, VerifyReport,
};

use super::super::group_commit::Write;
use super::super::turns::{Admission, AdmissionCheck};
use super::super::{AuditLog, CallHistory, GateStore, RecordedCall, StateStore};
use super::writer::{Chain, lock_and_head, record_call, write_state};
use super::{Inner, PostgresStore, StoreError};

fn decode(inner: &Inner, session: &str, key: &str, text: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::CorruptValue {
        location: inner.location.clone(),
        session: session.to_owned(),
        key: key.to_owned(),
        source,
    })
}

async fn load_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    session: &str,
) -> Result<Map<String, Value>, StoreError> {
    let rows = client
        .query(
            "SELECT key, value FROM state WHERE session = $1 ORDER BY key",
            &[&session],
        )
        .await
        .map_err(inner.error("loading a session"))?;
    let mut state = Map::new();
    for row in rows {
        let key: String = row.get(0);
        let value = decode(inner, session, &key, row.get(1))?;
        state.insert(key, value);
    }
    Ok(state)
}

async fn calls_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    session: &str,
) -> Result<Vec<RecordedCall>, StoreError> {
    let rows = client
        .query(
            "SELECT seq, tool, ok, time FROM calls WHERE session = $1 ORDER BY seq",
            &[&session],
        )
        .await
        .map_err(inner.error("reading a session's calls"))?;
    Ok(rows
        .into_iter()
        .map(|row| RecordedCall {
            seq: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
            tool: row.get(1),
            ok: row.get(2),
            time: row.get(3),
        })
        .collect())
}

impl StateStore for PostgresStore {
    fn load(&self, session: &str) -> Result<Map<String, Value>, StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            load_in(&**conn, &inner, &session).await
        })
    }

    fn get(&self, session: &str, key: &str) -> Result<Option<Value>, StoreError> {
        let (inner, session, key) = (self.inner.clone(), session.to_owned(), key.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            let row = conn
                .query_opt(
                    "SELECT value FROM state WHERE session = $1 AND key = $2",
                    &[&session, &key],
                )
                .await
                .map_err(inner.error("reading a key"))?;
            row.map(|row| decode(&inner, &session, &key, row.get(0)))
                .transpose()
        })
    }

    fn apply(&self, session: &str, writes: &[(String, Value)]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        let (inner, session, writes) = (self.inner.clone(), session.to_owned(), writes.to_vec());
        self.run(async move {
            let error = inner.error("writing state");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            lock_and_head(&*tx, &inner).await?;
            write_state(&*tx, &inner, &session, &writes).await?;
            tx.commit().await.map_err(&error)
        })
    }

    fn reset(&self, session: &str) -> Result<(), StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute("DELETE FROM state WHERE session = $1", &[&session])
                .await
                .map_err(inner.error("resetting a session"))?;
            Ok(())
        })
    }
}

impl CallHistory for PostgresStore {
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError> {
        let inner = self.inner.clone();
        let (session, tool, time) = (session.to_owned(), tool.to_owned(), time.to_owned());
        self.run(async move {
            let error = inner.error("recording a call");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            lock_and_head(&*tx, &inner).await?;
            record_call(&*tx, &inner, &session, &tool, ok, &time).await?;
            tx.commit().await.map_err(&error)
        })
    }

    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            calls_in(&**conn, &inner, &session).await
        })
    }

    fn forget_calls(&self, session: &str) -> Result<(), StoreError> {
        let (inner, session) = (self.inner.clone(), session.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute("DELETE FROM calls WHERE session = $1", &[&session])
                .await
                .map_err(inner.error("forgetting a session's calls"))?;
            Ok(())
        })
    }
}

impl PostgresStore {
    fn audit_query(
        &self,
        action: &'static str,
        sql: &'static str,
        n: Option<i64>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let conn = inner.conn().await?;
            let rows = match n {
                Some(n) => conn.query(sql, &[&n]).await,
                None => conn.query(sql, &[]).await,
            }
            .map_err(inner.error(action))?;
            rows.into_iter()
                .map(|row| {
                    let seq: i64 = row.get(0);
                    serde_json::from_str(row.get(1)).map_err(|source| {
                        StoreError::CorruptAuditRecord {
                            location: inner.location.clone(),
                            seq: u64::try_from(seq).unwrap_or_default(),
                            source,
                        }
                    })
                })
                .collect()
        })
    }
}

impl AuditLog for PostgresStore {
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::Append(entry))
    }

    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_query(
            "reading the audit log",
            "SELECT seq, record FROM
               (SELECT seq, record FROM audit ORDER BY seq DESC LIMIT $1) AS last
             ORDER BY seq",
            Some(i64::try_from(n).unwrap_or(i64::MAX)),
        )
    }

    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError> {
        let inner = self.inner.clone();
        let anchors = anchors.to_vec();
        self.run(async move {
            let error = inner.error("verifying the audit log");
            let conn = inner.conn().await?;
            let rows = conn
                .query(
                    "SELECT seq, record, prev_hash, hash, kind, run_id FROM audit ORDER BY seq",
                    &[],
                )
                .await
                .map_err(&error)?;
            let mut verifier = ChainVerifier::with_anchors(anchors);
            for row in rows {
                let seq: i64 = row.get(0);
                let text: String = row.get(1);
                let changed = ChainBreak::Changed {
                    seq: u64::try_from(seq).unwrap_or_default(),
                };
                let Ok(record) = serde_json::from_str::<AuditRecord>(&text) else {
                    verifier.fail(changed);
                    break;
                };
                if record.to_canonical_json() != text {
                    verifier.fail(changed);
                    break;
                }
                if verifier.push(&record).is_some() {
                    break;
                }
                let columns_agree = i64::try_from(record.seq) == Ok(seq)
                    && row.get::<_, Option<&str>>(2) == Some(record.prev_hash.as_str())
                    && row.get::<_, Option<&str>>(3) == Some(record.hash.as_str())
                    && row.get::<_, Option<&str>>(4) == Some(record.entry.kind.as_str())
                    && row.get::<_, Option<&str>>(5) == Some(record.entry.run_id.as_str());
                if !columns_agree {
                    verifier.fail(changed);
                    break;
                }
            }
            Ok(verifier.finish())
        })
    }

    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_query(
            "listing pending audit intents",
            "SELECT seq, record FROM audit AS i
             WHERE kind = 'intent'
               AND NOT EXISTS (SELECT 1 FROM audit AS c WHERE c.run_id = i.run_id AND c.kind = 'completion')
             ORDER BY seq",
            None,
        )
    }
}

/// Milliseconds since the Unix epoch, the unit a lease is kept in.
fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// Facts an admission hands the calling thread, and the verdict it hands back.
type Facts = (Map<String, Value>, Vec<RecordedCall>, oneshot::Sender<bool>);

enum Step {
    Decided(Admission),
    Check(Facts),
}

impl GateStore for PostgresStore {
    fn rate_counters(&self) -> Option<&dyn crate::store::RateCounters> {
        Some(self)
    }

    fn complete(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::complete(session, writes, intent, completion))
    }

    fn admit(
        &self,
        session: &str,
        intent: AuditEntry,
        lease: Duration,
        check: &mut AdmissionCheck<'_>,
    ) -> Result<Admission, StoreError> {
        let inner = self.inner.clone();
        let session = session.to_owned();
        let (step, steps) = std::sync::mpsc::sync_channel::<Result<Step, StoreError>>(1);
        let (done, result) = std::sync::mpsc::sync_channel::<Result<Admission, StoreError>>(1);
        let Some(runtime) = &self.runtime else {
            return Err(self.inner.stopped());
        };
        runtime.spawn(async move {
            let outcome = admit_in_turn(&inner, &session, intent, lease, &step).await;
            match outcome {
                Ok(Some(admission)) => {
                    let _ = done.send(Ok(admission));
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = step.send(Err(e));
                }
            }
        });
        match steps.recv() {
            Ok(Ok(Step::Decided(admission))) => Ok(admission),
            Ok(Ok(Step::Check((state, calls, verdict)))) => {
                let admit = check(&state, &calls);
                let _ = verdict.send(admit);
                if !admit {
                    return Ok(Admission::Refused);
                }
                match result.recv() {
                    Ok(admission) => admission,
                    // The task ended on an error, sent as a step.
                    Err(_) => match steps.recv() {
                        Ok(Err(e)) => Err(e),
                        _ => Err(self.inner.stopped()),
                    },
                }
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(self.inner.stopped()),
        }
    }

    fn complete_turn(
        &self,
        session: &str,
        writes: &[(String, Value)],
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::complete_turn(session, writes, completion))
    }

    fn resolve_run(
        &self,
        intent: &AuditRecord,
        completion: AuditEntry,
    ) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::resolve_run(intent, completion))
    }
}

/// The admission transaction. Returns `Some` when it ended after the check (the
/// caller waits on `done`), `None` when it told the caller by a step.
async fn admit_in_turn(
    inner: &Inner,
    session: &str,
    intent: AuditEntry,
    lease: Duration,
    step: &std::sync::mpsc::SyncSender<Result<Step, StoreError>>,
) -> Result<Option<Admission>, StoreError> {
    let error = inner.error("admitting a call of a governed conversation");
    let mut conn = inner.conn().await?;
    let tx = conn.transaction().await.map_err(&error)?;
    let head = lock_and_head(&*tx, inner).await?;
    let now = now_ms();
    let holder = tx
        .query_opt(
            "SELECT run_id, tool, rerun_safe, until_ms FROM turns WHERE session = $1",
            &[&session],
        )
        .await
        .map_err(&error)?;
    if let Some(row) = holder {
        let run_id: String = row.get(0);
        let live = row.get::<_, i64>(3) > now;
        let standing = if run_id == intent.run_id {
            None
        } else if live {
            Some(Admission::Busy)
        } else if row.get::<_, bool>(2) {
            None
        } else {
            Some(Admission::Abandoned {
                run_id,
                tool: row.get(1),
            })
        };
        if let Some(refused) = standing {
            let _ = step.send(Ok(Step::Decided(refused)));
            return Ok(None);
        }
    }
    let state = load_in(&*tx, inner, session).await?;
    let calls = calls_in(&*tx, inner, session).await?;
    let (verdict, wait) = oneshot::channel();
    let _ = step.send(Ok(Step::Check((state, calls, verdict))));
    if !wait.await.unwrap_or(false) {
        // Refused: nothing was written; dropping `tx` rolls back.
        return Ok(None);
    }
    let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
    let safe = intent.effect.is_some_and(|e| e.retry() == Retry::Freely);
    tx.execute(
        "INSERT INTO turns (session, run_id, tool, rerun_safe, until_ms)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (session) DO UPDATE
         SET run_id = excluded.run_id, tool = excluded.tool,
             rerun_safe = excluded.rerun_safe, until_ms = excluded.until_ms",
        &[&session, &intent.run_id, &intent.tool, &safe, &until],
    )
    .await
    .map_err(&error)?;
    let mut chain = Chain::after(head);
    let record = chain.push(intent);
    chain.insert(&*tx, inner).await?;
    tx.commit().await.map_err(&error)?;
    Ok(Some(Admission::Admitted(Box::new(record))))
}
