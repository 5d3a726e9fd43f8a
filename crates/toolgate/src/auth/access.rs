//! Who may reach the HTTP front door: the credential a request must carry (the
//! server's bearer token, an API key, an OAuth access token) and the `Host`
//! names and browser origins it answers ([`super::rebinding`]), checked before
//! any route runs.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::rebinding::Allowed;
use super::{ApiKeys, AuthMethod, HeldCredential, Identity, OAuth, Refusal};

/// Why an access setting cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccessError {
    /// A non-loopback address without a credential to check.
    #[error(
        "{addr} is reachable from other machines, so it needs a bearer token: put one in an environment variable and pass `--token-env NAME` (or bind 127.0.0.1)"
    )]
    TokenRequired {
        /// The address that was to be bound.
        addr: SocketAddr,
    },
    /// The bearer token is empty.
    #[error(
        "the bearer token is empty; set the variable to a long random string, e.g. `openssl rand -hex 32`"
    )]
    EmptyToken,
    /// The bearer token is too short to resist guessing.
    #[error(
        "the bearer token is {bytes} bytes long, and it must be at least 32: make one with `openssl rand -hex 32`"
    )]
    TokenTooShort {
        /// Its length, in bytes.
        bytes: usize,
    },
    /// An `--allowed-host` that is not a host name with an optional port.
    #[error(
        "`{host}` is not a host name for `--allowed-host`: give a name or address, with a port to allow only that one, e.g. `tools.example.com` or `tools.example.com:8443`"
    )]
    BadAllowedHost {
        /// The host as given.
        host: String,
    },
    /// An `--allowed-origin` that is not a browser origin.
    #[error(
        "`{origin}` is not an origin for `--allowed-origin`: give a scheme, a host and a port when it is not the scheme's default, e.g. `https://app.example.com` or `http://localhost:5173` (or `null`)"
    )]
    BadAllowedOrigin {
        /// The origin as given.
        origin: String,
    },
}

/// The shortest bearer token accepted, in bytes: 32 random bytes (64 hex digits
/// from `openssl rand -hex 32`) cannot be guessed; a short token can.
pub const MIN_TOKEN_BYTES: usize = 32;

/// Who may use the HTTP endpoint: anyone who can reach it, or only requests
/// carrying `Authorization: Bearer TOKEN`. Only the token's SHA-256 digest is
/// kept, and a presented token is compared digest to digest in constant time, so
/// the time an answer takes says nothing about the token or its length.
///
/// With API keys ([`HttpAccess::with_keys`]) a request may instead carry
/// `Authorization: Bearer tgk_...`, and then runs as the key's principal.
///
/// Whatever the credential, a request must also name the server by its bind
/// address or `localhost` (with its port) in `Host`, and a browser's request must
/// come from the server's own origin; [`HttpAccess::allow_host`] and
/// [`HttpAccess::allow_origin`] add more.
#[derive(Clone, Default)]
pub struct HttpAccess {
    token: Option<Arc<[u8; 32]>>,
    keys: Option<ApiKeys>,
    oauth: Option<Arc<OAuth>>,
    allowed: Allowed,
}

impl std::fmt::Debug for HttpAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAccess")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("keys", &self.keys)
            .field("oauth", &self.oauth)
            .field("allowed", &self.allowed)
            .finish()
    }
}

impl HttpAccess {
    /// No token: only for loopback addresses.
    pub fn open() -> Self {
        HttpAccess::default()
    }

    /// Also take the API keys of `keys`: a request carrying one runs as its
    /// principal. A server with keys refuses requests without a credential.
    pub fn with_keys(mut self, keys: ApiKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Also take OAuth access tokens that `oauth` verifies: a request carrying one
    /// runs as the principal whose `match:` takes its claims. The protected
    /// resource metadata (RFC 9728) is served beside the endpoint.
    pub fn with_oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(Arc::new(oauth));
        self
    }

    /// Also answers requests whose `Host` is `host`: a name (any port) or
    /// `name:port` (that port only), e.g. the name a reverse proxy passes on.
    pub fn allow_host(mut self, host: &str) -> Result<Self, AccessError> {
        self.allowed.host(host)?;
        Ok(self)
    }

    /// Also answers browsers whose page is at `origin` (`https://app.example.com`,
    /// `http://localhost:5173`, or `null`).
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, AccessError> {
        self.allowed.origin(origin)?;
        Ok(self)
    }

    /// Requests must carry `Authorization: Bearer {token}`; others get 401. The
    /// token (without surrounding whitespace) must be at least
    /// [`MIN_TOKEN_BYTES`] long.
    pub fn bearer(token: impl Into<String>) -> Result<Self, AccessError> {
        let token = token.into();
        let token = token.trim();
        if token.is_empty() {
            return Err(AccessError::EmptyToken);
        }
        if token.len() < MIN_TOKEN_BYTES {
            return Err(AccessError::TokenTooShort { bytes: token.len() });
        }
        Ok(HttpAccess {
            token: Some(Arc::new(digest(token.as_bytes()))),
            ..HttpAccess::default()
        })
    }

    /// Who `presented` (an API key, the bearer token or an OAuth access token)
    /// is; `Err` with why an access token was refused, or `None` for a credential
    /// nobody issued. The console's login takes the same credentials as `/mcp`.
    pub(crate) async fn identify(&self, presented: &str) -> Result<Identity, Option<Refusal>> {
        let by_key = self.keys.as_ref().and_then(|keys| keys.verify(presented));
        let by_token = || {
            let token = self.token.as_ref()?;
            same(&digest(presented.as_bytes()), token).then_some(Identity {
                principal: None,
                method: AuthMethod::BearerToken,
                credential: None,
                scopes: None,
                claims: Default::default(),
            })
        };
        match (by_key.or_else(by_token), &self.oauth) {
            (Some(identity), _) => Ok(identity),
            (None, Some(oauth)) if !presented.starts_with("tgk_") => {
                oauth.verify(presented).await.map_err(Some)
            }
            (None, _) => Err(None),
        }
    }

    /// What a session opened with `identity` keeps of its credential, so that
    /// [`HttpAccess::still_holds`] can end the session with it; `None` for a
    /// credential that cannot end (none at all) or an access token without `exp`,
    /// which the OAuth check never admits.
    pub(crate) fn hold_of(&self, identity: &Identity) -> Option<HeldCredential> {
        match identity.method {
            AuthMethod::ApiKey => Some(HeldCredential::Key {
                id: identity.claims.get("key_id")?.as_str()?.to_owned(),
            }),
            AuthMethod::BearerToken => Some(HeldCredential::Token {
                fingerprint: fingerprint(self.token.as_deref()?),
            }),
            AuthMethod::OAuth => Some(HeldCredential::Until {
                ms: identity.claims.get("exp")?.as_u64()?.saturating_mul(1000),
            }),
            AuthMethod::None => None,
        }
    }

    /// Whether the credential a session holds still proves who it proved:
    /// the key is not revoked, the server still takes the token, the access
    /// token has not expired.
    pub(crate) fn still_holds(&self, held: &HeldCredential, now_ms: u64) -> bool {
        match held {
            HeldCredential::Key { id } => self.keys.as_ref().is_some_and(|keys| keys.is_live(id)),
            HeldCredential::Token { fingerprint: held } => {
                self.token.as_deref().is_some_and(|token| {
                    bool::from(fingerprint(token).as_bytes().ct_eq(held.as_bytes()))
                })
            }
            HeldCredential::Until { ms } => now_ms < *ms,
        }
    }

    /// The `Host` names and browser origins answered beyond the defaults.
    pub(crate) fn allowed(&self) -> &Allowed {
        &self.allowed
    }

    /// `router` behind the credential check, when a credential is needed: a
    /// request without a valid one gets 401 (or 403 for a token that proves
    /// too little), and one with it carries its [`Identity`].
    pub(crate) fn guard(&self, router: Router) -> Router {
        if self.requires_token() {
            router.layer(middleware::from_fn_with_state(self.clone(), authenticate))
        } else {
            router
        }
    }

    /// The OAuth protected resource metadata (RFC 9728) at each of its paths,
    /// answered without a credential: a client reads it to learn where to get
    /// one. Empty without OAuth.
    pub(crate) fn metadata_routes(&self) -> Router {
        let Some(oauth) = &self.oauth else {
            return Router::new();
        };
        let document = oauth.metadata().to_string();
        oauth
            .metadata_paths()
            .iter()
            .fold(Router::new(), |router, path| {
                let document = document.clone();
                let serve =
                    move || async move { ([(header::CONTENT_TYPE, "application/json")], document) };
                router.route(path, axum::routing::get(serve))
            })
    }

    /// Whether a request needs a credential (a token or an API key).
    pub fn requires_token(&self) -> bool {
        self.token.is_some() || self.keys.is_some() || self.oauth.is_some()
    }

    /// Refuses to open a non-loopback address without a token: anyone on the
    /// network could run the catalog's tools as the served principal.
    pub fn check(&self, addr: SocketAddr) -> Result<(), AccessError> {
        if addr.ip().is_loopback() || self.requires_token() {
            Ok(())
        } else {
            Err(AccessError::TokenRequired { addr })
        }
    }
}

/// Lets through requests with a live API key or the right bearer token, marked
/// with who they are from (an [`Identity`] in the request's extensions); answers
/// 401 otherwise. A credential in the URL is refused: URLs end up in logs.
async fn authenticate(
    State(access): State<HttpAccess>,
    mut request: Request,
    next: Next,
) -> Response {
    if request
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("access_token=")))
    {
        const IN_URL: &str = "a credential in the URL is refused (URLs are logged): send `Authorization: Bearer <token>` instead\n";
        return match &access.oauth {
            // RFC 6750 §3.1: an unsupported way of sending the token is a bad
            // request, not a missing credential.
            Some(oauth) => challenged(
                StatusCode::BAD_REQUEST,
                IN_URL.to_owned(),
                &oauth.challenge(Some(&Refusal::Malformed)),
            ),
            None => unauthorized(IN_URL),
        };
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    let mut refusal = None;
    let identity = match presented {
        None => None,
        Some(presented) => match access.identify(presented).await {
            Ok(identity) => Some(identity),
            Err(why) => {
                refusal = why;
                None
            }
        },
    };
    if let Some(identity) = identity {
        request.extensions_mut().insert(identity);
        return next.run(request).await;
    }
    let Some(oauth) = &access.oauth else {
        return unauthorized(if access.keys.is_some() {
            "a credential is required: send `Authorization: Bearer <key>` with an API key from `toolgate keys add`\n"
        } else {
            "a bearer token is required: send `Authorization: Bearer <token>` with the token the server was started with\n"
        });
    };
    let challenge = oauth.challenge(refusal.as_ref());
    let (status, message) = match &refusal {
        Some(Refusal::InsufficientScope) => (
            StatusCode::FORBIDDEN,
            "the access token lacks a scope this server needs; ask the authorization server for it\n".to_owned(),
        ),
        Some(Refusal::NoPrincipal) => (
            StatusCode::FORBIDDEN,
            "the access token is valid, but no principal of this server takes it (see `match:` under `principals:`)\n".to_owned(),
        ),
        Some(Refusal::Invalid(why)) => (StatusCode::UNAUTHORIZED, format!("{why}; get a new access token\n")),
        Some(Refusal::Malformed) => (
            StatusCode::BAD_REQUEST,
            "send the access token as `Authorization: Bearer <token>`\n".to_owned(),
        ),
        None => (
            StatusCode::UNAUTHORIZED,
            "an access token is required: send `Authorization: Bearer <token>` (the metadata in WWW-Authenticate says where to get one)\n".to_owned(),
        ),
    };
    challenged(status, message, &challenge)
}

fn challenged(status: StatusCode, message: String, challenge: &str) -> Response {
    let mut response = (status, message).into_response();
    if let Ok(value) = axum::http::HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

fn unauthorized(message: &'static str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer realm=\"toolgate\"")],
        message,
    )
        .into_response()
}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// What a session keeps to know the server's token again: the hex SHA-256 of
/// the token's digest, from which neither can be recovered.
fn fingerprint(token_digest: &[u8; 32]) -> String {
    Sha256::digest(token_digest)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Compares two digests in constant time (both are always 32 bytes, so nothing
/// about the presented token's length shows either).
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "6f1d0c3e9a7b25d48e0f1a2b3c4d5e6f";

    #[test]
    fn a_non_loopback_address_needs_a_token() {
        let lan: SocketAddr = "0.0.0.0:8731".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8731".parse().unwrap();
        let local6: SocketAddr = "[::1]:8731".parse().unwrap();
        assert!(matches!(
            HttpAccess::open().check(lan),
            Err(AccessError::TokenRequired { .. })
        ));
        assert!(HttpAccess::open().check(local).is_ok());
        assert!(HttpAccess::open().check(local6).is_ok());
        assert!(HttpAccess::bearer(TOKEN).unwrap().check(lan).is_ok());
    }

    #[test]
    fn an_empty_token_is_refused() {
        assert!(matches!(
            HttpAccess::bearer("  "),
            Err(AccessError::EmptyToken)
        ));
    }

    #[test]
    fn a_token_shorter_than_32_bytes_is_refused_saying_how_to_make_one() {
        for short in ["x", "s3cret", &TOKEN[..31]] {
            let error = HttpAccess::bearer(short).unwrap_err();
            assert!(
                matches!(error, AccessError::TokenTooShort { bytes } if bytes == short.len()),
                "{short}"
            );
            assert!(
                error.to_string().contains("openssl rand -hex 32"),
                "{error}"
            );
        }
        assert!(HttpAccess::bearer(&TOKEN[..32]).is_ok());
        assert!(HttpAccess::bearer(format!("{TOKEN}\n")).is_ok());
    }

    #[test]
    fn tokens_compare_equal_only_when_identical() {
        let token = digest(TOKEN.as_bytes());
        assert!(same(&digest(TOKEN.as_bytes()), &token));
        assert!(!same(&digest(&TOKEN.as_bytes()[1..]), &token));
        assert!(!same(&digest(format!("{TOKEN}0").as_bytes()), &token));
    }

    #[test]
    fn the_token_is_not_printed() {
        let access = HttpAccess::bearer(TOKEN).unwrap();
        assert!(!format!("{access:?}").contains(TOKEN));
    }
}
