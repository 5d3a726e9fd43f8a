//! Client sessions kept in the store, so that any process sharing it can continue
//! one: MCP sessions of the streamable HTTP transport (a client's requests may reach
//! any instance behind a load balancer) and the console's login sessions (which
//! then survive a restart).
//!
//! A session is found by the SHA-256 digest of its secret (the `Mcp-Session-Id`,
//! the console's cookie), never by the secret itself: someone who can read the
//! store cannot present a session they found there. A session lasts `idle` past
//! its last renewal; whoever serves it renews it, at most once per
//! [`renewal_interval`] so that a busy session does not write on every request.
//! Expired sessions are never returned, and are dropped when a new one is written.

use std::time::Duration;

use serde_json::Value;
use sha2_11::{Digest, Sha256};

use super::StoreError;

/// Which kind of session a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SessionKind {
    /// An MCP session of the streamable HTTP transport.
    Mcp,
    /// A login session of the web console.
    Console,
}

impl SessionKind {
    /// The kind as the store writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Mcp => "mcp",
            SessionKind::Console => "console",
        }
    }
}

/// The digest that names a session in the store: SHA-256 of its secret, in hex.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey(String);

impl SessionKey {
    /// The key of the session whose secret (session id, cookie value) is `secret`.
    pub fn of(secret: &str) -> Self {
        let digest = Sha256::digest(secret.as_bytes());
        SessionKey(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The digest in hex, as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn from_stored(hex: String) -> Self {
        SessionKey(hex)
    }
}

/// One session as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    /// An MCP session or a console login.
    pub kind: SessionKind,
    /// The digest of its secret, which finds it.
    pub key: SessionKey,
    /// Whom the session is for, where it is for someone (to list and to end a
    /// principal's sessions); what binds it is in `data`.
    pub principal: Option<String>,
    /// What its kind needs to continue it (JSON): an MCP session's `initialize`
    /// and who opened it; a console session's viewer and CSRF token.
    pub data: Value,
    /// When it was opened, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it expires unless renewed.
    pub expires_ms: u64,
    /// How long it lasts past a renewal.
    pub idle_ms: u64,
}

impl StoredSession {
    /// Whether it is past its expiry at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_ms <= now_ms
    }

    /// Whether a request at `now_ms` should renew it: its last renewal (its
    /// expiry less `idle`) is a tenth of `idle` old or older, and at most a minute.
    pub fn due_for_renewal(&self, now_ms: u64) -> bool {
        let renewed = self.expires_ms.saturating_sub(self.idle_ms);
        let every = renewal_interval(Duration::from_millis(self.idle_ms));
        now_ms.saturating_sub(renewed) >= u64::try_from(every.as_millis()).unwrap_or(u64::MAX)
    }
}

/// How often a session that lasts `idle` is renewed at most: a tenth of `idle`,
/// and never less often than once a minute. A session therefore ends between
/// `idle` less that interval and `idle` after its last request.
pub(super) fn renewal_interval(idle: Duration) -> Duration {
    (idle / 10).min(Duration::from_secs(60))
}

/// Milliseconds since the Unix epoch, now.
#[cfg(feature = "mcp")]
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Where client sessions live (see the module's introduction).
///
/// Implementations are synchronous and safe to share; every method is one
/// statement or one transaction.
pub trait StoredSessions: Send + Sync {
    /// Writes `session`, replacing one of the same kind and key, and drops every
    /// session expired at its `created_ms`.
    fn put_session(&self, session: &StoredSession) -> Result<(), StoreError>;

    /// The session of `kind` named `key`, unless it is unknown or expired at `now_ms`.
    fn session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
    ) -> Result<Option<StoredSession>, StoreError>;

    /// Moves a session's expiry to `expires_ms` if it is still live at `now_ms`;
    /// returns whether it was.
    fn renew_session(
        &self,
        kind: SessionKind,
        key: &SessionKey,
        now_ms: u64,
        expires_ms: u64,
    ) -> Result<bool, StoreError>;

    /// Ends a session; returns whether the store had it.
    fn delete_session(&self, kind: SessionKind, key: &SessionKey) -> Result<bool, StoreError>;
}

/// Reads a stored session's row: its kind and key are the ones asked for; `None`
/// (with a warning) when its data is not JSON, as if it had ended, so that a row
/// edited by hand costs its client a new session rather than every request an error.
pub(super) fn stored(
    kind: SessionKind,
    key: String,
    principal: Option<String>,
    data: &str,
    (created_ms, expires_ms, idle_ms): (i64, i64, i64),
) -> Option<StoredSession> {
    let data = match serde_json::from_str(data) {
        Ok(data) => data,
        Err(e) => {
            tracing::warn!(
                kind = kind.as_str(),
                "a stored session cannot be read ({e}); treating it as ended"
            );
            return None;
        }
    };
    let ms = |v: i64| u64::try_from(v).unwrap_or_default();
    Some(StoredSession {
        kind,
        key: SessionKey::from_stored(key),
        principal,
        data,
        created_ms: ms(created_ms),
        expires_ms: ms(expires_ms),
        idle_ms: ms(idle_ms),
    })
}

/// A count of milliseconds as the databases store it.
pub(super) fn sql_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_key_is_the_secrets_digest_not_the_secret() {
        let key = SessionKey::of("3f9a0c1e");
        assert_eq!(key.as_str().len(), 64);
        assert!(!key.as_str().contains("3f9a0c1e"));
        assert_eq!(key, SessionKey::of("3f9a0c1e"));
        assert_ne!(key, SessionKey::of("3f9a0c1f"));
    }

    #[test]
    fn a_session_is_renewed_once_a_tenth_of_its_idle_time_has_passed_or_a_minute() {
        assert_eq!(
            renewal_interval(Duration::from_secs(300)),
            Duration::from_secs(30)
        );
        assert_eq!(
            renewal_interval(Duration::from_secs(12 * 3600)),
            Duration::from_secs(60)
        );
        let session = StoredSession {
            kind: SessionKind::Mcp,
            key: SessionKey::of("s"),
            principal: None,
            data: Value::Null,
            created_ms: 0,
            expires_ms: 300_000,
            idle_ms: 300_000,
        };
        assert!(!session.due_for_renewal(29_999));
        assert!(session.due_for_renewal(30_000));
        assert!(session.expired(300_000));
    }
}
