//! The calls a server is running, so that shutting down can wait for them.
//!
//! On shutdown the server stops admitting calls, gives the running ones a grace
//! period to finish, then cancels the rest through the gate (which records each
//! as cancelled) and waits a little more for those records to be written.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How long cancelled calls get to record their outcome after the grace period.
const RECORD_WAIT: Duration = Duration::from_secs(5);

/// Counts the calls in flight and stops them on shutdown.
pub(crate) struct InFlight {
    draining: AtomicBool,
    active: watch::Sender<usize>,
    cancel: CancellationToken,
    finished: AtomicU64,
}

/// What shutting down did to the calls that were running.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// Calls running when shutdown began.
    pub running: usize,
    /// Calls still running when the grace period ended, and cancelled.
    pub cancelled: usize,
    /// Cancelled calls that had not recorded their outcome when the server stopped.
    pub abandoned: usize,
}

impl Default for InFlight {
    fn default() -> Self {
        InFlight {
            draining: AtomicBool::new(false),
            active: watch::Sender::new(0),
            cancel: CancellationToken::new(),
            finished: AtomicU64::new(0),
        }
    }
}

impl InFlight {
    /// Admits a call, or `None` once shutdown has begun.
    pub(crate) fn enter(self: &Arc<Self>) -> Option<CallGuard> {
        if self.draining.load(Ordering::Acquire) {
            return None;
        }
        self.active.send_modify(|n| *n += 1);
        Some(CallGuard {
            inflight: self.clone(),
        })
    }

    /// Fires when the grace period is over: calls still running must stop.
    pub(crate) fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Calls that ran to an outcome since the server started.
    pub(crate) fn finished(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }

    /// Stops admitting calls, waits up to `grace` for the running ones, then
    /// cancels the rest and waits for them to record their outcome.
    pub(crate) async fn drain(&self, grace: Duration) -> DrainReport {
        self.draining.store(true, Ordering::Release);
        let mut active = self.active.subscribe();
        let running = *active.borrow();
        let mut report = DrainReport {
            running,
            ..DrainReport::default()
        };
        if tokio::time::timeout(grace, active.wait_for(|n| *n == 0))
            .await
            .is_ok()
        {
            return report;
        }
        report.cancelled = *active.borrow();
        self.cancel.cancel();
        if tokio::time::timeout(RECORD_WAIT, active.wait_for(|n| *n == 0))
            .await
            .is_err()
        {
            report.abandoned = *active.borrow();
        }
        report
    }
}

/// Held while a call runs; counts it out when dropped.
pub(crate) struct CallGuard {
    inflight: Arc<InFlight>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.inflight.finished.fetch_add(1, Ordering::Relaxed);
        self.inflight
            .active
            .send_modify(|n| *n = n.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn draining_waits_for_a_call_that_finishes_within_the_grace_period() {
        let inflight = Arc::new(InFlight::default());
        let guard = inflight.enter().unwrap();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(guard);
        });
        let report = inflight.drain(Duration::from_secs(5)).await;
        assert_eq!(
            report,
            DrainReport {
                running: 1,
                cancelled: 0,
                abandoned: 0
            }
        );
        assert!(!inflight.cancellation().is_cancelled());
        assert!(
            inflight.enter().is_none(),
            "no call is admitted while draining"
        );
    }

    #[tokio::test]
    async fn a_call_still_running_after_the_grace_period_is_cancelled() {
        let inflight = Arc::new(InFlight::default());
        let guard = inflight.enter().unwrap();
        let cancel = inflight.cancellation().clone();
        tokio::spawn(async move {
            cancel.cancelled().await;
            drop(guard);
        });
        let report = inflight.drain(Duration::from_millis(20)).await;
        assert_eq!(
            (report.running, report.cancelled, report.abandoned),
            (1, 1, 0)
        );
        assert_eq!(inflight.finished(), 1);
    }
}
