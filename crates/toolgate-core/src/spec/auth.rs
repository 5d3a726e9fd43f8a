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
    /// OAuth 2.1 access tokens (JWTs) from an authorization server: toolgate as a
    /// resource server, as the MCP authorization specification asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthSection>,
}

/// The algorithms a token may be signed with when `algorithms` says nothing.
pub const DEFAULT_TOKEN_ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];

/// The algorithms toolgate verifies: asymmetric signatures only (an HMAC
/// algorithm would need a secret shared with the authorization server).
pub const TOKEN_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Toolgate as an OAuth resource server.
///
/// ```yaml
/// auth:
///   oauth:
///     issuer: https://auth.example.com
///     audience: https://tools.example.com/mcp   # this server's canonical URL
///     jwks: https://auth.example.com/jwks.json  # or a file
///     scopes: [tools]                           # every token must have these
/// principals:
///   support_bot:
///     match: {client_id: helpdesk-widget}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OAuthSection {
    /// The authorization server; a token's `iss` must equal it.
    pub issuer: String,
    /// This server's canonical URL (RFC 8707); a token's `aud` must name it. Also
    /// where the protected resource metadata (RFC 9728) says the resource is.
    pub audience: String,
    /// The authorization server's public keys: an `https://` URL (fetched, cached,
    /// fetched again when a token names a key it does not have) or a file beside
    /// the spec.
    pub jwks: String,
    /// Signature algorithms accepted (default RS256, ES256, EdDSA); never `none`
    /// or an HMAC algorithm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<String>,
    /// Scopes every token must carry (403 `insufficient_scope` otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// How far `exp` and `nbf` may be off, in seconds (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leeway_seconds: Option<u64>,
    /// The principal of a token no principal's `match` takes (default: refused with 403).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_principal: Option<String>,
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
    if let Some(oauth) = &auth.oauth {
        for (i, alg) in oauth.algorithms.iter().enumerate() {
            if !TOKEN_ALGORITHMS.contains(&alg.as_str()) {
                let path = format!("/auth/oauth/algorithms/{i}");
                out.push(
                    Diagnostic::error(&path, format!("`{alg}` is not an algorithm toolgate verifies tokens with"))
                        .with_help(format!(
                            "use asymmetric ones: {} (never `none`, nor an HMAC algorithm, which needs a shared secret)",
                            TOKEN_ALGORITHMS.join(", ")
                        ))
                        .with_span(doc.value_span(&path)),
                );
            }
        }
        for (field, value) in [("issuer", &oauth.issuer), ("audience", &oauth.audience)] {
            if !is_https_or_loopback(value) {
                let path = format!("/auth/oauth/{field}");
                out.push(
                    Diagnostic::error(
                        &path,
                        format!("`auth.oauth.{field}` must be an https URL, not `{value}`"),
                    )
                    .with_help("e.g. `https://auth.example.com` (plain http only on loopback)")
                    .with_span(doc.value_span(&path)),
                );
            }
        }
    }
    out
}

/// `https://...`, or plain `http://` to a loopback host (a server under test).
fn is_https_or_loopback(url: &str) -> bool {
    if url
        .strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty())
    {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issuer_is_https_or_plain_http_on_loopback_only() {
        assert!(is_https_or_loopback("https://auth.example.com"));
        assert!(is_https_or_loopback("http://127.0.0.1:3000/oidc"));
        assert!(is_https_or_loopback("http://localhost:8080"));
        assert!(!is_https_or_loopback("http://auth.example.com"));
        assert!(!is_https_or_loopback("http://127.0.0.1.evil.com/"));
        assert!(!is_https_or_loopback("auth.example.com"));
        assert!(!is_https_or_loopback("https://"));
    }
}
