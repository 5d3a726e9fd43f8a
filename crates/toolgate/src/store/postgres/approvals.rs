//! Approvals and grants on PostgreSQL, in the order the SQLite store answers them.
//!
//! An approval is consumed by `UPDATE … WHERE id = … AND status = 'approved'`: the
//! row lock makes a second instance's update wait for the first, re-check the status
//! and change nothing, so an approved call runs once whichever instances race for it.
//! Resolutions of the same call also take an advisory lock on the call (session,
//! tool, arguments), so asking twice at once opens one request, not two.

use std::time::SystemTime;

use tokio_postgres::Row;
use toolgate_core::{AnsweredBy, Answerer};

use super::{Inner, PostgresStore, StoreError};
use crate::store::approvals::{
    GrantRecord, denial_reason, expiry, grant_columns, new_id, normalize_id, not_pending,
    timestamp, unknown_id,
};
use crate::store::{Approval, ApprovalRequest, ApprovalStatus, ApprovalStore, Grant, Resolution};

const COLUMNS: &str = "id, session, tool, arguments, args_hash, principal, reason, status, answer, created_at, decided_at, answered_by, decided_by, decided_via";

fn approval_row(inner: &Inner, row: &Row) -> Result<Approval, StoreError> {
    let id: String = row.get(0);
    let corrupt = |problem: String| StoreError::CorruptApproval {
        location: inner.location.clone(),
        id: id.clone(),
        problem,
    };
    let arguments = serde_json::from_str(row.get(3))
        .map_err(|e| corrupt(format!("arguments that are not JSON ({e})")))?;
    let status: &str = row.get(7);
    let status = ApprovalStatus::parse(status)
        .ok_or_else(|| corrupt(format!("the unknown status `{status}`")))?;
    let answered_by: &str = row.get(11);
    let answered_by = AnsweredBy::parse(answered_by)
        .ok_or_else(|| corrupt(format!("the unknown answerer `{answered_by}`")))?;
    let who: Option<String> = row.get(12);
    let via: Option<String> = row.get(13);
    Ok(Approval {
        answered_by,
        decided_by: who.map(|who| Answerer::new(who, via.unwrap_or_default())),
        session: row.get(1),
        tool: row.get(2),
        arguments,
        args_hash: row.get(4),
        principal: row.get(5),
        reason: row.get(6),
        status,
        answer: row.get(8),
        created_at: row.get(9),
        decided_at: row.get(10),
        id,
    })
}

async fn approval_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    id: &str,
) -> Result<Option<Approval>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1");
    let row = client
        .query_opt(&sql, &[&id])
        .await
        .map_err(inner.error("reading an approval"))?;
    row.map(|row| approval_row(inner, &row)).transpose()
}

/// The pending request `id`, locked for this transaction, or why it cannot be
/// answered.
async fn pending_in(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    id: &str,
) -> Result<Approval, StoreError> {
    let id = normalize_id(id);
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1 FOR UPDATE");
    let row = client
        .query_opt(&sql, &[&id])
        .await
        .map_err(inner.error("reading an approval"))?;
    let Some(row) = row else {
        let pending = client
            .query("SELECT id FROM approvals WHERE status = 'pending'", &[])
            .await
            .map_err(inner.error("listing pending approvals"))?;
        return Err(unknown_id(id, pending.iter().map(|r| r.get(0)).collect()));
    };
    let approval = approval_row(inner, &row)?;
    if approval.status != ApprovalStatus::Pending {
        return Err(not_pending(&approval));
    }
    Ok(approval)
}

/// Marks the oldest request for this call in `status` consumed; its id and answer.
async fn consume(
    client: &impl tokio_postgres::GenericClient,
    inner: &Inner,
    request: &ApprovalRequest,
    status: ApprovalStatus,
) -> Result<Option<(String, Option<String>)>, StoreError> {
    let row = client
        .query_opt(
            "UPDATE approvals SET status = 'consumed'
             WHERE id = (SELECT id FROM approvals
                         WHERE session = $1 AND tool = $2 AND args_hash = $3 AND status = $4
                           AND principal = $5
                         ORDER BY created_at, n LIMIT 1)
               AND status = $4
             RETURNING id, answer",
            &[
                &request.session,
                &request.tool,
                &request.args_hash,
                &status.as_str(),
                &request.principal,
            ],
        )
        .await
        .map_err(inner.error("consuming an approval"))?;
    Ok(row.map(|row| (row.get(0), row.get(1))))
}

async fn resolve_in(
    inner: &Inner,
    request: ApprovalRequest,
    now: String,
) -> Result<Resolution, StoreError> {
    let error = inner.error("resolving an approval");
    let mut conn = inner.conn().await?;
    let tx = conn.transaction().await.map_err(&error)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2 || chr(31) || $3, 0))",
        &[&request.session, &request.tool, &request.args_hash],
    )
    .await
    .map_err(&error)?;
    let grant = tx
        .query_opt(
            "SELECT id, args_hash, session, approval_id, granted_by, granted_via FROM grants
             WHERE tool = $1 AND principal = $2 AND (session IS NULL OR session = $3)
               AND (args_hash IS NULL OR args_hash = $4) AND expires_at > $5
             ORDER BY id LIMIT 1",
            &[
                &request.tool,
                &request.principal,
                &request.session,
                &request.args_hash,
                &now,
            ],
        )
        .await
        .map_err(&error)?;
    let resolution = if let Some(grant) = grant {
        // An approval of this very call is used up by this run too.
        consume(&*tx, inner, &request, ApprovalStatus::Approved).await?;
        let grant = GrantRecord {
            id: grant.get(0),
            args_hash: grant.get(1),
            session: grant.get(2),
            approval_id: grant.get(3),
            granted_by: Answerer::new(grant.get::<_, String>(4), grant.get::<_, String>(5)),
        };
        Resolution::Granted { by: grant.by() }
    } else if let Some((id, _)) = consume(&*tx, inner, &request, ApprovalStatus::Approved).await? {
        Resolution::Granted { by: id }
    } else if let Some((id, answer)) =
        consume(&*tx, inner, &request, ApprovalStatus::Denied).await?
    {
        Resolution::Denied {
            id,
            reason: denial_reason(answer),
        }
    } else if let Some(row) = tx
        .query_opt(
            "SELECT id FROM approvals
             WHERE session = $1 AND tool = $2 AND args_hash = $3 AND status = 'pending'
               AND principal = $4
             ORDER BY created_at, n LIMIT 1",
            &[
                &request.session,
                &request.tool,
                &request.args_hash,
                &request.principal,
            ],
        )
        .await
        .map_err(&error)?
    {
        Resolution::Pending {
            id: row.get(0),
            created: false,
        }
    } else {
        let arguments = request.arguments.to_string();
        loop {
            let id = new_id();
            let inserted = tx
                .execute(
                    "INSERT INTO approvals
                     (id, session, tool, args_hash, arguments, principal, reason, status, created_at, answered_by)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9)
                     ON CONFLICT (id) DO NOTHING",
                    &[
                        &id,
                        &request.session,
                        &request.tool,
                        &request.args_hash,
                        &arguments,
                        &request.principal,
                        &request.reason,
                        &now,
                        &request.answered_by.as_str(),
                    ],
                )
                .await
                .map_err(&error)?;
            if inserted == 1 {
                break Resolution::Pending { id, created: true };
            }
        }
    };
    tx.commit().await.map_err(&error)?;
    Ok(resolution)
}

impl ApprovalStore for PostgresStore {
    fn resolve(
        &self,
        request: &ApprovalRequest,
        now: SystemTime,
    ) -> Result<Resolution, StoreError> {
        let inner = self.inner.clone();
        let request = request.clone();
        self.run(async move { resolve_in(&inner, request, timestamp(now)).await })
    }

    fn list(&self, include_decided: bool) -> Result<Vec<Approval>, StoreError> {
        let inner = self.inner.clone();
        self.run(async move {
            let filter = if include_decided {
                ""
            } else {
                "WHERE status = 'pending'"
            };
            let sql = format!("SELECT {COLUMNS} FROM approvals {filter} ORDER BY created_at, n");
            let conn = inner.conn().await?;
            let rows = conn
                .query(&sql, &[])
                .await
                .map_err(inner.error("listing approvals"))?;
            rows.iter().map(|row| approval_row(&inner, row)).collect()
        })
    }

    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let inner = self.inner.clone();
        let id = normalize_id(id);
        self.run(async move {
            let conn = inner.conn().await?;
            approval_in(&**conn, &inner, &id).await
        })
    }

    fn approve_by(
        &self,
        id: &str,
        grant: Option<Grant>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        let (inner, id, by) = (self.inner.clone(), id.to_owned(), by.clone());
        self.run(async move {
            let error = inner.error("approving a request");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            let mut approval = pending_in(&*tx, &inner, &id).await?;
            approval.status = ApprovalStatus::Approved;
            approval.decided_at = Some(timestamp(now));
            approval.decided_by = Some(by.clone());
            tx.execute(
                "UPDATE approvals SET status = 'approved', decided_at = $2, decided_by = $3, decided_via = $4 WHERE id = $1",
                &[&approval.id, &approval.decided_at, &by.who, &by.via],
            )
            .await
            .map_err(&error)?;
            if let Some(grant) = grant {
                tx.execute("DELETE FROM grants WHERE expires_at <= $1", &[&timestamp(now)])
                    .await
                    .map_err(&error)?;
                let (args_hash, session) = grant_columns(&approval, &grant);
                tx.execute(
                    "INSERT INTO grants (tool, args_hash, principal, session, approval_id, granted_by, granted_via, expires_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    &[
                        &approval.tool,
                        &args_hash,
                        &approval.principal,
                        &session,
                        &approval.id,
                        &by.who,
                        &by.via,
                        &timestamp(expiry(now, grant.ttl)),
                    ],
                )
                .await
                .map_err(&error)?;
            }
            tx.commit().await.map_err(&error)?;
            Ok(approval)
        })
    }

    fn give_back(&self, id: &str) -> Result<(), StoreError> {
        let (inner, id) = (self.inner.clone(), id.to_owned());
        self.run(async move {
            let conn = inner.conn().await?;
            conn.execute(
                "UPDATE approvals SET status = 'approved' WHERE id = $1 AND status = 'consumed'",
                &[&id],
            )
            .await
            .map_err(inner.error("giving back an approval"))?;
            Ok(())
        })
    }

    fn deny_by(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        let (inner, id, by) = (self.inner.clone(), id.to_owned(), by.clone());
        let reason = reason.map(str::to_owned);
        self.run(async move {
            let error = inner.error("denying a request");
            let mut conn = inner.conn().await?;
            let tx = conn.transaction().await.map_err(&error)?;
            let mut approval = pending_in(&*tx, &inner, &id).await?;
            approval.status = ApprovalStatus::Denied;
            approval.answer = reason;
            approval.decided_at = Some(timestamp(now));
            approval.decided_by = Some(by.clone());
            tx.execute(
                "UPDATE approvals SET status = 'denied', answer = $2, decided_at = $3, decided_by = $4, decided_via = $5 WHERE id = $1",
                &[&approval.id, &approval.answer, &approval.decided_at, &by.who, &by.via],
            )
            .await
            .map_err(&error)?;
            tx.commit().await.map_err(&error)?;
            Ok(approval)
        })
    }
}
