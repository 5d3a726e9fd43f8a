//! The streamable HTTP transport: the MCP endpoint on an axum router, with a
//! bearer token in front of it where the address is reachable from elsewhere.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::capacity;
use super::rebinding::{self, Allowed, Guard};
use super::restore::{self, ForRmcp};
use super::session::Session;
use super::{ServeError, Shared};
use crate::auth::{ApiKeys, AuthMethod, HeldCredential, Identity, OAuth, Refusal};

/// The default address of `toolgate serve --http`.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8731";

/// The default path of the MCP endpoint.
pub const DEFAULT_HTTP_PATH: &str = "/mcp";

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
    pub fn allow_host(mut self, host: &str) -> Result<Self, ServeError> {
        self.allowed.host(host)?;
        Ok(self)
    }

    /// Also answers browsers whose page is at `origin` (`https://app.example.com`,
    /// `http://localhost:5173`, or `null`).
    pub fn allow_origin(mut self, origin: &str) -> Result<Self, ServeError> {
        self.allowed.origin(origin)?;
        Ok(self)
    }

    /// Requests must carry `Authorization: Bearer {token}`; others get 401. The
    /// token (without surrounding whitespace) must be at least
    /// [`MIN_TOKEN_BYTES`] long.
    pub fn bearer(token: impl Into<String>) -> Result<Self, ServeError> {
        let token = token.into();
        let token = token.trim();
        if token.is_empty() {
            return Err(ServeError::EmptyToken);
        }
        if token.len() < MIN_TOKEN_BYTES {
            return Err(ServeError::TokenTooShort { bytes: token.len() });
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

    /// Whether a request needs a credential (a token or an API key).
    pub fn requires_token(&self) -> bool {
        self.token.is_some() || self.keys.is_some() || self.oauth.is_some()
    }

    /// Refuses to open a non-loopback address without a token: anyone on the
    /// network could run the catalog's tools as the served principal.
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        if addr.ip().is_loopback() || self.requires_token() {
            Ok(())
        } else {
            Err(ServeError::TokenRequired { addr })
        }
    }
}

/// Refuses an endpoint path that cannot be routed as one fixed path.
pub fn check_path(path: &str) -> Result<(), ServeError> {
    if path.starts_with('/') && !path.contains(['{', '}', '*']) {
        Ok(())
    } else {
        Err(ServeError::BadPath(path.to_owned()))
    }
}

/// The router serving the MCP endpoint at `path`, its sessions capped (see
/// `capacity`) and its request bodies bounded by [`super::max_message_bytes`] of
/// the gate's argument limit. `Host` and `Origin` are checked first on every
/// route (see `rebinding`), then the credential, if one is needed. Sessions end
/// when `sessions` is cancelled.
pub(crate) fn router(
    shared: Arc<Shared>,
    path: &str,
    addr: SocketAddr,
    access: &HttpAccess,
    sessions: CancellationToken,
) -> Router {
    #[cfg(feature = "console")]
    let console = crate::console::routes_of(&shared);
    let largest = super::max_message_bytes(shared.offering().gate.max_argument_bytes());
    // `rebinding::check` guards every route, so the transport's own check of the
    // MCP route is off.
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(sessions)
        .with_max_request_body_bytes(largest)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let capped = shared.http_sessions.clone();
    let restorable = capped.restorable().cloned();
    config.session_store = restorable.clone().map(|r| Arc::new(ForRmcp(r)) as _);
    let metrics = shared.metrics.clone();
    let service = StreamableHttpService::new(
        move || Ok(Session::new(shared.clone())),
        capped.clone(),
        config,
    );
    let router = Router::new()
        .route_service(path, service)
        .layer(middleware::from_fn(super::too_many::answer))
        .layer(middleware::from_fn_with_state(capped, capacity::admit));
    let router = match restorable {
        Some(r) => router.layer(middleware::from_fn_with_state(r, restore::remember)),
        None => router,
    };
    let router = crate::telemetry::route_beside(router, path, metrics.as_ref());
    let router = if access.requires_token() {
        router.layer(middleware::from_fn_with_state(access.clone(), authenticate))
    } else {
        router
    };
    let router = match &access.oauth {
        Some(oauth) => {
            let document = oauth.metadata().to_string();
            oauth.metadata_paths().iter().fold(router, |router, path| {
                let document = document.clone();
                let serve =
                    move || async move { ([(header::CONTENT_TYPE, "application/json")], document) };
                router.route(path, axum::routing::get(serve))
            })
        }
        None => router,
    };
    let router = match access.allowed.cors() {
        Some(cors) => router.layer(cors),
        None => router,
    };
    #[cfg(feature = "console")]
    let router = crate::console::mount(router, console, access);
    let guard = Guard::new(addr, access.allowed.clone());
    router.layer(middleware::from_fn_with_state(guard, rebinding::check))
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
            Err(ServeError::TokenRequired { .. })
        ));
        assert!(HttpAccess::open().check(local).is_ok());
        assert!(HttpAccess::open().check(local6).is_ok());
        assert!(HttpAccess::bearer(TOKEN).unwrap().check(lan).is_ok());
    }

    #[test]
    fn an_endpoint_path_must_be_a_fixed_absolute_path() {
        assert!(check_path("/mcp").is_ok());
        assert!(check_path("/v1/mcp").is_ok());
        for bad in ["mcp", "", "/{id}", "/*rest"] {
            assert!(
                matches!(check_path(bad), Err(ServeError::BadPath(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_empty_token_is_refused() {
        assert!(matches!(
            HttpAccess::bearer("  "),
            Err(ServeError::EmptyToken)
        ));
    }

    #[test]
    fn a_token_shorter_than_32_bytes_is_refused_saying_how_to_make_one() {
        for short in ["x", "s3cret", &TOKEN[..31]] {
            let error = HttpAccess::bearer(short).unwrap_err();
            assert!(
                matches!(error, ServeError::TokenTooShort { bytes } if bytes == short.len()),
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
