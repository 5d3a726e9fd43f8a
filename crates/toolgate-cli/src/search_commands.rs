//! `search` and `eval search`: tool search on the command line, and how well it finds.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::json;
use toolgate::search::eval::{self, EvalReport};
use toolgate::search::{Fusion, Scorer, SearchIndex};
use toolgate::{Principal, ToolDescriptor, search::SearchTools};

use crate::SpecArgs;
use crate::context::CommandResult;
use crate::context::{load, principal};
use crate::output::{first_line, print_json};
use crate::semantic_search::ModelChoice;
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
        /// Fuse a sentence-embedding model's ranking with the lexical one: the
        /// model's directory (config.json, tokenizer.json, model.safetensors).
        #[arg(long, value_name = "DIR")]
        model: Option<PathBuf>,
        /// With --model: fuse by `scores` (normalised BM25F plus cosine) or by `ranks`
        /// (reciprocal rank fusion).
        #[arg(long, value_name = "HOW", default_value = "scores", requires = "model")]
        fusion: FusionArg,
        /// With --model: the lexical share of fused scores, 0 to 1.
        #[arg(long, value_name = "W", requires = "model")]
        lexical_weight: Option<f32>,
        /// With --model: keep the pool's vectors in DIR between runs.
        #[arg(long, value_name = "DIR", requires = "model")]
        cache: Option<PathBuf>,
    },
}

/// How `eval search --model` fuses.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum FusionArg {
    Scores,
    Ranks,
}

/// How `toolgate search` ranks.
#[derive(clap::Args)]
pub struct SearchModelArgs {
    /// Rank by meaning too, with the spec's `search.model`; an error when there is none.
    #[arg(long)]
    pub semantic: bool,
    /// Rank by meaning too, with the sentence-embedding model in DIR (instead of the spec's).
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,
}

/// `toolgate search QUERY`: the spec file's tools that best fit `query`.
pub fn search(
    args: &SpecArgs,
    query: &str,
    k: usize,
    caller: Option<&str>,
    all: bool,
    model: &SearchModelArgs,
) -> CommandResult {
    let (spec, source) = load(args)?;
    let tools = descriptors(&spec, &source.path)?;
    let principal: Principal = principal(&spec, caller)?;
    let mut search = SearchTools::from_tools(&tools).with_policy(spec.policy.clone());
    let state_dir = toolgate::store::resolve_state_dir(None, &args.file);
    match ModelChoice::resolve(
        Some((&spec, source.path.as_path())),
        model.model.as_deref(),
        Some(&state_dir),
    ) {
        Some(choice) => search = search.with_scorer(choice.open()?),
        None if model.semantic => {
            return Err(format!(
                "--semantic needs a model: give `search: {{model: DIR}}` in {} or --model DIR",
                source.path.display()
            ));
        }
        None => {}
    }
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
    toolgate::files::read_regular_file(path)
        .map_err(|e| format!("cannot read the {what} {}: {e}", path.display()))
}

/// `toolgate eval search`.
pub fn eval(action: EvalAction) -> CommandResult {
    let EvalAction::Search {
        pool,
        queries,
        misses,
        json,
        model,
        fusion,
        lexical_weight,
        cache,
    } = action;
    let tools: Vec<ToolDescriptor> =
        eval::bfcl_pool(&read(&pool, "pool")?).map_err(|e| format!("{}: {e}", pool.display()))?;
    let queries = eval::parse_queries(&read(&queries, "query file")?)
        .map_err(|e| format!("{}: {e}", queries.display()))?;
    let index = SearchIndex::from_tools(&tools);
    eval::check_queries(&index, &queries).map_err(|e| e.to_string())?;
    let scorer = match &model {
        Some(dir) => {
            let choice = ModelChoice {
                model: dir.clone(),
                cache,
            };
            let loading = Instant::now();
            let scorer = choice.open()?;
            let loaded = loading.elapsed();
            let embedding = Instant::now();
            scorer.sync(&tools.iter().collect::<Vec<_>>());
            if !json {
                sayln!(
                    "model loaded in {:.2} s; {} tools embedded (or read from the cache) in {:.2} s",
                    loaded.as_secs_f64(),
                    tools.len(),
                    embedding.elapsed().as_secs_f64()
                );
            }
            Some(scorer)
        }
        None => None,
    };
    let fusion = match fusion {
        FusionArg::Scores => Fusion::Scores {
            lexical: lexical_weight.unwrap_or(toolgate::search::DEFAULT_LEXICAL_WEIGHT),
        },
        FusionArg::Ranks => Fusion::Ranks,
    };
    let scorer = scorer.as_deref().map(|s| (s as &dyn Scorer, fusion));
    let start = Instant::now();
    let report = eval::evaluate_timed_with(&index, &queries, scorer, || start.elapsed());
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
