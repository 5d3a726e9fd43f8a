//! Which operations to import, and what effect each has.
//!
//! `--tags` keeps operations with one of the tags; `--include` keeps those a pattern
//! matches and `--exclude` drops them. A pattern is a glob (`*`, `?`, `[...]`)
//! matched against the operation id, the path, and `METHOD /path` (upper-case
//! method): `repos/*`, `/admin/**`, `DELETE /repos/*`.
//!
//! The effect comes from the method (GET, HEAD, OPTIONS read; PUT, DELETE
//! idempotent; POST, PATCH write), an `x-toolgate-effect` on the operation overrides
//! it, and an `--effects` file overrides both: a mapping of patterns to effects,
//! where the last pattern that matches decides.

use std::str::FromStr;

use glob::Pattern;
use serde_json::Value;

use super::operations::Operation;
use crate::Effect;

/// A glob that selects operations.
#[derive(Debug, Clone)]
pub struct OperationPattern {
    text: String,
    pattern: Pattern,
}

/// A pattern that is not a glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{pattern}` is not a glob ({message}); write an operation id or path with `*`, `?` or `[...]`, e.g. `repos/*` or `/pets/*`"
)]
pub struct BadPattern {
    /// The pattern as given.
    pub pattern: String,
    /// What the glob parser found wrong.
    pub message: String,
}

impl FromStr for OperationPattern {
    type Err = BadPattern;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let pattern = Pattern::new(text).map_err(|e| BadPattern {
            pattern: text.to_owned(),
            message: e.msg.to_owned(),
        })?;
        Ok(OperationPattern {
            text: text.to_owned(),
            pattern,
        })
    }
}

impl OperationPattern {
    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub(super) fn matches(&self, op: &Operation) -> bool {
        op.id.as_deref().is_some_and(|id| self.pattern.matches(id))
            || self.pattern.matches(&op.path)
            || self.pattern.matches(&op.label())
    }
}

/// An `--effects` file that does not read as patterns to effects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EffectsError {
    /// The file parses as neither JSON nor YAML (the parser's words).
    #[error("the effects file is not JSON or YAML: {0}")]
    Syntax(String),
    /// The file parses, but not as a mapping.
    #[error(
        "the effects file must map patterns to effects, as `{{\"repos/delete*\": destructive}}`"
    )]
    NotAMapping,
    /// One entry's pattern is not a glob, or its value is not an effect name.
    #[error("in the effects file, `{pattern}`: {message}")]
    Entry {
        /// The entry's pattern, as written.
        pattern: String,
        /// What is wrong with the entry.
        message: String,
    },
}

/// Parses an `--effects` file: a mapping of operation patterns to effect names.
pub fn parse_effects(text: &str) -> Result<Vec<(OperationPattern, Effect)>, EffectsError> {
    let value =
        super::document::parse("effects", text).map_err(|e| EffectsError::Syntax(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(EffectsError::NotAMapping);
    };
    map.into_iter()
        .map(|(pattern, effect)| {
            let entry = |message: String| EffectsError::Entry {
                pattern: pattern.clone(),
                message,
            };
            let effect = effect
                .as_str()
                .ok_or_else(|| entry("the effect is not a name".into()))?
                .parse::<Effect>()
                .map_err(|e| entry(e.to_string()))?;
            let glob = pattern
                .parse::<OperationPattern>()
                .map_err(|e| entry(e.to_string()))?;
            Ok((glob, effect))
        })
        .collect()
}

/// The effect a method implies.
pub(super) fn method_effect(method: &str) -> Effect {
    match method {
        "get" | "head" | "options" => Effect::Read,
        "put" | "delete" => Effect::Idempotent,
        _ => Effect::Write,
    }
}

/// Why an operation is left out, when it is.
pub(super) fn refusal(
    op: &Operation,
    tags: &[String],
    include: &[OperationPattern],
    exclude: &[OperationPattern],
    include_deprecated: bool,
) -> Option<String> {
    if !tags.is_empty() && !op.tags.iter().any(|t| tags.contains(t)) {
        return Some("not under --tags".into());
    }
    if !include.is_empty() && !include.iter().any(|p| p.matches(op)) {
        return Some("matched by no --include".into());
    }
    if let Some(p) = exclude.iter().find(|p| p.matches(op)) {
        return Some(format!("--exclude `{}`", p.as_str()));
    }
    if op.deprecated && !include_deprecated {
        return Some("deprecated (--include-deprecated imports it)".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effects_files_read_patterns_and_refuse_unknown_effects() {
        let effects =
            parse_effects("'repos/delete*': destructive\n'/admin/**': execute\n").unwrap();
        assert_eq!(effects.len(), 2);
        assert_eq!(effects[0].1, Effect::Destructive);
        let err = parse_effects("'x': sometimes").unwrap_err().to_string();
        assert!(err.contains("`x`") && err.contains("sometimes"), "{err}");
        assert_eq!(parse_effects("[1]").unwrap_err(), EffectsError::NotAMapping);
        assert!("[".parse::<OperationPattern>().is_err());
    }
}
