//! What search by meaning costs: the model's load time and memory, indexing 2,000
//! tools from a cold and from a warm vector cache, and one query's latency with the
//! model (fused by scores) and without it (BM25F alone), over the BFCL development
//! set's questions (tests/data/bfcl/, Apache-2.0, see its NOTICE.md).
//!
//! The catalog is the 1,282 distinct BFCL functions and a second copy of the first
//! 718 under another namespace (a name is part of the embedded text, so every copy
//! is embedded anew). Run, with the model's directory:
//!
//! ```text
//! cargo run --release -p toolgate --no-default-features --features semantic \
//!     --example semantic_bench -- MODEL_DIR
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use toolgate::search::eval;
use toolgate::search::{Fusion, SearchIndex, SearchRequest};
use toolgate::semantic::{SemanticIndex, VectorCache, load_model};

const POOL: &str = include_str!("../../../tests/data/bfcl/functions.jsonl");
const QUERIES: &str = include_str!("../../../tests/data/bfcl/search-eval.jsonl");
const TOOLS: usize = 2000;

/// The resident set of this process, in bytes (Linux), for the model's memory.
fn resident() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn median(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort_unstable();
    let at = |p: f64| times[((p * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1];
    (at(0.5), at(0.99))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("give the model's directory")?,
    );
    let pool = eval::bfcl_pool(POOL)?;
    let mut catalog = pool.clone();
    catalog.extend(
        eval::namespaced_copies(&pool, 1)
            .into_iter()
            .take(TOOLS - pool.len()),
    );
    let queries = eval::parse_queries(QUERIES)?;

    let before = resident();
    let started = Instant::now();
    let model = std::sync::Arc::new(load_model(&dir)?);
    println!(
        "model: loaded in {:.2} s, resident memory +{:.1} MB",
        started.elapsed().as_secs_f64(),
        (resident() - before) as f64 / 1e6
    );

    let cache = tempfile_dir()?;
    let tools: Vec<_> = catalog.iter().collect();
    for run in ["cold", "warm"] {
        let vectors = VectorCache::open(&cache, model.id(), model.dimension())?;
        let index = SemanticIndex::new(model.clone(), Some(vectors));
        let started = Instant::now();
        index.sync(&tools);
        println!(
            "index {} tools, {run} cache: {:.2} s ({} embedded; vectors {:.1} MB)",
            index.len(),
            started.elapsed().as_secs_f64(),
            index.embedded(),
            index.heap_bytes() as f64 / 1e6
        );
        if run == "warm" {
            let lexical = SearchIndex::from_tools(&catalog);
            for (label, fused) in [("lexical only", false), ("with the model", true)] {
                let times: Vec<Duration> = queries
                    .iter()
                    .map(|q| {
                        let mut request = SearchRequest::new(&q.query).k(5);
                        if fused {
                            request = request.scorer(&index).fusion(Fusion::SCORES);
                        }
                        let started = Instant::now();
                        std::hint::black_box(lexical.search(&request));
                        started.elapsed()
                    })
                    .collect();
                let (p50, p99) = median(times);
                println!(
                    "one query (k 5), {label}, over {} questions: median {:.2} ms, p99 {:.2} ms",
                    queries.len(),
                    p50.as_secs_f64() * 1e3,
                    p99.as_secs_f64() * 1e3
                );
            }
        }
    }
    std::fs::remove_dir_all(&cache)?;
    Ok(())
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("toolgate-semantic-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
