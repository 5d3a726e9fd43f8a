//! Reading the audit log a page at a time, filtered by session, principal,
//! tool, outcome and time: what the console's Audit page asks of a store.
//!
//! [`AuditLog::query`] has a default body in terms of [`AuditLog::tail`] (every
//! record, filtered in memory), right for small logs; [`SqliteStore`] answers in
//! SQL on indexes of the record's fields (schema 10), so a page of a log of
//! 100,000 records costs a few index lookups whatever the filter.

use rusqlite::types::Value as SqlValue;
use toolgate_core::AuditRecord;

use super::{SqliteStore, StoreError};

/// Which records a query returns; every field set must match (`None`: any).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub session: Option<String>,
    pub principal: Option<String>,
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
    /// [`AuditLog::query`](super::AuditLog::query) in SQL: only the conditions
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
