//! What a rate limit's check costs a call: `RateLimiter::admit` alone, with no
//! limit applying, with one token bucket, and with a bucket and a count of
//! calls in flight (taken and given back).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolgate::spec::RateLimit;
use toolgate::{Principal, gate::RateLimiter};

fn limiter(limits: serde_json::Value) -> Arc<RateLimiter> {
    let limits: Vec<RateLimit> = serde_json::from_value(limits).unwrap();
    Arc::new(RateLimiter::new(&limits))
}

fn admit(c: &mut Criterion) {
    let principal = Principal {
        id: "support_bot".into(),
        ..Principal::operator()
    };
    let mut group = c.benchmark_group("rate_limit");
    let cases = [
        (
            "none_applies",
            json!([{"tool": "other", "calls": 1, "per": "1s"}]),
        ),
        (
            "bucket",
            json!([{"principal": "*", "tool": "lookup_order", "calls": 1_000_000_000u64, "per": "1s"}]),
        ),
        (
            "bucket_and_in_flight",
            json!([{"principal": "*", "tool": "lookup_order", "calls": 1_000_000_000u64, "per": "1s", "in_flight": 1000}]),
        ),
    ];
    for (name, limits) in cases {
        let limiter = limiter(limits);
        group.bench_function(name, |b| {
            b.iter(|| black_box(limiter.admit(&principal, black_box("lookup_order")).is_ok()))
        });
    }
    group.finish();
}

criterion_group!(benches, admit);
criterion_main!(benches);
