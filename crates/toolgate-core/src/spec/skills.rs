//! The `skills:` section: the folders of Agent Skills the gateway serves.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the spec file's skills are: one folder of skill folders, or a list
/// whose entries are a skill folder (a path) or a folder of them (`{dir: ...}`).
/// Paths are relative to the spec file.
///
/// ```yaml
/// skills: {dir: ./skills}          # every folder in ./skills with a SKILL.md
/// # or
/// skills:
///   - ./skills/refund-dispute      # one skill
///   - {dir: ../shared/skills}
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SkillsSection {
    /// One folder of skill folders.
    Dir(SkillsDir),
    /// Several places.
    List(Vec<SkillsEntry>),
}

/// A folder whose subfolders with a `SKILL.md` are each a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillsDir {
    /// The folder, relative to the spec file.
    pub dir: String,
}

/// One entry of a `skills:` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SkillsEntry {
    /// One skill's folder, the one holding its `SKILL.md`.
    Skill(String),
    /// A folder of skill folders.
    Dir(SkillsDir),
}

/// A place `skills:` names, as the loader reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillPlace<'a> {
    /// One skill's folder.
    Skill(&'a str),
    /// A folder of skill folders.
    Dir(&'a str),
}

impl SkillsSection {
    /// Every place it names, in order.
    pub fn places(&self) -> Vec<SkillPlace<'_>> {
        match self {
            SkillsSection::Dir(d) => vec![SkillPlace::Dir(&d.dir)],
            SkillsSection::List(entries) => entries
                .iter()
                .map(|e| match e {
                    SkillsEntry::Skill(path) => SkillPlace::Skill(path),
                    SkillsEntry::Dir(d) => SkillPlace::Dir(&d.dir),
                })
                .collect(),
        }
    }
}
