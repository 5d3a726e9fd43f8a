//! Rate-limit counters on PostgreSQL, shared by every instance on the database.
//!
//! One call of `toolgate_take_rate` (a function the schema defines) takes a call
//! from every bucket a call falls under, or from none: it creates the buckets it
//! has not seen, locks them in key order (so two calls over the same buckets never
//! deadlock), reads the database's clock, and moves every bucket's due time on
//! only if none is too far ahead. One statement, prepared once per pooled
//! connection, so one round trip per call, and the row locks make N calls allowed
//! in a window exactly N across instances.
//!
//! A bucket whose due time has passed is full again, so its row says nothing a
//! fresh row would not: every [`SWEEP_EVERY`]th call of an instance also deletes
//! up to [`SWEEP_LIMIT`] such rows, in the same statement (no round trip of its
//! own), skipping rows another call holds locked (so a sweep never waits).

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{PostgresStore, StoreError};
use crate::store::{RateBucket, RateCounters, RateTaken};

/// One call in this many sweeps expired buckets.
pub(super) const SWEEP_EVERY: u64 = 64;

/// The most expired buckets one call deletes.
const SWEEP_LIMIT: i32 = 1000;

/// The statement a call runs, prepared once per pooled connection.
const TAKE_RATE: &str = "SELECT refused_by, wait_us FROM toolgate_take_rate($1, $2, $3, $4)";

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

impl RateCounters for PostgresStore {
    fn take_rate(&self, buckets: &[RateBucket]) -> Result<RateTaken, StoreError> {
        if buckets.is_empty() {
            return Ok(RateTaken::Admitted);
        }
        // In key order, as the function locks them; `order[i]` is where the
        // i-th bucket sent was asked for.
        let mut order: Vec<usize> = (0..buckets.len()).collect();
        order.sort_by(|&a, &b| buckets[a].key.cmp(&buckets[b].key));
        let keys: Vec<String> = order.iter().map(|&i| buckets[i].key.clone()).collect();
        let intervals: Vec<i64> = order.iter().map(|&i| micros(buckets[i].interval)).collect();
        let tolerances: Vec<i64> = order
            .iter()
            .map(|&i| micros(buckets[i].tolerance))
            .collect();
        let calls = self.inner.rate_calls.fetch_add(1, Ordering::Relaxed);
        let sweep = if calls.is_multiple_of(SWEEP_EVERY) {
            SWEEP_LIMIT
        } else {
            0
        };
        let inner = self.inner.clone();
        let (refused_by, wait_us) = self.run(async move {
            let conn = inner.conn().await?;
            let failed = inner.error("counting a call against its rate limits");
            // Prepared once per connection: a plain string is prepared on every
            // call, a round trip of its own before the one that runs it.
            let take = conn.prepare_cached(TAKE_RATE).await.map_err(&failed)?;
            let row = conn
                .query_one(&take, &[&keys, &intervals, &tolerances, &sweep])
                .await
                .map_err(failed)?;
            Ok((row.get::<_, i32>(0), row.get::<_, i64>(1)))
        })?;
        let sent = usize::try_from(refused_by).unwrap_or(0);
        Ok(match sent.checked_sub(1).and_then(|i| order.get(i)) {
            None => RateTaken::Admitted,
            Some(&bucket) => RateTaken::Refused {
                bucket,
                wait: Duration::from_micros(u64::try_from(wait_us).unwrap_or(0)),
            },
        })
    }
}
