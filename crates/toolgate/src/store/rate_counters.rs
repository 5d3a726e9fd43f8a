//! Rate-limit counters a store keeps for every process that shares it, so that
//! instances behind one load balancer together let through no more calls than a
//! limit allows.
//!
//! A counter is a token bucket kept as GCRA, as the gate's in-process limiter
//! keeps it: one number per bucket, the time its next call is due. A call takes
//! one call from every bucket it falls under, or — if any of them is too far
//! ahead — from none, in one atomic step on the store's own clock (instances'
//! clocks never enter into it). Stores whose processes share nothing over the
//! network (SQLite, memory) keep none, and the gate counts in its own process.

use std::time::Duration;

use super::StoreError;

/// One bucket a call falls under: which one, and the limit's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateBucket {
    /// The bucket's name, the same in every instance with the same limits
    /// (the limit and the principal it counts).
    pub key: String,
    /// The time between two calls at the limit's rate.
    pub interval: Duration,
    /// How far ahead of now the next call may be due (a burst less one call).
    pub tolerance: Duration,
}

/// What taking calls from buckets came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateTaken {
    /// Every bucket had room; one call was taken from each.
    Admitted,
    /// Bucket `bucket` (an index into what was asked) has no room for `wait`
    /// more; nothing was taken from any bucket.
    Refused {
        /// The index, in the buckets asked for, of the first that had no room.
        bucket: usize,
        /// How long until it has room for one more call.
        wait: Duration,
    },
}

/// Rate-limit counters shared by every process on one store.
pub trait RateCounters: Send + Sync {
    /// Takes one call from each of `buckets` if all have room now, else none.
    fn take_rate(&self, buckets: &[RateBucket]) -> Result<RateTaken, StoreError>;
}
