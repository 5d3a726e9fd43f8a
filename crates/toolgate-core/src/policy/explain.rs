//! How a policy decided one call, step by step: the ceiling, the scopes, every
//! rule (matched or not, and why), the effect's default. `toolgate policy
//! explain` prints it; the decision is the same [`Policy::decide_call`] takes.

use serde::Serialize;

use super::{CallFacts, Policy, RuleFacts, Verdict};
use crate::flow::{Guard, compared_values, describe_guard, eval};
use crate::{Principal, ToolDescriptor, scope_matches};

/// One thing the policy looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Considered {
    /// Where it stands in the spec file: `principals.agent.ceiling`,
    /// `policy.rules[1]`, `policy.effects.write`.
    pub what: String,
    /// Whether it decided the call.
    pub decided: bool,
    /// Whether it applied (a rule's pattern matched and its `when:` held).
    pub matched: bool,
    /// Why, in words.
    pub why: String,
}

/// A policy's decision for one call, with everything it considered, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The tool called.
    pub tool: String,
    /// The id of the principal calling.
    pub principal: String,
    /// Each step the policy took, in the order it took them.
    pub considered: Vec<Considered>,
    /// What it decided, as [`Policy::decide_call`] does.
    pub verdict: Verdict,
}

impl Policy {
    /// Decides a call as [`Policy::decide_call`] does, and says how.
    pub fn explain(
        &self,
        tool: &ToolDescriptor,
        principal: &Principal,
        call: CallFacts<'_>,
    ) -> Explanation {
        let verdict = self.decide_call(tool, principal, call);
        let mut considered = Vec::new();
        let mut decided = false;
        let tier = tool.effect.tier();
        let within = tier <= principal.ceiling;
        considered.push(Considered {
            what: format!("principals.{}.ceiling", principal.id),
            decided: !within,
            matched: !within,
            why: if within {
                format!(
                    "`{}` needs the {tier} tier, within {}'s ceiling {}",
                    tool.name, principal.id, principal.ceiling
                )
            } else {
                format!(
                    "`{}` needs the {tier} tier, above {}'s ceiling {}: denied",
                    tool.name, principal.id, principal.ceiling
                )
            },
        });
        decided |= !within;
        let scoped = principal.has_scope_for(&tool.name);
        considered.push(Considered {
            what: format!("principals.{}.scopes", principal.id),
            decided: !decided && !scoped,
            matched: !scoped,
            why: if scoped {
                format!("`{}` is within {}'s scopes", tool.name, principal.id)
            } else {
                format!(
                    "`{}` is outside {}'s scopes: denied",
                    tool.name, principal.id
                )
            },
        });
        decided |= !scoped;
        let facts = RuleFacts {
            call: Some(call),
            claims: &principal.claims,
        };
        for (index, rule) in self.rules.iter().enumerate() {
            let what = format!("policy.rules[{index}]");
            if !scope_matches(&rule.tools, &tool.name) {
                considered.push(Considered {
                    what,
                    decided: false,
                    matched: false,
                    why: format!("`{}` does not match `{}`", rule.tools, tool.name),
                });
                continue;
            }
            let (matched, why) = match &rule.when {
                None => (
                    true,
                    format!(
                        "`{}` matches `{}`, for every call: {}",
                        rule.tools, tool.name, rule.decision
                    ),
                ),
                Some(when) => {
                    let told = eval(when, &facts);
                    let holds = rule.applies_to_call(&facts);
                    let values = values_of(when, &facts);
                    let verb = match (told, holds) {
                        (Some(true), _) => "holds",
                        (Some(false), _) => "does not hold",
                        (None, true) => {
                            "cannot be told on the values given, so it is read as holding, the rule's stricter side"
                        }
                        (None, false) => {
                            "cannot be told on the values given, so it is read as not holding, the rule's stricter side"
                        }
                    };
                    let mut why = format!(
                        "`{}` matches `{}`; `when: {when}` {verb} ({})",
                        rule.tools,
                        tool.name,
                        describe_guard(when)
                    );
                    if !values.is_empty() {
                        why.push_str(&format!(": {}", values.join(", ")));
                    }
                    if holds {
                        why.push_str(&format!(": {}", rule.decision));
                    }
                    (holds, why)
                }
            };
            if rule.mode == super::RuleMode::Shadow {
                considered.push(Considered {
                    what,
                    decided: false,
                    matched,
                    why: format!("{why} (a shadow rule: it observes, never decides)"),
                });
                continue;
            }
            let decides = matched && !decided;
            let why = if matched && decided {
                format!("{why}, but an earlier one decided")
            } else {
                why
            };
            considered.push(Considered {
                what,
                decided: decides,
                matched,
                why,
            });
            decided |= matched;
        }
        let decision = self.effects.get(tool.effect);
        considered.push(Considered {
            what: format!("policy.effects.{}", tool.effect),
            decided: !decided,
            matched: !decided,
            why: if decided {
                format!("{} tools are {decision} by default", tool.effect)
            } else {
                format!("no rule applied; {} tools are {decision}", tool.effect)
            },
        });
        let two = call
            .seen
            .and_then(|seen| super::labels::rule_of_two(self.rule_of_two, tool, seen));
        considered.push(Considered {
            what: "policy.rule_of_two".into(),
            decided: verdict.decided_by.starts_with("policy.rule_of_two"),
            matched: two.is_some(),
            why: match (&two, self.rule_of_two) {
                (Some(two), _) => two.reason.clone(),
                (None, super::RuleOfTwo::Off) => "off".into(),
                (None, _) => format!(
                    "`{}` would not give the conversation untrusted content, private data and an effect on the world together",
                    tool.name
                ),
            },
        });
        Explanation {
            tool: tool.name.clone(),
            principal: principal.id.clone(),
            considered,
            verdict,
        }
    }
}

/// The values a guard compared, as a reader checks them.
fn values_of(guard: &Guard, facts: &RuleFacts<'_>) -> Vec<String> {
    let mut out = Vec::new();
    compared_values(guard, facts, &mut out);
    out
}
