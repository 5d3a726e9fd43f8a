//! Who may answer a call that policy sends to a human.
//!
//! A rule says who answers its `ask` ([`AnsweredBy`]): an approver principal
//! (the default), the caller's own user through the MCP client, or either; a
//! flow's `confirm:` is answered by either. An approver is a principal that
//! `principals:` grants `approve` for the tool (`approve: ["*"]`, or patterns).
//! While no principal is granted `approve`, whoever runs `toolgate approvals` is
//! an approver (a local setup has one operator, who may answer their own calls).
//! Once approvers are declared, a principal never approves its own call unless
//! `policy.self_approve: true`.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{PrincipalSpec, scope_matches};

/// Who may answer a call that waits for a human.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    /// The caller's own user, through the MCP client (elicitation): right for a
    /// customer confirming their own refund.
    Client,
    /// An approver principal, through `toolgate approvals` (the default for a
    /// policy `ask`): the client's answer does not count.
    #[default]
    Approver,
    /// Either of them.
    Either,
}

impl AnsweredBy {
    /// As stored and printed: `client`, `approver`, `either`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnsweredBy::Client => "client",
            AnsweredBy::Approver => "approver",
            AnsweredBy::Either => "either",
        }
    }

    /// The stored spelling read back; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        [AnsweredBy::Client, AnsweredBy::Approver, AnsweredBy::Either]
            .into_iter()
            .find(|a| a.as_str() == text)
    }

    /// Whether the caller's user may answer through the MCP client.
    pub fn client_may_answer(self) -> bool {
        matches!(self, AnsweredBy::Client | AnsweredBy::Either)
    }

    /// Whether an approver principal may answer.
    pub fn approver_may_answer(self) -> bool {
        matches!(self, AnsweredBy::Approver | AnsweredBy::Either)
    }
}

/// Who answered a call, and through what: the approval's decision record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answerer {
    /// A principal's id, or the operator's OS user name.
    pub who: String,
    /// `cli`, `elicitation`, `input_required`, `test_script` or `api`.
    pub via: String,
}

impl Answerer {
    /// `who` answered through `via`.
    pub fn new(who: impl Into<String>, via: impl Into<String>) -> Self {
        Answerer {
            who: who.into(),
            via: via.into(),
        }
    }
}

/// Why an answer is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefusal {
    #[error(
        "the rule that asked about `{tool}` lets only the caller's own user answer (`answered_by: client`); it is answered in the MCP client"
    )]
    /// The rule lets only the caller's own user answer, through the MCP client.
    ClientOnly {
        /// The tool the call is for.
        tool: String,
    },
    #[error(
        "the rule that asked about `{tool}` wants an approver's answer (`answered_by: approver`); the MCP client's answer does not count, so approve it with `toolgate approvals approve --as APPROVER`"
    )]
    /// The rule wants an approver, and the answer came from the MCP client.
    ApproverOnly {
        /// The tool the call is for.
        tool: String,
    },
    #[error(
        "`{who}` may not answer approvals: the spec file grants `approve` to {approvers}; pass `--as` one of them"
    )]
    /// The one answering is granted `approve` for no tool.
    NotAnApprover {
        /// The one answering.
        who: String,
        /// The principals granted `approve`, quoted and comma-separated.
        approvers: String,
    },
    /// The one answering may approve other tools, not this one.
    #[error("`{who}` may approve only {patterns}, not `{tool}`")]
    NotForTool {
        /// The one answering.
        who: String,
        /// The tool the call is for.
        tool: String,
        /// The patterns it may approve, quoted and comma-separated.
        patterns: String,
    },
    #[error(
        "`{who}` made this call and may not approve it; another approver must, or the spec file may allow it with `policy: {{self_approve: true}}`"
    )]
    /// The one answering made the call, and the policy does not let one approve
    /// one's own.
    SelfApproval {
        /// The caller, who is also the one answering.
        who: String,
    },
}

/// The approvers a spec file declares, and whether one may approve their own call.
#[derive(Debug, Clone, Copy)]
pub struct Approvers<'a> {
    principals: &'a IndexMap<String, PrincipalSpec>,
    self_approve: bool,
}

impl<'a> Approvers<'a> {
    /// The approvers among `principals`; `self_approve` is the policy's
    /// `self_approve`.
    pub fn new(principals: &'a IndexMap<String, PrincipalSpec>, self_approve: bool) -> Self {
        Approvers {
            principals,
            self_approve,
        }
    }

    /// Whether any principal is granted `approve`.
    pub fn declared(&self) -> bool {
        self.principals.values().any(|p| !p.approve.is_empty())
    }

    /// Whether `who` may approve the call of `tool` that `caller` made, which
    /// the rule that asked lets `answered_by` answer.
    pub fn may_approve(
        &self,
        who: &str,
        tool: &str,
        caller: &str,
        answered_by: AnsweredBy,
    ) -> Result<(), AnswerRefusal> {
        if !answered_by.approver_may_answer() {
            return Err(AnswerRefusal::ClientOnly { tool: tool.into() });
        }
        self.may_decide(who, tool)?;
        // Without declared approvers there is one operator, who answers for every
        // call, the calls they made themself included.
        if who == caller && !self.self_approve && self.declared() {
            return Err(AnswerRefusal::SelfApproval { who: who.into() });
        }
        Ok(())
    }

    /// Whether `who` may deny the call of `tool`: any approver for it may (a
    /// denial is never a way around a rule, so a client-only ask and one's own
    /// call may be denied too).
    pub fn may_deny(&self, who: &str, tool: &str) -> Result<(), AnswerRefusal> {
        self.may_decide(who, tool)
    }

    fn may_decide(&self, who: &str, tool: &str) -> Result<(), AnswerRefusal> {
        if !self.declared() {
            return Ok(());
        }
        let Some(spec) = self.principals.get(who).filter(|p| !p.approve.is_empty()) else {
            let approvers: Vec<String> = self
                .principals
                .iter()
                .filter(|(_, p)| !p.approve.is_empty())
                .map(|(id, _)| format!("`{id}`"))
                .collect();
            return Err(AnswerRefusal::NotAnApprover {
                who: who.into(),
                approvers: approvers.join(", "),
            });
        };
        if spec.approve.iter().any(|p| scope_matches(p, tool)) {
            return Ok(());
        }
        let patterns: Vec<String> = spec.approve.iter().map(|p| format!("`{p}`")).collect();
        Err(AnswerRefusal::NotForTool {
            who: who.into(),
            tool: tool.into(),
            patterns: patterns.join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principals(entries: &[(&str, &[&str])]) -> IndexMap<String, PrincipalSpec> {
        entries
            .iter()
            .map(|(id, approve)| {
                let spec: PrincipalSpec = serde_json::from_value(serde_json::json!({
                    "approve": approve,
                }))
                .unwrap();
                (id.to_string(), spec)
            })
            .collect()
    }

    #[test]
    fn without_declared_approvers_whoever_answers_may_approve_but_not_a_client_only_ask() {
        let none = principals(&[("agent", &[])]);
        let approvers = Approvers::new(&none, false);
        assert!(!approvers.declared());
        assert_eq!(
            approvers.may_approve("alice", "refund", "agent", AnsweredBy::Approver),
            Ok(())
        );
        assert_eq!(
            approvers.may_approve("operator", "refund", "operator", AnsweredBy::Approver),
            Ok(())
        );
        assert!(matches!(
            approvers.may_approve("alice", "refund", "agent", AnsweredBy::Client),
            Err(AnswerRefusal::ClientOnly { .. })
        ));
    }

    #[test]
    fn a_declared_approver_approves_only_its_tools_and_never_its_own_call() {
        let declared = principals(&[("lead", &["billing.*"]), ("agent", &[])]);
        let approvers = Approvers::new(&declared, false);
        assert_eq!(
            approvers.may_approve("lead", "billing.refund", "agent", AnsweredBy::Either),
            Ok(())
        );
        let refused = approvers
            .may_approve("agent", "billing.refund", "lead", AnsweredBy::Approver)
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "`agent` may not answer approvals: the spec file grants `approve` to `lead`; pass `--as` one of them"
        );
        assert!(matches!(
            approvers.may_approve("lead", "fs.write", "agent", AnsweredBy::Approver),
            Err(AnswerRefusal::NotForTool { .. })
        ));
        assert!(matches!(
            approvers.may_approve("lead", "billing.refund", "lead", AnsweredBy::Approver),
            Err(AnswerRefusal::SelfApproval { .. })
        ));
        assert_eq!(
            Approvers::new(&declared, true).may_approve(
                "lead",
                "billing.refund",
                "lead",
                AnsweredBy::Approver
            ),
            Ok(())
        );
        assert_eq!(approvers.may_deny("lead", "billing.refund"), Ok(()));
    }
}
