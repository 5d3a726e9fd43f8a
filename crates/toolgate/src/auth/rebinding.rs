//! The DNS-rebinding defence of the HTTP front door: which `Host` names and which
//! browser `Origin`s it answers, checked on every request (the MCP endpoint and
//! the metadata routes alike) before anything else.
//!
//! A web page cannot name the server's address in its own origin, so it reaches
//! a server on loopback either by pointing a name it controls at `127.0.0.1`
//! (the request then carries that name as `Host`) or by a cross-origin request
//! (which carries the page's `Origin`). By default the server answers only its
//! bind address and `localhost`, with its port; a server bound to every
//! interface (`0.0.0.0`, `::`) answers any IP address with its port, since an IP
//! literal cannot be rebound. Requests without `Origin` (every non-browser
//! client) pass; a request from a browser passes when its origin is the server's
//! own or one the operator allowed, and the origins the operator allowed get the
//! CORS answers a browser needs to call the server and read its replies.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

use super::AccessError;

/// The `Host` names and `Origin`s a server answers beyond its defaults.
#[derive(Debug, Clone, Default)]
pub(crate) struct Allowed {
    hosts: Vec<HostEntry>,
    origins: Vec<OriginEntry>,
}

/// A host name, with the one port it may come with (`None`: any port).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    host: String,
    port: Option<u16>,
}

/// A browser origin: `null`, or a scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OriginEntry {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: u16,
    },
}

impl Allowed {
    /// Also answers `Host: host` (`name` for any port, `name:port` for that one).
    pub(crate) fn host(&mut self, host: &str) -> Result<(), AccessError> {
        let entry = parse_host(host.trim()).ok_or_else(|| AccessError::BadAllowedHost {
            host: host.to_owned(),
        })?;
        self.hosts.push(entry);
        Ok(())
    }

    /// Also answers browsers at `origin` (`https://app.example.com`, with its
    /// port when not the scheme's default, or `null`).
    pub(crate) fn origin(&mut self, origin: &str) -> Result<(), AccessError> {
        let entry = parse_origin(origin.trim()).ok_or_else(|| AccessError::BadAllowedOrigin {
            origin: origin.to_owned(),
        })?;
        self.origins.push(entry);
        Ok(())
    }

    /// The CORS answers for the allowed origins, if the operator allowed any: a
    /// preflight gets the methods of the transport and the headers it asked for,
    /// and a reply shows the page the session id and the challenge. It mirrors
    /// the request's origin: [`check`] runs first and refuses any other.
    pub(crate) fn cors(&self) -> Option<CorsLayer> {
        if self.origins.is_empty() {
            return None;
        }
        Some(
            CorsLayer::new()
                .allow_origin(AllowOrigin::mirror_request())
                .allow_methods([Method::GET, Method::POST, Method::DELETE])
                .allow_headers(AllowHeaders::mirror_request())
                .expose_headers([
                    HeaderName::from_static("mcp-session-id"),
                    HeaderName::from_static("mcp-protocol-version"),
                    header::WWW_AUTHENTICATE,
                ])
                .max_age(Duration::from_secs(600)),
        )
    }
}

/// What one server answers: its defaults for `addr` and the operator's additions.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    addr: SocketAddr,
    allowed: Allowed,
}

impl Guard {
    pub(crate) fn new(addr: SocketAddr, allowed: Allowed) -> Arc<Self> {
        Arc::new(Guard { addr, allowed })
    }

    /// Whether a request carrying `Host: host` (port `port`, 80 when absent)
    /// reaches this server by one of its own names.
    fn own_host(&self, host: &str, port: u16) -> bool {
        if port != self.addr.port() {
            return false;
        }
        if host == "localhost" {
            return true;
        }
        match host.parse::<IpAddr>() {
            Ok(ip) if self.addr.ip().is_unspecified() => {
                ip.is_ipv4() == self.addr.ip().is_ipv4() || self.addr.is_ipv6()
            }
            Ok(ip) => ip == self.addr.ip(),
            Err(_) => false,
        }
    }

    fn host_allowed(&self, host: &HostEntry) -> bool {
        let port = host.port.unwrap_or(80);
        self.own_host(&host.host, port)
            || self
                .allowed
                .hosts
                .iter()
                .any(|a| a.host == host.host && a.port.is_none_or(|p| p == port))
    }

    fn origin_allowed(&self, origin: &OriginEntry) -> bool {
        let own = match origin {
            OriginEntry::Tuple { scheme, host, port } => {
                scheme == "http" && self.own_host(host, *port)
            }
            OriginEntry::Null => false,
        };
        own || self.allowed.origins.contains(origin)
    }

    /// Why a request with these headers is refused, if it is.
    fn refuse(&self, uri: &axum::http::Uri, headers: &HeaderMap) -> Option<Response> {
        let host = headers
            .get(header::HOST)
            .map(|v| v.to_str().ok())
            .unwrap_or_else(|| uri.authority().map(Authority::as_str));
        let Some(host) = host else {
            return Some(
                (
                    StatusCode::BAD_REQUEST,
                    "the request has no readable `Host` header; send the server's address as `Host`\n",
                )
                    .into_response(),
            );
        };
        match parse_host(host) {
            Some(entry) if self.host_allowed(&entry) => {}
            _ => {
                return Some(forbidden(format!(
                    "the request's Host `{}` is not a name this server answers (a defence against DNS rebinding); \
                     reach it at {} or localhost with its port, or start it with `--allowed-host {}`\n",
                    shown(host),
                    self.addr,
                    shown(host),
                )));
            }
        }
        let origin = headers.get(header::ORIGIN)?;
        let text = origin.to_str().unwrap_or("");
        match parse_origin(text) {
            Some(entry) if self.origin_allowed(&entry) => None,
            _ => Some(forbidden(format!(
                "a web page at `{}` may not call this server (its Origin is not allowed); \
                 if that page is yours, start the server with `--allowed-origin {}`\n",
                shown(text),
                shown(text),
            ))),
        }
    }
}

/// Refuses, before any other handling, a request whose `Host` or `Origin` this
/// server does not answer.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.refuse(request.uri(), request.headers()) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

fn forbidden(message: String) -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// A header value as it may be shown back: printable ASCII, at most 100 characters.
fn shown(value: &str) -> String {
    value
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(100)
        .collect()
}

fn parse_host(value: &str) -> Option<HostEntry> {
    let authority: Authority = value.parse().ok()?;
    if authority.as_str().contains('@') || authority.host().is_empty() {
        return None;
    }
    Some(HostEntry {
        host: normalize(authority.host()),
        port: authority.port_u16(),
    })
}

fn parse_origin(value: &str) -> Option<OriginEntry> {
    if value.eq_ignore_ascii_case("null") {
        return Some(OriginEntry::Null);
    }
    let url = url::Url::parse(value).ok()?;
    // An origin is a scheme, a host and a port: nothing else.
    if !matches!(url.path(), "" | "/")
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return None;
    }
    Some(OriginEntry::Tuple {
        scheme: url.scheme().to_owned(),
        host: normalize(url.host_str()?),
        port: url.port_or_known_default()?,
    })
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(addr: &str, hosts: &[&str], origins: &[&str]) -> Arc<Guard> {
        let mut allowed = Allowed::default();
        for host in hosts {
            allowed.host(host).unwrap();
        }
        for origin in origins {
            allowed.origin(origin).unwrap();
        }
        Guard::new(addr.parse().unwrap(), allowed)
    }

    fn host_ok(guard: &Guard, host: &str) -> bool {
        parse_host(host).is_some_and(|h| guard.host_allowed(&h))
    }

    fn origin_ok(guard: &Guard, origin: &str) -> bool {
        parse_origin(origin).is_some_and(|o| guard.origin_allowed(&o))
    }

    #[test]
    fn a_server_answers_its_bind_address_and_localhost_with_its_port() {
        let g = guard("127.0.0.1:8731", &[], &[]);
        assert!(host_ok(&g, "127.0.0.1:8731"));
        assert!(host_ok(&g, "localhost:8731"));
        assert!(host_ok(&g, "LOCALHOST:8731"));
        assert!(!host_ok(&g, "localhost:9999"));
        assert!(!host_ok(&g, "localhost"), "port 80 is not the server's");
        assert!(!host_ok(&g, "127.0.0.2:8731"));
        assert!(!host_ok(&g, "rebind.attacker.example:8731"));
        let six = guard("[::1]:8731", &[], &[]);
        assert!(host_ok(&six, "[::1]:8731"));
        assert!(!host_ok(&six, "127.0.0.1:8731"));
    }

    #[test]
    fn a_server_on_every_interface_answers_any_ip_address_but_no_other_name() {
        let g = guard("0.0.0.0:8731", &[], &[]);
        assert!(host_ok(&g, "192.168.1.20:8731"));
        assert!(host_ok(&g, "127.0.0.1:8731"));
        assert!(!host_ok(&g, "tools.lan:8731"));
        let g = guard("[::]:8731", &[], &[]);
        assert!(host_ok(&g, "[fe80::1]:8731"));
        assert!(host_ok(&g, "10.0.0.1:8731"), "a dual-stack socket");
    }

    #[test]
    fn allowed_hosts_match_any_port_unless_they_name_one() {
        let g = guard(
            "127.0.0.1:8731",
            &["tools.example.com", "proxy.lan:8443"],
            &[],
        );
        assert!(host_ok(&g, "tools.example.com"));
        assert!(host_ok(&g, "tools.example.com:443"));
        assert!(host_ok(&g, "proxy.lan:8443"));
        assert!(!host_ok(&g, "proxy.lan"));
    }

    #[test]
    fn an_origin_passes_when_it_is_the_servers_own_or_allowed() {
        let g = guard("127.0.0.1:8731", &[], &["https://app.example.com", "null"]);
        assert!(origin_ok(&g, "http://127.0.0.1:8731"));
        assert!(origin_ok(&g, "http://localhost:8731"));
        assert!(!origin_ok(&g, "https://localhost:8731"));
        assert!(!origin_ok(&g, "http://localhost:3000"));
        assert!(!origin_ok(&g, "https://evil.example"));
        assert!(origin_ok(&g, "https://app.example.com"));
        assert!(origin_ok(&g, "https://app.example.com:443"));
        assert!(!origin_ok(&g, "https://app.example.com:8443"));
        assert!(!origin_ok(&g, "http://app.example.com"));
        assert!(origin_ok(&g, "null"));
        assert!(!origin_ok(&guard("127.0.0.1:8731", &[], &[]), "null"));
    }

    #[test]
    fn a_malformed_allowed_host_or_origin_is_refused_saying_which() {
        let mut allowed = Allowed::default();
        for bad in ["", "a b", "http://x", "user@host"] {
            assert!(
                matches!(allowed.host(bad), Err(AccessError::BadAllowedHost { .. })),
                "{bad}"
            );
        }
        for bad in [
            "",
            "app.example.com",
            "https://app.example.com/path",
            "https://u@x",
        ] {
            let error = allowed.origin(bad).unwrap_err();
            assert!(
                matches!(error, AccessError::BadAllowedOrigin { .. }),
                "{bad}"
            );
            assert!(error.to_string().contains("https://"), "{error}");
        }
    }
}
