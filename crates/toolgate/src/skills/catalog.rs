//! The skills a gateway offers: its own, read from the spec file's folders, and
//! those of upstream MCP servers, each with whether it is quarantined. Every
//! lookup is by principal: a skill outside a principal's scopes does not exist
//! for it, and a quarantined one is not offered to anyone.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use futures::future::BoxFuture;
use toolgate_core::skill::{Skill, SkillOrigin, skill_pin_key};
use toolgate_core::{Principal, ToolDescriptor};

use super::load::LocalSkill;

/// Reads the files of skills from where they live.
pub trait SkillFiles: Send + Sync {
    /// The bytes of `path` in `skill`, checked against the skill's manifest.
    fn read<'a>(
        &'a self,
        skill: &'a Skill,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Arc<[u8]>, String>>;

    /// Whether the operator accepted `skill` as it is now since it was
    /// quarantined: asked when a quarantined skill is read.
    fn accepted(&self, _skill: &Skill) -> bool {
        false
    }

    /// Called once `skill` was released from quarantine, so its owner can
    /// offer it again.
    fn released(&self, _skill: &Skill) {}
}

/// A local skill's files: the bytes read when it was loaded.
struct LocalFiles(HashMap<String, Arc<[u8]>>);

impl SkillFiles for LocalFiles {
    fn read<'a>(&'a self, _: &'a Skill, path: &'a str) -> BoxFuture<'a, Result<Arc<[u8]>, String>> {
        let found = self.0.get(path).cloned();
        Box::pin(async move { found.ok_or_else(|| format!("the skill has no file `{path}`")) })
    }
}

/// One skill in the catalog.
#[derive(Clone)]
pub struct SkillEntry {
    /// The skill.
    pub skill: Skill,
    /// Why it is withheld, when it changed since it was pinned (or its pin
    /// could not be checked): it is neither listed nor served until accepted.
    pub quarantine: Option<String>,
    files: Arc<dyn SkillFiles>,
}

impl SkillEntry {
    /// An upstream server's skill whose files `files` reads.
    pub fn new(skill: Skill, quarantine: Option<String>, files: Arc<dyn SkillFiles>) -> Self {
        SkillEntry {
            skill,
            quarantine,
            files,
        }
    }

    /// A skill of the spec file, served from the bytes it was loaded with.
    fn local(loaded: LocalSkill) -> Self {
        SkillEntry {
            skill: loaded.skill,
            quarantine: None,
            files: Arc::new(LocalFiles(loaded.bytes)),
        }
    }

    /// The bytes of `path` in the skill.
    pub async fn read(&self, path: &str) -> Result<Arc<[u8]>, String> {
        self.files.read(&self.skill, path).await
    }
}

impl std::fmt::Debug for SkillEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillEntry")
            .field("skill", &self.skill.name)
            .field("quarantine", &self.quarantine)
            .finish()
    }
}

/// Why a skill cannot be read. Messages say what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// No skill in the caller's view has that name.
    #[error("no skill is named `{name}`{}", hint(suggestions))]
    Unknown {
        /// The name asked for.
        name: String,
        /// Offered names close to it, best first.
        suggestions: Vec<String>,
    },
    /// The skill changed upstream since it was pinned.
    #[error(
        "the skill `{name}` is quarantined and was not read: {reason}. The operator must review the change (`toolgate pins diff {key}`) and accept it (`toolgate pins accept {key}`)",
        key = skill_pin_key(name)
    )]
    Quarantined {
        /// The skill.
        name: String,
        /// Why it is withheld.
        reason: String,
    },
    /// The skill holds no such file.
    #[error("the skill `{name}` has no file `{path}`; its files are: {}", files.join(", "))]
    NoFile {
        /// The skill.
        name: String,
        /// The path asked for.
        path: String,
        /// The files it does hold.
        files: Vec<String>,
    },
    /// The file could not be read from where it lives.
    #[error("the file `{path}` of the skill `{name}` could not be read: {problem}")]
    Unreadable {
        /// The skill.
        name: String,
        /// The file.
        path: String,
        /// What went wrong.
        problem: String,
    },
}

fn hint(suggestions: &[String]) -> String {
    match suggestions.first() {
        Some(best) => format!("; did you mean `{best}`?"),
        None => "; `read_skill`'s description lists the skills".into(),
    }
}

/// The catalog of skills. Cheap to share; upstream entries change as servers
/// list theirs.
#[derive(Default)]
pub struct Skills {
    entries: RwLock<Arc<Vec<SkillEntry>>>,
}

impl Skills {
    /// A catalog of the spec file's own skills.
    pub fn new(local: Vec<LocalSkill>) -> Skills {
        Skills {
            entries: RwLock::new(Arc::new(local.into_iter().map(SkillEntry::local).collect())),
        }
    }

    /// Replaces the spec file's own skills with `local` (a reloaded spec's).
    pub fn set_local(&self, local: Vec<LocalSkill>) {
        let mut current = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        let upstream = current.iter().filter(|e| e.skill.is_untrusted()).cloned();
        let next: Vec<SkillEntry> = local
            .into_iter()
            .map(SkillEntry::local)
            .chain(upstream)
            .collect();
        *current = Arc::new(next);
    }

    /// Replaces the skills of the upstream server `server` with `entries`.
    pub fn set_upstream(&self, server: &str, entries: Vec<SkillEntry>) {
        let mut current = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        let mut next: Vec<SkillEntry> = current
            .iter()
            .filter(|e| !matches!(&e.skill.origin, SkillOrigin::Upstream { server: s, .. } if s == server))
            .cloned()
            .collect();
        for entry in entries {
            if next.iter().any(|e| e.skill.name == entry.skill.name) {
                tracing::warn!(skill = %entry.skill.name, "another skill has this name; left out");
                continue;
            }
            next.push(entry);
        }
        *current = Arc::new(next);
    }

    /// Lifts the quarantine of the skill `name` (its change was accepted).
    /// Returns whether it was quarantined.
    pub fn release(&self, name: &str) -> bool {
        let mut current = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = current
            .iter()
            .position(|e| e.skill.name == name && e.quarantine.is_some())
        else {
            return false;
        };
        let mut next = current.as_ref().clone();
        next[at].quarantine = None;
        *current = Arc::new(next);
        true
    }

    /// Every skill, quarantined ones included, in catalog order.
    pub fn entries(&self) -> Arc<Vec<SkillEntry>> {
        self.entries
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the catalog holds no skill at all.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The skills offered to `principal`: in its scopes and not quarantined.
    pub fn offered(&self, principal: &Principal) -> Vec<Skill> {
        self.entries()
            .iter()
            .filter(|e| e.quarantine.is_none() && principal.has_scope_for(&e.skill.name))
            .map(|e| e.skill.clone())
            .collect()
    }

    /// The skill `name` as `principal` may read it.
    pub fn find(&self, principal: &Principal, name: &str) -> Result<SkillEntry, SkillError> {
        let entries = self.entries();
        let found = entries
            .iter()
            .find(|e| e.skill.name == name && principal.has_scope_for(name));
        match found {
            Some(entry) => match &entry.quarantine {
                Some(_) if entry.files.accepted(&entry.skill) => {
                    self.release(name);
                    entry.files.released(&entry.skill);
                    let mut entry = entry.clone();
                    entry.quarantine = None;
                    Ok(entry)
                }
                Some(reason) => Err(SkillError::Quarantined {
                    name: name.to_owned(),
                    reason: reason.clone(),
                }),
                None => Ok(entry.clone()),
            },
            None => {
                let offered = self.offered(principal);
                Err(SkillError::Unknown {
                    name: name.to_owned(),
                    suggestions: toolgate_core::closest_names(
                        name,
                        offered.iter().map(|s| s.name.as_str()),
                    ),
                })
            }
        }
    }

    /// The bytes of `path` in the skill `name`, as `principal` may read it.
    pub async fn read_file(
        &self,
        principal: &Principal,
        name: &str,
        path: &str,
    ) -> Result<Arc<[u8]>, SkillError> {
        let entry = self.find(principal, name)?;
        if entry.skill.file(path).is_none() {
            return Err(SkillError::NoFile {
                name: name.to_owned(),
                path: path.to_owned(),
                files: entry.skill.files.iter().map(|f| f.path.clone()).collect(),
            });
        }
        entry
            .read(path)
            .await
            .map_err(|problem| SkillError::Unreadable {
                name: name.to_owned(),
                path: path.to_owned(),
                problem,
            })
    }

    /// `read_skill`'s descriptor over the skills offered now.
    pub fn read_skill_descriptor(&self) -> ToolDescriptor {
        toolgate_core::skill::read_skill_descriptor(&self.offered(&Principal::operator()))
    }
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries().iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use toolgate_core::skill::SkillFile;

    use super::*;

    /// Files of an upstream skill whose acceptance the test decides.
    #[derive(Default)]
    struct Pinned {
        accepted: AtomicBool,
        released: AtomicUsize,
    }

    impl SkillFiles for Pinned {
        fn read<'a>(
            &'a self,
            _: &'a Skill,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Arc<[u8]>, String>> {
            Box::pin(async { Ok(Arc::from(&b"text"[..])) })
        }

        fn accepted(&self, _: &Skill) -> bool {
            self.accepted.load(Ordering::SeqCst)
        }

        fn released(&self, _: &Skill) {
            self.released.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn upstream(name: &str) -> Skill {
        Skill {
            name: name.into(),
            description: "Handle a refund dispute.".into(),
            instructions: "---\nname: refund-dispute\n---\n".into(),
            files: vec![SkillFile::of("SKILL.md", b"text")],
            origin: SkillOrigin::Upstream {
                server: "desk".into(),
                uri: "skill://refund-dispute/SKILL.md".into(),
            },
        }
    }

    #[test]
    fn a_quarantined_upstream_skill_is_refused_with_the_pins_hint_until_its_change_is_accepted() {
        let skills = Skills::default();
        let files = Arc::new(Pinned::default());
        let reason = "MCP server `desk` changed its instructions since it was pinned at T";
        let entry = SkillEntry::new(
            upstream("desk.refund-dispute"),
            Some(reason.into()),
            files.clone(),
        );
        skills.set_upstream("desk", vec![entry]);
        let operator = Principal::operator();
        assert!(skills.offered(&operator).is_empty());
        let refused = skills
            .find(&operator, "desk.refund-dispute")
            .unwrap_err()
            .to_string();
        assert_eq!(
            refused,
            format!(
                "the skill `desk.refund-dispute` is quarantined and was not read: {reason}. The operator must review the change (`toolgate pins diff skill:desk.refund-dispute`) and accept it (`toolgate pins accept skill:desk.refund-dispute`)"
            )
        );
        files.accepted.store(true, Ordering::SeqCst);
        let found = skills.find(&operator, "desk.refund-dispute").unwrap();
        assert_eq!(found.quarantine, None);
        assert_eq!(files.released.load(Ordering::SeqCst), 1);
        assert_eq!(skills.offered(&operator).len(), 1);
        assert!(!skills.release("desk.refund-dispute"), "released once only");
    }
}
