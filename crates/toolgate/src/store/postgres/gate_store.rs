//! The gate's whole persistence on PostgreSQL: a call's completion through the
//! writer task, and flow admission.
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
use toolgate_core::{AuditEntry, AuditRecord, Retry};

use super::calls::calls_in;
use super::state::load_in;
use super::writer::{Chain, lock_and_head};
use super::{Inner, PostgresStore};
use crate::store::group_commit::Write;
use crate::store::{
    Admission, AdmissionCheck, GateStore, LedgerEntry, LedgerName, RateCounters, RecordedCall,
    Settle, StoreError,
};

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
    fn append_claiming(
        &self,
        intent: AuditEntry,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError> {
        self.append_claiming_in(intent, name, entry, now_ms)
    }

    fn complete_settling(
        &self,
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
        settle: &Settle,
    ) -> Result<AuditRecord, StoreError> {
        let write = Write::complete_settling(session, writes, intent, completion, settle);
        self.commit_write(write)
    }

    fn rate_counters(&self) -> Option<&dyn RateCounters> {
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
    let head = lock_and_head(&tx, inner).await?;
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
    let state = load_in(&tx, inner, session).await?;
    let calls = calls_in(&*tx, inner, session, 0).await?;
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
    chain.insert(&tx, inner).await?;
    tx.commit().await.map_err(&error)?;
    Ok(Some(Admission::Admitted(Box::new(record))))
}
