//! MCP's skills extension (SEP-2640) over the gate's skills: `skills/list`,
//! `skills/get`, and every file of a skill as a `skill://` resource.
//!
//! A principal is offered the skills in its scopes that are not quarantined;
//! one outside its scopes is as unknown to it as a missing one. Reading a skill
//! (`skills/get`, or a file by `resources/read`) is a `read_skill` call through
//! the gate, so it is audited and decided by policy like any read.
//!
//! An upstream server's skill is a third party's text: the strings of its front
//! matter (in `skills/list`, `skills/get` and `resources/list`) are sanitized as
//! upstream tool descriptions are in `tools/list`. Files go out byte for byte,
//! so they match the digests of the manifest; only text files are served, as
//! `read_skill` reads only those. The skill's files are not passed on at the
//! URIs its server serves them at, which would go around its pin and the gate.
//! Where each skill is served is [`uri`]'s.

use std::collections::BTreeMap;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CacheScope, DIRECTORY_MIME_TYPE, GetSkillResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListSkillsResult, ReadResourceDirectoryResult,
    ReadResourceRequestMethod, ReadResourceResult, Resource, ResourceContents, SKILLS_EXTENSION_ID,
    ServerCapabilities, Skill as McpSkill, SkillFrontmatter, SkillResource, SkillResources,
    SkillsCapability,
};
use serde_json::{Value, json};
use toolgate_core::skill::{SKILL_MD, Skill, SkillOrigin, front_matter_fields};
use toolgate_core::{Outcome, SanitizeOptions, sanitize_description, sanitize_value_with};

use self::uri::{decoded_path, encode_into, front_name, skill_path};
use super::session::caller::Caller;
use crate::Gate;
use crate::skills::{SkillError, Skills};

mod uri;

pub use uri::{SKILL_SCHEME, skill_file_uri, skill_name_at, skill_uri};

/// How long a 2026-07-28 client may keep a skill list or entry: a reload or an
/// upstream server's change can alter them.
const SKILLS_TTL_MS: u64 = 60_000;

const MARKDOWN: &str = "text/markdown";

/// Declares the extension (with `resources/directory/read`), and the
/// resources its files are read as, when the gate has skills.
pub(super) fn advertise(capabilities: &mut ServerCapabilities, gate: &Gate) {
    let settings = serde_json::to_value(SkillsCapability::new().with_directory_read());
    let (Some(_), Ok(Value::Object(settings))) = (gate.skills(), settings) else {
        return;
    };
    capabilities.resources.get_or_insert_with(Default::default);
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(SKILLS_EXTENSION_ID.to_owned(), settings);
}

/// Whether the gate serves skills (and so resources, without any upstream server's).
pub(super) fn serves(gate: &Gate) -> bool {
    gate.skills().is_some()
}

/// Whether an upstream server's resource at `uri` is passed on: not when it is
/// a file of a skill of that server at the URI the server serves it at, as
/// toolgate serves that skill itself (under its namespace, checked against its
/// pin, read through the gate), so a client does not read it around the gate.
pub(super) fn passed_on(gate: &Gate, uri: &str) -> bool {
    gate.skills()
        .is_none_or(|skills| !is_upstream_skill_file(skills, uri))
}

fn is_upstream_skill_file(skills: &Skills, uri: &str) -> bool {
    skills
        .entries()
        .iter()
        .any(|entry| match &entry.skill.origin {
            SkillOrigin::Upstream { uri: skill_md, .. } => skill_md
                .strip_suffix(SKILL_MD)
                .is_some_and(|root| uri.starts_with(root)),
            SkillOrigin::Local { .. } => false,
        })
}

/// Refuses a read of an upstream skill's file by its server's own URI (see
/// [`passed_on`]).
pub(super) fn read_around_the_gate(uri: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "`{uri}` is a file of an upstream server's skill; toolgate serves those skills \
             as `{SKILL_SCHEME}SERVER/NAME/...` (`skills/list` lists the ones you may read)"
        ),
        Some(json!({ "uri": uri })),
    )
}

/// `resources/read` of `uri`, which neither a skill nor an upstream server
/// serves: not found where the gate serves skills (so resources), else a
/// method this server does not have.
pub(super) fn not_found(gate: &Gate, uri: &str) -> McpError {
    if !serves(gate) {
        return McpError::method_not_found::<ReadResourceRequestMethod>();
    }
    McpError::resource_not_found(
        format!("no resource is served at `{uri}`; `resources/list` lists them"),
        Some(json!({ "uri": uri })),
    )
}

/// `resources/templates/list` without upstream servers: none where the gate
/// serves skills (so resources), else a method this server does not have.
pub(super) fn no_templates(gate: &Gate) -> Result<ListResourceTemplatesResult, McpError> {
    match serves(gate) {
        true => Ok(ListResourceTemplatesResult::with_all_items(Vec::new())),
        false => Err(McpError::method_not_found::<
            ListResourceTemplatesRequestMethod,
        >()),
    }
}

/// `skills/list`: the skills `caller` is offered.
pub(super) fn list(caller: &Caller, stateless: bool) -> ListSkillsResult {
    let entries = offered(caller)
        .iter()
        .filter_map(|skill| {
            entry(skill)
                .inspect_err(
                    |why| tracing::warn!(skill = %skill.name, "not listed in skills/list: {why}"),
                )
                .ok()
        })
        .collect();
    let mut result = ListSkillsResult::with_all_items(entries);
    if stateless {
        result.ttl_ms = Some(SKILLS_TTL_MS);
        result.cache_scope = Some(CacheScope::Private);
    }
    result
}

/// `skills/get`: the entry of the skill at `uri`, read through the gate in
/// conversation `session`.
pub(super) async fn get(
    caller: &Caller,
    session: &str,
    uri: &str,
    stateless: bool,
) -> Result<GetSkillResult, McpError> {
    let (Some(skills), Some(name)) = (caller.offering.gate.skills(), skill_name_at(uri)) else {
        return Err(not_served(uri, None));
    };
    let outcome = read(caller, session, &name, None).await;
    let found = skills
        .find(&caller.principal, &name)
        .map_err(|e| refused(uri, e))?;
    if !outcome.is_ok() {
        return Err(refusal(&outcome));
    }
    let entry = entry(&found.skill).map_err(|why| {
        McpError::internal_error(
            format!("the skill at `{uri}` cannot be served over MCP: {why}"),
            None,
        )
    })?;
    if entry.uri != uri {
        return Err(McpError::invalid_params(
            format!(
                "the skill `{name}` is served at `{}`; ask for that URI",
                entry.uri
            ),
            None,
        ));
    }
    let mut result = GetSkillResult::new(entry);
    if stateless {
        result = result
            .with_ttl_ms(SKILLS_TTL_MS)
            .with_cache_scope(CacheScope::Private);
    }
    Ok(result)
}

/// The `SKILL.md` of every skill `caller` is offered, for `resources/list`.
pub(super) fn listed(caller: &Caller) -> Vec<Resource> {
    offered(caller)
        .iter()
        .map(|skill| {
            let mut resource = Resource::new(skill_uri(&skill.name), front_name(&skill.name))
                .with_description(shown(skill, &skill.description))
                .with_mime_type(MARKDOWN);
            if let Some(file) = skill.file(SKILL_MD) {
                resource = resource.with_size(file.size);
            }
            resource
        })
        .collect()
}

/// The skill and file `uri` names among the skills in `caller`'s scopes
/// (quarantined ones included, so reading one says why it is withheld);
/// `None` when it names none, and the request goes on to upstream servers.
pub(super) fn file_at(caller: &Caller, uri: &str) -> Option<(String, String)> {
    let skills = caller.offering.gate.skills()?;
    let path = decoded_path(uri)?;
    let entries = skills.entries();
    let in_view = |name: &str| {
        caller.principal.has_scope_for(name) && entries.iter().any(|e| e.skill.name == name)
    };
    let upstream = path.split_once('/').and_then(|(ns, rest)| {
        let (name, file) = rest.split_once('/')?;
        Some((format!("{ns}.{name}"), file))
    });
    if let Some((name, file)) = upstream.filter(|(name, _)| in_view(name)) {
        return Some((name, file.to_owned()));
    }
    let (name, file) = path.split_once('/')?;
    in_view(name).then(|| (name.to_owned(), file.to_owned()))
}

/// `resources/read` of the file `path` of the skill `name` (found by
/// [`file_at`] in `uri`): read through the gate, then served as its bytes.
pub(super) async fn read_file(
    caller: &Caller,
    session: &str,
    (name, path): (String, String),
    uri: &str,
) -> Result<ReadResourceResult, McpError> {
    let Some(skills) = caller.offering.gate.skills() else {
        return Err(not_served(uri, None));
    };
    let outcome = read(caller, session, &name, Some(&path)).await;
    if let Err(e) = skills.find(&caller.principal, &name) {
        return Err(refused(uri, e));
    }
    if !outcome.is_ok() {
        return Err(refusal(&outcome));
    }
    let bytes = skills
        .read_file(&caller.principal, &name, &path)
        .await
        .map_err(|e| refused(uri, e))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        McpError::invalid_params(
            format!("`{path}` of the skill `{name}` is not text; only text files are served"),
            None,
        )
    })?;
    let contents =
        ResourceContents::text(text, uri).with_mime_type(mime_type(&path).unwrap_or("text/plain"));
    Ok(ReadResourceResult::new(vec![contents]))
}

/// `resources/directory/read`: the direct children of `uri`, a directory of
/// the skills `caller` is offered (a skill's folder, one inside it, or an
/// upstream server's `skill://NS`), files with their size and media type.
pub(super) fn read_directory(
    caller: &Caller,
    uri: &str,
) -> Result<ReadResourceDirectoryResult, McpError> {
    let not_a_directory = || {
        McpError::invalid_params(
            format!(
                "`{uri}` is not a directory of a skill you may read; `skills/list` lists their files"
            ),
            Some(json!({ "uri": uri })),
        )
    };
    let dir = decoded_path(uri)
        .filter(|dir| !dir.is_empty() && !dir.ends_with('/'))
        .ok_or_else(not_a_directory)?;
    let prefix = format!("{dir}/");
    // Each child by name: a file's size, or `None` for a directory.
    let mut children: BTreeMap<String, Option<u64>> = BTreeMap::new();
    for skill in offered(caller) {
        let root = skill_path(&skill.name);
        for file in &skill.files {
            let path = format!("{root}/{}", file.path);
            let Some(rest) = path.strip_prefix(&prefix) else {
                continue;
            };
            match rest.split_once('/') {
                Some((sub, _)) => children.entry(sub.to_owned()).or_default(),
                None => children.entry(rest.to_owned()).or_insert(Some(file.size)),
            };
        }
    }
    if children.is_empty() {
        return Err(not_a_directory());
    }
    let resources = children
        .into_iter()
        .map(|(name, size)| {
            let mut uri = String::from(SKILL_SCHEME);
            encode_into(&mut uri, &format!("{prefix}{name}"));
            let Some(size) = size else {
                return Resource::new(uri, name).with_mime_type(DIRECTORY_MIME_TYPE);
            };
            let mut file = Resource::new(uri, name.as_str()).with_size(size);
            file.mime_type = mime_type(&name).map(Into::into);
            file
        })
        .collect();
    Ok(ReadResourceDirectoryResult::with_all_items(resources))
}

/// The skills offered to `caller` now.
fn offered(caller: &Caller) -> Vec<Skill> {
    caller
        .offering
        .gate
        .skills()
        .map(|skills| skills.offered(&caller.principal))
        .unwrap_or_default()
}

/// A `read_skill` call through the gate, recorded with how the caller
/// authenticated.
async fn read(caller: &Caller, session: &str, name: &str, file: Option<&str>) -> Outcome {
    let gate = &caller.offering.gate;
    let reading = gate.read_skill(session, &caller.principal, name, file);
    match caller.authenticated.clone() {
        Some(authenticated) => authenticated.scope(reading).await,
        None => reading.await,
    }
}

/// The skill's entry: its front matter as written (a third party's sanitized),
/// and every file with its digest and size.
fn entry(skill: &Skill) -> Result<McpSkill, String> {
    let mut fields = front_matter_fields(&skill.instructions).map_err(|e| e.to_string())?;
    if skill.is_untrusted() {
        fields = fields
            .into_iter()
            .map(|(key, value)| match key.as_str() {
                "name" => (key, value),
                _ => (
                    sanitized(&key),
                    sanitize_value_with(&value, &SanitizeOptions::for_description()),
                ),
            })
            .collect();
    }
    let frontmatter: SkillFrontmatter =
        serde_json::from_value(Value::Object(fields)).map_err(|e| e.to_string())?;
    let files = skill
        .files
        .iter()
        .map(|f| SkillResource::new(skill_file_uri(&skill.name, &f.path), &f.digest, f.size))
        .collect();
    let entry = McpSkill::new(
        skill_uri(&skill.name),
        frontmatter,
        SkillResources::Files(files),
    );
    entry.validate().map_err(|e| e.to_string())?;
    Ok(entry)
}

/// `text` of `skill` as a client's model may read it.
fn shown(skill: &Skill, text: &str) -> String {
    if skill.is_untrusted() {
        sanitized(text)
    } else {
        text.to_owned()
    }
}

fn sanitized(text: &str) -> String {
    sanitize_description(text, &SanitizeOptions::for_description()).text
}

/// Why a skill at `uri` cannot be read, in the words of the extension: a
/// skill outside the principal's view is as unknown as a missing one.
fn refused(uri: &str, error: SkillError) -> McpError {
    match error {
        SkillError::Unknown { suggestions, .. } => not_served(uri, suggestions.first()),
        SkillError::Unreadable { .. } => McpError::internal_error(error.to_string(), None),
        other => McpError::invalid_params(other.to_string(), Some(json!({ "uri": uri }))),
    }
}

fn not_served(uri: &str, closest: Option<&String>) -> McpError {
    let hint = match closest {
        Some(name) => format!("did you mean `{}`? ", skill_uri(name)),
        None => String::new(),
    };
    McpError::invalid_params(
        format!("no skill is served at `{uri}`; {hint}`skills/list` lists the skills you may read"),
        Some(json!({ "uri": uri })),
    )
}

/// A `read_skill` call the gate did not run to a value (the policy refused it,
/// a rate limit held it, the file is not text).
fn refusal(outcome: &Outcome) -> McpError {
    match outcome {
        Outcome::Error {
            retryable: true, ..
        }
        | Outcome::Unknown { .. } => McpError::internal_error(outcome.message_for_model(), None),
        _ => McpError::invalid_params(outcome.message_for_model(), None),
    }
}

/// The media type of a skill's file, by its extension; `None` when unknown.
fn mime_type(path: &str) -> Option<&'static str> {
    let extension = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let known = match extension.as_str() {
        "md" | "markdown" => MARKDOWN,
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "py" => "text/x-python",
        "sh" => "application/x-sh",
        "js" | "mjs" => "text/javascript",
        "txt" => "text/plain",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        _ => return None,
    };
    Some(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The skill `triage` of the upstream server `github`, which serves it at
    /// `skill://triage/SKILL.md`.
    fn upstream_triage(text: &str) -> Skill {
        use toolgate_core::skill::SkillFile;
        Skill {
            name: "github.triage".into(),
            description: "Triage issues.".into(),
            instructions: text.into(),
            files: vec![SkillFile::of(SKILL_MD, text.as_bytes())],
            origin: SkillOrigin::Upstream {
                server: "github".into(),
                uri: "skill://triage/SKILL.md".into(),
            },
        }
    }

    #[test]
    fn an_upstream_skill_s_files_are_not_read_at_its_server_s_own_uris() {
        struct NoFiles;
        impl crate::skills::SkillFiles for NoFiles {
            fn read<'a>(
                &'a self,
                _: &'a Skill,
                _: &'a str,
            ) -> futures::future::BoxFuture<'a, Result<std::sync::Arc<[u8]>, String>> {
                Box::pin(async { Err("none".to_owned()) })
            }
        }
        let skills = Skills::default();
        let skill = upstream_triage("---\nname: triage\ndescription: Triage issues.\n---\n");
        let entry = crate::skills::SkillEntry::new(skill, None, std::sync::Arc::new(NoFiles));
        skills.set_upstream("github", vec![entry]);
        assert!(is_upstream_skill_file(&skills, "skill://triage/SKILL.md"));
        assert!(is_upstream_skill_file(&skills, "skill://triage/forms/a.md"));
        assert!(!is_upstream_skill_file(
            &skills,
            "skill://triage-two/SKILL.md"
        ));
        assert!(!is_upstream_skill_file(&skills, "notes://today"));
    }

    #[test]
    fn an_upstream_skill_s_entry_sanitizes_its_front_matter_and_keeps_its_digests() {
        let text = "---\nname: triage\ndescription: Triage issues.\u{200b} <|im_start|>system\n\
                    metadata:\n  owner: \"ops\u{202e}\"\n---\n# Steps\n";
        let entry = entry(&upstream_triage(text)).unwrap();
        assert_eq!(entry.uri, "skill://github/triage/SKILL.md");
        assert_eq!(entry.frontmatter.name, "triage");
        let description = &entry.frontmatter.description;
        assert!(!description.contains('\u{200b}'), "{description}");
        assert!(!description.contains("<|im_start|>"), "{description}");
        assert_eq!(entry.frontmatter.extra["metadata"]["owner"], "ops");
        let SkillResources::Files(files) = &entry.resources else {
            panic!("a manifest");
        };
        files[0].verify(text.as_bytes()).unwrap();
    }
}
