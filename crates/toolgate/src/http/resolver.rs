//! The checked resolver: how every outgoing HTTP connection (an `http:` binding, an
//! MCP server reached by URL) stays inside the spec file's `network:` policy.
//!
//! A URL's IP-literal host is checked before anything is sent; a host name is
//! resolved by [`PolicyResolver`], which hands the connector only the addresses that
//! passed, so the connection goes to an address that was checked and a name that
//! resolves elsewhere between two lookups (DNS rebinding) gains nothing. The resolver
//! is built for one port, because `network.allow` entries may open one port only and
//! the client's resolver is told the name alone: a client is used only for URLs on
//! that port. No proxy from the environment is used: a proxy would resolve names
//! itself.

use std::error::Error as StdError;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use toolgate_core::spec::{NetworkPolicy, NetworkRefusal};
use url::{Host, Url};

pub(crate) type BoxError = Box<dyn StdError + Send + Sync>;

/// Why a URL may not be connected to.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UrlRefusal {
    /// The policy refuses it (permanent).
    #[error("refused before connecting: {0}")]
    Policy(NetworkRefusal),
    /// Not http or https (permanent).
    #[error("refused a `{0}:` URL; only http and https are spoken")]
    Scheme(String),
    /// The URL names no host or port (permanent).
    #[error("`{0}` names no host and port to connect to")]
    NoHost(String),
    /// The name could not be resolved (may pass).
    #[error("cannot resolve {host}: {reason}")]
    Resolve { host: String, reason: String },
}

impl UrlRefusal {
    /// Whether trying again later may succeed.
    pub(crate) fn may_pass(&self) -> bool {
        matches!(self, UrlRefusal::Resolve { .. })
    }
}

/// The port a URL connects to: its own, or its scheme's.
pub(crate) fn url_port(url: &Url) -> Option<u16> {
    url.port_or_known_default()
}

/// The checks made before a URL is sent to: its scheme, and an IP-literal host (host
/// names are checked by the resolver, where they are resolved).
pub(crate) fn check_literal(policy: &NetworkPolicy, url: &Url) -> Result<(), UrlRefusal> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(UrlRefusal::Scheme(other.to_owned())),
    }
    let port = url_port(url).ok_or_else(|| UrlRefusal::NoHost(url.to_string()))?;
    if let Some(ip) = literal_host(url) {
        let host = url.host_str().unwrap_or_default();
        policy
            .check_address(host, ip, port)
            .map_err(UrlRefusal::Policy)?;
    }
    Ok(())
}

/// The addresses a request to `url` may connect to, resolving its host as the
/// connector would; the refusal when there are none.
pub(crate) async fn check_url(
    policy: &NetworkPolicy,
    url: &Url,
) -> Result<Vec<IpAddr>, UrlRefusal> {
    check_literal(policy, url)?;
    let port = url_port(url).ok_or_else(|| UrlRefusal::NoHost(url.to_string()))?;
    if let Some(ip) = literal_host(url) {
        return Ok(vec![ip]);
    }
    let host = url
        .host_str()
        .ok_or_else(|| UrlRefusal::NoHost(url.to_string()))?;
    resolve_checked(policy, host, port)
        .await
        .map_err(|e| match e.downcast::<NetworkRefusal>() {
            Ok(refusal) => UrlRefusal::Policy(*refusal),
            Err(e) => UrlRefusal::Resolve {
                host: host.to_owned(),
                reason: e.to_string(),
            },
        })
}

/// A client builder whose connections stay inside `policy` for URLs on `port`: the
/// checked resolver, and no proxy. Redirects are the caller's to set.
pub(crate) fn checked_client(policy: Arc<NetworkPolicy>, port: u16) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .dns_resolver(PolicyResolver { policy, port })
}

/// Resolves names for the HTTP client and returns only addresses the policy allows
/// on its port.
struct PolicyResolver {
    policy: Arc<NetworkPolicy>,
    port: u16,
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let port = self.port;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let allowed = resolve_checked(&policy, &host, port).await?;
            let addrs: reqwest::dns::Addrs =
                Box::new(allowed.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Resolves `host` and keeps the addresses the policy allows on `port` (all of them
/// for a host listed by name for that port).
pub(crate) async fn resolve_checked(
    policy: &NetworkPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<IpAddr>, BoxError> {
    let found: Vec<IpAddr> = tokio::net::lookup_host((host, port))
        .await?
        .map(|a| a.ip())
        .collect();
    tracing::debug!(host, port, addresses = ?found, "resolved");
    Ok(policy.resolved(host, found, port)?)
}

/// The IP address a URL names literally, if it does.
pub(crate) fn literal_host(url: &Url) -> Option<IpAddr> {
    match url.host()? {
        Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        Host::Domain(_) => None,
    }
}

/// The policy refusal somewhere in an error's chain of causes.
pub(crate) fn refusal_in(error: &(dyn StdError + 'static)) -> Option<NetworkRefusal> {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(refusal) = e.downcast_ref::<NetworkRefusal>() {
            return Some(refusal.clone());
        }
        cause = e.source();
    }
    None
}
