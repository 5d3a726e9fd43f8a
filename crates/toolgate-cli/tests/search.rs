//! `toolgate search`, `toolgate eval search` and `toolgate render --defer`, run as a
//! user runs them: the real binary on real files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const SPEC: &str = r#"
principals:
  bot: {ceiling: read}
tools:
  - name: orders.lookup
    description: Look up an order by its number.
    effect: read
    always_loaded: true
  - name: orders.refund
    description: Refund an order to the customer's card.
    effect: write
    usage:
      when_to_use: The customer wants their money back.
      when_not_to: Subscriptions; cancel those instead.
  - name: weather.forecast
    description: Forecast the weather for a city.
    effect: read
"#;

fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/bfcl")
        .join(file)
}

fn run(args: &[&str]) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .output()
        .unwrap();
    (out, dir)
}

fn ok(args: &[&str]) -> String {
    let (out, _dir) = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&ok(args)).unwrap()
}

#[test]
fn search_lists_the_tools_that_fit_with_what_they_matched() {
    let text = ok(&["search", "refund my order"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("1. orders.refund (score "), "{text}");
    assert!(
        lines[0].ends_with("matched refund, refund order, order)"),
        "{text}"
    );
    assert_eq!(lines[1], "   Refund an order to the customer's card.");
    assert!(lines[2].starts_with("2. orders.lookup"), "{text}");
    assert_eq!(lines.len(), 4, "{text}");
}

#[test]
fn search_json_carries_scores_matched_terms_and_descriptions() {
    let value = json(&["search", "money back", "--json", "-k", "1"]);
    let hits = value["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["name"], "orders.refund");
    assert_eq!(
        hits[0]["matched"],
        serde_json::json!(["money", "money back", "back"])
    );
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    assert_eq!(
        hits[0]["description"],
        "Refund an order to the customer's card."
    );
    assert_eq!(
        ok(&["search", "subscriptions"]),
        "no tool matches `subscriptions`\n"
    );
}

#[test]
fn search_as_a_principal_leaves_out_what_it_may_not_use_and_all_shows_why() {
    let names = |v: &Value| -> Vec<String> {
        v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let as_bot = json(&["search", "refund order", "--as", "bot", "--json"]);
    assert_eq!(names(&as_bot), ["orders.lookup"]);
    let all = json(&["search", "refund order", "--as", "bot", "--all", "--json"]);
    assert_eq!(names(&all), ["orders.refund", "orders.lookup"]);
    assert_eq!(all["hits"][0]["excluded"]["reason"], "not_permitted");
    let text = ok(&["search", "refund order", "--as", "bot", "--all"]);
    assert!(
        text.contains("[left out: not permitted for this caller]"),
        "{text}"
    );
    let (out, _dir) = run(&["search", "x", "--as", "bott"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `bot`?"));
}

#[test]
fn eval_search_reports_recall_mrr_and_latency_on_the_development_set() {
    let pool = data("functions.jsonl");
    let queries = data("search-eval.jsonl");
    let args = [
        "eval",
        "search",
        "--pool",
        pool.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
    ];
    let text = ok(&args);
    assert!(
        text.starts_with("1150 queries against 1282 tools\nrecall@1  0.8"),
        "{text}"
    );
    assert!(text.contains("\nrecall@5  0.9"), "{text}");
    assert!(text.contains("\nMRR       0.8"), "{text}");
    assert!(text.contains("\nlatency   median "), "{text}");
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let report = json(&with_json);
    assert_eq!(report["queries"], 1150);
    assert_eq!(report["outcomes"].as_array().unwrap().len(), 1150);
    assert!(report["median_latency"].as_f64().unwrap() > 0.0);
    let mut with_misses = args.to_vec();
    with_misses.push("--misses");
    assert!(ok(&with_misses).contains("\nmiss parallel_multiple_"));
}

#[test]
fn eval_search_names_a_query_that_expects_a_tool_outside_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let queries = dir.path().join("q.jsonl");
    std::fs::write(
        &queries,
        r#"{"id": "q1", "query": "x", "expected": ["no.such_tool"]}"#,
    )
    .unwrap();
    let pool = data("functions.jsonl");
    let (out, _dir) = run(&[
        "eval",
        "search",
        "--pool",
        pool.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("query `q1` expects `no.such_tool`"), "{err}");
}

#[test]
fn render_defer_loads_only_the_always_loaded_tools_up_front() {
    let value = json(&["render", "--for", "anthropic", "--defer"]);
    let tools = value["tools"].as_array().unwrap();
    let deferred: Vec<(&str, bool)> = tools
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t.get("defer_loading").is_some(),
            )
        })
        .collect();
    assert_eq!(
        deferred,
        [
            ("orders_lookup", false),
            ("orders_refund", true),
            ("weather_forecast", true),
            ("tool_search_tool_bm25", false)
        ]
    );
    let value = json(&[
        "render",
        "--for",
        "gemini",
        "--always-loaded",
        "weather.forecast",
    ]);
    let declared: Vec<&str> = value["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        declared,
        ["orders.lookup", "weather.forecast", "search_tools"]
    );
    let (out, _dir) = run(&[
        "render",
        "--for",
        "anthropic",
        "--always-loaded",
        "orders.refnd",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `orders.refund`?"));
}

#[test]
fn search_by_meaning_without_a_model_says_how_to_configure_one() {
    let (out, _dir) = run(&["search", "money back", "--semantic"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--semantic needs a model: give `search: {model: DIR}`"),
        "{err}"
    );
}

#[cfg(not(feature = "semantic"))]
#[test]
fn a_model_in_a_build_without_the_semantic_feature_says_how_to_get_it() {
    let (out, _dir) = run(&["search", "money back", "--model", "models/minilm"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("built without the `semantic` feature") && err.contains("--features semantic"),
        "{err}"
    );
}

/// With the model of `scripts/semantic-model` (TOOLGATE_TEST_MODEL), the spec's
/// `search: {model}` ranks a request that shares no word with the tool.
#[cfg(feature = "semantic")]
#[test]
fn search_with_the_spec_s_model_finds_a_tool_by_meaning() {
    let Some(model) = std::env::var_os("TOOLGATE_TEST_MODEL") else {
        eprintln!("skipped: TOOLGATE_TEST_MODEL is not set (scripts/semantic-model sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "search:\n  model: {}\n{}",
        serde_json::to_string(&model.to_string_lossy()).unwrap(),
        SPEC.trim_start_matches('\n')
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    let toolgate = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("TOOLGATE_STATE_DIR")
            .output()
            .unwrap()
    };
    let out = toolgate(&[
        "search",
        "will it rain in Oslo tomorrow",
        "--semantic",
        "--json",
        "-k",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["hits"][0]["name"], "weather.forecast", "{value}");
    assert!(
        dir.path().join(".toolgate/vectors").is_dir(),
        "the vectors are cached in the state directory"
    );
}

/// `toolgate eval search --model`: a request worded unlike its tool, missed by the
/// lexical ranking, is found once the model's similarities are fused in.
#[cfg(feature = "semantic")]
#[test]
fn eval_search_with_a_model_reports_the_fused_figures() {
    let Some(model) = std::env::var_os("TOOLGATE_TEST_MODEL") else {
        eprintln!("skipped: TOOLGATE_TEST_MODEL is not set (scripts/semantic-model sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let function = |name: &str, description: &str| {
        serde_json::json!({"name": name, "description": description,
            "parameters": {"type": "dict", "properties": {}}})
        .to_string()
    };
    let pool = [
        function("refund_order", "Refund an order to the customer's card."),
        function(
            "get_current_weather",
            "Get the current weather in a given location.",
        ),
        function("integral", "Calculate the definite integral of a function."),
        function("send_email", "Send an email."),
    ];
    std::fs::write(dir.path().join("pool.jsonl"), pool.join("\n")).unwrap();
    std::fs::write(
        dir.path().join("queries.jsonl"),
        r#"{"id": "pt_weather", "query": "Qual a temperatura atual em Lisboa?", "expected": ["get_current_weather"]}
{"id": "para_refund", "query": "I want my money back for the thing I bought", "expected": ["refund_order"]}
"#,
    )
    .unwrap();
    let eval = |more: &[&str]| -> Value {
        let mut args = vec![
            "eval",
            "search",
            "--pool",
            "pool.jsonl",
            "--queries",
            "queries.jsonl",
            "--json",
        ];
        args.extend_from_slice(more);
        let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let lexical = eval(&[]);
    let model = model.to_string_lossy().into_owned();
    let fused = eval(&["--model", &model, "--cache", "vectors"]);
    assert!(lexical["recall_at_1"].as_f64().unwrap() < 1.0, "{lexical}");
    assert_eq!(fused["recall_at_1"], 1.0, "{fused}");
    assert!(
        dir.path().join("vectors").is_dir(),
        "the pool's vectors are cached"
    );
}
