//! Human approvals: where a call that policy escalates (`ask`) waits for a person.
//!
//! When policy says `ask`, the gate hands the call to [`ApprovalStore::resolve`],
//! which answers in this order:
//!
//! 1. a live **grant** for the tool (or for the tool with these exact arguments) lets
//!    the call through;
//! 2. an **approved** request for this exact call (same session, tool and arguments)
//!    is consumed and lets the call through, so re-submitting an approved call runs
//!    it exactly once, even when several processes re-submit it at once;
//! 3. a **denied** request for this exact call is reported once, with the human's
//!    reason, and then consumed, so the next identical call asks again;
//! 4. a **pending** request for this exact call is reused: asking again opens no
//!    duplicate;
//! 5. otherwise a new pending request is opened, with a short id a person can type
//!    (`ap-` and 8 hex digits).
//!
//! A person answers with [`ApprovalStore::approve_by`] (optionally with a [`Grant`]:
//! a time to live, for the tool or for these arguments only) or
//! [`ApprovalStore::deny_by`], which record who answered and through what (an
//! [`Answerer`]: `cli`, `elicitation`, `input_required`). Each request keeps who
//! may answer it ([`AnsweredBy`], from the rule that asked); the store records
//! answers, and the callers check who may give them
//! ([`Approvers`](toolgate_core::Approvers), the MCP server's elicitation).
//! Grants are not tied to a session: a grant for `send_email` covers every
//! conversation until it expires.
//!
//! Times are RFC 3339 UTC strings with milliseconds
//! (`humantime::format_rfc3339_millis`), clamped to 1970..=9999. That form has a
//! fixed width, so in SQLite the text order of `grants.expires_at` is time order and
//! expiry is compared in SQL. A grant is live while `now < expires_at`; expired
//! grants are ignored, and pruned whenever a new grant is recorded.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_core::{AnsweredBy, Answerer};

use super::{SqliteStore, StoreError};

/// A call that policy escalated to a human, as the gate submits it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The conversation the call belongs to.
    pub session: String,
    /// The tool's name.
    pub tool: String,
    /// The call's (validated) arguments.
    pub arguments: Value,
    /// [`content_hash`](crate::content_hash) of `arguments`: what "the same call" means.
    pub args_hash: String,
    /// Who made the call.
    pub principal: String,
    /// Why policy asks: shown to the person who answers.
    pub reason: String,
    /// Who may answer: the rule's `answered_by`.
    pub answered_by: AnsweredBy,
}

impl ApprovalRequest {
    /// A request whose `args_hash` is computed from `arguments`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate::ApprovalRequest;
    ///
    /// let a = ApprovalRequest::new("default", "send_email", json!({"to": "a@b.c", "cc": []}), "agent", "write needs a human");
    /// let b = ApprovalRequest::new("default", "send_email", json!({"cc": [], "to": "a@b.c"}), "agent", "write needs a human");
    /// assert_eq!(a.args_hash, b.args_hash);
    /// ```
    pub fn new(
        session: impl Into<String>,
        tool: impl Into<String>,
        arguments: Value,
        principal: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            session: session.into(),
            tool: tool.into(),
            args_hash: crate::content_hash(&arguments),
            arguments,
            principal: principal.into(),
            reason: reason.into(),
            answered_by: AnsweredBy::default(),
        }
    }

    /// The request with who may answer it.
    pub fn answered_by(mut self, answered_by: AnsweredBy) -> Self {
        self.answered_by = answered_by;
        self
    }
}

/// Where an approval request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// Approved; the call runs the next time it is submitted.
    Approved,
    /// Denied; the next submission is told so, with the reason.
    Denied,
    /// Used up: the approved call ran, or the denial was reported.
    Consumed,
}

impl ApprovalStatus {
    /// The status as stored and printed: `pending`, `approved`, `denied`, `consumed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Consumed => "consumed",
        }
    }

    pub(super) fn parse(text: &str) -> Option<Self> {
        [Self::Pending, Self::Approved, Self::Denied, Self::Consumed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

impl std::fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One approval request and its answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Approval {
    /// Short and typeable, e.g. `ap-1f3a9c0e`.
    pub id: String,
    pub session: String,
    pub tool: String,
    pub arguments: Value,
    pub args_hash: String,
    pub principal: String,
    /// Why policy asked.
    pub reason: String,
    pub status: ApprovalStatus,
    /// The reason a person gave with a denial.
    pub answer: Option<String>,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// When a person answered, RFC 3339 UTC.
    pub decided_at: Option<String>,
    /// Who may answer it.
    pub answered_by: AnsweredBy,
    /// Who answered, and through what.
    pub decided_by: Option<Answerer>,
}

/// What a grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GrantScope {
    /// Every call of the tool, whatever its arguments.
    Tool,
    /// Only calls of the tool with the same arguments as the approved one.
    SameArguments,
}

/// Standing permission given with an approval: calls it covers run without asking
/// until `ttl` has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grant {
    pub ttl: Duration,
    pub scope: GrantScope,
}

/// What [`ApprovalStore::resolve`] decided for an asked call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Run the call. `by` names what allowed it: `"grant 3"` or an approval id.
    Granted { by: String },
    /// Wait for a person; `created` is false when an open request was reused.
    Pending { id: String, created: bool },
    /// A person denied this call; `reason` is theirs (or says none was given).
    Denied { id: String, reason: String },
}

/// Where approval requests and grants live.
///
/// [`SqliteStore`] keeps them in `state.db` beside conversation state, shared by
/// every process using that directory (so `toolgate approvals approve` in one
/// terminal answers a gate in another); [`MemoryApprovals`] keeps them in memory.
///
/// `SqliteStore` also implements [`StateStore`](crate::StateStore), which has a `get`
/// too: with both traits in scope, call `ApprovalStore::get(&store, id)`.
pub trait ApprovalStore: Send + Sync {
    /// Decides an asked call: grant, approved, denied or pending, in the order the
    /// [module docs](self) give. Atomic: two processes resolving the same approved
    /// call at once run it once.
    fn resolve(&self, request: &ApprovalRequest, now: SystemTime)
    -> Result<Resolution, StoreError>;

    /// Pending requests, or every request with `include_decided`, oldest first.
    fn list(&self, include_decided: bool) -> Result<Vec<Approval>, StoreError>;

    /// One request by id (`ap-` may be left off), or `None`.
    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError>;

    /// Whether a caller waiting for `id` should stop waiting: it was answered,
    /// or it is gone or unreadable (the call run again then says why).
    fn no_longer_pending(&self, id: &str) -> bool {
        self.get(id)
            .ok()
            .flatten()
            .is_none_or(|a| a.status != ApprovalStatus::Pending)
    }

    /// Approves a pending request as `by`; with a grant, also records it
    /// (expires at now + ttl).
    fn approve_by(
        &self,
        id: &str,
        grant: Option<Grant>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError>;

    /// Denies a pending request as `by`; `reason` is reported to the caller once.
    fn deny_by(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError>;

    /// [`ApprovalStore::approve_by`] from a program using this library (`api`).
    fn approve(
        &self,
        id: &str,
        grant: Option<Grant>,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        self.approve_by(id, grant, &library_answerer(), now)
    }

    /// [`ApprovalStore::deny_by`] from a program using this library (`api`).
    fn deny(
        &self,
        id: &str,
        reason: Option<&str>,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        self.deny_by(id, reason, &library_answerer(), now)
    }
}

/// Who answers through [`ApprovalStore::approve`] and [`ApprovalStore::deny`].
fn library_answerer() -> Answerer {
    Answerer::new("library", "api")
}

/// The prefix of every approval id.
const ID_PREFIX: &str = "ap-";

/// The reason reported for a denial that came without one.
const NO_REASON: &str = "a person denied this call without giving a reason";

pub(super) fn new_id() -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("{ID_PREFIX}{}", &hex[..8])
}

/// An id as typed: trimmed, lower-cased, and with `ap-` added when left off.
pub(super) fn normalize_id(id: &str) -> String {
    let id = id.trim().to_ascii_lowercase();
    if id.starts_with(ID_PREFIX) {
        id
    } else {
        format!("{ID_PREFIX}{id}")
    }
}

/// RFC 3339 UTC with milliseconds, clamped to what the format can hold.
pub(super) fn timestamp(time: SystemTime) -> String {
    // The last millisecond of 9999-12-31, the latest time RFC 3339 can write.
    const LATEST: Duration = Duration::from_millis(253_402_300_799_999);
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let clamped = UNIX_EPOCH + since_epoch.min(LATEST);
    humantime::format_rfc3339_millis(clamped).to_string()
}

pub(super) fn expiry(now: SystemTime, ttl: Duration) -> SystemTime {
    now.checked_add(ttl)
        .unwrap_or(UNIX_EPOCH + Duration::from_millis(253_402_300_799_999))
}

pub(super) fn unknown_id(id: String, pending: Vec<String>) -> StoreError {
    let suggestions = crate::closest_names(&id, pending.iter().map(String::as_str));
    StoreError::UnknownApproval {
        id,
        suggestions,
        pending: pending.len(),
    }
}

pub(super) fn not_pending(approval: &Approval) -> StoreError {
    StoreError::ApprovalNotPending {
        id: approval.id.clone(),
        status: approval.status,
        decided_at: approval.decided_at.clone().unwrap_or_default(),
    }
}

pub(super) fn denial_reason(answer: Option<String>) -> String {
    answer
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| NO_REASON.to_owned())
}

// ---------------------------------------------------------------------------------
// In memory
// ---------------------------------------------------------------------------------

/// An [`ApprovalStore`] held in memory, for tests and runs where nobody answers
/// from another process.
///
/// ```
/// use std::time::SystemTime;
/// use serde_json::json;
/// use toolgate::{ApprovalRequest, ApprovalStore, MemoryApprovals, Resolution};
///
/// let approvals = MemoryApprovals::new();
/// let call = ApprovalRequest::new("default", "refund", json!({"order": "A-1"}), "agent", "write asks");
/// let Resolution::Pending { id, .. } = approvals.resolve(&call, SystemTime::now())? else { panic!() };
/// approvals.approve(&id, None, SystemTime::now())?;
/// assert_eq!(approvals.resolve(&call, SystemTime::now())?, Resolution::Granted { by: id });
/// # Ok::<(), toolgate::StoreError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryApprovals {
    inner: Mutex<Memory>,
}

#[derive(Debug, Default)]
struct Memory {
    /// In creation order.
    approvals: Vec<Approval>,
    grants: Vec<MemoryGrant>,
    next_grant: u64,
}

#[derive(Debug)]
struct MemoryGrant {
    id: u64,
    tool: String,
    args_hash: Option<String>,
    expires_at: SystemTime,
}

impl MemoryApprovals {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn inner(&self) -> MutexGuard<'_, Memory> {
        // Every method changes at most one field of one approval after all checks,
        // so the data behind a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Memory {
    fn same_call<'a>(
        &'a mut self,
        request: &'a ApprovalRequest,
        status: ApprovalStatus,
    ) -> Option<&'a mut Approval> {
        self.approvals.iter_mut().find(|a| {
            a.status == status
                && a.session == request.session
                && a.tool == request.tool
                && a.args_hash == request.args_hash
        })
    }

    fn pending_ids(&self) -> Vec<String> {
        self.approvals
            .iter()
            .filter(|a| a.status == ApprovalStatus::Pending)
            .map(|a| a.id.clone())
            .collect()
    }

    /// The pending request `id`, or why it cannot be answered.
    fn pending(&mut self, id: &str) -> Result<&mut Approval, StoreError> {
        let id = normalize_id(id);
        let Some(index) = self.approvals.iter().position(|a| a.id == id) else {
            return Err(unknown_id(id, self.pending_ids()));
        };
        let approval = &mut self.approvals[index];
        if approval.status != ApprovalStatus::Pending {
            return Err(not_pending(approval));
        }
        Ok(approval)
    }
}

impl ApprovalStore for MemoryApprovals {
    fn resolve(
        &self,
        request: &ApprovalRequest,
        now: SystemTime,
    ) -> Result<Resolution, StoreError> {
        let mut inner = self.inner();
        let grant = inner.grants.iter().find(|g| {
            g.tool == request.tool
                && g.expires_at > now
                && g.args_hash.as_ref().is_none_or(|h| *h == request.args_hash)
        });
        if let Some(grant) = grant {
            let by = format!("grant {}", grant.id);
            // An approval of this very call is used up by this run too; left
            // approved, it would let the call through once more after the grant ends.
            if let Some(approved) = inner.same_call(request, ApprovalStatus::Approved) {
                approved.status = ApprovalStatus::Consumed;
            }
            return Ok(Resolution::Granted { by });
        }
        if let Some(approved) = inner.same_call(request, ApprovalStatus::Approved) {
            approved.status = ApprovalStatus::Consumed;
            return Ok(Resolution::Granted {
                by: approved.id.clone(),
            });
        }
        if let Some(denied) = inner.same_call(request, ApprovalStatus::Denied) {
            denied.status = ApprovalStatus::Consumed;
            return Ok(Resolution::Denied {
                id: denied.id.clone(),
                reason: denial_reason(denied.answer.clone()),
            });
        }
        if let Some(pending) = inner.same_call(request, ApprovalStatus::Pending) {
            return Ok(Resolution::Pending {
                id: pending.id.clone(),
                created: false,
            });
        }
        let id = loop {
            let id = new_id();
            if inner.approvals.iter().all(|a| a.id != id) {
                break id;
            }
        };
        inner.approvals.push(Approval {
            id: id.clone(),
            session: request.session.clone(),
            tool: request.tool.clone(),
            arguments: request.arguments.clone(),
            args_hash: request.args_hash.clone(),
            principal: request.principal.clone(),
            reason: request.reason.clone(),
            status: ApprovalStatus::Pending,
            answer: None,
            created_at: timestamp(now),
            decided_at: None,
            answered_by: request.answered_by,
            decided_by: None,
        });
        Ok(Resolution::Pending { id, created: true })
    }

    fn list(&self, include_decided: bool) -> Result<Vec<Approval>, StoreError> {
        let mut list: Vec<Approval> = self
            .inner()
            .approvals
            .iter()
            .filter(|a| include_decided || a.status == ApprovalStatus::Pending)
            .cloned()
            .collect();
        // Same order as SQLite: by creation time, then creation order (stable sort).
        list.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(list)
    }

    fn get(&self, id: &str) -> Result<Option<Approval>, StoreError> {
        let id = normalize_id(id);
        Ok(self.inner().approvals.iter().find(|a| a.id == id).cloned())
    }

    fn approve_by(
        &self,
        id: &str,
        grant: Option<Grant>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        let mut inner = self.inner();
        let approval = inner.pending(id)?;
        approval.status = ApprovalStatus::Approved;
        approval.decided_at = Some(timestamp(now));
        approval.decided_by = Some(by.clone());
        let approval = approval.clone();
        if let Some(grant) = grant {
            inner.grants.retain(|g| g.expires_at > now);
            inner.next_grant += 1;
            let id = inner.next_grant;
            inner.grants.push(MemoryGrant {
                id,
                tool: approval.tool.clone(),
                args_hash: match grant.scope {
                    GrantScope::Tool => None,
                    GrantScope::SameArguments => Some(approval.args_hash.clone()),
                },
                expires_at: expiry(now, grant.ttl),
            });
        }
        Ok(approval)
    }

    fn deny_by(
        &self,
        id: &str,
        reason: Option<&str>,
        by: &Answerer,
        now: SystemTime,
    ) -> Result<Approval, StoreError> {
        let mut inner = self.inner();
        let approval = inner.pending(id)?;
        approval.status = ApprovalStatus::Denied;
        approval.answer = reason.map(str::to_owned);
        approval.decided_at = Some(timestamp(now));
        approval.decided_by = Some(by.clone());
        Ok(approval.clone())
    }
}

// ---------------------------------------------------------------------------------
// SQLite
// ---------------------------------------------------------------------------------

const APPROVAL_COLUMNS: &str = "id, session, tool, arguments, args_hash, principal, reason, status, answer, created_at, decided_at, answered_by, decided_by, decided_via";

/// The schema step that gives each request who may answer it and who did: rows
/// from before it keep `either` (anyone could answer them then). A column that
/// is there already is left as it is, so the step can run on a file whose
/// version number was set back. Its place among the store's migrations is set in
/// `sqlite.rs`.
pub(super) fn add_answerers(tx: &Connection) -> rusqlite::Result<()> {
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

/// The rowid of the oldest request for one call in one status; `?1..?3` are
/// session, tool and args hash, `?4` the status.
const SAME_CALL: &str = "SELECT rowid FROM approvals
     WHERE session = ?1 AND tool = ?2 AND args_hash = ?3 AND status = ?4
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
                    status.as_str()
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
            let args_hash = match grant.scope {
                GrantScope::Tool => None,
                GrantScope::SameArguments => Some(&approval.args_hash),
            };
            tx.execute(
                "INSERT INTO grants (tool, args_hash, expires_at) VALUES (?1, ?2, ?3)",
                params![approval.tool, args_hash, timestamp(expiry(now, grant.ttl))],
            )
            .map_err(&error)?;
        }
        tx.commit().map_err(&error)?;
        Ok(approval)
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
        let grant: Option<i64> = tx
            .prepare_cached(
                "SELECT id FROM grants
                 WHERE tool = ?1 AND (args_hash IS NULL OR args_hash = ?2) AND expires_at > ?3
                 ORDER BY id LIMIT 1",
            )
            .map_err(&error)?
            .query_row(params![request.tool, request.args_hash, now], |row| {
                row.get(0)
            })
            .optional()
            .map_err(&error)?;
        if let Some(grant) = grant {
            // An approval of this very call is used up by this run too; left
            // approved, it would let the call through once more after the grant ends.
            self.consume(tx, request, ApprovalStatus::Approved)?;
            return Ok(Resolution::Granted {
                by: format!("grant {grant}"),
            });
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
                params![request.session, request.tool, request.args_hash, "pending"],
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
