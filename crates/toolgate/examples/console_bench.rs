//! What the web console costs with a large audit log: the Audit page and
//! filtered queries over 100,000 records, and how long a new approval takes to
//! reach an open Approvals page.
//!
//! ```sh
//! cargo run --release -p toolgate --example console_bench [-- RECORDS]
//! ```
//!
//! Fills a fresh SQLite store, serves [`Console`] on loopback over it, logs in
//! with the one-time link, and times each page as its server answers it on
//! loopback (request sent to last byte read; medians of 31 requests). The
//! approval latency is from the store opening a request (as a gate in another
//! process would) to its row arriving on the page's event stream.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::json;
use toolgate::auth::HttpAccess;
use toolgate::console::{Console, LoginToken};
use toolgate::spec::SpecFile;
use toolgate::{
    Catalog, Gate, SqliteStore, audit::AuditEntry, audit::RecordKind, store::ApprovalRequest,
    store::ApprovalStore, store::AuditLog,
};

const TOOLS: &[&str] = &["lookup_order", "refund_order", "send_email", "search_kb"];
const RUNS: usize = 31;

fn entry(i: usize, kind: RecordKind) -> AuditEntry {
    let done = kind == RecordKind::Completion;
    AuditEntry {
        time: humantime::format_rfc3339_millis(
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000 + i as u64),
        )
        .to_string(),
        kind,
        run_id: format!("run-{i}"),
        call_id: format!("call-{i}"),
        session: format!("mcp-{}", i % 500),
        principal: ["support_bot", "faq_bot", "operator"][i % 3].into(),
        tool: TOOLS[i % TOOLS.len()].into(),
        effect: None,
        arguments: json!({"order_id": format!("ORD-{i}"), "note": "a typical argument"}),
        decision: None,
        reason: Some("the policy for read tools is allow".into()),
        outcome: done.then(|| if i.is_multiple_of(50) { "error" } else { "ok" }.into()),
        message: None,
        duration_ms: done.then_some(3),
        attempts: done.then_some(1),
        auth: None,
        credential: None,
        call_hash: None,
        idempotency_key: None,
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let records: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("toolgate-console-bench-{}", std::process::id()));
    let store = Arc::new(SqliteStore::open_in_dir(&dir)?);
    let filling = Instant::now();
    let mut threads = Vec::new();
    // Appends from a few threads, as several gates would: group commit batches them.
    for t in 0..4 {
        let store = store.clone();
        threads.push(std::thread::spawn(move || {
            for i in (t..records / 2).step_by(4) {
                store
                    .append(entry(i, RecordKind::Intent))
                    .expect("appended");
                store
                    .append(entry(i, RecordKind::Completion))
                    .expect("appended");
            }
        }));
    }
    for thread in threads {
        thread.join().expect("a filling thread");
    }
    eprintln!(
        "filled {} records in {:.1} s",
        store.tail(1)?.first().map_or(0, |r| r.seq),
        filling.elapsed().as_secs_f64()
    );

    let gate = Arc::new(Gate::builder(Catalog::new()).store(store.clone()).build());
    let console = Console::new(&SpecFile::default(), Some(LoginToken::random()?));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let login = console.login_url(addr).expect("a login link");
    tokio::spawn(console.serve(listener, gate, HttpAccess::open(), std::future::pending()));

    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let response = client.get(&login).send().await?;
    let cookie = response
        .headers()
        .get("set-cookie")
        .and_then(|c| c.to_str().ok())
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_owned();
    let base = format!("http://{addr}");
    let pages = [
        ("Audit page (newest 50)", "/audit".to_owned()),
        ("filtered: one session", "/audit?session=mcp-42".to_owned()),
        (
            "filtered: tool, principal and outcome",
            "/audit?tool=refund_order&principal=faq_bot&outcome=error".to_owned(),
        ),
        (
            "filtered: a time range",
            "/audit?since=2026-05-28T20:00:00Z&until=2026-05-28T21:00:00Z".to_owned(),
        ),
        (
            "a page deep in the log",
            format!("/audit?before={}", records / 10),
        ),
    ];
    println!("{records} audit records; medians of {RUNS} requests");
    for (name, path) in &pages {
        let mut times = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let page = client
                .get(format!("{base}{path}"))
                .header("cookie", &cookie)
                .send()
                .await?;
            assert!(page.status().is_success(), "{path}: {}", page.status());
            let body = page.text().await?;
            times.push(started.elapsed());
            assert!(body.contains("<table id=\"audit\""), "{path}");
        }
        println!("{name:40} {:7.2} ms", median(times).as_secs_f64() * 1e3);
    }

    // A new approval reaching an open Approvals page.
    let mut events = client
        .get(format!("{base}/approvals/events"))
        .header("cookie", &cookie)
        .send()
        .await?;
    events.chunk().await?; // the first event: the list as it stands
    let mut times = Vec::new();
    for i in 0..11 {
        let request = ApprovalRequest::new(
            "mcp-bench",
            "send_email",
            json!({"to": format!("user{i}@example.com")}),
            "support_bot",
            "the policy for external tools is ask",
        );
        let started = Instant::now();
        let toolgate::store::Resolution::Pending { id, .. } =
            store.resolve(&request, SystemTime::now())?
        else {
            panic!("the request waits")
        };
        let mut seen = String::new();
        while !seen.contains(&id) {
            let chunk = events.chunk().await?.expect("the event stream stays open");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        times.push(started.elapsed());
    }
    println!(
        "{:40} {:7.0} ms",
        "new approval -> open Approvals page",
        median(times).as_secs_f64() * 1e3
    );
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}
