//! The store: where everything a gate keeps between calls lives — conversation
//! state, the audit log, approvals, call histories, pins, background tasks, paused
//! programs, client sessions and shared rate counters.
//!
//! Conversation state belongs to one conversation, named by a session id such as
//! `"default"`, and is a map of string keys to JSON values. A [`StateStore`] loads,
//! reads and writes that map; a batch of writes lands in one transaction, so a
//! tool's state effects are applied whole or not at all.
//!
//! Three stores ship: [`SqliteStore`], an embedded SQLite file that survives
//! restarts and can be shared by several processes; [`PostgresStore`] (feature
//! `postgres`), one database several instances share; and the memory stores
//! ([`MemoryStore`], [`MemoryGateStore`], ...) for tests and throwaway runs.
//! [`choose_store`] and [`open_store`] pick and open one from the CLI's flags, the
//! environment and the spec. Where the SQLite file lives is chosen by
//! [`resolve_state_dir`]: an explicit directory (the CLI's `--state-dir`), else
//! `TOOLGATE_STATE_DIR`, else `.toolgate/` beside the spec file.
//!
//! # Layout
//!
//! The contracts sit at the top of `store/`, one file per concern: conversation
//! state (`state`), the audit log (`audit`), approvals, call histories (`calls`),
//! paused programs (`code_runs`), calls that must not run twice (`call_ledger`), pins, rate counters, budgets' counters (`budget_counters`), client sessions, background
//! tasks, a conversation's turn (`turns`), and [`GateStore`], which puts them
//! together. Each backend is a folder that implements them in files of the same
//! names: `memory/`, `sqlite/` and (with the `postgres` feature) `postgres/`.
//! Choosing and opening a store is `select`; the write queue the SQLite store
//! commits through is `group_commit`.

mod approvals;
mod audit;
mod blocking_wait;
pub(crate) mod budget_counters;
mod call_ledger;
mod calls;
mod code_runs;
mod error;
mod files;
mod gate_store;
mod group_commit;
mod memory;
mod pin_diff;
mod pins;
#[cfg(feature = "postgres")]
mod postgres;
mod rate_counters;
mod select;
mod sessions;
mod sqlite;
mod state;
mod tasks;
mod turns;
mod untrusted_text;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub(crate) use approvals::names_approval;
pub use approvals::{
    Approval, ApprovalRequest, ApprovalStatus, ApprovalStore, Grant, GrantReach, GrantScope,
    Resolution,
};
pub use audit::{AuditFilter, AuditLog};
pub use budget_counters::{BudgetCharge, BudgetCounters, BudgetSpent, BudgetTaken};
pub use call_ledger::{CallLedger, LedgerEntry, LedgerName, Settle};
pub use calls::{CallHistory, RecordedCall};
pub use code_runs::{CODE_RUN_KEY_FILE, CodeRunStore, PausedRun};
pub use error::StoreError;
pub use files::ALLOW_SYMLINK_ENV;
#[cfg(feature = "mcp")]
pub(crate) use files::create_private_dir;
pub use gate_store::GateStore;
pub use memory::{
    MemoryApprovals, MemoryAuditLog, MemoryBudgetCounters, MemoryCallHistory, MemoryCallLedger,
    MemoryCodeRuns, MemoryGateStore, MemoryPins, MemorySessions, MemoryStore, MemoryTasks,
    MemoryUntrustedText,
};
pub use pin_diff::pin_diff;
pub use pins::{
    PINNED_FIELDS, Pin, PinChange, PinCheck, PinError, PinStore, changed_fields, join_fields,
};
#[cfg(feature = "postgres")]
pub use postgres::{POSTGRES_SCHEMA_VERSION, PostgresOptions, PostgresStore, mask_url};
pub use rate_counters::{RateBucket, RateCounters, RateTaken};
pub use select::{OpenOptions, STORE_ENV, ServedStore, StoreChoice, choose_store, open_store};
#[cfg(feature = "mcp")]
pub(crate) use sessions::now_ms;
pub use sessions::{SessionKey, SessionKind, StoredSession, StoredSessions};
pub use sqlite::SqliteStore;
pub use state::StateStore;
pub(crate) use tasks::rfc3339_ms;
pub use tasks::{TaskRecord, TaskStatus, TaskStore};
pub(crate) use turns::lease_end;
pub use turns::{Admission, AdmissionCheck};
pub use untrusted_text::UntrustedText;

/// The environment variable that names the state directory.
pub const STATE_DIR_ENV: &str = "TOOLGATE_STATE_DIR";

/// The name of the SQLite file inside the state directory.
pub const STATE_DB_FILE: &str = "state.db";

/// The default state directory for a spec file: `.toolgate/` beside it.
///
/// ```
/// use std::path::Path;
/// let dir = toolgate::store::default_state_dir(Path::new("shop/tools.yaml"));
/// assert_eq!(dir, Path::new("shop/.toolgate"));
/// ```
pub fn default_state_dir(spec_file: &Path) -> PathBuf {
    match spec_file.parent() {
        Some(dir) => dir.join(".toolgate"),
        None => PathBuf::from(".toolgate"),
    }
}

/// The state directory named by `TOOLGATE_STATE_DIR`, if it is set and not empty.
pub fn state_dir_from_env() -> Option<PathBuf> {
    non_empty_dir(std::env::var_os(STATE_DIR_ENV))
}

/// Picks the state directory: `explicit` (e.g. `--state-dir`) if given, else
/// `TOOLGATE_STATE_DIR`, else [`default_state_dir`] of the spec file.
pub fn resolve_state_dir(explicit: Option<&Path>, spec_file: &Path) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(state_dir_from_env)
        .unwrap_or_else(|| default_state_dir(spec_file))
}

fn non_empty_dir(value: Option<OsString>) -> Option<PathBuf> {
    value.filter(|v| !v.is_empty()).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_state_dir_sits_beside_the_spec_file() {
        assert_eq!(
            default_state_dir(Path::new("/srv/shop/tools.yaml")),
            Path::new("/srv/shop/.toolgate")
        );
        assert_eq!(
            default_state_dir(Path::new("tools.yaml")),
            Path::new(".toolgate")
        );
    }

    #[test]
    fn an_empty_environment_variable_names_no_directory() {
        assert_eq!(non_empty_dir(None), None);
        assert_eq!(non_empty_dir(Some(OsString::new())), None);
        assert_eq!(
            non_empty_dir(Some(OsString::from("/var/lib/toolgate"))),
            Some(PathBuf::from("/var/lib/toolgate"))
        );
    }

    #[test]
    fn an_explicit_state_dir_wins() {
        assert_eq!(
            resolve_state_dir(Some(Path::new("/tmp/state")), Path::new("a/tools.yaml")),
            Path::new("/tmp/state")
        );
    }
}
