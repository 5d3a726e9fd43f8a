//! A conversation's flow holds across processes: `toolgate call --session` processes
//! started at the same moment on one state file, each calling a tool the flow allows
//! once, run it once between them. The tool is a real HTTP server on loopback that
//! counts what reached it and answers slowly, so every process is admitted while the
//! first call still runs.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use support::slow_server::counting_server;
use support::toolgate;

mod support;

const PROCESSES: usize = 10;

/// What the tool server answers.
const OK: &str = r#"{"ok": true}"#;

/// A spec whose `charge` tool posts to the server, under `constraint`.
fn spec(port: u16, constraint: &str) -> String {
    format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy:
  rules:
    - {{tools: charge, decision: allow, reason: charges run at once}}
state:
  charged: {{type: boolean, description: Whether the card was charged., default: false}}
tools:
  - name: charge
    description: Charge the card.
    effect: write
    set_state: {{charged: true}}
    http: {{url: "http://127.0.0.1:{port}/charge", method: POST}}
flow:
  constraints:
    - {constraint}
"#
    )
}

fn start(dir: &Path, session: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["call", "charge", "{}", "--session", session])
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts `PROCESSES` calls at once on one conversation; returns how many ran the
/// tool, by the server's count and by exit code, and the others' messages.
fn race(constraint: &str) -> (usize, usize, Vec<String>) {
    let (port, hits) = counting_server(Duration::from_millis(400), OK);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolgate.yaml"), spec(port, constraint)).unwrap();
    // Create the state file first, so the race is over the call and not the schema.
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["state", "get", "charged", "--session", "s"])
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let children: Vec<Child> = (0..PROCESSES).map(|_| start(dir.path(), "s")).collect();
    let mut ok = 0;
    let mut refused = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            ok += 1;
        } else {
            refused.push(format!(
                "exit {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    (hits.load(Ordering::SeqCst), ok, refused)
}

#[test]
fn a_once_tool_runs_once_across_processes() {
    let (hits, ok, refused) = race("once: charge");
    assert_eq!(hits, 1, "the tool ran {hits} times; refused: {refused:#?}");
    assert_eq!(ok, 1, "{refused:#?}");
    for message in &refused {
        assert!(
            message.starts_with("exit Some(4): denied: charge may succeed only once"),
            "{message}"
        );
    }
}

#[test]
fn a_never_until_guard_on_state_holds_across_processes() {
    let (hits, ok, refused) = race("never_until: {tool: charge, until: {not: {is_true: charged}}}");
    assert_eq!(hits, 1, "the tool ran {hits} times; refused: {refused:#?}");
    assert_eq!(ok, 1, "{refused:#?}");
    for message in &refused {
        assert!(message.starts_with("exit Some(4): denied:"), "{message}");
    }
}

#[test]
fn a_once_call_whose_process_died_holds_the_conversation_until_the_operator_resolves_it() {
    // The server never answers in time: the call is still running when it is killed.
    let (port, hits) = counting_server(Duration::from_secs(60), OK);
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(port, "once: charge").replace(
        "    set_state: {charged: true}\n",
        "    set_state: {charged: true}\n    timeout: 1s\n",
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    let mut child = start(dir.path(), "s");
    let started = std::time::Instant::now();
    while hits.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the call never reached the server"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // Past the dead call's lease (its 1 s timeout and a margin), the conversation
    // does not go on as if the charge never happened.
    std::thread::sleep(Duration::from_millis(11_500));
    let out = toolgate(dir.path(), &["call", "charge", "{}", "--session", "s"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("never completed"), "{stderr}");
    assert!(stderr.contains("toolgate audit resolve"), "{stderr}");
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // The operator finds the charge went through, and records it.
    let out = toolgate(dir.path(), &["audit", "pending", "--json"]);
    let pending: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_id = pending[0]["run_id"].as_str().unwrap().to_owned();
    let out = toolgate(
        dir.path(),
        &["audit", "resolve", &run_id, "--outcome", "ok"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = toolgate(dir.path(), &["call", "charge", "{}", "--session", "s"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(stderr.contains("may succeed only once"), "{stderr}");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "charged once");
}
