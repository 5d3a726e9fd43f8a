//! Tool search on a 10,256-tool catalog: the 1,282 distinct BFCL functions
//! (tests/data/bfcl/, imported once) under eight namespaces, queried with the
//! 1,150 development-set questions in turn.
//!
//! Criterion reports the mean time of one query (cycling through the questions)
//! and of replacing one tool. Before that, every question is timed once on its own
//! and the median and 99th percentile printed, with the index's size in bytes
//! ([`SearchIndex::heap_bytes`]: capacities of its vectors and maps, and its strings).
//!
//! Run with `cargo bench -p toolgate-core --bench search`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_core::search::eval;
use toolgate_core::search::{SearchIndex, SearchRequest};

const POOL: &str = include_str!("../../../tests/data/bfcl/functions.jsonl");
const QUERIES: &str = include_str!("../../../tests/data/bfcl/search-eval.jsonl");
const COPIES: usize = 8;

fn search_10k(c: &mut Criterion) {
    let pool = eval::bfcl_pool(POOL).expect("the corpus imports");
    let catalog = eval::namespaced_copies(&pool, COPIES);
    let queries = eval::parse_queries(QUERIES).expect("the queries parse");

    let started = Instant::now();
    let mut index = SearchIndex::from_tools(&catalog);
    let build = started.elapsed();

    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let started = Instant::now();
            black_box(index.search(&SearchRequest::new(&q.query).k(5)));
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    let at = |p: f64| times[((p * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "{} tools, {} terms, index {:.1} MB, built in {:.0} ms; one query (k 5) over {} questions: median {:.0} µs, p99 {:.0} µs",
        index.len(),
        index.term_count(),
        index.heap_bytes() as f64 / 1e6,
        build.as_secs_f64() * 1e3,
        times.len(),
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
    );

    let mut group = c.benchmark_group("search_10k_tools");
    let mut next = queries.iter().cycle();
    group.bench_function("query_k5", |b| {
        b.iter(|| {
            let q = next.next().expect("cycle");
            black_box(index.search(&SearchRequest::new(black_box(&q.query)).k(5)))
        })
    });
    let mut tools = catalog.iter().cycle();
    group.bench_function("replace_one_tool", |b| {
        b.iter(|| {
            let tool = tools.next().expect("cycle");
            black_box(index.insert(black_box(tool)))
        })
    });
    group.finish();
}

criterion_group!(benches, search_10k);
criterion_main!(benches);
