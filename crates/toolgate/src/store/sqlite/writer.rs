//! The SQLite store's side of group commit: how a batch of [`Write`]s is applied
//! in one IMMEDIATE transaction on the store's write connection (see
//! `group_commit`, which decides what goes in a batch).

use std::sync::{MutexGuard, TryLockError};

use rusqlite::{Connection, TransactionBehavior};
use toolgate_core::AuditRecord;

use super::SqliteStore;
use super::audit::append_in;
use super::call_ledger::settle_in;
use super::calls::record_call_in;
use super::state::write_state;
use super::turns::release_in;
use crate::store::StoreError;
use crate::store::calls::completed_call;
use crate::store::group_commit::{CommitBatch, Completion, Write};

impl SqliteStore {
    /// Commits `write`, with whatever other writes are waiting.
    pub(super) fn commit_write(&self, write: Write) -> Result<AuditRecord, StoreError> {
        self.queue.commit(self, write)
    }
}

impl CommitBatch for SqliteStore {
    type Writer<'a> = MutexGuard<'a, Connection>;
    type Failure = rusqlite::Error;

    fn writer(&self) -> Self::Writer<'_> {
        self.conn()
    }

    fn try_writer(&self) -> Option<Self::Writer<'_>> {
        match self.conn.try_lock() {
            Ok(conn) => Some(conn),
            // As in `conn`: the connection behind a poisoned lock is still usable.
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Applies `writes` in one IMMEDIATE transaction and commits it; on any error,
    /// nothing is committed.
    fn commit_batch(
        &self,
        conn: &mut Self::Writer<'_>,
        writes: Vec<Write>,
    ) -> rusqlite::Result<Vec<AuditRecord>> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let records = writes
            .into_iter()
            .map(|write| apply(write, &tx))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        tx.commit()?;
        Ok(records)
    }

    fn failed(&self, action: &'static str, failure: Option<&rusqlite::Error>) -> StoreError {
        let source = failure.map_or(rusqlite::Error::InvalidQuery, copy_error);
        self.error(action)(source)
    }
}

/// Applies a write inside an open IMMEDIATE transaction (which holds the write
/// lock, so the audit chain's head cannot move meanwhile).
fn apply(write: Write, tx: &Connection) -> rusqlite::Result<AuditRecord> {
    match write {
        Write::Append(entry) => append_in(tx, entry),
        Write::Complete(Completion {
            session,
            writes,
            intent,
            completion,
            release_turn,
            in_history,
            settle,
        }) => {
            write_state(tx, &session, &writes)?;
            if let Some(settle) = &settle {
                let run_id = &completion.run_id;
                let (name, expires) = (&settle.name, settle.expires_ms);
                settle_in(tx, name, run_id, Some(&settle.outcome), expires)?;
            }
            if release_turn {
                release_in(tx, &session, &completion.run_id)?;
            }
            if in_history {
                let (tool, ok, time) = completed_call(&completion);
                record_call_in(tx, &session, tool, ok, time)?;
            }
            if let Some(intent) = intent {
                append_in(tx, intent)?;
            }
            append_in(tx, completion)
        }
    }
}

/// The same error again, for the next writer of a failed batch.
fn copy_error(error: &rusqlite::Error) -> rusqlite::Error {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use std::sync::Arc;

    use serde_json::json;
    use toolgate_core::{AuditEntry, Effect, RecordKind};

    use super::*;
    use crate::{GateStore, store::AuditLog, store::CallHistory};

    fn entry(kind: RecordKind, run: usize) -> AuditEntry {
        AuditEntry {
            time: "2026-01-01T00:00:00.000Z".into(),
            kind,
            run_id: format!("run-{run}"),
            call_id: format!("call-{run}"),
            session: format!("s{}", run % 3),
            principal: "operator".into(),
            tool: "lookup".into(),
            effect: Some(Effect::Read),
            arguments: json!({"n": run}),
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

    #[test]
    fn concurrent_writers_each_get_their_own_committed_record_on_one_unbroken_chain() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open_in_dir(dir.path()).unwrap());
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let store = store.clone();
                std::thread::spawn(move || {
                    let mut seqs = Vec::new();
                    for i in 0..100 {
                        let run = w * 1000 + i;
                        let session = format!("s{}", run % 3);
                        let writes = [("last".to_owned(), json!(run))];
                        let completion = entry(RecordKind::Completion, run);
                        // Every other call's intent goes in with its completion.
                        let (intent, done) = if i % 2 == 0 {
                            let intent = store.append(entry(RecordKind::Intent, run)).unwrap();
                            let done = store.complete(&session, &writes, None, completion);
                            (intent, done.unwrap())
                        } else {
                            let intent = Some(entry(RecordKind::Intent, run));
                            let done = store.complete(&session, &writes, intent, completion);
                            let done = done.unwrap();
                            let intent = store.tail(usize::MAX).unwrap();
                            let intent = intent.iter().find(|r| {
                                r.seq == done.seq - 1 && r.entry.run_id == done.entry.run_id
                            });
                            (intent.cloned().expect("the intent just before"), done)
                        };
                        assert_eq!(intent.entry.run_id, done.entry.run_id);
                        seqs.extend([intent.seq, done.seq]);
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
        assert_eq!(distinct.len(), 1600, "every writer got a record of its own");
        assert_eq!(distinct.last(), Some(&1600));
        assert!(store.verify().unwrap().is_ok());
        assert!(store.pending().unwrap().is_empty());
        let history: usize = (0..3)
            .map(|s| store.calls(&format!("s{s}")).unwrap().len())
            .sum();
        assert_eq!(history, 800);
    }
}
