//! A conversation's call history: every call that ran, in order, and whether it
//! succeeded — what a flow's `called_ok`, `once` and `before` read. It lives in the
//! same store as the conversation's state, so a conversation goes on across
//! processes (`toolgate call --session ID`).

use serde::{Deserialize, Serialize};
use toolgate_core::AuditEntry;
use toolgate_core::flow::CallRecord;

use super::StoreError;

/// One call that ran in a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedCall {
    /// Its place in the conversation, from 1.
    pub seq: u64,
    /// The tool it called.
    pub tool: String,
    /// Whether it succeeded.
    pub ok: bool,
    /// When it completed (RFC 3339, from the gate's clock).
    pub time: String,
}

impl From<&RecordedCall> for CallRecord {
    fn from(call: &RecordedCall) -> Self {
        CallRecord::new(call.tool.clone(), call.ok)
    }
}

/// Where call histories live. The gate records each call that ran together with
/// its completion (see [`GateStore::complete`](super::GateStore::complete)).
pub trait CallHistory: Send + Sync {
    /// Appends a call that ran to a session's history.
    fn record_call(
        &self,
        session: &str,
        tool: &str,
        ok: bool,
        time: &str,
    ) -> Result<(), StoreError>;

    /// A session's calls, oldest first; empty for a session with none.
    fn calls(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError>;

    /// A session's calls from its `from`th on (`seq >= from`), oldest first: what
    /// a reader that has the rest already needs, without reading the whole
    /// history again.
    fn calls_from(&self, session: &str, from: u64) -> Result<Vec<RecordedCall>, StoreError> {
        let mut calls = self.calls(session)?;
        calls.retain(|call| call.seq >= from);
        Ok(calls)
    }

    /// Forgets a session's calls (a conversation started over).
    fn forget_calls(&self, session: &str) -> Result<(), StoreError>;
}

/// The call a completion record is about: (tool, ok, time).
pub(super) fn completed_call(entry: &AuditEntry) -> (&str, bool, &str) {
    (
        &entry.tool,
        entry.outcome.as_deref() == Some("ok"),
        &entry.time,
    )
}

/// Whether an operator's resolution says the call ran, and if so whether it
/// succeeded (`cancelled`: it never ran).
pub(super) fn ran(completion: &AuditEntry) -> Option<bool> {
    match completion.outcome.as_deref() {
        Some("cancelled") => None,
        outcome => Some(outcome == Some("ok")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryCallHistory, SqliteStore};

    fn exercise(store: &dyn CallHistory) {
        store.record_call("a", "verify", false, "t1").unwrap();
        store.record_call("a", "verify", true, "t2").unwrap();
        store.record_call("b", "lookup", true, "t3").unwrap();
        let a = store.calls("a").unwrap();
        assert_eq!(
            a.iter()
                .map(|c| (c.seq, c.tool.as_str(), c.ok))
                .collect::<Vec<_>>(),
            [(1, "verify", false), (2, "verify", true)]
        );
        assert_eq!(
            store.calls("b").unwrap()[0].seq,
            1,
            "each session counts from 1"
        );
        assert!(store.calls("c").unwrap().is_empty());
        store.forget_calls("a").unwrap();
        assert!(store.calls("a").unwrap().is_empty());
        assert_eq!(store.calls("b").unwrap().len(), 1);
    }

    #[test]
    fn memory_histories_keep_sessions_apart_in_order() {
        exercise(&MemoryCallHistory::default());
    }

    #[test]
    fn sqlite_histories_keep_sessions_apart_in_order() {
        exercise(&SqliteStore::in_memory().unwrap());
    }
}
