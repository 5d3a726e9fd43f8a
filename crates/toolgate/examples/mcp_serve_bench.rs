//! What the gate costs an MCP client: calls per second and p50/p99 latency of
//! `tools/call` on one mock tool through `toolgate serve --http` (SQLite store,
//! durable audit log), beside a bare rmcp server answering the same tool the same
//! way, all driven by the same rmcp client in the same run. A third server, the
//! same gate served by the library with its in-memory store, separates what the
//! gate's logic costs from what its durable store costs.
//!
//! ```sh
//! cargo build --release -p toolgate-cli -p toolgate --example mcp_serve_bench
//! target/release/examples/mcp_serve_bench --toolgate target/release/toolgate
//! ```
//!
//! Options: `--clients N` (concurrent sessions, default 8), `--seconds S` (per
//! round, default 5), `--rounds R` (alternating bare/toolgate rounds, default 2).
//! `mcp_serve_bench bare` and `mcp_serve_bench memory SPEC` run one of the other
//! two servers alone (on 127.0.0.1, a free port, printed on stderr).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// The tool both servers answer, as the spec file declares it.
const SPEC: &str = r#"
tools:
  - name: lookup_order
    description: Look up an order by its id.
    effect: read
    parameters:
      type: object
      properties:
        order_id: {type: string, description: "The order's id."}
      required: [order_id]
      additionalProperties: false
    response: {order_id: "{args.order_id}", status: shipped}
"#;

fn schema() -> Value {
    json!({"type": "object", "properties": {"order_id": {"type": "string", "description": "The order's id."}},
           "required": ["order_id"], "additionalProperties": false})
}

/// The bare server: the same tool, answered directly.
#[derive(Clone)]
struct Bare;

impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bare", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool: Tool = serde_json::from_value(json!({
            "name": "lookup_order", "description": "Look up an order by its id.",
            "inputSchema": schema(), "annotations": {"readOnlyHint": true}
        }))
        .expect("a valid tool");
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let order_id = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("order_id"))
            .cloned()
            .unwrap_or(Value::Null);
        let value = json!({"order_id": order_id, "status": "shipped"});
        let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
        result.structured_content = Some(value);
        Ok(CallToolResponse::from(result))
    }
}

async fn serve_bare() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = StreamableHttpService::new(
        || Ok(Bare),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().route_service("/mcp", service);
    eprintln!("bare: serving at http://{addr}/mcp");
    axum::serve(listener, app).await.unwrap();
}

/// The spec's gate with the in-memory store, served by the library.
async fn serve_memory(spec: &str) {
    let source =
        toolgate::SpecSource::read(std::path::Path::new(spec)).expect("the spec file reads");
    let spec = source.checked.spec.clone().expect("the spec file is valid");
    let gate = toolgate::Gate::from_spec(
        &spec,
        "bench.yaml",
        &toolgate::Catalog::new(),
        Arc::new(toolgate::MemoryGateStore::default()),
    )
    .expect("the catalog builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    eprintln!(
        "memory: serving at http://{}/mcp",
        listener.local_addr().unwrap()
    );
    toolgate::mcp::server::McpServer::builder(Arc::new(gate))
        .build()
        .serve_http(
            listener,
            "/mcp",
            toolgate::mcp::server::HttpAccess::open(),
            std::future::pending(),
        )
        .await
        .unwrap();
}

/// Starts a server process and reads its URL from the first line of its stderr.
fn spawn(mut command: Command) -> (Child, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("the server starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, url)
}

/// One measurement: calls per second and latency percentiles.
struct Measured {
    calls: usize,
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

async fn measure(url: &str, clients: usize, warmup: Duration, run: Duration) -> Measured {
    let mut sessions = Vec::new();
    for _ in 0..clients {
        let client =
            ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
                .await
                .expect("the client connects");
        sessions.push(Arc::new(client));
    }
    let start = Instant::now() + warmup;
    let end = start + run;
    let mut workers = Vec::new();
    for (i, client) in sessions.iter().enumerate() {
        let client = client.clone();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = 0u64;
            loop {
                let began = Instant::now();
                if began >= end {
                    break;
                }
                let Value::Object(arguments) = json!({"order_id": format!("A-{i}-{n}")}) else {
                    unreachable!()
                };
                let result = client
                    .call_tool(CallToolRequestParams::new("lookup_order").with_arguments(arguments))
                    .await
                    .expect("the call is answered");
                assert_eq!(result.is_error, Some(false), "{result:?}");
                n += 1;
                if began >= start {
                    latencies.push(began.elapsed());
                }
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.unwrap());
    }
    for client in sessions {
        if let Ok(client) = Arc::try_unwrap(client) {
            let _ = client.cancel().await;
        }
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Measured {
        calls: latencies.len(),
        per_second: latencies.len() as f64 / run.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("bare") => return serve_bare().await,
        Some("memory") => return serve_memory(&args[2]).await,
        _ => {}
    }
    let toolgate = option(&args, "--toolgate").unwrap_or_else(|| "target/release/toolgate".into());
    let clients: usize = option(&args, "--clients").map_or(8, |v| v.parse().unwrap());
    let seconds: u64 = option(&args, "--seconds").map_or(5, |v| v.parse().unwrap());
    let rounds: usize = option(&args, "--rounds").map_or(2, |v| v.parse().unwrap());

    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("toolgate.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let mut gate = Command::new(&toolgate);
    gate.args(["serve", "--http", "127.0.0.1:0", "-f"])
        .arg(&spec)
        .arg("--state-dir")
        .arg(dir.path().join("state"));
    let (mut gate_child, gate_url) = spawn(gate);
    let mut bare = Command::new(std::env::current_exe().unwrap());
    bare.arg("bare");
    let (mut bare_child, bare_url) = spawn(bare);
    let mut memory = Command::new(std::env::current_exe().unwrap());
    memory.arg("memory").arg(&spec);
    let (mut memory_child, memory_url) = spawn(memory);
    let servers = [
        ("bare rmcp", bare_url),
        ("gate, memory", memory_url),
        ("toolgate serve", gate_url),
    ];

    println!(
        "tools/call on one mock tool, {clients} concurrent sessions, {seconds}s per round, {rounds} rounds each"
    );
    let mut totals: Vec<(usize, Vec<Measured>)> = servers.iter().map(|_| (0, Vec::new())).collect();
    for round in 0..rounds {
        for (i, (name, url)) in servers.iter().enumerate() {
            let m = measure(
                url,
                clients,
                Duration::from_secs(1),
                Duration::from_secs(seconds),
            )
            .await;
            println!(
                "round {}  {name:15} {:8.0} calls/s   p50 {:7.3} ms   p99 {:7.3} ms   ({} calls)",
                round + 1,
                m.per_second,
                m.p50.as_secs_f64() * 1e3,
                m.p99.as_secs_f64() * 1e3,
                m.calls
            );
            totals[i].0 += m.calls;
            totals[i].1.push(m);
        }
    }
    let rate = |i: usize| totals[i].0 as f64 / (rounds as u64 * seconds) as f64;
    let median = |i: usize, f: fn(&Measured) -> Duration| {
        let mut v: Vec<Duration> = totals[i].1.iter().map(f).collect();
        v.sort();
        v[v.len() / 2]
    };
    println!();
    for (i, (name, _)) in servers.iter().enumerate() {
        let cost = if i == 0 {
            String::new()
        } else {
            format!(
                "   costs {:.1}% of throughput",
                (1.0 - rate(i) / rate(0)) * 100.0
            )
        };
        println!(
            "{name:15} {:8.0} calls/s   p50 {:7.3} ms   p99 {:7.3} ms{cost}",
            rate(i),
            median(i, |m| m.p50).as_secs_f64() * 1e3,
            median(i, |m| m.p99).as_secs_f64() * 1e3
        );
    }
    let _ = Command::new("kill")
        .args(["-TERM", &gate_child.id().to_string()])
        .status();
    let _ = gate_child.wait();
    for child in [&mut bare_child, &mut memory_child] {
        let _ = child.kill();
        let _ = child.wait();
    }
}
