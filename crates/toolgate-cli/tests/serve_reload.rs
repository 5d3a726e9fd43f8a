//! `toolgate serve` run for a team: probed by a load balancer, its spec
//! reloaded under load, a broken spec refused, each reload in the audit log.
//! A real `toolgate` process over HTTP on loopback, driven by the official
//! SDK's client (rmcp) and plain HTTP probes.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

const ORDERS: &str = r#"
tools:
  - name: lookup_order
    description: Look up an order by its id.
    effect: read
    parameters:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
    response: {order_id: "{args.order_id}", status: shipped}
"#;

/// A tool to add to `ORDERS`.
const CANCEL: &str = r#"
  - name: cancel_order
    description: Cancel an order that has not shipped.
    effect: idempotent
    parameters:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
    response: {order_id: "{args.order_id}", status: cancelled}
"#;

/// `ORDERS` and a second tool.
fn orders_and_cancel() -> String {
    format!("{}{}", ORDERS.trim_end(), CANCEL)
}

/// A running `toolgate serve --http` on a spec in a scratch directory.
struct Served {
    dir: tempfile::TempDir,
    child: Child,
    url: String,
    /// Where `--health ADDR` serves, when given.
    health: Option<String>,
}

impl Served {
    fn start(spec: &str, args: &[&str]) -> Served {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .current_dir(dir.path())
            .env_remove("TOOLGATE_STATE_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let url_in = |line: &str| {
            line.split_whitespace()
                .find(|w| w.starts_with("http://"))
                .map(str::to_owned)
        };
        let (url, said) = support::await_line(&mut child, |line| {
            line.contains("serving").then(|| url_in(line)).flatten()
        });
        let health = said
            .lines()
            .find(|l| l.contains("health checks at"))
            .and_then(url_in)
            .map(|u| u.trim_end_matches("/healthz").to_owned());
        Served {
            dir,
            child,
            url,
            health,
        }
    }

    fn spec(&self) -> PathBuf {
        self.dir.path().join("toolgate.yaml")
    }

    /// Where `/healthz` and `/readyz` are beside the MCP endpoint.
    fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_owned()
    }

    fn hang_up(&self) {
        let sent = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    fn toolgate(&self, args: &[&str]) -> std::process::Output {
        support::toolgate(self.dir.path(), args)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `url`: its status and JSON body.
async fn probe(url: &str) -> (u16, Value) {
    let response = reqwest::get(url).await.unwrap();
    let status = response.status().as_u16();
    let body = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")),
    )
}

/// Probes `url` until `done` holds of its answer, for up to 20 s.
async fn probe_until(url: &str, done: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, body) = probe(url).await;
        if done(status, &body) {
            return (status, body);
        }
        assert!(
            Instant::now() < deadline,
            "{url} still answers {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn client(url: &str) -> RunningService<RoleClient, ()> {
    ().serve(StreamableHttpClientTransport::from_uri(url))
        .await
        .unwrap()
}

async fn tool_names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let listed = client.list_all_tools().await.unwrap();
    listed.into_iter().map(|t| t.name.to_string()).collect()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, order: &str) -> Value {
    let Value::Object(arguments) = json!({"order_id": order}) else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("`{tool}` was not answered: {e}"));
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result.structured_content.unwrap()
}

/// The SQLite store beside a spec, locked for writing until dropped, as
/// another process holding a long transaction would.
fn lock_store(dir: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(dir.join(".toolgate/state.db")).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_balancer_sees_the_server_not_ready_while_its_store_is_locked_and_ready_after() {
    let served = Served::start(ORDERS, &["--health", "127.0.0.1:0"]);
    let beside = served.base();
    let alone = served
        .health
        .clone()
        .expect("--health says where it serves");
    for base in [&beside, &alone] {
        assert_eq!(
            probe(&format!("{base}/healthz")).await,
            (200, json!({"status": "ok"}))
        );
        let (status, ready) = probe(&format!("{base}/readyz")).await;
        assert_eq!(
            (status, &ready["status"], &ready["tools"]),
            (200, &json!("ready"), &json!(1))
        );
    }

    let lock = lock_store(served.dir.path());
    let (status, not_ready) = probe(&format!("{alone}/readyz")).await;
    assert_eq!(status, 503, "{not_ready}");
    assert_eq!(not_ready["status"], "not ready");
    let reason = not_ready["reasons"][0].as_str().unwrap();
    assert!(reason.starts_with("the store"), "{reason}");
    // The process is still up: liveness holds while readiness does not.
    assert_eq!(probe(&format!("{beside}/healthz")).await.0, 200);

    drop(lock);
    let (_, ready) = probe_until(&format!("{beside}/readyz"), |s, _| s == 200).await;
    assert_eq!(ready["status"], "ready");
    // Nothing a stranger could use: no tool's name.
    assert!(!ready.to_string().contains("lookup_order"), "{ready}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_under_eight_clients_loses_no_call_and_no_session_and_the_new_tool_is_listed() {
    let served = Served::start(ORDERS, &[]);
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(Arc::new(client(&served.url).await));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    for (i, client) in clients.iter().enumerate() {
        let (client, stop, answered) = (client.clone(), stop.clone(), answered.clone());
        callers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let order = format!("A-{i}-{n}");
                let result = call(&client, "lookup_order", &order).await;
                assert_eq!(result["order_id"], order.as_str());
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(served.spec(), orders_and_cancel()).unwrap();
    served.hang_up();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !tool_names(&clients[0])
        .await
        .contains(&"cancel_order".to_owned())
    {
        assert!(Instant::now() < deadline, "the new tool never appeared");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller
            .await
            .expect("every call before, during and after the reload was answered");
    }
    // Every session opened before the reload lists and calls the new tool.
    for (i, client) in clients.iter().enumerate() {
        assert!(
            tool_names(client)
                .await
                .contains(&"cancel_order".to_owned())
        );
        let cancelled = call(client, "cancel_order", &format!("B-{i}")).await;
        assert_eq!(cancelled["status"], "cancelled");
    }
    let calls = answered.load(Ordering::Relaxed);
    assert!(calls > 8, "only {calls} calls were made");

    // The log holds every call and the reload, and its chain verifies.
    let tail = served.toolgate(&["audit", "tail", "--json", "-n", "100000"]);
    let records = support::json(&tail);
    let records = records.as_array().unwrap();
    let completed = |tool: &str| {
        records
            .iter()
            .filter(|r| r["kind"] == "completion" && r["tool"] == tool && r["outcome"] == "ok")
            .count()
    };
    assert_eq!(completed("lookup_order"), calls);
    assert_eq!(completed("cancel_order"), 8);
    let reloads: Vec<&Value> = records.iter().filter(|r| r["kind"] == "reload").collect();
    assert_eq!(reloads.len(), 1);
    assert_eq!(reloads[0]["outcome"], "ok");
    let sha256 = toolgate::audit::sha256_hex(orders_and_cancel());
    assert_eq!(reloads[0]["arguments"]["sha256"], sha256.as_str());
    let verified = served.toolgate(&["audit", "verify"]);
    assert!(verified.status.success(), "{verified:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_spec_on_reload_leaves_the_old_one_serving_and_says_why() {
    let served = Served::start(&orders_and_cancel(), &["--watch", "--metrics"]);
    let session = client(&served.url).await;
    let ready = format!("{}/readyz", served.base());
    let (_, before) = probe(&ready).await;

    // An effect toolgate does not know: an error `check` reports.
    let broken = ORDERS.replace("effect: read", "effect: sometimes");
    std::fs::write(served.spec(), &broken).unwrap();
    let (status, after) = probe_until(&ready, |_, body| {
        body["spec"]["last_reload"]["ok"] == json!(false)
    })
    .await;
    assert_eq!(status, 200, "the old spec still serves: {after}");
    let refused = after["spec"]["last_reload"]["refused"].as_str().unwrap();
    assert!(refused.ends_with("in the spec file"), "{refused}");
    assert_eq!(after["spec"]["sha256"], before["spec"]["sha256"]);
    assert_eq!(after["tools"], 2);
    assert!(
        tool_names(&session)
            .await
            .contains(&"cancel_order".to_owned())
    );
    assert_eq!(
        call(&session, "cancel_order", "A-1").await["status"],
        "cancelled"
    );

    // Fixed, with a budget, it serves; a change only a restart applies is
    // refused.
    let fixed = format!("{ORDERS}budgets:\n  - {{tools: lookup_order, calls: 1000, per: 1h}}\n");
    std::fs::write(served.spec(), &fixed).unwrap();
    probe_until(&ready, |_, body| body["tools"] == json!(1)).await;
    let with_auth = format!("auth: {{api_keys: {{}}}}\n{fixed}");
    std::fs::write(served.spec(), &with_auth).unwrap();
    let (_, after) = probe_until(&ready, |_, body| {
        body["spec"]["last_reload"]["ok"] == json!(false)
    })
    .await;
    assert_eq!(
        after["spec"]["last_reload"]["refused"],
        "`auth` changed, which takes a restart"
    );

    let metrics = reqwest::get(served.url.replace("/mcp", "/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"toolgate_spec_reloads_total{outcome="ok"} 1"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"toolgate_spec_reloads_total{outcome="refused"} 2"#),
        "{metrics}"
    );
    // The budget gauges follow the spec serving.
    let limit = r#"toolgate_budget_limit{budget="budgets[0]"} 1000"#;
    assert!(metrics.contains(limit), "{metrics}");

    let tail = support::json(&served.toolgate(&["audit", "tail", "--json"]));
    let reloads: Vec<(&str, &str)> = tail
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "reload")
        .map(|r| {
            (
                r["outcome"].as_str().unwrap(),
                r["arguments"]["sha256"].as_str().unwrap(),
            )
        })
        .collect();
    let hash = |text: &str| toolgate::audit::sha256_hex(text);
    assert_eq!(
        reloads,
        [
            ("refused", hash(&broken).as_str()),
            ("ok", hash(&fixed).as_str()),
            ("refused", hash(&with_auth).as_str()),
        ]
    );
    assert!(served.toolgate(&["audit", "verify"]).status.success());
}

#[test]
fn serve_check_says_whether_a_start_would_be_ready() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), ORDERS).unwrap();
    let out = support::toolgate(dir.path(), &["serve", "--http", "127.0.0.1:0", "--check"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.starts_with("ready:"), "{said}");
    assert!(said.contains("1 tools would be served"), "{said}");

    let _lock = lock_store(dir.path());
    let out = support::toolgate(dir.path(), &["serve", "--http", "127.0.0.1:0", "--check"]);
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    let complained = format!("{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(complained.contains("store"), "{complained}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_s_catalog_says_a_reload_was_refused_and_the_old_spec_still_serves() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("toolgate.yaml");
    std::fs::write(&spec, ORDERS).unwrap();
    let served = support::console::start(dir, &["serve", "--http", "127.0.0.1:0", "--console"]);
    let cookie = support::console::log_in(&served).await;
    let (_, page) = support::console::get(&served, "/catalog", &cookie).await;
    let sha256 = toolgate::audit::sha256_hex(ORDERS);
    assert!(page.contains(&sha256[..12]), "{page}");

    std::fs::write(&spec, "tools: [oops").unwrap();
    let sent = Command::new("kill")
        .args(["-HUP", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, page) = support::console::get(&served, "/catalog", &cookie).await;
        if page.contains("was refused") {
            assert!(page.contains("1 error in the spec file"), "{page}");
            assert!(page.contains(&sha256[..12]), "{page}");
            assert!(page.contains("tool-lookup_order"), "{page}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the Catalog never told of the reload: {page}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_watch_an_edited_skill_is_served_and_a_broken_one_is_refused() {
    let skill = |steps: &str| {
        format!("---\nname: refunds\ndescription: How to refund an order.\n---\n{steps}\n")
    };
    let served = Served::start(ORDERS, &["--watch"]);
    let skill_md = served.dir.path().join("skills/refunds/SKILL.md");
    std::fs::create_dir_all(skill_md.parent().unwrap()).unwrap();
    std::fs::write(&skill_md, skill("1. Look the order up.")).unwrap();
    std::fs::write(
        served.spec(),
        format!("skills: {{dir: ./skills}}\n{ORDERS}"),
    )
    .unwrap();
    let ready = format!("{}/readyz", served.base());
    let read = |session: RunningService<RoleClient, ()>| async move {
        let Value::Object(arguments) = json!({"name": "refunds"}) else {
            unreachable!()
        };
        let result = session
            .call_tool(CallToolRequestParams::new("read_skill").with_arguments(arguments))
            .await
            .unwrap();
        serde_json::to_value(&result.content).unwrap().to_string()
    };
    // Skills added to a serving spec are served once it reloads.
    probe_until(&ready, |_, body| {
        body["spec"]["last_reload"]["ok"] == json!(true)
    })
    .await;
    assert!(
        read(client(&served.url).await)
            .await
            .contains("Look the order up")
    );

    std::fs::write(&skill_md, skill("1. Look the order up.\n2. Ask why.")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !read(client(&served.url).await).await.contains("Ask why") {
        assert!(Instant::now() < deadline, "the edited skill is not served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A skill that cannot load is refused like any error in the spec.
    std::fs::write(&skill_md, "# no front matter\n").unwrap();
    let (_, after) = probe_until(&ready, |_, body| {
        body["spec"]["last_reload"]["ok"] == json!(false)
    })
    .await;
    assert!(
        after["spec"]["last_reload"]["refused"]
            .as_str()
            .unwrap()
            .ends_with("in the spec file")
    );
    assert!(read(client(&served.url).await).await.contains("Ask why"));
}
