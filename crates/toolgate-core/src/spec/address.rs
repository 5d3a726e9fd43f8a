//! What kind of address an IP is (loopback, private, link-local, ...), and address
//! ranges: the vocabulary the `network:` policy judges addresses with.
//!
//! IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are judged
//! as that IPv4 address, so `::ffff:127.0.0.1` is loopback.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP address range: an address and a prefix length, `10.0.0.0/8` or `fd00::/8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpCidr {
    pub(super) addr: IpAddr,
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

    /// Whether the range holds one address only.
    pub fn is_single(&self) -> bool {
        self.prefix == if self.addr.is_ipv4() { 32 } else { 128 }
    }

    /// Whether every address of the range is a loopback address (`127.0.0.0/8` and
    /// what it holds, `::1`).
    pub fn is_loopback(&self) -> bool {
        match self.addr {
            IpAddr::V4(a) => self.prefix >= 8 && a.octets()[0] == 127,
            IpAddr::V6(a) => self.prefix == 128 && a.is_loopback(),
        }
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
    /// Reachable on the internet; the only class `allow_public` opens.
    Public,
    /// `0.0.0.0/8` or `::`: this host, on many systems.
    Unspecified,
    /// `127.0.0.0/8` or `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64.0.0/10`, carrier-grade NAT (RFC 6598).
    SharedNat,
    /// `169.254/16` or `fe80::/10`, where cloud metadata services answer.
    LinkLocal,
    /// `fc00::/7`, IPv6's private ranges.
    UniqueLocal,
    /// `224.0.0.0/4` or `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// TEST-NET ranges and `2001:db8::/32`, never routed.
    Documentation,
    /// Any other range set aside by the IETF (benchmarking, protocol assignments, `240/4`).
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

    }
}
