//! API keys: each names the principal it calls as, and only its hash is kept.
//!
//! A key reads `tgk_ID_SECRET`: the id is public (it names the key in `toolgate
//! keys list` and in the audit log), the secret is 32 random bytes in hex. The
//! key file holds, per key, the principal, a label, the SHA-256 digest of the
//! whole key and whether it was revoked, never the key itself. A presented key is
//! found by its id and its digest compared in constant time, so neither the time
//! an answer takes nor an error says anything about the secret.
//!
//! The file is JSON, written whole to a temporary file and renamed over the old
//! one (readers never see half a file), readable by its owner only; a state
//! directory it has to create is created `0700`, as the store creates it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use toolgate_core::{lower_hex, sha256_hex};

/// The file the keys of a state directory live in, by default.
pub const KEYS_FILE: &str = "api-keys.json";

/// What starts every key, so a leaked one is recognisable (and scannable).
const PREFIX: &str = "tgk_";

/// One key, as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    /// The public part of the key, e.g. `3f9a0c1d`.
    pub id: String,
    /// The principal the key calls as.
    pub principal: String,
    /// What the key is for, as its creator said (`--name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// SHA-256 of the whole key, hex.
    pub digest: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it was revoked, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

impl ApiKey {
    /// Whether `toolgate keys revoke` ended it: a revoked key proves nothing.
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}

/// Why the key file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The file exists but cannot be read.
    #[error("cannot read the API key file {path}: {source}")]
    Read {
        /// The key file.
        path: PathBuf,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// The file holds something other than keys.
    #[error(
        "the API key file {path} is not a key file ({source}); restore it from a backup, or move it away and make new keys with `toolgate keys add`"
    )]
    Parse {
        /// The key file.
        path: PathBuf,
        /// Where its JSON is wrong.
        source: serde_json::Error,
    },
    /// The file cannot be written (the keys are unchanged).
    #[error("cannot write the API key file {path}: {source}")]
    Write {
        /// The key file.
        path: PathBuf,
        /// Why it cannot be written.
        source: std::io::Error,
    },
    /// No key has the id given.
    #[error("no API key has the id `{0}`; `toolgate keys list` shows them")]
    Unknown(String),
    /// A key must name the principal it calls as.
    #[error("the principal name is empty; name one declared under `principals:`")]
    NoPrincipal,
}

#[derive(Default, Serialize, Deserialize)]
struct KeyFileBody {
    keys: Vec<ApiKey>,
}

/// The API keys of one key file.
#[derive(Debug, Clone)]
pub struct KeyFile {
    path: PathBuf,
    keys: Vec<ApiKey>,
}

impl KeyFile {
    /// Reads the key file at `path`; a missing file holds no keys.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, KeyFileError> {
        let path = path.into();
        let keys = match std::fs::read(&path) {
            Ok(bytes) => {
                let body: KeyFileBody =
                    serde_json::from_slice(&bytes).map_err(|source| KeyFileError::Parse {
                        path: path.clone(),
                        source,
                    })?;
                body.keys
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(KeyFileError::Read { path, source }),
        };
        Ok(KeyFile { path, keys })
    }

    /// Where the keys are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every key, revoked ones included, oldest first.
    pub fn keys(&self) -> &[ApiKey] {
        &self.keys
    }

    /// Makes a key for `principal` and saves its hash; returns the key, which is
    /// shown once and never kept.
    pub fn add(
        &mut self,
        principal: &str,
        label: Option<&str>,
    ) -> Result<(ApiKey, String), KeyFileError> {
        if principal.trim().is_empty() {
            return Err(KeyFileError::NoPrincipal);
        }
        let id = loop {
            let id = lower_hex(&uuid::Uuid::new_v4().as_bytes()[..4]);
            if !self.keys.iter().any(|k| k.id == id) {
                break id;
            }
        };
        let mut secret = Vec::with_capacity(32);
        secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        secret.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        let key = format!("{PREFIX}{id}_{}", lower_hex(&secret));
        let record = ApiKey {
            id,
            principal: principal.to_owned(),
            label: label.map(str::to_owned),
            digest: sha256_hex(&key),
            created_at: now(),
            revoked_at: None,
        };
        self.keys.push(record.clone());
        self.save()?;
        Ok((record, key))
    }

    /// Revokes the key `id`: it authenticates nobody from then on.
    pub fn revoke(&mut self, id: &str) -> Result<ApiKey, KeyFileError> {
        let key = self
            .keys
            .iter_mut()
            .find(|k| k.id == id)
            .ok_or_else(|| KeyFileError::Unknown(id.to_owned()))?;
        if key.revoked_at.is_none() {
            key.revoked_at = Some(now());
        }
        let revoked = key.clone();
        self.save()?;
        Ok(revoked)
    }

    /// The live key `presented` is, if it is one.
    pub fn verify(&self, presented: &str) -> Option<&ApiKey> {
        let id = presented.strip_prefix(PREFIX)?.split('_').next()?;
        let key = self.keys.iter().find(|k| k.id == id && !k.is_revoked())?;
        let digest = sha256_hex(presented);
        bool::from(digest.as_bytes().ct_eq(key.digest.as_bytes())).then_some(key)
    }

    fn save(&self) -> Result<(), KeyFileError> {
        let write = |source| KeyFileError::Write {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::store::create_private_dir(dir).map_err(write)?;
        }
        let body = KeyFileBody {
            keys: self.keys.clone(),
        };
        let mut text = serde_json::to_vec_pretty(&body).map_err(|e| write(e.into()))?;
        text.push(b'\n');
        let temporary = self.path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&temporary).map_err(write)?;
        file.write_all(&text).map_err(write)?;
        file.sync_all().map_err(write)?;
        std::fs::rename(&temporary, &self.path).map_err(write)
    }
}

fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_verifies_as_its_principal_and_only_its_hash_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEYS_FILE);
        let mut file = KeyFile::open(&path).unwrap();
        let (record, key) = file.add("support_bot", Some("laptop")).unwrap();
        assert!(key.starts_with(&format!("tgk_{}_", record.id)), "{key}");
        assert_eq!(key.len(), 4 + 8 + 1 + 64);
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(!saved.contains(&key[13..]), "the secret is not in the file");
        let reread = KeyFile::open(&path).unwrap();
        assert_eq!(
            reread.verify(&key).map(|k| k.principal.as_str()),
            Some("support_bot")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_wrong_secret_a_made_up_id_or_a_revoked_key_verifies_as_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = KeyFile::open(dir.path().join(KEYS_FILE)).unwrap();
        let (record, key) = file.add("ops", None).unwrap();
        let mut wrong = key.clone();
        let last = wrong.pop().unwrap();
        wrong.push(if last == '0' { '1' } else { '0' });
        assert!(file.verify(&wrong).is_none());
        assert!(file.verify("tgk_deadbeef_00").is_none());
        assert!(file.verify("not a key").is_none());
        assert!(file.verify("").is_none());
        file.revoke(&record.id).unwrap();
        assert!(file.verify(&key).is_none());
        assert!(matches!(file.revoke("nope"), Err(KeyFileError::Unknown(_))));
    }

    #[test]
    fn a_damaged_key_file_is_an_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEYS_FILE);
        std::fs::write(&path, "{not json").unwrap();
        let message = KeyFile::open(&path).unwrap_err().to_string();
        assert!(message.contains("toolgate keys add"), "{message}");
    }
}
