//! Human approvals: where a call that policy escalates (`ask`) waits for a person.
//!
//! When policy says `ask`, the gate hands the call to [`ApprovalStore::resolve`],
//! which answers in this order:
//!
//! 1. a live **grant** for the tool (or for the tool with these exact arguments),
//!    given to this caller in this conversation (or, widened, in all of its
//!    conversations), lets the call through;
//! 2. an **approved** request for this exact call (same caller, session, tool and arguments)
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
//! A grant covers the principal whose call it answered, and only in that call's
//! conversation unless the answer widens it to all of that principal's
//! conversations ([`GrantReach`]); it never covers another principal, so an
//! approver cannot let its own calls through by approving someone else's (and
//! approving its own needs `self_approve`). Each grant records who gave it and
//! the approval it answered, and the audit names them when a grant lets a call
//! through.
//!
//! Times are RFC 3339 UTC strings with milliseconds
//! (`humantime::format_rfc3339_millis`), clamped to 1970..=9999. That form has a
//! fixed width, so in SQLite the text order of `grants.expires_at` is time order and
//! expiry is compared in SQL. A grant is live while `now < expires_at`; expired
//! grants are ignored, and pruned whenever a new grant is recorded.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolgate_core::{AnsweredBy, Answerer};

use super::StoreError;

/// A call that policy escalated to a human, as the gate submits it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// The conversation the call belongs to.
    pub session: String,
    /// The tool's name.
    pub tool: String,
    /// The call's (validated) arguments.
    pub arguments: Value,
    /// What "the same call" means: the gate gives the call's
    /// [`call_hash`](toolgate_core::call_hash) (the tool as defined, and the
    /// arguments), so an answer never covers a changed definition;
    /// [`ApprovalRequest::new`] hashes the arguments alone.
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
    /// use toolgate::store::ApprovalRequest;
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
            args_hash: toolgate_core::content_hash(&arguments),
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
    /// The conversation the call was made in.
    pub session: String,
    /// The tool called.
    pub tool: String,
    /// The call's arguments, as the person deciding sees them.
    pub arguments: Value,
    /// The hash of the arguments that names "this exact call" (see [`ApprovalRequest`]).
    pub args_hash: String,
    /// Who made the call.
    pub principal: String,
    /// Why policy asked.
    pub reason: String,
    /// Where the request stands.
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

/// Whose calls, and where, a grant covers: always the principal whose call it
/// answered, never anyone else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GrantReach {
    /// That principal, in the conversation the approved call came from.
    #[default]
    Conversation,
    /// That principal, in every conversation: a wider scope the answer chooses.
    EveryConversation,
}

/// Standing permission given with an approval: calls it covers run without asking
/// until `ttl` has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grant {
    /// How long the grant lasts from the moment it is given.
    pub ttl: Duration,
    /// Which calls of the tool: any arguments, or the approved call's.
    pub scope: GrantScope,
    /// Whose and where: the caller in this conversation, or in all of its own.
    pub reach: GrantReach,
}

impl Grant {
    /// A grant for `ttl`, to the approved call's principal in its conversation.
    pub fn new(ttl: Duration, scope: GrantScope) -> Self {
        Self {
            ttl,
            scope,
            reach: GrantReach::Conversation,
        }
    }

    /// What the grant will cover, in words, for the person giving it:
    /// "every call of `send_email` by agent in conversation `c1`".
    pub fn covers(&self, approval: &Approval) -> String {
        let calls = match self.scope {
            GrantScope::Tool => format!("every call of `{}`", approval.tool),
            GrantScope::SameArguments => {
                format!("calls of `{}` with these arguments", approval.tool)
            }
        };
        let place = match self.reach {
            GrantReach::Conversation => format!("in conversation `{}`", approval.session),
            GrantReach::EveryConversation => "in every conversation".to_owned(),
        };
        format!("{calls} by {} {place}", approval.principal)
    }
}

/// A stored grant, as a resolution names it in the audit log.
pub(super) struct GrantRecord {
    pub(super) id: i64,
    pub(super) args_hash: Option<String>,
    pub(super) session: Option<String>,
    pub(super) approval_id: String,
    pub(super) granted_by: Answerer,
}

impl GrantRecord {
    /// `grant 3 (any arguments, in this conversation; given by lead via cli
    /// answering ap-1f3a9c0e)`: what let the call through, for the audit log.
    pub(super) fn by(&self) -> String {
        let arguments = if self.args_hash.is_some() {
            "the same arguments"
        } else {
            "any arguments"
        };
        let place = if self.session.is_some() {
            "in this conversation"
        } else {
            "in every conversation of the caller"
        };
        format!(
            "grant {} ({arguments}, {place}; given by {} via {} answering {})",
            self.id, self.granted_by.who, self.granted_by.via, self.approval_id
        )
    }
}

/// The grant row an approval with `grant` records: its argument hash and
/// conversation (`None` for any).
pub(super) fn grant_columns(
    approval: &Approval,
    grant: &Grant,
) -> (Option<String>, Option<String>) {
    let args_hash = match grant.scope {
        GrantScope::Tool => None,
        GrantScope::SameArguments => Some(approval.args_hash.clone()),
    };
    let session = match grant.reach {
        GrantReach::Conversation => Some(approval.session.clone()),
        GrantReach::EveryConversation => None,
    };
    (args_hash, session)
}

/// What [`ApprovalStore::resolve`] decided for an asked call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Run the call. `by` names what allowed it: an approval id, or a grant with
    /// its scope and who gave it (`grant 3 (any arguments, in this conversation;
    /// given by lead via cli answering ap-1f3a9c0e)`).
    Granted {
        /// The approval id or grant that allowed it.
        by: String,
    },
    /// Wait for a person; `created` is false when an open request was reused.
    Pending {
        /// The request the person answers.
        id: String,
        /// Whether this call opened it (`false`: an open request was reused).
        created: bool,
    },
    /// A person denied this call; `reason` is theirs (or says none was given).
    Denied {
        /// The denied request, consumed by this report.
        id: String,
        /// The person's reason, or a sentence saying none was given.
        reason: String,
    },
}

/// Where approval requests and grants live.
///
/// [`SqliteStore`](super::SqliteStore) keeps them in `state.db` beside conversation
/// state, shared by every process using that directory (so `toolgate approvals
/// approve` in one terminal answers a gate in another);
/// [`MemoryApprovals`](super::MemoryApprovals) keeps them in memory.
///
/// `SqliteStore` also implements [`StateStore`](crate::store::StateStore), which has a `get`
/// too: with both traits in scope, call `ApprovalStore::get(&store, id)`.
pub trait ApprovalStore: Send + Sync {
    /// Decides an asked call, trying in this order: a live grant that covers it, an
    /// approved request for it (consumed), a denied one (reported once, then
    /// consumed), a pending one (reused), else a new pending request. Atomic: two processes resolving the same approved
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

    /// Approves a pending request as `by`; with a grant, also records it for the
    /// request's principal (expires at now + ttl).
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

    /// Approves again the approved request `id` that [`ApprovalStore::resolve`]
    /// consumed (it answered [`Resolution::Granted`] with `by` its id) for a
    /// call that then stopped before it ran (a rate limit, a cancellation, the
    /// flow), so the next submission of the call runs it. Nothing changes
    /// unless the request is consumed.
    fn give_back(&self, id: &str) -> Result<(), StoreError>;

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

/// Whether what a [`Resolution`] names (`by`, `id`) is an approval request
/// (consumed when it let a call through), not a grant.
pub(crate) fn names_approval(by: &str) -> bool {
    by.starts_with(ID_PREFIX)
}

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
    let suggestions = toolgate_core::closest_names(&id, pending.iter().map(String::as_str));
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
