//! The call ledger: calls that must not run twice, shared by every process using
//! the store.
//!
//! Two kinds of entry live here, each under a name:
//!
//! - a call made under an **idempotency key** ([`LedgerName::key`]: the
//!   principal and its key). It is claimed, atomically, before the call's intent
//!   is recorded; while it runs, a second call with the key waits or is told to
//!   retry; once it ends, the entry keeps its outcome for the retention, and a
//!   second call with the key (same tool and arguments) gets that outcome
//!   without anything running again. A run that holds a key past its lease was
//!   lost with its process: its outcome is unknown.
//! - a call **in doubt** ([`LedgerName::in_doubt`]: the conversation and the
//!   call's hash): a call with effects whose outcome was lost. The same call in
//!   that conversation is refused until an operator resolves the run.
//!
//! A third kind holds a call waiting for a person's approval as an MCP task
//! ([`LedgerName::awaiting`]): the call, to run once approved, then its outcome.
//!
//! Resolving a run (`toolgate audit resolve`) settles every entry it holds: a
//! key keeps what the operator found (and is forgotten if the call never ran),
//! a doubt is lifted.

use serde::{Deserialize, Serialize};
use toolgate_core::Outcome;

use super::StoreError;

/// The name of a ledger entry: its kind and parts as a JSON array, so no
/// principal, key or session can make one name look like another.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LedgerName(String);

impl LedgerName {
    /// The entry of `principal`'s idempotency key `key`.
    pub fn key(principal: &str, key: &str) -> Self {
        Self(serde_json::json!(["key", principal, key]).to_string())
    }

    /// The entry of a call in doubt: `call_hash` in conversation `session`.
    pub fn in_doubt(session: &str, call_hash: &str) -> Self {
        Self(serde_json::json!(["doubt", session, call_hash]).to_string())
    }

    /// The entry of a call waiting for approval `approval_id` as a task (the
    /// call itself, and then its outcome).
    pub fn awaiting(approval_id: &str) -> Self {
        Self(serde_json::json!(["awaiting", approval_id]).to_string())
    }

    /// The entry held while one process runs the approved call of
    /// [`LedgerName::awaiting`], so that no other runs it too.
    pub fn running(approval_id: &str) -> Self {
        Self(serde_json::json!(["running", approval_id]).to_string())
    }

    /// The name as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A name as stored, read back.
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// Whether it names an idempotency key (else a call in doubt).
    pub fn is_key(&self) -> bool {
        self.0.starts_with(r#"["key","#)
    }
}

/// One entry: which call holds the name, and what it came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// The tool called.
    pub tool: String,
    /// The call's hash (tool as defined, and arguments).
    pub call_hash: String,
    /// The run in the audit log.
    pub run_id: String,
    /// The conversation it was made in.
    pub session: String,
    /// Who made it.
    pub principal: String,
    /// `None` while it runs; then what it came to.
    pub outcome: Option<Outcome>,
    /// While it runs, until when its run holds the name: a lease that has
    /// passed means the run was lost (its process died), and its outcome is
    /// unknown.
    pub lease_ms: u64,
    /// When the entry is forgotten (a key's retention; a doubt lasts until
    /// resolved).
    pub expires_ms: u64,
    /// The call itself, for an entry that runs it later (a call waiting for
    /// approval as a task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<toolgate_core::ToolCall>,
}

impl LedgerEntry {
    /// What the entry tells a caller at `now_ms`: its recorded outcome, or
    /// `None` while its run may still be going.
    pub fn outcome_at(&self, now_ms: u64) -> Option<Outcome> {
        match &self.outcome {
            Some(outcome) => Some(outcome.clone()),
            None if self.lease_ms <= now_ms => Some(Outcome::Unknown {
                message: format!(
                    "the run of `{}` that held this call was lost before it recorded an outcome",
                    self.tool
                ),
                run_id: self.run_id.clone(),
            }),
            None => None,
        }
    }
}

/// What a run's claim on a name came to, settled with its completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Settle {
    /// The name the run holds.
    pub name: LedgerName,
    /// What the run came to.
    pub outcome: Outcome,
    /// When the entry is forgotten.
    pub expires_ms: u64,
}

/// Where the ledger lives. Every method is one atomic step of the store.
pub trait CallLedger: Send + Sync {
    /// The entry named `name`, unless there is none or it expired by `now_ms`.
    fn ledger_entry(
        &self,
        name: &LedgerName,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError>;

    /// Puts `entry` under `name` unless an entry that has not expired by
    /// `now_ms` holds it; returns that entry when one does (and nothing
    /// changed). Two processes claiming one name at once: one wins.
    fn claim_ledger(
        &self,
        name: &LedgerName,
        entry: &LedgerEntry,
        now_ms: u64,
    ) -> Result<Option<LedgerEntry>, StoreError>;

    /// Records what `run_id`'s entry under `name` came to, kept until
    /// `expires_ms`; `None` forgets the entry (nothing ran). Nothing changes
    /// when another run holds the name.
    fn settle_ledger(
        &self,
        name: &LedgerName,
        run_id: &str,
        outcome: Option<&Outcome>,
        expires_ms: u64,
    ) -> Result<(), StoreError>;

    /// The names `run_id` holds, with their entries: for an operator resolving
    /// the run, so it reads the whole ledger (an index on runs would cost every
    /// keyed call a page of writes).
    fn ledger_of_run(&self, run_id: &str) -> Result<Vec<(LedgerName, LedgerEntry)>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_keys_and_doubts_do_not_collide() {
        assert_ne!(LedgerName::key("a", "b"), LedgerName::in_doubt("a", "b"));
        assert_ne!(
            LedgerName::key("a\",\"b", "c"),
            LedgerName::key("a", "b\",\"c")
        );
        assert!(LedgerName::key("a", "b").is_key());
        assert!(!LedgerName::in_doubt("a", "b").is_key());
    }

    #[test]
    fn a_running_entry_past_its_lease_is_unknown() {
        let entry = LedgerEntry {
            tool: "pay".into(),
            call_hash: "h".into(),
            run_id: "r1".into(),
            session: "s".into(),
            principal: "p".into(),
            outcome: None,
            lease_ms: 100,
            expires_ms: 1000,
            call: None,
        };
        assert_eq!(entry.outcome_at(99), None);
        assert_eq!(entry.outcome_at(100).map(|o| o.status()), Some("unknown"));
    }
}
