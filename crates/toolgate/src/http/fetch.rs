//! Fetching a document by URL (an OpenAPI description, and the files its `$ref`s
//! name) under the same network policy as HTTP bindings.
//!
//! The same checks apply as to a binding's request: http or https only; an
//! IP-literal host checked before anything is sent and a host name resolved by the
//! checked resolver, so the connection goes to an address that passed (loopback and
//! private addresses only when `network.allow` lists them); every redirect checked
//! the same way, and followed at most [`FetchLimits::max_redirects`] times; the body
//! read up to a size limit and the whole exchange bounded in time. No credentials
//! are sent, and none from the URL are shown in errors.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, LOCATION};
use toolgate_core::spec::{NetworkPolicy, NetworkRefusal, NetworkSection};
use url::Url;

use super::resolver::{UrlRefusal, check_literal, checked_client, refusal_in, url_port};
use super::response::read_limited;
use super::runtime::{DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_REDIRECTS, MAX_CONNECT_TIMEOUT};

/// How much a fetch may read, wait and follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchLimits {
    /// The largest body read, in bytes; a longer one is an error.
    pub max_bytes: u64,
    /// The whole exchange, redirects included.
    pub timeout: Duration,
    /// Redirects followed at most.
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    /// 64 MiB, the HTTP bindings' 30 s and 5 redirects.
    fn default() -> Self {
        FetchLimits {
            max_bytes: 64 * 1024 * 1024,
            timeout: DEFAULT_HTTP_TIMEOUT,
            max_redirects: DEFAULT_MAX_REDIRECTS,
        }
    }
}

/// A fetched document.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Where it was found, after redirects.
    pub url: Url,
    /// The document's body, as text.
    pub text: String,
}

/// Why a document could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The network policy refuses a hop; `allow` is the `network.allow` entry
    /// that would let it through.
    #[error("{url} is not fetched: {reason}")]
    Refused {
        /// The URL of the hop refused.
        url: String,
        /// Why the policy refuses it.
        reason: String,
        /// The `network.allow` entry that would let it through.
        allow: String,
    },
    /// Anything else: a bad URL, a failed connection, a status, a limit.
    #[error("{0}")]
    Failed(String),
}

/// Fetches `url` (GET) under `network`'s policy and `limits`.
pub async fn fetch_document(
    network: &NetworkSection,
    url: &str,
    limits: &FetchLimits,
) -> Result<Fetched, FetchError> {
    let url =
        Url::parse(url).map_err(|e| FetchError::Failed(format!("`{url}` is not a URL: {e}")))?;
    let policy = Arc::new(NetworkPolicy::new(network));
    let shown = shown(&url);
    match tokio::time::timeout(limits.timeout, hops(policy, url, limits)).await {
        Ok(result) => result,
        Err(_) => Err(FetchError::Failed(format!(
            "{shown} was not fetched within {}",
            humantime::format_duration(limits.timeout)
        ))),
    }
}

async fn hops(
    policy: Arc<NetworkPolicy>,
    mut url: Url,
    limits: &FetchLimits,
) -> Result<Fetched, FetchError> {
    let connect_timeout = limits.timeout.min(MAX_CONNECT_TIMEOUT);
    let mut redirects = 0;
    loop {
        check_literal(&policy, &url).map_err(|r| refused(&url, r))?;
        let port = url_port(&url).unwrap_or_default();
        let client = checked_client(policy.clone(), port)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect_timeout)
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Failed(format!("cannot start the HTTP client: {e}")))?;
        tracing::debug!(url = %shown(&url), "fetching a document");
        let mut response = client
            .get(url.clone())
            .header(
                ACCEPT,
                "application/json, application/yaml;q=0.9, text/plain;q=0.8, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| match refusal_in(&e) {
                Some(refusal) => refused(&url, UrlRefusal::Policy(refusal)),
                None => {
                    FetchError::Failed(format!("cannot fetch {}: {}", shown(&url), root_cause(&e)))
                }
            })?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            if redirects >= limits.max_redirects {
                return Err(FetchError::Failed(format!(
                    "{} redirected more than {} times; fetch the final URL directly",
                    shown(&url),
                    limits.max_redirects
                )));
            }
            redirects += 1;
            url = location
                .to_str()
                .ok()
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| {
                    FetchError::Failed(format!(
                        "{} redirected to a location that is not a URL",
                        shown(&url)
                    ))
                })?;
            continue;
        }
        if !status.is_success() {
            return Err(FetchError::Failed(format!(
                "{} answered {status}",
                shown(&url)
            )));
        }
        let too_large = || {
            FetchError::Failed(format!(
                "{} is larger than the {} bytes read",
                shown(&url),
                limits.max_bytes
            ))
        };
        if response
            .content_length()
            .is_some_and(|n| n > limits.max_bytes)
        {
            return Err(too_large());
        }
        let body = read_limited(&mut response, limits.max_bytes)
            .await
            .map_err(|e| {
                FetchError::Failed(format!(
                    "the answer from {} broke off: {}",
                    shown(&url),
                    root_cause(&e)
                ))
            })?;
        if body.truncated {
            return Err(too_large());
        }
        let text = String::from_utf8(body.bytes)
            .map_err(|_| FetchError::Failed(format!("{} is not UTF-8 text", shown(&url))))?;
        return Ok(Fetched { url, text });
    }
}

/// A refused hop, saying why in the fetch's own words and what entry allows it.
fn refused(url: &Url, refusal: UrlRefusal) -> FetchError {
    let host = url.host_str().unwrap_or_default();
    let allow = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let reason = match refusal {
        UrlRefusal::Policy(NetworkRefusal::Address { host, addr, class }) => {
            if host.trim_start_matches('[').trim_end_matches(']') == addr.to_string() {
                format!("{addr} is {}", class.describe())
            } else {
                format!("`{host}` resolves to {addr}, {}", class.describe())
            }
        }
        UrlRefusal::Policy(NetworkRefusal::NotListed { host }) => {
            format!("`{host}` is not among the allowed hosts")
        }
        UrlRefusal::Policy(NetworkRefusal::OtherPort { host, port, .. }) => {
            format!("`{host}` is allowed on other ports than {port}")
        }
        UrlRefusal::Scheme(scheme) => {
            return FetchError::Failed(format!(
                "refused a `{scheme}:` URL ({}); documents are fetched over https or http only",
                shown(url)
            ));
        }
        other => return FetchError::Failed(format!("cannot fetch {}: {other}", shown(url))),
    };
    FetchError::Refused {
        url: shown(url),
        reason,
        allow,
    }
}

/// The URL for messages, without a password it may carry.
fn shown(url: &Url) -> String {
    let mut url = url.clone();
    if url.password().is_some() {
        let _ = url.set_password(None);
    }
    url.to_string()
}

fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}
