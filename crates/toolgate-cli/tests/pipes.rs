//! `toolgate` in a pipeline whose reader has gone (`toolgate audit tail | head -1`):
//! every command ends quietly with its own status, without a panic or a backtrace,
//! and `call` keeps what its tool did on record.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use support::HELPDESK;

fn desk() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::write_helpdesk(dir.path(), HELPDESK);
    dir
}

fn toolgate(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    command.current_dir(dir).env_remove("TOOLGATE_STATE_DIR");
    command
}

/// A pipe whose reading end is already closed: the first write to it fails with
/// `EPIPE`, as it does once `head` has read its lines and exited.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

/// Runs `args` with standard output into a closed pipe; standard error is kept.
fn run_into_closed_pipe(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = toolgate(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

fn run(dir: &Path, args: &[&str]) -> Output {
    toolgate(dir).args(args).output().unwrap()
}

#[test]
fn every_printing_command_ends_quietly_with_its_status_when_the_pipe_closes() {
    let dir = desk();
    // Something for the audit log and the approvals list to show.
    let verify = run(
        dir.path(),
        &[
            "call",
            "verify_customer",
            r#"{"email": "ada@example.com", "last4": "4242"}"#,
        ],
    );
    assert!(verify.status.success());
    run(
        dir.path(),
        &[
            "call",
            "escalate_to_human",
            r#"{"ticket_id": "TCK-1", "reason": "stuck", "urgency": "high"}"#,
        ],
    );
    let mcp_list = r#"{"tools": [{"name": "fs.read", "description": "Read a file.", "inputSchema": {"type": "object"}}]}"#;
    std::fs::write(dir.path().join("tools.json"), mcp_list).unwrap();

    let commands: &[&[&str]] = &[
        &["check"],
        &["schema"],
        &["list"],
        &["list", "--json"],
        &["describe", "lookup_order"],
        &["describe", "lookup_order", "--json"],
        &["render", "--for", "openai-chat"],
        &["render", "--for", "gemini", "--explain"],
        &["digest"],
        &["search", "refund an order"],
        &["search", "refund an order", "--json"],
        &["import", "--from", "mcp", "tools.json"],
        &["audit", "tail"],
        &["audit", "tail", "--json"],
        &["audit", "verify"],
        &["audit", "pending"],
        &["approvals"],
        &["approvals", "list", "--all", "--json"],
        &["state"],
        &["state", "get", "customer_verified"],
        &["flow", "graph"],
        &["flow", "status"],
    ];
    for args in commands {
        let (code, stderr) = run_into_closed_pipe(dir.path(), args);
        assert_eq!(code, Some(0), "toolgate {args:?} exited {code:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "toolgate {args:?}: {stderr}"
        );
    }
    // A command that fails still says so with its own status.
    let (code, stderr) = run_into_closed_pipe(dir.path(), &["describe", "no_such_tool"]);
    assert_eq!(code, Some(1));
    assert!(stderr.starts_with("error: "), "{stderr}");
}

#[test]
fn a_call_whose_pipe_closes_records_its_completion_and_exits_with_its_status() {
    let dir = desk();
    for (json, session) in [(false, "one"), (true, "two")] {
        let mut args = vec![
            "call",
            "verify_customer",
            r#"{"email": "ada@example.com", "last4": "4242"}"#,
            "--session",
            session,
        ];
        if json {
            args.push("--json");
        }
        // Both streams closed: nothing can be said, and nothing must go wrong.
        let status = toolgate(dir.path())
            .args(&args)
            .stdout(closed_pipe())
            .stderr(closed_pipe())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(0), "json: {json}");
    }
    // A call that waits for a person keeps its own status (3) too.
    let (code, stderr) = run_into_closed_pipe(
        dir.path(),
        &[
            "call",
            "escalate_to_human",
            r#"{"ticket_id": "TCK-1", "reason": "stuck", "urgency": "high"}"#,
        ],
    );
    assert_eq!(code, Some(3), "{stderr}");

    let tail = run(dir.path(), &["audit", "tail", "--json"]);
    let records: Vec<Value> = serde_json::from_slice(&tail.stdout).unwrap();
    let completions: Vec<&Value> = records
        .iter()
        .filter(|r| r["tool"] == "verify_customer" && r["kind"] == "completion")
        .collect();
    assert_eq!(
        completions.len(),
        2,
        "each call ran once, on record: {records:#?}"
    );
    assert!(completions.iter().all(|r| r["outcome"] == "ok"));
    let pending = run(dir.path(), &["audit", "pending", "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&pending.stdout).unwrap(),
        serde_json::json!([]),
        "no call was left without its completion"
    );
}
