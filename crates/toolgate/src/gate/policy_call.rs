//! The policy's decision on one call, at call time: its rules' `when:` read the
//! validated arguments, the conversation's state and history (read only when a
//! rule for the tool needs them) and the caller's claims.

use serde_json::{Map, Value};
use toolgate_core::{CallFacts, Principal, ToolDescriptor, Verdict};

use super::Gate;
use crate::store::{ApprovalStore, StoreError};

impl Gate {
    /// The policy's verdict on calling `tool` with `arguments` in `session`.
    pub(super) fn decide_call(
        &self,
        session: &str,
        tool: &ToolDescriptor,
        arguments: &Value,
        principal: &Principal,
    ) -> Result<Verdict, StoreError> {
        let (state, history) = if self.policy.reads_conversation(&tool.name) {
            crate::flow::facts(self, session)?
        } else {
            (Map::new(), Vec::new())
        };
        let call = CallFacts {
            arguments,
            state: &state,
            history: &history,
        };
        Ok(self.policy.decide_call(tool, principal, call))
    }

    /// Who answered the approval `by` names, for the audit log: `ap-1f3a9c0e,
    /// approved by lead via cli`; a grant (`grant 3`) is named as it is.
    pub(super) fn answered(&self, by: &str) -> String {
        if !crate::store::names_approval(by) {
            return by.to_owned();
        }
        match ApprovalStore::get(self.store.as_ref(), by) {
            Ok(Some(approval)) => match &approval.decided_by {
                Some(answerer) => format!("{by} by {} via {}", answerer.who, answerer.via),
                None => by.to_owned(),
            },
            _ => by.to_owned(),
        }
    }
}
