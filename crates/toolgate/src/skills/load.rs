//! Reading the skill folders a spec file names, safely: only regular files
//! inside each folder are read (a symbolic link, a device or a pipe refuses the
//! skill), hidden entries are skipped, a skill is bounded in files and bytes,
//! and a file swapped between the walk and the read is caught. Every refusal
//! says which path and why; the other skills still load.

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::skill::{
    MAX_SKILL_BYTES, MAX_SKILL_FILES, MAX_SKILL_MD_BYTES, SKILL_MD, Skill, SkillFile, SkillOrigin,
    parse_skill_md, referenced_files,
};
use toolgate_core::spec::{SkillPlace, SkillsSection};

/// A skill read from disk, with the bytes of its files as they were read: what
/// is served is exactly what was checked, whatever happens on disk after.
#[derive(Debug, Clone)]
pub struct LocalSkill {
    /// The skill.
    pub skill: Skill,
    /// Each file's bytes, by path in the skill.
    pub bytes: HashMap<String, Arc<[u8]>>,
}

/// A skill, or a place `skills:` names, that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// The path at fault, as the spec file's folder resolves it.
    pub path: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Loads every skill `section` names, its paths relative to `base` (the spec
/// file's folder): the skills that load, and a problem for each that does not.
pub fn load_skills(section: &SkillsSection, base: &Path) -> (Vec<LocalSkill>, Vec<SkillProblem>) {
    let mut skills: Vec<LocalSkill> = Vec::new();
    let mut problems = Vec::new();
    for place in section.places() {
        let folders = match place {
            SkillPlace::Skill(path) => vec![base.join(path)],
            SkillPlace::Dir(path) => match skill_folders(&base.join(path)) {
                Ok(folders) => folders,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            },
        };
        for folder in folders {
            match load_skill(&folder) {
                Ok(loaded) if skills.iter().any(|s| s.skill.name == loaded.skill.name) => {
                    problems.push(SkillProblem {
                        path: shown(&folder),
                        message: format!(
                            "another folder already holds a skill named `{}`; skill names must be unique",
                            loaded.skill.name
                        ),
                    })
                }
                Ok(loaded) => skills.push(loaded),
                Err(problem) => problems.push(problem),
            }
        }
    }
    (skills, problems)
}

/// The folders in `dir` that hold a `SKILL.md`, by name.
fn skill_folders(dir: &Path) -> Result<Vec<PathBuf>, SkillProblem> {
    let problem = |message: String| SkillProblem {
        path: shown(dir),
        message,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| {
        problem(format!(
            "cannot read the skills folder ({e}); `skills: {{dir: ...}}` names a folder of skill folders"
        ))
    })?;
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| problem(format!("cannot read the skills folder ({e})")))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !hidden && is_dir && path.join(SKILL_MD).symlink_metadata().is_ok() {
            folders.push(path);
        }
    }
    folders.sort();
    Ok(folders)
}

/// Loads the skill in `folder`.
pub fn load_skill(folder: &Path) -> Result<LocalSkill, SkillProblem> {
    let refuse = |path: &Path, message: String| SkillProblem {
        path: shown(path),
        message,
    };
    let root = folder
        .symlink_metadata()
        .map_err(|e| refuse(folder, format!("cannot read the skill's folder ({e})")))?;
    if !root.is_dir() {
        return Err(refuse(
            folder,
            "is not a folder; a skill is a folder holding a SKILL.md".into(),
        ));
    }
    let mut walked = Vec::new();
    walk(folder, "", &mut walked)?;
    let Some(manifest) = walked.iter().position(|(path, _)| path == SKILL_MD) else {
        return Err(refuse(
            folder,
            "has no SKILL.md; a skill's folder holds a SKILL.md with its name, description and instructions".into(),
        ));
    };
    walked.swap(0, manifest);
    walked[1..].sort_by(|a, b| a.0.cmp(&b.0));
    if walked.len() > MAX_SKILL_FILES {
        return Err(refuse(
            folder,
            format!(
                "holds {} files; a skill may hold at most {MAX_SKILL_FILES}",
                walked.len()
            ),
        ));
    }
    let mut budget = MAX_SKILL_BYTES;
    let mut files = Vec::with_capacity(walked.len());
    let mut bytes = HashMap::with_capacity(walked.len());
    for (path, seen) in &walked {
        let full = folder.join(path);
        let limit = if path == SKILL_MD {
            MAX_SKILL_MD_BYTES.min(budget)
        } else {
            budget
        };
        let read = read_file(&full, seen, limit).map_err(|m| refuse(&full, m))?;
        if read.len() as u64 > limit {
            let message = if path == SKILL_MD {
                format!(
                    "is over {MAX_SKILL_MD_BYTES} bytes; move detail into files the instructions link to"
                )
            } else {
                format!(
                    "takes the skill past {MAX_SKILL_BYTES} bytes in all; a skill must be smaller"
                )
            };
            return Err(refuse(&full, message));
        }
        if let Ok(text) = std::str::from_utf8(&read)
            && let Some(found) = toolgate_core::skill::unsafe_text(text)
        {
            return Err(refuse(
                &full,
                format!("holds text a model or a terminal must not be handed ({found}); remove it"),
            ));
        }
        budget -= read.len() as u64;
        files.push(SkillFile::of(path.clone(), &read));
        bytes.insert(path.clone(), Arc::<[u8]>::from(read));
    }
    let manifest_path = folder.join(SKILL_MD);
    let text = std::str::from_utf8(&bytes[SKILL_MD])
        .map_err(|_| refuse(&manifest_path, "is not UTF-8 text".into()))?
        .to_owned();
    let front = parse_skill_md(&text).map_err(|e| refuse(&manifest_path, e.to_string()))?;
    let folder_name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if folder_name != front.name {
        return Err(refuse(
            &manifest_path,
            format!(
                "names the skill `{}` but its folder is `{}`; the Agent Skills format asks that they match",
                toolgate_core::escape_for_terminal(&front.name),
                toolgate_core::escape_for_terminal(folder_name)
            ),
        ));
    }
    let skill = Skill {
        name: front.name.clone(),
        description: front.description.clone(),
        instructions: text,
        files,
        origin: SkillOrigin::Local { dir: shown(folder) },
    };
    for linked in referenced_files(skill.body()) {
        if skill.file(&linked).is_none() {
            return Err(refuse(
                &manifest_path,
                format!(
                    "links to `{}`, which is not a file in the skill's folder; add it or mend the link",
                    toolgate_core::escape_for_terminal(&linked)
                ),
            ));
        }
    }
    Ok(LocalSkill { skill, bytes })
}

/// Every regular file below `dir` (`prefix` its path in the skill), skipping
/// hidden entries; anything else refuses the skill.
fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, Metadata)>) -> Result<(), SkillProblem> {
    let refuse = |path: &Path, message: String| SkillProblem {
        path: shown(path),
        message,
    };
    let entries =
        std::fs::read_dir(dir).map_err(|e| refuse(dir, format!("cannot be read ({e})")))?;
    for entry in entries {
        let entry = entry.map_err(|e| refuse(dir, format!("cannot be read ({e})")))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            return Err(refuse(
                &path,
                "has a name that is not UTF-8; rename it".into(),
            ));
        };
        if name.starts_with('.') {
            continue;
        }
        let meta = path
            .symlink_metadata()
            .map_err(|e| refuse(&path, format!("cannot be read ({e})")))?;
        let inside = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if meta.file_type().is_symlink() {
            return Err(refuse(
                &path,
                "is a symbolic link; a skill serves only the files inside its folder, so copy the file in".into(),
            ));
        }
        if meta.is_dir() {
            walk(&path, &inside, out)?;
        } else if meta.is_file() {
            out.push((inside, meta));
            if out.len() > MAX_SKILL_FILES {
                return Err(refuse(
                    dir,
                    format!(
                        "holds more than {MAX_SKILL_FILES} files; a skill may hold at most that many"
                    ),
                ));
            }
        } else {
            return Err(refuse(
                &path,
                "is not a regular file (a pipe, socket or device); a skill holds only files".into(),
            ));
        }
    }
    Ok(())
}

/// The bytes of the file walked as `seen`, at most `limit` + 1 of them, if the
/// path still names that same file.
fn read_file(path: &Path, seen: &Metadata, limit: u64) -> Result<Vec<u8>, String> {
    let file = open_no_follow(path).map_err(|e| format!("cannot be read ({e})"))?;
    let opened = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !opened.is_file() || !same_file(seen, &opened) {
        return Err("changed while it was being read; load the skills again".into());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    Ok(bytes)
}

/// Opens without following a symbolic link, and without blocking on a pipe
/// swapped in since the walk (the type check after refuses it).
#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.len() == b.len()
}

/// A path as messages show it: without `.` components, terminal-safe.
fn shown(path: &Path) -> String {
    let path: PathBuf = path
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect();
    toolgate_core::escape_for_terminal(&path.display().to_string()).into_owned()
}

/// A cheap fingerprint of the skill folders `section` names: every entry's
/// path, size and modification time (not its bytes), so a watcher can tell a
/// skill changed on disk without reading it. Bounded: a walk stops past
/// [`MAX_SKILL_FILES`] entries a folder.
pub fn skills_fingerprint(section: &SkillsSection, base: &Path) -> String {
    fn visit(dir: &Path, seen: &mut String, budget: &mut usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            let Ok(meta) = path.symlink_metadata() else {
                continue;
            };
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .unwrap_or_default();
            seen.push_str(&format!(
                "{}\0{}\0{}\n",
                path.display(),
                meta.len(),
                modified.as_nanos()
            ));
            if meta.is_dir() {
                visit(&path, seen, budget);
            }
        }
    }
    let mut seen = String::new();
    for place in section.places() {
        let (SkillPlace::Skill(path) | SkillPlace::Dir(path)) = place;
        let mut budget = MAX_SKILL_FILES * 8;
        visit(&base.join(path), &mut seen, &mut budget);
    }
    toolgate_core::sha256_hex(seen)
}
