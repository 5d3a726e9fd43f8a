//! The `auth:` section: how callers of `toolgate serve --http` prove who they are.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diagnostic::Diagnostic;
use super::document::Document;
use super::network::{NetworkPolicy, NetworkSection, suggested_entry};

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
    /// fetched again when a token names a key it does not have; plain `http://`
    /// only on loopback; under the `network:` policy, redirects kept within its
    /// origin) or a file beside the spec.
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
/// The problems of `auth`; `network` is the policy the JWKS is fetched under.
pub(super) fn check_auth(
    doc: &Document,
    auth: &AuthSection,
    network: &NetworkSection,
) -> Vec<Diagnostic> {
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
        out.extend(check_jwks(doc, &oauth.jwks, network));
    }
    out
}

/// The problems of a `jwks` URL (a file has none here): plain http off loopback
/// (keys swapped on the way would verify any token), plain http on loopback (a
/// warning: fine for a server under test only), and an address the network
/// policy refuses (every token would be refused).
fn check_jwks(doc: &Document, jwks: &str, network: &NetworkSection) -> Vec<Diagnostic> {
    if !is_jwks_url(jwks) {
        return Vec::new();
    }
    let path = "/auth/oauth/jwks";
    let span = doc.value_span(path);
    let mut out = Vec::new();
    if !is_https_or_loopback(jwks) {
        out.push(
            Diagnostic::error(path, format!("`auth.oauth.jwks` must be an https URL, not `{jwks}`"))
                .with_help("keys fetched over plain http can be swapped on the way, and tokens signed with the swapped keys would pass; use https (plain http only on loopback)")
                .with_span(span),
        );
        return out;
    }
    if jwks.starts_with("http://") {
        out.push(
            Diagnostic::warning(path, format!("`auth.oauth.jwks` is fetched over plain http (`{jwks}`)"))
                .with_help("fine for an authorization server on this machine under test; use https for any other")
                .with_span(span),
        );
    }
    if let Some(refusal) = NetworkPolicy::new(network).refusal_for_url(jwks) {
        let entry = suggested_entry(jwks).unwrap_or_default();
        out.push(
            Diagnostic::warning(path, format!("the keys will not be fetched, so every token will be refused: {refusal}"))
                .with_help(format!(
                    "add it under `network:`, e.g. `network: {{allow: [\"{entry}\"]}}`, if the authorization server is meant to be reached there"
                ))
                .with_span(span),
        );
    }
    out
}

/// Whether a `jwks` value is a URL to fetch rather than a file beside the spec.
pub fn is_jwks_url(jwks: &str) -> bool {
    jwks.starts_with("https://") || jwks.starts_with("http://")
}

/// `https://...`, or plain `http://` to a loopback host (`127.0.0.1`,
/// `localhost`, `[::1]`: a server under test).
pub fn is_https_or_loopback(url: &str) -> bool {
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

    /// The diagnostics on `auth.oauth.jwks` of a spec naming `jwks`, after `extra`.
    fn jwks_diagnostics(jwks: &str, extra: &str) -> Vec<(super::super::Severity, String)> {
        let text = format!(
            "auth:\n  oauth:\n    issuer: https://auth.example.com\n    audience: https://tools.example.com/mcp\n    jwks: \"{jwks}\"\n{extra}"
        );
        super::super::check(&text)
            .diagnostics
            .into_iter()
            .filter(|d| d.path == "/auth/oauth/jwks")
            .map(|d| (d.severity, d.message))
            .collect()
    }

    #[test]
    fn a_jwks_over_plain_http_is_an_error_off_loopback_and_a_warning_on_it() {
        use super::super::Severity;
        let off = jwks_diagnostics("http://auth.example.com/jwks", "");
        assert_eq!(off.len(), 1, "{off:?}");
        assert_eq!(off[0].0, Severity::Error);
        assert!(off[0].1.contains("must be an https URL"), "{off:?}");

        let on = jwks_diagnostics(
            "http://127.0.0.1:3000/jwks",
            "network: {allow: [\"127.0.0.1:3000\"]}\n",
        );
        assert_eq!(on.len(), 1, "{on:?}");
        assert_eq!(on[0].0, Severity::Warning);
        assert!(on[0].1.contains("plain http"), "{on:?}");

        assert!(jwks_diagnostics("https://auth.example.com/jwks", "").is_empty());
        assert!(jwks_diagnostics("jwks.json", "").is_empty());
    }

    #[test]
    fn a_jwks_on_an_address_the_network_policy_refuses_is_a_warning() {
        use super::super::Severity;
        let refused = jwks_diagnostics("https://10.0.0.7/jwks", "");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0].0, Severity::Warning);
        assert!(
            refused[0].1.contains("every token will be refused"),
            "{refused:?}"
        );

        let local = jwks_diagnostics("http://localhost:3000/jwks", "");
        assert_eq!(local.len(), 2, "plain http and the policy: {local:?}");

        let allowed = jwks_diagnostics("https://10.0.0.7/jwks", "network: {allow: [10.0.0.7]}\n");
        assert!(allowed.is_empty(), "{allowed:?}");
    }
}
