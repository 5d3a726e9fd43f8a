//! How many programs run at once: each runs in a worker process that may take
//! `max_memory_bytes`, so workers are capped overall (`max_workers`, a queue
//! of bounded wait) and per principal (`max_workers_per_principal`, refused at
//! once), and one caller cannot take the machine's memory with many programs.
//! A slot is held while a worker runs: a program paused for approval holds none.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The longest a program waits for a free worker before it is refused.
pub(super) const QUEUE_WAIT: Duration = Duration::from_secs(10);

/// The worker slots a [`super::CodeMode`] and its clones share.
#[derive(Debug, Clone)]
pub(super) struct WorkerSlots {
    all: Arc<Semaphore>,
    max_workers: usize,
    per_principal: usize,
    running: Arc<Mutex<HashMap<String, usize>>>,
}

/// A slot, given back when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    _all: OwnedSemaphorePermit,
    _share: Share,
}

/// One of a principal's running programs, counted until dropped.
#[derive(Debug)]
struct Share {
    principal: String,
    running: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = running.get_mut(&self.principal) {
            *count -= 1;
            if *count == 0 {
                running.remove(&self.principal);
            }
        }
    }
}

impl WorkerSlots {
    pub(super) fn new(max_workers: usize, per_principal: usize) -> Self {
        let max_workers = max_workers.max(1);
        WorkerSlots {
            all: Arc::new(Semaphore::new(max_workers)),
            max_workers,
            per_principal: per_principal.max(1),
            running: Arc::default(),
        }
    }

    /// A slot for a program of `principal`, waiting up to `wait` for one to
    /// free; or the limit that leaves none, and why in words a model or its
    /// user can act on.
    pub(super) async fn take(
        &self,
        principal: &str,
        wait: Duration,
    ) -> Result<Slot, (&'static str, String)> {
        let share = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            let count = running.entry(principal.to_owned()).or_default();
            if *count >= self.per_principal {
                return Err((
                    "max_workers_per_principal",
                    format!(
                        "{principal} already runs {count} programs at once; wait for one to finish, then try again"
                    ),
                ));
            }
            *count += 1;
            Share {
                principal: principal.to_owned(),
                running: self.running.clone(),
            }
        };
        // Refused here, the share is dropped and the principal's count given back.
        match tokio::time::timeout(wait, self.all.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Slot {
                _all: permit,
                _share: share,
            }),
            _ => Err((
                "max_workers",
                format!(
                    "the server is running {} programs at once and none finished within {}; try again in a few seconds",
                    self.max_workers,
                    humantime::format_duration(wait)
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_principal_past_its_share_is_refused_at_once_and_others_still_run() {
        let slots = WorkerSlots::new(4, 2);
        let a = slots.take("alice", QUEUE_WAIT).await.unwrap();
        let _b = slots.take("alice", QUEUE_WAIT).await.unwrap();
        let (limit, why) = slots.take("alice", QUEUE_WAIT).await.unwrap_err();
        assert_eq!(limit, "max_workers_per_principal", "{why}");
        let _bob = slots.take("bob", QUEUE_WAIT).await.unwrap();
        drop(a);
        assert!(
            slots.take("alice", QUEUE_WAIT).await.is_ok(),
            "a slot given back is free again"
        );
    }

    #[tokio::test]
    async fn past_the_overall_cap_a_program_waits_then_is_told_when_to_retry() {
        let slots = WorkerSlots::new(1, 2);
        let held = slots.take("alice", QUEUE_WAIT).await.unwrap();
        let (limit, why) = slots
            .take("bob", Duration::from_millis(20))
            .await
            .unwrap_err();
        assert_eq!(limit, "max_workers");
        assert!(why.contains("try again in a few seconds"), "{why}");
        assert!(
            slots.running.lock().unwrap().get("bob").is_none(),
            "a refusal holds nothing"
        );
        let waiting = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.take("bob", QUEUE_WAIT).await.map(|_| ()) })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        assert!(
            waiting.await.unwrap().is_ok(),
            "the queued program runs once a slot frees"
        );
    }
}
