//! The `network:` section and the checks behind it: where HTTP bindings may connect.
//!
//! By default a binding reaches only public addresses. Loopback, private ranges,
//! link-local (cloud metadata at 169.254.169.254 among them), unique-local IPv6,
//! multicast, documentation and reserved ranges, `0.0.0.0`, and IPv6 forms that embed
//! one of those IPv4 addresses (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are refused
//! unless `allow` lists the host or a range holding the address. `allow_public: false`
//! limits bindings to what `allow` lists. An entry may name a port (`127.0.0.1:8080`,
//! `[::1]:8080`, `api.internal:8443`): it then opens that port only, so an open
//! redirect on one allowed local service does not reach every other one.
//!
//! Everything here is pure: resolving names and connecting happen in the runtime,
//! which asks [`NetworkPolicy`] about the URL's host and then about every address the
//! host resolves to, and connects only to addresses that passed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::address::{AddressClass, IpCidr, classify};
pub use super::allow_entry::{AllowEntry, AllowTarget};

/// The `network:` section of a spec file. It applies to `http:` bindings and to MCP
/// servers reached by URL alike.
///
/// ```yaml
/// network:
///   allow: [api.internal.example, "*.corp.example", 10.20.0.0/16, "127.0.0.1:8080"]
///   allow_public: false   # only what `allow` lists
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Hosts, addresses and CIDR ranges that bindings may reach even when they are not
    /// public: `api.internal`, `*.corp.example` (its subdomains), `10.0.0.5`, `::1`,
    /// `10.20.0.0/16`, `fd00::/8`; a host or address may name one port
    /// (`127.0.0.1:8080`, `[::1]:8080`, `api.internal:8443`), otherwise every port is
    /// open. A listed host name may resolve to any address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Whether bindings may reach public addresses that `allow` does not list
    /// (default true). `false` limits every binding to the hosts and ranges in `allow`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub allow_public: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Default for NetworkSection {
    fn default() -> Self {
        NetworkSection {
            allow: Vec::new(),
            allow_public: true,
        }
    }
}

impl NetworkSection {
    /// True for a section that says nothing (public addresses only).
    pub fn is_default(&self) -> bool {
        self == &NetworkSection::default()
    }
}

/// Why a binding may not reach a host or address. The message says what to add to
/// the spec file to allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkRefusal {
    /// The host resolved to (or is) an address the policy refuses.
    #[error("{}", refused_address_message(.host, *.addr, *.class))]
    Address {
        /// The host as the URL names it.
        host: String,
        /// The address it is or resolved to.
        addr: IpAddr,
        /// Why that address is refused.
        class: AddressClass,
    },
    /// `allow_public: false` and the host is not in `allow`.
    #[error(
        "`{host}` is not in the spec file's `network.allow`, and `network.allow_public` is false; add `{host}` to `network.allow` to let bindings reach it"
    )]
    NotListed {
        /// The host as the URL names it.
        host: String,
    },
    /// The host (or its address) is listed, but with other ports than this one.
    #[error(
        "`{host}` is allowed by `network.allow` only on {}, not on port {port}; add `{}` to `network.allow` if this port is meant to be reached",
        port_words(.listed),
        listed_with_port(.host, *.port)
    )]
    OtherPort {
        /// The host as the URL names it.
        host: String,
        /// The port the connection would go to.
        port: u16,
        /// The ports the entries naming it open.
        listed: Vec<u16>,
    },
    /// The host resolved to no address at all.
    #[error("`{host}` resolves to no address; check the host name in the binding's URL")]
    NoAddress {
        /// The host as the URL names it.
        host: String,
    },
}

fn refused_address_message(host: &str, addr: IpAddr, class: AddressClass) -> String {
    let class = class.describe();
    if host.trim_start_matches('[').trim_end_matches(']') == addr.to_string() {
        format!(
            "{addr} is {class}; HTTP bindings and MCP servers may reach it only when the spec file's `network.allow` lists it (or a range holding it)"
        )
    } else {
        format!(
            "`{host}` resolves to {addr}, {class}; HTTP bindings and MCP servers may reach it only when the spec file's `network.allow` lists `{host}` (or a range holding {addr})"
        )
    }
}

fn port_words(ports: &[u16]) -> String {
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    match list.as_slice() {
        [one] => format!("port {one}"),
        _ => format!("ports {}", list.join(", ")),
    }
}

fn listed_with_port(host: &str, port: u16) -> String {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => format!("[{v6}]:{port}"),
        _ => format!("{host}:{port}"),
    }
}

/// The checks of a [`NetworkSection`], with its entries parsed. Entries that do not
/// parse are skipped here; `check` reports them. Every check takes the port the
/// connection goes to (the URL's, or its scheme's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPolicy {
    entries: Vec<AllowEntry>,
    allow_public: bool,
}

impl Default for NetworkPolicy {
    fn default() -> Self {
        NetworkPolicy::new(&NetworkSection::default())
    }
}

impl NetworkPolicy {
    /// The policy a `network:` section describes (entries that do not parse are left out).
    pub fn new(section: &NetworkSection) -> NetworkPolicy {
        NetworkPolicy {
            entries: section
                .allow
                .iter()
                .filter_map(|e| AllowEntry::parse(e).ok())
                .collect(),
            allow_public: section.allow_public,
        }
    }

    /// The parsed `allow` entries.
    pub fn entries(&self) -> &[AllowEntry] {
        &self.entries
    }

    /// Whether a host name (not an IP literal) is listed in `allow` for `port`, by
    /// name or as a subdomain of a `*.` entry.
    pub fn lists_host(&self, host: &str, port: u16) -> bool {
        let host = normal_host(host);
        self.entries
            .iter()
            .any(|e| e.names_host(&host) && e.opens_port(port))
    }

    /// Whether `ip` is in a range that `allow` lists for `port`.
    pub fn lists_address(&self, ip: IpAddr, port: u16) -> bool {
        self.entries
            .iter()
            .any(|e| e.holds_address(ip) && e.opens_port(port))
    }

    /// The ports of the entries that list `host` by name only with a port, when none
    /// opens `port`; empty when `host` is listed for `port` or not at all.
    fn other_ports_of_host(&self, host: &str, port: u16) -> Vec<u16> {
        let host = normal_host(host);
        other_ports(self.entries.iter().filter(|e| e.names_host(&host)), port)
    }

    fn other_ports_of_address(&self, ip: IpAddr, port: u16) -> Vec<u16> {
        other_ports(self.entries.iter().filter(|e| e.holds_address(ip)), port)
    }

    /// Whether a binding may connect to `addr` on `port`, where `host` is `addr` (an
    /// IP literal) or a name that resolved to it (and is not listed by name).
    pub fn check_address(&self, host: &str, addr: IpAddr, port: u16) -> Result<(), NetworkRefusal> {
        if self.lists_address(addr, port) {
            return Ok(());
        }
        let class = classify(addr);
        if class == AddressClass::Public && self.allow_public {
            return Ok(());
        }
        let listed = self.other_ports_of_address(addr, port);
        if !listed.is_empty() {
            let is_literal = host.trim_start_matches('[').trim_end_matches(']') == addr.to_string();
            return Err(NetworkRefusal::OtherPort {
                host: if is_literal {
                    addr.to_string()
                } else {
                    host.to_owned()
                },
                port,
                listed,
            });
        }
        match class {
            AddressClass::Public => Err(NetworkRefusal::NotListed {
                host: host.to_owned(),
            }),
            class => Err(NetworkRefusal::Address {
                host: host.to_owned(),
                addr,
                class,
            }),
        }
    }

    /// The addresses of `addrs` a binding may connect to on `port`. Refused ones are
    /// dropped, so a name that resolves to a public and a private address reaches only
    /// the public one; when none is left, the refusal of the first is the error.
    pub fn filter_addresses(
        &self,
        host: &str,
        addrs: impl IntoIterator<Item = IpAddr>,
        port: u16,
    ) -> Result<Vec<IpAddr>, NetworkRefusal> {
        let mut first_refusal = None;
        let mut allowed = Vec::new();
        for addr in addrs {
            match self.check_address(host, addr, port) {
                Ok(()) => allowed.push(addr),
                Err(refusal) => {
                    first_refusal.get_or_insert(refusal);
                }
            }
        }
        match (allowed.is_empty(), first_refusal) {
            (false, _) => Ok(allowed),
            (true, Some(refusal)) => {
                let listed = self.other_ports_of_host(host, port);
                if listed.is_empty() {
                    Err(refusal)
                } else {
                    Err(NetworkRefusal::OtherPort {
                        host: host.to_owned(),
                        port,
                        listed,
                    })
                }
            }
            (true, None) => Err(NetworkRefusal::NoAddress {
                host: host.to_owned(),
            }),
        }
    }

    /// The addresses `host` may be reached at on `port`, given what it resolved to:
    /// all of them for a host listed by name for that port, else those the policy
    /// allows.
    pub fn resolved(
        &self,
        host: &str,
        found: Vec<IpAddr>,
        port: u16,
    ) -> Result<Vec<IpAddr>, NetworkRefusal> {
        if self.lists_host(host, port) {
            if found.is_empty() {
                return Err(NetworkRefusal::NoAddress {
                    host: host.to_owned(),
                });
            }
            return Ok(found);
        }
        self.filter_addresses(host, found, port)
    }

    /// Whether a URL host written in a spec file is allowed on `port` without
    /// resolving it: a host listed by name, or an IP literal the policy accepts. Host
    /// names that are not listed would need resolving, so they are not (this is what a
    /// sandbox keeps).
    pub fn allows_statically(&self, host: &str, port: u16) -> bool {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => self.check_address(host, ip, port).is_ok(),
            Err(_) => self.lists_host(host, port),
        }
    }

    /// Why a URL as written in a spec file will be refused, judged from its literal
    /// authority alone: an IP literal the policy refuses, or `localhost` when loopback
    /// is not allowed. `None` when it may pass (names are checked when they resolve)
    /// or when the URL names no literal host.
    pub fn refusal_for_url(&self, url: &str) -> Option<NetworkRefusal> {
        let (scheme, host, port) = literal_authority(url)?;
        let port = match port {
            Some(port) => port,
            None => default_port(scheme)?,
        };
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        match bare.parse::<IpAddr>() {
            Ok(ip) => self.check_address(bare, ip, port).err(),
            Err(_) if bare.eq_ignore_ascii_case("localhost") && !self.lists_host(bare, port) => {
                self.check_address(bare, IpAddr::V4(Ipv4Addr::LOCALHOST), port)
                    .err()
            }
            Err(_) => None,
        }
    }
}

/// Cloud metadata services, which hand the machine's credentials to whoever asks:
/// 169.254.169.254 (AWS, Google Cloud, Azure, OpenStack and most others), AWS's
/// IPv6 endpoint `fd00:ec2::254`, and Alibaba Cloud's 100.100.100.200.
pub const METADATA_ADDRESSES: [IpAddr; 3] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
];

/// Host names of cloud metadata services (Google Cloud's).
pub const METADATA_HOSTS: [&str; 1] = ["metadata.google.internal"];

/// Whether `ip` is a cloud metadata service's address (in any IPv6 form of it).
pub fn is_metadata_address(ip: IpAddr) -> bool {
    METADATA_ADDRESSES
        .iter()
        .any(|m| IpCidr::single(*m).contains(ip))
}

/// Suffixes of names only a private network resolves: special-use and
/// commonly used private top-level domains.
const PRIVATE_SUFFIXES: [&str; 10] = [
    "localhost",
    "local",
    "internal",
    "localdomain",
    "lan",
    "home",
    "home.arpa",
    "intranet",
    "corp",
    "private",
];

/// Whether a host name (not an IP literal) is one only a private network resolves:
/// a name of one label (`db`, `localhost`), or a name under `.internal`, `.local`,
/// `.localhost`, `.home.arpa`, `.lan` and the like.
pub fn is_private_name(host: &str) -> bool {
    let host = normal_host(host);
    !host.contains('.')
        || PRIVATE_SUFFIXES.iter().any(|suffix| {
            host == *suffix
                || host
                    .strip_suffix(suffix)
                    .is_some_and(|head| head.ends_with('.'))
        })
}

fn normal_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The ports `entries` open, when they all name one and none is `port`.
fn other_ports<'a>(entries: impl Iterator<Item = &'a AllowEntry>, port: u16) -> Vec<u16> {
    let mut ports = Vec::new();
    for entry in entries {
        match entry.port {
            None => return Vec::new(),
            Some(p) if p == port => return Vec::new(),
            Some(p) => {
                if !ports.contains(&p) {
                    ports.push(p);
                }
            }
        }
    }
    ports.sort_unstable();
    ports
}

/// The port a scheme connects to when a URL names none.
pub fn default_port(scheme: &str) -> Option<u16> {
    match scheme.to_ascii_lowercase().as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The `network.allow` entry that opens what a URL names: `host:port` when the URL
/// names its port, else the host (an entry for every port).
pub(crate) fn suggested_entry(url: &str) -> Option<String> {
    let (_, host, port) = literal_authority(url)?;
    Some(match port {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// The scheme, host (IPv6 in brackets) and port of a URL template's literal
/// authority; `None` when it has none, or when a placeholder or reference stands in
/// it.
pub fn literal_authority(url: &str) -> Option<(&str, &str, Option<u16>)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains(['{', '}', '$']) {
        return None;
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if host_port.starts_with('[') {
        let end = host_port.find(']')?;
        (&host_port[..=end], host_port[end + 1..].strip_prefix(':'))
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some("") | None => None,
        Some(port) => Some(port.parse().ok()?),
    };
    Some((scheme, host, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn policy(allow: &[&str], allow_public: bool) -> NetworkPolicy {
        NetworkPolicy::new(&NetworkSection {
            allow: allow.iter().map(|e| (*e).to_owned()).collect(),
            allow_public,
        })
    }

    #[test]
    fn the_default_policy_refuses_every_address_that_is_not_public() {
        let policy = NetworkPolicy::default();
        assert!(policy.check_address("h", ip("8.8.8.8"), 443).is_ok());
        for addr in [
            "127.0.0.1",
            "169.254.169.254",
            "10.0.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "fd12::1",
        ] {
            let err = policy.check_address("h", ip(addr), 80).unwrap_err();
            assert!(matches!(err, NetworkRefusal::Address { .. }), "{addr}");
        }
    }

    #[test]
    fn a_refusal_says_what_the_address_is_and_what_to_allow() {
        let err = NetworkPolicy::default()
            .check_address("metadata.internal", ip("169.254.169.254"), 80)
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("`metadata.internal` resolves to 169.254.169.254"),
            "{message}"
        );
        assert!(message.contains("link-local"), "{message}");
        assert!(message.contains("network.allow"), "{message}");
        let literal = NetworkPolicy::default()
            .check_address("10.0.0.1", ip("10.0.0.1"), 80)
            .unwrap_err()
            .to_string();
        assert!(
            literal.starts_with("10.0.0.1 is a private-network address"),
            "{literal}"
        );
    }

    #[test]
    fn allow_entries_open_hosts_subdomains_and_ranges() {
        let policy = policy(
            &[
                "Api.Internal.",
                "*.corp.example",
                "10.20.0.0/16",
                "127.0.0.1",
                "[::1]",
            ],
            true,
        );
        assert!(policy.lists_host("api.internal", 443));
        assert!(policy.lists_host("API.internal.", 8443));
        assert!(policy.lists_host("x.corp.example", 80));
        assert!(!policy.lists_host("corp.example", 80));
        assert!(!policy.lists_host("evilcorp.example", 80));
        assert!(policy.check_address("h", ip("10.20.3.4"), 80).is_ok());
        assert!(policy.check_address("h", ip("10.21.0.1"), 80).is_err());
        assert!(policy.check_address("h", ip("127.0.0.1"), 1).is_ok());
        assert!(
            policy
                .check_address("h", ip("::ffff:127.0.0.1"), 80)
                .is_ok()
        );
        assert!(policy.check_address("h", ip("127.0.0.2"), 80).is_err());
        assert!(policy.check_address("h", ip("::1"), 65535).is_ok());
    }

    #[test]
    fn an_entry_with_a_port_opens_that_port_only() {
        let policy = policy(
            &[
                "127.0.0.1:8080",
                "[::1]:8080",
                "localhost:9000",
                "*.corp.example:8443",
            ],
            true,
        );
        assert!(
            policy
                .check_address("127.0.0.1", ip("127.0.0.1"), 8080)
                .is_ok()
        );
        assert!(policy.check_address("::1", ip("::1"), 8080).is_ok());
        assert!(policy.lists_host("localhost", 9000));
        assert!(!policy.lists_host("localhost", 9001));
        assert!(policy.lists_host("a.corp.example", 8443));
        assert!(!policy.lists_host("a.corp.example", 443));
        let err = policy
            .check_address("127.0.0.1", ip("127.0.0.1"), 9090)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`127.0.0.1` is allowed by `network.allow` only on port 8080, not on port 9090; add `127.0.0.1:9090` to `network.allow` if this port is meant to be reached"
        );
        let err = policy.check_address("::1", ip("::1"), 22).unwrap_err();
        assert!(err.to_string().contains("add `[::1]:22`"), "{err}");
        // A name listed on one port resolves under the address rules on another.
        let err = policy
            .resolved("localhost", vec![ip("127.0.0.1")], 9001)
            .unwrap_err();
        assert!(
            matches!(&err, NetworkRefusal::OtherPort { listed, .. } if listed == &[9000]),
            "{err:?}"
        );
        assert_eq!(
            policy.resolved("localhost", vec![ip("127.0.0.1")], 9000),
            Ok(vec![ip("127.0.0.1")])
        );
        // Public addresses stay reachable on every port.
        assert!(policy.check_address("h", ip("8.8.8.8"), 8443).is_ok());
    }

    #[test]
    fn without_public_access_only_listed_hosts_and_ranges_pass() {
        let policy = policy(&["api.example.com", "203.0.113.0/24"], false);
        assert!(policy.lists_host("api.example.com", 443));
        assert!(!policy.lists_host("other.example.com", 443));
        assert!(matches!(
            policy.check_address("other.example.com", ip("8.8.8.8"), 443),
            Err(NetworkRefusal::NotListed { .. })
        ));
        assert!(policy.check_address("doc", ip("203.0.113.9"), 443).is_ok());
    }

    #[test]
    fn filtering_keeps_the_allowed_addresses_and_reports_the_first_refusal() {
        let policy = NetworkPolicy::default();
        assert_eq!(
            policy
                .filter_addresses("h", [ip("10.0.0.1"), ip("8.8.8.8")], 443)
                .unwrap(),
            [ip("8.8.8.8")]
        );
        let err = policy
            .filter_addresses("h", [ip("10.0.0.1"), ip("127.0.0.1")], 443)
            .unwrap_err();
        assert!(matches!(err, NetworkRefusal::Address { addr, .. } if addr == ip("10.0.0.1")));
        assert!(matches!(
            policy.filter_addresses("h", [], 443),
            Err(NetworkRefusal::NoAddress { .. })
        ));
    }

    #[test]
    fn static_checks_accept_listed_names_and_allowed_literals_only() {
        let policy = policy(&["api.example.com", "127.0.0.1", "[::1]:8080"], false);
        assert!(policy.allows_statically("api.example.com", 443));
        assert!(policy.allows_statically("127.0.0.1", 80));
        assert!(policy.allows_statically("[::1]", 8080));
        assert!(!policy.allows_statically("[::1]", 8081));
        assert!(!policy.allows_statically("8.8.8.8", 443));
        assert!(!policy.allows_statically("other.example.com", 443));
        assert!(!policy.allows_statically("169.254.169.254", 80));
    }

    #[test]
    fn a_url_is_judged_by_its_literal_host_and_port() {
        let policy = policy(&["127.0.0.1:8080"], true);
        assert_eq!(policy.refusal_for_url("http://127.0.0.1:8080/mcp"), None);
        assert!(matches!(
            policy.refusal_for_url("http://127.0.0.1/mcp"),
            Some(NetworkRefusal::OtherPort { port: 80, .. })
        ));
        assert!(matches!(
            policy.refusal_for_url("http://169.254.169.254/latest"),
            Some(NetworkRefusal::Address {
                class: AddressClass::LinkLocal,
                ..
            })
        ));
        assert!(policy.refusal_for_url("http://localhost:3000/").is_some());
        assert!(policy.refusal_for_url("https://[::1]:8080/").is_some());
        assert_eq!(policy.refusal_for_url("https://api.example.com/"), None);
        assert_eq!(policy.refusal_for_url("https://{args.h}/"), None);
        assert_eq!(
            literal_authority("https://u:p@[::1]:8443/x"),
            Some(("https", "[::1]", Some(8443)))
        );
        assert_eq!(
            literal_authority("http://h.example/x"),
            Some(("http", "h.example", None))
        );
    }

    #[test]
    fn metadata_addresses_are_known_in_every_form_and_private_names_by_suffix() {
        for addr in [
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
        ] {
            assert!(is_metadata_address(ip(addr)), "{addr}");
        }
        assert!(!is_metadata_address(ip("169.254.169.253")));
        for name in [
            "localhost",
            "db",
            "metadata.google.internal",
            "printer.local",
            "api.internal.",
            "nas.home.arpa",
            "app.localhost",
        ] {
            assert!(is_private_name(name), "{name}");
        }
        for name in ["api.github.com", "internal.example.com", "lan.example"] {
            assert!(!is_private_name(name), "{name}");
        }
    }

    proptest! {
        #[test]
        fn any_text_yields_an_authority_or_none_without_panicking(text in "\\PC{0,40}") {
            let _ = literal_authority(&text);
        }

        #[test]
        fn mapped_ipv6_addresses_are_checked_as_their_ipv4_address(a in any::<u32>(), port in 1u16..) {
            let v4 = Ipv4Addr::from(a);
            let policy = NetworkPolicy::default();
            prop_assert_eq!(
                policy.check_address("h", IpAddr::V4(v4), port).is_ok(),
                policy.check_address("h", IpAddr::V6(v4.to_ipv6_mapped()), port).is_ok()
            );
        }

        #[test]
        fn an_address_with_a_port_opens_exactly_that_port(a in any::<u32>(), port in 1u16.., other in 1u16..) {
            let v4 = Ipv4Addr::from(a);
            let entry = AllowEntry::parse(&format!("{v4}:{port}")).unwrap();
            prop_assert_eq!(entry.to_string(), format!("{v4}:{port}"));
            let policy = policy(&[&entry.to_string()], false);
            prop_assert!(policy.check_address("h", IpAddr::V4(v4), port).is_ok());
            prop_assert_eq!(policy.check_address("h", IpAddr::V4(v4), other).is_ok(), other == port);
        }

        #[test]
        fn a_bracketed_ipv6_address_with_a_port_round_trips(a in any::<u128>(), port in 1u16..) {
            let v6 = std::net::Ipv6Addr::from(a);
            let text = format!("[{v6}]:{port}");
            let entry = AllowEntry::parse(&text).unwrap();
            prop_assert_eq!(entry.port, Some(port));
            let policy = policy(&[&text], false);
            prop_assert!(policy.check_address("h", IpAddr::V6(v6), port).is_ok());
            if v6.to_ipv4_mapped().is_none() {
                prop_assert_eq!(entry.to_string(), text);
            }
        }

    }
}
