//! Group commit for the writes every gate call makes: audit appends and call
//! completions. Each writer queues its write, then waits for the right to write;
//! the writer that gets it commits everything queued by then in one transaction and
//! hands each writer its own result. A lone writer commits alone; under
//! concurrency, writers share the transaction and the pages it writes to the log,
//! which is most of what a commit costs. Each writer still returns only once its
//! write is committed.
//!
//! A batch commits whole or not at all. Its writes are plain inserts and upserts
//! that no other write can conflict with, so what fails one (a full disk, a lock
//! held too long) fails them all, and each writer gets that error.
//!
//! This file knows no backend: a [`Write`] says what to write, and the store that
//! queues it supplies how ([`CommitBatch`]). The SQLite store commits through a
//! [`WriteQueue`]; the PostgreSQL store batches the same [`Write`]s on a task of its
//! own.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use toolgate_core::{AuditEntry, AuditRecord};

use super::blocking_wait::wait_blocking;
use super::calls::ran;
use super::{Settle, StoreError};

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
    /// The run's claim in the call ledger, settled with the completion.
    pub(super) settle: Option<Settle>,
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
            settle: None,
        })
    }

    /// [`Write::complete`], settling the run's claim in the call ledger too.
    pub(super) fn complete_settling(
        session: &str,
        writes: &[(String, Value)],
        intent: Option<AuditEntry>,
        completion: AuditEntry,
        settle: &Settle,
    ) -> Write {
        let mut write = Write::complete(session, writes, intent, completion);
        if let Write::Complete(completion) = &mut write {
            completion.settle = Some(settle.clone());
        }
        write
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
            settle: None,
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
            settle: None,
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
}

/// How a store commits a batch of [`Write`]s: the right to write, one transaction
/// for the batch, and the error each writer of a failed batch is given.
pub(super) trait CommitBatch {
    /// The exclusive right to write (a connection behind its lock), held while one
    /// batch commits, so batches never overlap.
    type Writer<'a>
    where
        Self: 'a;
    /// What failed a batch; every writer of the batch is told of it.
    type Failure;

    /// Waits for the right to write.
    fn writer(&self) -> Self::Writer<'_>;

    /// The right to write if nobody holds it now.
    fn try_writer(&self) -> Option<Self::Writer<'_>>;

    /// Applies `writes` in one transaction and commits it, returning each write's
    /// record in order; on any error nothing is committed.
    fn commit_batch(
        &self,
        writer: &mut Self::Writer<'_>,
        writes: Vec<Write>,
    ) -> Result<Vec<AuditRecord>, Self::Failure>;

    /// The error the writer of `action` gets when its batch failed with `failure`,
    /// or (`None`) when the batch that took its write never answered for it.
    fn failed(&self, action: &'static str, failure: Option<&Self::Failure>) -> StoreError;
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

impl WriteQueue {
    /// Commits `write` through `store`, with whatever other writes are waiting.
    pub(super) fn commit<S: CommitBatch>(
        &self,
        store: &S,
        write: Write,
    ) -> Result<AuditRecord, StoreError> {
        let action = write.action();
        let slot = Slot::default();
        lock(&self.pending).push((write, slot.clone()));
        // A writer that has to wait lets its thread's other calls go on meanwhile:
        // they queue behind it, and the next batch takes them all.
        let mut writer = match store.try_writer() {
            Some(writer) => writer,
            None => wait_blocking(|| store.writer()),
        };
        // Whoever held the right to write may have committed this write already.
        if let Some(result) = lock(&slot).take() {
            return result;
        }
        let batch = std::mem::take(&mut *lock(&self.pending));
        let (writes, slots): (Vec<Write>, Vec<Slot>) = batch.into_iter().unzip();
        let actions: Vec<&'static str> = writes.iter().map(Write::action).collect();
        let written: usize = writes.iter().map(Write::records).sum();
        let _span =
            tracing::debug_span!("toolgate.store.commit", toolgate.records = written).entered();
        let began = std::time::Instant::now();
        match store.commit_batch(&mut writer, writes) {
            Ok(records) => {
                crate::telemetry::store_commit(written, began.elapsed());
                for (slot, record) in slots.iter().zip(records) {
                    *lock(slot) = Some(Ok(record));
                }
            }
            Err(e) => {
                for (slot, action) in slots.iter().zip(actions) {
                    *lock(slot) = Some(Err(store.failed(action, Some(&e))));
                }
            }
        }
        drop(writer);
        // The batch just committed held this write, so its slot is filled.
        lock(&slot)
            .take()
            .unwrap_or_else(|| Err(store.failed(action, None)))
    }
}
