//! Authorization: may this principal run this tool, must a human be asked, or not at all.
//!
//! A decision is reached in a fixed order, and always carries its reason:
//! 1. a tool above the principal's tier ceiling is denied;
//! 2. a tool outside the principal's scopes is denied;
//! 3. the first policy rule whose pattern matches the tool's name, and whose
//!    `when:` holds (a guard of the flow's language over the call's arguments,
//!    the conversation's state and history, and the caller's claims), decides;
//! 4. otherwise the decision for the tool's effect (defaults: `read` and
//!    `idempotent` allow; `write`, `execute`, `destructive` and `external` ask);
//! 5. then the rule of two (see [`labels`](RuleOfTwo)): a call that would give
//!    the conversation untrusted content, private data and an effect on the
//!    world is asked (or refused) if what decided would have let it through.
//!
//! [`Policy::decide`] answers before any call is known (listing tools, the
//! gate's first refusal): a rule whose `when:` needs the call leaves the answer
//! open, and an open answer is never a denial. [`Policy::decide_call`] answers for
//! one call; [`Policy::explain`] says how, rule by rule.

mod approvers;
mod explain;
mod labels;
mod origin;
mod replayed;
mod replayed_budgets;
mod shadow;
mod simulate;
mod taint;

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::flow::{CallRecord, Cond, Facts, Guard, eval};
use crate::{Effect, Principal, ToolDescriptor, scope_matches};

pub use approvers::{AnswerRefusal, AnsweredBy, Answerer, Approvers};
pub use explain::{Considered, Explanation};
pub use labels::{
    Labels, OutputLabel, RuleOfTwo, Seen, SeenLabel, Sighting, ToolOutput, WORDS_NAMED,
    acts_on_world,
};
pub use origin::{FLOW_ORIGIN_META, flow_origin, untrusted_contributors};
pub use shadow::{RuleMode, Shadowed};
pub use simulate::{Change, ChangeGroup, Replay, Simulation};
pub use taint::Fingerprints;

/// What to do with a call.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
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
    /// The spelling in spec files and the audit log.
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

/// A decision, why, and what took it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether the call runs, waits for an answer or is refused.
    pub decision: Decision,
    /// Why, in words for the model (when it denies) and the human (when it asks).
    pub reason: String,
    /// What decided, as the spec file names it: `policy.rules[2]`,
    /// `policy.effects.write`, `principals.agent.ceiling` or
    /// `principals.agent.scopes`; the audit log records it.
    pub decided_by: String,
    /// Who may answer when the decision is `ask`.
    pub answered_by: AnsweredBy,
}

impl Verdict {
    /// The audit log's reason: the reason and what decided.
    pub fn audit_reason(&self) -> String {
        format!("{} (decided by {})", self.reason, self.decided_by)
    }

    /// The verdict on a call the flow asks the user to confirm (`confirm`
    /// says why): an allowed call is asked (the user or an approver may
    /// answer), an asked one asks for both reasons, a denied one stays denied.
    pub fn confirmed_by_flow(self, confirm: &str) -> Verdict {
        match self.decision {
            Decision::Allow => Verdict {
                decision: Decision::Ask,
                reason: confirm.to_owned(),
                decided_by: "flow.confirm".into(),
                answered_by: AnsweredBy::Either,
            },
            Decision::Ask => Verdict {
                decision: Decision::Ask,
                reason: format!("{}; {confirm}", self.reason),
                decided_by: format!("{} and flow.confirm", self.decided_by),
                answered_by: self.answered_by,
            },
            Decision::Deny => self,
        }
    }
}

/// The `policy:` section of a spec file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The decision for each effect; unnamed effects keep their defaults.
    #[serde(default)]
    pub effects: EffectDecisions,
    /// Rules by tool-name pattern (`name`, `ns.*` or `*`), each perhaps with a
    /// `when:` condition; the first that matches and holds wins over `effects`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<PolicyRule>,
    /// Whether a principal may approve a call it made itself (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub self_approve: bool,
    /// What to do with a call that would give a conversation untrusted
    /// content, private data and an effect on the world (default `ask`).
    #[serde(default, skip_serializing_if = "RuleOfTwo::is_default")]
    pub rule_of_two: RuleOfTwo,
    /// `shadow`: the whole policy only observes (see `shadow`); toolgate's
    /// defaults decide meanwhile (default `enforce`).
    #[serde(default, skip_serializing_if = "RuleMode::is_enforce")]
    pub mode: RuleMode,
}

/// A decision per effect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EffectDecisions {
    /// For `read` tools (default `allow`).
    pub read: Decision,
    /// For `idempotent` tools (default `allow`).
    pub idempotent: Decision,
    /// For `write` tools (default `ask`).
    pub write: Decision,
    /// For `execute` tools (default `ask`).
    pub execute: Decision,
    /// For `destructive` tools (default `ask`).
    pub destructive: Decision,
    /// For `external` tools (default `ask`).
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
    /// The decision for tools of `effect`.
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

/// One rule: calls of tools whose name matches `tools`, while `when` holds, get
/// `decision`.
///
/// ```yaml
/// policy:
///   rules:
///     - tools: refund_order
///       when: {above: {arg: amount_cents, value: 10000}}
///       decision: ask
///     - tools: fs.write_file
///       when: {not: {starts_with: {arg: path, value: /srv/data/}}}
///       decision: deny
///       reason: files are written only under /srv/data
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    /// A tool name, `ns.*`, or `*`.
    pub tools: String,
    /// The rule applies only while this holds: a guard of the flow's language
    /// that may also test the call's arguments (`above`, `starts_with`) and the
    /// caller's claims (`claim`). Without it, the rule applies to every call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<Guard>,
    /// What to do with a call the rule applies to.
    pub decision: Decision,
    /// Why, shown to the model when the rule denies and to the human when it asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Who may answer when the rule asks: `approver` (the default: a principal
    /// granted `approve`, through `toolgate approvals`), `client` (the caller's
    /// own user, through the MCP client's elicitation) or `either`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<AnsweredBy>,
    /// `shadow`: the rule is evaluated on every call and what it would have
    /// decided is recorded, but it never decides (default `enforce`).
    #[serde(default, skip_serializing_if = "RuleMode::is_enforce")]
    pub mode: RuleMode,
}

impl PolicyRule {
    fn reason(&self) -> String {
        self.reason.clone().unwrap_or_else(|| match &self.when {
            None => format!(
                "the policy rule for `{}` says {}",
                self.tools, self.decision
            ),
            Some(when) => format!(
                "the policy rule for `{}` says {} when {}",
                self.tools,
                self.decision,
                crate::flow::describe_guard(when)
            ),
        })
    }

    /// Whether the rule applies to a call. A `when:` that cannot be told on the
    /// call's values (an `above` given `"abc"`, `true` or `null`) is read as the
    /// rule's stricter side: a rule that asks or denies applies, one that allows
    /// does not, so a value nobody can compare never lets a call through that
    /// the rule would have stopped.
    fn applies_to_call(&self, facts: &dyn Facts) -> bool {
        self.when
            .as_ref()
            .is_none_or(|when| match eval(when, facts) {
                Some(holds) => holds,
                None => self.decision != Decision::Allow,
            })
    }

    fn verdict(&self, index: usize) -> Verdict {
        Verdict {
            decision: self.decision,
            reason: self.reason(),
            decided_by: format!("policy.rules[{index}]"),
            answered_by: self.answered_by.unwrap_or_default(),
        }
    }
}

/// What a call's rules may read: its (validated) arguments, the conversation's
/// state (declared defaults included), its call history, what it has seen and
/// the fingerprints of its untrusted results. The caller's claims come with
/// the [`Principal`].
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// The call's arguments, already checked against the tool's schema.
    pub arguments: &'a Value,
    /// The conversation's state, its declared defaults included.
    pub state: &'a Map<String, Value>,
    /// The calls that ran before in the conversation, in order.
    pub history: &'a [CallRecord],
    /// What the conversation has seen (`None`: nothing).
    pub seen: Option<&'a Seen>,
    /// The fingerprints of the conversation's untrusted results (`None`: none).
    pub untrusted: Option<&'a Fingerprints>,
    /// The host labelled the call's origin untrusted (SEP-3193): every
    /// argument counts as tainted.
    pub untrusted_origin: bool,
}

/// The facts a rule's `when` reads: a call's, or (before any call) only claims.
struct RuleFacts<'a> {
    call: Option<CallFacts<'a>>,
    claims: &'a Map<String, Value>,
}

impl Facts for RuleFacts<'_> {
    fn state(&self, key: &str) -> Option<&Value> {
        self.call?.state.get(key)
    }
    fn succeeded(&self, tool: &str) -> bool {
        self.call
            .is_some_and(|c| c.history.iter().any(|r| r.ok && r.tool == tool))
    }
    fn is_done(&self, _step: &str) -> bool {
        // Steps are the flow's; `toolgate check` refuses `done` in a rule.
        false
    }
    fn unmet_done(&self, step: &str) -> Vec<Cond> {
        vec![Cond::needs(format!("step `{step}` is done"))]
    }
    fn args(&self) -> Option<&Value> {
        self.call.map(|c| c.arguments)
    }
    fn claims(&self) -> Option<&Map<String, Value>> {
        Some(self.claims)
    }
    fn seen(&self, label: SeenLabel) -> Option<bool> {
        let call = self.call?;
        Some(call.seen.is_some_and(|seen| seen.has(label)))
    }
    fn tainted(&self, arg: &str) -> Option<bool> {
        let call = self.call?;
        if call.untrusted_origin {
            return Some(true);
        }
        let Some(untrusted) = call.untrusted else {
            return Some(false);
        };
        Some(if arg == "*" {
            untrusted.taints(call.arguments)
        } else {
            call.arguments
                .get(arg)
                .is_some_and(|value| untrusted.taints(value))
        })
    }
}

/// Whether a guard reads nothing but the caller's claims, so that it can be told
/// before any call is known.
fn reads_only_claims(guard: &Guard) -> bool {
    match guard {
        Guard::Always | Guard::Claim(_) => true,
        Guard::All(parts) | Guard::Any(parts) => parts.iter().all(reads_only_claims),
        Guard::Not(inner) => reads_only_claims(inner),
        _ => false,
    }
}

impl Policy {
    /// The ceiling and scopes: a denial, or `None` when the principal may reach the tool.
    fn reach(&self, tool: &ToolDescriptor, principal: &Principal) -> Option<Verdict> {
        let tier = tool.effect.tier();
        if tier > principal.ceiling {
            return Some(Verdict {
                decision: Decision::Deny,
                reason: format!(
                    "`{}` needs the {tier} tier, and {} may reach only {}",
                    tool.name, principal.id, principal.ceiling
                ),
                decided_by: format!("principals.{}.ceiling", principal.id),
                answered_by: AnsweredBy::default(),
            });
        }
        if !principal.has_scope_for(&tool.name) {
            return Some(Verdict {
                decision: Decision::Deny,
                reason: format!("`{}` is outside the scopes of {}", tool.name, principal.id),
                decided_by: format!("principals.{}.scopes", principal.id),
                answered_by: AnsweredBy::default(),
            });
        }
        None
    }

    fn by_effect(&self, tool: &ToolDescriptor) -> Verdict {
        let decision = self.effects.get(tool.effect);
        Verdict {
            decision,
            reason: format!("the policy for {} tools is {decision}", tool.effect),
            decided_by: format!("policy.effects.{}", tool.effect),
            answered_by: AnsweredBy::default(),
        }
    }

    /// Decides whether `principal` may call `tool`, before any call is known.
    ///
    /// A rule whose `when:` reads a call (its arguments, the conversation)
    /// leaves the decision open: the verdict is then `ask`, saying it depends on
    /// the call, so that listing and the gate's first look never deny what a
    /// call's arguments might allow. [`Policy::decide_call`] decides the call.
    pub fn decide(&self, tool: &ToolDescriptor, principal: &Principal) -> Verdict {
        if let Some(denied) = self.reach(tool, principal) {
            return denied;
        }
        let facts = RuleFacts {
            call: None,
            claims: &principal.claims,
        };
        for (index, rule) in self.enforced() {
            if !scope_matches(&rule.tools, &tool.name) {
                continue;
            }
            match &rule.when {
                None => return rule.verdict(index),
                Some(when) if reads_only_claims(when) => {
                    if eval(when, &facts) == Some(true) {
                        return rule.verdict(index);
                    }
                }
                Some(_) => {
                    return Verdict {
                        decision: Decision::Ask,
                        reason: format!(
                            "it depends on the call: the policy rule for `{}` has a `when:`",
                            rule.tools
                        ),
                        decided_by: format!("policy.rules[{index}]"),
                        answered_by: rule.answered_by.unwrap_or_default(),
                    };
                }
            }
        }
        self.by_effect(tool)
    }

    /// Decides one call of `tool` by `principal`, its rules' `when:` read over `call`.
    pub fn decide_call(
        &self,
        tool: &ToolDescriptor,
        principal: &Principal,
        call: CallFacts<'_>,
    ) -> Verdict {
        if let Some(denied) = self.reach(tool, principal) {
            return denied;
        }
        let facts = RuleFacts {
            call: Some(call),
            claims: &principal.claims,
        };
        let verdict = self
            .enforced()
            .find(|(_, rule)| {
                scope_matches(&rule.tools, &tool.name) && rule.applies_to_call(&facts)
            })
            .map(|(index, rule)| rule.verdict(index))
            .unwrap_or_else(|| self.by_effect(tool));
        let Some(seen) = call.seen else {
            return verdict;
        };
        match labels::rule_of_two(self.rule_of_two, tool, seen) {
            // Labels only restrict: the rule of two takes over only where it is
            // stricter, and joins an `ask` with its reason.
            Some(two) if two.decision > verdict.decision => two,
            Some(two) if two.decision == verdict.decision && verdict.decision == Decision::Ask => {
                Verdict {
                    reason: format!("{}; and {}", two.reason, verdict.reason),
                    decided_by: format!("policy.rule_of_two and {}", verdict.decided_by),
                    ..verdict
                }
            }
            _ => verdict,
        }
    }

    /// The rules that decide, with their places.
    fn enforced(&self) -> impl Iterator<Item = (usize, &PolicyRule)> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.mode == RuleMode::Enforce)
    }

    /// Whether a call of `tool` needs what its conversation has seen: the
    /// rule of two applies to it, or a rule for it reads `seen:`.
    pub fn reads_seen(&self, tool: &ToolDescriptor) -> bool {
        (self.rule_of_two != RuleOfTwo::Off && labels::acts_on_world(tool))
            || self.rule_reads(&tool.name, |g| matches!(g, Guard::Seen(_)))
    }

    /// Whether a call of `tool` needs the fingerprints of its conversation's
    /// untrusted results: a rule for it reads `tainted:`.
    pub fn reads_taint(&self, tool: &str) -> bool {
        self.rule_reads(tool, |g| matches!(g, Guard::Tainted(_)))
    }

    /// Whether any rule reads `tainted:`, so that untrusted results must leave
    /// fingerprints.
    pub fn reads_any_taint(&self) -> bool {
        self.rule_reads("*", |g| matches!(g, Guard::Tainted(_)))
    }

    /// Whether a rule for `tool` (`*`: any rule) has a `when:` with a leaf `test` admits.
    fn rule_reads(&self, tool: &str, test: impl Fn(&Guard) -> bool) -> bool {
        self.rules.iter().any(|rule| {
            (tool == "*" || scope_matches(&rule.tools, tool))
                && rule.when.as_ref().is_some_and(|when| {
                    let mut found = false;
                    when.for_each_leaf(&mut |leaf| found |= test(leaf));
                    found
                })
        })
    }

    /// Whether a call of `tool` needs the conversation (state, history) to be
    /// decided: some rule for it has a `when:` that reads more than claims.
    pub fn reads_conversation(&self, tool: &str) -> bool {
        self.rules.iter().any(|rule| {
            scope_matches(&rule.tools, tool)
                && rule.when.as_ref().is_some_and(|w| !reads_only_claims(w))
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{Tier, ToolSource};
    use serde_json::json;

    /// A built-in tool named `name` with `effect`.
    pub(crate) fn tool(name: &str, effect: Effect) -> ToolDescriptor {
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
            claims: Default::default(),
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
                mode: Default::default(),
                tools: "*".into(),
                decision: Decision::Allow,
                when: None,
                answered_by: None,
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
                    mode: Default::default(),
                    tools: "github.get_secret".into(),
                    decision: Decision::Deny,
                    when: None,
                    answered_by: None,
                    reason: Some("secrets stay put".into()),
                },
                PolicyRule {
                    mode: Default::default(),
                    tools: "github.*".into(),
                    decision: Decision::Allow,
                    when: None,
                    answered_by: None,
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
                reason: "the policy rule for `github.*` says allow".into(),
                decided_by: "policy.rules[1]".into(),
                answered_by: AnsweredBy::Approver,
            }
        );
        assert_eq!(
            policy
                .decide(&tool("jira.create", Effect::Write), &operator)
                .decision,
            Decision::Ask
        );
    }

    fn rules(yaml: serde_json::Value) -> Policy {
        serde_json::from_value(json!({ "rules": yaml })).unwrap()
    }

    fn decide(policy: &Policy, tool: &ToolDescriptor, who: &Principal, args: Value) -> Verdict {
        let state = Map::new();
        policy.decide_call(
            tool,
            who,
            CallFacts {
                arguments: &args,
                state: &state,
                history: &[],
                seen: None,
                untrusted: None,
                untrusted_origin: false,
            },
        )
    }

    #[test]
    fn a_rule_asks_above_an_amount_and_lets_smaller_calls_through() {
        let policy = rules(json!([
            {"tools": "refund", "when": {"above": {"arg": "amount_cents", "value": 10000}}, "decision": "ask"},
            {"tools": "refund", "decision": "allow"}
        ]));
        let refund = tool("refund", Effect::Write);
        let operator = Principal::operator();
        let big = decide(&policy, &refund, &operator, json!({"amount_cents": 25000}));
        assert_eq!(big.decision, Decision::Ask);
        assert_eq!(big.decided_by, "policy.rules[0]");
        assert_eq!(
            big.reason,
            "the policy rule for `refund` says ask when `amount_cents` is above 10000"
        );
        let small = decide(&policy, &refund, &operator, json!({"amount_cents": 500}));
        assert_eq!(
            (small.decision, small.decided_by.as_str()),
            (Decision::Allow, "policy.rules[1]")
        );
        let before = policy.decide(&refund, &operator);
        assert_eq!(
            before.decision,
            Decision::Ask,
            "before a call it depends, and is never a denial"
        );
    }

    #[test]
    fn an_amount_given_as_a_numeric_string_is_compared_as_a_number() {
        let policy = rules(json!([
            {"tools": "refund", "when": {"above": {"arg": "amount_cents", "value": 10000}}, "decision": "ask"},
            {"tools": "refund", "decision": "allow"}
        ]));
        let refund = tool("refund", Effect::Write);
        let operator = Principal::operator();
        for (amount, want) in [
            (json!("50000"), Decision::Ask),
            (json!(" 1e9 "), Decision::Ask),
            (json!("500"), Decision::Allow),
        ] {
            let verdict = decide(&policy, &refund, &operator, json!({"amount_cents": amount}));
            assert_eq!(verdict.decision, want, "amount {amount}");
        }
    }

    #[test]
    fn an_amount_that_is_no_number_never_slips_past_an_ask_or_a_deny() {
        let refund = tool("refund", Effect::Write);
        let operator = Principal::operator();
        for stop in ["ask", "deny"] {
            let policy = rules(json!([
                {"tools": "refund", "when": {"above": {"arg": "amount_cents", "value": 10000}}, "decision": stop},
                {"tools": "refund", "decision": "allow"}
            ]));
            for amount in [
                json!([1000]),
                json!("1e999"),
                json!("ten"),
                json!(true),
                json!(null),
                json!({"v": 1}),
            ] {
                let verdict = decide(&policy, &refund, &operator, json!({"amount_cents": amount}));
                assert_eq!(
                    (verdict.decision.as_str(), verdict.decided_by.as_str()),
                    (stop, "policy.rules[0]"),
                    "amount {amount}"
                );
            }
            let negated = rules(json!([
                {"tools": "refund", "when": {"not": {"above": {"arg": "amount_cents", "value": 10000}}}, "decision": stop},
                {"tools": "refund", "decision": "allow"}
            ]));
            let verdict = decide(&negated, &refund, &operator, json!({"amount_cents": "ten"}));
            assert_eq!(verdict.decision.as_str(), stop, "under `not` too");
        }
    }

    #[test]
    fn an_allow_rule_does_not_apply_to_an_amount_that_is_no_number() {
        let policy = rules(json!([
            {"tools": "refund", "when": {"not": {"above": {"arg": "amount_cents", "value": 100}}}, "decision": "allow"},
            {"tools": "refund", "decision": "deny"}
        ]));
        let refund = tool("refund", Effect::Write);
        let verdict = decide(
            &policy,
            &refund,
            &Principal::operator(),
            json!({"amount_cents": "free"}),
        );
        assert_eq!(
            (verdict.decision, verdict.decided_by.as_str()),
            (Decision::Deny, "policy.rules[1]")
        );
    }

    #[test]
    fn explain_says_when_a_rule_was_read_as_its_stricter_side() {
        let policy = rules(json!([
            {"tools": "refund", "when": {"above": {"arg": "amount_cents", "value": 10000}}, "decision": "ask"}
        ]));
        let refund = tool("refund", Effect::Read);
        let args = json!({"amount_cents": "lots"});
        let state = Map::new();
        let explanation = policy.explain(
            &refund,
            &Principal::operator(),
            CallFacts {
                arguments: &args,
                state: &state,
                history: &[],
                seen: None,
                untrusted: None,
                untrusted_origin: false,
            },
        );
        assert_eq!(explanation.verdict.decision, Decision::Ask);
        let rule = &explanation.considered[2];
        assert!(rule.decided, "{rule:?}");
        assert!(
            rule.why
                .contains("cannot be told on the values given, so it is read as holding"),
            "{}",
            rule.why
        );
        assert!(
            rule.why.contains("`amount_cents` is \"lots\""),
            "{}",
            rule.why
        );
    }

    #[test]
    fn a_write_outside_a_prefix_is_denied_even_through_dot_dot() {
        let policy = rules(json!([
            {"tools": "fs.write_file", "when": {"not": {"starts_with": {"arg": "path", "value": "/srv/data/"}}},
             "decision": "deny", "reason": "files are written only under /srv/data"},
            {"tools": "fs.*", "decision": "allow"}
        ]));
        let write = tool("fs.write_file", Effect::Write);
        let operator = Principal::operator();
        let decision =
            |path: &str| decide(&policy, &write, &operator, json!({"path": path})).decision;
        assert_eq!(decision("/srv/data/report.txt"), Decision::Allow);
        assert_eq!(decision("/srv/data/./a//b.txt"), Decision::Allow);
        assert_eq!(decision("/srv/data"), Decision::Allow);
        assert_eq!(decision("/etc/passwd"), Decision::Deny);
        assert_eq!(decision("/srv/data/../../etc/passwd"), Decision::Deny);
        assert_eq!(decision("/srv/database/x"), Decision::Deny);
        assert_eq!(decision("/srv/data/../../../.."), Decision::Deny);
        assert_eq!(
            decision("srv/data/x"),
            Decision::Deny,
            "relative is not under"
        );
        assert_eq!(
            decide(&policy, &write, &operator, json!({"path": 7})).decision,
            Decision::Deny,
            "a path that is not a string starts with nothing"
        );
    }

    #[test]
    fn a_path_in_disguise_never_slips_past_a_deny_outside_a_prefix() {
        let policy = rules(json!([
            {"tools": "fs.write_file", "when": {"not": {"starts_with": {"arg": "path", "value": "/srv/data/"}}},
             "decision": "deny", "reason": "files are written only under /srv/data"},
            {"tools": "fs.*", "decision": "allow"}
        ]));
        let write = tool("fs.write_file", Effect::Write);
        let operator = Principal::operator();
        let decision =
            |path: &str| decide(&policy, &write, &operator, json!({"path": path})).decision;
        for disguised in [
            "/srv/data/%2e%2e/%2e%2e/etc/passwd",
            "/srv/data/..\u{2215}..\u{2215}etc\u{2215}passwd",
            "/srv/data/\u{ff0e}\u{ff0e}\u{ff0f}\u{ff0e}\u{ff0e}\u{ff0f}etc/passwd",
        ] {
            assert_eq!(decision(disguised), Decision::Deny, "{disguised}");
        }
        assert_eq!(decision("/srv/data/100%/report.txt"), Decision::Allow);
    }

    #[test]
    fn an_allow_rule_under_a_prefix_does_not_apply_to_a_path_in_disguise() {
        let policy = rules(json!([
            {"tools": "fs.read_file", "when": {"starts_with": {"arg": "path", "value": "/srv/data/"}}, "decision": "allow"},
            {"tools": "fs.*", "decision": "deny"}
        ]));
        let read = tool("fs.read_file", Effect::Read);
        let operator = Principal::operator();
        let decide_path = |path: &str| decide(&policy, &read, &operator, json!({"path": path}));
        let verdict = decide_path("/srv/data/%2e%2e/secrets");
        assert_eq!(
            (verdict.decision, verdict.decided_by.as_str()),
            (Decision::Deny, "policy.rules[1]")
        );
        assert_eq!(decide_path("/srv/data/a.txt").decision, Decision::Allow);
    }

    #[test]
    fn a_rule_reads_the_callers_claims_and_the_conversation() {
        let policy = rules(json!([
            {"tools": "refund", "when": {"claim": {"groups": "support"}}, "decision": "allow"},
            {"tools": "refund", "when": {"called_ok": "lookup"}, "decision": "ask"},
            {"tools": "refund", "decision": "deny"}
        ]));
        let refund = tool("refund", Effect::Write);
        let mut support = principal(Tier::External, &["*"]);
        support.claims = json!({"groups": ["support", "staff"]})
            .as_object()
            .unwrap()
            .clone()
            .into();
        assert_eq!(policy.decide(&refund, &support).decision, Decision::Allow);
        let stranger = principal(Tier::External, &["*"]);
        assert_eq!(
            policy.decide(&refund, &stranger).decision,
            Decision::Ask,
            "the history is not known before a call"
        );
        let state = Map::new();
        let history = [CallRecord::new("lookup", true)];
        let call = CallFacts {
            arguments: &json!({}),
            state: &state,
            history: &history,
            seen: None,
            untrusted: None,
            untrusted_origin: false,
        };
        assert_eq!(
            policy.decide_call(&refund, &stranger, call).decision,
            Decision::Ask
        );
        assert_eq!(
            decide(&policy, &refund, &stranger, json!({})).decision,
            Decision::Deny
        );
    }

    #[test]
    fn an_explanation_names_every_rule_and_why() {
        let policy = rules(json!([
            {"tools": "github.*", "decision": "allow"},
            {"tools": "fs.write_file", "when": {"not": {"starts_with": {"arg": "path", "value": "/srv/data/"}}}, "decision": "deny"},
            {"tools": "fs.*", "decision": "ask"}
        ]));
        let write = tool("fs.write_file", Effect::Write);
        let state = Map::new();
        let args = json!({"path": "/srv/data/../etc/passwd"});
        let explained = policy.explain(
            &write,
            &Principal::operator(),
            CallFacts {
                arguments: &args,
                state: &state,
                history: &[],
                seen: None,
                untrusted: None,
                untrusted_origin: false,
            },
        );
        assert_eq!(explained.verdict.decided_by, "policy.rules[1]");
        let lines: Vec<String> = explained
            .considered
            .iter()
            .map(|c| format!("{} {} {}: {}", c.decided, c.matched, c.what, c.why))
            .collect();
        insta::assert_snapshot!(lines.join("\n"));
    }
}
