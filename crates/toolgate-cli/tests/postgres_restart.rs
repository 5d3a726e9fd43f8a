//! The PostgreSQL database restarted under three `toolgate serve --http` instances
//! while stateless MCP clients call them: calls during the outage fail clearly,
//! `/readyz` says not ready meanwhile, and the instances serve again without
//! being restarted. Every test's database goes
//! down with it, so `scripts/postgres-store` runs this file alone, after the others.
//!
//! Without `TOOLGATE_TEST_POSTGRES` (and `TOOLGATE_TEST_POSTGRES_CTL`) the test
//! skips with a message, unless `TOOLGATE_TEST_POSTGRES_REQUIRED` is set, when it
//! fails.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

mod support;

use support::postgres::{Database, Instance, LOOKUP, Site, is_error};
use support::stateless::Client;

/// How to run the database's own `pg_ctl` (`TOOLGATE_TEST_POSTGRES_CTL`, as
/// `scripts/postgres-store` sets it), or `None` (with a message) without it.
fn pg_ctl() -> Option<Vec<String>> {
    let Some(ctl) = std::env::var("TOOLGATE_TEST_POSTGRES_CTL")
        .ok()
        .filter(|v| !v.trim().is_empty())
    else {
        assert!(
            std::env::var_os("TOOLGATE_TEST_POSTGRES_REQUIRED").is_none(),
            "TOOLGATE_TEST_POSTGRES_REQUIRED is set but TOOLGATE_TEST_POSTGRES_CTL is not"
        );
        eprintln!("skipped: set TOOLGATE_TEST_POSTGRES_CTL to the database's pg_ctl command");
        return None;
    };
    Some(ctl.split_whitespace().map(str::to_owned).collect())
}

fn run_pg_ctl(ctl: &[String], args: &[&str]) {
    let out = Command::new(&ctl[0])
        .args(&ctl[1..])
        .args(args)
        .output()
        .expect("pg_ctl runs");
    assert!(
        out.status.success(),
        "pg_ctl {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The status `/readyz` answers.
async fn readiness(url: &str) -> u16 {
    reqwest::get(url).await.unwrap().status().as_u16()
}

/// What one call under load came to, and when it ended (since the load began).
#[derive(Debug)]
struct Served {
    ended: Duration,
    took: Duration,
    /// `None`: ran; `Some(text)`: failed, saying this.
    failed: Option<String>,
}

/// Restarts the database under itself while the instances serve: a run on its
/// own (`scripts/postgres-store` runs it apart), since every test's database
/// goes down with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_database_restarted_under_load_fails_calls_clearly_and_the_instances_are_not_ready_then_serve_again()
 {
    let Some(db) = Database::new("inst") else {
        return;
    };
    let Some(ctl) = pg_ctl() else { return };
    let site = Site::new(db, LOOKUP);
    let mut instances: Vec<Instance> = (0..3).map(|_| site.serve()).collect();
    let urls: Arc<Vec<String>> = Arc::new(instances.iter().map(|i| i.url.clone()).collect());
    let deadline = Duration::from_secs(20);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let began = std::time::Instant::now();
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (urls, stop) = (urls.clone(), stop.clone());
            tokio::spawn(async move {
                let mut client = Client::new(&format!("restart-{c}"));
                client.http = reqwest::Client::builder()
                    .timeout(deadline)
                    .build()
                    .unwrap();
                let mut served = Vec::new();
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let url = &urls[(c + i) % urls.len()];
                    let start = std::time::Instant::now();
                    let result = client.call(url, i as u64, "lookup", json!({"n": i})).await;
                    let failed = match result {
                        Ok(result) if !is_error(&result) => None,
                        Ok(result) => Some(result.to_string()),
                        Err(e) => Some(e),
                    };
                    served.push(Served {
                        ended: began.elapsed(),
                        took: start.elapsed(),
                        failed,
                    });
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                served
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A load balancer's probe: ready before the outage, not during it, ready
    // again after it.
    let ready = urls[0].replace("/mcp", "/readyz");
    assert_eq!(readiness(&ready).await, 200, "ready before the outage");
    // Down for a few seconds, then up again as it was (`restart` reads the
    // options it was started with).
    let down = began.elapsed();
    let pg = |args: &'static [&'static str]| {
        let ctl = ctl.clone();
        tokio::task::spawn_blocking(move || run_pg_ctl(&ctl, args))
    };
    pg(&["stop", "-m", "fast", "-w"]).await.unwrap();
    let probed = std::time::Instant::now();
    while readiness(&ready).await != 503 {
        assert!(
            probed.elapsed() < Duration::from_secs(10),
            "never not ready while the database was down"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3).saturating_sub(probed.elapsed())).await;
    pg(&["restart", "-m", "fast", "-w", "-t", "60"])
        .await
        .unwrap();
    let up = began.elapsed();
    while readiness(&ready).await != 200 {
        assert!(
            began.elapsed() < up + Duration::from_secs(20),
            "never ready again after the outage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::SeqCst);
    let mut served = Vec::new();
    for client in clients {
        served.extend(client.await.unwrap());
    }
    let before = served.iter().filter(|s| s.ended < down).count();
    let failed: Vec<&Served> = served.iter().filter(|s| s.failed.is_some()).collect();
    assert!(before > 0, "calls were served before the outage");
    assert!(
        !failed.is_empty(),
        "calls failed while the database was down"
    );
    for s in &failed {
        let text = s.failed.as_deref().unwrap_or_default();
        assert!(
            text.contains("the database cannot be reached")
                || text.contains("the database failed while"),
            "a call during the outage failed with a clear error: {text}"
        );
        assert!(
            !text.contains("postgres://") && !text.contains("127.0.0.1"),
            "the caller is not told where the database is: {text}"
        );
        assert!(!text.contains(&site.db.password), "{text}");
        assert!(s.took < deadline, "no call hung: {s:?}");
        assert!(
            s.ended >= down && s.ended < up + Duration::from_secs(2),
            "only calls during the outage failed: {s:?} (down {down:?}, up {up:?})"
        );
    }
    // After it, without being restarted, every instance serves again.
    for instance in &mut instances {
        assert!(
            instance.child.try_wait().unwrap().is_none(),
            "the instance is still running"
        );
    }
    let client = Client::new("after-restart");
    for (i, url) in urls.iter().enumerate() {
        let result = client
            .call(url, 1000 + i as u64, "lookup", json!({"n": i}))
            .await;
        let result = result.unwrap_or_else(|e| panic!("instance {i} after the restart: {e}"));
        assert!(
            !is_error(&result),
            "instance {i} after the restart: {result}"
        );
    }
    eprintln!(
        "{} calls: {before} before the outage, {} failed during it, {} after",
        served.len(),
        failed.len(),
        served.iter().filter(|s| s.ended > up).count()
    );
    let (ok, out, err) = site.run(&["audit", "verify"]);
    assert!(ok && out.contains("audit log ok"), "{out}{err}");
}
