//! The audit log: where the gate records each call before and after it runs.
//!
//! An [`AuditLog`] appends [`AuditEntry`]s as the next records of a hash chain (see
//! [`AuditRecord`]), reads the last few back, checks the whole chain, and lists the
//! intents that never got a completion — calls a crashed process may or may not have
//! carried out, which an operator must resolve before anything runs them again.
//!
//! [`SqliteStore`] keeps the log in the `audit` table of its file; several processes
//! may append to one file and still write one chain. [`MemoryAuditLog`] keeps it in
//! memory for tests and throwaway gates.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{OptionalExtension, params};
use toolgate_core::{
    Anchor, AuditEntry, AuditRecord, ChainBreak, ChainVerifier, GENESIS_HASH, RecordKind,
    VerifyReport, verify_chain_anchored,
};

use super::group_commit::Write;
use super::{AuditFilter, SqliteStore, StoreError};

/// An append-only, hash-chained record of every call the gate handled.
///
/// Implementations are synchronous and safe to share as `Arc<dyn AuditLog>`.
///
/// ```
/// use serde_json::json;
/// use toolgate::{AuditEntry, AuditLog, MemoryAuditLog, RecordKind};
///
/// let log = MemoryAuditLog::new();
/// let intent = AuditEntry {
///     time: "2025-01-01T00:00:00.000Z".into(),
///     kind: RecordKind::Intent,
///     run_id: "run-1".into(),
///     call_id: "call-1".into(),
///     session: "default".into(),
///     principal: "operator".into(),
///     tool: "refund_order".into(),
///     effect: Some(toolgate::Effect::Write),
///     arguments: json!({"order_id": "A-1"}),
///     decision: Some(toolgate::Decision::Allow),
///     reason: None,
///     outcome: None,
///     message: None,
///     duration_ms: None,
///     attempts: None,
///     auth: None,
///     credential: None,
/// };
/// let record = log.append(intent.clone()).unwrap();
/// assert_eq!(record.seq, 1);
/// // The process "crashed" before the completion: the intent is pending.
/// assert_eq!(log.pending().unwrap(), vec![record]);
///
/// log.append(AuditEntry { kind: RecordKind::Completion, outcome: Some("ok".into()), ..intent })
///     .unwrap();
/// assert!(log.pending().unwrap().is_empty());
/// assert!(log.verify().unwrap().is_ok());
/// ```
pub trait AuditLog: Send + Sync {
    /// Appends an entry as the next record of the chain; durable when it returns (one
    /// transaction that reads the head and inserts).
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError>;

    /// The last `n` records, oldest first.
    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError>;

    /// Checks the whole chain and reports the first record that was changed,
    /// inserted or deleted.
    fn verify(&self) -> Result<VerifyReport, StoreError> {
        self.verify_anchored(&[])
    }

    /// [`AuditLog::verify`], holding the log to anchors taken earlier and kept
    /// elsewhere: also reports records cut from the end, every record deleted, and a
    /// chain rewritten from some record on (see [`Anchor`]).
    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError>;

    /// Intents with no completion (after a crash), oldest first: write-effect calls
    /// here must never be re-run silently.
    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError>;

    /// Up to `limit` records that pass `filter`, newest first, all before record
    /// `before` when given (the next page starts before the last one shown). This
    /// default reads the whole log; a store with indexes answers from them.
    fn query(
        &self,
        filter: &AuditFilter,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let mut records = self.tail(usize::MAX)?;
        records.retain(|r| before.is_none_or(|b| r.seq < b) && filter.matches(r));
        records.reverse();
        records.truncate(limit);
        Ok(records)
    }
}

const SELECT_HEAD: &str = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1";
/// `kind`, `run_id`, `prev_hash` and `hash` are computed from `record` (schema 5).
const INSERT: &str = "INSERT INTO audit (seq, record) VALUES (?1, ?2)";

impl SqliteStore {
    fn audit_location(&self) -> String {
        self.path()
            .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string())
    }

    pub(super) fn parse_audit_record(
        &self,
        seq: i64,
        text: &str,
    ) -> Result<AuditRecord, StoreError> {
        serde_json::from_str(text).map_err(|source| StoreError::CorruptAuditRecord {
            location: self.audit_location(),
            seq: u64::try_from(seq).unwrap_or_default(),
            source,
        })
    }

    fn query_audit_records(
        &self,
        action: &'static str,
        sql: &str,
        param: Option<i64>,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let error = self.error(action);
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(sql).map_err(&error)?;
        let mut rows = match param {
            Some(p) => stmt.query([p]),
            None => stmt.query([]),
        }
        .map_err(&error)?;
        let mut records = Vec::new();
        while let Some(row) = rows.next().map_err(&error)? {
            let seq: i64 = row.get(0).map_err(&error)?;
            let text: String = row.get(1).map_err(&error)?;
            records.push(self.parse_audit_record(seq, &text)?);
        }
        Ok(records)
    }
}

/// Appends `entry` as the next record of the chain, inside an open IMMEDIATE
/// transaction (which holds the write lock, so the head cannot move meanwhile).
pub(super) fn append_in(
    tx: &rusqlite::Connection,
    entry: AuditEntry,
) -> rusqlite::Result<AuditRecord> {
    let head: Option<(i64, String)> = tx
        .prepare_cached(SELECT_HEAD)?
        .query_row([], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let (seq, prev_hash) = head.unwrap_or((0, GENESIS_HASH.to_owned()));
    let seq = u64::try_from(seq).unwrap_or_default() + 1;
    let record = AuditRecord::seal(seq, &prev_hash, entry);
    tx.prepare_cached(INSERT)?.execute(params![
        i64::try_from(record.seq).unwrap_or(i64::MAX),
        record.to_canonical_json(),
    ])?;
    Ok(record)
}

impl AuditLog for SqliteStore {
    /// Committed with any other writes waiting (see `group_commit.rs`). The
    /// IMMEDIATE transaction takes the write lock before the head is read, so another
    /// process appending at the same time waits and then chains onto this record.
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        self.commit_write(Write::Append(entry))
    }

    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        self.query_audit_records(
            "reading the audit log",
            "SELECT seq, record FROM
               (SELECT seq, record FROM audit ORDER BY seq DESC LIMIT ?1)
             ORDER BY seq",
            Some(i64::try_from(n).unwrap_or(i64::MAX)),
        )
    }

    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError> {
        let error = self.error("verifying the audit log");
        let conn = self.conn();
        // Every column is read as whatever it now holds, so a row edited to the wrong
        // type is reported as changed rather than failing the read. Every column a
        // command reads is read here and held to the hashed record: `pending` reads
        // `kind` and `run_id`, appending reads `hash`.
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, CAST(record AS BLOB), CAST(prev_hash AS TEXT), CAST(hash AS TEXT),
                        CAST(kind AS TEXT), CAST(run_id AS TEXT)
                 FROM audit ORDER BY seq",
            )
            .map_err(&error)?;
        let mut rows = stmt.query([]).map_err(&error)?;
        let mut verifier = ChainVerifier::with_anchors(anchors.iter().cloned());
        while let Some(row) = rows.next().map_err(&error)? {
            let seq: i64 = row.get(0).map_err(&error)?;
            let text: Option<Vec<u8>> = row.get(1).map_err(&error)?;
            let prev_hash: Option<String> = row.get(2).map_err(&error)?;
            let hash: Option<String> = row.get(3).map_err(&error)?;
            let kind: Option<String> = row.get(4).map_err(&error)?;
            let run_id: Option<String> = row.get(5).map_err(&error)?;
            let changed = ChainBreak::Changed {
                seq: u64::try_from(seq).unwrap_or_default(),
            };
            let text = text.unwrap_or_default();
            let Ok(record) = serde_json::from_slice::<AuditRecord>(&text) else {
                verifier.fail(changed);
                break;
            };
            // The hash covers the record as toolgate wrote it; anything added to the
            // stored text, or rewritten in another form, is a change too.
            if record.to_canonical_json().as_bytes() != text.as_slice() {
                verifier.fail(changed);
                break;
            }
            if verifier.push(&record).is_some() {
                break;
            }
            // The columns mirror the record; one that disagrees was edited. (They
            // are computed from the record since schema 5, so only a table rebuilt
            // by hand can disagree.)
            let columns_agree = i64::try_from(record.seq) == Ok(seq)
                && prev_hash.as_deref() == Some(record.prev_hash.as_str())
                && hash.as_deref() == Some(record.hash.as_str())
                && kind.as_deref() == Some(record.entry.kind.as_str())
                && run_id.as_deref() == Some(record.entry.run_id.as_str());
            if !columns_agree {
                verifier.fail(changed);
                break;
            }
        }
        Ok(verifier.finish())
    }

    fn query(
        &self,
        filter: &AuditFilter,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        self.query_audit(filter, before, limit)
    }

    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.query_audit_records(
            "listing pending audit intents",
            // `NOT IN` collects the completed runs once, so this is one pass over the
            // log whether or not `run_id` is indexed.
            "SELECT seq, record FROM audit
             WHERE kind = 'intent'
               AND run_id NOT IN (SELECT run_id FROM audit WHERE kind = 'completion')
             ORDER BY seq",
            None,
        )
    }
}

/// An [`AuditLog`] in memory, for tests and gates that need no durable record.
#[derive(Debug, Default)]
pub struct MemoryAuditLog {
    records: Mutex<Vec<AuditRecord>>,
}

impl MemoryAuditLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record so far, oldest first.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<AuditRecord>> {
        // Appends push a finished record in one step, so a poisoned list is whole.
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AuditLog for MemoryAuditLog {
    fn append(&self, entry: AuditEntry) -> Result<AuditRecord, StoreError> {
        let mut records = self.lock();
        let (seq, prev_hash) = records
            .last()
            .map_or((0, GENESIS_HASH), |r| (r.seq, r.hash.as_str()));
        let record = AuditRecord::seal(seq + 1, prev_hash, entry);
        records.push(record.clone());
        Ok(record)
    }

    fn tail(&self, n: usize) -> Result<Vec<AuditRecord>, StoreError> {
        let records = self.lock();
        Ok(records[records.len().saturating_sub(n)..].to_vec())
    }

    fn verify_anchored(&self, anchors: &[Anchor]) -> Result<VerifyReport, StoreError> {
        Ok(verify_chain_anchored(
            self.lock().iter(),
            anchors.iter().cloned(),
        ))
    }

    fn pending(&self) -> Result<Vec<AuditRecord>, StoreError> {
        let records = self.lock();
        let completed: HashSet<&str> = records
            .iter()
            .filter(|r| r.entry.kind == RecordKind::Completion)
            .map(|r| r.entry.run_id.as_str())
            .collect();
        Ok(records
            .iter()
            .filter(|r| {
                r.entry.kind == RecordKind::Intent && !completed.contains(r.entry.run_id.as_str())
            })
            .cloned()
            .collect())
    }
}
