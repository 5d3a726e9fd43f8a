//! Where the gate's skills are served: a skill of the spec file at
//! `skill://NAME/`, the skill `NAME` of the upstream server `NS` (in the
//! catalog as `NS.NAME`) at `skill://NS/NAME/`, and each file under that root.
//! The one mapping between catalog names and served URIs.

use toolgate_core::skill::SKILL_MD;

/// The scheme of the URIs skills are served at.
pub const SKILL_SCHEME: &str = "skill://";

/// The path a skill is served under: `NAME`, or `NS/NAME` for `NS.NAME`.
pub(super) fn skill_path(name: &str) -> String {
    name.replacen('.', "/", 1)
}

/// Where the skill `name` is served: `skill://NAME/SKILL.md` for a skill of the
/// spec file, `skill://NS/NAME/SKILL.md` for the skill `NAME` of the upstream
/// server `NS` (in the catalog as `NS.NAME`).
///
/// ```
/// use toolgate::mcp::server::skill_uri;
/// assert_eq!(skill_uri("refund-dispute"), "skill://refund-dispute/SKILL.md");
/// assert_eq!(skill_uri("github.triage"), "skill://github/triage/SKILL.md");
/// ```
pub fn skill_uri(name: &str) -> String {
    skill_file_uri(name, SKILL_MD)
}

/// The URI of the file at `path` in the skill `name` (see [`skill_uri`]).
pub fn skill_file_uri(name: &str, path: &str) -> String {
    let mut uri = String::from(SKILL_SCHEME);
    encode_into(&mut uri, &skill_path(name));
    uri.push('/');
    encode_into(&mut uri, path);
    uri
}

/// The catalog name of the skill whose `SKILL.md` is at `uri`: the inverse of
/// [`skill_uri`]. `None` for a URI that names no skill.
pub fn skill_name_at(uri: &str) -> Option<String> {
    let path = decoded_path(uri)?;
    let skill = path.strip_suffix(SKILL_MD)?.strip_suffix('/')?;
    let segments: Vec<&str> = skill.split('/').collect();
    if segments.iter().any(|s| s.is_empty() || s.contains('.')) {
        return None;
    }
    match segments.as_slice() {
        [name] => Some((*name).to_owned()),
        [ns, name] => Some(format!("{ns}.{name}")),
        _ => None,
    }
}

/// The name a skill's front matter gives it: the last segment of its URI.
pub(super) fn front_name(name: &str) -> &str {
    name.split_once('.').map_or(name, |(_, name)| name)
}

/// Percent-encodes `text` into `out`, keeping `/` and RFC 3986's unreserved characters.
pub(super) fn encode_into(out: &mut String, text: &str) {
    out.extend(percent_encoding::utf8_percent_encode(text, ESCAPED));
}

/// Every byte but RFC 3986's unreserved characters and `/`.
const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// The path of a `skill://` URI, percent-decoded; `None` for another scheme,
/// a query or fragment, or bytes that are not UTF-8.
pub(super) fn decoded_path(uri: &str) -> Option<String> {
    let path = uri.strip_prefix(SKILL_SCHEME)?;
    if path.contains(['?', '#']) {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    Some(decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_s_name_and_its_uri_map_both_ways() {
        for (name, uri) in [
            ("refund-dispute", "skill://refund-dispute/SKILL.md"),
            ("github.triage", "skill://github/triage/SKILL.md"),
            ("résumé", "skill://r%C3%A9sum%C3%A9/SKILL.md"),
        ] {
            assert_eq!(skill_uri(name), uri);
            assert_eq!(skill_name_at(uri).as_deref(), Some(name), "{uri}");
        }
        assert_eq!(
            skill_file_uri("refund-dispute", "forms/my checklist.md"),
            "skill://refund-dispute/forms/my%20checklist.md"
        );
    }

    #[test]
    fn a_uri_that_names_no_skill_maps_to_none() {
        for uri in [
            "skill://SKILL.md",
            "skill:///SKILL.md",
            "skill://a/b/c/SKILL.md",
            "skill://a/README.md",
            "skill://a/SKILL.md?x=1",
            "skill://a.b/c/SKILL.md",
            "skill://%FF/SKILL.md",
            "file://a/SKILL.md",
        ] {
            assert_eq!(skill_name_at(uri), None, "{uri}");
        }
    }

    #[test]
    fn an_upstream_skill_s_front_matter_name_is_its_last_segment() {
        assert_eq!(front_name("github.triage"), "triage");
        assert_eq!(front_name("refund-dispute"), "refund-dispute");
    }
}
