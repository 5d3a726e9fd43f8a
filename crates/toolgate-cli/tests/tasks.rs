//! `toolgate tasks` against real processes: a background tool started by `toolgate
//! call` in one process is read, and cancelled, from another; killing the process
//! that runs it leaves the task interrupted and its call in `audit pending`. The
//! tool is a real HTTP server on loopback that answers slowly.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::slow_server::counting_server;
use support::toolgate;

mod support;

/// A spec whose background `build_report` posts to the server.
fn project(delay: Duration) -> tempfile::TempDir {
    let (port, _) = counting_server(delay, r#"{"report": "ready"}"#);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        r#"
network: {{allow: ["127.0.0.1"]}}
policy:
  effects: {{write: allow}}
state:
  report: {{type: string, description: The last report built.}}
tools:
  - name: build_report
    description: Build the monthly report.
    effect: write
    background: true
    timeout: 60s
    set_state: {{report: ready}}
    http: {{url: "http://127.0.0.1:{port}/report", method: POST}}
"#
    );
    std::fs::write(dir.path().join("toolgate.yaml"), spec).unwrap();
    dir
}

/// Starts `toolgate call build_report` and reads the task id it prints first.
fn start(dir: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["call", "build_report", "--session", "monthly"])
        .current_dir(dir)
        .env_remove("TOOLGATE_STATE_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let id = line
        .trim()
        .strip_prefix("started task ")
        .unwrap_or_else(|| panic!("expected the task id first, got {line:?}"))
        .to_owned();
    (child, id)
}

fn json(dir: &Path, args: &[&str]) -> Value {
    let out = toolgate(dir, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_background_tool_started_by_call_is_read_by_tasks_get_from_another_process() {
    let dir = project(Duration::from_millis(1500));
    let (child, id) = start(dir.path());
    assert!(id.starts_with("task-"), "{id}");

    let task = json(dir.path(), &["tasks", "get", &id, "--json"]);
    assert_eq!(task["status"], "working");
    assert_eq!(task["tool"], "build_report");
    assert_eq!(task["session"], "monthly");
    let listed = json(dir.path(), &["tasks", "list", "--json"]);
    assert_eq!(listed.as_array().unwrap().len(), 1);

    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"report\": \"ready\""));
    let task = json(dir.path(), &["tasks", "get", &id, "--json"]);
    assert_eq!(task["status"], "completed");
    assert_eq!(task["outcome"]["value"]["report"], "ready");
    // Recorded as any call: its state effect, and no call left pending.
    let state = json(dir.path(), &["state", "--session", "monthly"]);
    assert_eq!(state["report"], "ready");
    let pending = json(dir.path(), &["audit", "pending", "--json"]);
    assert_eq!(pending, Value::Array(vec![]));

    let text = toolgate(dir.path(), &["tasks", "get", &id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("{id}  completed  build_report")),
        "{text}"
    );
}

#[test]
fn killing_the_process_that_runs_a_task_leaves_it_interrupted_and_its_call_pending() {
    let dir = project(Duration::from_secs(20));
    let (mut child, id) = start(dir.path());
    assert_eq!(
        json(dir.path(), &["tasks", "get", &id, "--json"])["status"],
        "working"
    );

    child.kill().unwrap();
    child.wait().unwrap();

    let out = toolgate(dir.path(), &["tasks", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{id}  interrupted  build_report")),
        "{text}"
    );
    assert!(text.contains("toolgate audit pending"), "{text}");
    let task = json(dir.path(), &["tasks", "get", &id, "--json"]);
    assert_eq!(task["status"], "interrupted");
    // It may have taken effect: the operator must resolve it.
    let pending = json(dir.path(), &["audit", "pending", "--json"]);
    assert_eq!(pending[0]["run_id"], task["run_id"]);
    assert_eq!(pending[0]["safe_to_rerun"], false);
}

#[test]
fn a_task_cancelled_from_another_process_stops_and_says_so() {
    let dir = project(Duration::from_secs(20));
    let (child, id) = start(dir.path());
    let out = toolgate(dir.path(), &["tasks", "cancel", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was cancelled"));
    let task = json(dir.path(), &["tasks", "get", &id, "--json"]);
    assert_eq!(task["status"], "cancelled");
    let pending = json(dir.path(), &["audit", "pending", "--json"]);
    assert_eq!(pending, Value::Array(vec![]));
}

#[test]
fn an_unknown_task_id_is_a_clear_error() {
    let dir = project(Duration::from_millis(1));
    let out = toolgate(dir.path(), &["tasks", "get", "task-nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no task has id `task-nope`"), "{err}");
    assert!(err.contains("toolgate tasks list"), "{err}");
}
