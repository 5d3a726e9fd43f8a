//! The audit log in SQLite: the `audit` table, one row per record, appended through
//! the write queue so several processes write one chain.
//!
//! Paging through the log filtered by session, principal, tool, outcome and time
//! (what the console's Audit page asks) is answered in SQL on indexes of those
//! fields, so a page of a log of 100,000 records costs a few index lookups
//! whatever the filter. Since schema 16 every column beside the record is
//! written by the appender from the record it seals (before, columns computed
//! from the record and expression indexes had SQLite parse each record as it
//! was inserted); `verify` holds each to the record, so one edited apart from
//! it is reported as a change.

use rusqlite::types::Value as SqlValue;
use rusqlite::{OptionalExtension, params};
use toolgate_core::{
    Anchor, AuditEntry, AuditRecord, ChainBreak, ChainVerifier, GENESIS_HASH, VerifyReport,
};

use super::SqliteStore;
use crate::store::group_commit::Write;
use crate::store::{AuditFilter, AuditLog, StoreError};

const SELECT_HEAD: &str = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1";
/// Every column beside `record` is written from the record sealed (schema 16).
const INSERT: &str = "INSERT INTO audit
    (seq, record, kind, run_id, prev_hash, hash, session, principal, tool, outcome, time)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

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
    let (record, stored) = AuditRecord::seal_stored(seq, &prev_hash, entry);
    let entry = &record.entry;
    tx.prepare_cached(INSERT)?.execute(params![
        i64::try_from(record.seq).unwrap_or(i64::MAX),
        stored,
        entry.kind.as_str(),
        entry.run_id,
        record.prev_hash,
        record.hash,
        entry.session,
        entry.principal,
        entry.tool,
        entry.outcome,
        entry.time,
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
                        CAST(kind AS TEXT), CAST(run_id AS TEXT), CAST(session AS TEXT),
                        CAST(principal AS TEXT), CAST(tool AS TEXT), CAST(outcome AS TEXT),
                        CAST(time AS TEXT)
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
            let mut fields: [Option<String>; 5] = Default::default();
            for (i, field) in fields.iter_mut().enumerate() {
                *field = row.get(6 + i).map_err(&error)?;
            }
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
            // The columns mirror the record; one that disagrees was edited apart
            // from it (they are written beside it since schema 16).
            let entry = &record.entry;
            let written = [
                Some(entry.session.as_str()),
                Some(entry.principal.as_str()),
                Some(entry.tool.as_str()),
                entry.outcome.as_deref(),
                Some(entry.time.as_str()),
            ];
            let columns_agree = i64::try_from(record.seq) == Ok(seq)
                && prev_hash.as_deref() == Some(record.prev_hash.as_str())
                && hash.as_deref() == Some(record.hash.as_str())
                && kind.as_deref() == Some(entry.kind.as_str())
                && run_id.as_deref() == Some(entry.run_id.as_str())
                && fields.iter().map(Option::as_deref).eq(written);
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
            // Read from the records themselves, not the columns beside them, so an
            // edit of a column cannot hide a crashed call from this list (it would
            // only make `verify` fail). `NOT IN` collects the completed runs once,
            // so this is one pass over the log.
            "SELECT seq, record FROM (
                 SELECT seq, record, json_extract(record, '$.kind') AS k,
                        json_extract(record, '$.run_id') AS r
                 FROM audit WHERE typeof(record) = 'text' AND json_valid(record))
             WHERE k = 'intent'
               AND r NOT IN (
                   SELECT json_extract(record, '$.run_id') FROM audit
                   WHERE typeof(record) = 'text' AND json_valid(record)
                     AND json_extract(record, '$.kind') = 'completion')
             ORDER BY seq",
            None,
        )
    }
}

/// The columns of the record fields a filter tests, each indexed.
const FIELDS: &[&str] = &["session", "principal", "tool", "outcome"];

/// Schema 10: an index per filterable field, so a filtered page is found by
/// index whatever the log's size (expression indexes: the record stays the one
/// hashed column).
pub(super) const MIGRATION: &str = "
    CREATE INDEX IF NOT EXISTS audit_session ON audit (json_extract(record, '$.session'));
    CREATE INDEX IF NOT EXISTS audit_principal ON audit (json_extract(record, '$.principal'));
    CREATE INDEX IF NOT EXISTS audit_tool ON audit (json_extract(record, '$.tool'));
    CREATE INDEX IF NOT EXISTS audit_outcome ON audit (json_extract(record, '$.outcome'));
    CREATE INDEX IF NOT EXISTS audit_time ON audit (json_extract(record, '$.time'));";

/// Schema 16: every column beside the record written by the appender from the
/// record it seals (the fields a filter reads indexed plainly), and no
/// `json_valid` check, so SQLite no longer parses a record as it is inserted:
/// schema 5's columns computed from the record were computed on every insert.
/// `verify` holds every column to the record, so one edited apart from it is
/// reported as a change. Every record is copied with its fields read from it
/// once; a row whose record is no JSON keeps empty fields, which `verify`
/// reports.
pub(super) const COLUMNS_MIGRATION: &str = "CREATE TABLE audit_v16 (
        seq       INTEGER PRIMARY KEY,
        record    TEXT NOT NULL,
        kind      TEXT NOT NULL,
        run_id    TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL,
        session   TEXT NOT NULL,
        principal TEXT NOT NULL,
        tool      TEXT NOT NULL,
        outcome   TEXT,
        time      TEXT NOT NULL
    );
    INSERT INTO audit_v16
        SELECT seq, record,
               coalesce(kind, ''), coalesce(run_id, ''), coalesce(prev_hash, ''),
               coalesce(hash, ''),
               coalesce(CASE WHEN valid THEN json_extract(record, '$.session') END, ''),
               coalesce(CASE WHEN valid THEN json_extract(record, '$.principal') END, ''),
               coalesce(CASE WHEN valid THEN json_extract(record, '$.tool') END, ''),
               CASE WHEN valid THEN json_extract(record, '$.outcome') END,
               coalesce(CASE WHEN valid THEN json_extract(record, '$.time') END, '')
        FROM (SELECT seq, record, kind, run_id, prev_hash, hash,
                     typeof(record) = 'text' AND json_valid(record) AS valid
              FROM audit)
        ORDER BY seq;
    DROP TABLE audit;
    ALTER TABLE audit_v16 RENAME TO audit;
    CREATE INDEX audit_session ON audit (session);
    CREATE INDEX audit_principal ON audit (principal);
    CREATE INDEX audit_tool ON audit (tool);
    CREATE INDEX audit_outcome ON audit (outcome);
    CREATE INDEX audit_time ON audit (time);";

/// Schema 17: the outcome index holds only the outcomes worth finding, not `ok`
/// completions or intents (no outcome), which are most records. A commit writes
/// a page to the log for every index its records enter, and each costs about
/// 9 µs a commit here (an insert of one row: 23 µs with no index, 51 µs with
/// two, 77 µs with five); filtering for `ok` scans from the newest record,
/// where most of them are.
pub(super) const RARE_OUTCOMES_MIGRATION: &str = "DROP INDEX audit_outcome;
    CREATE INDEX audit_outcome ON audit (outcome) WHERE outcome IS NOT NULL AND outcome <> 'ok';";

/// The condition on `outcome` a filter for `want` adds: a filter for another
/// outcome than `ok` repeats the index's own condition, so SQLite can use it.
fn outcome_condition(want: &str) -> &'static str {
    if want == "ok" {
        "outcome = ?"
    } else {
        "outcome = ? AND outcome IS NOT NULL AND outcome <> 'ok'"
    }
}

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
        for (column, want) in FIELDS.iter().zip(wanted) {
            if let Some(want) = want {
                conditions.push(match *column {
                    "outcome" => outcome_condition(want).to_owned(),
                    column => format!("{column} = ?"),
                });
                params.push(SqlValue::Text(want.clone()));
            }
        }
        if let Some(since) = &filter.since {
            conditions.push("time >= ?".to_owned());
            params.push(SqlValue::Text(since.clone()));
        }
        if let Some(until) = &filter.until {
            conditions.push("time < ?".to_owned());
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
