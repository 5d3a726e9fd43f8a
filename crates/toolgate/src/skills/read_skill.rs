//! `read_skill` as a tool the gate runs: a call reads a skill the caller may
//! see (scopes, quarantine) and is audited like any read. An upstream skill's
//! text is sanitized and fenced as untrusted before the model sees it.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use toolgate_core::skill::{READ_SKILL, ReadSkillInput, SKILL_MD, Skill};
use toolgate_core::{
    DynTool, SanitizeOptions, ToolCtx, ToolDescriptor, ToolError, sanitize_output,
};

use super::Skills;

/// The built-in `read_skill` tool over a catalog of skills.
pub struct ReadSkill {
    descriptor: ToolDescriptor,
    skills: Arc<Skills>,
}

impl ReadSkill {
    /// `read_skill` over `skills`, listing those offered now.
    pub fn new(skills: Arc<Skills>) -> ReadSkill {
        ReadSkill {
            descriptor: skills.read_skill_descriptor(),
            skills,
        }
    }
}

impl DynTool for ReadSkill {
    fn descriptor(&self) -> &ToolDescriptor {
        &self.descriptor
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolCtx,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let input: ReadSkillInput = serde_json::from_value(input).map_err(|e| {
                ToolError::invalid_input(format!(
                    "{e}; call `{READ_SKILL}` with {{\"name\": \"a skill's name\"}}, and add \"file\" to read one of its files"
                ))
            })?;
            let principal = ctx.principal();
            let entry = self
                .skills
                .find(principal, &input.name)
                .map_err(|e| ToolError::invalid_input(e.to_string()))?;
            let skill = &entry.skill;
            let Some(path) = input.file.filter(|f| f != SKILL_MD) else {
                return Ok(instructions(skill));
            };
            let bytes = self
                .skills
                .read_file(principal, &input.name, &path)
                .await
                .map_err(|e| match e {
                    super::SkillError::Unreadable { .. } => ToolError::retryable(e.to_string()),
                    other => ToolError::invalid_input(other.to_string()),
                })?;
            let Ok(text) = std::str::from_utf8(&bytes) else {
                return Err(ToolError::invalid_input(format!(
                    "`{path}` of the skill `{}` is not text ({} bytes); only text files can be read here",
                    skill.name,
                    bytes.len()
                )));
            };
            Ok(json!({"skill": skill.name, "file": path, "text": shown(skill, text)}))
        })
    }
}

/// A skill's instructions and the other files it holds.
fn instructions(skill: &Skill) -> Value {
    let files: Vec<&str> = skill
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| *p != SKILL_MD)
        .collect();
    json!({
        "skill": skill.name,
        "description": shown(skill, &skill.description),
        "instructions": shown(skill, skill.body().trim()),
        "files": files,
    })
}

/// Text as the model may see it: a third party's sanitized and fenced.
fn shown(skill: &Skill, text: &str) -> String {
    if skill.is_untrusted() {
        let source = toolgate_core::skill::skill_pin_key(&skill.name);
        sanitize_output(text, &source, &SanitizeOptions::for_output()).text
    } else {
        text.to_owned()
    }
}
