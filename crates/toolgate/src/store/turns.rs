//! A conversation's turn, held in the store so that it holds across processes.
//!
//! A call the conversation's flow governs is admitted in one step of the store: with
//! the write lock held, the store checks no other run holds the session's turn,
//! reads the session's state and call history, lets the flow decide on them, and,
//! if the call may run, takes the turn and appends the call's intent. The call's
//! completion (with its state writes and its place in the history) releases the
//! turn. So two processes on one state file cannot both pass `once`, `before` or
//! `never_until` on the same facts: the second is admitted only on the facts the
//! first left.
//!
//! A turn whose holder died (its lease, the call's deadline and a margin, ran out
//! with no completion) is taken over if the call only read. Any other call may
//! have changed the world, and the flow cannot tell whether it succeeded: the
//! conversation's governed calls are refused ([`Admission::Abandoned`]) until the
//! operator records what became of it (`toolgate audit resolve`, which
//! [`GateStore::resolve_run`](super::GateStore::resolve_run) carries out).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use toolgate_core::{AuditEntry, AuditRecord, Retry};

use super::RecordedCall;

/// What the flow decides on a session's facts: `true` to admit the call.
pub type AdmissionCheck<'a> = dyn FnMut(&Map<String, Value>, &[RecordedCall]) -> bool + 'a;

/// How a governed call's admission ended (see [`GateStore::admit`](super::GateStore::admit)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Admission {
    /// The call may run: its intent is this record, and it holds the session's turn
    /// until its completion.
    Admitted(Box<AuditRecord>),
    /// The check refused the call; nothing was written.
    Refused,
    /// Another run holds the session's turn; nothing was written. Try again after
    /// it completes.
    Busy,
    /// A run that was not a read held the session's turn and never completed (its
    /// process stopped); nothing was written. The operator must resolve it first.
    Abandoned {
        /// The run to resolve.
        run_id: String,
        /// Its tool.
        tool: String,
    },
}

/// Who holds a session's turn.
#[derive(Debug, Clone)]
pub(super) struct Holder {
    /// The run that holds it.
    pub(super) run_id: String,
    /// The run's tool.
    pub(super) tool: String,
    /// A read, which leaves nothing to reconcile if its process died.
    pub(super) rerun_safe: bool,
    /// Whether its lease lasts.
    pub(super) live: bool,
}

/// What the turn's holder means for run `run_id`: `None` when it may go on to
/// the check.
pub(super) fn standing(holder: Option<Holder>, run_id: &str) -> Option<Admission> {
    match holder? {
        h if h.run_id == run_id => None,
        h if h.live => Some(Admission::Busy),
        h if h.rerun_safe => None,
        h => Some(Admission::Abandoned {
            run_id: h.run_id,
            tool: h.tool,
        }),
    }
}

/// Whether a call with this intent only reads.
pub(super) fn rerun_safe(intent: &AuditEntry) -> bool {
    intent.effect.is_some_and(|e| e.retry() == Retry::Freely)
}

/// Milliseconds since the Unix epoch, the unit a lease is kept in.
pub(super) fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// When a lease taken now for `lease` ends (a year on, for a lease past what the
/// clock can count).
pub(crate) fn lease_end(lease: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(lease)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_core::RecordKind;

    use super::*;
    use crate::{GateStore, MemoryGateStore, SqliteStore};

    fn entry(kind: RecordKind, run: &str) -> AuditEntry {
        AuditEntry {
            time: "2026-01-01T00:00:00.000Z".into(),
            kind,
            run_id: run.into(),
            call_id: format!("call-{run}"),
            session: "s".into(),
            principal: "operator".into(),
            tool: "charge".into(),
            effect: None,
            arguments: json!({}),
            decision: None,
            reason: None,
            outcome: (kind == RecordKind::Completion).then(|| "ok".into()),
            message: None,
            duration_ms: None,
            attempts: None,
            auth: None,
            credential: None,
            call_hash: None,
            idempotency_key: None,
        }
    }

    const LONG: Duration = Duration::from_secs(60);

    fn exercise(store: &dyn GateStore) {
        let mut runs = 0;
        let mut once = |_: &Map<String, Value>, calls: &[RecordedCall]| {
            runs += 1;
            calls.iter().all(|c| c.tool != "charge")
        };
        let first = store.admit("s", entry(RecordKind::Intent, "r1"), LONG, &mut once);
        assert!(matches!(first, Ok(Admission::Admitted(_))), "{first:?}");
        // The turn is held: the next run is not even checked.
        let second = store.admit("s", entry(RecordKind::Intent, "r2"), LONG, &mut once);
        assert_eq!(second.unwrap(), Admission::Busy);
        // Another conversation has a turn of its own.
        let elsewhere = store.admit("t", entry(RecordKind::Intent, "r3"), LONG, &mut once);
        assert!(matches!(elsewhere, Ok(Admission::Admitted(_))));
        store
            .complete_turn("s", &[], entry(RecordKind::Completion, "r1"))
            .unwrap();
        // Released, and the facts the first run left decide.
        let third = store.admit("s", entry(RecordKind::Intent, "r4"), LONG, &mut once);
        assert_eq!(third.unwrap(), Admission::Refused);
        assert_eq!(runs, 3);
        assert_eq!(store.tail(10).unwrap().len(), 3, "a refusal writes nothing");
        assert!(store.verify().unwrap().is_ok());
    }

    #[test]
    fn a_turn_is_held_from_admission_to_completion_in_either_store() {
        exercise(&MemoryGateStore::default());
        let dir = tempfile::tempdir().unwrap();
        exercise(&SqliteStore::open_in_dir(dir.path()).unwrap());
    }

    #[test]
    fn a_read_whose_holder_died_is_taken_over_anything_else_waits_for_the_operator() {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = SqliteStore::open_in_dir(dir.path()).unwrap();
        let memory = MemoryGateStore::default();
        for store in [&sqlite as &dyn GateStore, &memory] {
            let short = Duration::from_millis(20);
            let mut once = |_: &Map<String, Value>, calls: &[RecordedCall]| {
                calls.iter().all(|c| c.tool != "charge")
            };
            // A read that died: the next run takes its turn over.
            let mut read = entry(RecordKind::Intent, "r1");
            read.effect = Some(toolgate_core::Effect::Read);
            let died = store.admit("s", read, short, &mut once);
            assert!(matches!(died, Ok(Admission::Admitted(_))));
            std::thread::sleep(Duration::from_millis(40));
            let charge = store.admit("s", entry(RecordKind::Intent, "r2"), short, &mut once);
            let Ok(Admission::Admitted(intent)) = charge else {
                panic!("{charge:?}")
            };
            // The charge dies too: it may have taken effect, so nothing goes on.
            std::thread::sleep(Duration::from_millis(40));
            let next = store.admit("s", entry(RecordKind::Intent, "r3"), LONG, &mut once);
            assert_eq!(
                next.unwrap(),
                Admission::Abandoned {
                    run_id: "r2".into(),
                    tool: "charge".into()
                }
            );
            // The operator finds it took effect: the flow counts it, and goes on.
            let mut done = entry(RecordKind::Completion, "r2");
            done.outcome = Some("ok".into());
            store.resolve_run(&intent, done).unwrap();
            assert_eq!(store.calls("s").unwrap().len(), 1);
            let next = store.admit("s", entry(RecordKind::Intent, "r4"), LONG, &mut once);
            assert_eq!(next.unwrap(), Admission::Refused, "once: it already ran");
            assert_eq!(store.pending().unwrap().len(), 1, "the read, still pending");
        }
    }
}
