//! How a connection to an upstream server starts, for servers of either revision.
//!
//! toolgate asks `server/discover` first (the 2026-07-28 revision: no handshake,
//! no protocol session, the version and capabilities in every request's `_meta`)
//! and falls back to the `initialize` handshake of the session revisions
//! (2025-11-25 and older) when the server answers that it does not know the
//! method, or stays silent for 10 seconds (rmcp's `ClientLifecycleMode::Auto`; the
//! wait is rmcp's and not configurable). A server that knows `server/discover` but
//! supports only session revisions answers it with "unsupported protocol version";
//! rmcp does not fall back then, so toolgate connects again (a stdio server is
//! started again) and uses `initialize`.

use std::fmt;

use rmcp::model::{ProtocolVersion, ServerPeerInfo};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode};
use serde::Serialize;

/// Discover first, then `initialize` at the newest session revision.
pub(super) fn discover_first() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// The stateless revision only.
pub(super) fn discover_only() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

/// The session revisions' handshake only.
pub(super) fn initialize_only() -> ClientLifecycleMode {
    ClientLifecycleMode::Initialize
}

/// Whether a failed [`discover_first`] start means a server of the session
/// revisions that knows `server/discover` (it listed only versions with a
/// handshake), so a new connection with `initialize` will do.
pub(super) fn wants_initialize(error: &ClientInitializeError) -> bool {
    match error {
        ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        } => !server_supported.is_empty() && server_supported.iter().all(|v| v.has_initialize()),
        _ => false,
    }
}

/// The protocol revision a connection speaks, as negotiated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revision {
    /// The version, `2026-07-28`, `2025-11-25`, ...
    pub version: String,
    /// True for the stateless revision (no handshake, no session).
    pub stateless: bool,
}

impl Revision {
    /// The revision of a started connection.
    pub(super) fn of(info: &ServerPeerInfo) -> Revision {
        Revision {
            version: info.protocol_version.as_str().to_owned(),
            stateless: !info.protocol_version.has_initialize(),
        }
    }
}

impl fmt::Display for Revision {
    /// `2026-07-28 (stateless)`, `2025-11-25 (session)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.stateless {
            "stateless"
        } else {
            "session"
        };
        write!(f, "{} ({kind})", self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_that_lists_session_versions_alone_is_asked_to_initialize() {
        let refused = |server_supported: Vec<ProtocolVersion>| {
            ClientInitializeError::NoCompatibleProtocolVersion {
                client_supported: vec![ProtocolVersion::V_2026_07_28],
                server_supported,
            }
        };
        assert!(wants_initialize(&refused(vec![
            ProtocolVersion::V_2025_06_18,
            ProtocolVersion::V_2025_11_25
        ])));
        assert!(!wants_initialize(&refused(vec![])));
        let future: ProtocolVersion = serde_json::from_value("2027-01-01".into()).unwrap();
        assert!(!wants_initialize(&refused(vec![future])));
        assert!(!wants_initialize(&ClientInitializeError::Cancelled));
    }
}
