//! HTTP bindings from the command line: `check --sandbox` on someone else's file,
//! `describe` with secrets masked, and `call` against a real server on loopback.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

const FOREIGN: &str = r#"
network:
  allow: ["0.0.0.0/0"]
tools:
  - name: weather
    description: Today's weather.
    effect: read
    http:
      url: https://api.weather.example/v1/now
      headers: {Authorization: "Bearer sk-live-4f8e2a", X-Api-Key: "${env.WEATHER_KEY}"}
  - name: metadata
    description: Instance metadata.
    http: {url: "http://169.254.169.254/latest/meta-data/"}
  - name: local_tool
    description: A local server's tool.
    mcp: "npx -y some-server"
  - name: canned
    description: A mock.
"#;

fn toolgate(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn dir_with(spec: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn check_sandbox_reports_every_binding_outside_the_allow_list() {
    let dir = dir_with(FOREIGN);
    let out = toolgate(
        dir.path(),
        &["check", "--sandbox", "--allow", "api.weather.example"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The file's `0.0.0.0/0` holds the metadata service's address: a warning first.
    let stdout = text(&out.stdout);
    let (warning, report) = stdout
        .split_once("toolgate.yaml: 0 errors, 1 warning\n")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(warning.contains("cloud metadata service"), "{warning}");
    assert_eq!(
        report,
        "sandbox: the file's own `network:` section is ignored\n\
         sandbox: 2 of 3 binding(s) downgraded to mocks\n\
         \x20 metadata    http GET http://169.254.169.254/latest/meta-data/ -> mock: `169.254.169.254` is not in the allow-list\n\
         \x20 local_tool  mcp npx -y some-server -> mock: it starts a program on this machine\n"
    );

    // Without an allow-list every binding is downgraded.
    let out = toolgate(dir.path(), &["check", "--sandbox", "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let downgraded: Vec<&str> = report["downgrades"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["tool"].as_str().unwrap())
        .collect();
    assert_eq!(downgraded, ["weather", "metadata", "local_tool"]);
    assert_eq!(
        report["downgrades"][0],
        json!({
            "tool": "weather",
            "binding": "http",
            "target": "GET https://api.weather.example/v1/now",
            "reason": "`api.weather.example` is not in the allow-list",
        })
    );

    // A plain check reports nothing of the kind.
    let out = toolgate(dir.path(), &["check"], &[]);
    assert!(
        text(&out.stdout).ends_with("toolgate.yaml: 0 errors, 1 warning\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn check_sandbox_refuses_an_allow_entry_that_is_not_a_host_or_range() {
    let dir = dir_with(FOREIGN);
    let out = toolgate(
        dir.path(),
        &[
            "check",
            "--sandbox",
            "--allow",
            "https://api.weather.example/",
        ],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("looks like a URL; list only the host"),
        "{}",
        text(&out.stderr)
    );
    let out = toolgate(dir.path(), &["check", "--allow", "x.example"], &[]);
    assert!(!out.status.success(), "--allow needs --sandbox");
}

#[test]
fn describe_shows_the_binding_with_its_secrets_masked() {
    let dir = dir_with(FOREIGN);
    let out = toolgate(dir.path(), &["describe", "weather"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(
        page.contains(
            "binding     http GET https://api.weather.example/v1/now (headers: Authorization: Bearer [redacted], X-Api-Key: ${env.WEATHER_KEY})"
        ),
        "{page}"
    );
    let out = toolgate(dir.path(), &["describe", "weather", "--json"], &[]);
    let json = text(&out.stdout);
    assert!(!json.contains("sk-live-4f8e2a"), "{json}");
    let described: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        described["spec"]["http"]["headers"]["Authorization"],
        "Bearer [redacted]"
    );
}

/// One HTTP exchange on loopback: answers `body` as JSON and returns the request it read.
fn serve_once(body: &'static str) -> (u16, JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut request = Vec::new();
        let mut chunk = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            request.extend_from_slice(&chunk[..n]);
        }
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        String::from_utf8_lossy(&request).into_owned()
    });
    (port, handle)
}

#[test]
fn call_runs_an_http_tool_through_the_gate_and_keeps_its_token_out_of_the_audit_log() {
    const TOKEN: &str = "tg-secret-0c9d8e7f";
    let (port, server) = serve_once(r#"{"order": "A-1", "status": "shipped"}"#);
    let dir = dir_with(&format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
tools:
  - name: lookup_order
    description: Look up an order.
    effect: read
    parameters: {{type: object, properties: {{id: {{type: string}}}}, required: [id]}}
    http:
      url: "http://127.0.0.1:{port}/orders/{{args.id}}"
      headers: {{Authorization: "Bearer ${{env.TG_TEST_TOKEN}}"}}
"#
    ));
    let out = toolgate(
        dir.path(),
        &["call", "lookup_order", r#"{"id": "A 1/2"}"#],
        &[("TG_TEST_TOKEN", TOKEN)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value, json!({"order": "A-1", "status": "shipped"}));

    let request = server.join().unwrap();
    assert!(
        request.starts_with("GET /orders/A%201%2F2 HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request
            .to_ascii_lowercase()
            .contains(&format!("authorization: bearer {TOKEN}")),
        "{request}"
    );

    let audit = toolgate(dir.path(), &["audit", "tail", "--json"], &[]);
    assert!(audit.status.success(), "{}", text(&audit.stderr));
    assert!(text(&audit.stdout).contains("lookup_order"));
    let mut stored = String::new();
    for entry in std::fs::read_dir(dir.path().join(".toolgate")).unwrap() {
        stored.push_str(&text(&std::fs::read(entry.unwrap().path()).unwrap()));
    }
    for (place, content) in [
        ("stdout", text(&out.stdout)),
        ("stderr", text(&out.stderr)),
        ("the audit log", text(&audit.stdout)),
        ("the state files", stored),
    ] {
        assert!(!content.contains(TOKEN), "the token appears in {place}");
    }
}

#[test]
fn call_refuses_a_binding_to_a_private_address_without_connecting() {
    let dir = dir_with(
        r#"
tools:
  - name: internal
    description: An internal service.
    effect: read
    http: {url: "http://10.0.0.1/admin"}
"#,
    );
    let out = toolgate(dir.path(), &["call", "internal", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["status"], "error");
    let message = outcome["message"].as_str().unwrap();
    assert!(
        message.contains("refused before connecting: 10.0.0.1 is a private-network address"),
        "{message}"
    );
}
