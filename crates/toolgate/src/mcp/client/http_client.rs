//! The HTTP client an upstream server reached by URL is spoken to with: the spec
//! file's `network:` policy applied as for `http:` bindings (the same checked
//! resolver, no proxy), and redirects kept within the URL's origin.

use std::sync::Arc;

use toolgate_core::spec::NetworkPolicy;

use crate::http::resolver::{check_literal, check_url, checked_client, url_port};

/// Redirects an MCP client follows for one request.
const MAX_MCP_REDIRECTS: usize = 10;

/// The HTTP client for a server at `url`: the URL checked against `network` first
/// (its host resolved, so a refusal is named before any handshake), then a client
/// whose resolver checks every address again when it connects. Redirects are
/// followed only for 307 and 308 within the URL's origin, so the session id and the
/// configured headers never go to another host, and the JSON-RPC body is kept.
pub(super) async fn checked_http_client(
    network: &Arc<NetworkPolicy>,
    url: &str,
) -> Result<reqwest::Client, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("the URL is not valid ({e})"))?;
    check_url(network, &parsed)
        .await
        .map_err(|e| e.to_string())?;
    let port = url_port(&parsed).unwrap_or_default();
    let hops = network.clone();
    let redirects = reqwest::redirect::Policy::custom(move |attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_MCP_REDIRECTS {
            attempt.error(format!("more than {MAX_MCP_REDIRECTS} redirects"))
        } else if let Err(refusal) = check_literal(&hops, attempt.url()) {
            attempt.error(refusal)
        } else {
            attempt.follow()
        }
    });
    checked_client(network.clone(), port)
        .redirect(redirects)
        .build()
        .map_err(|e| format!("the HTTP client could not be started ({e})"))
}
