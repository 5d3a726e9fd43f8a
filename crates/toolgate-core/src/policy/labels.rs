//! Information-flow labels and the rule of two.
//!
//! A tool's result may bring two kinds of content into a conversation:
//! **untrusted** (written by a third party: web pages, email, tickets) and
//! **private** (customer records, secrets, internal documents). A call that
//! changes the world or sends something out is the third leg. A conversation
//! that holds all three can be turned, by one injected sentence, into an
//! exfiltration; the rule of two (`policy: {rule_of_two: ask}`, the default)
//! puts a person, or a refusal, before the call that would complete the set.
//!
//! Labels only ever restrict: a label makes a call asked or refused, never
//! allowed. What the conversation has seen ([`Seen`]) is read off its call
//! history: each tool that succeeded brought in its tool's labels.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AnsweredBy, Decision, Verdict};
use crate::ToolDescriptor;

/// One label of what a tool's result brings in, as a spec file writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputLabel {
    /// Written by someone outside: web pages, email, tickets, reviews.
    Untrusted,
    /// Private data: customer records, secrets, internal documents.
    Private,
    /// Neither: the operator vouches for it (clears the default `untrusted`
    /// of HTTP bindings and upstream MCP servers).
    Trusted,
}

/// A tool's `output:`: one label or a list (`[untrusted, private]` for an inbox).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolOutput {
    /// One label.
    One(OutputLabel),
    /// Several labels.
    Many(Vec<OutputLabel>),
}

impl ToolOutput {
    /// The labels it declares.
    pub fn labels(&self) -> &[OutputLabel] {
        match self {
            ToolOutput::One(label) => std::slice::from_ref(label),
            ToolOutput::Many(labels) => labels,
        }
    }

    /// What a result labelled so brings in.
    pub fn brings(&self) -> Labels {
        let has = |l| self.labels().contains(&l);
        Labels {
            untrusted: has(OutputLabel::Untrusted),
            private: has(OutputLabel::Private),
        }
    }
}

/// What a tool's result brings into a conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Labels {
    /// Content a third party wrote.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untrusted: bool,
    /// Private data.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
}

impl Labels {
    /// Untrusted content only: the default of HTTP bindings and upstream MCP tools.
    pub const UNTRUSTED: Labels = Labels {
        untrusted: true,
        private: false,
    };

    /// Whether it brings nothing.
    pub fn is_empty(&self) -> bool {
        !self.untrusted && !self.private
    }

    /// Whether it brings `label`.
    pub fn has(&self, label: SeenLabel) -> bool {
        match label {
            SeenLabel::Untrusted => self.untrusted,
            SeenLabel::Private => self.private,
        }
    }
}

impl fmt::Display for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.untrusted, self.private) {
            (true, true) => f.write_str("untrusted, private"),
            (true, false) => f.write_str("untrusted"),
            (false, true) => f.write_str("private"),
            (false, false) => f.write_str("none"),
        }
    }
}

/// A label a conversation can have seen, as a rule's `when: {seen: ...}` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SeenLabel {
    /// The conversation has read content a third party wrote.
    Untrusted,
    /// The conversation has read private data.
    Private,
}

impl SeenLabel {
    /// The spelling in spec files.
    pub fn as_str(self) -> &'static str {
        match self {
            SeenLabel::Untrusted => "untrusted",
            SeenLabel::Private => "private",
        }
    }

    /// What reading it is, in a sentence: "read untrusted content".
    fn read(self) -> &'static str {
        match self {
            SeenLabel::Untrusted => "read untrusted content",
            SeenLabel::Private => "read private data",
        }
    }
}

impl std::str::FromStr for SeenLabel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "untrusted" => Ok(SeenLabel::Untrusted),
            "private" => Ok(SeenLabel::Private),
            other => Err(format!(
                "`{other}` is not a label: write `untrusted` or `private`"
            )),
        }
    }
}

impl fmt::Display for SeenLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call that brought a label in: the tool, and when it completed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sighting {
    /// The tool whose result carried the label.
    pub tool: String,
    /// When it completed (RFC 3339).
    pub time: String,
}

impl Sighting {
    /// `fetch_page, 12:03`: the tool and the time of day of an RFC 3339 time.
    fn words(&self) -> String {
        match self.time.get(11..16) {
            Some(hm) if self.time.as_bytes().get(10) == Some(&b'T') => {
                format!("{}, {hm}", self.tool)
            }
            _ => self.tool.clone(),
        }
    }
}

/// How many of the calls that brought a label in [`Seen::words`] names.
pub const WORDS_NAMED: usize = 3;

/// What a conversation has seen, and from which calls (oldest first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// The calls that brought untrusted content in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub untrusted: Vec<Sighting>,
    /// The calls that brought private data in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub private: Vec<Sighting>,
    /// How many calls brought untrusted content in beyond those `untrusted`
    /// lists, in an account [`Seen::capped`] kept short.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub untrusted_more: usize,
    /// The same for `private`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub private_more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Seen {
    /// What a conversation has seen, from its calls that ran (`(tool, ok,
    /// time)`, oldest first) and each tool's labels (`None`: no tool of that
    /// name, or no labels). A call that failed brought nothing in.
    pub fn from_calls<'a>(
        calls: impl IntoIterator<Item = (&'a str, bool, &'a str)>,
        labels_of: impl Fn(&str) -> Option<Labels>,
    ) -> Seen {
        let mut seen = Seen::default();
        for (tool, ok, time) in calls {
            let Some(labels) = labels_of(tool).filter(|_| ok) else {
                continue;
            };
            seen.note(tool, time, labels);
        }
        seen
    }

    /// Adds one call's labels.
    pub fn note(&mut self, tool: &str, time: &str, labels: Labels) {
        let sighting = || Sighting {
            tool: tool.to_owned(),
            time: time.to_owned(),
        };
        if labels.untrusted {
            self.untrusted.push(sighting());
        }
        if labels.private {
            self.private.push(sighting());
        }
    }

    /// Whether the conversation has seen `label`.
    pub fn has(&self, label: SeenLabel) -> bool {
        self.count(label) > 0
    }

    /// How many calls brought `label` in.
    pub fn count(&self, label: SeenLabel) -> usize {
        match label {
            SeenLabel::Untrusted => self.untrusted.len() + self.untrusted_more,
            SeenLabel::Private => self.private.len() + self.private_more,
        }
    }

    /// The same account with at most the first `keep` calls of each label
    /// listed and the rest counted: what [`Seen::words`] and the policy read,
    /// in a size that does not grow with the conversation.
    pub fn capped(mut self, keep: usize) -> Seen {
        for (sightings, more) in [
            (&mut self.untrusted, &mut self.untrusted_more),
            (&mut self.private, &mut self.private_more),
        ] {
            if sightings.len() > keep {
                *more += sightings.len() - keep;
                sightings.truncate(keep);
            }
        }
        self
    }

    /// The calls that brought `label` in.
    pub fn sightings(&self, label: SeenLabel) -> &[Sighting] {
        match label {
            SeenLabel::Untrusted => &self.untrusted,
            SeenLabel::Private => &self.private,
        }
    }

    /// Whether it has seen nothing.
    pub fn is_empty(&self) -> bool {
        !self.has(SeenLabel::Untrusted) && !self.has(SeenLabel::Private)
    }

    /// `read untrusted content (fetch_page, 12:03)`: a label and the calls
    /// that brought it (the first [`WORDS_NAMED`]; the rest counted).
    pub fn words(&self, label: SeenLabel) -> String {
        let sightings = self.sightings(label);
        let mut names: Vec<String> = Vec::new();
        for sighting in sightings.iter().take(WORDS_NAMED) {
            names.push(sighting.words());
        }
        let count = self.count(label);
        if count > WORDS_NAMED {
            names.push(format!("{} more", count - WORDS_NAMED));
        }
        format!("{} ({})", label.read(), names.join("; "))
    }
}

/// `policy: {rule_of_two: ...}`: what to do with a call that would give a
/// conversation untrusted content, private data and an effect on the world.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleOfTwo {
    /// Ask a person (the default).
    #[default]
    Ask,
    /// Refuse the call.
    Deny,
    /// Do not apply it (rules may still read `seen:` and `tainted:`).
    Off,
}

impl RuleOfTwo {
    /// Whether it is the default (omitted when serialized).
    pub fn is_default(&self) -> bool {
        *self == RuleOfTwo::Ask
    }
}

/// Whether a call of `tool` is the third leg: it changes the world or sends
/// something out (any effect but `read`, or `sends: true`).
pub fn acts_on_world(tool: &ToolDescriptor) -> bool {
    tool.sends || tool.effect != crate::Effect::Read
}

/// The rule of two on one call of `tool` in a conversation that has `seen`
/// what it has: `None` when the call would not give it all three legs.
pub(crate) fn rule_of_two(rule: RuleOfTwo, tool: &ToolDescriptor, seen: &Seen) -> Option<Verdict> {
    let decision = match rule {
        RuleOfTwo::Off => return None,
        RuleOfTwo::Ask => Decision::Ask,
        RuleOfTwo::Deny => Decision::Deny,
    };
    if !acts_on_world(tool) {
        return None;
    }
    let mut read = Vec::new();
    for label in [SeenLabel::Untrusted, SeenLabel::Private] {
        if seen.has(label) {
            read.push(seen.words(label));
        } else if tool.output.has(label) {
            read.push(format!("{} (this call's own result)", label.read()));
        } else {
            return None;
        }
    }
    let act = if tool.sends && tool.effect == crate::Effect::Read {
        format!("`{}` sends data out", tool.name)
    } else {
        format!("`{}` acts on the world ({})", tool.name, tool.effect)
    };
    let need = match decision {
        Decision::Deny => {
            "the rule of two refuses it; ask the user to do this themselves, or start a new conversation without the untrusted content"
        }
        _ => "it needs a person's approval (the rule of two)",
    };
    Some(Verdict {
        decision,
        reason: format!(
            "this conversation has {} and {}, and {act}: {need}",
            read[0], read[1]
        ),
        decided_by: "policy.rule_of_two".into(),
        answered_by: AnsweredBy::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Effect;
    use crate::policy::tests::tool;
    use serde_json::json;

    fn seen(calls: &[(&str, Labels)]) -> Seen {
        let mut seen = Seen::default();
        for (tool, labels) in calls {
            seen.note(tool, "2026-12-04T12:03:09Z", *labels);
        }
        seen
    }

    const PRIVATE: Labels = Labels {
        untrusted: false,
        private: true,
    };

    #[test]
    fn a_send_after_untrusted_and_private_reads_is_asked_with_what_was_read() {
        let seen = seen(&[
            ("fetch_page", Labels::UNTRUSTED),
            ("read_customer", PRIVATE),
        ]);
        let verdict =
            rule_of_two(RuleOfTwo::Ask, &tool("send_email", Effect::External), &seen).unwrap();
        assert_eq!(verdict.decision, Decision::Ask);
        assert_eq!(
            verdict.reason,
            "this conversation has read untrusted content (fetch_page, 12:03) and read private data (read_customer, 12:03), and `send_email` acts on the world (external): it needs a person's approval (the rule of two)"
        );
        assert_eq!(verdict.decided_by, "policy.rule_of_two");
    }

    #[test]
    fn two_legs_are_allowed_and_reads_never_count_as_the_third() {
        let only_untrusted = seen(&[("fetch_page", Labels::UNTRUSTED)]);
        let send = tool("send_email", Effect::External);
        assert_eq!(rule_of_two(RuleOfTwo::Ask, &send, &only_untrusted), None);
        let both = seen(&[
            ("fetch_page", Labels::UNTRUSTED),
            ("read_customer", PRIVATE),
        ]);
        assert_eq!(
            rule_of_two(RuleOfTwo::Ask, &tool("search", Effect::Read), &both),
            None
        );
        let mut sends = tool("fetch_url", Effect::Read);
        sends.sends = true;
        assert!(rule_of_two(RuleOfTwo::Deny, &sends, &both).is_some());
        assert_eq!(rule_of_two(RuleOfTwo::Off, &send, &both), None);
    }

    #[test]
    fn a_call_whose_own_result_completes_the_set_counts() {
        let mut inbox = tool("forward_inbox", Effect::External);
        inbox.output = PRIVATE;
        let seen = seen(&[("fetch_page", Labels::UNTRUSTED)]);
        let verdict = rule_of_two(RuleOfTwo::Deny, &inbox, &seen).unwrap();
        assert_eq!(verdict.decision, Decision::Deny);
        assert!(
            verdict
                .reason
                .contains("read private data (this call's own result)")
        );
    }

    #[test]
    fn output_reads_one_label_or_a_list() {
        let one: ToolOutput = serde_json::from_value(json!("untrusted")).unwrap();
        assert_eq!(one.brings(), Labels::UNTRUSTED);
        let many: ToolOutput = serde_json::from_value(json!(["untrusted", "private"])).unwrap();
        assert!(many.brings().untrusted && many.brings().private);
        let trusted: ToolOutput = serde_json::from_value(json!("trusted")).unwrap();
        assert!(trusted.brings().is_empty());
    }

    #[test]
    fn seen_is_read_off_the_calls_that_succeeded() {
        let labels_of = |tool: &str| (tool == "fetch_page").then_some(Labels::UNTRUSTED);
        let seen = Seen::from_calls(
            [
                ("fetch_page", false, "2026-12-04T12:00:00Z"),
                ("lookup", true, "2026-12-04T12:01:00Z"),
                ("fetch_page", true, "2026-12-04T12:02:00Z"),
            ],
            labels_of,
        );
        assert_eq!(seen.untrusted.len(), 1);
        assert_eq!(
            seen.words(SeenLabel::Untrusted),
            "read untrusted content (fetch_page, 12:02)"
        );
        assert!(!seen.has(SeenLabel::Private));
    }
}
