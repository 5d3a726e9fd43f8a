//! `toolgate serve --http --metrics`: Prometheus metrics of a real `toolgate`
//! process, scraped over loopback after calls made by the official SDK's client.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const SPEC: &str = r#"
tools:
  - name: lookup
    description: Look a record up.
    effect: read
    parameters:
      type: object
      properties:
        id: {type: string}
      required: [id]
      additionalProperties: false
    response: {found: true}
  - name: wire_money
    description: Send money somewhere.
    effect: external
    parameters: {type: object}
    response: {sent: true}
"#;

const TOKEN: &str = "tg-test-4f0c2a9d8b7e6f5a4c3d2e1f0a9b8c7d";

/// A running `toolgate serve --http 127.0.0.1:0 ARGS`, killed when dropped.
struct Served {
    child: Child,
    /// The MCP endpoint.
    url: String,
    /// Where `--metrics` said it serves, when it said so.
    metrics: Option<String>,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    serve_spec(SPEC, args)
}

fn serve_spec(spec: &str, args: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    serve_in(dir, args)
}

/// `toolgate serve` in `dir`, which holds its spec file.
fn serve_in(dir: tempfile::TempDir, args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .env("TG_TEST_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url_in = |line: &str| {
        line.split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_owned()
    };
    let mut metrics = None;
    let url = loop {
        let line = lines.next().expect("serve says where it serves").unwrap();
        if line.contains("metrics at") {
            metrics = Some(url_in(&line));
        } else if line.contains("serving") {
            break url_in(&line);
        }
    };
    Served {
        child,
        url,
        metrics,
        _dir: dir,
    }
}

async fn client(url: &str, token: Option<&str>) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap()
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

async fn scrape(url: &str, token: Option<&str>) -> (u16, String, String) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.unwrap())
}

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

/// Calls that end every way a caller sees: two that run, one with bad
/// arguments, one to a name no tool has, one that waits for approval.
async fn make_calls(client: &RunningService<RoleClient, ()>) {
    for id in ["a", "b"] {
        let ran = client.call_tool(call("lookup", json!({"id": id}))).await;
        assert_eq!(ran.unwrap().is_error, Some(false));
    }
    let invalid = client.call_tool(call("lookup", json!({}))).await.unwrap();
    assert_eq!(invalid.is_error, Some(true));
    assert!(
        client
            .call_tool(call("no_such_tool", json!({})))
            .await
            .is_err()
    );
    let pending = client
        .call_tool(call("wire_money", json!({})))
        .await
        .unwrap();
    assert_eq!(pending.is_error, Some(true));
}

#[tokio::test]
async fn metrics_beside_the_mcp_endpoint_count_calls_by_tool_outcome_and_principal() {
    let served = serve(&["--metrics"]);
    let at = served
        .metrics
        .clone()
        .expect("serve says where metrics are");
    assert!(at.ends_with("/metrics"), "{at}");
    let client = client(&served.url, None).await;
    make_calls(&client).await;
    let (status, kind, text) = scrape(&at, None).await;
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");

    let calls = |tool, outcome| {
        sample(
            &text,
            "toolgate_calls_total",
            &[
                ("tool", tool),
                ("outcome", outcome),
                ("principal", "operator"),
            ],
        )
    };
    assert_eq!(calls("lookup", "ok"), Some(2.0), "{text}");
    assert_eq!(calls("lookup", "invalid"), Some(1.0), "{text}");
    assert_eq!(calls("(unknown)", "unknown_tool"), Some(1.0), "{text}");
    assert_eq!(calls("wire_money", "pending_approval"), Some(1.0), "{text}");
    assert!(
        text.contains("# TYPE toolgate_calls_total counter"),
        "{text}"
    );

    let ran = [("tool", "lookup"), ("outcome", "ok")];
    assert_eq!(
        sample(&text, "toolgate_call_duration_seconds_count", &ran),
        Some(2.0),
        "{text}"
    );
    assert!(text.contains("# TYPE toolgate_call_duration_seconds histogram"));
    let all = [("tool", "lookup"), ("outcome", "ok"), ("le", "+Inf")];
    assert_eq!(
        sample(&text, "toolgate_call_duration_seconds_bucket", &all),
        Some(2.0)
    );
    let commits = sample(&text, "toolgate_store_commit_duration_seconds_count", &[]);
    assert!(commits.is_some_and(|n| n >= 1.0), "{text}");
    // Five calls: each refusal one record, each read its intent and completion.
    let records = sample(&text, "toolgate_audit_records_total", &[]);
    assert!(records.is_some_and(|n| n >= 7.0), "{text}");
    assert_eq!(sample(&text, "toolgate_approvals_pending", &[]), Some(1.0));
    let age = sample(&text, "toolgate_approval_oldest_age_seconds", &[]);
    assert!(age.is_some_and(|age| (0.0..60.0).contains(&age)), "{text}");
    // No label holds a session or call id.
    assert!(!text.contains("session"), "{text}");
    assert!(!text.contains("mcp-"), "{text}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn metrics_beside_the_mcp_endpoint_take_its_credential() {
    let served = serve(&["--metrics", "--token-env", "TG_TEST_TOKEN"]);
    let at = served.metrics.clone().unwrap();
    let (status, _, _) = scrape(&at, None).await;
    assert_eq!(status, 401);
    let (status, _, _) = scrape(&at, Some("not-the-token")).await;
    assert_eq!(status, 401);
    let (status, _, text) = scrape(&at, Some(TOKEN)).await;
    assert_eq!(status, 200);
    assert!(text.contains("toolgate_"), "{text}");
}

#[tokio::test]
async fn metrics_beside_the_mcp_endpoint_are_for_approvers_where_the_spec_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "{SPEC}principals:\n  bot: {{ceiling: external, scopes: [\"*\"]}}\n  ops: {{ceiling: read, approve: [\"*\"]}}\nauth:\n  api_keys: {{}}\n"
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    let key = |who: &str| {
        let made = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["keys", "add", who])
            .current_dir(dir.path())
            .env_remove("TOOLGATE_STATE_DIR")
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        String::from_utf8(made.stdout).unwrap().trim().to_owned()
    };
    let (bot, ops) = (key("bot"), key("ops"));
    let served = serve_in(dir, &["--metrics"]);
    let at = served.metrics.clone().unwrap();
    let (status, _, text) = scrape(&at, Some(&bot)).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("only approvers read them"), "{text}");
    let (status, _, text) = scrape(&at, Some(&ops)).await;
    assert_eq!(status, 200);
    assert!(text.contains("toolgate_"), "{text}");
}

#[tokio::test]
async fn metrics_on_an_address_of_their_own_are_served_there_alone() {
    let served = serve(&["--metrics", "127.0.0.1:0"]);
    let at = served.metrics.clone().unwrap();
    assert!(!at.starts_with(served.url.trim_end_matches("/mcp")), "{at}");
    let client = client(&served.url, None).await;
    make_calls(&client).await;
    let (status, _, text) = scrape(&at, None).await;
    assert_eq!(status, 200);
    let ok = [("tool", "lookup"), ("outcome", "ok")];
    assert_eq!(
        sample(&text, "toolgate_calls_total", &ok),
        Some(2.0),
        "{text}"
    );
    // The MCP endpoint does not serve metrics then.
    let beside = served.url.replace("/mcp", "/metrics");
    let (status, _, _) = scrape(&beside, None).await;
    assert_eq!(status, 404);
    client.cancel().await.unwrap();
}

#[test]
fn metrics_where_the_mcp_endpoint_is_are_refused_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--path",
            "/metrics",
            "--metrics",
        ])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--path"), "{stderr}");
}

/// The fixture MCP server (crates/toolgate/tests/fixtures/mcp-servers), built
/// beside the `toolgate` binary when it is not there yet.
fn fixture() -> std::path::PathBuf {
    let toolgate = std::path::PathBuf::from(env!("CARGO_BIN_EXE_toolgate"));
    let path = toolgate.with_file_name("mcp-fixture");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-q",
                "-p",
                "toolgate-mcp-fixtures",
                "--bin",
                "mcp-fixture",
            ])
            .status()
            .unwrap();
        assert!(status.success(), "cannot build the fixture MCP server");
    }
    path
}

/// A spec whose only tools are those of the fixture server, started with `args`.
fn upstream_spec(args: &str) -> String {
    format!(
        "policy:\n  effects: {{write: allow, execute: allow, destructive: allow, external: allow}}\nmcp_servers:\n  fx:\n    command: {}\n    args: [{args}]\n",
        fixture().display()
    )
}

/// Scrapes `at` until `done` holds for the text (at most 20 s), and returns it.
async fn scrape_until(at: &str, done: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (_, _, text) = scrape(at, None).await;
        if done(&text) || std::time::Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn metrics_count_an_upstream_servers_calls_errors_restarts_and_quarantined_tools() {
    let served = serve_spec(&upstream_spec(""), &["--metrics"]);
    let at = served.metrics.clone().unwrap();
    let client = client(&served.url, None).await;
    let fx = [("server", "fx")];
    let text = scrape_until(&at, |t| sample(t, "toolgate_upstream_up", &fx) == Some(1.0)).await;
    assert_eq!(
        sample(&text, "toolgate_upstream_up", &fx),
        Some(1.0),
        "{text}"
    );
    let ready = [("server", "fx"), ("state", "ready")];
    assert_eq!(sample(&text, "toolgate_upstream_state", &ready), Some(1.0));
    let open = [("server", "fx"), ("state", "unavailable")];
    assert_eq!(sample(&text, "toolgate_upstream_state", &open), Some(0.0));
    assert_eq!(sample(&text, "toolgate_quarantined_tools", &fx), Some(0.0));

    let echoed = client
        .call_tool(call("fx.echo", json!({"text": "hi"})))
        .await;
    assert_eq!(echoed.unwrap().is_error, Some(false));
    let failed = client.call_tool(call("fx.fail", json!({}))).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    let mutated = client.call_tool(call("fx.mutate", json!({}))).await;
    assert_eq!(mutated.unwrap().is_error, Some(false));
    let text = scrape_until(&at, |t| {
        sample(t, "toolgate_quarantined_tools", &fx) == Some(1.0)
    })
    .await;
    assert_eq!(
        sample(&text, "toolgate_quarantined_tools", &fx),
        Some(1.0),
        "{text}"
    );
    assert_eq!(calls_of(&text, "ok"), Some(2.0), "{text}");
    assert_eq!(calls_of(&text, "error"), Some(1.0), "{text}");
    assert!(text.contains("# TYPE toolgate_upstream_calls_total counter"));

    let crashed = client.call_tool(call("fx.crash", json!({}))).await.unwrap();
    assert_eq!(crashed.is_error, Some(true));
    let text = scrape_until(&at, |t| {
        sample(t, "toolgate_upstream_restarts_total", &fx).is_some_and(|n| n >= 1.0)
    })
    .await;
    let restarts = sample(&text, "toolgate_upstream_restarts_total", &fx);
    assert!(restarts.is_some_and(|n| n >= 1.0), "{text}");
    assert_eq!(calls_of(&text, "error"), Some(2.0), "{text}");
    client.cancel().await.unwrap();
}

fn calls_of(text: &str, outcome: &str) -> Option<f64> {
    sample(
        text,
        "toolgate_upstream_calls_total",
        &[("server", "fx"), ("outcome", outcome)],
    )
}

#[tokio::test]
async fn metrics_show_an_upstream_server_that_keeps_failing_with_its_circuit_open() {
    let served = serve_spec(&upstream_spec("--exit-on-start, '3'"), &["--metrics"]);
    let at = served.metrics.clone().unwrap();
    let open = [("server", "fx"), ("state", "unavailable")];
    let text = scrape_until(&at, |t| {
        sample(t, "toolgate_upstream_state", &open) == Some(1.0)
    })
    .await;
    assert_eq!(
        sample(&text, "toolgate_upstream_state", &open),
        Some(1.0),
        "{text}"
    );
    let fx = [("server", "fx")];
    assert_eq!(
        sample(&text, "toolgate_upstream_up", &fx),
        Some(0.0),
        "{text}"
    );
    let ready = [("server", "fx"), ("state", "ready")];
    assert_eq!(sample(&text, "toolgate_upstream_state", &ready), Some(0.0));
    let restarts = sample(&text, "toolgate_upstream_restarts_total", &fx);
    assert!(restarts.is_some_and(|n| n >= 1.0), "{text}");
}

#[tokio::test]
async fn a_call_a_rate_limit_refuses_is_counted_by_tool_and_principal() {
    let spec =
        format!("{SPEC}limits:\n  rate:\n    - tool: lookup\n      calls: 1\n      per: 1h\n");
    let served = serve_spec(&spec, &["--metrics"]);
    let at = served.metrics.clone().unwrap();
    let client = client(&served.url, None).await;
    let ran = client
        .call_tool(call("lookup", json!({"id": "a"})))
        .await
        .unwrap();
    assert_eq!(ran.is_error, Some(false));
    let refused = client
        .call_tool(call("lookup", json!({"id": "b"})))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let (_, _, text) = scrape(&at, None).await;
    let labels = [("tool", "lookup"), ("principal", "operator")];
    assert_eq!(
        sample(&text, "toolgate_rate_limited_total", &labels),
        Some(1.0),
        "{text}"
    );
    assert!(
        text.contains("# TYPE toolgate_rate_limited_total counter"),
        "{text}"
    );
    // The call it let through is not counted.
    let other = [("tool", "wire_money")];
    assert_eq!(sample(&text, "toolgate_rate_limited_total", &other), None);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn metrics_show_what_each_budget_has_spent_and_the_calls_past_it() {
    let spec = format!("{SPEC}budgets:\n  - {{tools: lookup, calls: 1, per: 1d}}\n");
    let served = serve_spec(&spec, &["--metrics"]);
    let at = served.metrics.clone().unwrap();
    let client = client(&served.url, None).await;
    for id in ["a", "b"] {
        client
            .call_tool(call("lookup", json!({"id": id})))
            .await
            .unwrap();
    }
    let (_, _, text) = scrape(&at, None).await;
    let budget = [("budget", "budgets[0]")];
    let every_caller = [("budget", "budgets[0]"), ("principal", "")];
    assert_eq!(
        sample(&text, "toolgate_budget_spent", &every_caller),
        Some(1.0),
        "{text}"
    );
    assert_eq!(sample(&text, "toolgate_budget_limit", &budget), Some(1.0));
    assert_eq!(
        sample(&text, "toolgate_over_budget_total", &budget),
        Some(1.0),
        "{text}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn metrics_count_an_upstream_servers_quarantined_skills() {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(&dir.path().join("inner"), support::HELPDESK);
    let spec = format!(
        "mcp_servers:\n  desk:\n    command: {}\n    args: [serve, --stdio, -f, inner/toolgate.yaml, --state-dir, inner-state]\n",
        env!("CARGO_BIN_EXE_toolgate")
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    // Listed once, the upstream's skill is pinned; then its instructions change.
    let listed = support::toolgate(dir.path(), &["skills"]);
    assert!(listed.status.success(), "{listed:?}");
    let skill_md = dir.path().join("inner/skills/refund-dispute/SKILL.md");
    let changed = std::fs::read_to_string(&skill_md)
        .unwrap()
        .replace("# Handling a refund dispute", "# Refund whatever is asked");
    std::fs::write(&skill_md, changed).unwrap();

    let served = serve_in(dir, &["--metrics"]);
    let at = served.metrics.clone().unwrap();
    let desk = [("server", "desk")];
    let text = scrape_until(&at, |t| {
        sample(t, "toolgate_quarantined_skills", &desk) == Some(1.0)
    })
    .await;
    assert_eq!(
        sample(&text, "toolgate_quarantined_tools", &desk),
        Some(0.0)
    );
}
