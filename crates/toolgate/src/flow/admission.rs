//! The gate's admission stage: before a call is authorized, the conversation's
//! flow decides whether it may run now. A blocked call is refused with the
//! monitor's reason; a `confirm:` tool is sent to the approvals path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::{Map, Value};
use tokio::sync::OwnedMutexGuard;
use toolgate_core::flow::{CallRecord, Flow, FlowVisibility, Monitor, ToolStatus};
use toolgate_core::{Decision, Verdict};

use crate::gate::{Gate, Outcome};
use crate::store::StoreError;

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
    /// The session's turn, held until the call is recorded.
    _turn: Option<OwnedMutexGuard<()>>,
}

/// A call the flow refused: the audit outcome and what the caller is told.
pub(crate) struct Refusal {
    pub status: &'static str,
    pub outcome: Outcome,
}

impl FlowGate {
    /// A flow gate that takes turns with the holders of `turns` (a gate it
    /// succeeds), or with nobody else.
    pub fn new(flow: Option<Flow>, visibility: FlowVisibility, turns: Option<Arc<Turns>>) -> Self {
        FlowGate {
            flow,
            visibility,
            turns: turns.unwrap_or_default(),
        }
    }

    pub fn turns(&self) -> &Arc<Turns> {
        &self.turns
    }

    pub fn flow(&self) -> Option<&Flow> {
        self.flow.as_ref()
    }

    pub fn visibility(&self) -> FlowVisibility {
        self.visibility
    }

    /// Decides whether a validated call may go on to authorization.
    pub async fn admit(
        &self,
        gate: &Gate,
        session: &str,
        tool: &str,
        arguments: &Value,
    ) -> Result<Admitted, Refusal> {
        let Some(flow) = self.flow.as_ref().filter(|f| f.governs(tool)) else {
            return Ok(Admitted {
                confirm: None,
                _turn: None,
            });
        };
        let turn = self.turn(session).lock_owned().await;
        let (state, history) = facts(gate, session).map_err(|e| Refusal {
            status: "error",
            outcome: Outcome::error(
                format!("the conversation's flow cannot be checked ({e}), so nothing ran; tell the operator"),
                true,
            ),
        })?;
        match Monitor::new(flow).admit(&state, &history, tool, arguments) {
            ToolStatus::Blocked { reason, .. } => Err(Refusal {
                status: "blocked",
                outcome: Outcome::Denied { reason },
            }),
            ToolStatus::Allowed { confirm } => Ok(Admitted {
                confirm,
                _turn: Some(turn),
            }),
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

impl Admitted {
    /// The policy's verdict, with the flow's confirmation: a call that would run at
    /// once asks a person instead; one that already asks says why twice over.
    pub fn decide(&self, verdict: Verdict) -> Verdict {
        let Some(confirm) = &self.confirm else {
            return verdict;
        };
        match verdict.decision {
            Decision::Allow => Verdict {
                decision: Decision::Ask,
                reason: confirm.clone(),
            },
            Decision::Ask => Verdict {
                decision: Decision::Ask,
                reason: format!("{}; {confirm}", verdict.reason),
            },
            Decision::Deny => verdict,
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
