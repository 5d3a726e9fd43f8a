//! The gateways compared as proxies (`--proxies`): the bare rmcp server called
//! directly; `toolgate serve --http` in front of it (an `mcp_servers:` entry over
//! streamable HTTP, default SQLite store, durable audit log), which serves its
//! tool as `shop.lookup_order`; and, given `--agentgateway BIN`, agentgateway in
//! front of the same server (one MCP target, its request log off). The same
//! clients drive each in turn in the same run; CPU per call is the proxy
//! process's own (the upstream answers the same calls behind each).
//!
//! agentgateway is run as its examples run it (`binds` with one MCP backend, in
//! its default stateful mode) and measured in the stateless lifecycle only: rmcp
//! 3.11's client sends `initialize` with the header `MCP-Protocol-Version:
//! 2026-07-28`, which agentgateway refuses (400, "invalid MCP protocol version
//! header"), so the session lifecycle's client cannot connect to it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Lifecycle, Measured, Target, line, measure_spread, spawn};

/// One proxy (or the bare server itself) under measurement.
struct Setup {
    name: &'static str,
    /// The lifecycles it is measured in.
    lifecycles: Vec<Lifecycle>,
    child: Child,
    url: String,
    /// The bench's tool as this setup serves it.
    tool: &'static str,
}

/// Runs the comparison and prints each setup's medians beside the bare server's.
pub async fn compare(
    toolgate: &str,
    agentgateway: Option<&str>,
    lifecycles: &[Lifecycle],
    clients: usize,
    seconds: u64,
    rounds: usize,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut bare = Command::new(std::env::current_exe().unwrap());
    bare.arg("bare");
    let (bare_child, bare_url) = spawn(bare);
    let spec = dir.path().join("proxy.yaml");
    std::fs::write(
        &spec,
        format!(
            "network: {{allow: [\"127.0.0.1\"]}}\nmcp_servers:\n  shop:\n    url: {bare_url}\n"
        ),
    )
    .unwrap();
    let mut serve = Command::new(toolgate);
    serve
        .args(["serve", "--http", "127.0.0.1:0", "-f"])
        .arg(&spec)
        .arg("--state-dir")
        .arg(dir.path().join("state"));
    let (serve_child, serve_url) = spawn(serve);
    let mut setups = vec![
        Setup {
            name: "bare rmcp",
            lifecycles: lifecycles.to_vec(),
            child: bare_child,
            url: bare_url.clone(),
            tool: "lookup_order",
        },
        Setup {
            name: "toolgate serve",
            lifecycles: lifecycles.to_vec(),
            child: serve_child,
            url: serve_url,
            tool: "shop.lookup_order",
        },
    ];
    if let Some(binary) = agentgateway {
        let (child, url) = start_agentgateway(binary, dir.path(), &bare_url);
        setups.push(Setup {
            name: "agentgateway",
            lifecycles: vec![Lifecycle::Stateless],
            child,
            url,
            tool: "lookup_order",
        });
    }
    println!(
        "tools/call through a proxy to the bare server, {clients} clients, {seconds}s per round, {rounds} rounds"
    );
    let configurations: Vec<(Lifecycle, usize)> = lifecycles
        .iter()
        .flat_map(|&l| (0..setups.len()).map(move |s| (l, s)))
        .filter(|&(l, s)| setups[s].lifecycles.contains(&l))
        .collect();
    let mut measured: Vec<Vec<Measured>> = configurations.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (c, &(lifecycle, s)) in configurations.iter().enumerate() {
            let setup = &setups[s];
            let target = Target {
                urls: std::slice::from_ref(&setup.url),
                token: None,
                servers: &[setup.child.id()],
                tool: setup.tool,
            };
            let m = measure_spread(lifecycle, &target, clients, seconds).await;
            println!(
                "round {}  {:9} {:16} {}   ({} calls)",
                round + 1,
                lifecycle.name(),
                setup.name,
                line(&m),
                m.calls
            );
            measured[c].push(m);
        }
    }
    println!("\nmedians of {rounds} rounds (cpu/call server: the proxy's own)");
    let mut bare_rate = 0.0;
    for (c, &(lifecycle, s)) in configurations.iter().enumerate() {
        let runs = &measured[c];
        let m = Measured::median_of(runs);
        let rate = m.per_second;
        let versus = if s == 0 {
            bare_rate = rate;
            String::new()
        } else {
            format!("   {:.0}% of bare", rate / bare_rate * 100.0)
        };
        println!(
            "{:9} {:16} {}{versus}",
            lifecycle.name(),
            setups[s].name,
            line(&m)
        );
    }
    for setup in &mut setups {
        let _ = setup.child.kill();
        let _ = setup.child.wait();
    }
}

/// A port on loopback nobody listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Starts agentgateway in front of `upstream` with a configuration written in
/// `dir`, and waits until it takes connections.
fn start_agentgateway(binary: &str, dir: &std::path::Path, upstream: &str) -> (Child, String) {
    let port = free_port();
    let config = dir.join("agentgateway.yaml");
    std::fs::write(
        &config,
        format!(
            "config:\n  logging:\n    level: \"warn,request=off\"\n  adminAddr: \"127.0.0.1:{}\"\n  statsAddr: \"127.0.0.1:{}\"\n  readinessAddr: \"127.0.0.1:{}\"\n\
             binds:\n- port: {port}\n  listeners:\n  - routes:\n    - backends:\n      - mcp:\n          targets:\n          - name: shop\n            mcp:\n              host: {upstream}\n",
            free_port(),
            free_port(),
            free_port(),
        ),
    )
    .unwrap();
    let child = Command::new(binary)
        .arg("-f")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("agentgateway starts");
    let began = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "agentgateway did not listen on {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, format!("http://127.0.0.1:{port}/mcp"))
}
