//! `limits:` in a spec file, and the flags that override it, as a user meets them:
//! a real binary, a real spec file and state database, one process per command.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use support::toolgate;

mod support;

/// A tool whose running shows in the state (`noted` turns true), under a limit of
/// 64 bytes of arguments.
const SPEC: &str = r#"
limits:
  max_argument_bytes: 64
state:
  noted: {type: boolean, default: false}
tools:
  - name: note
    description: Write a note down.
    effect: idempotent
    parameters:
      type: object
      properties:
        text: {type: string}
      required: [text]
    set_state: {noted: true}
"#;

fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), SPEC).unwrap();
    dir
}

fn noted(dir: &Path) -> Value {
    let out = toolgate(dir, &["state", "get", "noted"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Arguments of exactly `bytes` bytes of compact JSON.
fn arguments_of(bytes: usize) -> String {
    let overhead = json!({"text": ""}).to_string().len();
    json!({"text": "x".repeat(bytes - overhead)}).to_string()
}

#[test]
fn a_spec_with_a_small_argument_limit_refuses_a_larger_call_and_runs_nothing() {
    let dir = desk();
    let out = toolgate(dir.path(), &["call", "note", &arguments_of(65)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "error: the arguments for `note` are 65 bytes, more than the 64 bytes a call may carry; nothing ran"
        ),
        "{stderr}"
    );
    assert_eq!(noted(dir.path()), json!(false), "the tool did not run");

    // At the limit, the same call runs.
    let out = toolgate(dir.path(), &["call", "note", &arguments_of(64)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(noted(dir.path()), json!(true));
}

#[test]
fn the_flag_overrides_the_spec_files_argument_limit() {
    let dir = desk();
    let big = arguments_of(1000);
    let out = toolgate(
        dir.path(),
        &["call", "note", &big, "--max-argument-bytes", "1000"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(noted(dir.path()), json!(true));

    let out = toolgate(
        dir.path(),
        &[
            "call",
            "note",
            &arguments_of(65),
            "--max-argument-bytes",
            "32",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("more than the 32 bytes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_zero_or_huge_argument_limit_flag_is_refused_with_what_to_write() {
    let dir = desk();
    for (value, says) in [
        ("0", "no call could carry arguments"),
        ("999999999999", "more than the 268435456 bytes (256 MiB)"),
        (
            "512KiB",
            "is not a number of bytes; write one such as `65536`",
        ),
    ] {
        let out = toolgate(
            dir.path(),
            &["call", "note", "{}", "--max-argument-bytes", value],
        );
        assert_eq!(out.status.code(), Some(2), "{value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{value}: {stderr}");
        let out = toolgate(dir.path(), &["serve", "--max-argument-bytes", value]);
        assert_eq!(out.status.code(), Some(2), "serve {value}");
    }
    assert_eq!(noted(dir.path()), json!(false));
}

#[test]
fn serve_refuses_a_call_over_the_flags_argument_limit_and_runs_nothing() {
    let dir = desk();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["serve", "--max-argument-bytes", "32"])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| writeln!(input, "{message}").unwrap();
    let mut answer = || {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    assert_eq!(answer()["id"], 1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let arguments: Value = serde_json::from_str(&arguments_of(65)).unwrap();
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "note", "arguments": arguments}}));
    let refused = answer();
    assert_eq!(refused["id"], 2);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        refused["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("are 65 bytes, more than the 32 bytes a call may carry; nothing ran"),
        "{refused}"
    );
    drop(input);
    child.wait().unwrap();
    assert_eq!(noted(dir.path()), json!(false), "the tool did not run");
}
