//! Authorization: may this principal run this tool, must a human be asked, or not at all.
//!
//! A decision is reached in a fixed order, and always carries its reason:
//! 1. a tool above the principal's tier ceiling is denied;
//! 2. a tool outside the principal's scopes is denied;
//! 3. the first policy rule whose pattern matches the tool's name decides;
//! 4. otherwise the decision for the tool's effect (defaults: `read` and
//!    `idempotent` allow; `write`, `execute`, `destructive` and `external` ask).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Effect, Principal, ToolDescriptor, scope_matches};

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask a human first.
    Ask,
    /// Refuse it.
    Deny,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decision and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
}

/// The `policy:` section of a spec file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The decision for each effect; unnamed effects keep their defaults.
    #[serde(default)]
    pub effects: EffectDecisions,
    /// Rules by tool-name pattern (`name`, `ns.*` or `*`); the first match wins over `effects`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<PolicyRule>,
}

/// A decision per effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EffectDecisions {
    pub read: Decision,
    pub idempotent: Decision,
    pub write: Decision,
    pub execute: Decision,
    pub destructive: Decision,
    pub external: Decision,
}

impl Default for EffectDecisions {
    fn default() -> Self {
        EffectDecisions {
            read: Decision::Allow,
            idempotent: Decision::Allow,
            write: Decision::Ask,
            execute: Decision::Ask,
            destructive: Decision::Ask,
            external: Decision::Ask,
        }
    }
}

impl EffectDecisions {
    pub fn get(&self, effect: Effect) -> Decision {
        match effect {
            Effect::Read => self.read,
            Effect::Idempotent => self.idempotent,
            Effect::Write => self.write,
            Effect::Execute => self.execute,
            Effect::Destructive => self.destructive,
            Effect::External => self.external,
        }
    }
}

/// One rule: tools whose name matches `tools` get `decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    /// A tool name, `ns.*`, or `*`.
    pub tools: String,
    pub decision: Decision,
    /// Why, shown to the model when the rule denies and to the human when it asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Policy {
    /// Decides whether `principal` may call `tool`.
    pub fn decide(&self, tool: &ToolDescriptor, principal: &Principal) -> Verdict {
        let tier = tool.effect.tier();
        if tier > principal.ceiling {
            return Verdict {
                decision: Decision::Deny,
                reason: format!(
                    "`{}` needs the {tier} tier, and {} may reach only {}",
                    tool.name, principal.id, principal.ceiling
                ),
            };
        }
        if !principal.has_scope_for(&tool.name) {
            return Verdict {
                decision: Decision::Deny,
                reason: format!("`{}` is outside the scopes of {}", tool.name, principal.id),
            };
        }
        if let Some(rule) = self
            .rules
            .iter()
            .find(|rule| scope_matches(&rule.tools, &tool.name))
        {
            let reason = rule.reason.clone().unwrap_or_else(|| {
                format!(
                    "the policy rule for `{}` says {}",
                    rule.tools, rule.decision
                )
            });
            return Verdict {
                decision: rule.decision,
                reason,
            };
        }
        let decision = self.effects.get(tool.effect);
        Verdict {
            decision,
            reason: format!("the policy for {} tools is {decision}", tool.effect),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Tier, ToolSource};
    use serde_json::json;

    fn tool(name: &str, effect: Effect) -> ToolDescriptor {
        ToolDescriptor::new(
            name,
            "t",
            json!({"type": "object"}),
            effect,
            ToolSource::Builtin,
        )
    }

    fn principal(ceiling: Tier, scopes: &[&str]) -> Principal {
        Principal {
            id: "agent".into(),
            ceiling,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn defaults_allow_reads_and_ask_for_everything_that_changes_the_world() {
        let policy = Policy::default();
        let operator = Principal::operator();
        let decisions: Vec<Decision> = Effect::ALL
            .iter()
            .map(|e| policy.decide(&tool("t", *e), &operator).decision)
            .collect();
        use Decision::*;
        assert_eq!(decisions, [Allow, Allow, Ask, Ask, Ask, Ask]);
    }

    #[test]
    fn a_tool_above_the_ceiling_is_denied_whatever_the_rules_say() {
        let policy = Policy {
            rules: vec![PolicyRule {
                tools: "*".into(),
                decision: Decision::Allow,
                reason: None,
            }],
            ..Default::default()
        };
        let verdict = policy.decide(
            &tool("drop_table", Effect::Destructive),
            &principal(Tier::Write, &["*"]),
        );
        assert_eq!(verdict.decision, Decision::Deny);
        assert_eq!(
            verdict.reason,
            "`drop_table` needs the destructive tier, and agent may reach only write"
        );
    }

    #[test]
    fn a_tool_outside_the_scopes_is_denied() {
        let verdict = Policy::default().decide(
            &tool("github.delete_repo", Effect::Read),
            &principal(Tier::External, &["jira.*"]),
        );
        assert_eq!(verdict.decision, Decision::Deny);
        assert!(verdict.reason.contains("outside the scopes"));
    }

    #[test]
    fn the_first_matching_rule_wins_over_the_effect_default() {
        let policy = Policy {
            rules: vec![
                PolicyRule {
                    tools: "github.get_secret".into(),
                    decision: Decision::Deny,
                    reason: Some("secrets stay put".into()),
                },
                PolicyRule {
                    tools: "github.*".into(),
                    decision: Decision::Allow,
                    reason: None,
                },
            ],
            ..Default::default()
        };
        let operator = Principal::operator();
        assert_eq!(
            policy
                .decide(&tool("github.get_secret", Effect::Read), &operator)
                .reason,
            "secrets stay put"
        );
        let verdict = policy.decide(&tool("github.create_issue", Effect::Write), &operator);
        assert_eq!(
            verdict,
            Verdict {
                decision: Decision::Allow,
                reason: "the policy rule for `github.*` says allow".into()
            }
        );
        assert_eq!(
            policy
                .decide(&tool("jira.create", Effect::Write), &operator)
                .decision,
            Decision::Ask
        );
    }
}
