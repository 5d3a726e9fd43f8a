//! What search by meaning costs and gains: the model's load time and memory (the
//! resident set before and after loading it, and its peak while indexing),
//! indexing 2,000 tools from a cold and from a warm vector cache, and one query's
//! latency with the model (fused by scores) and without it (BM25F alone), over the
//! BFCL development set's questions (tests/data/bfcl/, Apache-2.0, see its
//! NOTICE.md); then recall@1, recall@5 and MRR on the development set and on the
//! reworded set (tests/data/search/reworded.jsonl) for the lexical ranking, the
//! embedding alone (score fusion with no lexical share), reciprocal rank fusion and
//! score fusion at the default and a few other lexical weights.
//!
//! The catalog is the 1,282 distinct BFCL functions and a second copy of the first
//! 718 under another namespace (a name is part of the embedded text, so every copy
//! is embedded anew). Run, with the model's directory:
//!
//! ```text
//! cargo run --release -p toolgate --no-default-features --features semantic \
//!     --example semantic_bench -- MODEL_DIR [--costs] [--full]
//! ```
//!
//! `--costs` stops before the accuracy figures, `--embedding` after one text's
//! (timed at both precisions); `--full` measures the model at f32 instead of the
//! default 8-bit weights.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use toolgate::search::eval;
use toolgate::search::{Fusion, Scorer, SearchIndex, SearchRequest};
use toolgate::semantic::{Precision, SemanticIndex, VectorCache, load_model_at};

const POOL: &str = include_str!("../../../tests/data/bfcl/functions.jsonl");
const QUERIES: &str = include_str!("../../../tests/data/bfcl/search-eval.jsonl");
const REWORDED: &str = include_str!("../../../tests/data/search/reworded.jsonl");

/// The lexical weights of score fusion compared (0 is the embedding alone).
const WEIGHTS: [f32; 4] = [0.0, 0.3, 0.5, 0.7];

/// Tools and their similarities to one text, best first.
type Similar = Vec<(String, f32)>;

/// A scorer that remembers each text's similarities, so the comparison of fusions
/// embeds each query (and part) once.
struct Remembered<'a> {
    scorer: &'a dyn Scorer,
    seen: Mutex<HashMap<(String, usize), Similar>>,
}

impl Scorer for Remembered<'_> {
    fn rank(&self, query: &str, limit: usize) -> Vec<String> {
        let similar = self.similarities(query, limit).unwrap_or_default();
        similar.into_iter().map(|(name, _)| name).collect()
    }

    fn similarities(&self, query: &str, limit: usize) -> Option<Vec<(String, f32)>> {
        let key = (query.to_owned(), limit);
        if let Some(found) = self.seen.lock().ok()?.get(&key) {
            return Some(found.clone());
        }
        let found = self.scorer.similarities(query, limit)?;
        self.seen.lock().ok()?.insert(key, found.clone());
        Some(found)
    }
}

/// The catalog's size: the BFCL pool and namespaced copies of it.
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

/// The peak resident set of this process so far, in bytes (Linux `VmHWM`).
fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
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

    let precision = if std::env::args().any(|a| a == "--full") {
        Precision::Full
    } else {
        Precision::Int8
    };
    let before = resident();
    let started = Instant::now();
    let model = std::sync::Arc::new(load_model_at(&dir, precision)?);
    let after = resident();
    println!(
        "model: loaded in {:.2} s; resident set {:.1} MB before, {:.1} MB after (+{:.1} MB), peak {:.1} MB",
        started.elapsed().as_secs_f64(),
        mb(before),
        mb(after),
        mb(after.saturating_sub(before)),
        mb(peak_resident())
    );

    // One embedding of a short text and of a question, alone: what a query costs
    // per text the model reads (the whole request, and each part of one of several),
    // at both precisions, taken in turns so that both see the same machine.
    let other = load_model_at(
        &dir,
        match precision {
            Precision::Full => Precision::Int8,
            Precision::Int8 => Precision::Full,
        },
    )?;
    for (label, text) in [
        ("a short request", "give the customer their money back"),
        ("the median question", median_question(&queries)),
        ("the longest question", longest(&queries)),
    ] {
        let mut times = [Vec::new(), Vec::new()];
        for _ in 0..50 {
            for (model, times) in [&*model, &other].into_iter().zip(&mut times) {
                let started = Instant::now();
                std::hint::black_box(model.embed(text).ok());
                times.push(started.elapsed());
            }
        }
        let [this, that] = times.map(|t| median(t).0.as_secs_f64() * 1e3);
        println!(
            "one embedding of {label} ({} bytes): median {this:.2} ms {precision:?}, {that:.2} ms the other",
            text.len(),
        );
    }
    drop(other);
    if std::env::args().any(|a| a == "--embedding") {
        return Ok(());
    }

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
        println!(
            "  resident set {:.1} MB after indexing, peak so far {:.1} MB",
            mb(resident()),
            mb(peak_resident())
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

    if std::env::args().any(|a| a == "--costs") {
        std::fs::remove_dir_all(&cache)?;
        return Ok(());
    }

    // Accuracy, over the development pool alone (its vectors all in the cache now).
    let vectors = VectorCache::open(&cache, model.id(), model.dimension())?;
    let semantic = SemanticIndex::new(model.clone(), Some(vectors));
    semantic.sync(&pool.iter().collect::<Vec<_>>());
    let remembered = Remembered {
        scorer: &semantic,
        seen: Mutex::new(HashMap::new()),
    };
    let index = SearchIndex::from_tools(&pool);
    let mut fusions = vec![
        ("lexical".to_owned(), None),
        ("rrf".to_owned(), Some(Fusion::Ranks)),
    ];
    for w in WEIGHTS {
        let name = match w {
            0.0 => "embedding only".to_owned(),
            w => format!("scores w={w:.1}"),
        };
        fusions.push((name, Some(Fusion::Scores { lexical: w })));
    }
    for (set, text) in [("development", QUERIES), ("reworded", REWORDED)] {
        let queries = eval::parse_queries(text)?;
        eval::check_queries(&index, &queries)?;
        println!(
            "{set} set, {} queries, pool {}:",
            queries.len(),
            index.len()
        );
        for (name, fusion) in &fusions {
            let report = match fusion {
                None => eval::evaluate(&index, &queries),
                Some(fusion) => eval::evaluate_with(&index, &queries, &remembered, *fusion),
            };
            let parallel = report
                .recall_at_5_of("parallel_multiple_")
                .map(|r| format!(", parallel_multiple recall@5 {r:.4}"))
                .unwrap_or_default();
            println!(
                "  {name:<16} recall@1 {:.4}, recall@5 {:.4}, MRR {:.4}{parallel}",
                report.recall_at_1, report.recall_at_5, report.mrr
            );
        }
    }
    std::fs::remove_dir_all(&cache)?;
    Ok(())
}

fn longest(queries: &[eval::EvalQuery]) -> &str {
    queries
        .iter()
        .map(|q| q.query.as_str())
        .max_by_key(|q| q.len())
        .unwrap_or_default()
}

/// The question of median length.
fn median_question(queries: &[eval::EvalQuery]) -> &str {
    let mut questions: Vec<&str> = queries.iter().map(|q| q.query.as_str()).collect();
    questions.sort_by_key(|q| q.len());
    questions
        .get(questions.len() / 2)
        .copied()
        .unwrap_or_default()
}

fn tempfile_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("toolgate-semantic-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
