//! Toolgate as an OAuth 2.1 resource server: JWT access tokens checked against
//! the authorization server's keys, as the MCP authorization specification asks.
//!
//! A token passes when its header names an allowed asymmetric algorithm and a
//! key of the JWKS (fetched again, at most every [`REFETCH_FLOOR`], when it names
//! one the cached set lacks), its signature verifies with that key, `iss` is the
//! issuer, `aud` names this server's canonical URL (RFC 8707), `exp` and `nbf`
//! hold within the leeway, it carries every required scope, and a principal's
//! `match:` takes its claims. A token that passed is remembered until it
//! expires, so a client's next request costs one hash and one map lookup.
//! Its `toolgate:PATTERN` scopes, if any, narrow the principal's tools.
//!
//! A JWKS URL is `https` (plain `http` only on loopback, with a warning), fetched
//! under the spec file's `network:` policy as an HTTP binding is (the checked
//! resolver, no proxy), and redirects are followed only within its origin: the
//! keys decide which tokens pass, so they come from where the operator said.
//!
//! A refusal says what to do in the `WWW-Authenticate` challenge: where the
//! protected resource metadata is (RFC 9728), which scopes to ask for, and for a
//! token lacking one, `error="insufficient_scope"` (403).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use toolgate_core::PrincipalSpec;
use toolgate_core::spec::{
    DEFAULT_TOKEN_ALGORITHMS, NetworkPolicy, NetworkSection, OAuthSection, is_https_or_loopback,
    is_jwks_url,
};

use super::{AuthMethod, Identity};
use crate::http::resolver::{UrlRefusal, check_literal, checked_client, refusal_in, url_port};

/// The least time between two fetches of the JWKS.
pub const REFETCH_FLOOR: Duration = Duration::from_secs(30);

/// How many validated tokens are remembered at once.
const REMEMBERED: usize = 4096;

/// How long one fetch of the JWKS may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Redirects followed, within the JWKS URL's origin, for one fetch.
const MAX_JWKS_REDIRECTS: usize = 5;

/// The prefix of an OAuth scope naming tools: `toolgate:PATTERN`.
pub const TOOL_SCOPE_PREFIX: &str = "toolgate:";

/// The path of the protected resource metadata (RFC 9728).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Where the authorization server's keys come from.
#[derive(Debug, Clone)]
enum JwksSource {
    Url(url::Url),
    File(PathBuf),
}

/// Why a request's token was refused: 401 with `invalid_token`, or 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The token is not one this server takes; says why (no secret in it).
    Invalid(String),
    /// The token is good but lacks a required scope.
    InsufficientScope,
    /// The token is good but no principal's `match:` takes it.
    NoPrincipal,
    /// The token came in a way this server does not take (in the URL): 400
    /// with `invalid_request` (RFC 6750 §3.1).
    Malformed,
}

/// The OAuth resource server of one spec file.
pub struct OAuth {
    issuer: String,
    audience: String,
    algorithms: Vec<Algorithm>,
    scopes: Vec<String>,
    leeway: u64,
    source: JwksSource,
    keys: tokio::sync::Mutex<Keys>,
    principals: Vec<(String, PrincipalSpec)>,
    default_principal: Option<String>,
    remembered: Mutex<HashMap<[u8; 32], (Identity, u64)>>,
    network: Arc<NetworkPolicy>,
    http: reqwest::Client,
}

struct Keys {
    set: JwkSet,
    fetched: Option<Instant>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

/// Why the resource server could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("auth.oauth: {0}")]
pub struct OAuthError(String);

impl OAuth {
    /// The resource server `section` describes; `principals` in spec order (the
    /// first whose `match:` takes a token applies); a `jwks` file is read from
    /// `base_dir`. A `jwks` URL is fetched under the default network policy
    /// (public addresses only) until [`OAuth::with_network`] says otherwise.
    pub fn new(
        section: &OAuthSection,
        principals: impl IntoIterator<Item = (String, PrincipalSpec)>,
        base_dir: &std::path::Path,
    ) -> Result<Self, OAuthError> {
        let names: Vec<&str> = if section.algorithms.is_empty() {
            DEFAULT_TOKEN_ALGORITHMS.to_vec()
        } else {
            section.algorithms.iter().map(String::as_str).collect()
        };
        let mut algorithms = Vec::new();
        for name in names {
            let algorithm: Algorithm = name
                .parse()
                .map_err(|_| OAuthError(format!("`{name}` is not a signature algorithm")))?;
            if matches!(
                algorithm,
                Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
            ) {
                return Err(OAuthError(format!(
                    "`{name}` is an HMAC algorithm, which needs a secret shared with the authorization server; use an asymmetric one such as RS256"
                )));
            }
            algorithms.push(algorithm);
        }
        let source = if is_jwks_url(&section.jwks) {
            JwksSource::Url(jwks_url(&section.jwks)?)
        } else {
            JwksSource::File(base_dir.join(&section.jwks))
        };
        let network = Arc::new(NetworkPolicy::default());
        let http = jwks_client(&network, &source)?;
        Ok(OAuth {
            issuer: section.issuer.clone(),
            audience: section.audience.clone(),
            algorithms,
            scopes: section.scopes.clone(),
            leeway: section.leeway_seconds.unwrap_or(30),
            source,
            keys: tokio::sync::Mutex::new(Keys {
                set: JwkSet { keys: Vec::new() },
                fetched: None,
            }),
            principals: principals.into_iter().collect(),
            default_principal: section.default_principal.clone(),
            remembered: Mutex::default(),
            network,
            http,
        })
    }

    /// Fetches a `jwks` URL under `network` (the spec file's `network:`
    /// section), as HTTP bindings are: an address it refuses is never connected to.
    pub fn with_network(mut self, network: &NetworkSection) -> Result<Self, OAuthError> {
        self.network = Arc::new(NetworkPolicy::new(network));
        self.http = jwks_client(&self.network, &self.source)?;
        Ok(self)
    }

    /// The identity `token` proves, or why it proves none.
    pub async fn verify(&self, token: &str) -> Result<Identity, Refusal> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = unix_now();
        if let Some(identity) = self.remembered(&digest, now) {
            return Ok(identity);
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Refusal::Invalid("the token is not a signed JWT".into()))?;
        if !self.algorithms.contains(&header.alg) {
            return Err(Refusal::Invalid(format!(
                "the token is signed with {:?}, which this server does not take",
                header.alg
            )));
        }
        let kid = header
            .kid
            .ok_or_else(|| Refusal::Invalid("the token names no key (`kid`)".into()))?;
        let key = self.key(&kid).await?;
        // An RSA header over an EC key (or the like) is algorithm confusion.
        if key.family() != header.alg.family() {
            return Err(Refusal::Invalid(refusal_reason(
                &ErrorKind::InvalidAlgorithm,
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.algorithms = vec![header.alg];
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = self.leeway;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| Refusal::Invalid(refusal_reason(e.kind())))?
            .claims;
        if !self.scopes.iter().all(|wanted| has_scope(&claims, wanted)) {
            return Err(Refusal::InsufficientScope);
        }
        let identity = self.identity(&claims)?;
        let expires = claims.get("exp").and_then(Value::as_u64).unwrap_or(now);
        self.remember(digest, identity.clone(), expires + self.leeway);
        Ok(identity)
    }

    /// The metadata document (RFC 9728) describing this resource.
    pub fn metadata(&self) -> Value {
        let mut document = json!({
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes.is_empty() {
            document["scopes_supported"] = json!(self.scopes);
        }
        document
    }

    /// Where the metadata is served: the well-known path, and the form with the
    /// resource's path inserted after it (`/.well-known/oauth-protected-resource/mcp`).
    pub fn metadata_paths(&self) -> Vec<String> {
        let path = url::Url::parse(&self.audience)
            .map(|u| u.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        let mut paths = vec![METADATA_PATH.to_owned()];
        if !path.is_empty() {
            paths.push(format!("{METADATA_PATH}{path}"));
        }
        paths
    }

    /// The `WWW-Authenticate` challenge for a refusal (`None`: no token at all).
    pub fn challenge(&self, refusal: Option<&Refusal>) -> String {
        let metadata = match url::Url::parse(&self.audience) {
            Ok(url) => {
                let origin = url.origin().ascii_serialization();
                let path = url.path().trim_end_matches('/');
                format!("{origin}{METADATA_PATH}{path}")
            }
            Err(_) => METADATA_PATH.to_owned(),
        };
        let mut challenge = format!("Bearer resource_metadata=\"{metadata}\"");
        if !self.scopes.is_empty() {
            challenge.push_str(&format!(", scope=\"{}\"", self.scopes.join(" ")));
        }
        match refusal {
            Some(Refusal::InsufficientScope) => {
                challenge.push_str(", error=\"insufficient_scope\"")
            }
            Some(Refusal::Invalid(_)) => challenge.push_str(", error=\"invalid_token\""),
            Some(Refusal::Malformed) => challenge.push_str(", error=\"invalid_request\""),
            Some(Refusal::NoPrincipal) | None => {}
        }
        challenge
    }

    fn identity(&self, claims: &Map<String, Value>) -> Result<Identity, Refusal> {
        let principal = self
            .principals
            .iter()
            .find(|(_, spec)| spec.matches_claims(claims))
            .map(|(id, _)| id.clone())
            .or_else(|| self.default_principal.clone())
            .ok_or(Refusal::NoPrincipal)?;
        let subject = ["sub", "client_id", "azp"]
            .iter()
            .find_map(|name| claims.get(*name).and_then(Value::as_str));
        let jti = claims.get("jti").and_then(Value::as_str);
        let credential = match (subject, jti) {
            (Some(sub), Some(jti)) => format!("token of {sub} ({jti})"),
            (Some(sub), None) => format!("token of {sub}"),
            (None, Some(jti)) => format!("token {jti}"),
            (None, None) => "token".to_owned(),
        };
        Ok(Identity {
            principal: Some(principal),
            method: AuthMethod::OAuth,
            credential: Some(credential),
            scopes: tool_scopes(claims),
            claims: claims.clone().into(),
        })
    }

    /// The key `kid`, fetching the set again if it lacks it (at most every
    /// [`REFETCH_FLOOR`]).
    async fn key(&self, kid: &str) -> Result<DecodingKey, Refusal> {
        let mut keys = self.keys.lock().await;
        let known = keys.set.find(kid).is_some();
        let may_fetch = keys.fetched.is_none_or(|at| at.elapsed() >= REFETCH_FLOOR);
        if !known && may_fetch {
            match self.fetch().await {
                Ok(set) => keys.set = set,
                Err(e) => tracing::warn!("cannot read the authorization server's keys: {e}"),
            }
            keys.fetched = Some(Instant::now());
        }
        let jwk = keys.set.find(kid).ok_or_else(|| {
            Refusal::Invalid(format!(
                "the token's key `{}` is not one of the authorization server's",
                shown_kid(kid)
            ))
        })?;
        DecodingKey::from_jwk(jwk).map_err(|_| {
            Refusal::Invalid(format!(
                "the key `{}` cannot verify signatures",
                shown_kid(kid)
            ))
        })
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        let bytes = match &self.source {
            JwksSource::File(path) => {
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
            }
            JwksSource::Url(url) => {
                check_literal(&self.network, url)
                    .map_err(|e| format!("cannot fetch {url}: {e}"))?;
                let response =
                    self.http
                        .get(url.clone())
                        .send()
                        .await
                        .map_err(|e| match refusal_in(&e) {
                            Some(refusal) => {
                                format!("cannot fetch {url}: {}", UrlRefusal::Policy(refusal))
                            }
                            None => format!("cannot fetch {url}: {e}"),
                        })?;
                let status = response.status();
                if status.is_redirection() {
                    let to = response
                        .headers()
                        .get(reqwest::header::LOCATION)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("nowhere");
                    return Err(format!(
                        "{url} redirected to {}, outside its origin; the keys are fetched from the `jwks` URL's origin only, so write the final URL as `auth.oauth.jwks`",
                        toolgate_core::escape_for_terminal(to)
                    ));
                }
                if !status.is_success() {
                    return Err(format!("{url} answered {status}"));
                }
                response
                    .bytes()
                    .await
                    .map_err(|e| format!("cannot read {url}: {e}"))?
                    .to_vec()
            }
        };
        serde_json::from_slice(&bytes).map_err(|e| format!("not a JWKS: {e}"))
    }

    fn remembered(&self, digest: &[u8; 32], now: u64) -> Option<Identity> {
        let remembered = self.remembered.lock().unwrap_or_else(|e| e.into_inner());
        remembered
            .get(digest)
            .filter(|(_, until)| now <= *until)
            .map(|(identity, _)| identity.clone())
    }

    fn remember(&self, digest: [u8; 32], identity: Identity, until: u64) {
        let mut remembered = self.remembered.lock().unwrap_or_else(|e| e.into_inner());
        if remembered.len() >= REMEMBERED {
            let now = unix_now();
            remembered.retain(|_, (_, until)| now <= *until);
            if remembered.len() >= REMEMBERED {
                remembered.clear();
            }
        }
        remembered.insert(digest, (identity, until));
    }
}

/// A `jwks` URL, refused unless it is `https` or plain `http` on loopback (which
/// is logged as a warning: keys swapped on the way would verify any token).
fn jwks_url(jwks: &str) -> Result<url::Url, OAuthError> {
    let url = url::Url::parse(jwks)
        .map_err(|e| OAuthError(format!("`jwks` is not a valid URL ({e}): `{jwks}`")))?;
    if !is_https_or_loopback(jwks) || !matches!(url.scheme(), "https" | "http") {
        return Err(OAuthError(format!(
            "`jwks` must be an https URL (plain http only on loopback), not `{jwks}`: keys fetched over plain http can be swapped on the way"
        )));
    }
    if url.scheme() == "http" {
        tracing::warn!(
            jwks,
            "auth.oauth.jwks is fetched over plain http: fine for an authorization server under test on this machine, use https for any other"
        );
    }
    Ok(url)
}

/// The client a JWKS URL is fetched with: `network`'s checked resolver for the
/// URL's port, no proxy, and redirects followed only within the URL's origin.
fn jwks_client(
    network: &Arc<NetworkPolicy>,
    source: &JwksSource,
) -> Result<reqwest::Client, OAuthError> {
    let port = match source {
        JwksSource::Url(url) => url_port(url).unwrap_or_default(),
        JwksSource::File(_) => 0,
    };
    let hops = network.clone();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_JWKS_REDIRECTS {
            attempt.error(format!("more than {MAX_JWKS_REDIRECTS} redirects"))
        } else if let Err(refusal) = check_literal(&hops, attempt.url()) {
            attempt.error(refusal)
        } else {
            attempt.follow()
        }
    });
    checked_client(network.clone(), port)
        .redirect(redirects)
        .timeout(FETCH_TIMEOUT)
        .build()
        .map_err(|e| OAuthError(format!("cannot make an HTTP client: {e}")))
}

fn has_scope(claims: &Map<String, Value>, wanted: &str) -> bool {
    match claims.get("scope") {
        Some(Value::String(scopes)) => scopes.split(' ').any(|s| s == wanted),
        Some(Value::Array(scopes)) => scopes.iter().any(|s| s.as_str() == Some(wanted)),
        _ => false,
    }
}

/// The tool-name patterns a token narrows its principal to: its scopes of the
/// form `toolgate:PATTERN` (`toolgate:lookup`, `toolgate:github.*`). A token
/// with none keeps its principal's scopes; one with some may use only the tools
/// both admit (see [`toolgate_core::Principal::narrowed_to`]).
fn tool_scopes(claims: &Map<String, Value>) -> Option<Vec<String>> {
    let scopes: Vec<&str> = match claims.get("scope") {
        Some(Value::String(scopes)) => scopes.split(' ').collect(),
        Some(Value::Array(scopes)) => scopes.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let patterns: Vec<String> = scopes
        .into_iter()
        .filter_map(|scope| scope.strip_prefix(TOOL_SCOPE_PREFIX))
        .map(str::to_owned)
        .collect();
    (!patterns.is_empty()).then_some(patterns)
}

/// The most characters of a `kid` a refusal shows.
const SHOWN_KID_CHARS: usize = 64;

/// A token's `kid` as a refusal shows it. The caller chose it, and the refusal
/// goes back in a response body and into logs: control, bidi and invisible
/// characters are escaped (line breaks and tabs too, so it stays on its line)
/// and a long one is clipped.
fn shown_kid(kid: &str) -> String {
    let clipped: String = kid.chars().take(SHOWN_KID_CHARS).collect();
    let mut shown = toolgate_core::escape_for_terminal(&clipped)
        .replace('\n', "\\u{a}")
        .replace('\t', "\\u{9}");
    if clipped.len() < kid.len() {
        shown.push('…');
    }
    shown
}

fn refusal_reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)".into(),
        ErrorKind::InvalidIssuer => "the token is from another issuer".into(),
        ErrorKind::InvalidAudience => "the token is for another audience".into(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}`"),
        _ => "the token is malformed".into(),
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    /// A resource server whose keys are an empty JWKS file.
    fn server(dir: &std::path::Path) -> OAuth {
        std::fs::write(dir.join("jwks.json"), r#"{"keys": []}"#).unwrap();
        let section = OAuthSection {
            issuer: "https://auth.example.com".into(),
            audience: "https://tools.example.com/mcp".into(),
            jwks: "jwks.json".into(),
            ..OAuthSection::default()
        };
        OAuth::new(&section, [], dir).unwrap()
    }

    /// A resource server whose keys are at `jwks`, fetched under `network`.
    fn fetching(jwks: &str, network: &NetworkSection) -> OAuth {
        let section = OAuthSection {
            issuer: "https://auth.example.com".into(),
            audience: "https://tools.example.com/mcp".into(),
            jwks: jwks.into(),
            ..OAuthSection::default()
        };
        OAuth::new(&section, [], std::path::Path::new("."))
            .and_then(|oauth| oauth.with_network(network))
            .unwrap()
    }

    /// A loopback HTTP server answering each request with `answer(path)`, a whole
    /// response; returns its port and how many connections it took.
    async fn serve(
        answer: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let request = String::from_utf8_lossy(&request).into_owned();
                    let path = request.split(' ').nth(1).unwrap_or("/");
                    let _ = stream.write_all(answer(path).as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        (port, hits)
    }

    fn response(status: &str, headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    const JWKS: &str = r#"{"keys": [{"kty": "oct", "kid": "k1", "k": "c2VjcmV0"}]}"#;

    fn allowing(ports: &[u16]) -> NetworkSection {
        NetworkSection {
            allow: ports.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
            ..NetworkSection::default()
        }
    }

    #[test]
    fn a_jwks_url_over_plain_http_is_refused_unless_it_is_on_loopback() {
        let section = |jwks: &str| OAuthSection {
            issuer: "https://auth.example.com".into(),
            audience: "https://tools.example.com/mcp".into(),
            jwks: jwks.into(),
            ..OAuthSection::default()
        };
        let here = std::path::Path::new(".");
        for refused in [
            "http://auth.example.com/jwks",
            "http://127.0.0.1.example.com/jwks",
            "http://127.0.0.1@auth.example.com/jwks",
        ] {
            let message = OAuth::new(&section(refused), [], here)
                .unwrap_err()
                .to_string();
            assert!(
                message.contains("must be an https URL"),
                "{refused}: {message}"
            );
        }
        for taken in [
            "https://auth.example.com/jwks",
            "http://127.0.0.1:3000/jwks",
            "http://localhost:3000/jwks",
            "http://[::1]:3000/jwks",
        ] {
            assert!(OAuth::new(&section(taken), [], here).is_ok(), "{taken}");
        }
    }

    #[tokio::test]
    async fn a_jwks_on_an_address_the_network_policy_refuses_is_never_requested() {
        let (port, hits) = serve(|_| response("200 OK", "", JWKS)).await;
        for jwks in [
            format!("http://127.0.0.1:{port}/jwks"),
            format!("http://localhost:{port}/jwks"),
        ] {
            let error = fetching(&jwks, &NetworkSection::default())
                .fetch()
                .await
                .unwrap_err();
            assert!(error.contains("network.allow"), "{jwks}: {error}");
        }
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
        let allowed = fetching(&format!("http://127.0.0.1:{port}/jwks"), &allowing(&[port]));
        let set = allowed.fetch().await.unwrap();
        assert!(set.find("k1").is_some());
    }

    #[tokio::test]
    async fn a_jwks_redirect_is_followed_within_its_origin_and_not_beyond_it() {
        let (elsewhere, elsewhere_hits) = serve(|_| response("200 OK", "", JWKS)).await;
        let (port, _) = serve(move |path| match path {
            "/old" => response("301 Moved Permanently", "location: /jwks\r\n", ""),
            "/jwks" => response("200 OK", "", JWKS),
            _ => response(
                "302 Found",
                &format!("location: http://127.0.0.1:{elsewhere}/jwks\r\n"),
                "",
            ),
        })
        .await;
        let network = allowing(&[port, elsewhere]);
        let same = fetching(&format!("http://127.0.0.1:{port}/old"), &network);
        assert!(same.fetch().await.unwrap().find("k1").is_some());

        let away = fetching(&format!("http://127.0.0.1:{port}/away"), &network);
        let error = away.fetch().await.unwrap_err();
        assert!(error.contains("outside its origin"), "{error}");
        assert_eq!(elsewhere_hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    /// An unsigned token whose header names `kid`; refused before any signature.
    fn token_with_kid(kid: &str) -> String {
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": kid}).to_string();
        let claims = json!({"sub": "x"}).to_string();
        format!(
            "{}.{}.c2ln",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        )
    }

    #[tokio::test]
    async fn an_unknown_kid_is_refused_with_its_control_characters_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let oauth = server(dir.path());
        let kid = "k1\x1b]0;owned\x07\r\nInjected: yes\u{202e}";
        let Err(Refusal::Invalid(why)) = oauth.verify(&token_with_kid(kid)).await else {
            panic!("an unknown key is refused as invalid");
        };
        assert!(
            !why.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{why:?}"
        );
        assert!(
            why.contains(r"k1\u{1b}]0;owned\u{7}\u{d}\u{a}Injected: yes\u{202e}"),
            "{why}"
        );
    }

    #[tokio::test]
    async fn a_long_kid_is_clipped_in_the_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let oauth = server(dir.path());
        let kid = "k".repeat(5000);
        let Err(Refusal::Invalid(why)) = oauth.verify(&token_with_kid(&kid)).await else {
            panic!("an unknown key is refused as invalid");
        };
        assert!(why.len() < 200, "{why}");
        assert!(
            why.contains(&format!("`{}…`", "k".repeat(SHOWN_KID_CHARS))),
            "{why}"
        );
    }
}
