//! Paused programs: a code-mode program whose call waits for a person is written
//! here, beside the approval it waits for, so that any process sharing the store
//! can resume it after the approval is answered — after a restart too.
//!
//! A row holds the interpreter's snapshot (bytes only toolgate's worker reads) and
//! the call to submit again on resume. Since a snapshot is run by the worker as it
//! stands, each row is **sealed**: an HMAC-SHA-256 over the snapshot and every
//! field that says what it is (run, session, principal, code, the pending call,
//! its counters), with a key the store keeps — `code-runs.key` beside `state.db`,
//! `0600`, made on first use (a store with no file keeps a key in memory for the
//! life of the process). A row whose seal does not match is refused: its snapshot
//! was not written by toolgate with this key.
//!
//! A paused run is **taken** to resume it (`paused` → `resuming`, atomically, so
//! two resumes cannot both run it), **released** if its approval is still
//! pending, paused again at its next approval, or **finished** (its snapshot
//! dropped, which also breaks its seal: it can never be resumed again).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde_json::Value;
use toolgate_core::lower_hex;

use super::StoreError;

/// The name of the key file, beside the database.
pub const CODE_RUN_KEY_FILE: &str = "code-runs.key";

/// A program paused at a call that waits for approval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PausedRun {
    /// The program's run id (`code-` and 32 hex digits).
    pub run_id: String,
    /// The conversation it ran in.
    pub session: String,
    /// Who ran it; only they may resume it.
    pub principal: String,
    /// SHA-256 of the program's code, as the audit log records it.
    pub code_sha256: String,
    /// The call that waits: its tool, call id and arguments.
    pub tool: String,
    /// The caller's id of the waiting call.
    pub call_id: String,
    /// The waiting call's arguments, submitted again on resume.
    pub arguments: Value,
    /// The approval it waits for, and why policy asked.
    pub approval_id: String,
    /// Why policy asked for that approval.
    pub reason: String,
    /// Tool calls made so far, the pending one included.
    pub calls: u64,
    /// Times the program has paused, this one included.
    pub suspensions: u64,
    /// Wall-clock time the program has run, not counting waits for a person.
    pub elapsed_ms: u64,
    /// What the program printed before it paused.
    pub printed: String,
    /// When it paused, and when its wait for the approval ends (ms since the epoch).
    pub since_ms: u64,
    /// When the wait for the approval ends; after it the run cannot be resumed.
    pub expires_ms: u64,
    /// The interpreter's state (empty in listings).
    #[serde(skip)]
    pub snapshot: Vec<u8>,
}

/// Where paused programs live.
pub trait CodeRunStore: Send + Sync {
    /// Writes `run` as paused (replacing an earlier pause of the same run), sealed.
    fn pause_run(&self, run: &PausedRun) -> Result<(), StoreError>;

    /// Takes a paused run to resume it: checks its seal and marks it `resuming`,
    /// atomically. Refused for a run that is unknown, finished, being resumed, or
    /// whose seal does not match.
    fn take_run(&self, run_id: &str) -> Result<PausedRun, StoreError>;

    /// Puts a taken run back as paused, unchanged (its approval is still pending,
    /// or the wrong principal asked).
    fn release_run(&self, run_id: &str) -> Result<(), StoreError>;

    /// Marks a run finished and drops its snapshot.
    fn finish_run(&self, run_id: &str) -> Result<(), StoreError>;

    /// Paused runs, oldest first, without their snapshots.
    fn paused_runs(&self) -> Result<Vec<PausedRun>, StoreError>;
}

type HmacSha256 = Hmac<sha2_11::Sha256>;

/// The seal of a row: HMAC-SHA-256 over each field, length-prefixed so no two
/// rows share an input.
pub(super) fn seal(key: &[u8], run: &PausedRun) -> String {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    let arguments = run.arguments.to_string();
    for field in [
        b"toolgate code run v1".as_slice(),
        run.run_id.as_bytes(),
        run.session.as_bytes(),
        run.principal.as_bytes(),
        run.code_sha256.as_bytes(),
        run.tool.as_bytes(),
        run.call_id.as_bytes(),
        arguments.as_bytes(),
        run.approval_id.as_bytes(),
        run.reason.as_bytes(),
        &run.calls.to_be_bytes(),
        &run.suspensions.to_be_bytes(),
        &run.elapsed_ms.to_be_bytes(),
        run.printed.as_bytes(),
        &run.since_ms.to_be_bytes(),
        &run.expires_ms.to_be_bytes(),
        &run.snapshot,
    ] {
        mac.update(&(field.len() as u64).to_be_bytes());
        mac.update(field);
    }
    lower_hex(&mac.finalize().into_bytes())
}

pub(super) fn seal_holds(key: &[u8], run: &PausedRun, stored: &str) -> bool {
    // Both sides are hex of fixed length; compare in constant time anyway.
    let expected = seal(key, run);
    expected.len() == stored.len()
        && expected
            .bytes()
            .zip(stored.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A key for a store with no file: random, for this process's life.
pub(super) fn process_key() -> &'static [u8; 32] {
    static KEY: OnceLock<[u8; 32]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system's random source");
        key
    })
}

/// The key in `dir/code-runs.key`, made (random, `0600`) if it is not there.
/// A new key is written to a file of its own and linked into place, so a reader
/// never sees half a key and two processes making one at once agree on one.
pub(super) fn key_in(dir: &Path) -> Result<Vec<u8>, StoreError> {
    let path = dir.join(CODE_RUN_KEY_FILE);
    let key_error = |source: std::io::Error| StoreError::CodeRunKey {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            return unhex(&text).filter(|k| k.len() >= 32).ok_or_else(|| {
                key_error(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "it does not hold a key toolgate wrote (64 hex digits)",
                ))
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(key_error(e)),
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| key_error(std::io::Error::other(e.to_string())))?;
    let temp = dir.join(format!(
        "{CODE_RUN_KEY_FILE}.{}.{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let written = write_private(&temp, lower_hex(&key).as_bytes())
        .and_then(|()| std::fs::hard_link(&temp, &path));
    let _ = std::fs::remove_file(&temp);
    match written {
        Ok(()) => Ok(key.to_vec()),
        // Another process made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => key_in(dir),
        Err(e) => Err(key_error(e)),
    }
}

fn write_private(path: &PathBuf, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// What a run id that cannot be taken is.
pub(super) fn not_paused(run_id: &str, status: Option<&str>) -> StoreError {
    StoreError::CodeRunNotPaused {
        id: run_id.to_owned(),
        status: status.map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SqliteStore;
    use serde_json::json;

    fn paused(run_id: &str) -> PausedRun {
        PausedRun {
            run_id: run_id.into(),
            session: "default".into(),
            principal: "agent".into(),
            code_sha256: "abc".into(),
            tool: "refund".into(),
            call_id: format!("{run_id}-1"),
            arguments: json!({"order": "A-1"}),
            approval_id: "ap-00000001".into(),
            reason: "a refund needs a human".into(),
            calls: 1,
            suspensions: 1,
            elapsed_ms: 3,
            printed: "hi\n".into(),
            since_ms: 1000,
            expires_ms: 2000,
            snapshot: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_paused_run_is_taken_once() {
        let dir = std::env::temp_dir().join(format!("toolgate-code-runs-{}", uuid::Uuid::new_v4()));
        let store = SqliteStore::open_in_dir(&dir).unwrap();
        store.pause_run(&paused("code-1")).unwrap();
        assert_eq!(store.paused_runs().unwrap().len(), 1);
        let taken = store.take_run("code-1").unwrap();
        assert_eq!(taken.snapshot, vec![1, 2, 3]);
        let again = store.take_run("code-1").unwrap_err();
        assert!(again.to_string().contains("being resumed"), "{again}");
        store.release_run("code-1").unwrap();
        store.take_run("code-1").unwrap();
        store.finish_run("code-1").unwrap();
        let done = store.take_run("code-1").unwrap_err();
        assert!(done.to_string().contains("finished"), "{done}");
        let mode = std::fs::metadata(dir.join(CODE_RUN_KEY_FILE)).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_changed_field_breaks_the_seal() {
        let run = paused("code-2");
        let key = [7u8; 32];
        let sealed = seal(&key, &run);
        assert!(seal_holds(&key, &run, &sealed));
        let mut other = run.clone();
        other.principal = "admin".into();
        assert!(!seal_holds(&key, &other, &sealed));
        let mut other = run;
        other.snapshot.push(0);
        assert!(!seal_holds(&key, &other, &sealed));
    }
}
