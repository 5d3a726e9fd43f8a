//! Who a session counts against for the session caps: the credential a request
//! carries where it has one, else the peer's address.
//!
//! Read by the caps (`capacity`) and by the restoring of stored sessions
//! (`restore`), which notes the client of each request for a session it may
//! restore. A hash names a credential, never the credential itself.

use std::net::{IpAddr, SocketAddr};

use crate::auth::Identity;

/// Who a session belongs to, for the per-client cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Client {
    /// A credential, by a hash of who it proves (its principal, and its key id
    /// or token subject): never displaced by another.
    Credential(u64),
    /// An IPv4 address, or the /64 network of an IPv6 address.
    Ip(IpAddr),
    /// A request that came without the peer's address (not through `serve_http`).
    Unknown,
}

impl Client {
    /// The client of a request: its credential's identity where it has one,
    /// else its peer's address.
    pub(crate) fn of_request(identity: Option<&Identity>, peer: Option<SocketAddr>) -> Self {
        match identity {
            Some(identity) => Client::Credential(credential_key(identity)),
            None => Client::of(peer),
        }
    }

    /// Whether this client is a credential, which no other credential displaces.
    pub(super) fn is_credential(self) -> bool {
        matches!(self, Client::Credential(_))
    }

    /// The client of a request without a credential: its peer's address (an IPv6
    /// address by its /64 network), or [`Client::Unknown`] without one.
    pub(crate) fn of(peer: Option<SocketAddr>) -> Self {
        match peer.map(|p| p.ip()) {
            None => Client::Unknown,
            Some(IpAddr::V4(v4)) => Client::Ip(IpAddr::V4(v4)),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => Client::Ip(IpAddr::V4(v4)),
                None if v6.is_loopback() => Client::Ip(IpAddr::V6(v6)),
                None => {
                    let network = u128::from(v6) & !((1u128 << 64) - 1);
                    Client::Ip(IpAddr::V6(network.into()))
                }
            },
        }
    }
}

/// What names the holder of a credential for the session caps: its principal,
/// how it authenticated, and the key id or the token's subject (not the token,
/// so that a client minting new tokens stays one client).
fn credential_key(identity: &Identity) -> u64 {
    use std::hash::{Hash, Hasher};
    let subject = ["key_id", "sub", "client_id", "azp"]
        .iter()
        .find_map(|name| identity.claims.get(*name).and_then(|v| v.as_str()));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (identity.method.as_str(), &identity.principal, subject).hash(&mut hasher);
    hasher.finish()
}
