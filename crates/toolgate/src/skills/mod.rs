//! Agent Skills through the gate: loading the spec file's skill folders, the
//! catalog that holds them beside upstream servers' skills, and `read_skill`,
//! the built-in tool that offers them to every model API.

mod catalog;
mod load;
mod read_skill;

pub use catalog::{SkillEntry, SkillError, SkillFiles, Skills};
pub use load::{LocalSkill, SkillProblem, load_skill, load_skills, skills_fingerprint};
pub use read_skill::ReadSkill;
pub use toolgate_core::skill::*;
