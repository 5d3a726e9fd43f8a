//! The gate's admission stage: before a call is authorized, the conversation's
//! flow decides whether it may run now. A blocked call is refused with the
//! monitor's reason; a `confirm:` tool is sent to the approvals path.
//!
//! A governed call is admitted twice: first on the facts as this process reads
//! them, to decide on authorization; then, just before it runs, in one step of the
//! store that checks again, takes the conversation's turn and records the intent
//! (see `store::turns`), so that calls in other processes on the same state file
//! cannot both pass `once`, `before` or `never_until`.
//!
//! The caller is told why in words that name no tool outside its principal's
//! view ([`Monitor::seen_by`]); the audit record keeps the full reason.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::OwnedMutexGuard;
use tokio_util::sync::CancellationToken;
use toolgate_core::flow::{CallRecord, Flow, FlowVisibility, Monitor, ToolStatus};
use toolgate_core::{AuditEntry, Principal, Tier, Verdict};

use crate::gate::{Gate, Outcome};
use crate::store::{Admission, RecordedCall, StoreError};

/// What a turn's lease adds to the call's own deadline: time to record its
/// completion. A holder that died frees the turn after its deadline and this.
const LEASE_MARGIN: Duration = Duration::from_secs(10);

/// The longest pause between two tries for a turn another process holds.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// A gate's flow, if it has one, and how it shows blocked tools.
pub(crate) struct FlowGate {
    flow: Option<Flow>,
    visibility: FlowVisibility,
    /// One turn per session: a governed call holds it from admission to completion,
    /// so two calls of one conversation cannot both pass `once` in one process.
    turns: Arc<Turns>,
}

/// Each conversation's turn, by session; shared by a gate and its successors.
#[derive(Default)]
pub(crate) struct Turns(Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>);

/// A call the flow let through.
pub(crate) struct Admitted {
    /// Why the user must confirm it, when the flow says so.
    confirm: Option<String>,
    /// The session's turn in this process, held until the call is recorded; `Some`
    /// exactly when the flow governs the call.
    turn: Option<OwnedMutexGuard<()>>,
    /// On whose behalf, when the flow governs the call: what it is told when the
    /// flow is checked again.
    principal: Option<Principal>,
}

/// A call the flow refused: the audit outcome and what the caller is told.
pub(crate) struct Refusal {
    pub status: &'static str,
    pub outcome: Outcome,
    /// The flow's full reason, for the audit record (the caller is told only
    /// what its view allows).
    pub reason: Option<String>,
}

/// The refusal of a call the flow blocks: the caller is told `reason`, in the
/// words of its view; the audit keeps the full reason.
fn blocked(
    flow: &Flow,
    facts: (&Map<String, Value>, &[CallRecord]),
    tool: &str,
    arguments: &Value,
    reason: String,
) -> Refusal {
    let full = Monitor::new(flow).admit(facts.0, facts.1, tool, arguments);
    Refusal {
        status: "blocked",
        outcome: Outcome::Denied { reason },
        reason: full.reason().map(str::to_owned),
    }
}

impl FlowGate {
    /// A flow gate that takes turns with the holders of `turns` (a gate it
    /// succeeds), or with nobody else.
    pub(crate) fn new(
        flow: Option<Flow>,
        visibility: FlowVisibility,
        turns: Option<Arc<Turns>>,
    ) -> Self {
        FlowGate {
            flow,
            visibility,
            turns: turns.unwrap_or_default(),
        }
    }

    pub(crate) fn turns(&self) -> &Arc<Turns> {
        &self.turns
    }

    pub(crate) fn flow(&self) -> Option<&Flow> {
        self.flow.as_ref()
    }

    pub(crate) fn visibility(&self) -> FlowVisibility {
        self.visibility
    }

    /// Decides whether a validated call may go on to authorization.
    pub(crate) async fn admit(
        &self,
        gate: &Gate,
        session: &str,
        tool: &str,
        arguments: &Value,
        principal: &Principal,
    ) -> Result<Admitted, Refusal> {
        let Some(flow) = self.flow.as_ref().filter(|f| f.governs(tool)) else {
            return Ok(Admitted {
                confirm: None,
                turn: None,
                principal: None,
            });
        };
        let turn = self.turn(session).lock_owned().await;
        let (state, history) = facts(gate, session).map_err(|e| Refusal {
            status: "error",
            outcome: Outcome::error(
                format!(
                    "the conversation's flow cannot be checked ({}), so nothing ran; tell the operator",
                    e.reported()
                ),
                true,
            ),
            reason: None,
        })?;
        let sees = gate.may_name_to(principal);
        match Monitor::new(flow)
            .seen_by(&sees)
            .admit(&state, &history, tool, arguments)
        {
            ToolStatus::Blocked { reason, .. } => {
                Err(blocked(flow, (&state, &history), tool, arguments, reason))
            }
            ToolStatus::Allowed { confirm } => Ok(Admitted {
                confirm,
                turn: Some(turn),
                principal: Some(principal.clone()),
            }),
        }
    }

    /// Admits a governed call for good, just before it runs: in one step of the
    /// store, checks the flow again on the conversation's facts as they stand (a
    /// call in another process may have moved it on since [`FlowGate::admit`]),
    /// takes the conversation's turn and records `intent` (which names the session
    /// and the tool). While another run holds the turn, waits for it, at most as
    /// long as a turn can be held. Returns the state (over the declared defaults)
    /// the call was admitted on.
    pub(crate) async fn claim(
        &self,
        gate: &Gate,
        admitted: &Admitted,
        intent: AuditEntry,
        arguments: &Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Map<String, Value>, Refusal> {
        let (session, tool) = (intent.session.as_str(), intent.tool.as_str());
        let Some(flow) = self.flow.as_ref() else {
            return Ok(gate.over_defaults(Map::new()));
        };
        let lease = timeout.saturating_add(LEASE_MARGIN);
        let give_up = crate::store::lease_end(lease);
        let mut pause = Duration::from_millis(2);
        // Only a governed call is claimed; were another, it would be told nothing.
        let nobody = Principal {
            id: String::new(),
            ceiling: Tier::Read,
            scopes: Vec::new(),
            claims: Default::default(),
        };
        let sees = gate.may_name_to(admitted.principal.as_ref().unwrap_or(&nobody));
        loop {
            let mut refusal = None;
            let mut facts = None;
            let mut check = |state: &Map<String, Value>, calls: &[RecordedCall]| {
                let state = gate.over_defaults(state.clone());
                let history: Vec<CallRecord> = calls.iter().map(CallRecord::from).collect();
                let monitor = Monitor::new(flow).seen_by(&sees);
                match monitor.admit(&state, &history, tool, arguments) {
                    ToolStatus::Blocked { reason, .. } => {
                        refusal = Some(blocked(flow, (&state, &history), tool, arguments, reason));
                        false
                    }
                    ToolStatus::Allowed { confirm: Some(_) } if admitted.confirm.is_none() => {
                        refusal = Some(Refusal {
                            status: "error",
                            outcome: Outcome::error(
                                format!(
                                    "the conversation moved on while `{tool}` waited to run, and it now needs the user's confirmation; call it again"
                                ),
                                true,
                            ),
                            reason: None,
                        });
                        false
                    }
                    ToolStatus::Allowed { .. } => {
                        facts = Some(state);
                        true
                    }
                }
            };
            let admission = gate
                .store()
                .admit(session, intent.clone(), lease, &mut check);
            match admission {
                Ok(Admission::Admitted(_)) => return Ok(facts.unwrap_or_default()),
                Ok(Admission::Refused) => {
                    return Err(refusal.unwrap_or_else(|| cannot_check("the check gave no reason")));
                }
                Ok(Admission::Busy) => {}
                Ok(Admission::Abandoned {
                    run_id,
                    tool: theirs,
                }) => {
                    // Another principal's call in this conversation stays nameless.
                    let theirs = if sees(&theirs) {
                        format!("a call of `{theirs}`")
                    } else {
                        "an earlier call".to_owned()
                    };
                    return Err(Refusal {
                        status: "error",
                        outcome: Outcome::error(
                            format!(
                                "`{tool}` did not run: {theirs} in this conversation (run {run_id}) never completed, as the process running it stopped, and it may have taken effect; tell the operator, who checks and records it with `toolgate audit resolve {run_id} --outcome ok|error|cancelled`"
                            ),
                            false,
                        ),
                        reason: None,
                    });
                }
                Err(e) => return Err(cannot_check(&e.reported())),
            }
            if Instant::now() >= give_up {
                let waited = humantime::format_duration(lease);
                return Err(Refusal {
                    status: "error",
                    outcome: Outcome::error(
                        format!(
                            "another call of this conversation held its turn for {waited}, so `{tool}` did not run; call it again"
                        ),
                        true,
                    ),
                    reason: None,
                });
            }
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = cancel.cancelled() => {
                    return Err(Refusal {
                        status: "cancelled",
                        outcome: Outcome::error(format!("the call to `{tool}` was cancelled before it ran"), false),
                        reason: None,
                    });
                }
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    fn turn(&self, session: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.turns.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(turn) = turns.get(session).and_then(Weak::upgrade) {
            return turn;
        }
        // Sessions no call holds any more are forgotten as new ones arrive.
        turns.retain(|_, turn| turn.strong_count() > 0);
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        turns.insert(session.to_owned(), Arc::downgrade(&turn));
        turn
    }
}

/// A governed call whose flow could not be checked.
fn cannot_check(why: &str) -> Refusal {
    Refusal {
        status: "error",
        outcome: Outcome::error(
            format!(
                "the conversation's flow cannot be checked ({why}), so nothing ran; tell the operator"
            ),
            true,
        ),
        reason: None,
    }
}

impl Admitted {
    /// Whether the flow governs the call, which then holds its conversation's turn.
    pub(crate) fn governed(&self) -> bool {
        self.turn.is_some()
    }

    /// The policy's verdict, with the flow's confirmation: a call that would run at
    /// once asks a person instead (the client's user may answer a confirmation,
    /// and so may an approver); one that already asks says why twice over, and
    /// is answered as the policy says.
    pub(crate) fn decide(&self, verdict: Verdict) -> Verdict {
        match &self.confirm {
            Some(confirm) => verdict.confirmed_by_flow(confirm),
            None => verdict,
        }
    }
}

/// A conversation's state (with the declared defaults) and call history.
pub(crate) fn facts(
    gate: &Gate,
    session: &str,
) -> Result<(Map<String, Value>, Vec<CallRecord>), StoreError> {
    Ok((gate.state(session)?, call_records(gate, session)?))
}

/// A conversation's call history, as the flow monitor reads it.
pub(crate) fn call_records(gate: &Gate, session: &str) -> Result<Vec<CallRecord>, StoreError> {
    Ok(gate
        .store()
        .calls(session)?
        .iter()
        .map(CallRecord::from)
        .collect())
}
