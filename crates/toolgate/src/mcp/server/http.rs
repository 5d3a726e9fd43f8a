//! The streamable HTTP transport: the MCP endpoint on an axum router, with a
//! bearer token in front of it where the address is reachable from elsewhere.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::session::Session;
use super::{ServeError, Shared};

/// The default address of `toolgate serve --http`.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8731";

/// The default path of the MCP endpoint.
pub const DEFAULT_HTTP_PATH: &str = "/mcp";

/// Who may use the HTTP endpoint: anyone who can reach it, or only requests
/// carrying `Authorization: Bearer TOKEN`.
#[derive(Clone, Default)]
pub struct HttpAccess {
    token: Option<Arc<str>>,
}

impl std::fmt::Debug for HttpAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAccess")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl HttpAccess {
    /// No token: only for loopback addresses.
    pub fn open() -> Self {
        HttpAccess { token: None }
    }

    /// Requests must carry `Authorization: Bearer {token}`; others get 401.
    pub fn bearer(token: impl Into<String>) -> Result<Self, ServeError> {
        let token = token.into();
        if token.trim().is_empty() {
            return Err(ServeError::EmptyToken);
        }
        Ok(HttpAccess {
            token: Some(token.into()),
        })
    }

    pub fn requires_token(&self) -> bool {
        self.token.is_some()
    }

    /// Refuses to open a non-loopback address without a token: anyone on the
    /// network could run the catalog's tools as the served principal.
    pub fn check(&self, addr: SocketAddr) -> Result<(), ServeError> {
        if addr.ip().is_loopback() || self.token.is_some() {
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

/// The router serving the MCP endpoint at `path`. Sessions end when `sessions`
/// is cancelled.
pub(crate) fn router(
    shared: Arc<Shared>,
    path: &str,
    addr: SocketAddr,
    access: &HttpAccess,
    sessions: CancellationToken,
) -> Router {
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(sessions);
    if !addr.ip().is_loopback() {
        // The bearer token guards a reachable address; any Host name may lead to it.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(Session::new(shared.clone())),
        LocalSessionManager::default().into(),
        config,
    );
    let router = Router::new().route_service(path, service);
    match &access.token {
        Some(token) => router.layer(middleware::from_fn_with_state(token.clone(), bearer)),
        None => router,
    }
}

/// Lets through requests with the right bearer token; answers 401 otherwise.
async fn bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
    match presented {
        Some(presented) if same(presented.trim().as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer realm=\"toolgate\"")],
            "a bearer token is required: send `Authorization: Bearer <token>` with the token the server was started with\n",
        )
            .into_response(),
    }
}

/// Compares in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(HttpAccess::bearer("s3cret").unwrap().check(lan).is_ok());
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
    fn tokens_compare_equal_only_when_identical() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"abcd"));
    }

    #[test]
    fn the_token_is_not_printed() {
        let access = HttpAccess::bearer("s3cret").unwrap();
        assert!(!format!("{access:?}").contains("s3cret"));
    }
}
