//! The audit log: where the gate records each call before and after it runs.
//!
//! An [`AuditLog`] appends [`AuditEntry`]s as the next records of a hash chain (see
//! [`AuditRecord`]), reads the last few back, checks the whole chain, and lists the
//! intents that never got a completion — calls a crashed process may or may not have
//! carried out, which an operator must resolve before anything runs them again.
//!
//! [`SqliteStore`](super::SqliteStore) keeps the log in the `audit` table of its file;
//! several processes may append to one file and still write one chain.
//! [`MemoryAuditLog`](super::MemoryAuditLog) keeps it in memory for tests and
//! throwaway gates. [`AuditFilter`] says which records a page of the log shows.

use toolgate_core::{Anchor, AuditEntry, AuditRecord, VerifyReport};

use super::StoreError;

/// An append-only, hash-chained record of every call the gate handled.
///
/// Implementations are synchronous and safe to share as `Arc<dyn AuditLog>`.
///
/// ```
/// use serde_json::json;
/// use toolgate::{audit::AuditEntry, store::AuditLog, store::MemoryAuditLog, audit::RecordKind};
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
///     call_hash: None,
///     idempotency_key: None,
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

/// Which records a query returns; every field set must match (`None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Records of this conversation.
    pub session: Option<String>,
    /// Records of this caller's calls.
    pub principal: Option<String>,
    /// Records of calls of this tool.
    pub tool: Option<String>,
    /// `ok`, `error`, `denied`, `pending_approval`, ...: completions only.
    pub outcome: Option<String>,
    /// Records at or after this RFC 3339 time (compared as text: the log
    /// writes one fixed-width UTC form).
    pub since: Option<String>,
    /// Records before this RFC 3339 time.
    pub until: Option<String>,
}

impl AuditFilter {
    /// Whether `record` passes the filter.
    pub fn matches(&self, record: &AuditRecord) -> bool {
        let entry = &record.entry;
        let same = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        same(&self.session, &entry.session)
            && same(&self.principal, &entry.principal)
            && same(&self.tool, &entry.tool)
            && self
                .outcome
                .as_deref()
                .is_none_or(|w| entry.outcome.as_deref() == Some(w))
            && self
                .since
                .as_deref()
                .is_none_or(|s| entry.time.as_str() >= s)
            && self
                .until
                .as_deref()
                .is_none_or(|u| entry.time.as_str() < u)
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        *self == AuditFilter::default()
    }
}
