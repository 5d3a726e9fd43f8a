//! A program's wall-clock limit, which time spent waiting for a person does not
//! count against.

use std::time::{Duration, Instant};

/// Why driving a worker stopped before the program ended.
pub(super) enum Stopped {
    /// The pipe broke or a frame was not the protocol's: the worker died.
    Broken(std::io::Error),
    /// The wall-clock limit passed.
    WallClock,
}

impl From<std::io::Error> for Stopped {
    fn from(error: std::io::Error) -> Self {
        Stopped::Broken(error)
    }
}

/// The program's wall-clock deadline, pushed back by time spent waiting for a
/// person. Shared by reference across awaits, so it is `Sync`.
pub(super) struct WallClock {
    started: Instant,
    /// Time spent waiting for a person, and the deadline it pushed back.
    waits: std::sync::Mutex<(Duration, tokio::time::Instant)>,
}

impl WallClock {
    /// A clock with `budget` left to run.
    pub(super) fn new(budget: Duration) -> Self {
        WallClock {
            started: Instant::now(),
            waits: std::sync::Mutex::new((Duration::ZERO, tokio::time::Instant::now() + budget)),
        }
    }

    fn waits(&self) -> std::sync::MutexGuard<'_, (Duration, tokio::time::Instant)> {
        self.waits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn extend(&self, waited: Duration) {
        let mut waits = self.waits();
        waits.0 += waited;
        waits.1 += waited;
    }

    /// Time run on this clock, not counting waits for a person.
    pub(super) fn used(&self) -> Duration {
        let waited = self.waits().0;
        self.started.elapsed().saturating_sub(waited)
    }

    pub(super) async fn within<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, Stopped> {
        let deadline = self.waits().1;
        tokio::time::timeout_at(deadline, work)
            .await
            .map_err(|_| Stopped::WallClock)
    }
}
