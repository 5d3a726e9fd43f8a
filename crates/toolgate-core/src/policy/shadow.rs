//! Shadow mode: a rule, or the whole policy, that is evaluated on every call
//! and recorded, but never decides. The audit reason ends with what it would
//! have decided (`shadow policy.rules[2] would deny`, or `shadow policy would
//! deny` for the whole policy); `/metrics` and `toolgate policy
//! shadow-report` count where that differs from what was decided.
//!
//! A policy in shadow mode leaves the decisions to toolgate's defaults (the
//! policy an empty `policy:` section makes), so it can be trialled on live
//! traffic before it decides anything; a rule in shadow mode leaves them to
//! the rest of its policy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CallFacts, Decision, Policy, RuleFacts};
use crate::{Principal, ToolDescriptor, scope_matches};

/// Whether a rule (or a policy) decides, or only observes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleMode {
    /// It decides the calls it applies to.
    #[default]
    Enforce,
    /// It only observes: the audit log and `/metrics` say what it would have
    /// decided; the decision is taken as if it were not there.
    Shadow,
}

impl RuleMode {
    /// Whether it is the default, `enforce` (omitted when serialized).
    pub fn is_enforce(&self) -> bool {
        *self == RuleMode::Enforce
    }
}

/// What a shadow rule, or a policy in shadow mode, would have decided on one
/// call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shadowed {
    /// The rule's place under `policy.rules`; `None` for the whole policy.
    pub rule: Option<usize>,
    /// What it would have decided.
    pub decision: Decision,
}

impl Shadowed {
    /// What observed, as the spec file names it: `policy.rules[2]` or `policy`.
    pub fn observer(&self) -> String {
        match self.rule {
            Some(index) => format!("policy.rules[{index}]"),
            None => "policy".to_owned(),
        }
    }

    /// The audit reason's note: `shadow policy.rules[2] would deny`.
    pub fn note(&self) -> String {
        format!("shadow {} would {}", self.observer(), self.decision)
    }

    /// The note in an audit reason, read back.
    pub fn from_reason(reason: &str) -> Option<Shadowed> {
        let (_, rest) = reason.rsplit_once("; shadow policy")?;
        let (rule, rest) = match rest.strip_prefix(".rules[") {
            Some(rest) => {
                let (index, rest) = rest.split_once("] would ")?;
                (Some(index.parse().ok()?), rest)
            }
            None => (None, rest.strip_prefix(" would ")?),
        };
        let word = rest.split(|c: char| !c.is_ascii_lowercase()).next()?;
        let decision = match word {
            "allow" => Decision::Allow,
            "ask" => Decision::Ask,
            "deny" => Decision::Deny,
            _ => return None,
        };
        Some(Shadowed { rule, decision })
    }
}

impl Policy {
    /// The policy that decides, and the one that only observes: a policy in
    /// shadow mode observes, and toolgate's defaults decide (keeping who may
    /// approve their own calls); any other decides, and observes through its
    /// shadow rules only.
    pub fn split_shadow(self) -> (Policy, Option<Policy>) {
        if self.mode.is_enforce() {
            return (self, None);
        }
        let decides = Policy {
            self_approve: self.self_approve,
            ..Policy::default()
        };
        let observes = Policy {
            mode: RuleMode::Enforce,
            ..self
        };
        (decides, Some(observes))
    }

    /// What the first shadow rule for `tool` that applies to this call would
    /// have decided; `None` when none applies.
    pub fn shadow(
        &self,
        tool: &ToolDescriptor,
        principal: &Principal,
        call: CallFacts<'_>,
    ) -> Option<Shadowed> {
        let facts = RuleFacts {
            call: Some(call),
            claims: &principal.claims,
        };
        self.rules
            .iter()
            .enumerate()
            .find(|(_, rule)| {
                rule.mode == RuleMode::Shadow
                    && scope_matches(&rule.tools, &tool.name)
                    && rule.applies_to_call(&facts)
            })
            .map(|(index, rule)| Shadowed {
                rule: Some(index),
                decision: rule.decision,
            })
    }

    /// Whether some shadow rule may observe calls of `tool`.
    pub fn shadows(&self, tool: &str) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.mode == RuleMode::Shadow && scope_matches(&rule.tools, tool))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::Effect;
    use crate::policy::tests::tool;

    fn facts<'a>(
        args: &'a serde_json::Value,
        state: &'a Map<String, serde_json::Value>,
    ) -> CallFacts<'a> {
        CallFacts {
            arguments: args,
            state,
            history: &[],
            seen: None,
            untrusted: None,
            untrusted_origin: false,
        }
    }

    #[test]
    fn a_shadow_rule_observes_and_never_decides() {
        let policy: Policy = serde_json::from_value(json!({"rules": [
            {"tools": "refund", "mode": "shadow", "when": {"above": {"arg": "cents", "value": 100}}, "decision": "deny"},
            {"tools": "refund", "decision": "allow"},
        ]}))
        .unwrap();
        let refund = tool("refund", Effect::External);
        let operator = Principal::operator();
        let (args, state) = (json!({"cents": 500}), Map::new());
        let call = facts(&args, &state);
        let verdict = policy.decide_call(&refund, &operator, call);
        assert_eq!(
            (verdict.decision, verdict.decided_by.as_str()),
            (Decision::Allow, "policy.rules[1]")
        );
        assert_eq!(policy.decide(&refund, &operator).decision, Decision::Allow);
        let shadow = policy.shadow(&refund, &operator, call).unwrap();
        assert_eq!(
            shadow,
            Shadowed {
                rule: Some(0),
                decision: Decision::Deny
            }
        );
        let reason = format!(
            "{}; {}; approved (ap-1 by lead via cli)",
            verdict.audit_reason(),
            shadow.note()
        );
        assert_eq!(Shadowed::from_reason(&reason), Some(shadow));
        assert_eq!(Shadowed::from_reason("read tools are allowed"), None);
    }

    #[test]
    fn a_policy_in_shadow_mode_observes_while_the_defaults_decide() {
        let policy: Policy = serde_json::from_value(json!({
            "mode": "shadow",
            "self_approve": true,
            "effects": {"external": "allow"},
            "rules": [{"tools": "refund", "decision": "deny"}],
        }))
        .unwrap();
        let (decides, observes) = policy.split_shadow();
        let observes = observes.expect("a policy in shadow mode observes");
        assert!(decides.self_approve && decides.rules.is_empty());
        let (refund, send) = (
            tool("refund", Effect::External),
            tool("send", Effect::External),
        );
        let operator = Principal::operator();
        assert_eq!(decides.decide(&send, &operator).decision, Decision::Ask);
        assert_eq!(observes.decide(&send, &operator).decision, Decision::Allow);
        assert_eq!(observes.decide(&refund, &operator).decision, Decision::Deny);
        let note = Shadowed {
            rule: None,
            decision: Decision::Deny,
        };
        assert_eq!(note.note(), "shadow policy would deny");
        let reason = format!(
            "write tools ask (decided by policy.effects.external); {}",
            note.note()
        );
        assert_eq!(Shadowed::from_reason(&reason), Some(note));
        let plain: Policy = serde_json::from_value(json!({"rules": []})).unwrap();
        assert!(plain.split_shadow().1.is_none());
    }
}
