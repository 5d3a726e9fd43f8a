//! Paused programs in memory: each run, its status and its seal in a map.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::store::code_runs::{not_paused, process_key, seal, seal_holds};
use crate::store::{CodeRunStore, PausedRun, StoreError};

/// Paused programs in memory, for a [`super::MemoryGateStore`].
#[derive(Default)]
pub struct MemoryCodeRuns {
    runs: Mutex<BTreeMap<String, (PausedRun, &'static str, String)>>,
}

impl MemoryCodeRuns {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, (PausedRun, &'static str, String)>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CodeRunStore for MemoryCodeRuns {
    fn pause_run(&self, run: &PausedRun) -> Result<(), StoreError> {
        let seal = seal(process_key(), run);
        self.lock()
            .insert(run.run_id.clone(), (run.clone(), "paused", seal));
        Ok(())
    }

    fn take_run(&self, run_id: &str) -> Result<PausedRun, StoreError> {
        let mut runs = self.lock();
        let Some((run, status, stored_seal)) = runs.get_mut(run_id) else {
            return Err(not_paused(run_id, None));
        };
        if *status != "paused" {
            return Err(not_paused(run_id, Some(status)));
        }
        if !seal_holds(process_key(), run, stored_seal) {
            return Err(StoreError::CodeRunTampered {
                location: ":memory:".to_owned(),
                id: run_id.to_owned(),
            });
        }
        *status = "resuming";
        Ok(run.clone())
    }

    fn release_run(&self, run_id: &str) -> Result<(), StoreError> {
        match self.lock().get_mut(run_id) {
            Some((_, status, _)) if *status == "resuming" => {
                *status = "paused";
                Ok(())
            }
            _ => Err(not_paused(run_id, None)),
        }
    }

    fn finish_run(&self, run_id: &str) -> Result<(), StoreError> {
        if let Some((run, status, _)) = self.lock().get_mut(run_id) {
            *status = "finished";
            run.snapshot.clear();
        }
        Ok(())
    }

    fn paused_runs(&self) -> Result<Vec<PausedRun>, StoreError> {
        let mut runs: Vec<PausedRun> = self
            .lock()
            .values()
            .filter(|(_, status, _)| *status == "paused")
            .map(|(run, _, _)| PausedRun {
                snapshot: Vec::new(),
                ..run.clone()
            })
            .collect();
        runs.sort_by(|a, b| (a.since_ms, &a.run_id).cmp(&(b.since_ms, &b.run_id)));
        Ok(runs)
    }
}
