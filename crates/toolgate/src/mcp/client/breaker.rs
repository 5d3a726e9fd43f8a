//! When to restart a failing server, and when to stop trying for a while.
//!
//! Each failure (a crash, a failed start, a handshake that timed out) counts; a
//! success (a call answered, or a connection that stayed up a while) clears the
//! count. Below `max_failures` the server is restarted after a backoff that doubles
//! from `backoff` up to `max_backoff`. At `max_failures` the circuit opens: the
//! server's tools are unavailable for `cooldown`, then one attempt is made (half
//! open); it failing opens the circuit again at once.

use std::time::{Duration, Instant};

/// Restart and circuit-breaker settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Consecutive failures that open the circuit.
    pub max_failures: u32,
    /// The wait before the first restart; each further one doubles it.
    pub backoff: Duration,
    /// The longest wait between restarts.
    pub max_backoff: Duration,
    /// How long an open circuit keeps the server's tools unavailable.
    pub cooldown: Duration,
    /// A connection that stays up this long counts as a success.
    pub healthy_after: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            max_failures: 5,
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
            cooldown: Duration::from_secs(30),
            healthy_after: Duration::from_secs(30),
        }
    }
}

/// What to do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterFailure {
    /// Restart after this wait.
    Restart(Duration),
    /// The circuit is open until then.
    Open(Instant),
}

/// Consecutive failures of one server.
#[derive(Debug, Clone)]
pub(super) struct Breaker {
    policy: RestartPolicy,
    failures: u32,
}

impl Breaker {
    pub(super) fn new(policy: RestartPolicy) -> Self {
        Breaker {
            policy,
            failures: 0,
        }
    }

    pub(super) fn policy(&self) -> &RestartPolicy {
        &self.policy
    }

    /// Consecutive failures so far.
    pub(super) fn failures(&self) -> u32 {
        self.failures
    }

    pub(super) fn record_success(&mut self) {
        self.failures = 0;
    }

    pub(super) fn record_failure(&mut self, now: Instant) -> AfterFailure {
        self.failures = self.failures.saturating_add(1);
        if self.failures >= self.policy.max_failures.max(1) {
            return AfterFailure::Open(now + self.policy.cooldown);
        }
        let doublings = self.failures.saturating_sub(1).min(20);
        let wait = self
            .policy
            .backoff
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(self.policy.max_backoff);
        AfterFailure::Restart(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RestartPolicy {
        RestartPolicy {
            max_failures: 4,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(250),
            cooldown: Duration::from_secs(60),
            healthy_after: Duration::from_secs(5),
        }
    }

    #[test]
    fn restarts_back_off_doubling_up_to_the_cap_then_the_circuit_opens() {
        let now = Instant::now();
        let mut breaker = Breaker::new(policy());
        let waits: Vec<AfterFailure> = (0..4).map(|_| breaker.record_failure(now)).collect();
        assert_eq!(
            waits,
            [
                AfterFailure::Restart(Duration::from_millis(100)),
                AfterFailure::Restart(Duration::from_millis(200)),
                AfterFailure::Restart(Duration::from_millis(250)),
                AfterFailure::Open(now + Duration::from_secs(60)),
            ]
        );
        // Half open: the attempt after the cooldown failing opens it again at once.
        let later = now + Duration::from_secs(61);
        assert_eq!(
            breaker.record_failure(later),
            AfterFailure::Open(later + Duration::from_secs(60))
        );
    }

    #[test]
    fn a_success_clears_the_count() {
        let now = Instant::now();
        let mut breaker = Breaker::new(policy());
        for _ in 0..3 {
            breaker.record_failure(now);
        }
        breaker.record_success();
        assert_eq!(breaker.failures(), 0);
        assert_eq!(
            breaker.record_failure(now),
            AfterFailure::Restart(Duration::from_millis(100))
        );
    }
}
