//! A conversation's turn, held in the store so that it holds across processes.
//!
//! A call the conversation's flow governs is admitted in one step of the store: with
//! the write lock held, the store checks no other run holds the session's turn,
//! reads the session's state and call history, lets the flow decide on them, and,
//! if the call may run, takes the turn and appends the call's intent. The call's
//! completion (with its state writes and its place in the history) releases the
//! turn. So two processes on one state file cannot both pass `once`, `before` or
//! `never_until` on the same facts: the second is admitted only on the facts the
//! first left. A turn whose holder died is free again once its lease runs out (the
//! call's deadline, and a margin); its intent stays in `toolgate audit pending`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde_json::{Map, Value};
use toolgate_core::{AuditEntry, AuditRecord};

use super::audit::append_in;
use super::calls::calls_in;
use super::{RecordedCall, SqliteStore, StoreError};

/// What the flow decides on a session's facts: `true` to admit the call.
pub type AdmissionCheck<'a> = dyn FnMut(&Map<String, Value>, &[RecordedCall]) -> bool + 'a;

/// How a governed call's admission ended (see [`GateStore::admit`](super::GateStore::admit)).
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// The call may run: its intent is this record, and it holds the session's turn
    /// until its completion.
    Admitted(Box<AuditRecord>),
    /// The check refused the call; nothing was written.
    Refused,
    /// Another run holds the session's turn; nothing was written. Try again after
    /// it completes.
    Busy,
}

/// Milliseconds since the Unix epoch, the unit a lease is kept in.
fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

impl SqliteStore {
    /// One IMMEDIATE transaction: the write lock is taken before the turn and the
    /// facts are read, so no other process can change them until it commits.
    pub(super) fn admit_in_turn(
        &self,
        session: &str,
        intent: AuditEntry,
        lease: Duration,
        check: &mut AdmissionCheck<'_>,
    ) -> Result<Admission, StoreError> {
        let error = self.error("admitting a call of a governed conversation");
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&error)?;
        let now = now_ms();
        if held_by_another(&tx, session, &intent.run_id, now).map_err(&error)? {
            return Ok(Admission::Busy);
        }
        let state = self.load_in(&tx, session)?;
        let calls = calls_in(&tx, session).map_err(&error)?;
        if !check(&state, &calls) {
            return Ok(Admission::Refused);
        }
        let until = now.saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX));
        tx.prepare_cached(
            "INSERT INTO turns (session, run_id, until_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (session) DO UPDATE
             SET run_id = excluded.run_id, until_ms = excluded.until_ms",
        )
        .and_then(|mut stmt| stmt.execute(params![session, intent.run_id, until]))
        .map_err(&error)?;
        let record = append_in(&tx, intent).map_err(&error)?;
        tx.commit().map_err(&error)?;
        Ok(Admission::Admitted(Box::new(record)))
    }
}

/// Whether a run other than `run_id` holds `session`'s turn and its lease lasts.
fn held_by_another(
    tx: &Connection,
    session: &str,
    run_id: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let held: Option<(String, i64)> = tx
        .prepare_cached("SELECT run_id, until_ms FROM turns WHERE session = ?1")?
        .query_row([session], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    Ok(held.is_some_and(|(holder, until)| holder != run_id && until > now))
}

/// Releases `session`'s turn if `run_id` still holds it, inside an open transaction.
pub(super) fn release_in(tx: &Connection, session: &str, run_id: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("DELETE FROM turns WHERE session = ?1 AND run_id = ?2")?
        .execute([session, run_id])?;
    Ok(())
}

/// The turns of a store in memory: each session's holder and when its lease ends.
/// Its lock is held through each admission, so admissions take turns.
#[derive(Debug, Default)]
pub(super) struct MemoryTurns(Mutex<HashMap<String, (String, Instant)>>);

impl MemoryTurns {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, (String, Instant)>> {
        // Each change is one insert or remove, so a poisoned map is whole.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// When a lease taken now for `lease` ends (a year on, for a lease past what the
/// clock can count).
pub(crate) fn lease_end(lease: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(lease)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
}

/// Whether a run other than `run_id` holds the turn in `turns`, lease lasting.
pub(super) fn held_in_memory(
    turns: &HashMap<String, (String, Instant)>,
    session: &str,
    run_id: &str,
) -> bool {
    turns
        .get(session)
        .is_some_and(|(holder, until)| holder != run_id && *until > Instant::now())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolgate_core::RecordKind;

    use super::*;
    use crate::{GateStore, MemoryGateStore};

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
    fn a_turn_whose_lease_ran_out_is_free_again() {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = SqliteStore::open_in_dir(dir.path()).unwrap();
        let memory = MemoryGateStore::default();
        for store in [&sqlite as &dyn GateStore, &memory] {
            let mut yes = |_: &Map<String, Value>, _: &[RecordedCall]| true;
            let short = Duration::from_millis(20);
            let died = store.admit("s", entry(RecordKind::Intent, "r1"), short, &mut yes);
            assert!(matches!(died, Ok(Admission::Admitted(_))));
            std::thread::sleep(Duration::from_millis(40));
            let next = store.admit("s", entry(RecordKind::Intent, "r2"), LONG, &mut yes);
            assert!(matches!(next, Ok(Admission::Admitted(_))), "{next:?}");
            // The run that died is left for the operator.
            assert_eq!(store.pending().unwrap().len(), 2);
        }
    }
}
