//! Reading a skill through the gate when a client asks by the protocol's own
//! method (MCP's `skills/get` and `resources/read`) rather than by calling
//! `read_skill`: the same call, audited and decided by policy like any read.

use std::sync::Arc;

use serde_json::json;
use toolgate_core::skill::READ_SKILL;
use toolgate_core::{Outcome, Principal, ToolCall};

use super::Gate;

impl Gate {
    /// The skills this gate offers, when it was built with some.
    pub fn skills(&self) -> Option<&Arc<crate::skills::Skills>> {
        self.skills.as_ref()
    }

    /// Reads the skill `name` (its instructions, or its `file`) for
    /// `principal` in conversation `session`, as a `read_skill` call the audit
    /// log records. The skill's own name is what the principal's scopes must
    /// admit: asking through the skills extension needs no scope for the tool.
    pub async fn read_skill(
        &self,
        session: &str,
        principal: &Principal,
        name: &str,
        file: Option<&str>,
    ) -> Outcome {
        let mut arguments = json!({"name": name});
        if let Some(file) = file {
            arguments["file"] = json!(file);
        }
        let mut asking = principal.clone();
        if !asking.has_scope_for(READ_SKILL) {
            asking.scopes.push(READ_SKILL.to_owned());
        }
        let id = format!("skills-{}", uuid::Uuid::new_v4().simple());
        self.call(session, ToolCall::new(id, READ_SKILL, arguments), &asking)
            .await
    }
}
