//! Rate-limit counters on PostgreSQL, shared by every instance on the database.
//!
//! One call of `toolgate_take_rate` (a function the schema defines) takes a call
//! from every bucket a call falls under, or from none: it creates the buckets it
//! has not seen, locks them in key order (so two calls over the same buckets never
//! deadlock), reads the database's clock, and moves every bucket's due time on
//! only if none is too far ahead. One statement, so one round trip per call, and
//! the row locks make N calls allowed in a window exactly N across instances.

use std::time::Duration;

use super::super::{RateBucket, RateCounters, RateTaken};
use super::{PostgresStore, StoreError};

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
        let inner = self.inner.clone();
        let (refused_by, wait_us) = self.run(async move {
            let conn = inner.conn().await?;
            let row = conn
                .query_one(
                    "SELECT refused_by, wait_us FROM toolgate_take_rate($1, $2, $3)",
                    &[&keys, &intervals, &tolerances],
                )
                .await
                .map_err(inner.error("counting a call against its rate limits"))?;
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
