//! The stores compared (`--postgres URL`): the same mock tool through `toolgate
//! serve --http` on its SQLite file, on a PostgreSQL database, and as three
//! instances on one PostgreSQL database with the clients spread over them, in the
//! stateless lifecycle, the same clients in the same run. The three instances' CPU
//! time is added up, so CPU per call compares across the three setups.

use std::process::Command;

use super::{Lifecycle, Measured, SPEC, Target, line, measure_spread, spawn};

/// Runs the comparison and prints each setup's medians and their ratios to SQLite.
pub async fn compare(toolgate: &str, url: &str, clients: usize, seconds: u64, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("toolgate.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let serve = |store: Option<&str>, state: &str| {
        let mut command = Command::new(toolgate);
        command
            .args(["serve", "--http", "127.0.0.1:0", "-f"])
            .arg(&spec)
            .arg("--state-dir")
            .arg(dir.path().join(state));
        if let Some(store) = store {
            command.args(["--store", store]);
        }
        spawn(command)
    };
    let mut setups: Vec<(&str, Vec<(std::process::Child, String)>)> = vec![
        ("1 x SQLite", vec![serve(None, "sqlite")]),
        ("1 x PostgreSQL", vec![serve(Some(url), "pg1")]),
        (
            "3 x one PostgreSQL",
            (0..3)
                .map(|i| serve(Some(url), &format!("pg3-{i}")))
                .collect(),
        ),
    ];
    println!(
        "tools/call (stateless) on one mock tool, {clients} clients, {seconds}s per round, {rounds} rounds"
    );
    let mut measured: Vec<Vec<Measured>> = setups.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (s, (name, servers)) in setups.iter().enumerate() {
            let urls: Vec<String> = servers.iter().map(|(_, u)| u.clone()).collect();
            let pids: Vec<u32> = servers.iter().map(|(c, _)| c.id()).collect();
            let target = Target {
                urls: &urls,
                token: None,
                servers: &pids,
                tool: "lookup_order",
            };
            let m = measure_spread(Lifecycle::Stateless, &target, clients, seconds).await;
            println!(
                "round {}  {name:18} {}   ({} calls)",
                round + 1,
                line(&m),
                m.calls
            );
            measured[s].push(m);
        }
    }
    println!("\nmedians of {rounds} rounds");
    let mut sqlite: Option<Measured> = None;
    for (s, (name, _)) in setups.iter().enumerate() {
        let runs = &measured[s];
        let m = Measured::median_of(runs);
        let ratio = match &sqlite {
            None => String::new(),
            Some(base) => {
                let cpu = match (m.server_cpu, base.server_cpu) {
                    (Some(a), Some(b)) => format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64()),
                    _ => "n/a".into(),
                };
                format!(
                    "   vs SQLite: {:.2}x calls/s, {:.2}x p50, {:.2}x p99, {cpu} server cpu/call",
                    m.per_second / base.per_second,
                    m.p50.as_secs_f64() / base.p50.as_secs_f64(),
                    m.p99.as_secs_f64() / base.p99.as_secs_f64(),
                )
            }
        };
        println!("{name:18} {}{ratio}", line(&m));
        if s == 0 {
            sqlite = Some(m);
        }
    }
    for (_, servers) in &mut setups {
        for (child, _) in servers {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
