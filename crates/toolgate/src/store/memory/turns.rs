//! Turns in memory: each session's holder and when its lease ends, under one lock
//! that every admission holds throughout.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use toolgate_core::AuditEntry;

use crate::store::Admission;
use crate::store::turns::{Holder, lease_end, rerun_safe, standing};

/// The turns of a store in memory: each session's holder and when its lease ends.
/// Its lock is held through each admission, so admissions take turns.
#[derive(Debug, Default)]
pub(super) struct MemoryTurns(Mutex<HashMap<String, MemoryTurn>>);

#[derive(Debug)]
pub(super) struct MemoryTurn {
    run_id: String,
    tool: String,
    rerun_safe: bool,
    until: Instant,
}

impl MemoryTurns {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, MemoryTurn>> {
        // Each change is one insert or remove, so a poisoned map is whole.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the holder of `session`'s turn in `turns` means for `run_id` (see
/// [`Admission`]): `None` when it may go on to the check.
pub(super) fn standing_in_memory(
    turns: &HashMap<String, MemoryTurn>,
    session: &str,
    run_id: &str,
) -> Option<Admission> {
    let holder = turns.get(session).map(|t| Holder {
        run_id: t.run_id.clone(),
        tool: t.tool.clone(),
        rerun_safe: t.rerun_safe,
        live: t.until > Instant::now(),
    });
    standing(holder, run_id)
}

/// The turn `intent`'s run takes, for `lease`.
pub(super) fn memory_turn(intent: &AuditEntry, lease: Duration) -> MemoryTurn {
    MemoryTurn {
        run_id: intent.run_id.clone(),
        tool: intent.tool.clone(),
        rerun_safe: rerun_safe(intent),
        until: lease_end(lease),
    }
}

/// Releases `session`'s turn in `turns` if `run_id` holds it.
pub(super) fn release_in_memory(
    turns: &mut HashMap<String, MemoryTurn>,
    session: &str,
    run_id: &str,
) {
    if turns.get(session).is_some_and(|t| t.run_id == run_id) {
        turns.remove(session);
    }
}
