//! A program's wall-clock limit, which time spent waiting for a person does not
//! count against.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::time::Sleep;

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

    fn deadline(&self) -> tokio::time::Instant {
        self.waits().1
    }

    /// One timer at this clock's deadline for a sequence of awaits in one task
    /// (see [`Deadline`]).
    pub(super) fn timer(&self) -> Deadline<'_> {
        Deadline {
            clock: self,
            sleep: Box::pin(tokio::time::sleep_until(self.deadline())),
        }
    }

    /// Runs `call` (a gate call made with `cancel`) until it ends or the clock
    /// runs out; then the call is cancelled and awaited, so the gate ends it as
    /// it ends any cancelled call (a recorded intent gets its completion,
    /// `cancelled`) instead of the call being dropped half way.
    pub(super) async fn call_within<T>(
        &self,
        call: impl std::future::Future<Output = T>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<T, Stopped> {
        let mut call = std::pin::pin!(call);
        tokio::select! {
            done = &mut call => Ok(done),
            _ = tokio::time::sleep_until(self.deadline()) => {
                cancel.cancel();
                call.await;
                Err(Stopped::WallClock)
            }
        }
    }
}

/// A [`WallClock`]'s deadline as one timer that stays registered across the
/// awaits of one task. A timer of its own for each await (as
/// [`WallClock::within`] makes) is registered anew each time, and registering
/// one wakes the runtime's driver through its eventfd: two syscalls more on
/// every round trip to a worker.
pub(super) struct Deadline<'a> {
    clock: &'a WallClock,
    sleep: Pin<Box<Sleep>>,
}

impl Deadline<'_> {
    /// `work`, unless the clock's deadline passes first (pushed back by waits
    /// for a person since the last await).
    pub(super) async fn within<T>(&mut self, work: impl Future<Output = T>) -> Result<T, Stopped> {
        let deadline = self.clock.deadline();
        if self.sleep.deadline() != deadline {
            self.sleep.as_mut().reset(deadline);
        }
        let mut work = std::pin::pin!(work);
        let sleep = &mut self.sleep;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(done));
            }
            sleep.as_mut().poll(cx).map(|()| Err(Stopped::WallClock))
        })
        .await
    }
}
