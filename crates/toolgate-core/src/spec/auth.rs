//! The `auth:` section: how callers of `toolgate serve --http` prove who they are.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::document::Document;

/// How callers authenticate.
///
/// ```yaml
/// auth:
///   api_keys: {}                 # keys made with `toolgate keys add PRINCIPAL`
///   # api_keys: {file: keys.json}  # kept beside the spec file instead
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// API keys: each names the principal it calls as; only their hashes are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_keys: Option<ApiKeysSection>,
}

impl AuthSection {
    /// True for a section that says nothing.
    pub fn is_default(&self) -> bool {
        self == &AuthSection::default()
    }
}

/// Where the API keys' hashes are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeysSection {
    /// The key file, relative to the spec file's directory (default
    /// `api-keys.json` in the state directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// The problems of an `auth:` section.
pub(super) fn check_auth(doc: &Document, auth: &AuthSection) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if let Some(file) = auth.api_keys.as_ref().and_then(|k| k.file.as_deref())
        && file.trim().is_empty()
    {
        let path = "/auth/api_keys/file";
        out.push(
            Diagnostic::error(path, "`auth.api_keys.file` is empty")
                .with_help("name the key file, e.g. `file: api-keys.json`, or leave `file` out for the state directory's")
                .with_span(doc.value_span(path)),
        );
    }
    out
}
