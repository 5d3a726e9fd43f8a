//! Log lines of a real `toolgate serve --http`: `--log-format json` writes one
//! JSON object a line with the trace id, `RUST_LOG` sets the levels, and no
//! secret of a spec full of them reaches a line at debug level.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

const API_TOKEN: &str = "tok-5be1c0a4d2f34e8f9a7b6c5d4e3f2a1b";
const API_KEY: &str = "key-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const SESSION: &str = "sess-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const LITERAL: &str = "pw-literal-7c6b5a4f3e2d1c0b";
const BEARER: &str = "bearer-3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b";

/// An HTTP server on loopback answering every request with a small JSON body,
/// for as many requests as `count`.
fn api(count: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(count) {
            let mut stream = stream.unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            let body = r#"{"ok":true}"#;
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    port
}

fn spec(port: u16) -> String {
    format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy: {{effects: {{write: allow, external: allow}}}}
tools:
  - name: sync_account
    description: Sync an account.
    effect: external
    parameters: {{type: object, properties: {{user: {{type: string}}}}}}
    http:
      method: POST
      url: "http://127.0.0.1:{port}/sync/${{env.SESSION}}?token=${{env.API_TOKEN}}"
      query: {{key: "${{env.API_KEY}}"}}
      headers:
        Authorization: "Bearer ${{env.API_TOKEN}}"
        X-Api-Key: "${{env.API_KEY}}"
        Cookie: "session=${{env.SESSION}}"
      body: {{user: "{{args.user}}", password: "{LITERAL}", api_key: "${{env.API_KEY}}"}}
"#
    )
}

#[tokio::test]
async fn json_log_lines_at_debug_level_carry_trace_ids_and_no_secret() {
    let port = api(4);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec(port)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--http", "127.0.0.1:0", "--log-format", "json"])
        .args(["--token-env", "TG_TEST_BEARER"])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .env("RUST_LOG", "debug")
        .env("API_TOKEN", API_TOKEN)
        .env("API_KEY", API_KEY)
        .env("SESSION", SESSION)
        .env("TG_TEST_BEARER", BEARER)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let url = loop {
        let line = lines_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("serve says where it serves");
        seen.push(line.clone());
        if line.starts_with("toolgate: serving")
            && let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://"))
        {
            break url.to_owned();
        }
    };
    let client = reqwest::Client::new();
    let post = |body: &'static str| {
        client
            .post(&url)
            .bearer_auth(BEARER)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "sync_account")
            .header(
                "traceparent",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            )
            .body(body)
            .send()
    };
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sync_account","arguments":{"user":"ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    for _ in 0..2 {
        let answer = post(call).await.unwrap();
        assert_eq!(answer.status().as_u16(), 200);
        let text = answer.text().await.unwrap();
        assert!(text.contains(r#""isError":false"#), "{text}");
    }
    let _ = unsafe_sigterm(child.id());
    let _ = child.wait();
    while let Ok(line) = lines_rx.recv_timeout(Duration::from_secs(2)) {
        seen.push(line);
    }

    let logs: Vec<serde_json::Value> = seen
        .iter()
        .filter(|line| !line.starts_with("toolgate: "))
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"))
        })
        .collect();
    assert!(
        logs.iter().any(|l| l["level"] == "DEBUG"),
        "debug lines are written: {seen:#?}"
    );
    let traced: Vec<_> = logs
        .iter()
        .filter(|l| l["message"] == "HTTP request")
        .collect();
    assert_eq!(traced.len(), 2, "{seen:#?}");
    for line in traced {
        assert_eq!(
            line["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736",
            "{line}"
        );
        assert!(
            line["span_id"].as_str().is_some_and(|id| id.len() == 16),
            "{line}"
        );
    }
    for secret in [API_TOKEN, API_KEY, SESSION, LITERAL, BEARER] {
        for line in &seen {
            assert!(!line.contains(secret), "a secret is in a log line: {line}");
        }
    }
}

/// Asks the server to stop as SIGTERM does, so it flushes its logs.
fn unsafe_sigterm(pid: u32) -> std::io::Result<std::process::ExitStatus> {
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
}

#[test]
fn a_log_filter_that_cannot_be_read_is_refused_saying_how_to_write_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["schema"])
        .current_dir(dir.path())
        .env("RUST_LOG", "toolgate=loud")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("RUST_LOG"), "{stderr}");
}
