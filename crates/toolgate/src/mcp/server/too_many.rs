//! `429 Too Many Requests` with `Retry-After`, for an HTTP request that a rate
//! limit refused as a whole.
//!
//! That is a `tools/call` of the stateless revision (2026-07-28): the request
//! is the one call, so when a limit refuses the call nothing of the request
//! was done, and an HTTP client, proxy or load balancer can back off by the
//! status alone. The body is still the call's result (an `isError` result
//! saying when to retry) for a client that reads it. A call refused inside a
//! session gets that result on 200, as every other refusal: a 429 there would
//! read as the session failing.

use std::sync::{Arc, OnceLock};

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// Where the handler of a request says a rate limit refused it as a whole, and
/// after how many milliseconds to retry.
#[derive(Clone, Default)]
struct RefusedWhole(Arc<OnceLock<u64>>);

/// Answers 429 with `Retry-After` (whole seconds, rounded up) when the request's
/// handler said its call was refused by a rate limit ([`refused_whole`]). The
/// status is set once the handler's reply is ready, before anything is sent.
pub(crate) async fn answer(mut request: Request, next: Next) -> Response {
    let refused = RefusedWhole::default();
    request.extensions_mut().insert(refused.clone());
    let mut response = next.run(request).await;
    if let Some(ms) = refused.0.get() {
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        let seconds = ms.div_ceil(1000).max(1);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// Marks the HTTP request of `context` as refused as a whole by a rate limit,
/// to retry after `retry_after_ms`.
pub(crate) fn refused_whole(context: &RequestContext<RoleServer>, retry_after_ms: u64) {
    let marker = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<RefusedWhole>());
    if let Some(marker) = marker {
        let _ = marker.0.set(retry_after_ms);
    }
}
