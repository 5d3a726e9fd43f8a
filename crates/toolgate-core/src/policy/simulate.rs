//! What a changed policy would have done to the calls already made: the audit
//! log's decisions replayed through another spec's flow, policy and principals.
//!
//! Each record that carries a decision (an intent, or a refusal that the flow,
//! the policy or a person decided) is decided again, in log order, with its
//! conversation rebuilt from the records before it (`replayed`): the call
//! history from the completions, the state from the new spec's `set_state` of
//! each successful call, and what it had seen from the history by the new
//! spec's labels. The new flow admits it (a call it blocks is denied, one it
//! asks to confirm is asked), the new policy decides, and a call let through
//! is charged to the new budgets (`replayed_budgets`). Nothing runs.
//!
//! A call the new spec cannot judge is counted apart, with why, never decided
//! by a guess: its tool or principal is gone; the flow or a rule for it reads
//! state the log cannot tell (a result wrote it, or arguments the log kept
//! only in part filled it); a rule reads what the log does not keep — the
//! caller's claims, untrusted results' text (`tainted:`), or arguments the log
//! kept only in part (clipped or redacted).
//!
//! A replay can differ from what would really have happened: a call the new
//! spec would have refused did run, so the later calls of its conversation
//! saw its result and its effects (and its state writes); a call it would have
//! let through was refused, so nothing it would have written is there; and
//! state a host or an operator wrote is not in the log.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::replayed::Replayed;
use super::replayed_budgets::ReplayedBudgets;
use super::{CallFacts, Decision, Policy, Seen, Verdict};
use crate::flow::{Guard, Monitor, ToolStatus};
use crate::spec::SpecFile;
use crate::{
    AuditRecord, CLIPPED_KEY, Principal, PrincipalSpec, REDACTED, RecordKind, ToolDescriptor,
    scope_matches,
};

/// One call whose decision changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// The record's place in the log.
    pub seq: u64,
    /// When it was decided.
    pub time: String,
    /// The conversation.
    pub session: String,
    /// The tool called.
    pub tool: String,
    /// The caller.
    pub principal: String,
    /// What the log says was decided.
    pub old: Decision,
    /// What the new policy decides.
    pub new: Decision,
    /// What decides under the new policy (`policy.rules[2]`, ...).
    pub decided_by: String,
    /// Why, in the new policy's words.
    pub reason: String,
}

impl Change {
    /// Whether the new policy lets through more than the old one did.
    pub fn loosened(&self) -> bool {
        self.new < self.old
    }
}

/// Changes of one kind: one tool, one caller, one old and new decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeGroup {
    /// The tool.
    pub tool: String,
    /// The caller.
    pub principal: String,
    /// What was decided.
    pub old: Decision,
    /// What would be decided now.
    pub new: Decision,
    /// What decides now.
    pub decided_by: String,
    /// How many calls.
    pub calls: usize,
}

/// What replaying the log through a new policy found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Simulation {
    /// Calls decided again.
    pub judged: usize,
    /// Of those, calls decided as before.
    pub same: usize,
    /// Every call decided otherwise, loosened ones first, then in log order.
    pub changes: Vec<Change>,
    /// Calls the new spec cannot judge, by why.
    pub unjudged: BTreeMap<String, usize>,
}

impl Simulation {
    /// The changes grouped by tool, caller and old and new decision; loosened
    /// groups first, then the largest.
    pub fn groups(&self) -> Vec<ChangeGroup> {
        let mut counts: BTreeMap<(&str, &str, Decision, Decision, &str), usize> = BTreeMap::new();
        for c in &self.changes {
            let key = (
                c.tool.as_str(),
                c.principal.as_str(),
                c.old,
                c.new,
                c.decided_by.as_str(),
            );
            *counts.entry(key).or_default() += 1;
        }
        let mut groups: Vec<ChangeGroup> = counts
            .into_iter()
            .map(|((tool, principal, old, new, by), calls)| ChangeGroup {
                tool: tool.to_owned(),
                principal: principal.to_owned(),
                old,
                new,
                decided_by: by.to_owned(),
                calls,
            })
            .collect();
        groups.sort_by_key(|g| (g.new >= g.old, std::cmp::Reverse(g.calls)));
        groups
    }

    /// How many changes let through more than before.
    pub fn loosened(&self) -> usize {
        self.changes.iter().filter(|c| c.loosened()).count()
    }
}

/// The new spec a log is replayed through: its policy, principals and tools,
/// and the spec file itself for its flow and its tools' state writes.
pub struct Replay<'a> {
    /// The policy that decides.
    pub policy: &'a Policy,
    /// Its principals, by id (`operator` needs no declaration).
    pub principals: &'a indexmap::IndexMap<String, PrincipalSpec>,
    /// Its tools.
    pub tools: &'a [ToolDescriptor],
    /// The spec file: its `flow:` admits each call again, and its `state:`
    /// defaults and tools' `set_state` rebuild each conversation's state.
    /// Without it, no flow is replayed and no rule reading state is judged.
    pub spec: Option<&'a SpecFile>,
}

/// What a rule's `when:` reads that the log may not hold.
#[derive(Default)]
struct Reads {
    state: bool,
    claims: bool,
    arguments: bool,
    taint: bool,
}

impl Replay<'_> {
    /// Replays `records` (the whole log, oldest first); only calls decided at
    /// or after `since` (RFC 3339, as the log writes it) and, with `principal`,
    /// that caller's, are decided again. Earlier records still build their
    /// conversations' histories.
    pub fn run(
        &self,
        records: &[AuditRecord],
        since: Option<&str>,
        principal: Option<&str>,
    ) -> Simulation {
        let tools: HashMap<&str, &ToolDescriptor> =
            self.tools.iter().map(|t| (t.name.as_str(), t)).collect();
        let mut conversations: HashMap<&str, Replayed> = HashMap::new();
        let mut budgets = ReplayedBudgets::new(self.spec.map_or(&[][..], |s| &s.budgets));
        let mut out = Simulation::default();
        for record in records {
            let entry = &record.entry;
            if entry.kind == RecordKind::Reload {
                continue;
            }
            let conversation = conversations
                .entry(&entry.session)
                .or_insert_with(|| Replayed::new(self.spec));
            let blocked = entry.outcome.as_deref() == Some("blocked");
            let old = entry.decision.or(blocked.then_some(Decision::Deny));
            let judged = entry.kind != RecordKind::Completion
                && old.is_some()
                && since.is_none_or(|s| entry.time.as_str() >= s)
                && principal.is_none_or(|p| p == entry.principal);
            let verdict = judged.then(|| {
                let verdict = self.judge(record, &tools, conversation)?;
                let tool = tools[entry.tool.as_str()];
                budgets.judge(
                    tool,
                    &entry.principal,
                    &entry.arguments,
                    &entry.time,
                    verdict,
                )
            });
            conversation.record(entry, self.spec);
            let (Some(verdict), Some(old)) = (verdict, old) else {
                continue;
            };
            match verdict {
                Err(why) => *out.unjudged.entry(why).or_default() += 1,
                Ok(verdict) => {
                    out.judged += 1;
                    if verdict.decision == old {
                        out.same += 1;
                    } else {
                        out.changes.push(Change {
                            seq: record.seq,
                            time: entry.time.clone(),
                            session: entry.session.clone(),
                            tool: entry.tool.clone(),
                            principal: entry.principal.clone(),
                            old,
                            new: verdict.decision,
                            decided_by: verdict.decided_by,
                            reason: verdict.reason,
                        });
                    }
                }
            }
        }
        out.changes.sort_by_key(|c| !c.loosened());
        out
    }

    /// The new verdict on one recorded call, or why it cannot be told.
    fn judge(
        &self,
        record: &AuditRecord,
        tools: &HashMap<&str, &ToolDescriptor>,
        conversation: &Replayed,
    ) -> Result<Verdict, String> {
        let entry = &record.entry;
        let Some(tool) = tools.get(entry.tool.as_str()) else {
            return Err("the new spec has no such tool".into());
        };
        let principal = match entry.principal.as_str() {
            "operator" => Principal::operator(),
            id => match self.principals.get(id) {
                Some(declared) => declared.to_principal(id),
                None => return Err("the new spec does not declare the caller".into()),
            },
        };
        let reads = self.reads(&tool.name);
        let state_told = self.spec.is_some() && conversation.unknown.is_empty();
        if reads.state && !state_told {
            return Err(match self.spec {
                None => "a rule reads the conversation's state, which the log does not keep".into(),
                Some(_) => unknown_state(conversation),
            });
        }
        if reads.claims {
            return Err("a rule reads the caller's claims, which the log does not keep".into());
        }
        if reads.taint {
            return Err(
                "a rule reads `tainted:`, and the log does not keep untrusted results' text".into(),
            );
        }
        if reads.arguments && !whole(&entry.arguments) {
            return Err("a rule reads arguments the log kept only in part".into());
        }
        let calls = conversation.history();
        let confirm = match self.spec.and_then(|s| s.flow.as_ref()) {
            Some(flow) if flow.governs(&tool.name) => {
                if !conversation.unknown.is_empty() {
                    return Err(unknown_state(conversation));
                }
                let monitor = Monitor::new(flow);
                match monitor.admit(&conversation.state, &calls, &tool.name, &entry.arguments) {
                    ToolStatus::Allowed { confirm } => confirm,
                    blocked => {
                        return Ok(Verdict {
                            decision: Decision::Deny,
                            reason: blocked.reason().unwrap_or("blocked").to_owned(),
                            decided_by: "flow".into(),
                            answered_by: Default::default(),
                        });
                    }
                }
            }
            _ => None,
        };
        let seen = Seen::from_calls(conversation.calls.iter().copied(), |name| {
            self.tools.iter().find(|t| t.name == name).map(|t| t.output)
        });
        let facts = CallFacts {
            arguments: &entry.arguments,
            state: &conversation.state,
            history: &calls,
            seen: Some(&seen),
            untrusted: None,
            untrusted_origin: false,
        };
        let verdict = self.policy.decide_call(tool, &principal, facts);
        Ok(match confirm {
            Some(confirm) => verdict.confirmed_by_flow(&confirm),
            None => verdict,
        })
    }

    /// What the rules that decide `tool` read (a shadow rule decides nothing).
    fn reads(&self, tool: &str) -> Reads {
        let mut reads = Reads::default();
        for rule in self.policy.rules.iter().filter(|r| r.mode.is_enforce()) {
            let Some(when) = rule
                .when
                .as_ref()
                .filter(|_| scope_matches(&rule.tools, tool))
            else {
                continue;
            };
            when.for_each_leaf(&mut |leaf| match leaf {
                Guard::IsTrue(_) | Guard::IsSet(_) | Guard::Eq(_) => reads.state = true,
                Guard::Above(above) => {
                    reads.arguments = true;
                    reads.state |= above.state.is_some();
                }
                Guard::StartsWith(_) => reads.arguments = true,
                Guard::Claim(_) => reads.claims = true,
                Guard::Tainted(_) => reads.taint = true,
                _ => {}
            });
        }
        reads
    }
}

/// Why a call whose conversation holds state the log cannot tell is not judged.
fn unknown_state(conversation: &Replayed) -> String {
    let keys: Vec<&str> = conversation.unknown.iter().map(String::as_str).collect();
    format!(
        "the flow or a rule reads the conversation's state, and the log cannot tell `{}` (a result wrote it, or arguments kept only in part)",
        keys.join("`, `")
    )
}

/// Whether the log kept `arguments` whole: nothing clipped or redacted.
pub(super) fn whole(arguments: &serde_json::Value) -> bool {
    match arguments {
        serde_json::Value::String(s) => s != REDACTED && !s.contains(" bytes more; sha256 "),
        serde_json::Value::Array(items) => items.iter().all(whole),
        serde_json::Value::Object(map) => !map.contains_key(CLIPPED_KEY) && map.values().all(whole),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::policy::tests::tool;
    use crate::{AuditEntry, Effect, GENESIS_HASH};

    fn sealed(
        seq: u64,
        kind: RecordKind,
        tool: &str,
        fill: impl FnOnce(&mut AuditEntry),
    ) -> AuditRecord {
        let mut entry = AuditEntry::new(
            format!("2026-12-04T12:00:{seq:02}.000Z"),
            kind,
            format!("run-{seq}"),
            "c",
            "s",
            "operator",
            tool,
        );
        fill(&mut entry);
        AuditRecord::seal(seq, GENESIS_HASH, entry)
    }

    /// A call the policy decided: its intent (or refusal), with its arguments.
    fn decided(
        seq: u64,
        kind: RecordKind,
        tool: &str,
        decision: Decision,
        args: Value,
    ) -> AuditRecord {
        sealed(seq, kind, tool, |e| {
            e.decision = Some(decision);
            e.arguments = args;
        })
    }

    /// A call that ended with `outcome`.
    fn completed(seq: u64, tool: &str, outcome: &str) -> AuditRecord {
        sealed(seq, RecordKind::Completion, tool, |e| {
            e.outcome = Some(outcome.into())
        })
    }

    /// `log` replayed through `rules` over `tools`, from `since`, for `caller`.
    fn simulate(
        rules: Value,
        tools: &[ToolDescriptor],
        log: &[AuditRecord],
        since: Option<&str>,
        caller: Option<&str>,
    ) -> Simulation {
        let policy: Policy = serde_json::from_value(json!({"rules": rules})).unwrap();
        let principals = indexmap::IndexMap::new();
        let replay = Replay {
            policy: &policy,
            principals: &principals,
            tools,
            spec: None,
        };
        replay.run(log, since, caller)
    }

    #[test]
    fn a_looser_rule_is_flagged_and_a_tighter_one_counted() {
        let tools = [
            tool("refund", Effect::External),
            tool("lookup", Effect::Read),
        ];
        let log = [
            decided(1, RecordKind::Intent, "lookup", Decision::Allow, json!({})),
            completed(2, "lookup", "ok"),
            decided(
                3,
                RecordKind::Refusal,
                "refund",
                Decision::Ask,
                json!({"cents": 50000}),
            ),
            decided(
                4,
                RecordKind::Intent,
                "refund",
                Decision::Ask,
                json!({"cents": 900}),
            ),
        ];
        let rules = json!([
            {"tools": "refund", "when": {"above": {"arg": "cents", "value": 1000}}, "decision": "deny"},
            {"tools": "refund", "when": {"called_ok": "lookup"}, "decision": "allow"},
        ]);
        let run = simulate(rules, &tools, &log, None, None);
        assert_eq!((run.judged, run.same), (3, 1));
        assert_eq!(run.loosened(), 1);
        assert_eq!(
            (run.changes[0].seq, run.changes[0].new),
            (4, Decision::Allow)
        );
        assert_eq!(run.changes[0].decided_by, "policy.rules[1]");
        assert_eq!(
            (run.changes[1].seq, run.changes[1].new),
            (3, Decision::Deny)
        );
        let groups = run.groups();
        assert_eq!(groups[0].new, Decision::Allow, "loosened groups first");
    }

    #[test]
    fn what_the_log_cannot_tell_is_counted_apart() {
        let tools = [tool("refund", Effect::External)];
        let log = [
            decided(1, RecordKind::Intent, "gone", Decision::Allow, json!({})),
            decided(
                2,
                RecordKind::Intent,
                "refund",
                Decision::Ask,
                json!({"cents": "[redacted]"}),
            ),
        ];
        let rules = json!([
            {"tools": "refund", "when": {"above": {"arg": "cents", "value": 1000}}, "decision": "deny"},
        ]);
        let run = simulate(rules, &tools, &log, None, None);
        assert_eq!(run.judged, 0);
        assert_eq!(run.unjudged["the new spec has no such tool"], 1);
        assert_eq!(
            run.unjudged["a rule reads arguments the log kept only in part"],
            1
        );
    }

    #[test]
    fn since_and_the_caller_narrow_what_is_judged_but_not_the_history() {
        let tools = [
            tool("refund", Effect::External),
            tool("lookup", Effect::Read),
        ];
        let log = [
            completed(1, "lookup", "ok"),
            decided(2, RecordKind::Intent, "refund", Decision::Ask, json!({})),
        ];
        let rules =
            json!([{"tools": "refund", "when": {"called_ok": "lookup"}, "decision": "allow"}]);
        let run = simulate(
            rules.clone(),
            &tools,
            &log,
            Some("2026-12-04T12:00:02.000Z"),
            None,
        );
        assert_eq!(
            run.changes.len(),
            1,
            "lookup, before `since`, still counts as done"
        );
        assert_eq!(
            simulate(rules, &tools, &log, None, Some("someone")).judged,
            0
        );
    }

    /// `log` replayed through the whole of `spec`: its flow, state and budgets too.
    fn replay_spec(spec: &SpecFile, tools: &[ToolDescriptor], log: &[AuditRecord]) -> Simulation {
        let replay = Replay {
            policy: &spec.policy,
            principals: &spec.principals,
            tools,
            spec: Some(spec),
        };
        replay.run(log, None, None)
    }

    #[test]
    fn the_new_flow_admits_each_call_again_on_state_rebuilt_from_the_log() {
        let spec: SpecFile = serde_json::from_value(json!({
            "state": {"verified": {"type": "boolean", "default": false}},
            "tools": [
                {"name": "verify", "description": "d", "effect": "read", "set_state": {"verified": true}},
                {"name": "lookup", "description": "d", "effect": "read"},
                {"name": "refund", "description": "d", "effect": "external"},
            ],
            "policy": {"rules": [
                {"tools": "refund", "when": {"is_true": "verified"}, "decision": "allow"},
                {"tools": "refund", "decision": "deny"},
            ]},
            "flow": {"steps": [
                {"id": "look", "instruction": "Look it up.", "allow": ["verify", "lookup"]},
                {"id": "refund", "instruction": "Refund it.", "gate": {"called_ok": "lookup"}, "allow": ["refund"]},
            ]},
        }))
        .unwrap();
        let tools = [
            tool("verify", Effect::Read),
            tool("lookup", Effect::Read),
            tool("refund", Effect::External),
        ];
        // A completion, of the intent just before it.
        let ok = |seq: u64, tool: &str| {
            sealed(seq, RecordKind::Completion, tool, |e| {
                e.outcome = Some("ok".into());
                e.run_id = format!("run-{}", seq - 1);
            })
        };
        let log = [
            // A refund straight away: allowed then, blocked by the new flow.
            decided(1, RecordKind::Intent, "refund", Decision::Allow, json!({})),
            ok(2, "refund"),
            // Verified and looked up: the new rule reads the rebuilt state.
            decided(3, RecordKind::Intent, "verify", Decision::Allow, json!({})),
            ok(4, "verify"),
            decided(5, RecordKind::Intent, "lookup", Decision::Allow, json!({})),
            ok(6, "lookup"),
            decided(7, RecordKind::Intent, "refund", Decision::Ask, json!({})),
            ok(8, "refund"),
            // Refused by the old flow (no decision, outcome blocked).
            sealed(9, RecordKind::Refusal, "verify", |e| {
                e.outcome = Some("blocked".into())
            }),
        ];
        let run = replay_spec(&spec, &tools, &log);
        let changes: Vec<(u64, Decision, Decision, &str)> = run
            .changes
            .iter()
            .map(|c| (c.seq, c.old, c.new, c.decided_by.as_str()))
            .collect();
        assert_eq!(
            changes,
            [
                (7, Decision::Ask, Decision::Allow, "policy.rules[0]"),
                (9, Decision::Deny, Decision::Allow, "policy.effects.read"),
                (1, Decision::Allow, Decision::Deny, "flow"),
            ]
        );
        assert_eq!((run.judged, run.same), (5, 2));
        assert!(run.unjudged.is_empty(), "{:?}", run.unjudged);
    }

    #[test]
    fn the_new_budgets_charge_the_calls_let_through_at_the_time_they_were_made() {
        let spec: SpecFile = serde_json::from_value(json!({
            "policy": {"effects": {"external": "allow"}},
            "budgets": [{"tools": "refund", "calls": 1, "per": "1h"}],
        }))
        .unwrap();
        let tools = [tool("refund", Effect::External)];
        let at = |seq: u64, time: &str| {
            sealed(seq, RecordKind::Intent, "refund", |e| {
                e.decision = Some(Decision::Allow);
                e.time = time.into();
            })
        };
        let log = [
            at(1, "2026-12-04T12:00:01.000Z"),
            at(2, "2026-12-04T12:30:00.000Z"),
            at(3, "2026-12-04T13:00:01.000Z"),
        ];
        let run = replay_spec(&spec, &tools, &log);
        assert_eq!(run.changes.len(), 1, "{:?}", run.changes);
        let change = &run.changes[0];
        assert_eq!((change.seq, change.new), (2, Decision::Deny));
        assert_eq!(change.decided_by, "budgets[0]");
        assert!(
            change
                .reason
                .ends_with("starts afresh at 2026-12-04T13:00:00Z (in 30m), try then"),
            "{}",
            change.reason
        );
    }
}
