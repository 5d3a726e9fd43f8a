//! A `SKILL.md`'s front matter: the YAML block between its leading `---`
//! lines, with the name and description the Agent Skills format requires.

use serde::Deserialize;
use unicode_normalization::UnicodeNormalization as _;

/// Longest description the Agent Skills format allows, in characters.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Longest name, in characters after NFKC normalization.
const MAX_NAME_CHARS: usize = 64;

/// The fields of the front matter toolgate reads; others are kept by the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// The skill's name.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
}

/// Why a `SKILL.md` cannot be a skill. Messages say what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillTextError {
    /// The file is not UTF-8.
    #[error("SKILL.md is not UTF-8 text")]
    NotText,
    /// No `---` block opens the file.
    #[error(
        "SKILL.md does not start with front matter: its first line must be `---`, then `name:` and `description:`, then `---`"
    )]
    NoFrontMatter,
    /// The block is never closed.
    #[error("SKILL.md's front matter has no closing `---` line")]
    Unclosed,
    /// The block is not the YAML mapping it must be.
    #[error("SKILL.md's front matter is not valid: {0}")]
    Yaml(String),
    /// A name the format does not allow.
    #[error("{0}")]
    Name(String),
    /// A missing, empty or overlong description.
    #[error("{0}")]
    Description(String),
}

#[derive(Deserialize)]
struct Raw {
    name: Option<serde_json::Value>,
    description: Option<serde_json::Value>,
}

/// Reads the front matter of a `SKILL.md`.
///
/// ```
/// use toolgate_core::skill::parse_skill_md;
/// let text = "---\nname: refund-dispute\ndescription: Handle a refund dispute.\n---\n# Steps\n";
/// let front = parse_skill_md(text).unwrap();
/// assert_eq!((front.name.as_str(), front.description.as_str()), ("refund-dispute", "Handle a refund dispute."));
/// ```
pub fn parse_skill_md(text: &str) -> Result<FrontMatter, SkillTextError> {
    let raw: Raw = read_yaml(text)?;
    let name = match raw.name {
        Some(serde_json::Value::String(name)) => name,
        Some(_) => return Err(SkillTextError::Name("`name` must be text".into())),
        None => {
            return Err(SkillTextError::Name(
                "the front matter has no `name`; add `name: <the folder's name>`".into(),
            ));
        }
    };
    check_skill_name(&name).map_err(SkillTextError::Name)?;
    let description = match raw.description {
        Some(serde_json::Value::String(d)) if !d.trim().is_empty() => d.trim().to_owned(),
        Some(serde_json::Value::String(_)) | None => {
            return Err(SkillTextError::Description(
                "the front matter has no `description`; add one that says what the skill does and when to use it".into(),
            ));
        }
        Some(_) => {
            return Err(SkillTextError::Description(
                "`description` must be text".into(),
            ));
        }
    };
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(SkillTextError::Description(format!(
            "`description` is {chars} characters; the Agent Skills format allows {MAX_DESCRIPTION_CHARS}"
        )));
    }
    Ok(FrontMatter { name, description })
}

/// Every field of a `SKILL.md`'s front matter, as the author wrote it: what
/// MCP's skills extension hands a client as the skill's `frontmatter`.
///
/// ```
/// use toolgate_core::skill::front_matter_fields;
/// let text = "---\nname: a\ndescription: b\nlicense: MIT\n---\n# Steps\n";
/// assert_eq!(front_matter_fields(text).unwrap()["license"], "MIT");
/// ```
pub fn front_matter_fields(
    text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, SkillTextError> {
    read_yaml(text)
}

/// The front matter's YAML as `T`, with a budget that refuses alias bombs.
fn read_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, SkillTextError> {
    let (yaml, _) = split(text)?;
    let options = serde_saphyr::options! {
        with_snippet: false,
        budget: serde_saphyr::budget! { max_depth: 16, max_nodes: 4096, max_aliases: 0 },
    };
    serde_saphyr::from_str_with_options(yaml, options)
        .map_err(|e| SkillTextError::Yaml(first_line(&e.to_string())))
}

/// Checks a skill name against the Agent Skills rules: 1–64 lowercase letters
/// (of any script), digits and single hyphens, not starting or ending with one,
/// counted after NFKC normalization. The message says what is wrong.
pub fn check_skill_name(name: &str) -> Result<(), String> {
    let shown = crate::escape_for_terminal(name);
    let normalized: String = name.nfkc().collect();
    let count = normalized.chars().count();
    if count == 0 {
        return Err("a skill's `name` is empty".into());
    }
    if count > MAX_NAME_CHARS {
        return Err(format!(
            "skill name `{shown}` is {count} characters; at most {MAX_NAME_CHARS}"
        ));
    }
    let allowed = |c: char| c == '-' || c.is_numeric() || (c.is_alphabetic() && !c.is_uppercase());
    if let Some(bad) = normalized.chars().find(|c| !allowed(*c)) {
        let bad = bad.to_string();
        let bad = crate::escape_for_terminal(&bad);
        return Err(format!(
            "skill name `{shown}` holds `{bad}`; names are lowercase letters, digits and hyphens"
        ));
    }
    if normalized.starts_with('-') || normalized.ends_with('-') || normalized.contains("--") {
        return Err(format!(
            "skill name `{shown}` starts or ends with a hyphen, or has two together; hyphens go between words"
        ));
    }
    Ok(())
}

/// The text after the front matter (all of it when there is none).
pub(super) fn body_of(text: &str) -> &str {
    split(text).map(|(_, body)| body).unwrap_or(text)
}

/// The YAML between the `---` lines, and the body after them.
fn split(text: &str) -> Result<(&str, &str), SkillTextError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(SkillTextError::NoFrontMatter);
    }
    let start = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut end = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok((&text[start..end], &text[end + line.len()..]));
        }
        end += line.len();
    }
    Err(SkillTextError::Unclosed)
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_agent_skills_rules() {
        for (name, ok) in [
            ("refund-dispute", true),
            ("pdf2", true),
            ("東京-٢", true),
            ("résumé", true),
            ("", false),
            ("PDF", false),
            ("two_words", false),
            ("two.words", false),
            ("a/b", false),
            ("%2e%2e", false),
            ("-two", false),
            ("two-", false),
            ("two--words", false),
            ("a\u{1b}[2J", false),
        ] {
            assert_eq!(check_skill_name(name).is_ok(), ok, "{name:?}");
        }
        assert!(check_skill_name(&"a".repeat(64)).is_ok());
        assert!(check_skill_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn a_skill_md_without_front_matter_says_what_to_write() {
        let error = parse_skill_md("# Refunds\n").unwrap_err();
        assert_eq!(error, SkillTextError::NoFrontMatter);
        assert!(error.to_string().contains("`name:` and `description:`"));
    }

    #[test]
    fn front_matter_needs_a_name_and_a_description() {
        let no_description = parse_skill_md("---\nname: a\n---\n").unwrap_err();
        assert!(matches!(no_description, SkillTextError::Description(_)));
        let unclosed = parse_skill_md("---\nname: a\ndescription: b\n").unwrap_err();
        assert_eq!(unclosed, SkillTextError::Unclosed);
        let list = parse_skill_md("---\n- a\n---\n").unwrap_err();
        assert!(matches!(list, SkillTextError::Yaml(_)), "{list:?}");
    }

    #[test]
    fn the_body_follows_the_front_matter() {
        let text = "---\nname: a\ndescription: b\nlicense: MIT\n---\n# Steps\n";
        assert_eq!(body_of(text), "# Steps\n");
        assert_eq!(parse_skill_md(text).unwrap().name, "a");
    }

    #[test]
    fn an_alias_bomb_is_refused_not_expanded() {
        let text = "---\nname: a\ndescription: &d b\nx: [*d, *d]\n---\n";
        assert!(matches!(parse_skill_md(text), Err(SkillTextError::Yaml(_))));
    }
}
