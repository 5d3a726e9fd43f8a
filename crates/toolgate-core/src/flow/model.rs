//! The `flow:` section of a spec file, as Rust types: steps, guards, constraints
//! and confirmations. Plain data; [`Monitor`](super::Monitor) gives it meaning.

use std::borrow::Cow;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which tools may run when, in one conversation.
///
/// ```yaml
/// flow:
///   steps:
///     - id: identify
///       allow: [verify_customer]
///       done: {called_ok: verify_customer}
///     - id: assist
///       after: [identify]
///       allow: [lookup_order]
///   constraints:
///     - once: refund_order
///   confirm: [refund_order]
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// The steps of the conversation. A tool a step allows may run only while one
    /// of the steps that allow it is active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
    /// Rules over the whole conversation, whatever step it is in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<Constraint>,
    /// Tools that need the user's explicit confirmation (through the gate's
    /// approvals): a name, or `{tool, when}` to ask only while a guard holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirm: Vec<Confirm>,
    /// Tools that no step allows: `allow` (the default; they run whenever the
    /// constraints permit) or `block`.
    #[serde(default, skip_serializing_if = "Ambient::is_default")]
    pub ambient: Ambient,
}

/// What happens to tools that no step allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ambient {
    /// They run whenever the constraints permit.
    #[default]
    Allow,
    /// They never run: the flow lists every tool the conversation may use.
    Block,
}

impl Ambient {
    fn is_default(&self) -> bool {
        *self == Ambient::Allow
    }
}

/// One step of a conversation.
///
/// A step is *done* once every step it comes `after` is done and its `done`
/// guard holds; it is *active* while it is not done, every step it comes after
/// is done, and its `gate` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The step's name: letters, digits, `_`, `-` and `.`.
    pub id: String,
    /// Steps that must be done before this one can be active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    /// A guard that must hold for the step to be active (default: always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Guard>,
    /// The guard that completes the step; a step without one is never done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Guard>,
    /// Tools usable while the step is active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Tools forbidden while the step is active, even if another step allows them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// What the model should do while the step is active; shown in the planner digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The conversation's flow ends when this step is done: no step is active after it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub terminal: bool,
}

/// A condition over the conversation's state and call history.
///
/// State is what tools latch with `set_state` / `save_response_as`, the declared
/// defaults, and what the host sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// Always holds.
    Always,
    /// The state key holds `true`.
    IsTrue(String),
    /// The state key holds a value other than `null`.
    IsSet(String),
    /// Every listed state key holds the given value.
    Eq(IndexMap<String, Value>),
    /// The tool has succeeded in this conversation.
    CalledOk(String),
    /// The step is done.
    Done(String),
    /// Every guard holds.
    All(Vec<Guard>),
    /// At least one guard holds.
    Any(Vec<Guard>),
    /// The guard does not hold.
    Not(Box<Guard>),
    /// An argument of the call being admitted is above a limit (under `confirm:`
    /// and in policy rules' `when:`).
    Above(Above),
    /// A string argument of the call, read as a path with `.` and `..` resolved,
    /// starts with a prefix (under `confirm:` and in policy rules' `when:`).
    StartsWith(StartsWith),
    /// The caller's credential carries every listed claim (policy rules only):
    /// `claim: {groups: support}`. A claim holds as under `principals.*.match`.
    Claim(IndexMap<String, String>),
    /// The conversation has read content with this label (policy rules only):
    /// `seen: untrusted`, `seen: private`.
    Seen(crate::SeenLabel),
    /// The call's argument carries text that came out of an untrusted result
    /// (policy rules only): `tainted: recipient`, or `tainted: "*"` for any.
    Tainted(String),
}

impl Guard {
    /// Calls `f` with every guard below `all`, `any` and `not`, in written order:
    /// the one walk over the tree for readers that want only its conditions.
    pub(crate) fn for_each_leaf<'g>(&'g self, f: &mut impl FnMut(&'g Guard)) {
        match self {
            Guard::All(parts) | Guard::Any(parts) => parts.iter().for_each(|p| p.for_each_leaf(f)),
            Guard::Not(inner) => inner.for_each_leaf(f),
            leaf => f(leaf),
        }
    }
}

/// `starts_with: {arg: NAME, value: PREFIX}`: the call's string argument starts
/// with `PREFIX` once read as a path.
///
/// The argument is normalized lexically before the test: repeated and trailing
/// `/` and `.` segments are dropped and each `..` removes the segment before it,
/// so `/srv/data/../etc/passwd` is tested as `/etc/passwd`. A path whose `..`
/// climbs above its start starts with nothing. End a directory prefix with `/`
/// (`/srv/data/`), or `/srv/database` starts with it too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartsWith {
    /// The argument of the call, by name.
    pub arg: String,
    /// The prefix.
    pub value: String,
}

/// `above: {arg: NAME, state: KEY}` or `above: {arg: NAME, value: N}`: the call's
/// numeric argument is greater than the state key's number, or than `value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Above {
    /// The argument of the call, by name.
    pub arg: String,
    /// The state key that holds the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The limit itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Number>,
}

/// A rule over the whole conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constraint {
    /// The tool may succeed at most once.
    Once(String),
    /// `then` is blocked until `first` has succeeded.
    Before(Before),
    /// The tool is blocked until the guard holds.
    NeverUntil(NeverUntil),
    /// While the guard holds, the tool must succeed before the conversation ends:
    /// terminal steps stay inactive until it has.
    Require(Require),
}

/// `before: {first: A, then: B}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Before {
    /// The tool that must succeed first.
    pub first: String,
    /// The tool blocked until then.
    pub then: String,
}

/// `never_until: {tool: T, until: GUARD}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NeverUntil {
    /// The tool blocked.
    pub tool: String,
    /// The guard that unblocks it.
    pub until: Guard,
}

/// `require: {tool: T, when: GUARD}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Require {
    /// The tool that must succeed.
    pub tool: String,
    /// While this holds, the tool is required.
    pub when: Guard,
}

/// A tool that needs the user's explicit confirmation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Confirm {
    /// Every call of the tool.
    Always(String),
    /// Calls made while a guard holds.
    When(ConfirmWhen),
}

/// `{tool: T, when: GUARD}` under `confirm:`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmWhen {
    /// The tool.
    pub tool: String,
    /// Ask only while this holds; it may compare the call's arguments with `above`.
    pub when: Guard,
}

impl Confirm {
    /// The tool this entry concerns.
    pub fn tool(&self) -> &str {
        match self {
            Confirm::Always(tool) => tool,
            Confirm::When(c) => &c.tool,
        }
    }

    /// The guard under which it asks; `None` for every call.
    pub fn when(&self) -> Option<&Guard> {
        match self {
            Confirm::Always(_) => None,
            Confirm::When(c) => Some(&c.when),
        }
    }
}

impl Constraint {
    /// The tool the constraint governs.
    pub fn tool(&self) -> &str {
        match self {
            Constraint::Once(tool) => tool,
            Constraint::Before(b) => &b.then,
            Constraint::NeverUntil(n) => &n.tool,
            Constraint::Require(r) => &r.tool,
        }
    }
}

impl Flow {
    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }

    /// Whether the flow says anything about `tool` beyond the ambient default.
    pub fn governs(&self, tool: &str) -> bool {
        let named = |list: &[String]| list.iter().any(|t| t == tool);
        self.steps.iter().any(|s| named(&s.allow) || named(&s.deny))
            || self.constraints.iter().any(|c| match c {
                Constraint::Before(b) => b.first == tool || b.then == tool,
                other => other.tool() == tool,
            })
            || self.confirm.iter().any(|c| c.tool() == tool)
            || self.ambient == Ambient::Block
    }
}

/// A schema that is one mapping with exactly one of `keys`, for the enums written
/// as `{key: value}`: an unknown key then reads as "unknown key, did you mean".
fn one_key_of(title: &str, keys: Vec<(&str, Schema)>) -> Schema {
    let mut properties = serde_json::Map::new();
    for (key, schema) in keys {
        properties.insert(key.to_owned(), schema.to_value());
    }
    json_schema!({
        "description": title,
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        "minProperties": 1,
        "maxProperties": 1,
    })
}

fn described(mut schema: Schema, description: &str) -> Schema {
    schema.insert("description".into(), description.into());
    schema
}

impl JsonSchema for Guard {
    fn schema_name() -> Cow<'static, str> {
        "Guard".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let key = || described(generator_string(), "A state key.");
        let guard = generator.subschema_for::<Guard>();
        let guards = json_schema!({"type": "array", "items": guard.clone()});
        let mapping = generator.subschema_for::<IndexMap<String, Value>>();
        let object = one_key_of(
            "A condition: `is_true: KEY`, `is_set: KEY`, `eq: {KEY: VALUE}`, `called_ok: TOOL`, `done: STEP`, `all: [...]`, `any: [...]`, `not: GUARD`, `above: {arg, state}`, `starts_with: {arg, value}`, `claim: {NAME: VALUE}`, `seen: untrusted|private`, `tainted: ARG`.",
            vec![
                ("is_true", described(key(), "The state key holds `true`.")),
                (
                    "is_set",
                    described(key(), "The state key holds a value other than null."),
                ),
                (
                    "eq",
                    described(mapping, "Every listed state key holds the given value."),
                ),
                (
                    "called_ok",
                    described(
                        generator_string(),
                        "The tool has succeeded in this conversation.",
                    ),
                ),
                ("done", described(generator_string(), "The step is done.")),
                ("all", described(guards.clone(), "Every guard holds.")),
                ("any", described(guards, "At least one guard holds.")),
                ("not", described(guard, "The guard does not hold.")),
                (
                    "above",
                    described(
                        generator.subschema_for::<Above>(),
                        "The call's argument is above a limit (under `confirm:` and in policy rules).",
                    ),
                ),
                (
                    "starts_with",
                    described(
                        generator.subschema_for::<StartsWith>(),
                        "The call's string argument, as a normalized path, starts with a prefix (under `confirm:` and in policy rules).",
                    ),
                ),
                (
                    "claim",
                    described(
                        generator.subschema_for::<IndexMap<String, String>>(),
                        "The caller's credential carries every listed claim, e.g. `{groups: support}` (policy rules only).",
                    ),
                ),
                (
                    "seen",
                    described(
                        generator.subschema_for::<crate::SeenLabel>(),
                        "The conversation has read content with this label: `untrusted` or `private` (policy rules only).",
                    ),
                ),
                (
                    "tainted",
                    described(
                        generator_string(),
                        "The call's argument (`*`: any) carries text that came out of an untrusted result (policy rules only).",
                    ),
                ),
            ],
        );
        json_schema!({
            "anyOf": [
                {"const": "always", "description": "Always holds."},
                object,
            ]
        })
    }
}

impl JsonSchema for Constraint {
    fn schema_name() -> Cow<'static, str> {
        "Constraint".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        one_key_of(
            "A rule: `once: TOOL`, `before: {first, then}`, `never_until: {tool, until}` or `require: {tool, when}`.",
            vec![
                (
                    "once",
                    described(generator_string(), "The tool may succeed at most once."),
                ),
                ("before", generator.subschema_for::<Before>()),
                ("never_until", generator.subschema_for::<NeverUntil>()),
                ("require", generator.subschema_for::<Require>()),
            ],
        )
    }
}

impl JsonSchema for Confirm {
    fn schema_name() -> Cow<'static, str> {
        "Confirm".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let when = generator.subschema_for::<ConfirmWhen>();
        json_schema!({
            "anyOf": [
                {"type": "string", "description": "Every call of this tool."},
                when,
            ]
        })
    }
}

fn generator_string() -> Schema {
    json_schema!({"type": "string"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn guards_read_as_one_key_mappings() {
        let guard: Guard = serde_json::from_value(json!({
            "all": [
                "always",
                {"is_true": "verified"},
                {"eq": {"tier": "gold"}},
                {"not": {"called_ok": "refund"}},
                {"above": {"arg": "amount", "state": "limit"}}
            ]
        }))
        .unwrap();
        let Guard::All(parts) = &guard else {
            panic!("{guard:?}")
        };
        assert_eq!(parts[0], Guard::Always);
        assert_eq!(parts[1], Guard::IsTrue("verified".into()));
        assert_eq!(
            parts[3],
            Guard::Not(Box::new(Guard::CalledOk("refund".into())))
        );
        let back = serde_json::to_value(&guard).unwrap();
        assert_eq!(serde_json::from_value::<Guard>(back).unwrap(), guard);
    }

    #[test]
    fn constraints_and_confirmations_read_as_written() {
        let flow: Flow = serde_json::from_value(json!({
            "constraints": [
                {"once": "refund"},
                {"before": {"first": "lookup", "then": "refund"}},
                {"never_until": {"tool": "email", "until": {"is_set": "ticket"}}},
                {"require": {"tool": "ticket", "when": {"is_true": "escalated"}}}
            ],
            "confirm": ["email", {"tool": "refund", "when": "always"}],
            "ambient": "block"
        }))
        .unwrap();
        assert_eq!(flow.constraints.len(), 4);
        assert_eq!(flow.confirm[0], Confirm::Always("email".into()));
        assert_eq!(flow.confirm[1].when(), Some(&Guard::Always));
        assert_eq!(flow.ambient, Ambient::Block);
        assert!(
            flow.governs("anything"),
            "ambient: block governs every tool"
        );
    }
}
