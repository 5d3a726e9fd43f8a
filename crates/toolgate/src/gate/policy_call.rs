//! The policy's decision on one call, at call time: its rules' `when:` read the
//! validated arguments, the conversation's state and history, what it has seen
//! and its untrusted results' fingerprints (each read only when a rule for the
//! tool, or the rule of two, needs it) and the caller's claims.

use serde_json::{Map, Value};
use toolgate_core::flow::CallRecord;
use toolgate_core::{CallFacts, Principal, Seen, Shadowed, ToolDescriptor, Verdict};

use super::Gate;
use crate::store::{ApprovalStore, StoreError};

impl Gate {
    /// The policy's verdict on calling `tool` with `arguments` in `session`,
    /// and what a shadow rule would have decided instead, if one applies.
    pub(super) fn decide_call(
        &self,
        session: &str,
        tool: &ToolDescriptor,
        arguments: &Value,
        principal: &Principal,
        origin: &[String],
    ) -> Result<(Verdict, Option<Shadowed>), StoreError> {
        let labelled = self.labelled || !origin.is_empty();
        let reads = |policy: &toolgate_core::Policy| {
            (
                labelled && policy.reads_seen(tool),
                self.labelled && policy.reads_taint(&tool.name),
                policy.reads_conversation(&tool.name),
            )
        };
        let (mut reads_seen, mut reads_taint, mut reads_conversation) = reads(&self.policy);
        if let Some(observer) = &self.observer {
            let (seen, taint, conversation) = reads(observer);
            reads_seen |= seen;
            reads_taint |= taint;
            reads_conversation |= conversation;
        }
        let state = if reads_conversation {
            self.state(session)?
        } else {
            Map::new()
        };
        let calls = if reads_conversation {
            self.store.calls(session)?
        } else {
            Vec::new()
        };
        let history: Vec<CallRecord> = calls.iter().map(CallRecord::from).collect();
        let seen = if reads_seen {
            let mut seen = self.seen_account(session)?;
            // What the host's origin label says entered the context, as if read now.
            for contributor in origin {
                let from = format!("the host's origin label: {contributor}");
                seen.note(&from, &self.now(), toolgate_core::Labels::UNTRUSTED);
            }
            Some(seen)
        } else {
            None
        };
        let untrusted = if reads_taint {
            Some(self.store.untrusted_text(session)?)
        } else {
            None
        };
        let call = CallFacts {
            arguments,
            state: &state,
            history: &history,
            seen: seen.as_ref(),
            untrusted: untrusted.as_ref(),
            untrusted_origin: !origin.is_empty(),
        };
        let shadow = match &self.observer {
            Some(observer) => Some(Shadowed {
                rule: None,
                decision: observer.decide_call(tool, principal, call).decision,
            }),
            None if self.policy.shadows(&tool.name) => self.policy.shadow(tool, principal, call),
            None => None,
        };
        Ok((self.policy.decide_call(tool, principal, call), shadow))
    }

    /// What a conversation whose calls were `calls` has seen, by the labels
    /// its tools carry now.
    pub(crate) fn seen_in(&self, calls: &[crate::store::RecordedCall]) -> Seen {
        Seen::from_calls(
            calls
                .iter()
                .map(|c| (c.tool.as_str(), c.ok, c.time.as_str())),
            |tool| self.catalog.find(tool).map(|t| t.descriptor().output),
        )
    }

    /// What conversation `session` has seen, in the short account the policy
    /// reads (the first calls of each label named, the rest counted), kept
    /// between calls so that each reads only the history since the last.
    pub(crate) fn seen_account(&self, session: &str) -> Result<Seen, StoreError> {
        if !self.labelled {
            return Ok(Seen::default());
        }
        self.seen_cache.seen(self.store.as_ref(), session, |tool| {
            self.catalog.find(tool).map(|t| t.descriptor().output)
        })
    }

    /// Whether some tool's results carry a label, so that a conversation can
    /// have seen one.
    pub fn carries_labels(&self) -> bool {
        self.labelled
    }

    /// What conversation `session` has seen.
    pub fn seen(&self, session: &str) -> Result<Seen, StoreError> {
        if !self.labelled {
            return Ok(Seen::default());
        }
        Ok(self.seen_in(&self.store.calls(session)?))
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
