//! Several `toolgate serve --http` instances sharing one PostgreSQL database, as
//! behind a load balancer: real processes, a real database (the one
//! `TOOLGATE_TEST_POSTGRES` names, a fresh database per test, made with `psql`),
//! and clients speaking the stateless lifecycle of MCP's 2026-07-28 revision, each
//! request to the next instance in turn.
//!
//! Without `TOOLGATE_TEST_POSTGRES` every test skips with a message, unless
//! `TOOLGATE_TEST_POSTGRES_REQUIRED` is set (as `scripts/postgres-store` sets it),
//! when it fails.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};

mod support;

use support::postgres::{Database, Instance, LOOKUP, Site, is_error};
use support::slow_server::counting_server;
use support::stateless::Client;

/// What the tool server answers.
const OK: &str = r#"{"ok": true}"#;

/// How many calls each of the 8 clients makes (`TOOLGATE_TEST_CALLS`, default 125:
/// 1,000 calls in all).
fn calls_per_client() -> usize {
    std::env::var("TOOLGATE_TEST_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(125)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_on_one_database_record_exactly_one_intent_and_completion_per_call() {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let site = Site::new(db, LOOKUP);
    let (ok, out, err) = site.run(&["store", "migrate"]);
    assert!(ok, "{err}");
    assert!(out.contains("created schema version"), "{out}");
    let instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let urls: Arc<Vec<String>> = Arc::new(instances.iter().map(|i| i.url.clone()).collect());
    let per_client = calls_per_client();
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let urls = urls.clone();
            tokio::spawn(async move {
                let client = Client::new(&format!("conversation-{c}"));
                for i in 0..per_client {
                    // Each of this conversation's requests goes to the next instance.
                    let url = &urls[(c + i) % urls.len()];
                    let n = c * 100_000 + i;
                    let result = client.call(url, i as u64, "lookup", json!({"n": n})).await;
                    let result = result.unwrap_or_else(|e| panic!("call {n}: {e}"));
                    assert!(!is_error(&result), "call {n}: {result}");
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let records = site.audit();
    let total = 8 * per_client;
    assert_eq!(
        records.len(),
        2 * total,
        "one intent and one completion per call"
    );
    let mut runs = std::collections::BTreeMap::<String, (usize, usize)>::new();
    for record in &records {
        let counts = runs
            .entry(record["run_id"].as_str().unwrap().to_owned())
            .or_default();
        match record["kind"].as_str() {
            Some("intent") => counts.0 += 1,
            Some("completion") => counts.1 += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(runs.len(), total);
    assert!(
        runs.values().all(|&c| c == (1, 1)),
        "exactly one pair per call"
    );
    let (ok, out, err) = site.run(&["audit", "verify"]);
    assert!(ok && out.contains("audit log ok"), "{out}{err}");
    let (ok, out, _) = site.run(&["audit", "pending"]);
    assert!(ok, "{out}");
    // Every conversation's history holds its calls, whichever instance ran them.
    let (ok, out, err) = site.run(&["audit", "tail", "-n", "1", "--json"]);
    assert!(ok, "{err}");
    assert!(!out.contains(&site.db.password));
    for instance in &instances {
        assert!(
            instance.said.contains("store postgres://"),
            "{}",
            instance.said
        );
        assert!(
            !instance.said.contains(&site.db.password),
            "{}",
            instance.said
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_attempts_at_a_once_tool_across_instances_run_it_exactly_once() {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let (port, hits) = counting_server(Duration::from_millis(300), OK);
    let spec = format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy:
  rules:
    - {{tools: charge, decision: allow, reason: charges run at once}}
tools:
  - name: charge
    description: Charge the card.
    effect: write
    http: {{url: "http://127.0.0.1:{port}/charge", method: POST}}
flow:
  constraints:
    - once: charge
"#
    );
    let site = Site::new(db, &spec);
    let instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let attempts: Vec<_> = (0..50)
        .map(|i| {
            let url = instances[i % 3].url.clone();
            tokio::spawn(async move {
                let client = Client::new("one-conversation");
                client.call(&url, i as u64, "charge", json!({})).await
            })
        })
        .collect();
    let mut ran = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(result) if !is_error(&result) => ran += 1,
            Ok(_) | Err(_) => {}
        }
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the card was charged once");
    assert_eq!(ran, 1, "one attempt succeeded");
    let (ok, out, err) = site.run(&["audit", "verify"]);
    assert!(ok && out.contains("audit log ok"), "{out}{err}");
}

#[test]
fn a_database_named_with_its_password_from_the_environment_never_shows_the_password() {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let site = Site::new(db, LOOKUP);
    let (ok, out, err) = site.run(&["call", "lookup", r#"{"n": 1}"#]);
    assert!(ok, "{err}");
    assert!(out.contains("shipped"), "{out}");
    // Nothing went to a file: no SQLite store beside the spec.
    assert!(!site.dir.path().join(".toolgate/state.db").exists());
    let (ok, out, err) = site.run(&["store", "migrate"]);
    assert!(ok, "{err}");
    assert!(out.contains(":***@") && out.contains("up to date"), "{out}");
    assert!(!out.contains(&site.db.password), "{out}");
    // Without the variable: a clear error naming it, and no password.
    let out = site
        .command(&["audit", "verify"])
        .env_remove("TG_TEST_PGPASSWORD")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("TG_TEST_PGPASSWORD is not set"), "{stderr}");
    // A database that is not there: the call fails closed, with the masked URL.
    let out = site
        .command(&["call", "lookup", r#"{"n": 2}"#])
        .env(
            "TOOLGATE_STORE",
            "postgres://toolgate:hunter2@127.0.0.1:1/nowhere",
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot reach the database at postgres://toolgate:***@127.0.0.1:1/nowhere"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_instance_killed_under_load_leaves_its_calls_pending_and_the_others_go_on_and_it_serves_again_restarted()
 {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let (port, hits) = counting_server(Duration::from_millis(1500), OK);
    let spec = format!(
        r#"
network: {{allow: ["127.0.0.1:{port}"]}}
policy:
  rules:
    - {{tools: ship, decision: allow, reason: shipping runs at once}}
tools:
  - name: ship
    description: Ship an order.
    effect: write
    parameters:
      type: object
      properties:
        n: {{type: integer}}
      required: [n]
    http: {{url: "http://127.0.0.1:{port}/ship", method: POST}}
"#
    );
    let site = Site::new(db, &spec);
    let mut instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let url = instances[i % 3].url.clone();
            tokio::spawn(async move {
                let client = Client::new(&format!("c{i}"));
                client.call(&url, i as u64, "ship", json!({"n": i})).await
            })
        })
        .collect();
    // Every call has reached the tool (its intent is recorded): kill the first
    // instance in the middle of its two calls.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while hits.load(Ordering::SeqCst) < 6 {
        assert!(
            std::time::Instant::now() < deadline,
            "the calls did not start"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed = instances.remove(0);
    drop(killed); // SIGKILL
    let mut ok = 0;
    for (i, call) in calls.into_iter().enumerate() {
        match call.await.unwrap() {
            Ok(result) if !is_error(&result) => ok += 1,
            other => assert_eq!(i % 3, 0, "only the killed instance's calls fail: {other:?}"),
        }
    }
    assert_eq!(ok, 4, "the other instances' calls completed");
    let (done, out, err) = site.run(&["audit", "pending", "--json"]);
    assert!(done, "{err}");
    let pending: Vec<Value> = serde_json::from_str(&out).unwrap();
    let mut arguments: Vec<i64> = pending
        .iter()
        .map(|r| r["arguments"]["n"].as_i64().unwrap())
        .collect();
    arguments.sort();
    assert_eq!(
        arguments,
        [0, 3],
        "the killed instance's in-flight calls: {out}"
    );
    // The others go on, and nothing ran twice.
    let client = Client::new("after");
    let result = client
        .call(&instances[0].url, 9, "ship", json!({"n": 9}))
        .await;
    assert!(!is_error(&result.unwrap()));
    // Restarted, it serves again.
    let restarted = site.serve();
    let result = client
        .call(&restarted.url, 10, "ship", json!({"n": 10}))
        .await;
    assert!(!is_error(&result.unwrap()));
    assert_eq!(
        hits.load(Ordering::SeqCst),
        8,
        "each call reached the tool once"
    );
    let (ok, out, err) = site.run(&["audit", "verify"]);
    assert!(ok && out.contains("audit log ok"), "{out}{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_on_one_database_admit_exactly_a_rate_limit_between_them() {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let spec = format!("{LOOKUP}limits:\n  rate:\n    - {{tool: lookup, calls: 20, per: 1h}}\n");
    let site = Site::new(db, &spec);
    let instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let urls: Arc<Vec<String>> = Arc::new(instances.iter().map(|i| i.url.clone()).collect());
    // 8 clients × 10 calls, each client's calls to the next instance in turn:
    // 80 calls against 20 an hour for all of them.
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let urls = urls.clone();
            tokio::spawn(async move {
                let client = Client::new(&format!("limited-{c}"));
                let (mut admitted, mut limited) = (0, 0);
                for i in 0..10 {
                    let url = &urls[(c + i) % urls.len()];
                    let n = c * 100 + i;
                    let result = client.call(url, i as u64, "lookup", json!({"n": n})).await;
                    let result = result.unwrap_or_else(|e| panic!("call {n}: {e}"));
                    if !is_error(&result) {
                        admitted += 1;
                    } else {
                        assert!(result.to_string().contains("20 per 1h"), "{result}");
                        limited += 1;
                    }
                }
                (admitted, limited)
            })
        })
        .collect();
    let (mut admitted, mut limited) = (0, 0);
    for client in clients {
        let (a, l) = client.await.unwrap();
        admitted += a;
        limited += l;
    }
    assert_eq!(
        admitted, 20,
        "the three instances together admitted the limit"
    );
    assert_eq!(limited, 60);
    let records = site.audit();
    let outcomes = |outcome: &str| {
        records
            .iter()
            .filter(|r| r["outcome"].as_str() == Some(outcome))
            .count()
    };
    assert_eq!(outcomes("rate_limited"), 60);
    assert_eq!(outcomes("ok"), 20);
    let (ok, out, err) = site.run(&["audit", "verify"]);
    assert!(ok && out.contains("audit log ok"), "{out}{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_approved_once_and_sent_to_every_instance_at_once_runs_exactly_once() {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let (port, hits) = counting_server(Duration::from_millis(300), OK);
    let spec = format!(
        r#"
network: {{allow: ["127.0.0.1:{port}"]}}
policy:
  rules:
    - {{tools: refund, decision: ask, reason: refunds need a person}}
tools:
  - name: refund
    description: Refund an order.
    effect: write
    parameters:
      type: object
      properties:
        order: {{type: string}}
      required: [order]
    http: {{url: "http://127.0.0.1:{port}/refund", method: POST}}
"#
    );
    let site = Site::new(db, &spec);
    let instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let client = Client::new("refunds");
    let asked = client
        .call(&instances[0].url, 1, "refund", json!({"order": "A-1"}))
        .await
        .unwrap()
        .to_string();
    let at = asked
        .find("ap-")
        .unwrap_or_else(|| panic!("no approval id: {asked}"));
    let id: String = asked[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let (ok, out, err) = site.run(&["approvals", "approve", &id]);
    assert!(ok, "{out}{err}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing ran before the approval"
    );
    // The approved call, sent to every instance twice at once.
    let attempts: Vec<_> = (0..6)
        .map(|i| {
            let url = instances[i % 3].url.clone();
            tokio::spawn(async move {
                let client = Client::new("refunds");
                client
                    .call(&url, 10 + i as u64, "refund", json!({"order": "A-1"}))
                    .await
            })
        })
        .collect();
    let mut ran = 0;
    for attempt in attempts {
        if let Ok(result) = attempt.await.unwrap()
            && !is_error(&result)
            && !result.to_string().contains("ap-")
        {
            ran += 1;
        }
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the refund was made once");
    assert_eq!(ran, 1, "one attempt ran it");
    let (ok, out, err) = site.run(&["audit", "verify"]);
    assert!(ok && out.contains("audit log ok"), "{out}{err}");
}
