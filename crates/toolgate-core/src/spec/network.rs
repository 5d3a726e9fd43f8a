//! The `network:` section and the checks behind it: where HTTP bindings may connect.
//!
//! By default a binding reaches only public addresses. Loopback, private ranges,
//! link-local (cloud metadata at 169.254.169.254 among them), unique-local IPv6,
//! multicast, documentation and reserved ranges, `0.0.0.0`, and IPv6 forms that embed
//! one of those IPv4 addresses (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are refused
//! unless `allow` lists the host or a range holding the address. `allow_public: false`
//! limits bindings to what `allow` lists.
//!
//! Everything here is pure: resolving names and connecting happen in the runtime,
//! which asks [`NetworkPolicy`] about the URL's host and then about every address the
//! host resolves to, and connects only to addresses that passed.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `network:` section of a spec file.
///
/// ```yaml
/// network:
///   allow: [api.internal.example, "*.corp.example", 10.20.0.0/16, 127.0.0.1]
///   allow_public: false   # only what `allow` lists
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Hosts, addresses and CIDR ranges that bindings may reach even when they are not
    /// public: `api.internal`, `*.corp.example` (its subdomains), `10.0.0.5`, `::1`,
    /// `10.20.0.0/16`, `fd00::/8`. A listed host name may resolve to any address.
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

/// One entry of `network.allow`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowEntry {
    /// A host name, lowercase, without a trailing dot.
    Host(String),
    /// `*.suffix`: any subdomain of `suffix` (not `suffix` itself).
    Subdomains(String),
    /// An address range; a single address is a range of one.
    Range(IpCidr),
}

impl AllowEntry {
    /// Parses an entry: a host name, `*.domain`, an IP address (IPv6 with or without
    /// brackets) or a CIDR range.
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty entry allows nothing".into());
        }
        if text.contains("://") || text.contains(['?', '#', '@']) {
            return Err(format!(
                "`{text}` looks like a URL; list only the host, e.g. `api.example.com`"
            ));
        }
        if text.contains('/') {
            return IpCidr::parse(text).map(AllowEntry::Range);
        }
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(AllowEntry::Range(IpCidr::single(ip)));
        }
        if text.contains(':') {
            return Err(format!(
                "`{text}` names a port; entries are hosts or ranges and allow every port"
            ));
        }
        let host = text.trim_end_matches('.').to_ascii_lowercase();
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, host),
        };
        let valid_label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(valid_label) {
            return Err(format!(
                "`{text}` is not a host name, IP address or CIDR range"
            ));
        }
        Ok(if wildcard {
            AllowEntry::Subdomains(name)
        } else {
            AllowEntry::Host(name)
        })
    }
}

/// An IP address range: an address and a prefix length, `10.0.0.0/8` or `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpCidr {
    addr: IpAddr,
    prefix: u8,
}

impl IpCidr {
    /// The range holding only `ip`.
    pub fn single(ip: IpAddr) -> IpCidr {
        let ip = canonical(ip);
        IpCidr {
            addr: ip,
            prefix: if ip.is_ipv4() { 32 } else { 128 },
        }
    }

    /// Parses `ADDRESS/PREFIX`. Bits set below the prefix are an error, since they
    /// usually mean a typo (`10.0.0.1/8` for `10.0.0.0/8`).
    pub fn parse(text: &str) -> Result<IpCidr, String> {
        let (addr, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not a CIDR range (ADDRESS/PREFIX)"))?;
        let addr: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| format!("`{addr}` in `{text}` is not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix.parse().ok().filter(|p| *p <= max).ok_or_else(|| {
            format!("the prefix length in `{text}` must be a number from 0 to {max}")
        })?;
        let cidr = IpCidr { addr, prefix };
        if cidr.network() != addr {
            return Err(format!(
                "`{text}` has bits set after the first {prefix}; did you mean `{}/{prefix}`?",
                cidr.network()
            ));
        }
        Ok(cidr)
    }

    /// The first address of the range.
    pub fn network(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(self.prefix))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(self.prefix))),
        }
    }

    /// Whether `ip` is in the range (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = mask32(self.prefix);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = mask128(self.prefix);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl fmt::Display for IpCidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// What kind of address an IP is, for the policy's purposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    Unspecified,
    Loopback,
    Private,
    SharedNat,
    LinkLocal,
    UniqueLocal,
    Multicast,
    Broadcast,
    Documentation,
    Reserved,
}

impl AddressClass {
    /// Words for messages: "a loopback address".
    pub fn describe(self) -> &'static str {
        match self {
            AddressClass::Public => "a public address",
            AddressClass::Unspecified => "the unspecified address (this host)",
            AddressClass::Loopback => "a loopback address",
            AddressClass::Private => "a private-network address",
            AddressClass::SharedNat => "a carrier-grade NAT address",
            AddressClass::LinkLocal => {
                "a link-local address (where cloud metadata services such as 169.254.169.254 live)"
            }
            AddressClass::UniqueLocal => "a unique-local IPv6 address",
            AddressClass::Multicast => "a multicast address",
            AddressClass::Broadcast => "the broadcast address",
            AddressClass::Documentation => "an address reserved for documentation",
            AddressClass::Reserved => "a reserved address",
        }
    }
}

/// Classifies an address. IPv6 forms that carry an IPv4 address (mapped,
/// compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) take the class of that
/// address, so `::ffff:127.0.0.1` is loopback.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        _ if ip.is_unspecified() => AddressClass::Unspecified,
        (0, _, _) => AddressClass::Unspecified,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (192, 168, _) => AddressClass::Private,
        (172, 16..=31, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedNat,
        (169, 254, _) => AddressClass::LinkLocal,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Documentation,
        // IETF protocol assignments, benchmarking, 6to4 relay anycast.
        (192, 0, 0) | (198, 18..=19, _) | (192, 88, 99) => AddressClass::Reserved,
        (224..=239, _, _) => AddressClass::Multicast,
        _ if ip.is_broadcast() => AddressClass::Broadcast,
        (240..=255, _, _) => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let bits = u128::from(ip);
    let seg = ip.segments();
    if ip.is_unspecified() {
        return AddressClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddressClass::Loopback;
    }
    // IPv4-compatible `::a.b.c.d` (deprecated) and NAT64 `64:ff9b::/96` carry an
    // IPv4 address in their low 32 bits.
    if bits >> 32 == 0 || bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return classify_v4(Ipv4Addr::from(bits as u32));
    }
    // 6to4: `2002:AABB:CCDD::/48` carries AA.BB.CC.DD.
    if seg[0] == 0x2002 {
        return classify_v4(Ipv4Addr::from(
            (u32::from(seg[1]) << 16) | u32::from(seg[2]),
        ));
    }
    match seg[0] {
        s if s & 0xfe00 == 0xfc00 => AddressClass::UniqueLocal,
        s if s & 0xffc0 == 0xfe80 => AddressClass::LinkLocal,
        // Site-local (deprecated), treated as private.
        s if s & 0xffc0 == 0xfec0 => AddressClass::Private,
        s if s & 0xff00 == 0xff00 => AddressClass::Multicast,
        0x2001 if seg[1] == 0x0db8 => AddressClass::Documentation,
        // Teredo (2001::/32) hides an IPv4 address; ORCHID and other IETF blocks.
        0x2001 if seg[1] < 0x0200 => AddressClass::Reserved,
        // Discard-only 100::/64.
        0x0100 if seg[1..4] == [0, 0, 0] => AddressClass::Reserved,
        // Outside 2000::/3 nothing is globally routed today.
        s if s & 0xe000 != 0x2000 => AddressClass::Reserved,
        _ => AddressClass::Public,
    }
}

/// Why a binding may not reach a host or address. The message says what to add to
/// the spec file to allow it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetworkRefusal {
    /// The host resolved to (or is) an address the policy refuses.
    #[error("{}", refused_address_message(.host, *.addr, *.class))]
    Address {
        host: String,
        addr: IpAddr,
        class: AddressClass,
    },
    /// `allow_public: false` and the host is not in `allow`.
    #[error(
        "`{host}` is not in the spec file's `network.allow`, and `network.allow_public` is false; add `{host}` to `network.allow` to let bindings reach it"
    )]
    NotListed { host: String },
    /// The host resolved to no address at all.
    #[error("`{host}` resolves to no address; check the host name in the binding's URL")]
    NoAddress { host: String },
}

fn refused_address_message(host: &str, addr: IpAddr, class: AddressClass) -> String {
    let class = class.describe();
    if host.trim_start_matches('[').trim_end_matches(']') == addr.to_string() {
        format!(
            "{addr} is {class}; HTTP bindings may reach it only when the spec file's `network.allow` lists it (or a range holding it)"
        )
    } else {
        format!(
            "`{host}` resolves to {addr}, {class}; HTTP bindings may reach it only when the spec file's `network.allow` lists `{host}` (or a range holding {addr})"
        )
    }
}

/// The checks of a [`NetworkSection`], with its entries parsed. Entries that do not
/// parse are skipped here; `check` reports them.
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

    /// Whether a host name (not an IP literal) is listed in `allow`, by name or as a
    /// subdomain of a `*.` entry.
    pub fn lists_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.entries.iter().any(|e| match e {
            AllowEntry::Host(h) => *h == host,
            AllowEntry::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
            AllowEntry::Range(_) => false,
        })
    }

    /// Whether `ip` is in a range that `allow` lists.
    pub fn lists_address(&self, ip: IpAddr) -> bool {
        self.entries.iter().any(|e| match e {
            AllowEntry::Range(cidr) => cidr.contains(ip),
            _ => false,
        })
    }

    /// Whether a binding may connect to `addr`, which `host` is (an IP literal) or
    /// resolved to (a name not listed by name).
    pub fn check_address(&self, host: &str, addr: IpAddr) -> Result<(), NetworkRefusal> {
        if self.lists_address(addr) {
            return Ok(());
        }
        match classify(addr) {
            AddressClass::Public if self.allow_public => Ok(()),
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

    /// The addresses of `addrs` a binding may connect to. Refused ones are dropped,
    /// so a name that resolves to a public and a private address reaches only the
    /// public one; when none is left, the refusal of the first is the error.
    pub fn filter_addresses(
        &self,
        host: &str,
        addrs: impl IntoIterator<Item = IpAddr>,
    ) -> Result<Vec<IpAddr>, NetworkRefusal> {
        let mut first_refusal = None;
        let mut allowed = Vec::new();
        for addr in addrs {
            match self.check_address(host, addr) {
                Ok(()) => allowed.push(addr),
                Err(refusal) => {
                    first_refusal.get_or_insert(refusal);
                }
            }
        }
        match (allowed.is_empty(), first_refusal) {
            (false, _) => Ok(allowed),
            (true, Some(refusal)) => Err(refusal),
            (true, None) => Err(NetworkRefusal::NoAddress {
                host: host.to_owned(),
            }),
        }
    }

    /// Whether a URL host written in a spec file is allowed without resolving it: a
    /// host listed by name, or an IP literal the policy accepts. Host names that are
    /// not listed would need resolving, so they are not (this is what a sandbox keeps).
    pub fn allows_statically(&self, host: &str) -> bool {
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match bare.parse::<IpAddr>() {
            Ok(ip) => self.check_address(host, ip).is_ok(),
            Err(_) => self.lists_host(host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_that_are_not_public_are_classified_by_kind() {
        for (addr, class) in [
            ("127.0.0.1", AddressClass::Loopback),
            ("127.255.0.9", AddressClass::Loopback),
            ("::1", AddressClass::Loopback),
            ("0.0.0.0", AddressClass::Unspecified),
            ("0.1.2.3", AddressClass::Unspecified),
            ("::", AddressClass::Unspecified),
            ("10.0.0.1", AddressClass::Private),
            ("172.16.0.1", AddressClass::Private),
            ("172.31.255.255", AddressClass::Private),
            ("192.168.1.1", AddressClass::Private),
            ("100.64.0.1", AddressClass::SharedNat),
            ("169.254.169.254", AddressClass::LinkLocal),
            ("fe80::1", AddressClass::LinkLocal),
            ("fd00::1", AddressClass::UniqueLocal),
            ("fc00::1", AddressClass::UniqueLocal),
            ("224.0.0.1", AddressClass::Multicast),
            ("ff02::1", AddressClass::Multicast),
            ("255.255.255.255", AddressClass::Broadcast),
            ("240.0.0.1", AddressClass::Reserved),
            ("192.0.2.1", AddressClass::Documentation),
            ("2001:db8::1", AddressClass::Documentation),
        ] {
            assert_eq!(classify(ip(addr)), class, "{addr}");
        }
    }

    #[test]
    fn ipv6_forms_of_ipv4_addresses_take_the_class_of_the_ipv4_address() {
        for (addr, class) in [
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("::ffff:169.254.169.254", AddressClass::LinkLocal),
            ("::ffff:10.1.2.3", AddressClass::Private),
            ("::127.0.0.1", AddressClass::Loopback),
            ("64:ff9b::a9fe:a9fe", AddressClass::LinkLocal),
            ("2002:7f00:1::", AddressClass::Loopback),
            ("2002:c0a8:101::1", AddressClass::Private),
            ("::ffff:8.8.8.8", AddressClass::Public),
        ] {
            assert_eq!(classify(ip(addr)), class, "{addr}");
        }
    }

    #[test]
    fn ordinary_internet_addresses_are_public() {
        for addr in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.0.1",
            "172.32.0.1",
            "100.63.0.1",
            "2606:4700::1111",
        ] {
            assert_eq!(classify(ip(addr)), AddressClass::Public, "{addr}");
        }
    }

    #[test]
    fn the_default_policy_refuses_every_address_that_is_not_public() {
        let policy = NetworkPolicy::default();
        assert!(policy.check_address("h", ip("8.8.8.8")).is_ok());
        for addr in [
            "127.0.0.1",
            "169.254.169.254",
            "10.0.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "fd12::1",
        ] {
            let err = policy.check_address("h", ip(addr)).unwrap_err();
            assert!(matches!(err, NetworkRefusal::Address { .. }), "{addr}");
        }
    }

    #[test]
    fn a_refusal_says_what_the_address_is_and_what_to_allow() {
        let err = NetworkPolicy::default()
            .check_address("metadata.internal", ip("169.254.169.254"))
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("`metadata.internal` resolves to 169.254.169.254"),
            "{message}"
        );
        assert!(message.contains("link-local"), "{message}");
        assert!(message.contains("network.allow"), "{message}");
        let literal = NetworkPolicy::default()
            .check_address("10.0.0.1", ip("10.0.0.1"))
            .unwrap_err()
            .to_string();
        assert!(
            literal.starts_with("10.0.0.1 is a private-network address"),
            "{literal}"
        );
    }

    #[test]
    fn allow_entries_open_hosts_subdomains_and_ranges() {
        let policy = NetworkPolicy::new(&NetworkSection {
            allow: vec![
                "Api.Internal.".into(),
                "*.corp.example".into(),
                "10.20.0.0/16".into(),
                "127.0.0.1".into(),
                "[::1]".into(),
            ],
            allow_public: true,
        });
        assert!(policy.lists_host("api.internal"));
        assert!(policy.lists_host("API.internal."));
        assert!(policy.lists_host("x.corp.example"));
        assert!(!policy.lists_host("corp.example"));
        assert!(!policy.lists_host("evilcorp.example"));
        assert!(policy.check_address("h", ip("10.20.3.4")).is_ok());
        assert!(policy.check_address("h", ip("10.21.0.1")).is_err());
        assert!(policy.check_address("h", ip("127.0.0.1")).is_ok());
        assert!(policy.check_address("h", ip("::ffff:127.0.0.1")).is_ok());
        assert!(policy.check_address("h", ip("127.0.0.2")).is_err());
        assert!(policy.check_address("h", ip("::1")).is_ok());
    }

    #[test]
    fn without_public_access_only_listed_hosts_and_ranges_pass() {
        let policy = NetworkPolicy::new(&NetworkSection {
            allow: vec!["api.example.com".into(), "203.0.113.0/24".into()],
            allow_public: false,
        });
        assert!(policy.lists_host("api.example.com"));
        assert!(!policy.lists_host("other.example.com"));
        assert!(matches!(
            policy.check_address("other.example.com", ip("8.8.8.8")),
            Err(NetworkRefusal::NotListed { .. })
        ));
        assert!(policy.check_address("doc", ip("203.0.113.9")).is_ok());
    }

    #[test]
    fn filtering_keeps_the_allowed_addresses_and_reports_the_first_refusal() {
        let policy = NetworkPolicy::default();
        assert_eq!(
            policy
                .filter_addresses("h", [ip("10.0.0.1"), ip("8.8.8.8")])
                .unwrap(),
            [ip("8.8.8.8")]
        );
        let err = policy
            .filter_addresses("h", [ip("10.0.0.1"), ip("127.0.0.1")])
            .unwrap_err();
        assert!(matches!(err, NetworkRefusal::Address { addr, .. } if addr == ip("10.0.0.1")));
        assert!(matches!(
            policy.filter_addresses("h", []),
            Err(NetworkRefusal::NoAddress { .. })
        ));
    }

    #[test]
    fn bad_allow_entries_are_explained() {
        for (entry, needle) in [
            ("", "empty"),
            ("10.0.0.1/8", "did you mean `10.0.0.0/8`"),
            ("10.0.0.0/33", "from 0 to 32"),
            ("10.0.0/8", "not an IP address"),
            ("https://api.example.com", "looks like a URL"),
            ("api.example.com:8080", "port"),
            ("bad host!", "not a host name"),
        ] {
            let err = AllowEntry::parse(entry).unwrap_err();
            assert!(err.contains(needle), "{entry}: {err}");
        }
    }

    #[test]
    fn static_checks_accept_listed_names_and_allowed_literals_only() {
        let policy = NetworkPolicy::new(&NetworkSection {
            allow: vec!["api.example.com".into(), "127.0.0.1".into()],
            allow_public: false,
        });
        assert!(policy.allows_statically("api.example.com"));
        assert!(policy.allows_statically("127.0.0.1"));
        assert!(!policy.allows_statically("8.8.8.8"));
        assert!(!policy.allows_statically("other.example.com"));
        assert!(!policy.allows_statically("169.254.169.254"));
    }

    proptest! {
        #[test]
        fn a_range_contains_exactly_the_addresses_that_share_its_prefix(a in any::<u32>(), b in any::<u32>(), prefix in 0u8..=32) {
            let cidr = IpCidr { addr: IpAddr::V4(Ipv4Addr::from(a)), prefix };
            let shared = (a ^ b).leading_zeros() >= u32::from(prefix);
            prop_assert_eq!(cidr.contains(IpAddr::V4(Ipv4Addr::from(b))), shared);
        }

        #[test]
        fn a_parsed_range_prints_back_as_it_was_written(a in any::<u128>(), prefix in 0u8..=128) {
            let net = Ipv6Addr::from(a & mask128(prefix));
            let text = format!("{net}/{prefix}");
            let cidr = IpCidr::parse(&text).unwrap();
            prop_assert_eq!(cidr.to_string(), text);
            prop_assert!(cidr.contains(IpAddr::V6(net)));
        }

        #[test]
        fn mapped_ipv6_addresses_are_checked_as_their_ipv4_address(a in any::<u32>()) {
            let v4 = Ipv4Addr::from(a);
            let policy = NetworkPolicy::default();
            prop_assert_eq!(
                policy.check_address("h", IpAddr::V4(v4)).is_ok(),
                policy.check_address("h", IpAddr::V6(v4.to_ipv6_mapped())).is_ok()
            );
        }
    }
}
