//! Effects conformance: the same scenarios driven through every way a call enters
//! the gate, each counted where it matters, at a real HTTP server on loopback bound
//! as the tool (`pay`, `effect: external`, see [`support::effect_server`]). A
//! request the server read in full is one execution, whether it answered or not.
//!
//! Scenarios:
//! 1. **allowed**: one call, exactly one execution;
//! 2. **denied** by policy: no execution;
//! 3. **asked**: no execution until approved, then exactly one; an approval is
//!    single-use, so the same call after that is asked again;
//! 4. **replayed key**: two calls under one idempotency key, one execution, the
//!    second answered with the first's outcome; the key with other arguments is
//!    refused, still one;
//! 5. **lost response**: the server reads the request and hangs up, one execution,
//!    outcome `unknown`; the identical call is refused (`denied`, naming the run),
//!    still one; once `toolgate audit resolve RUN --outcome error` it runs again, two.
//!
//! | front end                                     | 1 | 2 | 3 | 4  | 5 |
//! |-----------------------------------------------|---|---|---|----|---|
//! | `toolgate call --json`                        | x | x | x | x  | x |
//! | MCP over streamable HTTP, stateless client    | x |   |   | x¹ | x |
//! | MCP over stdio, session (JSON-RPC lines)      | x |   |   | x  |   |
//! | code mode (`toolgate code run`)               | x |   |   |    | x |
//! | web console answering a stateless MCP call's approval |   |   | x |    |   |
//! | web console resolving a stateless MCP call's lost answer |   |   |   |    | x |
//! | two `serve --http` on one PostgreSQL, racing one key² |   |   |   | x  |   |
//!
//! ¹ the key in `_meta["toolgate/idempotency_key"]` and in the `Idempotency-Key`
//! header. ² skips without `TOOLGATE_TEST_POSTGRES`, as the other PostgreSQL
//! tests do.
//!
//! Beyond the table, through `toolgate call`: a key is its principal's own;
//! processes racing one key on the SQLite store run it once; a key replays
//! across front ends (stdio, then `call`); a response that breaks off mid-body is
//! `unknown` as a lost one is (for an `effect: write` tool); an `idempotent`
//! tool whose binding names an `idempotency_header` is retried after a lost
//! answer, every attempt carrying the key.
//!
//! The last section pins what was found wrong while this suite was written: a
//! deadline that runs out while the payment runs is `unknown`, not a retryable
//! error; an `idempotent` tool whose binding cannot pass the key on is not
//! retried; `toolgate audit resolve` refuses a keyed run that completed, and
//! resolves a keyed run in doubt once.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use support::await_line;
use support::effect_server::{EffectServer, Mode};

/// A payment the policy allows at once.
const SMALL: u64 = 1250;
/// A payment the policy asks a person about.
const LARGE: u64 = 25_000;
/// A payment the policy denies.
const HUGE: u64 = 250_000;

/// A spec whose `pay` tool (of `effect`, with `extra` lines such as `timeout:`)
/// posts its arguments to `server`, under a policy that allows small payments,
/// asks about large ones and denies huge ones.
fn spec(server: &EffectServer, effect: &str, extra: &str) -> String {
    format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: pay
    description: Pay the merchant an amount.
    effect: {effect}
{extra}    parameters:
      type: object
      properties:
        amount_cents: {{type: integer}}
      required: [amount_cents]
    http: {{url: "{url}", method: POST}}
policy:
  rules:
    - {{tools: pay, decision: deny, when: {{above: {{arg: amount_cents, value: 100000}}}}, reason: payments over 1000.00 are never made}}
    - {{tools: pay, decision: ask, when: {{above: {{arg: amount_cents, value: 10000}}}}, reason: a person checks payments over 100.00}}
    - {{tools: pay, decision: allow, reason: small payments run at once}}
"#,
        url = server.url()
    )
}

fn pay(amount_cents: u64) -> Value {
    json!({ "amount_cents": amount_cents })
}

/// A scratch directory with the spec and its state, and the server it pays.
struct Desk {
    dir: tempfile::TempDir,
    server: EffectServer,
}

impl Desk {
    fn new() -> Self {
        Self::with("external", "")
    }

    fn with(effect: &str, extra: &str) -> Self {
        let server = EffectServer::start();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("toolgate.yaml"),
            spec(&server, effect, extra),
        )
        .unwrap();
        Self { dir, server }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
        command
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("TOOLGATE_STATE_DIR")
            .env_remove("TOOLGATE_STORE");
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// `toolgate call pay ARGUMENTS --json MORE`: its exit code and outcome.
    fn call(&self, arguments: &Value, more: &[&str]) -> (i32, Value) {
        let arguments = arguments.to_string();
        let mut args = vec!["call", "pay", arguments.as_str(), "--json"];
        args.extend_from_slice(more);
        let out = self.run(&args);
        (out.status.code().unwrap(), support::json(&out))
    }

    /// `toolgate audit resolve RUN --outcome OUTCOME`, which must succeed.
    fn resolve(&self, run_id: &str, outcome: &str) {
        let out = self.run(&["audit", "resolve", run_id, "--outcome", outcome]);
        assert!(out.status.success(), "{}", stderr(&out));
    }

    fn audit(&self) -> Vec<Value> {
        audit(self.dir.path())
    }

    fn outcomes(&self) -> Vec<String> {
        outcomes(self.dir.path())
    }

    /// The run whose outcome the audit log says was lost (the only one).
    fn unknown_run(&self) -> String {
        let records = self.audit();
        let unknown: Vec<&Value> = records
            .iter()
            .filter(|r| r["outcome"] == "unknown")
            .collect();
        assert_eq!(unknown.len(), 1, "{records:#?}");
        unknown[0]["run_id"].as_str().unwrap().to_owned()
    }

    /// `toolgate serve --http 127.0.0.1:0 MORE`, once it said where it serves.
    fn serve_http(&self, more: &[&str]) -> Served {
        let mut child = self
            .command(&["serve", "--http", "127.0.0.1:0"])
            .args(more)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (url, _) = await_line(&mut child, |line| {
            line.split_whitespace()
                .find(|w| w.starts_with("http://") && w.ends_with("/mcp"))
                .map(str::to_owned)
        });
        Served { child, url }
    }
}

/// The whole audit log of the state beside `dir`'s spec.
fn audit(dir: &std::path::Path) -> Vec<Value> {
    let out = support::toolgate(dir, &["audit", "tail", "-n", "100000", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What the audit log says became of each call of `pay`, in order: the outcome
/// of every completion and refusal (intents left out).
fn outcomes(dir: &std::path::Path) -> Vec<String> {
    audit(dir)
        .iter()
        .filter(|r| r["kind"] != "intent" && r["tool"] == "pay")
        .map(|r| r["outcome"].as_str().unwrap_or("?").to_owned())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A running `toolgate serve --http`, killed when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- MCP over streamable HTTP, stateless (2026-07-28) -------------------------------

const STATELESS: &str = "2026-07-28";

/// How a stateless `tools/call` carries an idempotency key, if at all.
#[derive(Clone, Copy)]
enum Key<'a> {
    None,
    Meta(&'a str),
    Header(&'a str),
}

/// A stateless `tools/call` of `pay` in `conversation`: the call's result (a
/// JSON-RPC error panics).
async fn mcp_call(url: &str, conversation: &str, arguments: &Value, key: Key<'_>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "effects_conformance", "version": "1"},
        "toolgate/conversation": conversation,
    });
    if let Key::Meta(key) = key {
        meta["toolgate/idempotency_key"] = json!(key);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "pay", "arguments": arguments, "_meta": meta,
    }});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", STATELESS)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "pay")
        .body(body.to_string());
    if let Key::Header(key) = key {
        request = request.header("idempotency-key", key);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    let message: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(&text).unwrap()
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str(d.trim()).ok())
            .unwrap_or_else(|| panic!("no answer in {text:?}"))
    };
    match message.get("result") {
        Some(result) => result.clone(),
        None => panic!("not a result: {message}"),
    }
}

/// Whether a `tools/call` result is an error result.
fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

/// The text a `tools/call` result carries.
fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

// ---- MCP over stdio, a session client speaking JSON-RPC lines ----------------------

/// `toolgate serve --stdio` in a desk, initialized as a 2025-06-18 client.
struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioClient {
    fn start(desk: &Desk) -> Self {
        let mut child = desk
            .command(&["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut client = Self {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next_id: 0,
        };
        let initialized = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "effects_conformance", "version": "1"},
            }),
        );
        assert!(initialized.get("result").is_some(), "{initialized}");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines (skipping notifications) to its answer.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "toolgate serve --stdio stopped"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// `tools/call` of `pay`, with `key` in `_meta` if given: its result.
    fn call(&mut self, arguments: &Value, key: Option<&str>) -> Value {
        let mut params = json!({"name": "pay", "arguments": arguments});
        if let Some(key) = key {
            params["_meta"] = json!({"toolgate/idempotency_key": key});
        }
        let answer = self.request("tools/call", params);
        answer
            .get("result")
            .unwrap_or_else(|| panic!("not a result: {answer}"))
            .clone()
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- 1. allowed ---------------------------------------------------------------------

#[test]
fn an_allowed_payment_runs_once_through_toolgate_call() {
    let desk = Desk::new();
    let (code, outcome) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 0, "{outcome}");
    assert_eq!(outcome["status"], "ok", "{outcome}");
    assert_eq!(outcome["value"], json!({"ok": true}), "{outcome}");
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(desk.server.bodies(), [pay(SMALL).to_string()]);
    assert_eq!(desk.outcomes(), ["ok"]);
}

#[tokio::test]
async fn an_allowed_payment_runs_once_over_mcp_streamable_http() {
    let desk = Desk::new();
    let served = desk.serve_http(&[]);
    let result = mcp_call(&served.url, "c1", &pay(SMALL), Key::None).await;
    assert!(!is_error(&result), "{result}");
    assert!(text(&result).contains(r#"{"ok":true}"#), "{result}");
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(desk.outcomes(), ["ok"]);
}

#[test]
fn an_allowed_payment_runs_once_over_mcp_stdio() {
    let desk = Desk::new();
    let mut client = StdioClient::start(&desk);
    let result = client.call(&pay(SMALL), None);
    assert!(!is_error(&result), "{result}");
    assert!(text(&result).contains(r#"{"ok":true}"#), "{result}");
    drop(client);
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(desk.outcomes(), ["ok"]);
}

#[test]
fn an_allowed_payment_runs_once_through_code_mode() {
    let desk = Desk::new();
    let out = program(&desk, "pay(amount_cents=1250)\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let run = support::json(&out);
    assert_eq!(run["value"], json!({"ok": true}), "{run}");
    assert_eq!(run["calls"], 1, "{run}");
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(desk.outcomes(), ["ok"]);
}

/// `toolgate code run program.py --json` with `code` as the program.
fn program(desk: &Desk, code: &str) -> Output {
    std::fs::write(desk.dir.path().join("program.py"), code).unwrap();
    desk.run(&["code", "run", "program.py", "--json"])
}

// ---- 2. denied ----------------------------------------------------------------------

#[test]
fn a_payment_the_policy_denies_never_reaches_the_server_through_toolgate_call() {
    let desk = Desk::new();
    let (code, outcome) = desk.call(&pay(HUGE), &[]);
    assert_eq!(code, 4, "{outcome}");
    assert_eq!(outcome["status"], "denied", "{outcome}");
    assert_eq!(
        outcome["reason"], "payments over 1000.00 are never made",
        "{outcome}"
    );
    assert_eq!(desk.server.hits(), 0);
    assert_eq!(desk.outcomes(), ["denied"]);
}

// ---- 3. asked -----------------------------------------------------------------------

#[test]
fn an_asked_payment_runs_once_after_its_single_use_approval_through_toolgate_call() {
    let desk = Desk::new();
    let (code, asked) = desk.call(&pay(LARGE), &[]);
    assert_eq!(code, 3, "{asked}");
    assert_eq!(asked["status"], "pending_approval", "{asked}");
    let approval = asked["approval_id"].as_str().unwrap().to_owned();
    // Asking again before anyone answered runs nothing either.
    let (code, _) = desk.call(&pay(LARGE), &[]);
    assert_eq!(code, 3);
    assert_eq!(desk.server.hits(), 0);

    let out = desk.run(&["approvals", "approve", &approval]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(desk.server.hits(), 0, "approving runs nothing by itself");
    let (code, ran) = desk.call(&pay(LARGE), &[]);
    assert_eq!(code, 0, "{ran}");
    assert_eq!(ran["value"], json!({"ok": true}), "{ran}");
    assert_eq!(desk.server.hits(), 1);

    // The approval is used up: the same call is asked about anew.
    let (code, again) = desk.call(&pay(LARGE), &[]);
    assert_eq!(code, 3, "{again}");
    assert_eq!(again["status"], "pending_approval", "{again}");
    assert_ne!(again["approval_id"], approval.as_str(), "{again}");
    assert_eq!(desk.server.hits(), 1);
}

#[tokio::test]
async fn an_mcp_payment_runs_once_after_the_console_approves_it_and_is_asked_about_again() {
    use support::console::{csrf, get, log_in, post, waiting_approval};
    let Desk { dir, server } = Desk::new();
    let served = support::console::start(dir, &["serve", "--http", "127.0.0.1:0", "--console"]);
    let url = format!("{}/mcp", served.base);
    let cookie = log_in(&served).await;
    // A stateless client is not held while it waits: it hears the approval's id.
    let asked = mcp_call(&url, "c1", &pay(LARGE), Key::None).await;
    assert!(is_error(&asked), "{asked}");
    let approval = approval_id(&asked);
    assert_eq!(waiting_approval(&served, &cookie).await, approval);
    assert_eq!(server.hits(), 0);

    let (_, page) = get(&served, "/approvals", &cookie).await;
    let path = format!("/approvals/{approval}/approve");
    assert_eq!(
        post(&served, &path, &cookie, &[("csrf", &csrf(&page))]).await,
        303
    );
    assert_eq!(server.hits(), 0, "approving runs nothing by itself");
    let ran = mcp_call(&url, "c1", &pay(LARGE), Key::None).await;
    assert!(!is_error(&ran), "{ran}");
    assert_eq!(server.hits(), 1);

    // The approval is used up: the same call is asked about anew.
    let again = mcp_call(&url, "c1", &pay(LARGE), Key::None).await;
    assert!(is_error(&again), "{again}");
    let second = approval_id(&again);
    assert_ne!(second, approval);
    assert_eq!(waiting_approval(&served, &cookie).await, second);
    assert_eq!(server.hits(), 1);
    assert_eq!(
        outcomes(served.dir.path()),
        ["pending_approval", "ok", "pending_approval"]
    );
}

/// The approval a refused `tools/call` result waits for.
fn approval_id(result: &Value) -> String {
    let id = &result["_meta"]["io.modelcontextprotocol/authorization"]["authorizationContextId"];
    let id = id
        .as_str()
        .unwrap_or_else(|| panic!("no approval in {result}"));
    assert!(text(result).contains(id), "{result}");
    id.to_owned()
}

// ---- 4. replayed key ----------------------------------------------------------------

#[test]
fn a_replayed_key_runs_the_payment_once_through_toolgate_call() {
    let desk = Desk::new();
    let key = ["--idempotency-key", "order-1042-payment"];
    let (code, first) = desk.call(&pay(SMALL), &key);
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["status"], "ok", "{first}");
    let (code, second) = desk.call(&pay(SMALL), &key);
    assert_eq!(code, 0, "{second}");
    assert_eq!(second, first, "the replay prints the first call's outcome");
    assert_eq!(desk.server.hits(), 1);

    let (code, reused) = desk.call(&pay(SMALL + 1), &key);
    assert_eq!(code, 1, "{reused}");
    assert_eq!(reused["status"], "error", "{reused}");
    let message = reused["message"].as_str().unwrap();
    assert!(
        message.contains("was already used for another call"),
        "{message}"
    );
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(desk.outcomes(), ["ok", "replayed", "key_reused"]);
}

#[test]
fn a_key_is_its_principal_s_own_so_another_principal_s_same_key_runs_anew_through_toolgate_call() {
    let desk = Desk::new();
    let spec = desk.dir.path().join("toolgate.yaml");
    let principals = "principals:\n  alice: {ceiling: external}\n  bob: {ceiling: external}\n";
    let text = std::fs::read_to_string(&spec).unwrap() + principals;
    std::fs::write(&spec, text).unwrap();
    let as_alice = ["--idempotency-key", "shared-key", "--as", "alice"];
    let as_bob = ["--idempotency-key", "shared-key", "--as", "bob"];
    let (code, alice) = desk.call(&pay(SMALL), &as_alice);
    assert_eq!(code, 0, "{alice}");
    let (code, bob) = desk.call(&pay(SMALL), &as_bob);
    assert_eq!(code, 0, "{bob}");
    assert_eq!(desk.server.hits(), 2, "bob's call is not alice's");
    let (code, _) = desk.call(&pay(SMALL), &as_bob);
    assert_eq!(code, 0);
    assert_eq!(desk.server.hits(), 2);
    assert_eq!(desk.outcomes(), ["ok", "ok", "replayed"]);
}

#[tokio::test]
async fn a_replayed_key_runs_the_payment_once_over_mcp_streamable_http_in_meta_and_in_the_header() {
    let desk = Desk::new();
    let served = desk.serve_http(&[]);
    let url = served.url.as_str();
    for (n, key) in [Key::Meta("meta-key-1"), Key::Header("header-key-1")]
        .into_iter()
        .enumerate()
    {
        let hits = n + 1;
        let first = mcp_call(url, "c1", &pay(SMALL + n as u64), key).await;
        assert!(!is_error(&first), "{first}");
        let second = mcp_call(url, "c1", &pay(SMALL + n as u64), key).await;
        assert_eq!(second, first, "the replay answers the first call's result");
        assert_eq!(desk.server.hits(), hits);

        let reused = mcp_call(url, "c1", &pay(SMALL + 100), key).await;
        assert!(is_error(&reused), "{reused}");
        assert!(
            text(&reused).contains("was already used for another call"),
            "{reused}"
        );
        assert_eq!(desk.server.hits(), hits);
    }
    assert_eq!(
        desk.outcomes(),
        [
            "ok",
            "replayed",
            "key_reused",
            "ok",
            "replayed",
            "key_reused"
        ]
    );
}

#[test]
fn a_replayed_key_runs_the_payment_once_over_mcp_stdio_and_holds_for_toolgate_call() {
    let desk = Desk::new();
    let mut client = StdioClient::start(&desk);
    let first = client.call(&pay(SMALL), Some("stdio-key-1"));
    assert!(!is_error(&first), "{first}");
    let second = client.call(&pay(SMALL), Some("stdio-key-1"));
    assert_eq!(second, first, "the replay answers the first call's result");
    assert_eq!(desk.server.hits(), 1);
    let reused = client.call(&pay(SMALL + 1), Some("stdio-key-1"));
    assert!(is_error(&reused), "{reused}");
    assert!(
        text(&reused).contains("was already used for another call"),
        "{reused}"
    );
    drop(client);
    // The key is the store's: another process, another front end, same principal.
    let (code, replayed) = desk.call(&pay(SMALL), &["--idempotency-key", "stdio-key-1"]);
    assert_eq!(code, 0, "{replayed}");
    assert_eq!(replayed["value"], json!({"ok": true}), "{replayed}");
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(
        desk.outcomes(),
        ["ok", "replayed", "key_reused", "replayed"]
    );
}

#[test]
fn processes_racing_one_key_run_the_payment_once_through_toolgate_call() {
    let desk = Desk::new();
    desk.server.set_delay(Duration::from_millis(800));
    // The state file exists before the race, so it is over the key.
    assert!(desk.run(&["audit", "tail"]).status.success());
    let arguments = pay(SMALL).to_string();
    let racers: Vec<Child> = (0..4)
        .map(|_| {
            desk.command(&[
                "call",
                "pay",
                &arguments,
                "--json",
                "--idempotency-key",
                "raced-key",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let mut ran = 0;
    for racer in racers {
        let out = racer.wait_with_output().unwrap();
        let outcome = support::json(&out);
        match out.status.code() {
            Some(0) => {
                assert_eq!(outcome["value"], json!({"ok": true}), "{outcome}");
                ran += 1;
            }
            // Its key's run still going: refused, to try again in a moment.
            _ => {
                assert_eq!(outcome["status"], "error", "{outcome}");
                assert_eq!(outcome["retryable"], true, "{outcome}");
                let message = outcome["message"].as_str().unwrap();
                assert!(message.contains("is running now"), "{message}");
            }
        }
    }
    assert!(ran >= 1);
    assert_eq!(desk.server.hits(), 1);
    // Once it ended, the key answers with its outcome.
    let (code, replayed) = desk.call(&pay(SMALL), &["--idempotency-key", "raced-key"]);
    assert_eq!(code, 0, "{replayed}");
    assert_eq!(desk.server.hits(), 1);
}

// ---- 5. lost response ---------------------------------------------------------------

#[tokio::test]
async fn a_lost_payment_is_resolved_in_the_console_and_then_runs_again() {
    use support::console::{csrf, get, log_in, post};
    let Desk { dir, server } = Desk::new();
    server.set_mode(Mode::LoseResponse);
    let served = support::console::start(dir, &["serve", "--http", "127.0.0.1:0", "--console"]);
    let url = format!("{}/mcp", served.base);
    let cookie = log_in(&served).await;
    let lost = mcp_call(&url, "c1", &pay(SMALL), Key::None).await;
    assert!(text(&lost).contains("may have happened"), "{lost}");
    let held = mcp_call(&url, "c1", &pay(SMALL), Key::None).await;
    assert!(text(&held).contains("may already have happened"), "{held}");
    assert_eq!(server.hits(), 1);

    // The console lists it with the pending calls, and resolves it.
    let (_, page) = get(&served, "/audit/pending", &cookie).await;
    let action = page
        .split("action=\"/audit/resolve/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no resolve action in {page}"));
    let path = format!("/audit/resolve/{action}");
    let form = [
        ("csrf", csrf(&page)),
        ("outcome", "error".to_owned()),
        ("note", "no charge at the bank".to_owned()),
    ];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(post(&served, &path, &cookie, &form).await, 303);

    server.set_mode(Mode::Answer);
    let ran = mcp_call(&url, "c1", &pay(SMALL), Key::None).await;
    assert!(!is_error(&ran), "{ran}");
    assert_eq!(server.hits(), 2, "resolved, the payment may be made again");
}

#[test]
fn a_lost_response_is_unknown_and_holds_the_same_call_until_resolved_through_toolgate_call() {
    let desk = Desk::new();
    desk.server.set_mode(Mode::LoseResponse);
    let (code, lost) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 7, "{lost}");
    assert_eq!(lost["status"], "unknown", "{lost}");
    let run_id = lost["run_id"].as_str().unwrap().to_owned();
    assert!(!lost["message"].as_str().unwrap().is_empty(), "{lost}");
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(desk.unknown_run(), run_id);

    // Repeating it could pay twice: refused, naming the run, and nothing runs.
    desk.server.set_mode(Mode::Answer);
    let (code, held) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 4, "{held}");
    assert_eq!(held["status"], "denied", "{held}");
    let reason = held["reason"].as_str().unwrap();
    assert!(reason.contains("may already have happened"), "{reason}");
    assert!(reason.contains(&run_id), "{reason}");
    assert_eq!(desk.server.hits(), 1);
    // Another payment, or the same one in another conversation, is not held.
    let (code, other) = desk.call(&pay(SMALL + 1), &[]);
    assert_eq!(code, 0, "{other}");
    let (code, elsewhere) = desk.call(&pay(SMALL), &["--session", "another"]);
    assert_eq!(code, 0, "{elsewhere}");
    assert_eq!(desk.server.hits(), 3);

    // The operator finds it failed: the same call runs again.
    desk.resolve(&run_id, "error");
    let (code, again) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["value"], json!({"ok": true}), "{again}");
    assert_eq!(desk.server.hits(), 4);
    assert_eq!(
        desk.outcomes(),
        ["unknown", "in_doubt", "ok", "ok", "error", "ok"]
    );
}

#[test]
fn a_response_that_breaks_off_mid_body_is_unknown_for_a_write_through_toolgate_call() {
    let desk = Desk::with("write", "");
    desk.server.set_mode(Mode::BreakOff);
    let (code, lost) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 7, "{lost}");
    assert_eq!(lost["status"], "unknown", "{lost}");
    let run_id = lost["run_id"].as_str().unwrap().to_owned();
    assert_eq!(desk.server.hits(), 1);
    let (code, held) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 4, "{held}");
    assert!(held["reason"].as_str().unwrap().contains(&run_id), "{held}");
    assert_eq!(desk.server.hits(), 1);
}

#[test]
fn an_idempotent_payment_whose_response_is_lost_is_retried_under_its_key_through_toolgate_call() {
    let desk = Desk::with("idempotent", "");
    let spec = desk.dir.path().join("toolgate.yaml");
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "method: POST}",
        "method: POST, idempotency_header: Idempotency-Key}",
    );
    std::fs::write(&spec, text).unwrap();
    desk.server.set_mode(Mode::LoseResponse);
    let (code, outcome) = desk.call(&pay(SMALL), &["--idempotency-key", "idem-key-2"]);
    // Safe to repeat under its key: retried, and reported as a failure to retry.
    assert_eq!(code, 1, "{outcome}");
    assert_eq!(outcome["retryable"], true, "{outcome}");
    let requests = desk.server.requests();
    assert!(requests.len() > 1, "retried: {requests:?}");
    for request in &requests {
        assert!(
            request.head.contains("idempotency-key: idem-key-2"),
            "{}",
            request.head
        );
    }
    // The key keeps that outcome: the same call again runs nothing.
    let attempts = requests.len();
    desk.server.set_mode(Mode::Answer);
    let (_, replayed) = desk.call(&pay(SMALL), &["--idempotency-key", "idem-key-2"]);
    assert_eq!(replayed, outcome);
    assert_eq!(desk.server.hits(), attempts);
}

#[tokio::test]
async fn a_lost_response_is_unknown_and_holds_the_same_call_until_resolved_over_mcp_streamable_http()
 {
    let desk = Desk::new();
    let served = desk.serve_http(&[]);
    let url = served.url.as_str();
    desk.server.set_mode(Mode::LoseResponse);
    let lost = mcp_call(url, "c1", &pay(SMALL), Key::None).await;
    assert!(is_error(&lost), "{lost}");
    assert!(text(&lost).contains("may have happened"), "{lost}");
    let run_id = desk.unknown_run();
    assert!(text(&lost).contains(&run_id), "{lost}");
    assert_eq!(desk.server.hits(), 1);

    desk.server.set_mode(Mode::Answer);
    let held = mcp_call(url, "c1", &pay(SMALL), Key::None).await;
    assert!(is_error(&held), "{held}");
    assert!(text(&held).contains("may already have happened"), "{held}");
    assert!(text(&held).contains(&run_id), "{held}");
    assert_eq!(desk.server.hits(), 1);

    desk.resolve(&run_id, "error");
    let again = mcp_call(url, "c1", &pay(SMALL), Key::None).await;
    assert!(!is_error(&again), "{again}");
    assert_eq!(desk.server.hits(), 2);
    assert_eq!(desk.outcomes(), ["unknown", "in_doubt", "error", "ok"]);
}

#[test]
fn a_lost_response_is_unknown_and_holds_the_same_call_until_resolved_through_code_mode() {
    let desk = Desk::new();
    let code = "try:\n\
                \x20   r = pay(amount_cents=1250)\n\
                except RuntimeError as e:\n\
                \x20   r = 'RuntimeError: ' + str(e)\n\
                except PermissionError as e:\n\
                \x20   r = 'PermissionError: ' + str(e)\n\
                r\n";
    desk.server.set_mode(Mode::LoseResponse);
    let out = program(&desk, code);
    let run = support::json(&out);
    let value = run["value"].as_str().unwrap_or_else(|| panic!("{run}"));
    assert!(value.starts_with("RuntimeError: "), "{value}");
    assert!(value.contains("may have happened"), "{value}");
    let run_id = desk.unknown_run();
    assert!(value.contains(&run_id), "{value}");
    assert_eq!(desk.server.hits(), 1);

    desk.server.set_mode(Mode::Answer);
    let run = support::json(&program(&desk, code));
    let value = run["value"].as_str().unwrap_or_else(|| panic!("{run}"));
    assert!(value.starts_with("PermissionError: "), "{value}");
    assert!(value.contains("may already have happened"), "{value}");
    assert!(value.contains(&run_id), "{value}");
    assert_eq!(desk.server.hits(), 1);

    desk.resolve(&run_id, "error");
    let run = support::json(&program(&desk, code));
    assert_eq!(run["value"], json!({"ok": true}), "{run}");
    assert_eq!(desk.server.hits(), 2);
    assert_eq!(desk.outcomes(), ["unknown", "in_doubt", "error", "ok"]);
}

// ---- PostgreSQL: instances racing one key -------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_on_one_postgres_racing_one_key_run_the_payment_once() {
    use support::postgres::{Database, Site};
    let Some(db) = Database::new("effects") else {
        return;
    };
    let server = EffectServer::start();
    server.set_delay(Duration::from_millis(500));
    let site = Site::new(db, &spec(&server, "external", ""));
    let (ok, _, err) = site.run(&["store", "migrate"]);
    assert!(ok, "{err}");
    let instances = [site.serve(), site.serve()];
    let racers: Vec<_> = (0..8)
        .map(|n| {
            let url = instances[n % 2].url.clone();
            tokio::spawn(async move {
                let key = if n % 4 < 2 {
                    Key::Header("pg-raced-key")
                } else {
                    Key::Meta("pg-raced-key")
                };
                mcp_call(&url, &format!("c{n}"), &pay(SMALL), key).await
            })
        })
        .collect();
    let mut ran = Vec::new();
    for racer in racers {
        let result = racer.await.unwrap();
        if is_error(&result) {
            assert!(text(&result).contains("is running now"), "{result}");
        } else {
            ran.push(result);
        }
    }
    assert!(!ran.is_empty());
    assert!(ran.iter().all(|r| *r == ran[0]), "{ran:#?}");
    assert_eq!(server.hits(), 1);
    // Once it ended, either instance answers the key with its outcome.
    for instance in &instances {
        let replayed = mcp_call(
            &instance.url,
            "c9",
            &pay(SMALL),
            Key::Header("pg-raced-key"),
        )
        .await;
        assert_eq!(replayed, ran[0]);
    }
    assert_eq!(server.hits(), 1);
    let completions = site
        .audit()
        .iter()
        .filter(|r| r["kind"] == "completion")
        .count();
    assert_eq!(completions, 1);
}

// ---- Regressions found while this suite was written ----------------------------------

/// `toolgate audit resolve` refuses a keyed run that completed `ok` (as it does an
/// unkeyed one): no second, contradicting completion, and the key still replays,
/// so the server is paid once.
#[test]
fn resolving_a_keyed_payment_that_completed_is_refused_and_its_key_still_replays() {
    let desk = Desk::new();
    let key = ["--idempotency-key", "completed-key"];
    let (code, first) = desk.call(&pay(SMALL), &key);
    assert_eq!(code, 0, "{first}");
    let run_id = desk.audit()[1]["run_id"].as_str().unwrap().to_owned();
    let out = desk.run(&["audit", "resolve", &run_id, "--outcome", "cancelled"]);
    let (code, replayed) = desk.call(&pay(SMALL), &key);
    assert_eq!((code, desk.server.hits()), (0, 1), "{replayed}");
    assert!(
        !out.status.success(),
        "a run that completed was resolved again: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(desk.outcomes(), ["ok", "replayed"]);
}

/// A keyed run whose outcome was unknown is resolved once: a second resolution
/// is refused and does not rewrite what its key answers.
#[test]
fn a_keyed_payment_in_doubt_is_resolved_once() {
    let desk = Desk::new();
    desk.server.set_mode(Mode::LoseResponse);
    let (code, lost) = desk.call(&pay(SMALL), &["--idempotency-key", "doubt-key"]);
    assert_eq!(code, 7, "{lost}");
    let run_id = lost["run_id"].as_str().unwrap().to_owned();
    desk.resolve(&run_id, "error");
    let again = desk.run(&["audit", "resolve", &run_id, "--outcome", "ok"]);
    assert!(
        !again.status.success(),
        "resolved twice: {}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert_eq!(desk.outcomes(), ["unknown", "error"]);
}

/// When the tool's deadline runs out while its HTTP request is being answered
/// (the HTTP runtime's own timeout and the gate's are one deadline), the
/// outcome is `unknown` and the identical call is held: the server is paid once.
#[test]
fn a_deadline_that_runs_out_while_the_payment_runs_leaves_it_unknown_through_toolgate_call() {
    let desk = Desk::with("external", "    timeout: 1s\n");
    desk.server.set_delay(Duration::from_secs(3));
    let (code, lost) = desk.call(&pay(SMALL), &[]);
    assert_eq!(desk.server.hits(), 1);
    assert_eq!(
        (code, lost["status"].as_str()),
        (7, Some("unknown")),
        "the payment was received and its answer did not come in time: {lost}"
    );
    let (code, held) = desk.call(&pay(SMALL), &[]);
    assert_eq!(code, 4, "{held}");
    assert_eq!(desk.server.hits(), 1, "paid once");
}

/// An `effect: idempotent` tool called with a key is retried after a lost answer
/// only when the key reaches the service: a binding without
/// `idempotency_header` cannot pass it on, so the payment runs once (its outcome
/// then unknown) rather than three times.
#[test]
fn an_idempotent_payment_whose_response_is_lost_is_not_retried_without_its_key() {
    let desk = Desk::with("idempotent", "");
    desk.server.set_mode(Mode::LoseResponse);
    let (_, outcome) = desk.call(&pay(SMALL), &["--idempotency-key", "idem-key-1"]);
    let requests = desk.server.requests();
    let keyed = requests
        .iter()
        .all(|r| r.head.contains("idempotency-key: idem-key-1"));
    assert!(
        requests.len() == 1 || keyed,
        "{} executions, none told the server the key: {outcome}",
        requests.len()
    );
}
