//! `toolgate serve --search` with a sentence-embedding model (`search: {model}`), as
//! an MCP client meets it: a real `toolgate` process driven by rmcp over stdio, its
//! upstream server another `toolgate serve` whose tool list changes. The model is
//! all-MiniLM-L6-v2 from `scripts/semantic-model` (TOOLGATE_TEST_MODEL); without it
//! the test says it skipped and passes, and the script fails on a skip.
#![cfg(feature = "semantic")]

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// A client that counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct ListListener(Arc<AtomicUsize>);

impl rmcp::ClientHandler for ListListener {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `toolgate serve --stdio --search -f outer.yaml` in `dir`.
async fn serve(dir: &Path, listener: ListListener) -> RunningService<RoleClient, ListListener> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["serve", "--stdio", "--search", "-f", "outer.yaml"])
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    listener.serve(transport).await.unwrap()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `search_tools` finds for `query`, best first.
async fn found(client: &rmcp::Peer<RoleClient>, query: &str) -> Vec<String> {
    let result = client
        .call_tool(call("search_tools", json!({"query": query, "k": 3})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let value: Value = serde_json::from_str(&text(&result)).unwrap();
    value["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// How many vectors the vector cache under `dir` holds (a 12-byte header, then
/// records of a 32-byte key and 384 `f32`s).
fn cached_vectors(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| (e.unwrap().metadata().unwrap().len() - 12) / (32 + 4 * 384))
        .sum()
}

const REQUEST: &str = "I want my money back for the thing I bought";

#[tokio::test]
async fn serve_with_a_model_finds_an_upstream_tool_by_meaning_once_it_appears_and_embeds_only_it() {
    let Some(model) = std::env::var_os("TOOLGATE_TEST_MODEL") else {
        eprintln!("skipped: TOOLGATE_TEST_MODEL is not set (scripts/semantic-model sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The upstream offers `verify` until it has run, then `refund_order` instead,
    // and says so with `tools/list_changed`.
    std::fs::write(
        dir.path().join("inner.yaml"),
        "tools:\n\
         \x20 - {name: verify, description: Verify the customer., effect: read, set_state: {verified: true}}\n\
         \x20 - {name: refund_order, description: Refund an order to the customer's card., effect: read, response: refunded}\n\
         state:\n  verified: {type: boolean, default: false}\n\
         flow:\n  steps:\n\
         \x20   - {id: identify, allow: [verify], done: {called_ok: verify}}\n\
         \x20   - {id: assist, after: [identify], allow: [refund_order]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("outer.yaml"),
        format!(
            "search:\n  model: {}\n\
             mcp_servers:\n  inner:\n    command: {}\n    args: [serve, --stdio, -f, inner.yaml, --state-dir, {}]\n\
             \x20   effects: {{verify: read, refund_order: read}}\n",
            serde_json::to_string(&model.to_string_lossy()).unwrap(),
            env!("CARGO_BIN_EXE_toolgate"),
            dir.path().join("inner-state").display()
        ),
    )
    .unwrap();
    let vectors = dir.path().join(".toolgate/vectors");

    let listener = ListListener::default();
    let client = serve(dir.path(), listener.clone()).await;
    assert_eq!(
        cached_vectors(&vectors),
        1,
        "inner.verify, embedded at start"
    );
    assert!(
        !found(&client, REQUEST)
            .await
            .contains(&"inner.refund_order".to_owned())
    );
    assert_eq!(
        found(&client, "confirm who the caller is").await[0],
        "inner.verify"
    );
    let result = client
        .call_tool(call("inner.verify", json!({})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));

    // The upstream's list changes: the new tool is found by a request that shares
    // no word with it, and it alone was embedded.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let hits = found(&client, REQUEST).await;
        if hits.first().map(String::as_str) == Some("inner.refund_order") {
            break;
        }
        assert!(Instant::now() < deadline, "not found by meaning: {hits:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(listener.0.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        cached_vectors(&vectors),
        2,
        "only inner.refund_order embedded"
    );
    let result = client
        .call_tool(call("inner.refund_order", json!({})))
        .await
        .unwrap();
    assert!(text(&result).contains("refunded"), "{}", text(&result));
    client.cancel().await.unwrap();

    // A restart reads the vectors back and embeds nothing.
    let client = serve(dir.path(), ListListener::default()).await;
    assert!(!found(&client, "confirm who the caller is").await.is_empty());
    assert_eq!(cached_vectors(&vectors), 2, "nothing embedded again");
    client.cancel().await.unwrap();
}

/// How many tools the upstream adds at once in the test below: enough that
/// embedding them takes seconds in a debug build.
const ADDED: usize = 30;

#[tokio::test]
async fn a_catalog_change_is_embedded_off_the_async_worker_so_calls_go_on_meanwhile() {
    let Some(model) = std::env::var_os("TOOLGATE_TEST_MODEL") else {
        eprintln!("skipped: TOOLGATE_TEST_MODEL is not set (scripts/semantic-model sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Once `verify` has run, the upstream offers ADDED more tools at once.
    let names: Vec<String> = (0..ADDED).map(|i| format!("archive_{i}")).collect();
    let tools: String = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            format!(
                "  - {{name: {name}, description: Look up record {i} in the archive of shipments and invoices and the customer's letters and say where it stands., effect: read, response: found}}\n"
            )
        })
        .collect();
    std::fs::write(
        dir.path().join("inner.yaml"),
        format!(
            "tools:\n\
             \x20 - {{name: verify, description: Verify the customer., effect: read, set_state: {{verified: true}}}}\n\
             {tools}\
             state:\n  verified: {{type: boolean, default: false}}\n\
             flow:\n  steps:\n\
             \x20   - {{id: identify, allow: [verify], done: {{called_ok: verify}}}}\n\
             \x20   - {{id: assist, after: [identify], allow: [{}]}}\n",
            names.join(", ")
        ),
    )
    .unwrap();
    let effects: Vec<String> = std::iter::once("verify: read".to_owned())
        .chain(names.iter().map(|n| format!("{n}: read")))
        .collect();
    std::fs::write(
        dir.path().join("outer.yaml"),
        format!(
            "search:\n  model: {}\n\
             mcp_servers:\n  inner:\n    command: {}\n    args: [serve, --stdio, -f, inner.yaml, --state-dir, {}]\n\
             \x20   effects: {{{}}}\n",
            serde_json::to_string(&model.to_string_lossy()).unwrap(),
            env!("CARGO_BIN_EXE_toolgate"),
            dir.path().join("inner-state").display(),
            effects.join(", ")
        ),
    )
    .unwrap();
    let vectors = dir.path().join(".toolgate/vectors");

    // One async worker: an embedding run on it would hold up every request.
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command
        .args(["serve", "--stdio", "--search", "-f", "outer.yaml"])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .env("TOKIO_WORKER_THREADS", "1");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ListListener::default().serve(transport).await.unwrap();
    assert_eq!(
        cached_vectors(&vectors),
        1,
        "inner.verify, embedded at start"
    );

    let result = client
        .call_tool(call("inner.verify", json!({})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(300);
    let mut slowest = Duration::ZERO;
    while cached_vectors(&vectors) < 1 + ADDED as u64 {
        assert!(
            Instant::now() < deadline,
            "the new tools were never embedded"
        );
        let asked = Instant::now();
        client.list_all_tools().await.unwrap();
        slowest = slowest.max(asked.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let embedding = started.elapsed();
    eprintln!(
        "embedding {ADDED} tools took {embedding:?}; the slowest request meanwhile {slowest:?}"
    );
    assert!(
        embedding > Duration::from_secs(1),
        "embedding {ADDED} tools took only {embedding:?}: too quick to tell whether requests wait for it"
    );
    assert!(
        slowest < embedding / 3,
        "a request waited {slowest:?} while the catalog change was embedded (for {embedding:?})"
    );
    client.cancel().await.unwrap();
}
