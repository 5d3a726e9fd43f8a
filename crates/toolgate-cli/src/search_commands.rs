//! `search` and `eval search`: tool search on the command line, and how well it finds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use toolgate::search::SearchIndex;
use toolgate::search::eval::{self, EvalReport};
use toolgate::{Principal, SearchTools, ToolDescriptor};

use crate::SpecArgs;
use crate::commands::{CommandResult, load, principal};
use crate::output::{first_line, print_json};
use crate::wire_commands::descriptors;

/// What `eval` measures.
#[derive(clap::Subcommand)]
pub enum EvalAction {
    /// Run labelled queries against a pool of tools: recall@1, recall@5, MRR, latency.
    Search {
        /// The tools to search, as BFCL function definitions (JSON Lines); a name
        /// defined twice keeps its first definition.
        #[arg(long, value_name = "FUNCTIONS.jsonl")]
        pool: PathBuf,
        /// The queries: JSON Lines of {"id", "query", "expected": [tool names]}.
        #[arg(long, value_name = "EVAL.jsonl")]
        queries: PathBuf,
        /// List every query whose expected tools were not all in the first five.
        #[arg(long)]
        misses: bool,
        /// Print the report as JSON (with every query's outcome).
        #[arg(long)]
        json: bool,
    },
}

/// `toolgate search QUERY`: the spec file's tools that best fit `query`.
pub fn search(
    args: &SpecArgs,
    query: &str,
    k: usize,
    caller: Option<&str>,
    all: bool,
) -> CommandResult {
    let (spec, source) = load(args)?;
    let tools = descriptors(&spec, &source.path)?;
    let principal: Principal = principal(&spec, caller)?;
    let search = SearchTools::from_tools(&tools).with_policy(spec.policy.clone());
    let hits = search.search(&principal, query, k, all);
    let describe = |name: &str| tools.iter().find(|t| t.name == name);
    if args.json {
        let hits: Vec<_> = hits
            .iter()
            .map(|hit| {
                let mut value = serde_json::to_value(hit).unwrap_or_default();
                if let Some(tool) = describe(&hit.name) {
                    value["description"] = json!(tool.description);
                }
                value
            })
            .collect();
        print_json(&json!({"query": query, "hits": hits}));
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        sayln!("no tool matches `{query}`");
        return Ok(ExitCode::SUCCESS);
    }
    for (rank, hit) in hits.iter().enumerate() {
        let excluded = hit
            .excluded
            .as_ref()
            .map(|e| format!(" [left out: {}]", e.describe()))
            .unwrap_or_default();
        sayln!(
            "{}. {} (score {:.2}; matched {}){excluded}",
            rank + 1,
            hit.name,
            hit.score,
            hit.matched.join(", ")
        );
        if let Some(tool) = describe(&hit.name) {
            sayln!("   {}", first_line(&tool.description, 100));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn read(path: &Path, what: &str) -> Result<String, String> {
    toolgate::read_regular_file(path)
        .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

/// `toolgate eval search`.
pub fn eval(action: EvalAction) -> CommandResult {
    let EvalAction::Search {
        pool,
        queries,
        misses,
        json,
    } = action;
    let tools: Vec<ToolDescriptor> =
        eval::bfcl_pool(&read(&pool, "pool")?).map_err(|e| format!("{}: {e}", pool.display()))?;
    let queries = eval::parse_queries(&read(&queries, "query file")?)
        .map_err(|e| format!("{}: {e}", queries.display()))?;
    let index = SearchIndex::from_tools(&tools);
    eval::check_queries(&index, &queries).map_err(|e| e.to_string())?;
    let start = Instant::now();
    let report = eval::evaluate_timed(&index, &queries, || start.elapsed());
    if json {
        print_json(&report);
    } else {
        say!("{}", summary(&report, misses));
    }
    Ok(ExitCode::SUCCESS)
}

fn summary(report: &EvalReport, misses: bool) -> String {
    let micros = |d: Option<std::time::Duration>| {
        d.map(|d| format!("{:.0} µs", d.as_secs_f64() * 1e6))
            .unwrap_or_else(|| "-".into())
    };
    let mut out = format!(
        "{} queries against {} tools\nrecall@1  {:.4}\nrecall@5  {:.4}  (every expected tool in the first five)\nMRR       {:.4}\nlatency   median {}, p99 {}\n",
        report.queries,
        report.pool,
        report.recall_at_1,
        report.recall_at_5,
        report.mrr,
        micros(report.median_latency),
        micros(report.p99_latency),
    );
    if misses {
        for miss in report.misses() {
            let ranks: Vec<String> = miss
                .ranks
                .iter()
                .map(|r| r.map_or("-".into(), |r| r.to_string()))
                .collect();
            out.push_str(&format!(
                "miss {}: expected at ranks [{}]; first five: {}\n",
                miss.id,
                ranks.join(", "),
                miss.top.join(", ")
            ));
        }
    }
    out
}
