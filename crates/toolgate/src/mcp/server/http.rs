//! The streamable HTTP transport: the MCP endpoint as an axum router, which the
//! front door ([`crate::serve`]) puts behind its access checks.

use std::sync::Arc;

use axum::Router;
use axum::middleware;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::capacity;
use super::restore::{self, ForRmcp};
use super::session::Session;
use super::{ServeError, Shared};

/// The default path of the MCP endpoint.
pub const DEFAULT_HTTP_PATH: &str = "/mcp";

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
/// the gate's argument limit. It checks neither `Host` nor credentials: the
/// front door does, before any route. Sessions end when `sessions` is cancelled.
pub(crate) fn endpoint(shared: Arc<Shared>, path: &str, sessions: CancellationToken) -> Router {
    let largest = super::max_message_bytes(shared.offering().gate.max_argument_bytes());
    // The front door's `Host`/`Origin` guard covers every route, so the
    // transport's own check of the MCP route is off.
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(sessions)
        .with_max_request_body_bytes(largest)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let capped = shared.http_sessions.clone();
    let restorable = capped.restorable().cloned();
    config.session_store = restorable.clone().map(|r| Arc::new(ForRmcp(r)) as _);
    let service = StreamableHttpService::new(
        move || Ok(Session::new(shared.clone())),
        capped.clone(),
        config,
    );
    let router = Router::new()
        .route_service(path, service)
        .layer(middleware::from_fn(move |request, next| {
            super::secure_arguments::carry(largest, request, next)
        }))
        .layer(middleware::from_fn(super::too_many::answer))
        .layer(middleware::from_fn_with_state(capped, capacity::admit));
    match restorable {
        Some(r) => router.layer(middleware::from_fn_with_state(r, restore::remember)),
        None => router,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
