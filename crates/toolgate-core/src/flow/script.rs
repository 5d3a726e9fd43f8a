//! The `tests:` section of a spec file: scripted conversations, run offline by
//! `toolgate test` against the real gate with mock bindings.
//!
//! ```yaml
//! tests:
//!   - name: a refund waits for the order lookup
//!     events:
//!       - user: I want my money back for ORD-10422
//!       - call: {tool: refund_order, args: {order_id: ORD-10422}}
//!       - expect: {outcome: blocked, message: "until lookup_order has succeeded"}
//! ```
//!
//! A call the policy (or a `confirm:`) sends to a person is approved by the test
//! runner, unless the call says `approval: deny` or `approval: wait`, or the next
//! event expects `outcome: pending_approval` — then it is left waiting.

use std::borrow::Cow;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One scripted conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestScript {
    /// What the test shows, as a sentence; printed on its pass/fail line.
    pub name: String,
    /// The principal that makes the calls (declared under `principals:`; default: the operator).
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// What happens, in order.
    #[serde(default)]
    pub events: Vec<Event>,
}

/// One event of a scripted conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// The user says something (recorded; no model runs).
    User(String),
    /// A tool call, through the gate.
    Call(CallEvent),
    /// The host sets state keys.
    Set(IndexMap<String, Value>),
    /// What must be true now.
    Expect(Expect),
}

/// `call: {tool, args}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallEvent {
    /// The tool's name.
    pub tool: String,
    /// The arguments (default `{}`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub args: Map<String, Value>,
    /// What the person asked to approve it answers (default `approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// How the test runner answers an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Approve it, and run the call.
    Approve,
    /// Deny it: the call's outcome is `denied`.
    Deny,
    /// Leave it waiting: the call's outcome is `pending_approval`.
    Wait,
}

/// `expect: {...}`: every key given must match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Tools that may run now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed: Vec<String>,
    /// Tools that are blocked now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<String>,
    /// Exactly the active steps (in any order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<Vec<String>>,
    /// Exactly the done steps (in any order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Vec<String>>,
    /// State keys and their values (`null`: not set).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub state: IndexMap<String, Value>,
    /// How the last call ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<ExpectedOutcome>,
    /// Text the last call's message to the model contains (its value, or why it was refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Expect {
    /// Whether it checks anything.
    pub fn is_empty(&self) -> bool {
        self == &Expect::default()
    }
}

/// How a call ended, as a test expects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedOutcome {
    /// The tool ran and succeeded.
    Ok,
    /// The call failed (bad arguments, unknown tool, the tool failed).
    Error,
    /// The call may not run: policy, a person, or the flow (`blocked` is narrower).
    Denied,
    /// The flow refused the call.
    Blocked,
    /// The call waits for a person's approval.
    PendingApproval,
}

impl ExpectedOutcome {
    /// The word a script writes for this outcome (`ok`, `pending_approval`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExpectedOutcome::Ok => "ok",
            ExpectedOutcome::Error => "error",
            ExpectedOutcome::Denied => "denied",
            ExpectedOutcome::Blocked => "blocked",
            ExpectedOutcome::PendingApproval => "pending_approval",
        }
    }
}

impl Event {
    /// The event's kind, as written: `user`, `call`, `set`, `expect`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::User(_) => "user",
            Event::Call(_) => "call",
            Event::Set(_) => "set",
            Event::Expect(_) => "expect",
        }
    }
}

impl JsonSchema for Event {
    fn schema_name() -> Cow<'static, str> {
        "Event".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let call = generator.subschema_for::<CallEvent>();
        let set = generator.subschema_for::<IndexMap<String, Value>>();
        let expect = generator.subschema_for::<Expect>();
        json_schema!({
            "description": "One event: `user: TEXT`, `call: {tool, args}`, `set: {KEY: VALUE}` or `expect: {...}`.",
            "type": "object",
            "properties": {
                "user": {"type": "string", "description": "The user says something (recorded; no model runs)."},
                "call": call,
                "set": set,
                "expect": expect,
            },
            "additionalProperties": false,
            "minProperties": 1,
            "maxProperties": 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_script_reads_as_written() {
        let script: TestScript = serde_json::from_value(json!({
            "name": "refund waits",
            "as": "support_bot",
            "events": [
                {"user": "refund please"},
                {"call": {"tool": "refund", "args": {"id": 1}, "approval": "wait"}},
                {"set": {"verified": true}},
                {"expect": {"outcome": "pending_approval", "active": ["refund"]}}
            ]
        }))
        .unwrap();
        assert_eq!(script.principal.as_deref(), Some("support_bot"));
        assert_eq!(
            script.events.iter().map(Event::kind).collect::<Vec<_>>(),
            ["user", "call", "set", "expect"]
        );
        let Event::Expect(expect) = &script.events[3] else {
            panic!()
        };
        assert_eq!(expect.outcome, Some(ExpectedOutcome::PendingApproval));
        assert!(!expect.is_empty());
        assert!(Expect::default().is_empty());
    }
}
