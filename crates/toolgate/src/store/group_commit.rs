//! Group commit for the writes every gate call makes: audit appends and call
//! completions. Each writer queues its write, then waits for the connection; the
//! writer that gets it commits everything queued by then in one transaction and
//! hands each writer its own result. A lone writer commits alone, as before; under
//! concurrency, writers share the transaction and the pages it writes to the WAL,
//! which is most of what a commit costs. Each writer still returns only once its
//! write is committed.
//!
//! A batch commits whole or not at all. Its writes are plain inserts and upserts
//! that no other write can conflict with, so what fails one (a full disk, a lock
//! held too long) fails them all, and each writer gets that error.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, TransactionBehavior};
use serde_json::Value;
use toolgate_core::{AuditEntry, AuditRecord};

use super::audit::append_in;
use super::calls::{completed_call, record_call_in};
use super::sqlite::write_state;
use super::turns::release_in;
use super::{SqliteStore, StoreError};

/// A write that ends with an audit record.
// A write waits in the queue for microseconds; boxing the larger variant would add
// an allocation to every call's completion instead.
#[allow(clippy::large_enum_variant)]
pub(super) enum Write {
    /// An audit record on its own (an intent, a refusal, a decision).
    Append(AuditEntry),
    /// A call's completion.
    Complete(Completion),
}

/// A call's state writes, its place in the call history and its completion record,
/// after its intent record if that was not appended before.
pub(super) struct Completion {
    pub(super) session: String,
    pub(super) writes: Vec<(String, Value)>,
    pub(super) intent: Option<AuditEntry>,
    pub(super) completion: AuditEntry,
    /// Whether the call held its session's turn (a governed call), released here.
    pub(super) release_turn: bool,
    /// Whether the call goes into its session's history (it ran).
    pub(super) in_history: bool,
}

impl Write {
    /// A call's completion: its state writes, history and record, after `intent`
    /// when that was not appended before the call ran.
    pub(super) fn complete(
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
    ) -> Write {
        Write::Complete(Completion {
            session: session.to_owned(),
            writes: writes.to_vec(),
            intent,
            completion,
            release_turn: false,
            in_history: true,
        })
    }

    /// A governed call's completion, which also releases its session's turn.
    pub(super) fn complete_turn(
        session: &str,
        writes: &[(String, Value)],
        completion: AuditEntry,
    ) -> Write {
        Write::Complete(Completion {
            session: session.to_owned(),
            writes: writes.to_vec(),
            intent: None,
            completion,
            release_turn: true,
            in_history: true,
        })
    }

    /// The completion of a call a crash left pending (`intent`): it releases the
    /// turn (by the run id the two records share) and goes into the history
    /// unless it never ran.
    pub(super) fn resolve_run(intent: &AuditRecord, completion: AuditEntry) -> Write {
        let in_history = ran(&completion).is_some();
        Write::Complete(Completion {
            session: intent.entry.session.clone(),
            writes: Vec::new(),
            intent: None,
            completion,
            release_turn: true,
            in_history,
        })
    }

    pub(super) fn action(&self) -> &'static str {
        match self {
            Write::Append(_) => "appending to the audit log",
            Write::Complete(_) => "recording a call's completion and state",
        }
    }

    /// How many audit records it writes: a read's completion brings its intent.
    fn records(&self) -> usize {
        match self {
            Write::Append(_) => 1,
            Write::Complete(c) => 1 + usize::from(c.intent.is_some()),
        }
    }

    /// Applies the write inside an open IMMEDIATE transaction (which holds the write
    /// lock, so the audit chain's head cannot move meanwhile).
    fn apply(self, tx: &Connection) -> rusqlite::Result<AuditRecord> {
        match self {
            Write::Append(entry) => append_in(tx, entry),
            Write::Complete(Completion {
                session,
                writes,
                intent,
                completion,
                release_turn,
                in_history,
            }) => {
                write_state(tx, &session, &writes)?;
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
        let (writes, slots): (Vec<Write>, Vec<Slot>) = batch.into_iter().unzip();
        let actions: Vec<&'static str> = writes.iter().map(Write::action).collect();
        let written: usize = writes.iter().map(Write::records).sum();
        let _span =
            tracing::debug_span!("toolgate.store.commit", toolgate.records = written).entered();
        let began = std::time::Instant::now();
        match commit(&mut conn, writes) {
            Ok(records) => {
                crate::telemetry::store_commit(written, began.elapsed());
                for (slot, record) in slots.iter().zip(records) {
                    *lock(slot) = Some(Ok(record));
                }
            }
            Err(e) => {
                for (slot, action) in slots.iter().zip(actions) {
                    *lock(slot) = Some(Err(self.error(action)(copy_error(&e))));
                }
            }
        }
        drop(conn);
        // The batch just committed held this write, so its slot is filled.
        lock(&slot)
            .take()
            .unwrap_or_else(|| Err(self.error(action)(rusqlite::Error::InvalidQuery)))
    }
}

/// Applies `writes` in one IMMEDIATE transaction and commits it; on any error,
/// nothing is committed.
fn commit(conn: &mut Connection, writes: Vec<Write>) -> rusqlite::Result<Vec<AuditRecord>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let records = writes
        .into_iter()
        .map(|write| write.apply(&tx))
        .collect::<rusqlite::Result<Vec<_>>>()?;
    tx.commit()?;
    Ok(records)
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

/// Whether an operator's resolution says the call ran, and if so whether it
/// succeeded (`cancelled`: it never ran).
pub(super) fn ran(completion: &AuditEntry) -> Option<bool> {
    match completion.outcome.as_deref() {
        Some("cancelled") => None,
        outcome => Some(outcome == Some("ok")),
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
            auth: None,
            credential: None,
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
