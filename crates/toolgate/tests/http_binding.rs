//! HTTP bindings against real servers on loopback, as a specification: what reaches
//! the server, what comes back to the model, what the network policy refuses (before
//! any connection), and where secrets never appear.
//!
//! Every server here listens on 127.0.0.1 and is allow-listed explicitly; addresses
//! elsewhere appear only in calls that must be refused before connecting.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Value, json};
use toolgate::spec::{self, SpecFile};
use toolgate::{
    Catalog, Gate, Outcome, Principal, SqliteStore, ToolCall, ToolCtx, http::HttpRuntime,
    spec::spec_catalog_with_http, store::AuditLog,
};

// ---------------------------------------------------------------------------
// The test server.

#[derive(Default)]
struct Shared {
    hits: Mutex<Vec<String>>,
    flaky_calls: AtomicUsize,
    big_sent: AtomicUsize,
    big_finished: AtomicBool,
    /// The `Authorization` header of the last request to `/echo`.
    last_authorization: Mutex<Option<String>>,
    /// What the last request to `/echo` carried, as the server saw it.
    last_echo: Mutex<Option<Value>>,
}

impl Shared {
    fn hits(&self, path: &str) -> usize {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == path)
            .count()
    }
}

struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Server {
    fn port(&self) -> u16 {
        self.addr.port()
    }
}

fn json_response(status: StatusCode, value: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn headers_json(headers: &HeaderMap) -> Value {
    let map: serde_json::Map<String, Value> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                json!(String::from_utf8_lossy(v.as_bytes())),
            )
        })
        .collect();
    Value::Object(map)
}

/// Everything the request carried, as the server saw it (the path still encoded).
async fn echo(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    shared.hits.lock().unwrap().push("/echo".into());
    *shared.last_authorization.lock().unwrap() = parts
        .headers
        .get(header::AUTHORIZATION)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let body = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let seen = json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query(),
        "headers": headers_json(&parts.headers),
        "body": String::from_utf8_lossy(&body),
    });
    *shared.last_echo.lock().unwrap() = Some(seen.clone());
    json_response(StatusCode::OK, seen)
}

/// A 400 whose body repeats the request headers, as careless APIs do.
async fn echo_error(headers: HeaderMap) -> Response {
    (
        StatusCode::BAD_REQUEST,
        format!("bad request; you sent {}", headers_json(&headers)),
    )
        .into_response()
}

/// 503 with `Retry-After: 1` the first time, then 200.
async fn flaky(State(shared): State<Arc<Shared>>) -> Response {
    shared.hits.lock().unwrap().push("/flaky".into());
    if shared.flaky_calls.fetch_add(1, Ordering::SeqCst) == 0 {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "busy, come back",
        )
            .into_response()
    } else {
        json_response(StatusCode::OK, json!({"ok": true}))
    }
}

async fn busy(State(shared): State<Arc<Shared>>) -> Response {
    shared.hits.lock().unwrap().push("/busy".into());
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "0")],
        "busy",
    )
        .into_response()
}

async fn missing(State(shared): State<Arc<Shared>>) -> Response {
    shared.hits.lock().unwrap().push("/missing".into());
    (StatusCode::NOT_FOUND, "order A-9 not found").into_response()
}

const BIG: usize = 10 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;

/// 10 MiB, streamed in 64 KiB chunks a millisecond apart, counting what was sent.
fn big_body(shared: Arc<Shared>, content_type: &'static str) -> Response {
    let stream = futures::stream::unfold(0usize, move |sent| {
        let shared = shared.clone();
        async move {
            if sent >= BIG {
                shared.big_finished.store(true, Ordering::SeqCst);
                return None;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            shared.big_sent.fetch_add(CHUNK, Ordering::SeqCst);
            let chunk = Bytes::from(vec![b'x'; CHUNK]);
            Some((Ok::<_, Infallible>(chunk), sent + CHUNK))
        }
    });
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}

/// Redirects to the URL in the query (`/redirect?to=URL`).
async fn redirect(request: Request) -> Response {
    let to = url::form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "to")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

/// Redirects with 307 (method and body kept) to the URL in the query.
async fn redirect_307(request: Request) -> Response {
    let to = url::form_urlencoded::parse(request.uri().query().unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "to")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, to)]).into_response()
}

async fn server() -> Server {
    let shared = Arc::new(Shared::default());
    let big = shared.clone();
    let big_json = shared.clone();
    let app = Router::new()
        .route("/echo", any(echo))
        .route("/echo/{*rest}", any(echo))
        .route("/echo-error", any(echo_error))
        .route(
            "/json",
            get(|| async {
                json_response(StatusCode::OK, json!({"order": "A-1", "items": [1, 2]}))
            }),
        )
        .route(
            "/text",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "plain words",
                )
            }),
        )
        .route("/missing", get(missing))
        .route("/flaky", get(flaky))
        .route("/busy", any(busy))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        )
        .route(
            "/big",
            get(move || async move { big_body(big, "text/plain") }),
        )
        .route(
            "/big.json",
            get(move || async move { big_body(big_json, "application/json") }),
        )
        .route("/redirect", get(redirect))
        .route("/redirect-307", any(redirect_307))
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Server { addr, shared }
}

/// A port on 127.0.0.1 that counts the connections made to it and answers none.
async fn counting_listener() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, count)
}

// ---------------------------------------------------------------------------
// Spec files and gates.

/// A spec file that must pass `check` (warnings allowed).
fn spec_file(yaml: &str) -> SpecFile {
    let checked = spec::check(yaml);
    let errors: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{yaml}");
    checked.spec.unwrap()
}

const SECRET_TOKEN: &str = "tok-7f3a9c1e5b";
const SECRET_KEY: &str = "key-ab12cd34ef";
const SECRET_COOKIE: &str = "sid-98zyx76wvu";
const BASIC_USER: &str = "svc-reporting";
const BASIC_PASSWORD: &str = "pw-9f8e7d6c5b";

fn env(name: &str) -> Option<String> {
    match name {
        "API_TOKEN" => Some(SECRET_TOKEN.into()),
        "API_KEY" => Some(SECRET_KEY.into()),
        "SESSION" => Some(SECRET_COOKIE.into()),
        "SHOP_USER" => Some(BASIC_USER.into()),
        "SHOP_PASSWORD" => Some(BASIC_PASSWORD.into()),
        "OLD_BASIC" => Some(base64_of(&format!("{BASIC_USER}:{BASIC_PASSWORD}"))),
        _ => None,
    }
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn runtime(spec: &SpecFile) -> Arc<HttpRuntime> {
    Arc::new(HttpRuntime::new(&spec.network).with_env(env))
}

struct Harness {
    gate: Gate,
    store: Arc<SqliteStore>,
    dir: tempfile::TempDir,
}

/// A gate over `spec` with its state and audit log in a real SQLite file.
fn gate(spec: &SpecFile) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("state.db")).unwrap());
    let catalog =
        spec_catalog_with_http(spec, "test.yaml", &Catalog::new(), runtime(spec)).unwrap();
    let gate = Gate::builder(catalog)
        .spec(spec)
        .store(store.clone())
        .build();
    Harness { gate, store, dir }
}

impl Harness {
    async fn call(&self, tool: &str, arguments: Value) -> Outcome {
        let call = ToolCall::new("call-1", tool, arguments);
        self.gate.call("s", call, &Principal::operator()).await
    }

    /// Every byte of the SQLite files (database and write-ahead log) as text.
    fn raw_store(&self) -> String {
        let mut text = String::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        text
    }
}

fn ok_value(outcome: &Outcome) -> &Value {
    match outcome {
        Outcome::Ok { value, .. } => value,
        other => panic!("expected a value, got {other:?}"),
    }
}

fn error_of(outcome: &Outcome) -> (&str, bool) {
    match outcome {
        Outcome::Error { message, retryable } => (message.as_str(), *retryable),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Calls a tool directly, without the gate.
async fn call_direct(
    spec: &SpecFile,
    tool: &str,
    arguments: Value,
) -> Result<Value, toolgate::ToolError> {
    let catalog =
        spec_catalog_with_http(spec, "test.yaml", &Catalog::new(), runtime(spec)).unwrap();
    let tool = catalog.get(tool).unwrap().clone();
    tool.call(&ToolCtx::new("direct", Principal::operator()), arguments)
        .await
}

// ---------------------------------------------------------------------------
// Requests.

#[tokio::test]
async fn arguments_fill_the_url_encoded_for_their_place_and_cannot_leave_it() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: get_user
    description: Fetch a user.
    effect: read
    parameters:
      type: object
      properties: {{id: {{type: string}}, q: {{type: string}}, page: {{type: integer}}}}
    http:
      url: "http://127.0.0.1:{port}/echo/users/{{args.id}}/profile?fixed=yes"
      query: {{q: "{{args.q}}", page: "{{args.page}}"}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);

    let outcome = h
        .call(
            "get_user",
            json!({"id": "@evil.example/../../admin", "q": "a&b=c d#x", "page": 2}),
        )
        .await;
    let seen = ok_value(&outcome);
    assert_eq!(
        seen["path"],
        "/echo/users/%40evil.example%2F..%2F..%2Fadmin/profile"
    );
    assert_eq!(seen["query"], "fixed=yes&q=a%26b%3Dc%20d%23x&page=2");
    assert_eq!(
        seen["headers"]["host"],
        format!("127.0.0.1:{}", server.port())
    );
    assert_eq!(seen["method"], "GET");
    assert_eq!(seen["body"], "");

    // A segment that would be `..` is refused, not sent.
    let outcome = h.call("get_user", json!({"id": ".."})).await;
    let (message, retryable) = error_of(&outcome);
    assert!(message.contains("`..`"), "{message}");
    assert!(!retryable);
    assert_eq!(server.shared.hits("/echo"), 1);
}

#[tokio::test]
async fn a_post_sends_the_arguments_as_json_with_the_declared_headers() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy: {{effects: {{write: allow}}}}
tools:
  - name: create_ticket
    description: Open a ticket.
    parameters:
      type: object
      properties: {{subject: {{type: string}}, trace: {{type: string}}}}
    http:
      method: POST
      url: "http://127.0.0.1:{port}/echo/tickets"
      headers: {{X-Trace: "{{args.trace}}", X-Tool: toolgate}}
  - name: update_ticket
    description: Update a ticket with an explicit body.
    parameters:
      type: object
      properties: {{id: {{type: string}}, subject: {{type: string}}}}
    http:
      method: PUT
      url: "http://127.0.0.1:{port}/echo/tickets/{{args.id}}"
      body: {{fields: {{subject: "{{args.subject}}"}}, source: model}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);

    let seen = ok_value(
        &h.call(
            "create_ticket",
            json!({"subject": "Broken", "trace": "t-1"}),
        )
        .await,
    )
    .clone();
    assert_eq!(seen["method"], "POST");
    assert_eq!(seen["headers"]["content-type"], "application/json");
    assert_eq!(seen["headers"]["x-trace"], "t-1");
    assert_eq!(seen["headers"]["x-tool"], "toolgate");
    let body: Value = serde_json::from_str(seen["body"].as_str().unwrap()).unwrap();
    assert_eq!(body, json!({"subject": "Broken", "trace": "t-1"}));

    // An optional header whose argument is absent is not sent.
    let seen = ok_value(&h.call("create_ticket", json!({"subject": "Again"})).await).clone();
    assert!(seen["headers"].get("x-trace").is_none(), "{seen}");

    let seen = ok_value(
        &h.call("update_ticket", json!({"id": "T-1", "subject": "Fixed"}))
            .await,
    )
    .clone();
    assert_eq!(seen["method"], "PUT");
    assert_eq!(seen["path"], "/echo/tickets/T-1");
    let body: Value = serde_json::from_str(seen["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"fields": {"subject": "Fixed"}, "source": "model"})
    );
}

// ---------------------------------------------------------------------------
// Responses.

#[tokio::test]
async fn a_json_response_is_the_value_and_other_bodies_are_described() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - {{name: order, description: An order., effect: read, http: {{url: "http://127.0.0.1:{port}/json"}}}}
  - {{name: note, description: A note., effect: read, http: {{url: "http://127.0.0.1:{port}/text"}}}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    assert_eq!(
        ok_value(&h.call("order", json!({})).await),
        &json!({"order": "A-1", "items": [1, 2]})
    );
    assert_eq!(
        ok_value(&h.call("note", json!({})).await),
        &json!({"status": 200, "content_type": "text/plain; charset=utf-8", "body": "plain words"})
    );
}

#[tokio::test]
async fn a_404_is_a_permanent_error_and_a_503_is_retried_after_its_retry_after() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - {{name: lookup, description: Look up., effect: read, http: {{url: "http://127.0.0.1:{port}/missing"}}}}
  - {{name: status, description: Status., effect: read, timeout: 10s, http: {{url: "http://127.0.0.1:{port}/flaky"}}}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);

    let outcome = h.call("lookup", json!({})).await;
    let (message, retryable) = error_of(&outcome);
    assert_eq!(
        message,
        format!(
            "`lookup` failed: HTTP 404 Not Found from 127.0.0.1:{}: order A-9 not found",
            server.port()
        )
    );
    assert!(!retryable);
    assert_eq!(server.shared.hits("/missing"), 1, "a 404 is not retried");

    let started = Instant::now();
    let outcome = h.call("status", json!({})).await;
    assert_eq!(ok_value(&outcome), &json!({"ok": true}));
    assert_eq!(server.shared.hits("/flaky"), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the retry waited for Retry-After: {:?}",
        started.elapsed()
    );
    let completion = h.store.tail(1).unwrap().pop().unwrap();
    assert_eq!(completion.entry.attempts, Some(2));
}

#[tokio::test]
async fn a_503_from_a_write_tool_is_not_retried() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy: {{effects: {{write: allow}}}}
tools:
  - {{name: pay, description: Pay., effect: write, http: {{method: POST, url: "http://127.0.0.1:{port}/busy"}}}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    let outcome = h.call("pay", json!({"amount": 5})).await;
    let (message, retryable) = error_of(&outcome);
    assert!(
        message.contains("HTTP 503 Service Unavailable"),
        "{message}"
    );
    assert!(retryable, "the model may try again; the gate does not");
    assert_eq!(server.shared.hits("/busy"), 1);
}

#[tokio::test]
async fn a_slow_server_hits_the_tool_timeout() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - {{name: slow, description: Slow., effect: read, timeout: 300ms, http: {{url: "http://127.0.0.1:{port}/slow"}}}}
"#,
        port = server.port()
    ));
    let started = Instant::now();
    let err = call_direct(&spec, "slow", json!({})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.to_string(),
        format!(
            "127.0.0.1:{} did not answer within 300ms (the tool's timeout); the request may have been received",
            server.port()
        )
    );
    // Its answer is lost: for a read (this one), the gate says it may be tried again.
    assert!(matches!(err, toolgate::ToolError::Unknown { .. }));

    let started = Instant::now();
    let outcome = gate(&spec).call("slow", json!({})).await;
    let (message, _) = error_of(&outcome);
    assert!(message.contains("300ms"), "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_10_mib_response_is_cut_at_the_limit_and_the_rest_is_never_read() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - {{name: dump, description: Dump., effect: read, http: {{url: "http://127.0.0.1:{port}/big"}}}}
  - {{name: dump_json, description: Dump JSON., effect: read, http: {{url: "http://127.0.0.1:{port}/big.json", max_response_bytes: 100000}}}}
"#,
        port = server.port()
    ));
    let value = call_direct(&spec, "dump", json!({})).await.unwrap();
    assert_eq!(value["truncated"], json!(true));
    assert_eq!(value["status"], json!(200));
    assert_eq!(
        value["body"].as_str().unwrap().len(),
        toolgate::http::DEFAULT_MAX_RESPONSE_BYTES as usize
    );
    // The server would need 160 paced chunks to send it all; the client hung up long before.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let sent = server.shared.big_sent.load(Ordering::SeqCst);
    assert!(
        !server.shared.big_finished.load(Ordering::SeqCst),
        "sent {sent} bytes"
    );
    assert!(sent < BIG / 2, "sent {sent} bytes");

    let err = call_direct(&spec, "dump_json", json!({}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("larger than the limit of 100000 bytes"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// The network policy.

#[tokio::test]
async fn metadata_and_private_addresses_are_refused_before_connecting() {
    let spec = spec_file(
        r#"
tools:
  - {name: metadata, description: M., effect: read, http: {url: "http://169.254.169.254/latest/meta-data/"}}
  - {name: private, description: P., effect: read, http: {url: "http://10.0.0.1/admin"}}
"#,
    );
    let runtime = runtime(&spec);
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::ffff:169.254.169.254]/",
        "http://0.0.0.0/",
        "http://[fd00::1]/",
    ] {
        let err = runtime.check_url(&url.parse().unwrap()).await.unwrap_err();
        assert!(
            err.to_string().starts_with("refused before connecting"),
            "{url}: {err}"
        );
        assert!(!err.is_retryable(), "{url}");
    }
    for (tool, class) in [("metadata", "link-local"), ("private", "private-network")] {
        let started = Instant::now();
        let err = call_direct(&spec, tool, json!({})).await.unwrap_err();
        assert!(err.to_string().contains(class), "{err}");
        assert!(err.to_string().contains("network.allow"), "{err}");
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "refused at once: {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_host_name_that_resolves_to_loopback_is_refused_without_an_allow_list() {
    let (port, connections) = counting_listener().await;
    let spec = spec_file(&format!(
        r#"
tools:
  - {{name: local, description: L., effect: read, http: {{url: "http://localhost:{port}/"}}}}
  - {{name: mapped, description: M., effect: read, http: {{url: "http://[::ffff:127.0.0.1]:{port}/"}}}}
"#
    ));
    let err = call_direct(&spec, "local", json!({})).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("`localhost` resolves to"), "{message}");
    assert!(message.contains("loopback"), "{message}");
    assert!(!err.is_retryable());
    let err = call_direct(&spec, "mapped", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("loopback"), "{err}");
    assert_eq!(connections.load(Ordering::SeqCst), 0, "nothing connected");
}

#[tokio::test]
async fn a_host_name_is_reached_through_an_allowed_range_or_by_its_name() {
    let server = server().await;
    for allow in ["127.0.0.1/32", "localhost"] {
        let spec = spec_file(&format!(
            r#"
network: {{allow: ["{allow}"]}}
tools:
  - {{name: order, description: O., effect: read, http: {{url: "http://localhost:{port}/json"}}}}
"#,
            port = server.port()
        ));
        let value = call_direct(&spec, "order", json!({})).await.unwrap();
        assert_eq!(value["order"], "A-1", "allowed by {allow}");
    }
}

#[tokio::test]
async fn a_redirect_out_of_the_allow_list_is_refused_before_connecting() {
    let server = server().await;
    let (other_port, connections) = counting_listener().await;
    // Only the name `localhost` is allowed: 127.0.0.1 itself is not.
    let spec = spec_file(&format!(
        r#"
network: {{allow: [localhost]}}
tools:
  - name: follow
    description: Follow.
    effect: read
    parameters: {{type: object, properties: {{to: {{type: string}}}}}}
    http: {{url: "http://localhost:{port}/redirect", query: {{to: "{{args.to}}"}}}}
"#,
        port = server.port()
    ));
    let same_host = format!("http://localhost:{}/json", server.port());
    assert_eq!(
        call_direct(&spec, "follow", json!({"to": same_host}))
            .await
            .unwrap()["order"],
        "A-1",
        "a redirect inside the allow-list is followed"
    );
    for (to, class) in [
        (format!("http://127.0.0.1:{other_port}/"), "loopback"),
        (format!("http://127.0.0.2:{other_port}/"), "loopback"),
        (format!("http://[::1]:{other_port}/"), "loopback"),
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "link-local",
        ),
        ("http://10.0.0.1/".to_owned(), "private-network"),
    ] {
        let err = call_direct(&spec, "follow", json!({"to": to}))
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("refused before connecting"),
            "{to}: {message}"
        );
        assert!(message.contains(class), "{to}: {message}");
    }
    let err = call_direct(&spec, "follow", json!({"to": "file:///etc/passwd"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`file:`"), "{err}");
    assert_eq!(connections.load(Ordering::SeqCst), 0, "nothing connected");
}

#[tokio::test]
async fn a_redirect_to_another_loopback_port_is_refused_when_the_entry_names_a_port() {
    let first = server().await;
    let second = server().await;
    let spec_for = |host: &str, entry: &str| {
        spec_file(&format!(
            r#"
network: {{allow: ["{entry}"]}}
tools:
  - name: follow
    description: Follow.
    effect: read
    parameters: {{type: object, properties: {{to: {{type: string}}}}}}
    http: {{url: "http://{host}:{port}/redirect", query: {{to: "{{args.to}}"}}}}
"#,
            port = first.port()
        ))
    };
    for host in ["127.0.0.1", "localhost"] {
        let spec = spec_for(host, &format!("{host}:{}", first.port()));
        let same_port = format!("http://{host}:{}/json", first.port());
        let value = call_direct(&spec, "follow", json!({"to": same_port}))
            .await
            .unwrap();
        assert_eq!(
            value["order"], "A-1",
            "{host}: the allowed port is followed"
        );

        let other_port = format!("http://{host}:{}/echo", second.port());
        let err = call_direct(&spec, "follow", json!({"to": other_port}))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "refused before connecting: `{host}` is allowed by `network.allow` only on port {}, not on port {}; add `{host}:{}` to `network.allow` if this port is meant to be reached",
                first.port(),
                second.port(),
                second.port()
            )
        );
        assert!(!err.is_retryable());
        assert_eq!(
            second.shared.hits("/echo"),
            0,
            "{host}: nothing reached the other port"
        );
    }

    // Without a port, the entry opens every port: `check` warns, and the redirect is
    // followed.
    let spec = spec_for("127.0.0.1", "127.0.0.1");
    let warnings: Vec<String> = diagnostics("network: {allow: [\"127.0.0.1\"]}\n")
        .into_iter()
        .map(|d| d.2)
        .collect();
    assert_eq!(
        warnings,
        [
            "`127.0.0.1` opens every port on this machine: a redirect from one allowed local service reaches all the others"
        ]
    );
    let other_port = format!("http://127.0.0.1:{}/echo", second.port());
    call_direct(&spec, "follow", json!({"to": other_port}))
        .await
        .unwrap();
    assert_eq!(second.shared.hits("/echo"), 1);
}

#[tokio::test]
async fn a_redirect_to_another_origin_drops_the_credentials() {
    let first = server().await;
    let second = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: follow
    description: Follow.
    effect: read
    parameters: {{type: object, properties: {{to: {{type: string}}}}}}
    http:
      url: "http://127.0.0.1:{port}/redirect"
      query: {{to: "{{args.to}}"}}
      headers: {{Authorization: "Bearer ${{env.API_TOKEN}}", X-Request: plain}}
"#,
        port = first.port()
    ));
    let to = format!("http://127.0.0.1:{}/echo", second.port());
    let seen = call_direct(&spec, "follow", json!({"to": to}))
        .await
        .unwrap();
    assert!(seen["headers"].get("authorization").is_none(), "{seen}");
    assert_eq!(seen["headers"]["x-request"], "plain");

    let to = format!("http://127.0.0.1:{}/echo", first.port());
    let seen = call_direct(&spec, "follow", json!({"to": to}))
        .await
        .unwrap();
    assert_eq!(
        seen["headers"]["authorization"], "[redacted]",
        "same origin keeps it (masked in the value)"
    );
}

#[tokio::test]
async fn a_redirect_to_another_origin_never_replays_a_body_with_credentials() {
    let first = server().await;
    let second = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1:{first}", "127.0.0.1:{second}"]}}
policy: {{effects: {{write: allow}}}}
tools:
  - name: login
    description: Log in.
    parameters: {{type: object, properties: {{to: {{type: string}}, user: {{type: string}}}}}}
    http:
      method: POST
      url: "http://127.0.0.1:{first}/redirect-307"
      query: {{to: "{{args.to}}"}}
      body: {{user: "{{args.user}}", api_key: "${{env.API_KEY}}"}}
  - name: note
    description: Leave a note.
    parameters: {{type: object, properties: {{to: {{type: string}}, text: {{type: string}}}}}}
    http:
      method: POST
      url: "http://127.0.0.1:{first}/redirect-307"
      query: {{to: "{{args.to}}"}}
      body: {{text: "{{args.text}}"}}
"#,
        first = first.port(),
        second = second.port()
    ));
    let elsewhere = format!("http://127.0.0.1:{}/echo", second.port());
    let err = call_direct(&spec, "login", json!({"to": elsewhere, "user": "ada"}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "127.0.0.1:{} answered 307 to send the request, body included, to 127.0.0.1:{}; the body carries credentials, which are never sent to another origin, so the request was not repeated there; call that URL directly if it is meant",
            first.port(),
            second.port()
        )
    );
    assert!(!err.is_retryable());
    assert_eq!(
        second.shared.hits("/echo"),
        0,
        "nothing reached the other origin"
    );

    // Within the origin the body follows the 307 whole.
    let here = format!("http://127.0.0.1:{}/echo", first.port());
    let seen = call_direct(&spec, "login", json!({"to": here, "user": "ada"}))
        .await
        .unwrap();
    assert_eq!(seen["method"], "POST");
    let sent = first.shared.last_echo.lock().unwrap().clone().unwrap();
    let body: Value = serde_json::from_str(sent["body"].as_str().unwrap()).unwrap();
    assert_eq!(body, json!({"user": "ada", "api_key": SECRET_KEY}));

    // A body without credentials goes on to another origin, as a 307 asks.
    let seen = call_direct(&spec, "note", json!({"to": elsewhere, "text": "hello"}))
        .await
        .unwrap();
    assert_eq!(seen["body"], r#"{"text":"hello"}"#);
    assert_eq!(second.shared.hits("/echo"), 1);
}

#[tokio::test]
async fn label_and_matrix_path_parameters_reach_the_server_in_their_style() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: styled
    description: Path parameters in each style.
    effect: read
    parameters:
      type: object
      properties:
        id: {{type: integer}}
        colors: {{type: array, items: {{type: string}}}}
        order_id: {{type: string}}
        point: {{type: object}}
      required: [id, colors, order_id, point]
    http:
      url: "http://127.0.0.1:{port}/echo/users/{{args.id}}/colors/{{args.colors}}/orders/{{args.order_id}}/at/{{args.point}}"
      path:
        id: {{style: label}}
        colors: {{style: label, explode: true}}
        order_id: {{style: matrix, name: order.id}}
        point: {{style: matrix, explode: true}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    let outcome = h
        .call(
            "styled",
            json!({"id": 5, "colors": ["blue", "a/b"], "order_id": "A;1", "point": {"x": 1, "y": 2}}),
        )
        .await;
    assert_eq!(
        ok_value(&outcome)["path"],
        "/echo/users/.5/colors/.blue.a%2Fb/orders/;order.id=A%3B1/at/;x=1;y=2"
    );
}

#[tokio::test]
async fn header_objects_reach_the_server_in_the_simple_style_exploded_or_not() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: colored
    description: Header parameters in the simple style.
    effect: read
    parameters:
      type: object
      properties:
        color: {{type: object}}
        tags: {{type: array, items: {{type: string}}}}
    http:
      url: "http://127.0.0.1:{port}/echo/colors"
      headers:
        X-Color: "{{args.color}}"
        X-Color-Exploded: "{{args.color}}"
        X-Tags: "{{args.tags}}"
        X-Tags-Exploded: "{{args.tags}}"
      explode_headers: [x-color-exploded, X-Tags-Exploded]
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    let outcome = h
        .call(
            "colored",
            json!({"color": {"R": 100, "G": 200, "B": 150}, "tags": ["blue", "black"]}),
        )
        .await;
    let headers = &ok_value(&outcome)["headers"];
    // OpenAPI 3.1's Style Examples: `simple`, an object and an array.
    assert_eq!(headers["x-color"], "R,100,G,200,B,150");
    assert_eq!(headers["x-color-exploded"], "R=100,G=200,B=150");
    assert_eq!(headers["x-tags"], "blue,black");
    assert_eq!(headers["x-tags-exploded"], "blue,black");
}

#[tokio::test]
async fn basic_credentials_from_two_variables_reach_the_server_and_nowhere_else() {
    let logs = captured_logs();
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: account
    description: The account.
    effect: read
    http:
      url: "http://127.0.0.1:{port}/echo"
      basic_auth: {{user: "${{env.SHOP_USER}}", password: "${{env.SHOP_PASSWORD}}"}}
  - name: account_error
    description: The account, answered with an error that repeats the request.
    effect: read
    http:
      url: "http://127.0.0.1:{port}/echo-error"
      basic_auth: {{user: "${{env.SHOP_USER}}", password: "${{env.SHOP_PASSWORD}}"}}
  - name: account_old
    description: The account, from one pre-encoded variable.
    effect: read
    http:
      url: "http://127.0.0.1:{port}/echo"
      headers: {{Authorization: "Basic ${{env.OLD_BASIC}}"}}
  - name: account_unset
    description: The account, with a password variable that is not set.
    effect: read
    http:
      url: "http://127.0.0.1:{port}/echo"
      basic_auth: {{user: "${{env.SHOP_USER}}", password: "${{env.SHOP_PASSWORD_UNSET}}"}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    let expected = format!(
        "Basic {}",
        base64_of(&format!("{BASIC_USER}:{BASIC_PASSWORD}"))
    );

    let outcome = h.call("account", json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        server.shared.last_authorization.lock().unwrap().as_deref(),
        Some(expected.as_str())
    );
    let seen = ok_value(&outcome).clone();
    assert_eq!(seen["headers"]["authorization"], "[redacted]");

    // The old form, one variable holding the base64 of `user:password`, still works.
    *server.shared.last_authorization.lock().unwrap() = None;
    let outcome = h.call("account_old", json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        server.shared.last_authorization.lock().unwrap().as_deref(),
        Some(expected.as_str())
    );

    let outcome = h.call("account_error", json!({})).await;
    let (echoed, _) = error_of(&outcome);
    assert!(echoed.contains("HTTP 400"), "{echoed}");
    assert!(echoed.contains("[redacted]"), "{echoed}");

    // A variable that is not set is named, and nothing is sent.
    let hits = server.shared.hits("/echo");
    let outcome = h.call("account_unset", json!({})).await;
    let (message, retryable) = error_of(&outcome);
    assert!(
        message.contains("`SHOP_PASSWORD_UNSET` for its password, which is not set"),
        "{message}"
    );
    assert!(!retryable);
    assert_eq!(server.shared.hits("/echo"), hits);

    let audit = serde_json::to_string(&h.store.tail(100).unwrap()).unwrap();
    let raw = h.raw_store();
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    let encoded = base64_of(&format!("{BASIC_USER}:{BASIC_PASSWORD}"));
    for secret in [BASIC_USER, BASIC_PASSWORD, encoded.as_str()] {
        for (place, text) in [
            ("the value", &seen.to_string()),
            ("the echoed error", &echoed.to_owned()),
            ("the missing-variable error", &message.to_owned()),
            ("the audit log", &audit),
            ("the SQLite files", &raw),
            ("the logs", &logged),
        ] {
            assert!(!text.contains(secret), "{secret} appears in {place}");
        }
    }
}

// ---------------------------------------------------------------------------
// Secrets.

/// Everything logged by any test in this binary, at every level, including the
/// `log` records of the HTTP client.
fn captured_logs() -> &'static Mutex<Vec<u8>> {
    static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Capture(logs))
            .init();
        logs
    })
}

struct Capture(&'static Mutex<Vec<u8>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn secrets_stay_out_of_logs_errors_values_and_the_audit_log() {
    let logs = captured_logs();
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: whoami
    description: Who am I.
    effect: read
    save_response_as: me
    http:
      url: "http://127.0.0.1:{port}/echo"
      headers:
        Authorization: "Bearer ${{env.API_TOKEN}}"
        X-Api-Key: "${{env.API_KEY}}"
        Cookie: "session=${{env.SESSION}}"
  - name: broken
    description: Broken.
    effect: read
    http:
      url: "http://127.0.0.1:{port}/echo-error"
      headers:
        Authorization: "Bearer ${{env.API_TOKEN}}"
        X-Api-Key: "${{env.API_KEY}}"
        Cookie: "session=${{env.SESSION}}"
state:
  me: {{type: object}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);

    // The server gets the real values; the model sees them masked.
    let outcome = h.call("whoami", json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        server.shared.last_authorization.lock().unwrap().as_deref(),
        Some(format!("Bearer {SECRET_TOKEN}").as_str())
    );
    let seen = ok_value(&outcome);
    assert_eq!(seen["headers"]["authorization"], "[redacted]");
    assert_eq!(seen["headers"]["x-api-key"], "[redacted]");
    assert_eq!(seen["headers"]["cookie"], "[redacted]");
    let text = match &outcome {
        Outcome::Ok { text, .. } => text.clone(),
        _ => unreachable!(),
    };

    // The server repeats them in an error body.
    let outcome = h.call("broken", json!({})).await;
    let (message, _) = error_of(&outcome);
    assert!(message.contains("HTTP 400 Bad Request"), "{message}");
    assert!(message.contains("[redacted]"), "{message}");

    let audit = serde_json::to_string(&h.store.tail(100).unwrap()).unwrap();
    let raw = h.raw_store();
    let state = serde_json::to_string(&h.gate.state("s").unwrap()).unwrap();
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(logged.contains("HTTP request"), "the requests were logged");
    for secret in [SECRET_TOKEN, SECRET_KEY, SECRET_COOKIE] {
        for (place, text) in [
            ("the value", &seen.to_string()),
            ("the text for the model", &text),
            ("the error", &message.to_owned()),
            ("the audit log", &audit),
            ("the SQLite files", &raw),
            ("the state", &state),
            ("the logs", &logged),
        ] {
            assert!(!text.contains(secret), "{secret} appears in {place}");
        }
    }
}

#[tokio::test]
async fn body_and_url_secrets_reach_the_server_and_are_masked_everywhere_else() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1:{port}"]}}
policy: {{effects: {{write: allow}}}}
tools:
  - name: sign_in
    description: Sign in.
    parameters: {{type: object, properties: {{user: {{type: string}}, note: {{type: string}}}}}}
    http:
      method: POST
      url: "http://127.0.0.1:{port}/echo/${{env.SESSION}}?token=${{env.API_TOKEN}}"
      query: {{key: "${{env.API_KEY}}"}}
      body: {{user: "{{args.user}}", password: "{LITERAL}", api_key: "${{env.API_KEY}}", note: "{{args.note}}"}}
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    let outcome = h
        .call(
            "sign_in",
            json!({"user": "ada", "note": "${env.API_TOKEN}"}),
        )
        .await;
    let seen = ok_value(&outcome).clone();

    // The server got every value, the environment's read where the spec file put
    // them; an argument that spells a reference is sent as it is.
    let sent = server.shared.last_echo.lock().unwrap().clone().unwrap();
    assert_eq!(sent["path"], format!("/echo/{SECRET_COOKIE}"));
    assert_eq!(
        sent["query"],
        format!("token={SECRET_TOKEN}&key={SECRET_KEY}")
    );
    let body: Value = serde_json::from_str(sent["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"user": "ada", "password": LITERAL, "api_key": SECRET_KEY, "note": "${env.API_TOKEN}"})
    );

    // What comes back, the audit log and `describe --json` show none of them.
    let text = match &outcome {
        Outcome::Ok { text, .. } => text.clone(),
        _ => unreachable!(),
    };
    let described =
        serde_json::to_string(&toolgate::http::mask_tool_secrets(&spec.tools[0])).unwrap();
    let audit = serde_json::to_string(&h.store.tail(100).unwrap()).unwrap();
    assert!(described.contains("${env.API_KEY}"), "{described}");
    assert!(
        seen["body"].as_str().unwrap().contains("\"user\":\"ada\""),
        "{seen}"
    );
    for secret in [LITERAL, SECRET_TOKEN, SECRET_KEY, SECRET_COOKIE] {
        for (place, shown) in [
            ("the value", seen.to_string()),
            ("the text for the model", text.clone()),
            ("the audit log", audit.clone()),
            ("describe --json", described.clone()),
        ] {
            assert!(
                !shown.contains(secret),
                "{secret} appears in {place}: {shown}"
            );
        }
    }
}

/// A password written into a spec file's body.
const LITERAL: &str = "lit-pw-4455x";

// ---------------------------------------------------------------------------
// What `check` says about bindings and the `network:` section.

/// (severity, path, message, the text under the span) of each diagnostic.
fn diagnostics(text: &str) -> Vec<(spec::Severity, String, String, String)> {
    spec::check(text)
        .diagnostics
        .into_iter()
        .map(|d| {
            let under = d
                .span
                .map(|s| text[s.offset..s.offset + s.len].to_owned())
                .unwrap_or_default();
            (d.severity, d.path, d.message, under)
        })
        .collect()
}

#[test]
fn a_bad_allow_entry_is_an_error_at_the_entry() {
    let found = diagnostics("network:\n  allow: [api.example.com, 10.0.0.1/8]\ntools: []\n");
    assert_eq!(found.len(), 1, "{found:#?}");
    let (severity, path, message, under) = &found[0];
    assert_eq!(*severity, spec::Severity::Error);
    assert_eq!(path, "/network/allow/1");
    assert!(message.contains("did you mean `10.0.0.0/8`?"), "{message}");
    assert_eq!(under, "10.0.0.1/8");

    let found = diagnostics("network: {allow_all: true}\n");
    assert_eq!(found[0].2, "unknown key `allow_all` in `network`");
}

#[test]
fn a_url_the_policy_will_refuse_is_a_warning_at_check_time() {
    let tool =
        |url: &str| format!("tools:\n  - {{name: t, description: d, http: {{url: \"{url}\"}}}}\n");
    let found = diagnostics(&tool("http://169.254.169.254/latest"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, spec::Severity::Warning);
    assert!(
        found[0]
            .2
            .starts_with("calls will be refused: 169.254.169.254 is a link-local address"),
        "{}",
        found[0].2
    );
    assert!(
        diagnostics(&tool("http://localhost:8080/x"))[0]
            .2
            .contains("loopback")
    );
    assert!(diagnostics(&tool("https://api.example.com/x")).is_empty());
    let allowed = format!(
        "network: {{allow: [\"169.254.0.0/16\"]}}\n{}",
        tool("http://169.254.169.254/latest")
    );
    // Reached as allowed; the entry itself is warned about, as it opens the metadata service.
    let found = diagnostics(&allowed);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].1, "/network/allow/0");
    assert!(
        found[0].2.contains("cloud metadata service"),
        "{}",
        found[0].2
    );
}

#[test]
fn an_argument_in_a_secret_header_must_be_marked_secret() {
    let spec = |schema: &str| {
        format!(
            "tools:\n  - name: t\n    description: d\n    parameters: {{type: object, properties: {{{schema}}}}}\n    http: {{url: \"https://api.example.com/\", headers: {{Authorization: \"Bearer {{args.credential_value}}\"}}}}\n"
        )
    };
    let found = diagnostics(&spec("credential_value: {type: string}"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, spec::Severity::Warning);
    assert_eq!(
        found[0].2,
        "argument `credential_value` fills the secret header `Authorization`, but the audit log records `credential_value` as it is"
    );
    assert_eq!(found[0].3, "{args.credential_value}");
    assert!(diagnostics(&spec("credential_value: {type: string, writeOnly: true}")).is_empty());
}

// ---------------------------------------------------------------------------
// Effects that must not run twice.

/// A port on 127.0.0.1 that reads each request whole, counts it, and closes the
/// connection without answering: the request arrived, its answer is lost.
async fn answer_losing_listener() -> (u16, Arc<AtomicUsize>) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut chunk = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&chunk[..n]),
                }
            }
            seen.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, count)
}

#[tokio::test]
async fn a_keyed_call_sends_its_key_in_the_header_the_binding_names() {
    let server = server().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy: {{effects: {{external: allow}}}}
tools:
  - name: charge
    description: Charge a card.
    effect: external
    parameters: {{type: object, properties: {{cents: {{type: integer}}}}}}
    http:
      method: POST
      url: "http://127.0.0.1:{port}/echo/charges"
      idempotency_header: Idempotency-Key
"#,
        port = server.port()
    ));
    let h = gate(&spec);
    let call = ToolCall::new("c1", "charge", json!({"cents": 500}))
        .with_idempotency_key("8e0c6f1a-charge-1");
    let outcome = h.gate.call("s", call, &Principal::operator()).await;
    assert_eq!(
        ok_value(&outcome)["headers"]["idempotency-key"],
        "8e0c6f1a-charge-1"
    );
    // Without a key, no header.
    let seen = ok_value(&h.call("charge", json!({"cents": 600})).await).clone();
    assert!(seen["headers"].get("idempotency-key").is_none(), "{seen}");
}

#[tokio::test]
async fn a_write_whose_connection_closes_after_the_request_is_unknown_and_not_repeated() {
    let (port, count) = answer_losing_listener().await;
    let spec = spec_file(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy: {{effects: {{external: allow, read: allow}}}}
tools:
  - name: transfer
    description: Send a transfer.
    effect: external
    parameters: {{type: object, properties: {{cents: {{type: integer}}}}}}
    http: {{method: POST, url: "http://127.0.0.1:{port}/transfers"}}
  - name: balance
    description: Read the balance.
    effect: read
    http: {{url: "http://127.0.0.1:{port}/balance"}}
"#
    ));
    let h = gate(&spec);
    let outcome = h.call("transfer", json!({"cents": 500})).await;
    let Outcome::Unknown { message, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.contains("the request may have been received"),
        "{message}"
    );
    assert_eq!(count.load(Ordering::SeqCst), 1, "not retried");
    let again = h.call("transfer", json!({"cents": 500})).await;
    assert!(matches!(again, Outcome::Denied { .. }), "{again:?}");
    assert_eq!(count.load(Ordering::SeqCst), 1, "not repeated");

    // A read whose answer is lost is an error that may be retried.
    let read = h.call("balance", json!({})).await;
    let (_, retryable) = error_of(&read);
    assert!(retryable);
}
