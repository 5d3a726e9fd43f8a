//! The authorize stage: the policy decides a call, then the flow's
//! confirmations, then its budgets; a call to ask about waits for, or takes, a
//! human's answer, and an answer the call used up (and what it was charged)
//! is given back if it then stops before it runs.

use std::sync::Arc;

use serde_json::Value;
use toolgate_core::{AuditEntry, Decision, DynTool, Outcome, call_hash};

use super::budget::Charges;
use super::call::{Request, Stop};
use super::store_failure::store_failure;
use super::{Entry, Gate};
use crate::flow::Admitted;
use crate::store::{ApprovalRequest, Resolution};

/// What let a call through authorize, to give back if it then stops before
/// it runs.
#[derive(Default)]
pub(super) struct Authorized {
    /// The approval the call consumed, if one let it through (a grant is not
    /// consumed).
    consumed: Option<String>,
    /// What its budgets were charged.
    charged: Charges,
}

impl Gate {
    /// Authorize: the policy decides this call (its rules' `when:` may read the
    /// arguments, the conversation and the caller's claims), then the flow's
    /// confirmations, then its budgets; a call to ask about waits for, or
    /// takes, a human's answer. The audit records what decided.
    pub(super) fn authorize(
        &self,
        request: &Request<'_>,
        tool: &Arc<dyn DynTool>,
        entry: &Entry,
        arguments: &Value,
        admitted: &Admitted,
        audit: &mut AuditEntry,
    ) -> Result<Authorized, Stop> {
        let Request {
            session,
            call,
            principal,
            ..
        } = *request;
        let decided = self.decide_call(
            session,
            tool.descriptor(),
            arguments,
            principal,
            &call.untrusted_origin,
        );
        let (mut verdict, shadow) = match decided {
            Ok((verdict, shadow)) => (admitted.decide(verdict), shadow),
            Err(e) => return Err(Stop::failed(store_failure("the state store", e))),
        };
        let charges = match verdict.decision {
            Decision::Deny => Charges::default(),
            _ => match self.charges(tool.descriptor(), principal, arguments) {
                Ok(charges) => charges,
                Err(reason) => {
                    audit.decision = Some(Decision::Deny);
                    audit.reason = Some(format!("{reason} (decided by budgets)"));
                    return Err(Stop::refused("denied", Outcome::Denied { reason }));
                }
            },
        };
        // A call allowed is charged now; one past a budget is asked or refused.
        if verdict.decision == Decision::Allow && !charges.is_empty() {
            match self.charge(&charges, false) {
                Ok(None) => {}
                Ok(Some(over)) => verdict = over,
                Err(e) => return Err(Stop::failed(store_failure("the budgets' counters", e))),
            }
        }
        // A shadow rule only observes: the audit reason says what it would
        // have decided, and `/metrics` counts where that differs.
        let decided_why = match shadow {
            Some(shadow) => {
                if shadow.decision != verdict.decision {
                    crate::telemetry::shadow_disagreement(&shadow.observer(), &call.name);
                }
                format!("{}; {}", verdict.audit_reason(), shadow.note())
            }
            None => verdict.audit_reason(),
        };
        audit.decision = Some(verdict.decision);
        audit.reason = Some(decided_why.clone());
        match verdict.decision {
            // Allowed: charged above (or nothing to charge).
            Decision::Allow => Ok(Authorized {
                consumed: None,
                charged: charges,
            }),
            Decision::Deny => Err(Stop::refused(
                "denied",
                Outcome::Denied {
                    reason: verdict.reason,
                },
            )),
            Decision::Ask => {
                let hash = audit
                    .call_hash
                    .get_or_insert_with(|| call_hash(&call.name, &entry.definition, arguments));
                let request = ApprovalRequest {
                    session: session.to_owned(),
                    tool: call.name.clone(),
                    arguments: audit.arguments.clone(),
                    args_hash: hash.clone(),
                    principal: principal.id.clone(),
                    reason: verdict.reason.clone(),
                    answered_by: verdict.answered_by,
                };
                match self.store.resolve(&request, (self.clock)()) {
                    Ok(Resolution::Granted { by }) => {
                        audit.reason =
                            Some(format!("{decided_why}; approved ({})", self.answered(&by)));
                        let authorized = Authorized {
                            consumed: crate::store::names_approval(&by).then_some(by),
                            charged: Charges::default(),
                        };
                        self.charge_approved(authorized, charges, audit)
                    }
                    Ok(Resolution::Pending { id, .. }) => {
                        let outcome = Outcome::PendingApproval {
                            approval_id: id,
                            reason: verdict.reason,
                        };
                        Err(Stop::refused("pending_approval", outcome))
                    }
                    Ok(Resolution::Denied { reason, id }) => {
                        audit.reason =
                            Some(format!("{decided_why}; denied ({})", self.answered(&id)));
                        let outcome = Outcome::Denied {
                            reason: format!("a human denied this call: {reason}"),
                        };
                        Err(Stop::refused("denied", outcome))
                    }
                    Err(e) => Err(Stop::failed(store_failure("the approvals store", e))),
                }
            }
        }
    }

    /// Charges a call a human approved: past its `ask` budgets, but not its
    /// `deny` ones (which refuse it, giving the approval back).
    fn charge_approved(
        &self,
        mut authorized: Authorized,
        charges: Charges,
        audit: &mut AuditEntry,
    ) -> Result<Authorized, Stop> {
        if charges.is_empty() {
            return Ok(authorized);
        }
        match self.charge(&charges, true) {
            Ok(None) => {
                authorized.charged = charges;
                Ok(authorized)
            }
            Ok(Some(over)) => {
                audit.decision = Some(over.decision);
                audit.reason = Some(over.audit_reason());
                self.undo(&authorized, audit);
                Err(Stop::refused(
                    "denied",
                    Outcome::Denied {
                        reason: over.reason,
                    },
                ))
            }
            Err(e) => {
                self.undo(&authorized, audit);
                Err(Stop::failed(store_failure("the budgets' counters", e)))
            }
        }
    }

    /// Gives back what let a call through authorize (an approval it consumed,
    /// what its budgets were charged), when it then stopped before it ran.
    pub(super) fn undo(&self, authorized: &Authorized, audit: &mut AuditEntry) {
        if !authorized.charged.is_empty() {
            self.refund(&authorized.charged);
        }
        if let Some(id) = &authorized.consumed {
            self.give_back(id, audit);
        }
    }

    /// Gives back approval `id`, consumed by a call that then stopped before it
    /// ran, and says so in the call's audit record.
    fn give_back(&self, id: &str, audit: &mut AuditEntry) {
        let note = match self.store.give_back(id) {
            Ok(()) => format!("{id} given back: the call did not run"),
            Err(e) => {
                tracing::warn!(approval = id, error = %e, "an approval could not be given back");
                format!(
                    "{id} used up, though the call did not run ({})",
                    e.reported()
                )
            }
        };
        let reason = audit.reason.take().unwrap_or_default();
        audit.reason = Some(format!("{reason}; {note}"));
    }
}
