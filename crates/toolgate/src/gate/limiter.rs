//! The rate limits of a gate (`limits.rate` of the spec): whether a call may
//! start now, and if not, when to try again.
//!
//! A limit of calls per window is a token bucket, kept as GCRA: each bucket
//! holds the time its next call would be due, and a call is let through while
//! that time is less than a burst's worth of calls ahead of now. A limit of
//! calls in flight is a count, taken when a call is let through and given back
//! when its [`RatePermit`] drops — on every path: the call finishing, failing,
//! panicking or being cancelled.
//!
//! Every limit a call falls under is checked, and then taken, under one lock:
//! a call refused by one limit spends nothing of another's, and N calls
//! allowed in a window are exactly N however many callers race for them. The
//! counts live in this process (in memory), so two processes count apart —
//! unless the gate's store keeps [`RateCounters`] for every process sharing it
//! (PostgreSQL), when the buckets are counted there, in one atomic step per
//! call, and only the calls in flight (which end with this process) are
//! counted here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use toolgate_core::spec::RateLimit;
use toolgate_core::{Principal, scope_matches};

use crate::store::{RateBucket, RateCounters, RateTaken, StoreError};

/// How long a call refused for calls in flight is told to wait: a running call
/// may end any moment, so soon.
const IN_FLIGHT_RETRY: Duration = Duration::from_secs(1);

/// The rate limits of one gate and what they have counted. A gate makes its
/// own from its spec's `limits.rate`; an edge of one's own may use one too.
#[derive(Debug)]
pub struct RateLimiter {
    limits: Vec<Limit>,
    epoch: Instant,
    counts: Mutex<Counts>,
}

#[derive(Debug)]
struct Limit {
    spec: RateLimit,
    /// `None`: every caller's calls together; `Some(None)`: each principal's
    /// apart (`*`); `Some(Some(id))`: that principal's.
    principal: Option<Option<String>>,
    tool: String,
    /// The time between two calls at the limit's rate, and how far ahead of
    /// now the next call may be due (a burst less one of those).
    bucket: Option<(Duration, Duration)>,
    in_flight: Option<u32>,
}

/// Per limit and counted principal (`""` when counted together): the time the
/// next call is due (since the limiter's epoch), and the calls running.
#[derive(Debug, Default)]
struct Counts {
    due: HashMap<(usize, String), Duration>,
    running: HashMap<(usize, String), u32>,
}

/// Why a call may not start yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRefused {
    /// The limit, in words (`support_bot's calls: 60 per 1m`).
    pub limit: String,
    /// When the call would be let through (for calls in flight, a guess).
    pub retry_after: Duration,
}

/// Why a call was not let through: a limit refused it, or the counters the
/// store shares could not be read (and the call fails closed).
#[derive(Debug)]
pub enum Limited {
    /// A limit refused the call; it may be made again after the wait given.
    Refused(RateRefused),
    /// The store's shared counters could not be read or written.
    Store(StoreError),
}

/// What a call let through holds: its places among the calls in flight, given
/// back when it drops.
#[must_use]
#[derive(Debug, Default)]
pub struct RatePermit {
    held: Vec<(usize, String)>,
    limiter: Option<Arc<RateLimiter>>,
}

impl Drop for RatePermit {
    fn drop(&mut self) {
        let Some(limiter) = &self.limiter else {
            return;
        };
        let mut counts = limiter.lock();
        for key in self.held.drain(..) {
            if let Some(running) = counts.running.get_mut(&key) {
                *running = running.saturating_sub(1);
            }
        }
    }
}

impl RateLimiter {
    /// The limiter of `limits` (as `toolgate check` passed them: a window that
    /// does not parse leaves that limit without a bucket).
    pub fn new(limits: &[RateLimit]) -> Self {
        let limits = limits
            .iter()
            .map(|spec| {
                let bucket = match (spec.calls, spec.window()) {
                    (Some(calls), Some(window)) if calls > 0 => {
                        let interval = window / calls;
                        let burst = spec.burst.unwrap_or(calls).max(1);
                        Some((interval, interval * (burst - 1)))
                    }
                    _ => None,
                };
                Limit {
                    principal: spec
                        .principal
                        .as_ref()
                        .map(|p| (p != "*").then(|| p.clone())),
                    tool: spec.tool.clone().unwrap_or_else(|| "*".to_owned()),
                    bucket,
                    in_flight: spec.in_flight,
                    spec: spec.clone(),
                }
            })
            .collect();
        RateLimiter {
            limits,
            epoch: Instant::now(),
            counts: Mutex::default(),
        }
    }

    /// Whether these are the limits `limits` make (a gate rebuilt with the
    /// same limits keeps counting where its predecessor was).
    pub(crate) fn is_for(&self, limits: &[RateLimit]) -> bool {
        self.limits.len() == limits.len()
            && self.limits.iter().zip(limits).all(|(a, b)| a.spec == *b)
    }

    /// Lets a call of `principal` to `tool` through now, or says why not.
    pub fn admit(
        self: &Arc<Self>,
        principal: &Principal,
        tool: &str,
    ) -> Result<RatePermit, RateRefused> {
        self.admit_at(principal, tool, Instant::now())
    }

    /// [`RateLimiter::admit`] at `now` (tests pass their own).
    pub fn admit_at(
        self: &Arc<Self>,
        principal: &Principal,
        tool: &str,
        now: Instant,
    ) -> Result<RatePermit, RateRefused> {
        let applying = self.applying(principal, tool);
        self.take(&applying, now, true)
    }

    /// [`RateLimiter::admit`], counting the calls per window in `counters` when
    /// the store shares them (so every instance on it counts together), and only
    /// the calls in flight here.
    pub fn admit_counted(
        self: &Arc<Self>,
        principal: &Principal,
        tool: &str,
        counters: Option<&dyn RateCounters>,
    ) -> Result<RatePermit, Limited> {
        let Some(counters) = counters else {
            return self.admit(principal, tool).map_err(Limited::Refused);
        };
        let applying = self.applying(principal, tool);
        let permit = self
            .take(&applying, Instant::now(), false)
            .map_err(Limited::Refused)?;
        let (limits, buckets): (Vec<&Limit>, Vec<RateBucket>) = applying
            .iter()
            .filter_map(|(i, limit, key)| {
                let (interval, tolerance) = limit.bucket?;
                let spec = serde_json::to_string(&limit.spec).unwrap_or_default();
                let bucket = RateBucket {
                    key: format!("{spec}#{i}@{key}"),
                    interval,
                    tolerance,
                };
                Some((*limit, bucket))
            })
            .unzip();
        if buckets.is_empty() {
            return Ok(permit);
        }
        // A refusal drops `permit`, giving back its places in flight.
        match counters.take_rate(&buckets).map_err(Limited::Store)? {
            RateTaken::Admitted => Ok(permit),
            RateTaken::Refused { bucket, wait } => Err(Limited::Refused(RateRefused {
                limit: limits
                    .get(bucket)
                    .map(|l| l.spec.describe())
                    .unwrap_or_default(),
                retry_after: wait,
            })),
        }
    }

    /// The limits a call of `principal` to `tool` falls under, with the key of
    /// what each counts (`""` for every caller together).
    fn applying(&self, principal: &Principal, tool: &str) -> Vec<(usize, &Limit, String)> {
        self.limits
            .iter()
            .enumerate()
            .filter_map(|(i, limit)| {
                let key = match &limit.principal {
                    None => String::new(),
                    Some(None) => principal.id.clone(),
                    Some(Some(id)) if *id == principal.id => principal.id.clone(),
                    Some(Some(_)) => return None,
                };
                scope_matches(&limit.tool, tool).then_some((i, limit, key))
            })
            .collect()
    }

    /// Checks every limit of `applying` (the buckets too, with `buckets`), and
    /// takes from each only if all let the call through.
    fn take(
        self: &Arc<Self>,
        applying: &[(usize, &Limit, String)],
        now: Instant,
        buckets: bool,
    ) -> Result<RatePermit, RateRefused> {
        let mut permit = RatePermit::default();
        if applying.is_empty() {
            return Ok(permit);
        }
        let now = now.saturating_duration_since(self.epoch);
        let mut counts = self.lock();
        // Check every limit first, so that a refused call takes nothing.
        let mut refused: Option<RateRefused> = None;
        for (i, limit, key) in applying {
            let wait = limit_wait(limit, &counts, (*i, key), now, buckets);
            if let Some(wait) = wait
                && refused.as_ref().is_none_or(|r| r.retry_after < wait)
            {
                refused = Some(RateRefused {
                    limit: limit.spec.describe(),
                    retry_after: wait,
                });
            }
        }
        if let Some(refused) = refused {
            return Err(refused);
        }
        for (i, limit, key) in applying {
            let key = (*i, key.clone());
            if buckets && let Some((interval, _)) = limit.bucket {
                let due = counts.due.get(&key).copied().unwrap_or(now).max(now);
                counts.due.insert(key.clone(), due + interval);
            }
            if limit.in_flight.is_some() {
                *counts.running.entry(key.clone()).or_default() += 1;
                permit.held.push(key);
            }
        }
        if !permit.held.is_empty() {
            permit.limiter = Some(self.clone());
        }
        Ok(permit)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How long a call must wait for `limit` (its bucket only with `buckets`), or
/// `None` when it may start now.
fn limit_wait(
    limit: &Limit,
    counts: &Counts,
    key: (usize, &String),
    now: Duration,
    buckets: bool,
) -> Option<Duration> {
    let key = (key.0, key.1.clone());
    if let Some(most) = limit.in_flight
        && counts.running.get(&key).copied().unwrap_or(0) >= most
    {
        return Some(IN_FLIGHT_RETRY);
    }
    if !buckets {
        return None;
    }
    let (_, tolerance) = limit.bucket?;
    let due = counts.due.get(&key).copied().unwrap_or(now).max(now);
    let ahead = due - now;
    (ahead > tolerance).then(|| ahead - tolerance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limiter(limits: serde_json::Value) -> Arc<RateLimiter> {
        let limits: Vec<RateLimit> = serde_json::from_value(limits).unwrap();
        Arc::new(RateLimiter::new(&limits))
    }

    fn who(id: &str) -> Principal {
        Principal {
            id: id.into(),
            ..Principal::operator()
        }
    }

    #[test]
    fn a_bucket_lets_a_burst_through_then_one_call_per_interval() {
        let limiter = limiter(json!([{"calls": 2, "per": "1s", "burst": 3}]));
        let start = Instant::now();
        let bot = who("bot");
        for _ in 0..3 {
            assert!(limiter.admit_at(&bot, "t", start).is_ok());
        }
        let refused = limiter.admit_at(&bot, "t", start).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_millis(500));
        assert_eq!(refused.limit, "all calls: 2 per 1s");
        let later = start + Duration::from_millis(500);
        assert!(limiter.admit_at(&bot, "t", later).is_ok());
        assert!(limiter.admit_at(&bot, "t", later).is_err());
    }

    #[test]
    fn each_principal_and_each_pattern_is_counted_as_the_limit_says() {
        let limiter = limiter(json!([
            {"principal": "*", "calls": 1, "per": "1h"},
            {"tool": "orders.*", "calls": 3, "per": "1h"},
        ]));
        let now = Instant::now();
        let (a, b, c, d) = (who("a"), who("b"), who("c"), who("d"));
        assert!(limiter.admit_at(&a, "orders.get", now).is_ok());
        assert!(limiter.admit_at(&a, "kb.search", now).is_err(), "a's own");
        assert!(limiter.admit_at(&b, "orders.list", now).is_ok());
        assert!(limiter.admit_at(&c, "orders.get", now).is_ok());
        // d has a call left of its own, but the orders tools have none: refused,
        // and d's own call is not spent on it.
        assert!(limiter.admit_at(&d, "orders.get", now).is_err());
        assert!(limiter.admit_at(&d, "kb.search", now).is_ok());
    }

    #[test]
    fn a_place_in_flight_is_given_back_when_the_permit_drops() {
        let limiter = limiter(json!([{"principal": "bot", "tool": "slow", "in_flight": 2}]));
        let (bot, other) = (who("bot"), who("other"));
        let first = limiter.admit(&bot, "slow").unwrap();
        let second = limiter.admit(&bot, "slow").unwrap();
        assert_eq!(
            limiter.admit(&bot, "slow").unwrap_err().retry_after,
            IN_FLIGHT_RETRY
        );
        assert!(limiter.admit(&other, "slow").is_ok(), "not bot's limit");
        assert!(limiter.admit(&bot, "fast").is_ok(), "not this tool");
        drop(first);
        let third = limiter.admit(&bot, "slow").unwrap();
        let panicked = std::thread::spawn(move || {
            let _held = third;
            panic!("the call panicked");
        })
        .join();
        assert!(panicked.is_err());
        assert!(limiter.admit(&bot, "slow").is_ok(), "given back on a panic");
        drop(second);
    }

    #[test]
    fn a_bucket_holds_exactly_under_eight_threads_racing() {
        let limiter = limiter(json!([{"principal": "*", "tool": "t", "calls": 50, "per": "1h"}]));
        let bot = who("bot");
        let allowed = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..100 {
                        if limiter.admit(&bot, "t").is_ok() {
                            allowed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(allowed.into_inner(), 50);
    }
}
