//! One entry of `network.allow`: a host name, `*.domain`, an IP address or a CIDR
//! range, optionally with the one port it opens (`127.0.0.1:8080`, `[::1]:8080`,
//! `api.internal:8443`). Parsing explains what is wrong with a bad entry; printing
//! gives the entry back in the form it is written.

use std::fmt;
use std::net::IpAddr;

use super::address::IpCidr;

/// One entry of `network.allow`: what it names, and the one port it opens (every
/// port when `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    /// The host, domain pattern, address or range the entry names.
    pub target: AllowTarget,
    /// The one port it opens; `None` opens every port.
    pub port: Option<u16>,
}

/// What an entry of `network.allow` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowTarget {
    /// A host name, lowercase, without a trailing dot.
    Host(String),
    /// `*.suffix`: any subdomain of `suffix` (not `suffix` itself).
    Subdomains(String),
    /// An address range; a single address is a range of one.
    Range(IpCidr),
}

impl AllowEntry {
    /// Parses an entry: a host name, `*.domain`, an IP address (IPv6 with or without
    /// brackets) or a CIDR range; a host or address may end in `:PORT` (an IPv6
    /// address then in brackets: `[::1]:8080`).
    pub fn parse(text: &str) -> Result<AllowEntry, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty entry allows nothing".into());
        }
        if text.contains("://") || text.contains(['?', '#', '@']) {
            return Err(format!(
                "`{text}` looks like a URL; list only the host, e.g. `api.example.com` (or `api.example.com:8443` for one port)"
            ));
        }
        if text.contains('/') {
            if text.starts_with('[') || text.rsplit_once('/').is_some_and(|(_, p)| p.contains(':'))
            {
                return Err(format!(
                    "`{text}`: a range cannot name a port; list single addresses with their port, e.g. `10.0.0.5:8080`"
                ));
            }
            return IpCidr::parse(text).map(|range| AllowEntry {
                target: AllowTarget::Range(range),
                port: None,
            });
        }
        let (host, port) = split_port(text)?;
        let bare = host
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(AllowEntry {
                target: AllowTarget::Range(IpCidr::single(ip)),
                port,
            });
        }
        if host.starts_with('[') {
            return Err(format!(
                "`{text}`: only an IPv6 address goes in brackets, as in `[::1]:8080`"
            ));
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        let (wildcard, name) = match name.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, name),
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
        let target = if wildcard {
            AllowTarget::Subdomains(name)
        } else {
            AllowTarget::Host(name)
        };
        Ok(AllowEntry { target, port })
    }

    /// Whether the entry opens `port`.
    pub fn opens_port(&self, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
    }

    /// Whether the entry names a host by name (or by `*.` suffix) that `host` matches.
    pub(super) fn names_host(&self, host: &str) -> bool {
        match &self.target {
            AllowTarget::Host(h) => h == host,
            AllowTarget::Subdomains(suffix) => host
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.ends_with('.') && head.len() > 1),
            AllowTarget::Range(_) => false,
        }
    }

    /// Whether the entry holds `ip` in its range.
    pub(super) fn holds_address(&self, ip: IpAddr) -> bool {
        matches!(&self.target, AllowTarget::Range(cidr) if cidr.contains(ip))
    }

    /// Whether the entry opens every port of an address on this machine: a loopback
    /// address or a range of loopback addresses only, or the name `localhost`,
    /// without a port. (A wide range such as `0.0.0.0/0` is a choice of its own.)
    pub fn opens_every_loopback_port(&self) -> bool {
        if self.port.is_some() {
            return false;
        }
        match &self.target {
            AllowTarget::Host(h) => h == "localhost" || h.ends_with(".localhost"),
            AllowTarget::Subdomains(suffix) => suffix == "localhost",
            AllowTarget::Range(cidr) => cidr.is_loopback(),
        }
    }
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match &self.target {
            AllowTarget::Host(h) => h.clone(),
            AllowTarget::Subdomains(s) => format!("*.{s}"),
            AllowTarget::Range(cidr) if cidr.is_single() => match (cidr.addr, self.port) {
                (IpAddr::V6(v6), Some(_)) => format!("[{v6}]"),
                (ip, _) => ip.to_string(),
            },
            AllowTarget::Range(cidr) => cidr.to_string(),
        };
        match self.port {
            Some(port) => write!(f, "{host}:{port}"),
            None => f.write_str(&host),
        }
    }
}

/// Splits `host:port` (or `[v6]:port`); an IPv6 address without brackets has no port.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = if text.starts_with('[') {
        let Some(end) = text.find(']') else {
            return Err(format!("`{text}` opens a `[` it does not close"));
        };
        match &text[end + 1..] {
            "" => return Ok((text, None)),
            rest => match rest.strip_prefix(':') {
                Some(port) => (&text[..=end], port),
                None => return Err(format!("`{text}` has text after `]` that is not `:PORT`")),
            },
        }
    } else if text.parse::<IpAddr>().is_ok() {
        return Ok((text, None));
    } else {
        match text.rsplit_once(':') {
            Some((host, _)) if host.contains(':') => {
                return Err(format!(
                    "`{text}` is not an IP address; write an IPv6 address with a port in brackets, as in `[::1]:8080`"
                ));
            }
            Some((host, port)) => (host, port),
            None => return Ok((text, None)),
        }
    };
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok((host, Some(port))),
        _ => Err(format!(
            "`{port}` in `{text}` is not a port; write a number from 1 to 65535, as in `{host}:8080`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_with_ports_are_parsed_and_printed_back() {
        for (text, printed) in [
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("[::1]:8080", "[::1]:8080"),
            ("[::1]", "::1"),
            ("::1", "::1"),
            ("API.example.com:443", "api.example.com:443"),
            ("*.corp.example:8443", "*.corp.example:8443"),
            ("10.0.0.0/8", "10.0.0.0/8"),
        ] {
            assert_eq!(
                AllowEntry::parse(text).unwrap().to_string(),
                printed,
                "{text}"
            );
        }
        assert_eq!(
            AllowEntry::parse("127.0.0.1:8080").unwrap().port,
            Some(8080)
        );
        assert_eq!(AllowEntry::parse("::1").unwrap().port, None);
    }

    #[test]
    fn port_less_loopback_entries_are_found() {
        for (text, every) in [
            ("127.0.0.1", true),
            ("::1", true),
            ("localhost", true),
            ("127.0.0.0/8", true),
            ("0.0.0.0/0", false),
            ("127.0.0.1:8080", false),
            ("localhost:8080", false),
            ("10.0.0.1", false),
            ("api.example.com", false),
        ] {
            let entry = AllowEntry::parse(text).unwrap();
            assert_eq!(entry.opens_every_loopback_port(), every, "{text}");
        }
    }

    #[test]
    fn bad_allow_entries_are_explained() {
        for (entry, needle) in [
            ("", "empty"),
            ("10.0.0.1/8", "did you mean `10.0.0.0/8`"),
            ("10.0.0.0/33", "from 0 to 32"),
            ("10.0.0/8", "not an IP address"),
            ("https://api.example.com", "looks like a URL"),
            ("api.example.com:http", "not a port"),
            ("127.0.0.1:0", "from 1 to 65535"),
            ("127.0.0.1:70000", "from 1 to 65535"),
            ("fe80::1:2:3:4:5:6:7:8080", "in brackets"),
            ("[::1]8080", "`:PORT`"),
            ("[api.example.com]:80", "only an IPv6 address"),
            ("10.0.0.0/8:443", "a range cannot name a port"),
            ("bad host!", "not a host name"),
        ] {
            let err = AllowEntry::parse(entry).unwrap_err();
            assert!(err.contains(needle), "{entry}: {err}");
        }
    }

    proptest! {
        #[test]
        fn parsing_any_text_never_panics(text in "\\PC{0,40}") {
            let _ = AllowEntry::parse(&text);
        }
    }
}
