//! What the gate costs an MCP client: calls per second and p50/p99 latency of
//! `tools/call` on one mock tool through `toolgate serve --http` (SQLite store,
//! durable audit log), beside a bare rmcp server answering the same tool the same
//! way, all driven by the same clients in the same run. A third server, the
//! same gate served by the library with its in-memory store, separates what the
//! gate's logic costs from what its durable store costs.
//!
//! Each server is measured in both lifecycles: `session` (2025-11-25: rmcp's
//! client, `initialize` once, then calls in the session) and `stateless`
//! (2026-07-28: `server/discover` once, then every call a self-contained POST;
//! see `stateless.rs`). Beside the rates it reports the CPU time per call of the
//! server process and of the bench's own clients (from `/proc`, on Linux).
//!
//! What authentication and rate limiting cost is measured the same way: three
//! more `toolgate serve` processes take an API key, an OAuth JWT (signed here,
//! checked against a JWKS file), and an OAuth JWT with a rate limit that
//! refuses nothing; the summary gives each one's p50 and server CPU per call
//! over the unauthenticated `toolgate serve`.
//!
//! ```sh
//! cargo build --release -p toolgate-cli -p toolgate --bins --example mcp_serve_bench
//! target/release/examples/mcp_serve_bench --toolgate target/release/toolgate
//! ```
//!
//! `--telemetry` measures only `toolgate serve` with telemetry off beside the
//! same server with `--metrics` (scraped every second) and its spans exported
//! over OTLP/HTTP to a sink on loopback. `--instructions N` counts instead the
//! instructions a call costs the bare server and `toolgate serve`, under
//! callgrind, and `--telemetry --instructions N` what telemetry adds (see
//! `instructions.rs`). `--versus-bare` measures only the bare server and
//! `toolgate serve`.
//!
//! `--proxies` compares gateways in front of the bare server instead: called
//! directly, through `toolgate serve` (an `mcp_servers:` entry) and, with
//! `--agentgateway BIN`, through agentgateway (see `proxies.rs`).
//!
//! Options: `--clients N` (concurrent clients, default 8), `--seconds S` (per
//! round, default 5), `--rounds R` (rounds of every lifecycle and server, taken
//! in turn; the summary is their median; default 3), `--lifecycle session` or
//! `--lifecycle stateless` (only one). `--postgres URL` compares the stores
//! instead (see `stores.rs`): one instance on SQLite, one on PostgreSQL, and three
//! on one PostgreSQL database (URL: an empty database the bench may fill). `mcp_serve_bench bare` and
//! `mcp_serve_bench memory SPEC` run one of the other two servers alone (on
//! 127.0.0.1, a free port, printed on stderr).
//!
//! One concept past 600 lines: one benchmark, its servers, clients and report
//! in the order a run takes them; the test upstream and the token fixtures
//! live beside it.

mod instructions;
mod proxies;
mod stateless;
mod stores;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{
    StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService,
};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt};
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
        toolgate::spec::SpecSource::read(std::path::Path::new(spec)).expect("the spec file reads");
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
    toolgate::serve::FrontDoor::new(
        toolgate::mcp::server::McpServer::builder(Arc::new(gate)).build(),
        toolgate::auth::HttpAccess::open(),
    )
    .serve(listener, std::future::pending())
    .await
    .unwrap();
}

const ISSUER: &str = "https://auth.example.test";
const AUDIENCE: &str = "https://tools.example.test/mcp";

/// The spec with the principal `bench` (any token of `sub: bench`), an `auth:`
/// section and `more` after it, written in `dir` as `NAME.yaml`.
fn authenticated_spec(
    dir: &std::path::Path,
    name: &str,
    auth: &str,
    more: &str,
) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    let principals = "principals:\n  bench: {ceiling: read, match: {sub: bench}}\n";
    std::fs::write(&path, format!("{SPEC}\n{principals}auth:\n{auth}\n{more}")).unwrap();
    path
}

/// A signing key made for the run: the JWKS file's text and a token valid for
/// an hour.
fn oauth_token() -> (String, String) {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
    let pkcs8 = pair.to_pkcs8v1().unwrap();
    let point = pair.public_key().as_ref().to_vec();
    let jwks = json!({"keys": [{
        "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "bench",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    }]});
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "bench", "scope": "tools",
                        "exp": now + 3600, "iat": now, "jti": "bench-1"});
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("bench".into());
    let key = jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref());
    let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
    (jwks.to_string(), token)
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
    // The line saying where it serves (`serve --metrics` first says where
    // its metrics are).
    while !line.contains("serving") {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("the server ended before it said where it serves");
        }
    }
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_owned();
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, url)
}

/// Spans the OTLP sink has received.
static SPANS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An OTLP/HTTP receiver on loopback that takes every export, counts its spans
/// and keeps nothing, for the cost of exporting without a collector's own cost.
async fn otlp_sink() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(|body: axum::body::Bytes| async move {
            let spans = count_spans(&body);
            SPANS.fetch_add(spans, std::sync::atomic::Ordering::Relaxed);
            (
                [("content-type", "application/x-protobuf")],
                Vec::<u8>::new(),
            )
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The spans in an `ExportTraceServiceRequest`: its `resource_spans` (field 1)
/// hold `scope_spans` (field 2), which hold `spans` (field 2). Only the
/// length-delimited fields on that path are opened; every other is skipped.
fn count_spans(request: &[u8]) -> u64 {
    /// The length-delimited fields numbered `number` in `message`.
    fn fields(message: &[u8], number: u64) -> Vec<&[u8]> {
        let mut found = Vec::new();
        let mut at = 0;
        let varint = |at: &mut usize| {
            let mut value = 0u64;
            for shift in (0..64).step_by(7) {
                let Some(&byte) = message.get(*at) else { break };
                *at += 1;
                value |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            value
        };
        while at < message.len() {
            let key = varint(&mut at);
            match key & 7 {
                0 => {
                    varint(&mut at);
                }
                1 => at += 8,
                5 => at += 4,
                2 => {
                    let len = varint(&mut at) as usize;
                    let end = (at + len).min(message.len());
                    if key >> 3 == number {
                        found.push(&message[at..end]);
                    }
                    at = end;
                }
                _ => break,
            }
        }
        found
    }
    let mut spans = 0;
    for resource in fields(request, 1) {
        for scope in fields(resource, 2) {
            spans += fields(scope, 2).len() as u64;
        }
    }
    spans
}

/// Scrapes `url` every second, as a Prometheus would (more often than most).
async fn scrape_every_second(url: String) {
    let client = reqwest::Client::new();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if let Ok(response) = client.get(&url).send().await {
            let _ = response.bytes().await;
        }
    }
}

/// How the simulated clients talk to the server.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    /// 2025-11-25: `initialize`, then every call in the session.
    Session,
    /// 2026-07-28: `server/discover`, then self-contained requests.
    Stateless,
}

impl Lifecycle {
    fn name(self) -> &'static str {
        match self {
            Lifecycle::Session => "session",
            Lifecycle::Stateless => "stateless",
        }
    }
}

/// One simulated client, connected in the lifecycle measured.
enum Caller {
    Session(RunningService<RoleClient, ()>),
    Stateless(stateless::Client),
}

impl Caller {
    /// Connects client `i`: a session, or a discovered stateless client with
    /// conversation `bench-{i}`.
    async fn connect(lifecycle: Lifecycle, url: &str, i: usize, token: Option<&str>) -> Self {
        match lifecycle {
            Lifecycle::Session => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
                if let Some(token) = token {
                    config = config.auth_header(token.to_owned());
                }
                Caller::Session(
                    ().serve(StreamableHttpClientTransport::from_config(config))
                        .await
                        .expect("the client connects"),
                )
            }
            Lifecycle::Stateless => Caller::Stateless(
                stateless::Client::discover(url, format!("bench-{i}"), token)
                    .await
                    .expect("the client discovers the server"),
            ),
        }
    }

    /// Calls `tool` (the bench's tool, by the name the server gives it).
    async fn call(&self, id: u64, tool: &str, order_id: String) {
        match self {
            Caller::Session(client) => {
                let Value::Object(arguments) = json!({ "order_id": order_id }) else {
                    unreachable!()
                };
                let result = client
                    .call_tool(
                        CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments),
                    )
                    .await
                    .expect("the call is answered");
                assert_ne!(result.is_error, Some(true), "{result:?}");
            }
            Caller::Stateless(client) => client
                .call_tool(id, tool, &order_id)
                .await
                .expect("the call is answered"),
        }
    }

    async fn close(self) {
        if let Caller::Session(client) = self {
            let _ = client.cancel().await;
        }
    }
}

/// One measurement: calls per second, latency percentiles, and the CPU time per
/// call of the server and of the clients (where `/proc` tells).
struct Measured {
    calls: usize,
    /// Calls made, the warm-up's too.
    issued: u64,
    per_second: f64,
    p50: Duration,
    p99: Duration,
    server_cpu: Option<Duration>,
    client_cpu: Option<Duration>,
}

impl Measured {
    /// The medians of several rounds' figures (calls added up).
    fn median_of(runs: &[Measured]) -> Measured {
        let cpu = |of: fn(&Measured) -> Option<Duration>| {
            runs.iter().map(of).collect::<Option<_>>().map(median)
        };
        Measured {
            calls: runs.iter().map(|m| m.calls).sum(),
            issued: runs.iter().map(|m| m.issued).sum(),
            per_second: median(runs.iter().map(|m| m.per_second).collect()),
            p50: median(runs.iter().map(|m| m.p50).collect()),
            p99: median(runs.iter().map(|m| m.p99).collect()),
            server_cpu: cpu(|m| m.server_cpu),
            client_cpu: cpu(|m| m.client_cpu),
        }
    }
}

/// CPU time (user and system, all threads) process `pid` has used so far, from
/// `/proc/PID/stat`; `None` where there is no `/proc`.
fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses: utime and
    // stime are the 14th and 15th fields, the 12th and 13th after it.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a configuration value; it has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| Duration::from_secs_f64(ticks as f64 / per_second as f64))
}

async fn measure(
    lifecycle: Lifecycle,
    url: &str,
    token: Option<&str>,
    server: u32,
    clients: usize,
    seconds: u64,
) -> Measured {
    let target = Target {
        urls: &[url.to_owned()],
        token,
        servers: &[server],
        tool: "lookup_order",
    };
    measure_spread(lifecycle, &target, clients, seconds).await
}

/// How long the clients call before a measurement starts.
const WARMUP: Duration = Duration::from_secs(1);

/// What the clients call: the servers (client `i` calls `urls[i % len]`),
/// their credential, the processes whose CPU time is added up, and the tool's
/// name as they serve it.
struct Target<'a> {
    urls: &'a [String],
    token: Option<&'a str>,
    servers: &'a [u32],
    tool: &'a str,
}

/// [`measure`] for any [`Target`].
async fn measure_spread(
    lifecycle: Lifecycle,
    target: &Target<'_>,
    clients: usize,
    seconds: u64,
) -> Measured {
    let Target {
        urls,
        token,
        servers,
        tool,
    } = *target;
    let mut callers = Vec::new();
    for i in 0..clients {
        let url = &urls[i % urls.len()];
        callers.push(Arc::new(Caller::connect(lifecycle, url, i, token).await));
    }
    let run = Duration::from_secs(seconds);
    let start = Instant::now() + WARMUP;
    let end = start + run;
    let cpu_between = move |pids: Vec<u32>| async move {
        let total = |pids: &[u32]| pids.iter().map(|&p| cpu_time(p)).sum::<Option<Duration>>();
        tokio::time::sleep_until(start.into()).await;
        let before = total(&pids);
        tokio::time::sleep_until(end.into()).await;
        Some(total(&pids)?.saturating_sub(before?))
    };
    let server_cpu = tokio::spawn(cpu_between(servers.to_vec()));
    let client_cpu = tokio::spawn(cpu_between(vec![std::process::id()]));
    let mut workers = Vec::new();
    for (i, caller) in callers.iter().enumerate() {
        let (caller, tool) = (caller.clone(), tool.to_owned());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = 0u64;
            loop {
                let began = Instant::now();
                if began >= end {
                    break;
                }
                n += 1;
                caller.call(n, &tool, format!("A-{i}-{n}")).await;
                if began >= start {
                    latencies.push(began.elapsed());
                }
            }
            (latencies, n)
        }));
    }
    let mut latencies = Vec::new();
    let mut issued = 0;
    for worker in workers {
        let (took, n) = worker.await.unwrap();
        latencies.extend(took);
        issued += n;
    }
    let (server_cpu, client_cpu) = (server_cpu.await.unwrap(), client_cpu.await.unwrap());
    for caller in callers {
        if let Ok(caller) = Arc::try_unwrap(caller) {
            caller.close().await;
        }
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    let per_call = |cpu: Option<Duration>| cpu.map(|cpu| cpu / latencies.len().max(1) as u32);
    Measured {
        calls: latencies.len(),
        issued,
        per_second: latencies.len() as f64 / run.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        server_cpu: per_call(server_cpu),
        client_cpu: per_call(client_cpu),
    }
}

fn option(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The median of some figures (the upper one of an even count).
fn median<T: PartialOrd + Copy>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("comparable figures"));
    values[values.len() / 2]
}

/// Microseconds, or `n/a` where the figure is unknown.
fn micros(d: Option<Duration>) -> String {
    d.map_or("n/a".into(), |d| format!("{:.0}", d.as_secs_f64() * 1e6))
}

fn line(m: &Measured) -> String {
    format!(
        "{:8.0} calls/s   p50 {:7.3} ms   p99 {:7.3} ms   cpu/call server {:>4} µs  client {:>4} µs",
        m.per_second,
        m.p50.as_secs_f64() * 1e3,
        m.p99.as_secs_f64() * 1e3,
        micros(m.server_cpu),
        micros(m.client_cpu),
    )
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
    let rounds: usize = option(&args, "--rounds").map_or(3, |v| v.parse().unwrap());
    if let Some(url) = option(&args, "--postgres") {
        return stores::compare(&toolgate, &url, clients, seconds, rounds).await;
    }
    let lifecycles = match option(&args, "--lifecycle").as_deref() {
        None => vec![Lifecycle::Session, Lifecycle::Stateless],
        Some("session") => vec![Lifecycle::Session],
        Some("stateless") => vec![Lifecycle::Stateless],
        Some(other) => panic!("--lifecycle is session or stateless, not {other:?}"),
    };

    if args.iter().any(|a| a == "--proxies") {
        let agentgateway = option(&args, "--agentgateway");
        return proxies::compare(
            &toolgate,
            agentgateway.as_deref(),
            &lifecycles,
            clients,
            seconds,
            rounds,
        )
        .await;
    }

    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("toolgate.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    let telemetry = args.iter().any(|a| a == "--telemetry");
    if let Some(calls) = option(&args, "--instructions") {
        let calls = calls
            .parse()
            .expect("--instructions takes a number of calls");
        if telemetry {
            let sink = otlp_sink().await;
            return instructions::telemetry(&toolgate, &spec, dir.path(), sink, &lifecycles, calls)
                .await;
        }
        return instructions::versus_bare(&toolgate, &spec, dir.path(), &lifecycles, calls).await;
    }
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
    // The same gate behind an API key, an OAuth JWT, and a JWT with a limit.
    let keyed = authenticated_spec(dir.path(), "keyed", "  api_keys: {}", "");
    let made = Command::new(&toolgate)
        .args(["keys", "add", "bench", "-f"])
        .arg(&keyed)
        .arg("--state-dir")
        .arg(dir.path().join("keyed-state"))
        .output()
        .expect("toolgate keys add runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let key = String::from_utf8(made.stdout).unwrap().trim().to_owned();
    let (jwks, token) = oauth_token();
    std::fs::write(dir.path().join("jwks.json"), jwks).unwrap();
    let oauth = format!(
        "  oauth:\n    issuer: {ISSUER}\n    audience: {AUDIENCE}\n    jwks: jwks.json\n    scopes: [tools]\n"
    );
    let oauth_spec = authenticated_spec(dir.path(), "oauth", &oauth, "");
    let limited_spec = authenticated_spec(
        dir.path(),
        "limited",
        &oauth,
        "limits:\n  rate:\n    - {principal: '*', tool: lookup_order, calls: 1000000000, per: 1s, in_flight: 1000}\n",
    );
    let mut started = Vec::new();
    for (name, spec) in [
        ("keyed", &keyed),
        ("oauth", &oauth_spec),
        ("limited", &limited_spec),
    ] {
        let mut command = Command::new(&toolgate);
        command
            .args(["serve", "--http", "127.0.0.1:0", "-f"])
            .arg(spec)
            .arg("--state-dir")
            .arg(dir.path().join(format!("{name}-state")));
        started.push(spawn(command));
    }
    let mut servers: Vec<(&str, String, u32, Option<String>)> = vec![
        ("bare rmcp", bare_url, bare_child.id(), None),
        ("gate, memory", memory_url, memory_child.id(), None),
        ("toolgate serve", gate_url, gate_child.id(), None),
    ];
    for ((child, url), (name, token)) in started.iter().zip([
        ("serve, API key", key),
        ("serve, OAuth", token.clone()),
        ("serve, OAuth+limit", token),
    ]) {
        servers.push((name, url.clone(), child.id(), Some(token)));
    }
    // `--telemetry`: the same `toolgate serve` with telemetry off (no
    // metrics, nothing exported) beside one with `--metrics`, scraped every
    // second, and its spans exported over OTLP/HTTP to a sink on loopback.
    if telemetry {
        let sink = otlp_sink().await;
        let mut command = Command::new(&toolgate);
        command
            .args(["serve", "--http", "127.0.0.1:0", "--metrics", "-f"])
            .arg(&spec)
            .arg("--state-dir")
            .arg(dir.path().join("telemetry-state"))
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{sink}"))
            .env("OTEL_SERVICE_NAME", "mcp_serve_bench");
        let (child, url) = spawn(command);
        tokio::spawn(scrape_every_second(url.replace("/mcp", "/metrics")));
        let off = servers.swap_remove(2);
        servers = vec![
            (off.0, off.1, off.2, off.3),
            ("serve, telemetry on", url, child.id(), None),
        ];
        started.push((child, String::new()));
    }

    if args.iter().any(|a| a == "--versus-bare") {
        servers.retain(|(name, ..)| ["bare rmcp", "toolgate serve"].contains(name));
    }
    println!(
        "tools/call on one mock tool, {clients} concurrent clients, {seconds}s per round, {rounds} rounds each"
    );
    let configurations: Vec<(Lifecycle, usize)> = lifecycles
        .iter()
        .flat_map(|&l| (0..servers.len()).map(move |s| (l, s)))
        .collect();
    let mut measured: Vec<Vec<Measured>> = configurations.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (c, &(lifecycle, s)) in configurations.iter().enumerate() {
            let (name, url, pid, token) = &servers[s];
            let m = measure(lifecycle, url, token.as_deref(), *pid, clients, seconds).await;
            println!(
                "round {}  {:9} {name:18} {}   ({} calls)",
                round + 1,
                lifecycle.name(),
                line(&m),
                m.calls
            );
            measured[c].push(m);
        }
    }
    println!("\nmedians of {rounds} rounds");
    let mut bare_rate = 0.0;
    let mut unauthenticated: Option<Measured> = None;
    let mut traced_calls = 0;
    for (c, &(lifecycle, s)) in configurations.iter().enumerate() {
        let runs = &measured[c];
        let m = Measured::median_of(runs);
        if telemetry && s == 1 {
            traced_calls += m.issued;
        }
        let cost = if s == 0 {
            bare_rate = m.per_second;
            String::new()
        } else {
            format!(
                "   costs {:.1}% of throughput",
                (1.0 - m.per_second / bare_rate) * 100.0
            )
        };
        println!(
            "{:9} {:18} {}{cost}",
            lifecycle.name(),
            servers[s].0,
            line(&m)
        );
        // Authentication and limits over the unauthenticated `toolgate serve`.
        if s == 2 {
            unauthenticated = Some(m);
        } else if let (true, Some(plain)) = (s > 2, &unauthenticated) {
            let over = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1e6;
            let cpu = match (m.server_cpu, plain.server_cpu) {
                (Some(a), Some(b)) => format!("{:+.1} µs", over(a, b)),
                _ => "n/a".into(),
            };
            println!(
                "{:9} {:18}   over toolgate serve: p50 {:+.1} µs, server cpu/call {cpu}",
                "",
                "",
                over(m.p50, plain.p50)
            );
        }
    }
    if telemetry {
        // What the batch processor still holds goes out within its delay (5 s).
        let mut spans = SPANS.load(std::sync::atomic::Ordering::Relaxed);
        for _ in 0..8 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            spans = SPANS.load(std::sync::atomic::Ordering::Relaxed);
        }
        println!(
            "\nspans received by the OTLP sink: {spans} for {traced_calls} calls ({:.2} a call; fewer than each call's spans means the exporter dropped some)",
            spans as f64 / traced_calls.max(1) as f64
        );
    }
    let _ = Command::new("kill")
        .args(["-TERM", &gate_child.id().to_string()])
        .status();
    let _ = gate_child.wait();
    for (child, _) in &mut started {
        let _ = child.kill();
        let _ = child.wait();
    }
    for child in [&mut bare_child, &mut memory_child] {
        let _ = child.kill();
        let _ = child.wait();
    }
}
