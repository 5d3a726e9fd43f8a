//! Measuring search: run labelled queries against a pool of tools and report how
//! often the right tools come first.
//!
//! - **recall@1**: the share of queries whose first hit is one of the expected tools;
//! - **recall@5**: the share of queries whose expected tools are *all* in the first five;
//! - **MRR**: the mean over queries of 1 / the rank of the first expected tool, over
//!   the first [`EVAL_DEPTH`] hits (0 when none is there);
//! - **latency**: median and 99th percentile of one query, when a clock is given —
//!   this crate has none, so the caller passes one (`|| start.elapsed()`).
//!
//! The pool is imported from BFCL's function format; a name defined more than once
//! keeps its first definition.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Fusion, Scorer, SearchIndex, SearchRequest};
use crate::ToolDescriptor;
use crate::ToolSource;
use crate::wire::{ImportError, ImportFormat, import_tools};

/// How deep each query's ranking is read (for MRR); also the `k` every query runs with.
pub const EVAL_DEPTH: usize = 10;

/// One labelled query: the tools a correct answer calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvalQuery {
    /// A name for reports; BFCL's ids start with the category.
    #[serde(default)]
    pub id: String,
    /// The search text.
    pub query: String,
    /// The names of the tools a correct answer calls.
    pub expected: Vec<String>,
}

/// A query file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error(
        "line {line} of the query file is not a query ({message}); each line must be \
         {{\"id\": ..., \"query\": \"...\", \"expected\": [\"tool\", ...]}}"
    )]
    /// A line is not a query.
    BadQuery {
        /// The line's number, from 1.
        line: usize,
        /// What the JSON parser found wrong.
        message: String,
    },
    /// The file has no lines but blank ones.
    #[error("the query file holds no queries; give JSON Lines with one query a line")]
    NoQueries,
    #[error(
        "query `{id}` expects {missing}, which the pool does not define; \
         evaluate against the pool the queries were written for"
    )]
    /// A query expects a tool the pool does not hold.
    UnknownTool {
        /// The query's id.
        id: String,
        /// The first tool missing, quoted.
        missing: String,
    },
}

/// Reads JSON Lines of [`EvalQuery`]; blank lines are skipped.
pub fn parse_queries(text: &str) -> Result<Vec<EvalQuery>, EvalError> {
    let mut queries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let query: EvalQuery = serde_json::from_str(line).map_err(|e| EvalError::BadQuery {
            line: n + 1,
            message: e.to_string(),
        })?;
        queries.push(query);
    }
    if queries.is_empty() {
        return Err(EvalError::NoQueries);
    }
    Ok(queries)
}

/// The tools of a BFCL function file (JSON Lines or a JSON array), each name once:
/// its first definition.
pub fn bfcl_pool(text: &str) -> Result<Vec<ToolDescriptor>, ImportError> {
    let mut seen = std::collections::HashSet::new();
    let mut kept = Vec::new();
    let mut values = serde_json::Deserializer::from_str(text.trim_start_matches('\u{feff}'))
        .into_iter::<Value>();
    let mut all = Vec::new();
    for value in values.by_ref() {
        match value {
            Ok(Value::Array(items)) => all.extend(items),
            Ok(other) => all.push(other),
            // Let the importer word the error.
            Err(_) => return import_tools(ImportFormat::Bfcl, text).map(|_| Vec::new()),
        }
    }
    for value in all {
        let name = value.get("name").and_then(Value::as_str).map(str::to_owned);
        if name.is_none_or(|n| seen.insert(n)) {
            kept.push(value);
        }
    }
    let imported = import_tools(ImportFormat::Bfcl, &Value::Array(kept).to_string())?;
    Ok(imported
        .tools
        .iter()
        .map(|spec| {
            let mut d = ToolDescriptor::new(
                spec.name.clone(),
                spec.description.clone(),
                spec.input_schema(),
                spec.effect(),
                ToolSource::Spec {
                    file: "bfcl".into(),
                },
            );
            d.title = spec.title.clone();
            d.usage = spec.usage.clone();
            d.tags = spec.tags.clone();
            d
        })
        .collect())
}

/// `copies` copies of `tools`, the i-th under namespace `ns{i}.`: a large catalog
/// made of real tools, for timing and sizing.
pub fn namespaced_copies(tools: &[ToolDescriptor], copies: usize) -> Vec<ToolDescriptor> {
    (1..=copies)
        .flat_map(|i| {
            tools.iter().map(move |t| {
                let mut t = t.clone();
                t.name = format!("ns{i}.{}", t.name);
                t
            })
        })
        .collect()
}

/// How one query fared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryOutcome {
    /// The query's id.
    pub id: String,
    /// Per expected tool, its 1-based rank within the first [`EVAL_DEPTH`] hits.
    pub ranks: Vec<Option<usize>>,
    /// The first five hits.
    pub top: Vec<String>,
    /// How long the search took; `None` when untimed. Serialized in microseconds.
    #[serde(skip_serializing_if = "Option::is_none", with = "micros")]
    pub latency: Option<Duration>,
}

impl QueryOutcome {
    fn first_is_expected(&self) -> bool {
        self.ranks.contains(&Some(1))
    }

    fn all_in_top_5(&self) -> bool {
        self.ranks.iter().all(|r| r.is_some_and(|r| r <= 5))
    }

    fn reciprocal_rank(&self) -> f64 {
        self.ranks
            .iter()
            .flatten()
            .min()
            .map_or(0.0, |&r| 1.0 / r as f64)
    }
}

/// The figures of one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// How many queries ran.
    pub queries: usize,
    /// How many tools the index holds.
    pub pool: usize,
    /// The share of queries (0 to 1) whose first hit is an expected tool.
    pub recall_at_1: f64,
    /// The share of queries (0 to 1) with every expected tool in the first five hits.
    pub recall_at_5: f64,
    /// Mean reciprocal rank of each query's best-ranked expected tool (0 for a
    /// query with none in the first [`EVAL_DEPTH`]).
    pub mrr: f64,
    /// The median search time; `None` when untimed. Serialized in microseconds.
    #[serde(skip_serializing_if = "Option::is_none", with = "micros")]
    pub median_latency: Option<Duration>,
    /// The 99th-percentile search time (nearest rank); `None` when untimed.
    #[serde(skip_serializing_if = "Option::is_none", with = "micros")]
    pub p99_latency: Option<Duration>,
    /// Each query's outcome, in the order they ran.
    pub outcomes: Vec<QueryOutcome>,
}

impl EvalReport {
    /// The queries whose expected tools were not all in the first five.
    pub fn misses(&self) -> impl Iterator<Item = &QueryOutcome> {
        self.outcomes.iter().filter(|o| !o.all_in_top_5())
    }

    /// recall@5 over the queries whose id starts with `prefix` (a BFCL category
    /// such as `parallel_multiple_`); `None` when there are none.
    pub fn recall_at_5_of(&self, prefix: &str) -> Option<f64> {
        let of: Vec<&QueryOutcome> = self
            .outcomes
            .iter()
            .filter(|o| o.id.starts_with(prefix))
            .collect();
        let hits = of.iter().filter(|o| o.all_in_top_5()).count();
        (!of.is_empty()).then(|| hits as f64 / of.len() as f64)
    }
}

/// Checks that every expected tool is in `index`.
pub fn check_queries(index: &SearchIndex, queries: &[EvalQuery]) -> Result<(), EvalError> {
    for q in queries {
        if let Some(missing) = q.expected.iter().find(|e| !index.contains(e)) {
            return Err(EvalError::UnknownTool {
                id: q.id.clone(),
                missing: format!("`{missing}`"),
            });
        }
    }
    Ok(())
}

/// Runs every query, untimed.
pub fn evaluate(index: &SearchIndex, queries: &[EvalQuery]) -> EvalReport {
    run(index, queries, None, None)
}

/// Runs every query with `scorer`'s ranking fused in by `fusion`, untimed.
pub fn evaluate_with(
    index: &SearchIndex,
    queries: &[EvalQuery],
    scorer: &dyn Scorer,
    fusion: Fusion,
) -> EvalReport {
    run(index, queries, Some((scorer, fusion)), None)
}

/// Runs every query, timing each with `clock`, which returns the time since any
/// fixed instant (`|| start.elapsed()`).
pub fn evaluate_timed(
    index: &SearchIndex,
    queries: &[EvalQuery],
    mut clock: impl FnMut() -> Duration,
) -> EvalReport {
    run(index, queries, None, Some(&mut clock))
}

/// [`evaluate_timed`] with `scorer` fused in by `fusion`, when given.
pub fn evaluate_timed_with(
    index: &SearchIndex,
    queries: &[EvalQuery],
    scorer: Option<(&dyn Scorer, Fusion)>,
    mut clock: impl FnMut() -> Duration,
) -> EvalReport {
    run(index, queries, scorer, Some(&mut clock))
}

fn run(
    index: &SearchIndex,
    queries: &[EvalQuery],
    scorer: Option<(&dyn Scorer, Fusion)>,
    mut clock: Option<&mut dyn FnMut() -> Duration>,
) -> EvalReport {
    let mut outcomes = Vec::with_capacity(queries.len());
    for q in queries {
        let started = clock.as_mut().map(|c| c());
        let mut request = SearchRequest::new(&q.query).k(EVAL_DEPTH);
        if let Some((scorer, fusion)) = scorer {
            request = request.scorer(scorer).fusion(fusion);
        }
        let hits = index.search(&request);
        let latency = started.and_then(|s| clock.as_mut().map(|c| c().saturating_sub(s)));
        let ranks = q
            .expected
            .iter()
            .map(|e| hits.iter().position(|h| &h.name == e).map(|p| p + 1))
            .collect();
        outcomes.push(QueryOutcome {
            id: q.id.clone(),
            ranks,
            top: hits.into_iter().take(5).map(|h| h.name).collect(),
            latency,
        });
    }
    let n = outcomes.len().max(1) as f64;
    let share = |f: fn(&QueryOutcome) -> bool| outcomes.iter().filter(|o| f(o)).count() as f64 / n;
    let mut latencies: Vec<Duration> = outcomes.iter().filter_map(|o| o.latency).collect();
    latencies.sort_unstable();
    EvalReport {
        queries: outcomes.len(),
        pool: index.len(),
        recall_at_1: share(QueryOutcome::first_is_expected),
        recall_at_5: share(QueryOutcome::all_in_top_5),
        mrr: outcomes
            .iter()
            .map(QueryOutcome::reciprocal_rank)
            .sum::<f64>()
            / n,
        median_latency: percentile(&latencies, 0.50),
        p99_latency: percentile(&latencies, 0.99),
        outcomes,
    }
}

/// The nearest-rank percentile of sorted `values`.
fn percentile(values: &[Duration], p: f64) -> Option<Duration> {
    if values.is_empty() {
        return None;
    }
    let rank = (p * values.len() as f64).ceil() as usize;
    Some(values[rank.clamp(1, values.len()) - 1])
}

/// Durations as fractional microseconds.
mod micros {
    use std::time::Duration;

    use serde::Serializer;

    pub(super) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(d.as_secs_f64() * 1e6),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: &str = r#"{"name": "math.factorial", "description": "Factorial of a number.", "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}}}
{"name": "weather.now", "description": "Current weather in a city.", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}}}
{"name": "math.factorial", "description": "A later definition about cooking.", "parameters": {"type": "dict", "properties": {}}}
{"name": "stock.price", "description": "Price of a stock ticker.", "parameters": {"type": "dict", "properties": {"ticker": {"type": "string"}}}}"#;

    fn queries() -> Vec<EvalQuery> {
        parse_queries(
            r#"{"id": "a", "query": "factorial of 5", "expected": ["math.factorial"]}

{"id": "b", "query": "weather in Paris and the price of AAPL", "expected": ["weather.now", "stock.price"]}
{"id": "c", "query": "cooking", "expected": ["math.factorial"]}"#,
        )
        .unwrap()
    }

    #[test]
    fn the_pool_keeps_the_first_definition_of_each_name() {
        let pool = bfcl_pool(POOL).unwrap();
        let names: Vec<&str> = pool.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["math.factorial", "weather.now", "stock.price"]);
        assert_eq!(pool[0].description, "Factorial of a number.");
    }

    #[test]
    fn the_report_counts_recall_at_1_and_5_and_mrr() {
        let index = SearchIndex::from_tools(&bfcl_pool(POOL).unwrap());
        let report = evaluate(&index, &queries());
        assert_eq!(report.queries, 3);
        assert_eq!(report.pool, 3);
        // a: found first; b: both in the top five; c: not found at all.
        assert_eq!(report.outcomes[0].ranks, [Some(1)]);
        assert!(report.outcomes[1].ranks.iter().all(Option::is_some));
        assert_eq!(report.outcomes[2].ranks, [None]);
        assert!((report.recall_at_5 - 2.0 / 3.0).abs() < 1e-9);
        assert!((report.recall_at_1 - 2.0 / 3.0).abs() < 1e-9);
        assert!((report.mrr - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            report.misses().map(|o| o.id.as_str()).collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(report.median_latency, None);
    }

    #[test]
    fn a_clock_gives_each_query_a_latency_and_the_report_percentiles() {
        let index = SearchIndex::from_tools(&bfcl_pool(POOL).unwrap());
        let mut now = Duration::ZERO;
        let report = evaluate_timed(&index, &queries(), || {
            now += Duration::from_micros(10);
            now
        });
        assert!(
            report
                .outcomes
                .iter()
                .all(|o| o.latency == Some(Duration::from_micros(10)))
        );
        assert_eq!(report.median_latency, Some(Duration::from_micros(10)));
        assert_eq!(report.p99_latency, Some(Duration::from_micros(10)));
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let values: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&values, 0.5), Some(Duration::from_millis(50)));
        assert_eq!(percentile(&values, 0.99), Some(Duration::from_millis(99)));
        assert_eq!(
            percentile(&values[..1], 0.99),
            Some(Duration::from_millis(1))
        );
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn a_bad_query_file_says_which_line_and_what_a_line_holds() {
        let err =
            parse_queries("{\"query\": \"x\", \"expected\": []}\n{\"query\": 1}").unwrap_err();
        assert!(matches!(err, EvalError::BadQuery { line: 2, .. }), "{err}");
        assert!(err.to_string().contains("\"expected\""), "{err}");
        assert_eq!(parse_queries("\n\n"), Err(EvalError::NoQueries));
    }

    #[test]
    fn a_query_expecting_a_tool_outside_the_pool_is_an_error() {
        let index = SearchIndex::from_tools(&bfcl_pool(POOL).unwrap());
        let queries = parse_queries(r#"{"id": "x", "query": "q", "expected": ["nope"]}"#).unwrap();
        let err = check_queries(&index, &queries).unwrap_err();
        assert!(err.to_string().contains("`nope`"), "{err}");
    }

    #[test]
    fn namespaced_copies_multiply_the_catalog_under_distinct_names() {
        let pool = bfcl_pool(POOL).unwrap();
        let copies = namespaced_copies(&pool, 3);
        assert_eq!(copies.len(), 9);
        assert_eq!(copies[3].name, "ns2.math.factorial");
        let index = SearchIndex::from_tools(&copies);
        assert_eq!(index.len(), 9);
    }
}
