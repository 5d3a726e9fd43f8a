//! `read_skill`: the built-in tool that offers skills to model APIs that do not
//! speak MCP, the way skills are meant to load — progressively. Its description
//! lists each skill's name and description (a few dozen words each); a call
//! with a name returns that skill's instructions and the files it holds, and a
//! call with a `file` returns one of them.

use serde::Deserialize;
use serde_json::json;

use super::Skill;
use crate::{Effect, SanitizeOptions, ToolDescriptor, ToolSource, sanitize_description};

/// The built-in tool's name.
pub const READ_SKILL: &str = "read_skill";

/// Longest description of one skill in `read_skill`'s own description.
const LISTED_DESCRIPTION_CHARS: usize = 300;

/// What a model sends to `read_skill`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadSkillInput {
    /// The skill's name, as listed.
    pub name: String,
    /// A file of the skill, by its path in the skill's folder; without it, the
    /// instructions.
    #[serde(default)]
    pub file: Option<String>,
}

/// One skill as a list item: its name and description, a third party's
/// sanitized, on one line, and marked as its server's.
fn listed(skill: &Skill) -> String {
    let opts = SanitizeOptions::for_description().with_max_chars(LISTED_DESCRIPTION_CHARS);
    let about = sanitize_description(&skill.description, &opts)
        .text
        .replace('\n', " ");
    match &skill.origin {
        super::SkillOrigin::Upstream { server, .. } => format!(
            "- {}: {about} (from the MCP server `{server}`, not the operator)",
            skill.name
        ),
        super::SkillOrigin::Local { .. } => format!("- {}: {about}", skill.name),
    }
}

/// The skills section of a system prompt (`toolgate digest`): what each is
/// for, and that `read_skill` reads it. Empty without skills.
pub fn skills_digest(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Skills\n\nA skill is instructions for a kind of task. Before a task one of these covers, read it with `{READ_SKILL}` and follow it.\n\n"
    );
    for skill in skills {
        out.push_str(&listed(skill));
        out.push('\n');
    }
    out
}

/// `read_skill`'s descriptor, listing `skills` (in the order given). An
/// upstream skill's description is sanitized and marked as its server's. The
/// names are not a schema `enum`: a skill quarantined since, or out of the
/// caller's scopes, is refused with the reason, not as a mismatch.
pub fn read_skill_descriptor<'a>(skills: impl IntoIterator<Item = &'a Skill>) -> ToolDescriptor {
    let mut description = String::from(
        "Read a skill: instructions for a kind of task, written for you to follow. \
         Before doing a task that one of the skills below covers, call this with its `name` \
         and follow the instructions it returns; when they refer to a file of the skill, \
         call this again with that `file`.\n\nSkills:",
    );
    let (mut listed_any, mut untrusted) = (false, false);
    for skill in skills {
        description.push('\n');
        description.push_str(&listed(skill));
        untrusted |= skill.is_untrusted();
        listed_any = true;
    }
    if !listed_any {
        description.push_str(" none yet.");
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill to read, by its name as listed above."},
            "file": {"type": "string", "description": "A file of the skill, by its path in the skill (e.g. `forms/refund.md`); leave out to read the instructions."}
        },
        "required": ["name"],
        "additionalProperties": false
    });
    let mut descriptor = ToolDescriptor::new(
        READ_SKILL,
        description,
        schema,
        Effect::Read,
        ToolSource::Builtin,
    );
    descriptor.title = Some("Read a skill".into());
    // A third party's instructions enter the conversation: the information-flow
    // policy treats the result as untrusted.
    descriptor.output.untrusted = untrusted;
    descriptor
}
