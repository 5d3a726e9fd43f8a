//! Approvals in the SQLite store: requests and grants as rows, each answer and
//! each consumption one transaction, so several processes agree.

use std::time::SystemTime;

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use toolgate_core::{AnsweredBy, Answerer};

use super::SqliteStore;
use crate::store::StoreError;
use crate::store::approvals::*;

const APPROVAL_COLUMNS: &str = "id, session, tool, arguments, args_hash, principal, reason, status, answer, created_at, decided_at, answered_by, decided_by, decided_via";

/// The schema step that gives each request who may answer it and who did: rows
/// from before it keep `either` (anyone could answer them then). A column that
/// is there already is left as it is, so the step can run on a file whose
/// version number was set back. Its place among the store's migrations is set in
/// `sqlite.rs`.
pub(in crate::store) fn add_answerers(tx: &Connection) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare("SELECT name FROM pragma_table_info('approvals')")?;
    let columns = stmt
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<String>, _>>()?;
    if columns.is_empty() {
        // No approvals table: nothing to add to.
        return Ok(());
    }
    let wanted = [
        (
            "answered_by",
            "TEXT NOT NULL DEFAULT 'either' CHECK (answered_by IN ('client', 'approver', 'either'))",
        ),
        ("decided_by", "TEXT"),
        ("decided_via", "TEXT"),
    ];
    for (name, definition) in wanted {
        if !columns.iter().any(|c| c == name) {
            tx.execute_batch(&format!(
                "ALTER TABLE approvals ADD COLUMN {name} {definition};"
            ))?;
        }
    }
    Ok(())
}

/// The schema step that binds each grant to the principal whose call it
/// answered (and, unless widened, that conversation), and records who gave it.
/// Grants from before it covered every principal; they are dropped, so the
/// calls they covered ask again. Its place among the store's migrations is set
/// in `sqlite.rs`.
pub(in crate::store) const GRANT_SCOPES: &str = "DROP TABLE IF EXISTS grants;
    CREATE TABLE grants (
        id          INTEGER PRIMARY KEY,
        tool        TEXT NOT NULL,
        args_hash   TEXT,
        principal   TEXT NOT NULL,
        session     TEXT,
        approval_id TEXT NOT NULL,
        granted_by  TEXT NOT NULL,
        granted_via TEXT NOT NULL,
        expires_at  TEXT NOT NULL
    );
    CREATE INDEX grants_caller ON grants (tool, principal);";

/// The rowid of the oldest request for one call in one status; `?1..?3` are
/// session, tool and args hash, `?4` the status, `?5` the principal.
const SAME_CALL: &str = "SELECT rowid FROM approvals
     WHERE session = ?1 AND tool = ?2 AND args_hash = ?3 AND status = ?4 AND principal = ?5
     ORDER BY created_at, rowid LIMIT 1";

impl SqliteStore {
    fn approvals_location(&self) -> String {
        self.path()
            .map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string())
    }

    /// Reads one `APPROVAL_COLUMNS` row.
    fn approval_row(&self, row: &Row<'_>) -> Result<Approval, StoreError> {
        let error = self.error("reading approvals");
        let id: String = row.get(0).map_err(&error)?;
        let corrupt = |problem: String| StoreError::CorruptApproval {
            location: self.approvals_location(),
            id: id.clone(),
            problem,
        };
        let arguments: String = row.get(3).map_err(&error)?;
        let arguments = serde_json::from_str(&arguments)
            .map_err(|e| corrupt(format!("arguments that are not JSON ({e})")))?;
        let status: String = row.get(7).map_err(&error)?;
        let status = ApprovalStatus::parse(&status)
            .ok_or_else(|| corrupt(format!("the unknown status `{status}`")))?;
        let answered_by: String = row.get(11).map_err(&error)?;
        let answered_by = AnsweredBy::parse(&answered_by)
            .ok_or_else(|| corrupt(format!("the unknown answerer `{answered_by}`")))?;
        let who: Option<String> = row.get(12).map_err(&error)?;
        let via: Option<String> = row.get(13).map_err(&error)?;
        Ok(Approval {
            answered_by,
            decided_by: who.map(|who| Answerer::new(who, via.unwrap_or_default())),
            session: row.get(1).map_err(&error)?,
            tool: row.get(2).map_err(&error)?,
            arguments,
            args_hash: row.get(4).map_err(&error)?,
            principal: row.get(5).map_err(&error)?,
            reason: row.get(6).map_err(&error)?,
            status,
            answer: row.get(8).map_err(&error)?,
            created_at: row.get(9).map_err(&error)?,
            decided_at: row.get(10).map_err(&error)?,
            id,
        })
    }

    fn approval_in(&self, tx: &Connection, id: &str) -> Result<Option<Approval>, StoreError> {
        let error = self.error("reading an approval");
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1");
        let mut stmt = tx.prepare_cached(&sql).map_err(&error)?;
        let mut rows = stmt.query([id]).map_err(&error)?;
        match rows.next().map_err(&error)? {
            None => Ok(None),
            Some(row) => self.approval_row(row).map(Some),
        }
    }

    /// The pending request `id` inside `tx`, or why it cannot be answered.
    fn pending_in(&self, tx: &Connection, id: &str) -> Result<Approval, StoreError> {
        let id = normalize_id(id);
        let Some(approval) = self.approval_in(tx, &id)? else {
            let error = self.error("listing pending approvals");
            let mut stmt = tx
                .prepare_cached("SELECT id FROM approvals WHERE status = 'pending'")
                .map_err(&error)?;
            let pending = stmt
                .query_map([], |row| row.get(0))
                .map_err(&error)?
                .collect::<Result<Vec<String>, _>>()
                .map_err(&error)?;
            return Err(unknown_id(id, pending));
        };
        if approval.status != ApprovalStatus::Pending {
            return Err(not_pending(&approval));
        }
        Ok(approval)
    }

    /// Marks the oldest request for this call in `status` consumed; returns its id
    /// and answer.
    fn consume(
        &self,
        tx: &Connection,
        request: &ApprovalRequest,
        status: ApprovalStatus,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        let error = self.error("consuming an approval");
        // One UPDATE whose WHERE re-checks the status: together with the IMMEDIATE
        // transaction around it, no two processes can consume the same row.
        let sql = format!(
            "UPDATE approvals SET status = 'consumed'
             WHERE rowid = ({SAME_CALL}) AND status = ?4
             RETURNING id, answer"
        );
        tx.prepare_cached(&sql)
            .map_err(&error)?
            .query_row(
                params![
                    request.session,
                    request.tool,
                    request.args_hash,
                    status.as_str(),
                    request.principal
                ],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .map_err(&error)
    }
}

impl ApprovalStore for SqliteStore {
    fn resolve(
        &self,
        request: &ApprovalRequest,
        now: SystemTime,
    ) -> Result<Resolution, StoreError> {
        let error = self.error("resolving an approval");
        let now = timestamp(now);
        let mut conn = self.conn();
        // IMMEDIATE takes the write lock up front: everything below sees and changes
        // the approvals as one step, whatever other processes do.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let resolution = self.resolve_in(&tx, request, &now)?;
        tx.commit().map_err(&error)?;
        Ok(resolution)
    }

    fn list(&self, include_decided: bool) -> Result<Vec<Approval>, StoreError> {
        let error = self.error("listing approvals");
        let conn = self.conn();
        let filter = if include_decided {
            ""
        } else {
            "WHERE status = 'pending'"
        };
        let sql =
            format!("SELECT {APPROVAL_COLUMNS} FROM approvals {filter} ORDER BY created_at, rowid");
        let mut stmt = conn.prepare_cached(&sql).map_err(&error)?;
        let mut rows = stmt.query([]).map_err(&error)?;
        let mut list = Vec::new();
        while let Some(row) = rows.next().map_err(&error)? {
            list.push(self.approval_row(row)?);
        }
        Ok(list)
    }

    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        self.approval_in(&self.conn(), &normalize_id(id))
    }

    fn approve_by(
        &self,
        id: &str,
        grant: Option<Grant>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        let error = self.error("approving a request");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let mut approval = self.pending_in(&tx, id)?;
        approval.status = ApprovalStatus::Approved;
        approval.decided_at = Some(timestamp(now));
        approval.decided_by = Some(by.clone());
        tx.execute(
            "UPDATE approvals SET status = 'approved', decided_at = ?2, decided_by = ?3, decided_via = ?4 WHERE id = ?1",
            params![approval.id, approval.decided_at, by.who, by.via],
        )
        .map_err(&error)?;
        if let Some(grant) = grant {
            tx.execute(
                "DELETE FROM grants WHERE expires_at <= ?1",
                [timestamp(now)],
            )
            .map_err(&error)?;
            let (args_hash, session) = grant_columns(&approval, &grant);
            tx.execute(
                "INSERT INTO grants (tool, args_hash, principal, session, approval_id, granted_by, granted_via, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    approval.tool,
                    args_hash,
                    approval.principal,
                    session,
                    approval.id,
                    by.who,
                    by.via,
                    timestamp(expiry(now, grant.ttl))
                ],
            )
            .map_err(&error)?;
        }
        tx.commit().map_err(&error)?;
        Ok(approval)
    }

    fn give_back(&self, id: &str) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE approvals SET status = 'approved' WHERE id = ?1 AND status = 'consumed'",
                [id],
            )
            .map_err(self.error("giving back an approval"))?;
        Ok(())
    }

    fn deny_by(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        let error = self.error("denying a request");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let mut approval = self.pending_in(&tx, id)?;
        approval.status = ApprovalStatus::Denied;
        approval.answer = reason.map(str::to_owned);
        approval.decided_at = Some(timestamp(now));
        approval.decided_by = Some(by.clone());
        tx.execute(
            "UPDATE approvals SET status = 'denied', answer = ?2, decided_at = ?3, decided_by = ?4, decided_via = ?5 WHERE id = ?1",
            params![approval.id, approval.answer, approval.decided_at, by.who, by.via],
        )
        .map_err(&error)?;
        tx.commit().map_err(&error)?;
        Ok(approval)
    }
}

impl SqliteStore {
    fn resolve_in(
        &self,
        tx: &Connection,
        request: &ApprovalRequest,
        now: &str,
    ) -> Result<Resolution, StoreError> {
        let error = self.error("resolving an approval");
        let grant = tx
            .prepare_cached(
                "SELECT id, args_hash, session, approval_id, granted_by, granted_via FROM grants
                 WHERE tool = ?1 AND principal = ?2 AND (session IS NULL OR session = ?3)
                   AND (args_hash IS NULL OR args_hash = ?4) AND expires_at > ?5
                 ORDER BY id LIMIT 1",
            )
            .map_err(&error)?
            .query_row(
                params![
                    request.tool,
                    request.principal,
                    request.session,
                    request.args_hash,
                    now
                ],
                |row| {
                    Ok(GrantRecord {
                        id: row.get(0)?,
                        args_hash: row.get(1)?,
                        session: row.get(2)?,
                        approval_id: row.get(3)?,
                        granted_by: Answerer::new(
                            row.get::<_, String>(4)?,
                            row.get::<_, String>(5)?,
                        ),
                    })
                },
            )
            .optional()
            .map_err(&error)?;
        if let Some(grant) = grant {
            // An approval of this very call is used up by this run too; left
            // approved, it would let the call through once more after the grant ends.
            self.consume(tx, request, ApprovalStatus::Approved)?;
            return Ok(Resolution::Granted { by: grant.by() });
        }
        if let Some((id, _)) = self.consume(tx, request, ApprovalStatus::Approved)? {
            return Ok(Resolution::Granted { by: id });
        }
        if let Some((id, answer)) = self.consume(tx, request, ApprovalStatus::Denied)? {
            return Ok(Resolution::Denied {
                id,
                reason: denial_reason(answer),
            });
        }
        let pending: Option<String> = tx
            .prepare_cached(&format!(
                "SELECT id FROM approvals WHERE rowid = ({SAME_CALL})"
            ))
            .map_err(&error)?
            .query_row(
                params![
                    request.session,
                    request.tool,
                    request.args_hash,
                    "pending",
                    request.principal
                ],
                |row| row.get(0),
            )
            .optional()
            .map_err(&error)?;
        if let Some(id) = pending {
            return Ok(Resolution::Pending { id, created: false });
        }
        let arguments = request.arguments.to_string();
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO approvals
                 (id, session, tool, args_hash, arguments, principal, reason, status, created_at, answered_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?9)
                 ON CONFLICT (id) DO NOTHING",
            )
            .map_err(&error)?;
        loop {
            let id = new_id();
            let inserted = insert
                .execute(params![
                    id,
                    request.session,
                    request.tool,
                    request.args_hash,
                    arguments,
                    request.principal,
                    request.reason,
                    now,
                    request.answered_by.as_str()
                ])
                .map_err(&error)?;
            if inserted == 1 {
                return Ok(Resolution::Pending { id, created: true });
            }
        }
    }
}
