//! Group commit for the writes every gate call makes: audit appends and call
//! completions. Each writer queues its write, then waits for the connection; the
//! writer that gets it commits everything queued by then in one transaction and
//! hands each writer its own result. A lone writer commits alone, as before; under
//! concurrency, writers share the transaction and the pages it writes to the WAL,
//! which is most of what a commit costs. Each writer still returns only once its
//! write is committed.
//!
//! If any write of a batch fails, the batch is rolled back and its writes are
//! committed one by one, so one bad write cannot take the others with it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, TransactionBehavior};
use serde_json::Value;
use toolgate_core::{AuditEntry, AuditRecord};

use super::audit::append_in;
use super::calls::{completed_call, record_call_in};
use super::sqlite::write_state;
use super::{SqliteStore, StoreError};

/// A write that ends with an audit record.
pub(super) enum Write {
    /// An audit record on its own (an intent, a refusal, a decision).
    Append(AuditEntry),
    /// A call's state writes, its place in the call history and its completion record.
    Complete {
        session: String,
        writes: Vec<(String, Value)>,
        entry: AuditEntry,
    },
}

impl Write {
    fn action(&self) -> &'static str {
        match self {
            Write::Append(_) => "appending to the audit log",
            Write::Complete { .. } => "recording a call's completion and state",
        }
    }

    /// Applies the write inside an open IMMEDIATE transaction (which holds the write
    /// lock, so the audit chain's head cannot move meanwhile).
    fn apply(&self, tx: &Connection) -> rusqlite::Result<AuditRecord> {
        match self {
            Write::Append(entry) => append_in(tx, entry.clone()),
            Write::Complete {
                session,
                writes,
                entry,
            } => {
                write_state(tx, session, writes)?;
                let (tool, ok, time) = completed_call(entry);
                record_call_in(tx, session, tool, ok, time)?;
                append_in(tx, entry.clone())
            }
        }
    }
}

type Slot = Arc<Mutex<Option<Result<AuditRecord, StoreError>>>>;

/// Writes waiting for a transaction.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    pending: Mutex<Vec<(Write, Slot)>>,
}

impl std::fmt::Debug for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.action())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Entries are pushed and taken whole, so what a poisoned lock guards is whole.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SqliteStore {
    /// Commits `write`, with whatever other writes are waiting.
    pub(super) fn commit_write(&self, write: Write) -> Result<AuditRecord, StoreError> {
        let action = write.action();
        let slot = Slot::default();
        lock(&self.queue.pending).push((write, slot.clone()));
        let mut conn = self.conn();
        // Whoever held the connection may have committed this write already.
        if let Some(result) = lock(&slot).take() {
            return result;
        }
        let batch = std::mem::take(&mut *lock(&self.queue.pending));
        self.commit_batch(&mut conn, batch);
        drop(conn);
        // The batch just committed held this write, so its slot is filled.
        lock(&slot)
            .take()
            .unwrap_or_else(|| Err(self.error(action)(rusqlite::Error::InvalidQuery)))
    }

    fn commit_batch(&self, conn: &mut Connection, batch: Vec<(Write, Slot)>) {
        if batch.len() > 1
            && let Ok(records) = Self::commit_together(conn, batch.iter().map(|(w, _)| w))
        {
            for ((_, slot), record) in batch.iter().zip(records) {
                *lock(slot) = Some(Ok(record));
            }
            return;
        }
        // One write, or a batch that was rolled back: each alone, with its own outcome.
        for (write, slot) in &batch {
            let result = Self::commit_together(conn, [write])
                .map(|mut records| records.remove(0))
                .map_err(self.error(write.action()));
            *lock(slot) = Some(result);
        }
    }

    /// Applies `writes` in one IMMEDIATE transaction and commits it; on any error,
    /// nothing is committed.
    fn commit_together<'a>(
        conn: &mut Connection,
        writes: impl IntoIterator<Item = &'a Write>,
    ) -> rusqlite::Result<Vec<AuditRecord>> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let records = writes
            .into_iter()
            .map(|write| write.apply(&tx))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        tx.commit()?;
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;
    use toolgate_core::{Effect, RecordKind};

    use super::*;
    use crate::{AuditLog, CallHistory, GateStore};

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
                        let intent = store.append(entry(RecordKind::Intent, run)).unwrap();
                        let session = format!("s{}", run % 3);
                        let writes = [("last".to_owned(), json!(run))];
                        let done = store
                            .complete(&session, &writes, entry(RecordKind::Completion, run))
                            .unwrap();
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
