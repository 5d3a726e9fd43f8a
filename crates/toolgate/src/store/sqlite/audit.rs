//! The audit log in SQLite: the `audit` table, one row per record, appended through
//! the write queue so several processes write one chain.
//!
//! Paging through the log filtered by session, principal, tool, outcome and time
//! (what the console's Audit page asks) is answered in SQL on indexes of the
//! record's fields (schema 10), so a page of a log of 100,000 records costs a few
//! index lookups whatever the filter.

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, params};
use toolgate_core::{
    Anchor, AuditEntry, AuditRecord, ChainBreak, ChainVerifier, GENESIS_HASH, VerifyReport,
};

use super::SqliteStore;
use crate::store::group_commit::Write;
use crate::store::{AuditFilter, AuditLog, StoreError};

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

/// The SQL of the record fields a filter tests, and the index that serves each.
const FIELDS: &[(&str, &str)] = &[
    ("session", "json_extract(record, '$.session')"),
    ("principal", "json_extract(record, '$.principal')"),
    ("tool", "json_extract(record, '$.tool')"),
    ("outcome", "json_extract(record, '$.outcome')"),
];

/// Schema 10: an index per filterable field, so a filtered page is found by
/// index whatever the log's size (expression indexes: the record stays the one
/// hashed column).
pub(super) const MIGRATION: &str = "
    CREATE INDEX IF NOT EXISTS audit_session ON audit (json_extract(record, '$.session'));
    CREATE INDEX IF NOT EXISTS audit_principal ON audit (json_extract(record, '$.principal'));
    CREATE INDEX IF NOT EXISTS audit_tool ON audit (json_extract(record, '$.tool'));
    CREATE INDEX IF NOT EXISTS audit_outcome ON audit (json_extract(record, '$.outcome'));
    CREATE INDEX IF NOT EXISTS audit_time ON audit (json_extract(record, '$.time'));";

impl SqliteStore {
    /// [`AuditLog::query`] in SQL: only the conditions
    /// the filter sets, so SQLite can take the index of the most selective one.
    pub(super) fn query_audit(
        &self,
        filter: &AuditFilter,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let mut conditions = Vec::new();
        let mut params: Vec<SqlValue> = Vec::new();
        if let Some(before) = before {
            conditions.push("seq < ?".to_owned());
            params.push(SqlValue::Integer(i64::try_from(before).unwrap_or(i64::MAX)));
        }
        let wanted = [
            &filter.session,
            &filter.principal,
            &filter.tool,
            &filter.outcome,
        ];
        for ((_, sql), want) in FIELDS.iter().zip(wanted) {
            if let Some(want) = want {
                conditions.push(format!("{sql} = ?"));
                params.push(SqlValue::Text(want.clone()));
            }
        }
        if let Some(since) = &filter.since {
            conditions.push("json_extract(record, '$.time') >= ?".to_owned());
            params.push(SqlValue::Text(since.clone()));
        }
        if let Some(until) = &filter.until {
            conditions.push("json_extract(record, '$.time') < ?".to_owned());
            params.push(SqlValue::Text(until.clone()));
        }
        let mut sql = "SELECT seq, record FROM audit".to_owned();
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        sql.push_str(" ORDER BY seq DESC LIMIT ?");
        params.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        let error = self.error("querying the audit log");
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&sql).map_err(&error)?;
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
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
