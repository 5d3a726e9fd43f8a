//! Approvals held in memory, for tests and runs where nobody answers from another
//! process.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use toolgate_core::Answerer;

use crate::store::StoreError;
use crate::store::approvals::*;

/// An [`ApprovalStore`] held in memory, for tests and runs where nobody answers
/// from another process.
///
/// ```
/// use std::time::SystemTime;
/// use serde_json::json;
/// use toolgate::{store::ApprovalRequest, store::ApprovalStore, store::MemoryApprovals, store::Resolution};
///
/// let approvals = MemoryApprovals::new();
/// let call = ApprovalRequest::new("default", "refund", json!({"order": "A-1"}), "agent", "write asks");
/// let Resolution::Pending { id, .. } = approvals.resolve(&call, SystemTime::now())? else { panic!() };
/// approvals.approve(&id, None, SystemTime::now())?;
/// assert_eq!(approvals.resolve(&call, SystemTime::now())?, Resolution::Granted { by: id });
/// # Ok::<(), toolgate::store::StoreError>(())
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
    principal: String,
    /// `None`: every conversation of `principal`.
    session: Option<String>,
    approval_id: String,
    granted_by: Answerer,
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
                && a.principal == request.principal
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
                && g.principal == request.principal
                && g.expires_at > now
                && g.session.as_ref().is_none_or(|s| *s == request.session)
                && g.args_hash.as_ref().is_none_or(|h| *h == request.args_hash)
        });
        if let Some(grant) = grant {
            let by = GrantRecord {
                id: i64::try_from(grant.id).unwrap_or(i64::MAX),
                args_hash: grant.args_hash.clone(),
                session: grant.session.clone(),
                approval_id: grant.approval_id.clone(),
                granted_by: grant.granted_by.clone(),
            }
            .by();
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
            let (args_hash, session) = grant_columns(&approval, &grant);
            inner.grants.push(MemoryGrant {
                id,
                tool: approval.tool.clone(),
                args_hash,
                principal: approval.principal.clone(),
                session,
                approval_id: approval.id.clone(),
                granted_by: by.clone(),
                expires_at: expiry(now, grant.ttl),
            });
        }
        Ok(approval)
    }

    fn give_back(&self, id: &str) -> Result<(), StoreError> {
        let mut inner = self.inner();
        let consumed = inner
            .approvals
            .iter_mut()
            .find(|a| a.id == id && a.status == ApprovalStatus::Consumed);
        if let Some(approval) = consumed {
            approval.status = ApprovalStatus::Approved;
        }
        Ok(())
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
