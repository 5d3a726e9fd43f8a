//! Who is calling `toolgate serve --http`, and how they proved it.
//!
//! A request carries a credential — an API key ([`keys`]) or the server's one
//! bearer token — and leaves the HTTP layer as an [`Identity`]: the principal it
//! calls as, how it authenticated, and what names the credential in logs (a
//! key's id and label; never the key). Every MCP request then runs as that
//! principal: its tools, its conversations, its calls.
//!
//! [`HttpAccess`] is the front door's access layer: which credentials it takes,
//! and (with [`rebinding`]) which `Host` names and browser origins it answers.

mod access;
pub mod keys;
pub mod oauth;
pub(crate) mod rebinding;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

pub use access::{AccessError, HttpAccess, MIN_TOKEN_BYTES};
pub use keys::{ApiKey, KEYS_FILE, KeyFile, KeyFileError};
pub use oauth::{OAuth, OAuthError, Refusal};

/// Who a request is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The principal it calls as (declared under `principals:`); `None` for the
    /// principal the server serves by default (`--as`).
    pub principal: Option<String>,
    /// How it authenticated.
    pub method: AuthMethod,
    /// What names the credential in logs and the audit log: `key 3f9a0c1d
    /// (laptop)`; never the credential itself.
    pub credential: Option<String>,
    /// The tool-name patterns the credential narrows its principal's scopes to
    /// (an OAuth token's `toolgate:PATTERN` scopes); `None`: the principal's own.
    pub scopes: Option<Vec<String>>,
    /// What the credential says of the caller, for policy rules' `claim:` tests:
    /// an access token's claims; an API key's `key_id` and `key_label`.
    pub claims: toolgate_core::Claims,
}

/// How a request authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// An API key made with `toolgate keys add`.
    ApiKey,
    /// The server's one bearer token (`--token-env`).
    BearerToken,
    /// An OAuth access token (a JWT from the authorization server).
    OAuth,
    /// No credential: a loopback server without `auth:`.
    None,
}

impl AuthMethod {
    /// `api_key`, `bearer_token`, `oauth` or `none`, as the audit log records it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::ApiKey => "api_key",
            AuthMethod::BearerToken => "bearer_token",
            AuthMethod::OAuth => "oauth",
            AuthMethod::None => "none",
        }
    }
}

/// How often a running server looks at the key file for changes (a key added or
/// revoked with `toolgate keys` takes effect within this).
const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// The API keys a server checks, re-read when the file changes.
#[derive(Clone)]
pub struct ApiKeys {
    inner: Arc<Mutex<Loaded>>,
}

struct Loaded {
    file: KeyFile,
    modified: Option<SystemTime>,
    checked: Instant,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ApiKeys")
            .field("path", &loaded.file.path())
            .field("keys", &loaded.file.keys().len())
            .finish()
    }
}

impl ApiKeys {
    /// The keys of the file at `path` (which may not exist yet).
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, KeyFileError> {
        let path = path.into();
        let modified = modified(&path);
        let file = KeyFile::open(path)?;
        Ok(ApiKeys {
            inner: Arc::new(Mutex::new(Loaded {
                file,
                modified,
                checked: Instant::now(),
            })),
        })
    }

    /// The identity `presented` proves, if it is a live key.
    pub fn verify(&self, presented: &str) -> Option<Identity> {
        let mut loaded = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.refresh(false);
        if let Some(key) = loaded.file.verify(presented) {
            return Some(identity_of(key));
        }
        // Perhaps a key made a moment ago: look at the file now.
        loaded.refresh(true);
        loaded.file.verify(presented).map(identity_of)
    }
}

impl ApiKeys {
    /// Whether the key `id` is still live: not revoked, and still in the file
    /// (which is looked at again when due, so a revocation counts within a second).
    pub fn is_live(&self, id: &str) -> bool {
        let mut loaded = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        loaded.refresh(false);
        loaded
            .file
            .keys()
            .iter()
            .any(|k| k.id == id && !k.is_revoked())
    }
}

/// What a session opened with a credential remembers of it, so that the
/// session ends when the credential does: never the credential itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum HeldCredential {
    /// An API key, by id: the session ends when the key is revoked.
    Key { id: String },
    /// The server's bearer token, by a digest of its digest: the session ends
    /// when the server is started with another token.
    Token { fingerprint: String },
    /// An access token: the session ends at its `exp` (milliseconds since the
    /// epoch).
    Until { ms: u64 },
}

/// Who a live key says its holder is.
fn identity_of(key: &ApiKey) -> Identity {
    let credential = match &key.label {
        Some(label) => format!("key {} ({label})", key.id),
        None => format!("key {}", key.id),
    };
    let mut claims = serde_json::Map::new();
    claims.insert("key_id".into(), key.id.clone().into());
    if let Some(label) = &key.label {
        claims.insert("key_label".into(), label.clone().into());
    }
    Identity {
        principal: Some(key.principal.clone()),
        method: AuthMethod::ApiKey,
        credential: Some(credential),
        scopes: None,
        claims: claims.into(),
    }
}

impl Loaded {
    /// Re-reads the file when it changed since it was read (looking at most once
    /// per [`RELOAD_EVERY`] unless `now`), so a key added works at once and a key
    /// revoked stops working within a second. A file that became unreadable
    /// keeps the keys read last, and says so in the log.
    fn refresh(&mut self, now: bool) {
        if !now && self.checked.elapsed() < RELOAD_EVERY {
            return;
        }
        self.checked = Instant::now();
        let path = self.file.path().to_path_buf();
        let changed = modified(&path);
        if changed == self.modified {
            return;
        }
        match KeyFile::open(&path) {
            Ok(file) => {
                self.file = file;
                self.modified = changed;
            }
            Err(e) => tracing::warn!("keeping the API keys read before: {e}"),
        }
    }
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Where the key file of a spec lives: `auth.api_keys.file` beside the spec
/// file, else [`KEYS_FILE`] in the state directory.
pub fn key_file_path(
    spec: &toolgate_core::spec::SpecFile,
    spec_path: &std::path::Path,
    state_dir: &std::path::Path,
) -> PathBuf {
    match spec.auth.api_keys.as_ref().and_then(|k| k.file.as_deref()) {
        Some(file) => spec_path
            .parent()
            .unwrap_or_else(|| std::path::Path::new("."))
            .join(file),
        None => state_dir.join(KEYS_FILE),
    }
}
