//! An upstream server's skills (the MCP Skills extension, SEP-2640): each
//! listed entry checked before it is offered, and its files read from the
//! server and verified against the entry's digests.
//!
//! A skill is text a model obeys, pinned like a tool's description. So one whose
//! files cannot be pinned (`dynamic`), that breaks the extension's rules, is over
//! its limits, or names a file outside its own folder is left out, saying why;
//! and bytes that do not match the manifest are never used.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use futures::future::BoxFuture;
use rmcp::model::{ReadResourceRequestParams, ResourceContents, SkillResource, SkillResources};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::broadcast;
use toolgate_core::skill::{
    MAX_SKILL_BYTES, MAX_SKILL_FILES, MAX_SKILL_MD_BYTES, SKILL_MD, Skill, SkillFile, SkillOrigin,
    check_skill_name, parse_skill_md, skill_pin_key,
};
use toolgate_core::{content_hash, escape_for_terminal};

use super::UpstreamEvent;
use crate::skills::SkillFiles;
use crate::store::PinStore;

/// A listed skill that passed every check its entry alone allows.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Manifest {
    /// Its name on the server: the front matter's `name`.
    pub(super) name: String,
    /// Its description, as the entry gives it.
    pub(super) description: String,
    /// The URI of its `SKILL.md`.
    pub(super) uri: String,
    /// Each file by its path in the skill, `SKILL.md` first, then by path.
    pub(super) files: Vec<(String, SkillResource)>,
}

impl Manifest {
    /// The entry of its `SKILL.md`.
    pub(super) fn skill_md(&self) -> &SkillResource {
        &self.files[0].1
    }
}

/// Checks a `skills/list` entry: its name, the extension's rules, that its files
/// can be pinned, its limits, and that every file lies inside the skill's folder.
pub(super) fn check_entry(entry: &rmcp::model::Skill) -> Result<Manifest, String> {
    check_skill_name(entry.name())?;
    entry.validate().map_err(|e| {
        format!(
            "its entry breaks the skills extension's rules ({})",
            escape_for_terminal(&e.to_string())
        )
    })?;
    let SkillResources::Files(listed) = &entry.resources else {
        return Err(
            "its files are `dynamic`: without stable digests it cannot be pinned, so toolgate does not offer it"
                .into(),
        );
    };
    if listed.len() > MAX_SKILL_FILES {
        return Err(format!(
            "its manifest lists {} files; a skill may hold at most {MAX_SKILL_FILES}",
            listed.len()
        ));
    }
    let total = listed
        .iter()
        .fold(0u64, |sum, f| sum.saturating_add(f.size));
    if total > MAX_SKILL_BYTES {
        return Err(format!(
            "its manifest declares {total} bytes in all; a skill may hold at most {MAX_SKILL_BYTES}"
        ));
    }
    let root = entry.uri.strip_suffix(SKILL_MD).ok_or_else(|| {
        format!(
            "its URI `{}` does not end in `/SKILL.md`",
            shown(&entry.uri)
        )
    })?;
    let mut files = Vec::with_capacity(listed.len());
    for file in listed {
        let path = path_in(root, &file.uri)?;
        if files.iter().any(|(p, _)| *p == path) {
            return Err(format!("its manifest lists `{}` twice", shown(&path)));
        }
        files.push((path, file.clone()));
    }
    files.sort_by(|(a, _), (b, _)| (a != SKILL_MD, a).cmp(&(b != SKILL_MD, b)));
    let Some((SKILL_MD, skill_md)) = files.first().map(|(p, f)| (p.as_str(), f)) else {
        return Err("its manifest does not list its `SKILL.md`".into());
    };
    if skill_md.size > MAX_SKILL_MD_BYTES {
        return Err(format!(
            "its SKILL.md is {} bytes; toolgate reads at most {MAX_SKILL_MD_BYTES}",
            skill_md.size
        ));
    }
    Ok(Manifest {
        name: entry.name().to_owned(),
        description: entry.frontmatter.description.clone(),
        uri: entry.uri.clone(),
        files,
    })
}

/// The path of `uri` inside the skill whose folder is `root` (ending in `/`):
/// refused unless it is `root` followed by plain segments, with no dot segment,
/// empty segment, query, fragment or encoded separator, however it is written.
fn path_in(root: &str, uri: &str) -> Result<String, String> {
    let outside = || {
        format!(
            "its manifest lists `{}`, which is not a file inside the skill's folder `{}`",
            shown(uri),
            shown(root)
        )
    };
    let rest = uri.strip_prefix(root).ok_or_else(outside)?;
    if rest.contains(['?', '#', '\\']) {
        return Err(outside());
    }
    let mut segments = Vec::new();
    for raw in rest.split('/') {
        let segment = percent_decoded(raw).ok_or_else(outside)?;
        let bad = segment.is_empty()
            || segment == "."
            || segment == ".."
            || segment.contains(['/', '\\'])
            || segment.chars().any(char::is_control);
        if bad {
            return Err(outside());
        }
        segments.push(segment);
    }
    Ok(segments.join("/"))
}

/// `text` with its `%XX` escapes decoded, if every `%` starts one and the
/// result is UTF-8: a malformed escape is refused, not read as it stands.
fn percent_decoded(text: &str) -> Option<String> {
    let escapes_are_whole = text
        .split('%')
        .skip(1)
        .all(|after| after.len() >= 2 && after.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit));
    let decoded = percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()?;
    escapes_are_whole.then(|| decoded.into_owned())
}

/// The skill `manifest` describes, from the bytes of its `SKILL.md`: verified
/// against the manifest, its front matter read and compared with the entry.
/// Named `server.name` in the catalog.
pub(super) fn skill_of(server: &str, manifest: &Manifest, bytes: &[u8]) -> Result<Skill, String> {
    verify(manifest.skill_md(), bytes)?;
    let text = std::str::from_utf8(bytes).map_err(|_| "its SKILL.md is not UTF-8 text")?;
    let front = parse_skill_md(text).map_err(|e| format!("its {e}"))?;
    if front.name != manifest.name {
        return Err(format!(
            "its SKILL.md names it `{}`, but the server lists it as `{}`",
            shown(&front.name),
            shown(&manifest.name)
        ));
    }
    if front.description != manifest.description.trim() {
        return Err(
            "its SKILL.md's description differs from the one the server lists for it".into(),
        );
    }
    Ok(Skill {
        name: format!("{server}.{}", manifest.name),
        description: front.description,
        instructions: text.to_owned(),
        files: manifest
            .files
            .iter()
            .map(|(path, f)| SkillFile {
                path: path.clone(),
                digest: f.digest.clone(),
                size: f.size,
            })
            .collect(),
        origin: SkillOrigin::Upstream {
            server: server.to_owned(),
            uri: manifest.uri.clone(),
        },
    })
}

/// Refuses bytes that are not what `file`'s manifest entry promises.
fn verify(file: &SkillResource, bytes: &[u8]) -> Result<(), String> {
    file.verify(bytes).map_err(|e| {
        format!(
            "{}; toolgate did not use it: the server sent other bytes than its manifest promises (the skill changed, or the server is faulty)",
            escape_for_terminal(&e.to_string())
        )
    })
}

/// Reads `file` from the server with `resources/read`, verified.
pub(super) async fn fetch(
    peer: &Peer<RoleClient>,
    file: &SkillResource,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let read = peer.read_resource(ReadResourceRequestParams::new(file.uri.clone()));
    let result = match tokio::time::timeout(timeout, read).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => {
            return Err(format!(
                "reading `{}` failed ({})",
                shown(&file.uri),
                escape_for_terminal(&e.to_string())
            ));
        }
        Err(_) => {
            return Err(format!(
                "`{}` was not read within {}",
                shown(&file.uri),
                humantime::format_duration(timeout)
            ));
        }
    };
    let uri_of = |c: &ResourceContents| match c {
        ResourceContents::TextResourceContents { uri, .. }
        | ResourceContents::BlobResourceContents { uri, .. } => Some(uri.clone()),
        _ => None,
    };
    let contents = match result.contents.as_slice() {
        [one] => one,
        many => many
            .iter()
            .find(|c| uri_of(c).as_ref() == Some(&file.uri))
            .ok_or_else(|| format!("the server sent no content for `{}`", shown(&file.uri)))?,
    };
    let bytes = match contents {
        ResourceContents::TextResourceContents { text, .. } => text.clone().into_bytes(),
        ResourceContents::BlobResourceContents { blob, .. } => {
            base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|_| format!("the server sent `{}` as invalid base64", shown(&file.uri)))?
        }
        _ => {
            return Err(format!(
                "the server sent `{}` in a form toolgate does not read",
                shown(&file.uri)
            ));
        }
    };
    verify(file, &bytes)?;
    Ok(bytes)
}

/// An upstream skill's files, read from its server on demand and verified; and
/// whether the operator accepted the skill since it was quarantined.
///
/// A file read is kept: its digest is the manifest's, so it cannot change while
/// this listing stands, and an MCP client's `resources/read` reads it twice
/// (once through the gate's `read_skill`, once for its bytes). The manifest
/// bounds what is kept to `MAX_SKILL_BYTES`.
pub(super) struct UpstreamFiles {
    pub(super) server: String,
    pub(super) peer: Peer<RoleClient>,
    pub(super) files: BTreeMap<String, SkillResource>,
    pub(super) timeout: Duration,
    pub(super) pins: Option<Arc<dyn PinStore>>,
    pub(super) events: broadcast::Sender<UpstreamEvent>,
    /// The files read so far, verified, by path.
    pub(super) fetched: Mutex<HashMap<String, Arc<[u8]>>>,
}

impl UpstreamFiles {
    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<[u8]>>> {
        self.fetched.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SkillFiles for UpstreamFiles {
    fn read<'a>(
        &'a self,
        _skill: &'a Skill,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Arc<[u8]>, String>> {
        Box::pin(async move {
            let file = self
                .files
                .get(path)
                .ok_or_else(|| format!("its manifest lists no file `{}`", shown(path)))?;
            if let Some(bytes) = self.kept().get(path) {
                return Ok(bytes.clone());
            }
            if self.peer.is_transport_closed() {
                return Err(format!(
                    "MCP server `{}` is not connected; try again once it is",
                    self.server
                ));
            }
            let bytes: Arc<[u8]> = fetch(&self.peer, file, self.timeout).await?.into();
            self.kept().insert(path.to_owned(), bytes.clone());
            Ok(bytes)
        })
    }

    fn accepted(&self, skill: &Skill) -> bool {
        is_accepted(self.pins.as_deref(), skill)
    }

    fn released(&self, _skill: &Skill) {
        let _ = self.events.send(UpstreamEvent::ToolsChanged {
            server: self.server.clone(),
        });
    }
}

/// Whether `skill` as it is now is its pin: a change the operator accepted.
pub(super) fn is_accepted(pins: Option<&dyn PinStore>, skill: &Skill) -> bool {
    pins.and_then(|pins| pins.pin(&skill_pin_key(&skill.name)).ok().flatten())
        .is_some_and(|pin| pin.hash == content_hash(&skill.pin_definition()))
}

/// Text from a server, safe to show.
fn shown(text: &str) -> String {
    escape_for_terminal(text).into_owned()
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod tests;
